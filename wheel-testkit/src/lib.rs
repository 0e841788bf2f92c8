//! Test and benchmark support for wheel's durable tier, kept out of the
//! library's API: [`RedisServer`], a private `redis-server` on a free
//! loopback port, in a directory of its own, stopped when dropped.
//!
//! `wheel` takes this crate as a dev-dependency (its unit and integration
//! tests and the `delayed_callbacks` example), `wheel-bench` as a normal
//! one (the durable section's server). It depends on nothing, `wheel`
//! included, so that the two never form a cycle.
//!
//! # Examples
//!
//! ```
//! use wheel_testkit::{RedisServer, ServerOptions};
//!
//! // `None` (with the reason printed) when redis-server is not installed.
//! if let Some(server) = RedisServer::for_test(ServerOptions::default()) {
//!     assert!(server.url().starts_with("redis://127.0.0.1:"));
//! } // dropped: the server is killed and its directory removed
//! ```

#![forbid(unsafe_code)]

mod redis_server;

pub use redis_server::{RedisServer, ServerOptions};
