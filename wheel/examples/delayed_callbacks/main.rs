//! HTTP-callback timers end to end: "call this URL at that time".
//!
//! ```text
//! cargo run --release -p wheel --example delayed_callbacks
//! cargo run --release -p wheel --example delayed_callbacks -- --redis redis://127.0.0.1:6379/0 --nodes 3
//! ```
//!
//! Starts a receiver on loopback that checks each request's signature,
//! then schedules a few hundred signed callbacks over about ten seconds:
//! orders to close unless paid (every tenth is paid, and its callback
//! cancelled) and reminders. Each arrival prints its lateness (arrival
//! minus due time); a summary follows.
//!
//! With no arguments one node fires, on the embedded store in a temporary
//! directory. With `--redis URL` the example starts `--nodes N` node
//! processes on Redis (itself, re-run with `--node`), kills one with
//! SIGKILL halfway, and shows that every callback still arrives: the dead
//! node's claims are taken over when their lease ends, so a few come late,
//! and one it was sending as it died may come twice (at least once; the
//! `Wheel-Fence` header tells the copies apart).
//!
//! Options: `--count N` callbacks (default 300), `--seconds S` to spread
//! them over (default 10), and `--private-redis` instead of `--redis URL`
//! to start a `redis-server` of its own (on a free loopback port, without
//! persistence; it must be on the PATH) for the node processes.
//!
//! The example needs wheel's `http` and `redis` features. Built without
//! them (as the plain command above builds it), it runs itself again
//! through cargo with `--features http,redis`, the same arguments and the
//! same profile.

#[cfg(all(feature = "http", feature = "redis"))]
mod demo;

#[cfg(all(feature = "http", feature = "redis"))]
fn main() {
    demo::main();
}

#[cfg(not(all(feature = "http", feature = "redis")))]
fn main() {
    let mut cmd =
        std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args([
        "run",
        "-p",
        "wheel",
        "--features",
        "http,redis",
        "--example",
        "delayed_callbacks",
    ]);
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    cmd.arg("--").args(std::env::args_os().skip(1));
    eprintln!("delayed_callbacks: building it with wheel's http and redis features first");
    match cmd.status() {
        Ok(status) => std::process::exit(status.code().unwrap_or(1)),
        Err(e) => {
            eprintln!("delayed_callbacks: could not run cargo: {e}");
            std::process::exit(1);
        }
    }
}
