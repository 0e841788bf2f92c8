//! One durable-timer node as a process of its own: the multi-process tests
//! start it as a child and kill it with SIGKILL. Cargo builds it (it needs
//! the `embedded` and `redis` features) before the tests that name it by
//! `CARGO_BIN_EXE_durable_node`; the example `durable_node` runs the same
//! node with its log events printed.
//!
//! ```text
//! durable_node (--embedded PATH | --redis URL) [--namespace NS]
//!              [--lease-ms N] [--claim-ahead-ms N] [--poll-ms N] [--http]
//!              (--fire [--busy-ms B] [--workers W] | --add N [--due-in-ms M])
//! ```
//!
//! `--fire` runs a handler that prints `fired KEY FENCE ATTEMPT UNIX_MS
//! DUE_MS NOMINAL_MS` when a run starts and `ended KEY FENCE` when it
//! returns `Done`, B ms later (default 0), each line flushed at once, until
//! its standard input closes, then shuts down cleanly. `NOMINAL_MS` is a
//! schedule's run's nominal time (`Fired::schedule`), `-` for a plain
//! timer; times are Unix milliseconds. A run with a `fired` line and no
//! `ended` line was cut short by a kill; one with both may still run again
//! if the kill came between the line and the store's record of the finish. With `--http` (built with the `http` feature) the
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
    Fire { busy: Duration },
    Add { n: u64, due_in: u64 },
}

/// Parses the command line (`--name value` pairs and flags): the
/// library's dependencies only, so cargo can build this as a binary.
fn parse() -> Result<(DurableTimersBuilder, Mode), String> {
    let mut b = DurableTimers::builder();
    let mut mode = None;
    let mut due_in = 1_000;
    let mut busy = Duration::ZERO;
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
            "--workers" => b = b.workers(usize::try_from(number(value()?)?).unwrap_or(usize::MAX)),
            "--fire" => {
                mode = Some(Mode::Fire {
                    busy: Duration::ZERO,
                })
            }
            "--busy-ms" => busy = Duration::from_millis(number(value()?)?),
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
        Some(Mode::Fire { .. }) => Mode::Fire { busy },
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
        Mode::Fire { busy } => fire(builder, busy),
        Mode::Add { n, due_in } => add(builder, n, due_in),
    };
    if let Err(e) = result {
        eprintln!("durable_node: {e}");
        std::process::exit(1);
    }
}

/// Writes one line of the protocol and flushes it, so that a line written
/// before a SIGKILL reaches the parent.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}

fn fire(builder: DurableTimersBuilder, busy: Duration) -> Result<(), wheel_durable::DurableError> {
    let timers = builder
        .handler(move |t| {
            let nominal = t
                .schedule
                .as_ref()
                .map_or("-".to_owned(), |s| unix_ms(s.nominal).to_string());
            say(&format!(
                "fired {} {} {} {} {} {nominal}\n",
                t.key,
                t.fence,
                t.attempt,
                unix_ms(SystemTime::now()),
                unix_ms(t.due),
            ));
            std::thread::sleep(busy);
            say(&format!("ended {} {}\n", t.key, t.fence));
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
