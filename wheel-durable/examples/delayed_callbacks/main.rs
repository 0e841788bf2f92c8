//! HTTP-callback timers end to end: "call this URL at that time".
//!
//! ```text
//! cargo run --release -p wheel-durable --features redis,tls-ring --example delayed_callbacks
//! cargo run --release -p wheel-durable --features redis,tls-ring --example delayed_callbacks -- --redis redis://127.0.0.1:6379/0 --nodes 3
//! ```
//!
//! Starts a receiver on loopback that checks each request's Standard
//! Webhooks signature,
//! then schedules a few hundred signed callbacks over about ten seconds:
//! orders to close unless paid (every tenth is paid, and its callback
//! cancelled) and reminders. Each arrival prints its lateness (arrival
//! minus due time); a summary follows. A burst of callbacks more, all due
//! at one instant to an endpoint that takes 100 ms to answer, shows the
//! node keeping them in flight together: the summary says how long from
//! their due time to the last one's arrival.
//!
//! With no arguments one node fires, on the embedded store in a temporary
//! directory. With `--redis URL` the example starts `--nodes N` node
//! processes on Redis (itself, re-run with `--node`), kills one with
//! SIGKILL halfway, and shows that every callback still arrives: the dead
//! node's claims are taken over when their lease ends, so a few come late,
//! and one it was sending as it died may come twice (at least once; both
//! copies carry the same `webhook-id`, and `Wheel-Fence` tells them apart).
//!
//! Options: `--count N` callbacks (default 300), `--seconds S` to spread
//! them over (default 10), `--burst N` callbacks in the burst (default
//! 300; 0 for none), and `--private-redis` instead of `--redis URL`
//! to start a `redis-server` of its own (on a free loopback port, without
//! persistence; it must be on the PATH) for the node processes.
//!
//! The example needs wheel's `redis` and `http` features (its
//! `required-features`; cargo says so when they are missing). The durable
//! tier's log events go to stderr at the level `RUST_LOG` names (`info` by
//! default); stdout is the example's own report, and in a node process the
//! line its parent waits for.

mod demo;

fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    demo::main();
}
