//! Soak: `WHEEL_SOAK_TIMERS` one-shot timers (default 100 000 so that a
//! debug `cargo test --workspace` stays quick; `.ci/run` runs 2 000 000 in
//! release) through one `Scheduler` on the system clock, from 4 producer
//! threads that also cancel random recent timers of theirs (some pending,
//! some already fired or firing, some cancelled twice).
//!
//! Every timer is accounted for:
//! - a timer whose `cancel` returned true never runs, and at most one
//!   `cancel` per timer returns true;
//! - every other timer runs exactly once;
//! - no callback starts before the instant that was asked for (checked with
//!   `Instant` inside the callback);
//! - far-future timers still pending at the end are dropped by `shutdown`,
//!   which returns exactly their number, and never run;
//! - `Stats` agree with the counts kept here.
//!
//! Liveness has a generous bound (`LIVENESS`): the test fails if a timer
//! that should fire has not fired that long after the last deadline.
#![cfg(not(loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use wheel::{Scheduler, TimerHandle};

const PRODUCERS: usize = 4;
/// Timers when `WHEEL_SOAK_TIMERS` is not set.
const DEFAULT_TIMERS: usize = 100_000;
/// Near timers are due within this many microseconds of being scheduled.
const NEAR_SPREAD_US: u64 = 50_000;
/// Later timers are due within this many microseconds.
const LATER_SPREAD_US: u64 = 300_000;
/// Far timers (one per `FAR_EVERY` near ones) are due this far out and are
/// still pending at shutdown unless cancelled.
const FAR_DELAY: Duration = Duration::from_secs(3600);
const FAR_EVERY: usize = 97;
/// Each producer cancels among its last `WINDOW` timers.
const WINDOW: usize = 4096;
/// How long after the last deadline every due timer must have run.
const LIVENESS: Duration = Duration::from_secs(120);

fn timers() -> usize {
    match std::env::var("WHEEL_SOAK_TIMERS") {
        Ok(v) => v
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|e| panic!("WHEEL_SOAK_TIMERS={v:?}: {e}")),
        Err(_) => DEFAULT_TIMERS,
    }
}

fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// What the callbacks and producers record, per timer id.
struct Ledger {
    /// Runs of each timer.
    runs: Vec<AtomicU8>,
    /// `cancel` calls that returned true, per timer.
    cancels: Vec<AtomicU8>,
    /// Whether the timer is a far one.
    far: Vec<AtomicU8>,
    /// Total runs (to wait for).
    total_runs: AtomicUsize,
    /// Callbacks that started before their instant.
    early: AtomicU64,
    /// The worst earliness seen, in nanoseconds.
    worst_early_ns: AtomicU64,
    /// The latest requested instant of a timer that should run, as
    /// nanoseconds after `start`.
    last_due_ns: AtomicU64,
}

struct ProducerReport {
    scheduled: usize,
    far: usize,
}

#[test]
fn soak_every_timer_accounted_for() {
    let total = timers();
    let per_producer = total.div_ceil(PRODUCERS);
    let slots = per_producer * PRODUCERS;
    let ledger = Arc::new(Ledger {
        runs: (0..slots).map(|_| AtomicU8::new(0)).collect(),
        cancels: (0..slots).map(|_| AtomicU8::new(0)).collect(),
        far: (0..slots).map(|_| AtomicU8::new(0)).collect(),
        total_runs: AtomicUsize::new(0),
        early: AtomicU64::new(0),
        worst_early_ns: AtomicU64::new(0),
        last_due_ns: AtomicU64::new(0),
    });
    let scheduler = Scheduler::new();
    let start = Instant::now();

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (s, ledger) = (scheduler.clone(), Arc::clone(&ledger));
            let first = p * per_producer;
            let last = ((p + 1) * per_producer).min(total);
            thread::spawn(move || produce(&s, &ledger, start, p as u64, first..last))
        })
        .collect();
    let reports: Vec<ProducerReport> = producers
        .into_iter()
        .map(|t| t.join().expect("producer panicked"))
        .collect();
    let scheduled: usize = reports.iter().map(|r| r.scheduled).sum();
    let far: usize = reports.iter().map(|r| r.far).sum();
    assert_eq!(scheduled, total);

    // Who must run: every near timer no cancel stopped.
    let mut cancelled = 0usize;
    let mut far_pending = 0usize;
    for id in 0..total {
        let c = ledger.cancels[id].load(Ordering::SeqCst);
        assert!(c <= 1, "timer {id}: {c} cancels returned true");
        cancelled += usize::from(c);
        if ledger.far[id].load(Ordering::SeqCst) == 1 && c == 0 {
            far_pending += 1;
        }
    }
    let must_run = total - cancelled - far_pending;

    // Wait (bounded) until all of them ran.
    let last_due = start + Duration::from_nanos(ledger.last_due_ns.load(Ordering::SeqCst));
    let give_up = last_due.max(Instant::now()) + LIVENESS;
    while ledger.total_runs.load(Ordering::SeqCst) < must_run {
        assert!(
            Instant::now() < give_up,
            "only {} of {must_run} due timers ran {LIVENESS:?} after the last deadline; stats {:?}",
            ledger.total_runs.load(Ordering::SeqCst),
            scheduler.stats()
        );
        thread::sleep(Duration::from_millis(5));
    }
    let before = scheduler.stats();
    assert_eq!(
        before.pending, far_pending,
        "pending before shutdown should be the far timers not cancelled: {before:?}"
    );

    // Shutdown drops exactly the far timers still pending; it joins the
    // workers, so every callback that will ever run has run afterwards.
    let dropped = scheduler.shutdown();
    assert_eq!(dropped, far_pending, "shutdown's count of dropped timers");
    let after = scheduler.stats();

    let mut problems = Vec::new();
    for id in 0..total {
        let runs = ledger.runs[id].load(Ordering::SeqCst);
        let cancelled = ledger.cancels[id].load(Ordering::SeqCst) == 1;
        let is_far = ledger.far[id].load(Ordering::SeqCst) == 1;
        let expected = u8::from(!cancelled && !is_far);
        if runs != expected && problems.len() < 20 {
            problems.push(format!(
                "timer {id} (far {is_far}, cancelled {cancelled}) ran {runs} times, expected {expected}"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "timers not accounted for:\n{}",
        problems.join("\n")
    );
    assert_eq!(
        ledger.early.load(Ordering::SeqCst),
        0,
        "callbacks started early (worst by {} ns)",
        ledger.worst_early_ns.load(Ordering::SeqCst)
    );
    assert_eq!(ledger.total_runs.load(Ordering::SeqCst), must_run);
    assert_eq!(after.scheduled, total as u64, "{after:?}");
    assert_eq!(after.fired, must_run as u64, "{after:?}");
    assert_eq!(after.cancelled, cancelled as u64, "{after:?}");
    assert_eq!(after.pending, 0, "{after:?}");
    assert_eq!(after.panicked, 0, "{after:?}");
    eprintln!(
        "soak: {total} timers ({far} far), {cancelled} cancelled, {must_run} ran, \
         {dropped} dropped at shutdown, 0 early, max lateness {:?}, {:?} in all",
        after.max_lateness,
        start.elapsed()
    );
}

/// One producer: schedules timers `ids`, cancelling random recent ones.
fn produce(
    s: &Scheduler,
    ledger: &Arc<Ledger>,
    start: Instant,
    p: u64,
    ids: std::ops::Range<usize>,
) -> ProducerReport {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (p + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
    let mut recent: Vec<Option<(usize, TimerHandle)>> = vec![None; WINDOW];
    let mut report = ProducerReport {
        scheduled: 0,
        far: 0,
    };
    for id in ids {
        let r = xorshift(&mut seed);
        let now = Instant::now();
        // The instant asked for; `schedule(delay)` reads the clock after
        // `now`, so its deadline is at or after `at` as well.
        let (at, by_delay, is_far) = match r % 16 {
            0 => (now, true, false), // zero delay
            1 => (
                now.checked_sub(Duration::from_millis(r >> 40 & 1023))
                    .unwrap_or(now),
                false,
                false,
            ), // past
            2..=9 => (
                now + Duration::from_micros((r >> 8) % NEAR_SPREAD_US),
                r & 1 << 20 == 0,
                false,
            ),
            _ if id % FAR_EVERY == 0 => (now + FAR_DELAY, true, true),
            _ => (
                now + Duration::from_micros((r >> 8) % LATER_SPREAD_US),
                r & 1 << 20 == 0,
                false,
            ),
        };
        if is_far {
            ledger.far[id].store(1, Ordering::SeqCst);
            report.far += 1;
        } else {
            let due =
                u64::try_from(at.saturating_duration_since(start).as_nanos()).unwrap_or(u64::MAX);
            ledger.last_due_ns.fetch_max(due, Ordering::SeqCst);
        }
        let l = Arc::clone(ledger);
        let callback = move || {
            let fired_at = Instant::now();
            if fired_at < at {
                l.early.fetch_add(1, Ordering::SeqCst);
                let by = u64::try_from((at - fired_at).as_nanos()).unwrap_or(u64::MAX);
                l.worst_early_ns.fetch_max(by, Ordering::SeqCst);
            }
            l.runs[id].fetch_add(1, Ordering::SeqCst);
            l.total_runs.fetch_add(1, Ordering::SeqCst);
        };
        let handle = if by_delay {
            s.schedule(at.saturating_duration_since(now), callback)
        } else {
            s.schedule_at(at, callback)
        }
        .expect("schedule on a running scheduler");
        report.scheduled += 1;
        recent[id % WINDOW] = Some((id, handle));

        // A third of the time, cancel a random recent timer (it may be
        // pending, running, done, or cancelled already).
        if r >> 60 < 5 {
            let pick = (xorshift(&mut seed) as usize) % WINDOW;
            if let Some((victim, h)) = &recent[pick] {
                if h.cancel() {
                    ledger.cancels[*victim].fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }
    report
}
