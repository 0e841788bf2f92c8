//! The server section: the real `wheel-server` binary (built by the
//! section, [`crate::server::process`]) under load from `wrk`, idle, and
//! two of them on one Redis sending callbacks, one killed
//! ([`crate::server`]). Load rows need `wrk` and callback rows need
//! `redis-server`; without one, its rows say so and are skipped, and the
//! others run.
//!
//! Tables: adds over HTTP (one timer per request, batches, and the
//! library's own adds for the ratio), the idle server, callbacks from two
//! servers, and the section's targets ([`targets`]).

use std::time::Duration;

use wheel_testkit::{RedisServer, ServerOptions};

use super::{Progress, Results, Settings, fmt_count};
use crate::durable::flush;
use crate::server::fleet::{self, FleetParams, FleetRun};
use crate::server::load::{self, LoadParams, Loaded, SingleServer};
use crate::server::procfs::Idle;
use crate::server::{SERVER_LEASE, process, wrk};

mod median;
mod tables;
mod targets;

pub use targets::ServerFigures;

/// The section's sizes.
#[derive(Debug, Clone)]
pub struct ServerParams {
    /// The quick run's smaller sizes.
    pub quick: bool,
    /// How often each run is made (the section reports medians).
    pub runs: usize,
    /// The single server: idle, the loads, the library's adds.
    pub load: LoadParams,
    /// Two servers, callbacks at 1 000/s.
    pub lateness: FleetParams,
    /// The same, one killed.
    pub kill: FleetParams,
}

impl ServerParams {
    /// `--quick`: 5 s loads, short idle windows, callbacks over 3 s (4 s
    /// with the kill).
    pub fn quick() -> ServerParams {
        ServerParams::with(true, 5, 2, 3, 3, 4)
    }

    /// The full run: 15 s loads, 5 s idle windows, callbacks over 10 s.
    pub fn full() -> ServerParams {
        ServerParams::with(false, 15, 5, 5, 10, 10)
    }

    fn with(
        quick: bool,
        load_s: u64,
        settle_s: u64,
        idle_s: u64,
        window_s: u64,
        kill_s: u64,
    ) -> Self {
        let fleet = |window_s: u64, kill_after| FleetParams {
            rate: 1_000,
            window: Duration::from_secs(window_s),
            // Past the servers' 2 s claim window: timers are claimed as
            // they enter it, as when added well ahead.
            lead: Duration::from_secs(3),
            bound: Duration::from_secs(if quick { 2 } else { 5 }),
            kill_after,
        };
        ServerParams {
            quick,
            // The full run's figures are medians of three; the quick run,
            // in CI, makes each once.
            runs: if quick { 1 } else { 3 },
            load: LoadParams {
                connections: 64,
                wrk_threads: 2,
                load_for: Duration::from_secs(load_s),
                batch: 1_000,
                batch_connections: 4,
                library_threads: 64,
                settle: Duration::from_secs(settle_s),
                idle_for: Duration::from_secs(idle_s),
            },
            lateness: fleet(window_s, None),
            kill: fleet(kill_s, Some(Duration::from_secs(kill_s) / 2)),
        }
    }
}

/// "1K/s over 3 s".
fn rate_over(p: &FleetParams) -> String {
    format!(
        "{}/s over {} s",
        fmt_count(p.rate as usize),
        p.window.as_secs_f64()
    )
}

/// The machine's one-minute load average for progress lines: the server,
/// wrk and Redis share the machine's cores, so a busy machine shows in
/// every figure.
fn load_avg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(|l| format!(" (load {l})")))
        .unwrap_or_default()
}

/// Starts the section's Redis server, or says why there is none.
fn start_redis(progress: &Progress) -> Option<RedisServer> {
    if !RedisServer::available() {
        progress.say("server: redis-server is not on the PATH; the callback rows are skipped");
        return None;
    }
    match RedisServer::start(ServerOptions::default()) {
        Ok(s) => Some(s),
        Err(e) => {
            progress.say(format!(
                "server: redis-server did not start ({e}); the callback rows are skipped"
            ));
            None
        }
    }
}

/// Runs the section into `results`.
pub fn run_server(s: &Settings, progress: &Progress, results: &mut Results) {
    let p = &s.server;
    if p.quick {
        progress.say(format!(
            "server, quick: {} s loads, idle over {} s, callbacks {} and {} (smaller than the full run)",
            p.load.load_for.as_secs(),
            p.load.idle_for.as_secs(),
            rate_over(&p.lateness),
            rate_over(&p.kill)
        ));
    }
    if std::env::var_os("WHEEL_SERVER_BIN").is_none() {
        progress.say("server: building wheel-server (cargo build --release -p wheel-server)");
    }
    let bin = process::binary();
    let with_wrk = wrk::available();
    if !with_wrk {
        progress
            .say("server: wrk is not on the PATH (apt-get install wrk); the load rows are skipped");
    }
    let mut figures = ServerFigures::default();
    let singles: Vec<_> = (1..=p.runs)
        .map(|i| {
            bin.as_ref().map_err(Clone::clone).and_then(|bin| {
                progress.say(format!(
                    "server: one server, embedded store: idle, adds, batches, idle again{}{}",
                    nth(i, p.runs),
                    load_avg()
                ));
                load::run(bin, &p.load, with_wrk)
            })
        })
        .collect();
    figures.ratio = median::ratio(&singles);
    let single = median::single(singles);
    figures.single(&single);
    results.tables.push(tables::adds(p, &single, with_wrk));
    results.tables.push(tables::idle(p, &single));
    let redis = start_redis(progress);
    let url = redis.as_ref().map(RedisServer::url);
    let mut fleet_rows = Vec::new();
    for (params, name) in [(&p.lateness, "2 servers"), (&p.kill, "2 servers, 1 killed")] {
        let Some(url) = url.as_deref() else {
            fleet_rows.push((name, params, Err(None)));
            continue;
        };
        let runs: Vec<_> = (1..=p.runs)
            .map(|i| {
                progress.say(format!(
                    "server: callbacks from {name}, {}{}",
                    rate_over(params),
                    nth(i, p.runs)
                ));
                let _ = flush(url);
                bin.as_ref()
                    .map_err(Clone::clone)
                    .and_then(|bin| fleet::run(bin, url, params))
            })
            .collect();
        let run = if params.kill_after.is_some() {
            median::kill(runs)
        } else {
            median::lateness(runs)
        };
        if let Ok(r) = &run {
            figures.fleet(params.kill_after.is_some(), r);
        }
        fleet_rows.push((name, params, run.map_err(Some)));
    }
    results.tables.push(tables::callbacks(p, &fleet_rows));
    results.tables.push(targets::table(&figures, p));
}

/// ", run 2 of 3" when runs repeat.
fn nth(i: usize, runs: usize) -> String {
    if runs > 1 {
        format!(", run {i} of {runs}")
    } else {
        String::new()
    }
}

/// The idle figures of a single-server run, fresh and loaded.
fn idles(single: &Result<SingleServer, String>) -> [Result<(Idle, Option<u64>), String>; 2] {
    match single {
        Ok(s) => [
            s.idle_fresh.clone().map(|i| (i, None)),
            s.idle_loaded.clone().map(|(i, n)| (i, Some(n))),
        ],
        Err(e) => [Err(e.clone()), Err(e.clone())],
    }
}

/// The one-timer and batch loads of a single-server run.
fn loads(single: &Result<SingleServer, String>) -> [Result<Option<Loaded>, String>; 2] {
    match single {
        Ok(s) => [s.adds.clone(), s.batches.clone()],
        Err(e) => [Err(e.clone()), Err(e.clone())],
    }
}

/// The fleet runs as the tables take them: a row name, its workload, and
/// the run (`Err(None)`: no Redis).
type FleetRow<'a> = (&'a str, &'a FleetParams, Result<FleetRun, Option<String>>);

/// "lease 5 s (the default)".
fn lease() -> String {
    format!("lease {} s (the server's default)", SERVER_LEASE.as_secs())
}
