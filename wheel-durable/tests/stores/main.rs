//! The durable tier on its stores, in one test binary: the embedded store
//! and Redis with nodes in one process, nodes as processes of their own
//! (the `durable_node` binary), async handlers, flow control, and the log
//! events. One module per subject; each module's tests keep their paths
//! (`durable_redis::...`).

#[path = "../common/mod.rs"]
mod durable_common;
mod durable_listing;

mod durable_async;
mod durable_cluster;
mod durable_dedup;
mod durable_embedded;
// The origins of HTTP callbacks are their flow keys; their node
// processes send them, which needs a TLS provider.
#[cfg(all(feature = "http", feature = "tls-ring"))]
mod durable_flow_limit_processes;
#[cfg(all(feature = "http", feature = "tls-ring"))]
mod durable_flow_processes;

mod durable_flow_limits;
mod durable_flows;
mod durable_logs;
mod durable_processes;
mod durable_redis;
mod durable_replication;
// Its flows are HTTP callbacks' origins.
#[cfg(feature = "http")]
mod durable_replay;
mod durable_schedule_processes;
mod durable_schedules;
