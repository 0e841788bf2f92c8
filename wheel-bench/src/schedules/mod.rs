//! The schedules comparison: our durable recurring schedules
//! (`wheel_durable`'s `upsert_schedule`) on Redis with three nodes and on
//! the embedded store, beside the in-memory
//! `wheel::Scheduler::schedule_repeating` for lateness.
//!
//! Every schedule is named `s` + 9 digits (its index) and carries the
//! durable section's 32-byte payload. A run is one *period* of one
//! schedule: schedule `i`'s run `k` is due at the workload's first slot
//! plus `k` periods, and its first start, its run count and its lateness
//! (start minus nominal time, on this machine's clock; the Redis server is
//! local) land in slot `i × periods + k` of a [`Periods`] record. Runs
//! are recorded from `Fired::schedule` (the schedule's id and the run's
//! nominal time, read from the run's key), so a run the chain made for a
//! slot outside the workload is counted as unexpected, never lost.
//!
//! - [`every_second`]: schedules every second on Redis with three nodes,
//!   and the same with the in-memory scheduler;
//! - [`embedded`]: schedules every minute on the embedded store, all due
//!   in one slot: the next-run creation rate with a node running, and a
//!   node started after the slot passed (the restart);
//! - here: the ids, the record, the parallel creation and the check that
//!   every chain is where the workload left it.
//!
//! Invariants: a [`Periods`] record is written only by handlers (any
//! thread, lock-free) while a run lasts, and summed once no handler runs.

pub mod embedded;
pub mod every_second;

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use wheel_durable::schedule::Schedule;
use wheel_durable::{DurableError, DurableTimers, ScheduleRun};

use crate::durable::{Summary, unix_ns};
use crate::rng::Rng;

/// The id of schedule `i`: `s` and 9 digits.
pub fn id(i: usize) -> String {
    format!("s{i:09}")
}

/// The index in an id made by [`id`].
pub fn index_of(id: &str) -> Option<usize> {
    id.strip_prefix('s')?.parse().ok()
}

/// First starts and run counts of every period of `schedules` schedules
/// with `periods` periods each, from the slot at `first` (ns since the
/// epoch) on, one slot every `period`.
pub struct Periods {
    schedules: usize,
    periods: usize,
    first: i64,
    period: i64,
    /// Schedule `i`'s slots are `offsets[i]` ns after the common grid
    /// (empty: none is).
    offsets: Vec<i64>,
    /// Earliest start minus nominal time, ns; `i64::MAX` until the first.
    lateness: Vec<AtomicI64>,
    /// Runs started.
    runs: Vec<AtomicU32>,
    /// Periods with at least one run.
    ran: AtomicUsize,
    /// Runs of a slot outside the workload (before its first slot, not on
    /// its grid, or of an unknown schedule).
    unexpected: AtomicU64,
    /// Earliest and latest start seen, ns since the epoch.
    span: (AtomicI64, AtomicI64),
}

impl Periods {
    /// An empty record.
    pub fn new(schedules: usize, periods: usize, first: SystemTime, period: Duration) -> Periods {
        let slots = schedules * periods;
        Periods {
            schedules,
            periods,
            first: unix_ns(first),
            period: period.as_nanos() as i64,
            offsets: Vec::new(),
            lateness: (0..slots).map(|_| AtomicI64::new(i64::MAX)).collect(),
            runs: (0..slots).map(|_| AtomicU32::new(0)).collect(),
            ran: AtomicUsize::new(0),
            unexpected: AtomicU64::new(0),
            span: (AtomicI64::new(i64::MAX), AtomicI64::new(i64::MIN)),
        }
    }

    /// The same with schedule `i`'s slots `offsets[i]` after the grid.
    pub fn with_offsets(mut self, offsets: &[Duration]) -> Periods {
        self.offsets = offsets.iter().map(|d| d.as_nanos() as i64).collect();
        self
    }

    /// Periods in the workload.
    pub fn len(&self) -> usize {
        self.lateness.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.lateness.is_empty()
    }

    /// Period `k` of schedule `i` started `lateness_ns` after its nominal
    /// time (negative: early), at `start_ns` since the epoch. A period
    /// past the workload's last is ignored: the chain goes on after it.
    pub fn record_period(&self, i: usize, k: usize, lateness_ns: i64, start_ns: i64) {
        if k >= self.periods {
            return;
        }
        if i >= self.schedules {
            self.unexpected.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let slot = i * self.periods + k;
        self.lateness[slot].fetch_min(lateness_ns, Ordering::Relaxed);
        if self.runs[slot].fetch_add(1, Ordering::Relaxed) == 0 {
            self.ran.fetch_add(1, Ordering::Release);
        }
        self.span.0.fetch_min(start_ns, Ordering::Relaxed);
        self.span.1.fetch_max(start_ns, Ordering::Relaxed);
    }

    /// A durable run of `run` started at `start_ns` since the epoch.
    pub fn record_run(&self, run: &ScheduleRun, start_ns: i64) {
        let nominal = unix_ns(run.nominal);
        let slot = index_of(&run.id).and_then(|i| {
            let since = nominal - self.first - self.offsets.get(i).copied().unwrap_or(0);
            (!run.triggered && since >= 0 && since % self.period == 0)
                .then(|| (i, (since / self.period) as usize))
        });
        match slot {
            Some((i, k)) => self.record_period(i, k, start_ns - nominal, start_ns),
            None => drop(self.unexpected.fetch_add(1, Ordering::Relaxed)),
        }
    }

    /// Periods that have run at least once.
    pub fn ran(&self) -> usize {
        self.ran.load(Ordering::Acquire)
    }

    /// Waits until every period has run or `deadline` passes; true if all
    /// ran.
    pub fn wait_all(&self, deadline: SystemTime) -> bool {
        while self.ran() < self.len() {
            if SystemTime::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// Runs of a slot outside the workload.
    pub fn unexpected(&self) -> u64 {
        self.unexpected.load(Ordering::Relaxed)
    }

    /// The earliest and latest start, ns since the epoch, if any ran.
    pub fn span(&self) -> Option<(i64, i64)> {
        let (a, b) = (
            self.span.0.load(Ordering::Relaxed),
            self.span.1.load(Ordering::Relaxed),
        );
        (a <= b).then_some((a, b))
    }

    /// The figures: lateness of every period's first run, early runs,
    /// missing periods (as `lost`), duplicates.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        let mut lateness = Vec::with_capacity(self.len());
        for (l, runs) in self.lateness.iter().zip(&self.runs) {
            let l = l.load(Ordering::Relaxed);
            if l == i64::MAX {
                s.lost += 1;
                continue;
            }
            lateness.push(l);
            if l < 0 {
                s.early += 1;
                s.max_early_ns = s.max_early_ns.max(-l);
            }
            s.duplicates += u64::from(runs.load(Ordering::Relaxed).saturating_sub(1));
        }
        lateness.sort_unstable();
        s.lateness = lateness;
        s
    }
}

/// Upserts schedule `i` with `schedules[i]`, from [`CREATE_THREADS`]
/// threads (each a stripe of the ids); how long it took.
pub fn create(timers: &DurableTimers, schedules: &[Schedule]) -> Result<Duration, DurableError> {
    upsert_each(timers, schedules, id)
}

/// Schedule `i`'s payload: 32 bytes of its own, pseudo-random, so that no
/// two schedules share one and the store's compression gets nothing from
/// them (a user's payloads, such as callback bodies, compress better).
pub fn payload(i: usize) -> [u8; 32] {
    let mut rng = Rng::new(0x5eed_0000 ^ i as u64);
    let mut b = [0; 32];
    for chunk in b.chunks_exact_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    b
}

/// Threads that create schedules: upserts wait on the store, so more
/// threads than cores keep it busy (and the embedded store commits them
/// in groups).
pub const CREATE_THREADS: usize = 16;

/// Upserts per second on `timers` from [`CREATE_THREADS`] threads, over
/// `n` throwaway schedules (ids `p…`), so that a workload can put its
/// first slot after its own creation.
pub fn probe_rate(
    timers: &DurableTimers,
    n: usize,
    schedule: &Schedule,
) -> Result<f64, DurableError> {
    let took = upsert_each(timers, &vec![schedule.clone(); n], |i| format!("p{i:09}"))?;
    Ok(n as f64 / took.as_secs_f64().max(1e-6))
}

fn upsert_each(
    timers: &DurableTimers,
    schedules: &[Schedule],
    name: impl Fn(usize) -> String + Sync,
) -> Result<Duration, DurableError> {
    let t = Instant::now();
    let name = &name;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..CREATE_THREADS)
            .map(|t| {
                s.spawn(move || {
                    let mine = schedules.iter().enumerate().skip(t);
                    mine.step_by(CREATE_THREADS).try_for_each(|(i, def)| {
                        timers.upsert_schedule(&name(i), def, &payload(i)).map(drop)
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("upserting thread"))
    })?;
    Ok(t.elapsed())
}

/// The phase of schedule `i` of `n` spread evenly over `period` (whole
/// milliseconds, so that the stores keep it as is).
pub fn phase(i: usize, n: usize, period: Duration) -> Duration {
    let ms = period.as_millis() as u64;
    Duration::from_millis(i as u64 * ms / n.max(1) as u64)
}

/// How long creating `n` schedules may take at `rate` per second, with a
/// margin for a machine busier than during the probe.
pub fn creation_allowance(n: usize, rate: f64) -> Duration {
    Duration::from_secs_f64(2.0 * n as f64 / rate.max(1.0)) + Duration::from_secs(2)
}

/// The first whole second at or after `t`.
pub fn whole_second(t: SystemTime) -> SystemTime {
    let ns = unix_ns(t).max(0) as u64;
    std::time::UNIX_EPOCH + Duration::from_secs(ns.div_ceil(1_000_000_000))
}

/// Schedules whose chain is not where the workload left it: every
/// schedule `0..n` must exist with exactly `runs` runs created and its
/// pending run at `next` (`None`: the chain has ended); any other
/// schedule is counted too.
pub fn broken_chains(
    timers: &DurableTimers,
    n: usize,
    runs: u64,
    next: Option<SystemTime>,
) -> Result<u64, DurableError> {
    let mut seen = vec![false; n];
    let mut broken = 0u64;
    let mut page = timers.schedules(1_000)?;
    loop {
        for s in &page.schedules {
            match index_of(&s.id).filter(|&i| i < n && !seen[i]) {
                Some(i) => {
                    seen[i] = true;
                    if s.runs_created != runs || s.next_nominal != next {
                        broken += 1;
                    }
                }
                None => broken += 1,
            }
        }
        match page.next {
            Some(after) => page = timers.schedules_after(&after, 1_000)?,
            None => break,
        }
    }
    Ok(broken + seen.iter().filter(|s| !**s).count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn ids_give_back_their_index() {
        assert_eq!(id(42), "s000000042");
        assert_eq!(index_of(&id(42)), Some(42));
        assert_eq!(index_of("p000000001"), None);
        assert_eq!(index_of("s"), None);
    }

    #[test]
    fn periods_count_missing_early_duplicate_and_unexpected_runs() {
        let first = UNIX_EPOCH + Duration::from_secs(100);
        let p = Periods::new(2, 2, first, Duration::from_secs(1));
        let shifted = Periods::new(2, 1, first, Duration::from_secs(1))
            .with_offsets(&[Duration::ZERO, Duration::from_millis(500)]);
        let run = |i: usize, s: u64, ms: u64| ScheduleRun {
            id: id(i),
            nominal: UNIX_EPOCH + Duration::from_secs(s) + Duration::from_millis(ms),
            triggered: false,
        };
        let at = |s: i64, ms: i64| s * 1_000_000_000 + ms * 1_000_000;
        p.record_run(&run(0, 100, 0), at(100, 3)); // 3 ms late
        p.record_run(&run(0, 101, 0), at(100, 999)); // 1 ms early
        p.record_run(&run(0, 101, 0), at(101, 1)); // a second run
        p.record_run(&run(1, 100, 0), at(100, 2));
        p.record_run(&run(1, 102, 0), at(102, 0)); // past the workload: ignored
        p.record_run(&run(1, 100, 500), at(100, 500)); // off the grid
        p.record_run(&run(1, 99, 0), at(99, 0)); // before the first slot
        p.record_run(&run(7, 100, 0), at(100, 0)); // an unknown schedule
        let triggered = ScheduleRun {
            triggered: true,
            ..run(0, 100, 0)
        };
        p.record_run(&triggered, at(100, 0));
        assert_eq!(p.ran(), 3);
        assert_eq!(p.unexpected(), 4);
        assert!(!p.wait_all(SystemTime::now()));
        assert_eq!(p.span(), Some((at(100, 2), at(101, 1))));
        let s = p.summary();
        assert_eq!(s.lateness, vec![-1_000_000, 2_000_000, 3_000_000]);
        assert_eq!((s.early, s.lost, s.duplicates), (1, 1, 1));
        assert_eq!(s.max_early_ns, 1_000_000);
        // With offsets, schedule 1's slots are half a second later.
        shifted.record_run(&run(1, 100, 500), at(100, 501));
        shifted.record_run(&run(1, 100, 0), at(100, 1));
        assert_eq!((shifted.ran(), shifted.unexpected()), (1, 1));
        assert_eq!(shifted.summary().lateness, vec![1_000_000]);
    }

    #[test]
    fn allowances_and_seconds() {
        assert_eq!(creation_allowance(1_000, 1_000.0), Duration::from_secs(4));
        let second = Duration::from_secs(1);
        assert_eq!(phase(0, 3, second), Duration::ZERO);
        assert_eq!(phase(2, 3, second), Duration::from_millis(666));
        assert_eq!(phase(9_999, 10_000, second), Duration::from_millis(999));
        let t = UNIX_EPOCH + Duration::from_millis(1_001);
        assert_eq!(whole_second(t), UNIX_EPOCH + Duration::from_secs(2));
        let t = UNIX_EPOCH + Duration::from_secs(2);
        assert_eq!(whole_second(t), t);
    }
}
