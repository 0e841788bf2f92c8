//! Schedules every second: `schedules` durable schedules on Redis fired
//! by `nodes` nodes in this process for `window`, and the same count of
//! in-memory `wheel::Scheduler::schedule_repeating` timers.
//!
//! Two phasings ([`EverySecondParams::spread`]): every schedule on the
//! whole second (what `Spec::every(1 s)` gives: one burst a second), or
//! schedule `i` of `n` at `i / n` of a second after it (`every_from`
//! with that anchor: an even load).
//!
//! Ours: the schedules are created (before any node runs, from
//! [`CREATE_THREADS`](super::CREATE_THREADS) threads) with a start at a
//! whole second after their creation and an end `window` later, so that
//! each has exactly `window / 1 s` periods and its chain ends by itself;
//! the nodes start after the creation. The start is set from a probe of
//! the upsert rate on a throwaway namespace, so that every schedule
//! exists before its first slot.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use wheel::Scheduler;
use wheel_durable::schedule::{Schedule, Spec};
use wheel_durable::{DurableTimers, Fired, Outcome};

use super::{Periods, broken_chains, create, creation_allowance, phase, probe_rate, whole_second};
use crate::durable::ours::{self, Store};
use crate::durable::{Summary, flush, unix_ns};

/// One every-second workload.
#[derive(Debug, Clone)]
pub struct EverySecondParams {
    /// Schedules (or in-memory repeating timers).
    pub schedules: usize,
    /// How long they run: whole seconds, one period each.
    pub window: Duration,
    /// Nodes firing ours.
    pub nodes: usize,
    /// How long after the window a run may still start before its period
    /// counts as missing.
    pub grace: Duration,
    /// Phases spread evenly over the second (else all on the whole
    /// second).
    pub spread: bool,
}

impl EverySecondParams {
    /// Periods per schedule.
    pub fn periods(&self) -> usize {
        self.window.as_secs().max(1) as usize
    }

    /// Each schedule's phase after the whole second.
    pub fn phases(&self) -> Vec<Duration> {
        (0..self.schedules)
            .map(|i| {
                if self.spread {
                    phase(i, self.schedules, PERIOD)
                } else {
                    Duration::ZERO
                }
            })
            .collect()
    }
}

/// The period of every schedule here.
pub const PERIOD: Duration = Duration::from_secs(1);

/// Throwaway schedules upserted to time the creation.
const PROBE: usize = 500;

/// What one run measured.
#[derive(Debug, Clone)]
pub struct EverySecondRun {
    /// Lateness, early runs, missing periods (`lost`), duplicates.
    pub summary: Summary,
    /// Runs of slots outside the workload.
    pub unexpected: u64,
    /// Schedules whose chain did not end with exactly one run per period
    /// (ours only; 0 for the in-memory peer).
    pub broken: u64,
    /// How long creating the schedules took (ours), or scheduling the
    /// repeating timers (the peer).
    pub creating: Duration,
}

impl EverySecondRun {
    /// Missing periods, duplicates, early runs, unexpected runs and broken
    /// chains are failures.
    pub fn check(&self) -> crate::workloads::Check {
        let s = &self.summary;
        crate::workloads::Check::from_errors(&[
            ("missing periods", s.lost as u64),
            ("duplicates", s.duplicates),
            ("early", s.early as u64),
            ("unexpected runs", self.unexpected),
            ("broken chains", self.broken),
        ])
    }
}

/// Ours on the Redis server at `url`, emptied first.
pub fn run_redis(p: &EverySecondParams, url: &str) -> Result<EverySecondRun, String> {
    let e = |e: wheel_durable::DurableError| e.to_string();
    let store = Store::Redis(url.to_owned());
    flush(url)?;
    let probe_spec = Schedule::builder(Spec::every(PERIOD).map_err(|e| e.to_string())?)
        .start(SystemTime::now() + Duration::from_secs(3_600))
        .build()
        .map_err(|e| e.to_string())?;
    let probe = ours::builder(&store, "sched-probe").build().map_err(e)?;
    let rate = probe_rate(&probe, PROBE.min(p.schedules), &probe_spec).map_err(e)?;
    probe.shutdown().map_err(e)?;
    flush(url)?;
    // A whole second, so that `Spec::every`'s slots (whole seconds) start
    // there; after the creation and the nodes' start, with room to claim.
    let first = whole_second(
        SystemTime::now() + creation_allowance(p.schedules, rate) + Duration::from_secs(1),
    );
    let end = first + PERIOD * p.periods() as u32;
    let phases = p.phases();
    let schedules = phases
        .iter()
        .map(|&ph| {
            let spec = Spec::every_from(PERIOD, first + ph)?;
            Schedule::builder(spec).start(first).end(end).build()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let rec = Periods::new(p.schedules, p.periods(), first, PERIOD).with_offsets(&phases);
    let rec = Arc::new(rec);
    let client = ours::builder(&store, "sched").build().map_err(e)?;
    let creating = create(&client, &schedules).map_err(e)?;
    if SystemTime::now() >= first {
        client.shutdown().map_err(e)?;
        return Err(format!(
            "creating took {} ms, past the first slot",
            creating.as_millis()
        ));
    }
    let nodes: Vec<DurableTimers> = (0..p.nodes)
        .map(|_| {
            let rec = rec.clone();
            ours::builder(&store, "sched")
                .handler(move |t: &Fired| {
                    let start = unix_ns(SystemTime::now());
                    if let Some(run) = &t.schedule {
                        rec.record_run(run, start);
                    }
                    Outcome::Done
                })
                .build()
        })
        .collect::<Result<_, _>>()
        .map_err(e)?;
    rec.wait_all(first + p.window + p.grace);
    // Runs of the last period may still be finishing: their chain steps
    // are done (a step goes with the start), so the chains can be read.
    let broken = broken_chains(&client, p.schedules, p.periods() as u64, None);
    ours::shutdown_all(nodes).map_err(e)?;
    client.shutdown().map_err(e)?;
    Ok(EverySecondRun {
        summary: rec.summary(),
        unexpected: rec.unexpected(),
        broken: broken.map_err(e)?,
        creating,
    })
}

/// The in-memory peer: `schedules` repeating timers every second on one
/// `wheel::Scheduler` at its defaults, each started at its phase (a
/// one-shot timer that calls `schedule_repeating`), each run's lateness
/// taken against the instant `schedule_repeating` was called plus whole
/// periods (the scheduler's clock is monotonic, so is this one). Its
/// fixed rate skips a period that a late run covered; the run count then
/// leaves the last period missing.
pub fn run_in_memory(p: &EverySecondParams) -> Result<EverySecondRun, String> {
    let rec = Arc::new(Periods::new(
        p.schedules,
        p.periods(),
        std::time::UNIX_EPOCH,
        PERIOD,
    ));
    let scheduler = Scheduler::new();
    let t = Instant::now();
    for (i, ph) in p.phases().into_iter().enumerate() {
        let (rec, inner) = (rec.clone(), scheduler.clone());
        scheduler
            .schedule(ph, move || {
                // Not cancelled: the runs past the last period are
                // ignored, and the shutdown drops the timers.
                let _ = inner.schedule_repeating(PERIOD, repeating(rec, i));
            })
            .map_err(|e| e.to_string())?;
    }
    let creating = t.elapsed();
    rec.wait_all(SystemTime::now() + PERIOD + p.window + p.grace);
    scheduler.shutdown();
    Ok(EverySecondRun {
        summary: rec.summary(),
        unexpected: rec.unexpected(),
        broken: 0,
        creating,
    })
}

/// The body of schedule `i`'s repeating timer, started now.
fn repeating(rec: Arc<Periods>, i: usize) -> impl FnMut() + Send + 'static {
    let base = Instant::now();
    let mut k = 0usize;
    move || {
        let now = Instant::now();
        let nominal = base + PERIOD * (k as u32 + 1);
        let late = match now.checked_duration_since(nominal) {
            Some(d) => d.as_nanos() as i64,
            None => -(nominal.duration_since(now).as_nanos() as i64),
        };
        rec.record_period(i, k, late, unix_ns(SystemTime::now()));
        k += 1;
    }
}
