//! One durable-timer node as a process of its own, printing the durable
//! tier's log events: the node of the `durable_node` binary (its options
//! and output are in `src/bin/durable_node.rs`), run after installing a
//! `tracing` subscriber, as a service would.
//!
//! ```text
//! cargo run --release -p wheel-durable --features redis --example durable_node -- --embedded /tmp/timers --fire
//! ```
//!
//! The log events go to stderr at the level `RUST_LOG` names (`info` by
//! default): stdout carries only the node's line protocol.

#[path = "../src/bin/durable_node.rs"]
mod node;

/// Prints the durable tier's `tracing` events on stderr, so that stdout
/// stays the node's line protocol.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn main() {
    init_logging();
    node::main();
}
