//! One durable-timer node as a process of its own: the multi-process tests
//! start it as a child and kill it with SIGKILL. Cargo builds it (it needs
//! the `embedded` and `redis` features) before the tests that name it by
//! `CARGO_BIN_EXE_durable_node`; the example `durable_node` runs the same
//! node with its log events printed.
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
//! Stdout carries only the lines above, which the tests read. The binary
//! installs no log subscriber (its only dependencies are the library's),
//! so the durable tier's log events are not printed; the example prints
//! them to stderr.
//!
//! Node state: none of its own: the node it starts owns its stages (`node/`).

use std::io::{BufRead, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wheel_durable::{DurableTimers, DurableTimersBuilder, Outcome};

enum Mode {
    Fire,
    Add { n: u64, due_in: u64 },
}

/// Parses the command line (`--name value` pairs and flags): the
/// library's dependencies only, so cargo can build this as a binary.
fn parse() -> Result<(DurableTimersBuilder, Mode), String> {
    let mut b = DurableTimers::builder();
    let mut mode = None;
    let mut due_in = 1_000;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|e| format!("{arg} {v}: {e}"));
        match arg.as_str() {
            "--embedded" => b = b.embedded(value()?),
            "--redis" => b = b.redis(&value()?),
            "--namespace" => b = b.namespace(&value()?),
            "--lease-ms" => b = b.lease(Duration::from_millis(number(value()?)?)),
            "--claim-ahead-ms" => b = b.claim_ahead(Duration::from_millis(number(value()?)?)),
            "--poll-ms" => b = b.poll(Duration::from_millis(number(value()?)?)),
            #[cfg(feature = "http")]
            "--http" => b = b.http(wheel_durable::http::HttpConfig::new()),
            "--fire" => mode = Some(Mode::Fire),
            "--add" => {
                mode = Some(Mode::Add {
                    n: number(value()?)?,
                    due_in: 0,
                })
            }
            "--due-in-ms" => due_in = number(value()?)?,
            _ => return Err(format!("unexpected argument {arg}")),
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

/// Runs the node; the example calls this after installing its log
/// subscriber.
pub(crate) fn main() {
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
