//! One durable-timer node as a process of its own: the multi-process tests
//! start it as a child and kill it with SIGKILL; it also shows how a
//! service runs a node.
//!
//! ```text
//! durable_node (--embedded PATH | --redis URL) [--namespace NS]
//!              [--lease-ms N] [--claim-ahead-ms N] [--poll-ms N] [--http]
//!              (--fire | --add N [--due-in-ms M])
//! ```
//!
//! `--fire` runs a handler that prints `fired KEY FENCE ATTEMPT UNIX_MS`
//! for each run (flushed at once) until its standard input closes, then
//! shuts down cleanly. With `--http` (built with the `http` feature) the
//! node also sends HTTP-callback timers, with the default `HttpConfig`; a
//! callback prints nothing. `--add N` adds timers `k0`..`k{N-1}` due M ms from
//! now (default 1000), one `add` each, printing `acked KEY` after each
//! returns, then exits; when an add fails, it prints `store_available
//! BOOL` (from `stats`) and exits with status 1.
//!
//! ```text
//! cargo run --release -p wheel-durable --features redis --example durable_node -- --embedded /tmp/timers --fire
//! ```
//!
//! The durable tier's log events go to stderr at the level `RUST_LOG`
//! names (`info` by default): stdout carries only the lines above, which
//! the tests read.

use std::io::{BufRead, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wheel_durable::{DurableTimers, DurableTimersBuilder, Outcome};

enum Mode {
    Fire,
    Add { n: u64, due_in: u64 },
}

fn parse() -> Result<(DurableTimersBuilder, Mode), lexopt::Error> {
    use lexopt::prelude::*;
    let mut b = DurableTimers::builder();
    let mut mode = None;
    let mut due_in = 1_000;
    let mut p = lexopt::Parser::from_env();
    let millis = |p: &mut lexopt::Parser| -> Result<Duration, lexopt::Error> {
        Ok(Duration::from_millis(p.value()?.parse()?))
    };
    while let Some(arg) = p.next()? {
        match arg {
            Long("embedded") => b = b.embedded(p.value()?.string()?),
            Long("redis") => b = b.redis(&p.value()?.string()?),
            Long("namespace") => b = b.namespace(&p.value()?.string()?),
            Long("lease-ms") => b = b.lease(millis(&mut p)?),
            Long("claim-ahead-ms") => b = b.claim_ahead(millis(&mut p)?),
            Long("poll-ms") => b = b.poll(millis(&mut p)?),
            #[cfg(feature = "http")]
            Long("http") => b = b.http(wheel_durable::http::HttpConfig::new()),
            Long("fire") => mode = Some(Mode::Fire),
            Long("add") => {
                mode = Some(Mode::Add {
                    n: p.value()?.parse()?,
                    due_in: 0,
                })
            }
            Long("due-in-ms") => due_in = p.value()?.parse()?,
            _ => return Err(arg.unexpected()),
        }
    }
    let mode = match mode {
        Some(Mode::Add { n, .. }) => Mode::Add { n, due_in },
        Some(m) => m,
        None => return Err("choose --fire or --add N".into()),
    };
    Ok((b, mode))
}

fn unix_ms(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

/// Prints the durable tier's `tracing` events on stderr, so that stdout
/// stays the line protocol the tests parse.
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
    let (builder, mode) = match parse() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("durable_node: {e}");
            std::process::exit(2);
        }
    };
    let result = match mode {
        Mode::Fire => fire(builder),
        Mode::Add { n, due_in } => add(builder, n, due_in),
    };
    if let Err(e) = result {
        eprintln!("durable_node: {e}");
        std::process::exit(1);
    }
}

fn fire(builder: DurableTimersBuilder) -> Result<(), wheel_durable::DurableError> {
    let timers = builder
        .handler(|t| {
            let line = format!(
                "fired {} {} {} {}\n",
                t.key,
                t.fence,
                t.attempt,
                unix_ms(SystemTime::now())
            );
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
            Outcome::Done
        })
        .build()?;
    println!("ready");
    // Runs until the parent closes our standard input (or kills us).
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    timers.shutdown()
}

fn add(
    builder: DurableTimersBuilder,
    n: u64,
    due_in: u64,
) -> Result<(), wheel_durable::DurableError> {
    let timers = builder.build()?;
    let due = SystemTime::now() + Duration::from_millis(due_in);
    let mut out = std::io::stdout().lock();
    for i in 0..n {
        let key = format!("k{i}");
        if let Err(e) = timers.add_at(&key, due, key.as_bytes()) {
            // What a metrics endpoint polling the node would show now.
            let _ = writeln!(out, "store_available {}", timers.stats().store_available);
            return Err(e);
        }
        let _ = writeln!(out, "acked {key}");
        let _ = out.flush();
    }
    drop(out);
    timers.shutdown()
}
