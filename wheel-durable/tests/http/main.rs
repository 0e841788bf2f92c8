//! HTTP-callback timers, in one test binary: what a node sends and how it
//! reads the replies, failures, options, load, and several nodes on Redis,
//! each against the testkit's scripted receiver. One module per subject;
//! each module's tests keep their paths (`durable_http::...`).

#[path = "../common/mod.rs"]
mod durable_common;
mod durable_http_common;

mod durable_http;
mod durable_http_failures;
mod durable_http_load;
mod durable_http_options;
mod durable_http_redis;
