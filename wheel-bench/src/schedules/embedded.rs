//! Schedules every minute on the embedded store, every one due in the
//! same slot, so that when the slot comes the node does nothing but start
//! runs, and each start creates that schedule's next run (in the same
//! store operation, before the handler is called): the rate of those
//! starts is the next-run creation rate.
//!
//! Two ways in, one workload ([`Mode`]): a node running while the
//! schedules are created and when their slot comes ([`Mode::Live`]: the
//! creation rate and the bytes per schedule), and a node built only after
//! the slot has passed ([`Mode::Restart`]: from `build()` to the first
//! run and to the last, every run overdue).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use wheel_durable::schedule::{Schedule, Spec};
use wheel_durable::{DurableError, Fired, Outcome};

use super::{Periods, broken_chains, create, creation_allowance, probe_rate};
use crate::durable::ours::{self, Store};
use crate::durable::{Summary, remove_store, store_bytes, temp_store, unix_ns, whole_ms};

/// The period of every schedule here.
pub const PERIOD: Duration = Duration::from_secs(60);

/// Throwaway schedules upserted to time the creation.
const PROBE: usize = 2_000;

/// How the node meets the slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Running throughout.
    Live,
    /// Built after the slot passed, with every run overdue.
    Restart,
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct EmbeddedRun {
    /// Schedules.
    pub schedules: usize,
    /// Upserts per second while creating them (from
    /// [`CREATE_THREADS`](super::CREATE_THREADS) threads).
    pub upserts_per_sec: f64,
    /// Runs started (so next runs created) per second, from the first
    /// handler start to the last.
    pub created_per_sec: f64,
    /// The store's bytes on disk per schedule once every chain moved on
    /// (allocated blocks, minus an empty store's), node closed.
    pub bytes_per_schedule: f64,
    /// Of which in the store's tables; the rest is its journal, which
    /// holds every write since the tables were last written (so the
    /// history of each record, not only its last state).
    pub table_bytes_per_schedule: f64,
    /// How long `build()` took ([`Mode::Restart`]).
    pub build: Duration,
    /// From calling `build()` (or, live, from the slot) to the first
    /// handler start.
    pub first: Duration,
    /// ... and to the last.
    pub all: Duration,
    /// Lateness against the slot, early runs, missing runs (`lost`),
    /// duplicates.
    pub summary: Summary,
    /// Runs of slots outside the workload.
    pub unexpected: u64,
    /// Schedules without exactly 2 runs created and the next one pending
    /// one period after the slot.
    pub broken: u64,
}

impl EmbeddedRun {
    /// Missing runs, duplicates, early runs, unexpected runs and broken
    /// chains are failures.
    pub fn check(&self) -> crate::workloads::Check {
        let s = &self.summary;
        crate::workloads::Check::from_errors(&[
            ("missing runs", s.lost as u64),
            ("duplicates", s.duplicates),
            ("early", s.early as u64),
            ("unexpected runs", self.unexpected),
            ("broken chains", self.broken),
        ])
    }
}

/// `schedules` schedules on a fresh embedded store, met by a node as
/// `mode` says; the store is removed afterwards.
pub fn run(schedules: usize, mode: Mode) -> Result<EmbeddedRun, String> {
    let empty = empty_store_bytes().map_err(|e| e.to_string())?;
    let rate = probe().map_err(|e| e.to_string())?;
    let path = temp_store("schedules");
    let out = run_in(&path, schedules, mode, rate, empty);
    remove_store(&path);
    out
}

/// The directory of an embedded store's tables (the store's own layout:
/// its journal files sit beside it).
const TABLES: &str = "keyspaces";

/// Bytes on disk of a store: in all, and in its tables.
fn bytes_of(path: &std::path::Path) -> (u64, u64) {
    (store_bytes(path), store_bytes(&path.join(TABLES)))
}

/// [`bytes_of`] an embedded store opened and closed empty.
fn empty_store_bytes() -> Result<(u64, u64), DurableError> {
    let path = temp_store("schedules-empty");
    let t = ours::builder(&Store::Embedded(path.clone()), "s").build();
    let out = t.and_then(|t| t.shutdown()).map(|()| bytes_of(&path));
    remove_store(&path);
    out
}

/// Upserts per second on a throwaway embedded store.
fn probe() -> Result<f64, DurableError> {
    let path = temp_store("schedules-probe");
    let out = ours::builder(&Store::Embedded(path.clone()), "s")
        .build()
        .and_then(|t| {
            let later = Spec::every(PERIOD).expect("a minute is a period");
            let s = Schedule::builder(later).build().expect("no bounds");
            let rate = probe_rate(&t, PROBE, &s)?;
            t.shutdown().map(|()| rate)
        });
    remove_store(&path);
    out
}

fn run_in(
    path: &std::path::Path,
    n: usize,
    mode: Mode,
    rate: f64,
    empty: (u64, u64),
) -> Result<EmbeddedRun, String> {
    let e = |e: DurableError| e.to_string();
    let store = Store::Embedded(path.to_owned());
    let slot = whole_ms(SystemTime::now() + creation_allowance(n, rate));
    let spec = Spec::every_from(PERIOD, slot).map_err(|e| e.to_string())?;
    let schedule = Schedule::builder(spec).build().map_err(|e| e.to_string())?;
    let rec = Arc::new(Periods::new(n, 1, slot, PERIOD));
    let node = || {
        let rec = rec.clone();
        ours::builder(&store, "s")
            .handler(move |t: &Fired| {
                if let Some(run) = &t.schedule {
                    rec.record_run(run, unix_ns(SystemTime::now()));
                }
                Outcome::Done
            })
            .build()
            .map_err(e)
    };
    // `t0`: what the first and last runs are timed from.
    let (timers, upserting, build, t0) = match mode {
        Mode::Live => {
            let timers = node()?;
            let took = create(&timers, &vec![schedule.clone(); n]).map_err(e)?;
            (timers, took, Duration::ZERO, slot)
        }
        Mode::Restart => {
            let client = ours::builder(&store, "s").build().map_err(e)?;
            let took = create(&client, &vec![schedule.clone(); n]).map_err(e)?;
            client.shutdown().map_err(e)?;
            if let Ok(wait) = slot.duration_since(SystemTime::now()) {
                std::thread::sleep(wait + Duration::from_millis(100));
            }
            let t0 = SystemTime::now();
            let t = Instant::now();
            let timers = node()?;
            (timers, took, t.elapsed(), t0)
        }
    };
    if mode == Mode::Live && SystemTime::now() >= slot {
        timers.shutdown().map_err(e)?;
        return Err(format!(
            "creating took {} ms, past the slot",
            upserting.as_millis()
        ));
    }
    rec.wait_all(slot + PERIOD / 2);
    let broken = broken_chains(&timers, n, 2, Some(slot + PERIOD));
    timers.shutdown().map_err(e)?;
    let broken = broken.map_err(e)?;
    let span = rec.span();
    let (all, tables) = bytes_of(path);
    let per = |b: u64, empty: u64| b.saturating_sub(empty) as f64 / n.max(1) as f64;
    let from_t0 = |ns: i64| Duration::from_nanos((ns - unix_ns(t0)).max(0) as u64);
    Ok(EmbeddedRun {
        schedules: n,
        upserts_per_sec: n as f64 / upserting.as_secs_f64().max(1e-6),
        created_per_sec: n as f64 / (span.map_or(0, |(a, b)| b - a).max(1_000_000) as f64 / 1e9),
        bytes_per_schedule: per(all, empty.0),
        table_bytes_per_schedule: per(tables, empty.1),
        build,
        first: span.map_or(Duration::MAX, |(a, _)| from_t0(a)),
        all: span.map_or(Duration::MAX, |(_, b)| from_t0(b)),
        summary: rec.summary(),
        unexpected: rec.unexpected(),
        broken,
    })
}
