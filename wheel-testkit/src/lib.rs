//! Test and benchmark support for wheel, kept out of the libraries' API:
//!
//! - [`RedisServer`], a private `redis-server` on a free loopback port, in
//!   a directory of its own, stopped when dropped;
//! - [`RedisCluster`], a private Redis Cluster of such servers, with a
//!   slot moved between masters and a master failed over on demand;
//! - [`eventually`], a bounded wait for a condition that fails the test
//!   with a message instead of hanging;
//! - [`model::check`], a concurrency model run by loom under `--cfg loom`
//!   and as a std-thread stress test otherwise;
//! - [`seed_corpus`], the fuzz targets' committed seeds, for replays;
//! - with the `receiver` feature, `Receiver`, an HTTP/1.1 server on
//!   loopback that records every request (headers, body, time of arrival)
//!   and answers each from the test's script (status, headers, body, a
//!   delay, a `Gate` to wait at); one request per connection, or with
//!   `ReceiverOptions::keep_alive` as many as a client sends on one, and
//!   with `ReceiverOptions::only_headers` only the headers named kept.
//!
//! `wheel`, `wheel-durable` and `wheel-server` take this crate as a
//! dev-dependency, `wheel-bench` as a normal one (the durable section's
//! server, the HTTP and server sections' receiver). It depends on no crate
//! of the workspace, so that none of them forms a cycle with it.
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
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod corpus;
mod eventually;
pub mod model;
#[cfg(feature = "receiver")]
mod receiver;
mod redis_cluster;
mod redis_server;

pub use corpus::seed_corpus;
pub use eventually::{LIVENESS, eventually, eventually_within};
#[cfg(feature = "receiver")]
pub use receiver::{Gate, Received, Receiver, ReceiverOptions, Reply, Script};
pub use redis_cluster::RedisCluster;
pub use redis_server::{RedisServer, ServerOptions};
