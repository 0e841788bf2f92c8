//! The schedules section: our durable recurring schedules on Redis (three
//! nodes, a private `redis-server` started for the section) beside the
//! in-memory `wheel::Scheduler::schedule_repeating`, and on the embedded
//! store with a node running and with a node restarted; then the targets.
//! Without a `redis-server` the Redis row says so and the rest runs.

use std::time::Duration;

use wheel_testkit::{RedisServer, ServerOptions};

use super::{Progress, Results, Settings, fmt_count};
use crate::report::{Table, ms};
use crate::schedules::embedded::{self, EmbeddedRun, Mode};
use crate::schedules::every_second::{self, EverySecondParams, EverySecondRun};
use crate::workloads::Check;

mod targets;

/// The schedules section's sizes.
#[derive(Debug, Clone)]
pub struct SchedulesParams {
    /// The quick run's smaller workloads (the targets say so).
    pub quick: bool,
    /// Schedules every second on Redis (and in memory).
    pub every_second: EverySecondParams,
    /// Schedules every minute on the embedded store, node running.
    pub embedded: usize,
    /// Schedules every minute on the embedded store, node restarted.
    pub restart: usize,
}

impl SchedulesParams {
    /// `--quick`: 1 000 schedules every second for 5 s, 10 000 every
    /// minute on the embedded store, 10 000 for the restart.
    pub fn quick() -> SchedulesParams {
        SchedulesParams::with(1_000, 5, 10_000, true)
    }

    /// The full run: 10 000 schedules every second for 30 s, 100 000
    /// every minute on the embedded store, 100 000 for the restart.
    pub fn full() -> SchedulesParams {
        SchedulesParams::with(10_000, 30, 100_000, false)
    }

    fn with(every: usize, secs: u64, embedded: usize, quick: bool) -> SchedulesParams {
        SchedulesParams {
            quick,
            every_second: EverySecondParams {
                schedules: every,
                window: Duration::from_secs(secs),
                nodes: 3,
                grace: Duration::from_secs(5),
                spread: true,
            },
            embedded,
            restart: embedded,
        }
    }
}

/// What the targets read, gathered as the section runs.
#[derive(Debug, Default)]
pub(super) struct Figures {
    redis: Option<EverySecondRun>,
    live: Option<EmbeddedRun>,
    restart: Option<EmbeddedRun>,
}

/// Runs the schedules section into `results`.
pub fn run_schedules(s: &Settings, progress: &Progress, results: &mut Results) {
    let p = &s.schedules;
    let server = start_server(progress);
    let url = server.as_ref().map(RedisServer::url);
    let mut figures = Figures::default();
    results.tables.push(every_second_table(
        p,
        url.as_deref(),
        progress,
        &mut figures,
    ));
    results
        .tables
        .push(embedded_table(p, progress, &mut figures));
    results.tables.push(targets::table(&figures, p));
}

/// Starts the section's Redis server, or says why there is none.
fn start_server(progress: &Progress) -> Option<RedisServer> {
    if !RedisServer::available() {
        progress.say("schedules: redis-server is not on the PATH; embedded store only");
        return None;
    }
    RedisServer::start(ServerOptions::default())
        .map_err(|e| progress.say(format!("schedules: redis-server did not start ({e})")))
        .ok()
}

/// The row name of ours on Redis.
const OURS_REDIS: &str = "ours, Redis, 3 nodes";
/// The row name of the in-memory peer.
const IN_MEMORY: &str = "in-memory wheel::Scheduler::schedule_repeating (not durable)";

/// The every-second table, without rows.
fn every_second_empty(e: &EverySecondParams) -> Table {
    Table::new(
        &format!(
            "Schedules: {} every second for {} s",
            fmt_count(e.schedules),
            e.window.as_secs()
        ),
        &format!(
            "{} schedules, each every second for {} s ({} periods each), with their phases spread \
             evenly over the second (schedule i of n at i/n s after it: an even load) and all on \
             the whole second (what `Spec::every(1 s)` gives: one burst of every schedule each \
             second). Ours: durable schedules \
             (`upsert_schedule`, `Spec::every_from(1 s, phase)` with a start and an end), created from 16 threads \
             before the nodes start, fired by {} nodes in this process (builder defaults: 4 workers, \
             claims 2 s ahead) on a private `redis-server`; the first slot is a whole second after \
             the creation (timed by a probe of 500 upserts). The in-memory peer: as many \
             `schedule_repeating(1 s)` timers on one `wheel::Scheduler` at its defaults, nothing \
             durable (no store, no other node; a crash loses every schedule), the floor of what a \
             process pays to keep a period. Lateness = run start minus the period's nominal time, \
             in ms, over each period's first run. Missing: periods that did not run within {} s \
             after the window. Duplicates: runs beyond the first. Early: runs before their \
             nominal time. Chains: schedules (ours) whose chain did not end with exactly one run \
             created per period, and runs of slots outside the workload. Creating: upserting \
             every schedule (ours), scheduling every timer (the peer).",
            fmt_count(e.schedules),
            e.window.as_secs(),
            e.periods(),
            e.nodes,
            e.grace.as_secs()
        ),
        &[
            "implementation",
            "creating (ms)",
            "p50 (ms)",
            "p99 (ms)",
            "max (ms)",
            "missing",
            "duplicates",
            "early",
            "chains",
            "check",
        ],
    )
}

/// Ours on Redis and the in-memory peer, phases spread, then all on the
/// second.
fn every_second_table(
    p: &SchedulesParams,
    url: Option<&str>,
    progress: &Progress,
    figures: &mut Figures,
) -> Table {
    let e = &p.every_second;
    let mut t = every_second_empty(e);
    for spread in [true, false] {
        let e = &EverySecondParams {
            spread,
            ..e.clone()
        };
        let phases = if spread { SPREAD } else { ALIGNED };
        let ours = format!("{OURS_REDIS}, {phases}");
        match url {
            Some(url) => {
                progress.say(format!("schedules: {ours}"));
                match every_second::run_redis(e, url) {
                    Ok(r) => {
                        t.row(every_second_row(&ours, &r));
                        if spread {
                            figures.redis = Some(r);
                        }
                    }
                    Err(why) => t.row(failed_row(&ours, &why)),
                }
            }
            None => t.row(vec![ours, "no redis-server".into()]),
        }
        let peer = format!("{IN_MEMORY}, {phases}");
        progress.say(format!("schedules: {peer}"));
        match every_second::run_in_memory(e) {
            Ok(r) => t.row(every_second_row(&peer, &r)),
            Err(why) => t.row(failed_row(&peer, &why)),
        }
    }
    t
}

/// The rows' phasings.
const SPREAD: &str = "phases spread";
const ALIGNED: &str = "all on the second";

/// Signed nanoseconds as milliseconds, two decimals.
fn ms2(ns: Option<i64>) -> String {
    ns.map_or("-".into(), |v| format!("{:.2}", v as f64 / 1e6))
}

fn every_second_row(name: &str, r: &EverySecondRun) -> Vec<String> {
    let s = &r.summary;
    vec![
        name.into(),
        ms(r.creating),
        ms2(s.pct(50.0)),
        ms2(s.pct(99.0)),
        ms2(s.max()),
        s.lost.to_string(),
        s.duplicates.to_string(),
        s.early_cell(),
        format!("{} broken, {} unexpected", r.broken, r.unexpected),
        r.check().label(),
    ]
}

/// A row saying the run failed, in the check column.
fn failed_row(name: &str, why: &str) -> Vec<String> {
    vec![name.into(), Check::Failed(why.into()).label()]
}

fn embedded_table(p: &SchedulesParams, progress: &Progress, figures: &mut Figures) -> Table {
    let mut t = Table::new(
        "Schedules: every minute on the embedded store, all due in one slot",
        &format!(
            "Durable schedules every minute on the embedded store, all on the same slot, each \
             with a 32-byte payload of its own (pseudo-random, so that the store's compression \
             gains nothing from it), created from 16 threads (upserts/s) before it: {} with a node running throughout, {} with \
             the node built only after the slot passed (a restart with every run overdue). At \
             the slot the node only starts runs, and each start creates the schedule's next run \
             in the same store operation, before its handler is called: next runs/s = schedules \
             ÷ (last handler start − first). Bytes: the store's allocated blocks on disk per \
             schedule, the node closed, every schedule holding its record and its next run \
             (an empty store's blocks subtracted); in brackets, those in its tables: the rest is its \
             journal, every write since the tables were last written (each upsert, claim and start \
             rewrites the record), which the store folds into its tables as the journal fills, so \
             a small run's figure is mostly journal. build(): how long the restarted node's \
             `build()` took; first and all: from `build()` (the restart) or the slot (running) \
             to the first and the last handler start. p99: lateness against the slot. The check \
             fails on missing, duplicate or early runs, or a schedule without exactly two runs \
             created and its next run one minute after the slot.",
            fmt_count(p.embedded),
            fmt_count(p.restart)
        ),
        &[
            "implementation",
            "schedules",
            "upserts/s",
            "next runs/s",
            "bytes/schedule (tables)",
            "build() (ms)",
            "first (ms)",
            "all (ms)",
            "p99 (ms)",
            "check",
        ],
    );
    for (mode, n, name) in [
        (Mode::Live, p.embedded, "ours, embedded, node running"),
        (Mode::Restart, p.restart, "ours, embedded, node restarted"),
    ] {
        progress.say(format!("schedules: {name}, {}", fmt_count(n)));
        match embedded::run(n, mode) {
            Ok(r) => {
                t.row(embedded_row(name, &r, mode));
                match mode {
                    Mode::Live => figures.live = Some(r),
                    Mode::Restart => figures.restart = Some(r),
                }
            }
            Err(why) => t.row(failed_row(name, &why)),
        }
    }
    t
}

fn embedded_row(name: &str, r: &EmbeddedRun, mode: Mode) -> Vec<String> {
    vec![
        name.into(),
        fmt_count(r.schedules),
        format!("{:.0}", r.upserts_per_sec),
        format!("{:.0}", r.created_per_sec),
        format!(
            "{:.0} ({:.0})",
            r.bytes_per_schedule, r.table_bytes_per_schedule
        ),
        if mode == Mode::Restart {
            ms(r.build)
        } else {
            "-".into()
        },
        ms(r.first),
        ms(r.all),
        ms2(r.summary.pct(99.0)),
        r.check().label(),
    ]
}
