//! Flow limits on both stores, through the library: a rate (timers due at
//! once start no faster than it, none before its slot), a parallelism (a
//! blocking handler never runs more than it at once), a circuit breaker
//! (failures open it, timers coming due meanwhile are parked without
//! spending an attempt, one probe per cool-down, a success closes it and
//! the rest run once), the default limits for keys without their own, the
//! `flows()` status along the way, and bad limits refused.
//!
//! Periods and cool-downs are tens of milliseconds on the real clock; no
//! test asserts how long anything took, only orders and lower bounds
//! (a slot, a cool-down), which a loaded machine can only make longer.

use crate::durable_common;
use crate::durable_flows::{in_ms, ms, on_both_stores};

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use durable_common::{Recorder, Run, eventually};
use wheel_durable::{
    BreakerState, CircuitBreaker, DurableError, DurableTimers, DurableTimersBuilder, Fired,
    FlowLimits, FlowStatus, Outcome, RetryPolicy, TimerState,
};

/// How many handlers run at once, and the most so far.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
}

impl Gauge {
    /// Counts a run in while `f` runs.
    fn during<T>(&self, f: impl FnOnce() -> T) -> T {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
        let out = f();
        self.now.fetch_sub(1, Ordering::SeqCst);
        out
    }

    fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }
}

/// The flow key of a plain timer `KEY:...`.
fn tenant(key: &str, _payload: &[u8]) -> Option<String> {
    key.split_once(':').map(|(t, _)| t.to_owned())
}

/// A node whose plain timers `tenant:...` have the flow key `tenant`,
/// polling often, with `workers` workers and `handler`.
fn node(
    builder: DurableTimersBuilder,
    workers: usize,
    handler: impl Fn(&Fired) -> Outcome + Send + Sync + 'static,
) -> DurableTimers {
    builder
        .flow_key(tenant)
        .workers(workers)
        .poll(ms(50))
        .handler(handler)
        .build()
        .unwrap()
}

/// `key`'s status in `timers.flows()`, if listed.
fn status(timers: &DurableTimers, key: &str) -> Option<FlowStatus> {
    timers
        .flows()
        .unwrap()
        .keys
        .into_iter()
        .find(|k| k.key == key)
}

/// Waits until every key of `keys` ran, and returns the runs.
fn wait_keys(rec: &Recorder, keys: &[String]) -> Vec<Run> {
    eventually(&format!("{} keys to run", keys.len()), || {
        let by = rec.by_key();
        keys.iter().all(|k| by.contains_key(k))
    });
    rec.runs()
}

fn keys(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i:03}")).collect()
}

#[test]
fn a_rate_starts_timers_due_at_once_no_faster_than_it_and_none_before_its_slot() {
    on_both_stores(|builder| {
        let rec = Recorder::new();
        let timers = node(builder, 4, rec.handler(0, |_| Outcome::Done));
        // 5 per 100 ms: one slot every 20 ms, no burst.
        let limits = FlowLimits::new().rate(5, ms(100));
        timers.set_flow_limits("r", &limits).unwrap();
        let interval = ms(20);
        let due = in_ms(300);
        let all = keys("r", 50);
        for key in &all {
            timers.add_at(key, due, b"").unwrap();
        }
        // Along the way: claims of `r` wait in the node for their slot
        // (50 slots take a second; a start reserves 250 ms of them).
        let mut saw_waiting = false;
        while rec.runs().len() < all.len() / 2 {
            let s = status(&timers, "r").expect("a key with its own limits is listed");
            assert_eq!(s.limits, Some(limits));
            saw_waiting |= s.waiting > 0;
            std::thread::sleep(ms(5));
        }
        assert!(saw_waiting, "the node held claims back for the rate");
        let runs = wait_keys(&rec, &all);
        assert_eq!(runs.len(), all.len(), "each once");
        let mut starts: Vec<SystemTime> = runs.iter().map(|r| r.at).collect();
        starts.sort();
        // The store gives the k-th start the slot `first + k * interval`
        // at the earliest, and the first is due: a start never comes
        // before its slot, so none is early, and over any stretch from
        // the due time no more start than the rate allows.
        for (k, at) in starts.iter().enumerate() {
            let slot = due + interval * u32::try_from(k).unwrap();
            assert!(
                *at >= slot,
                "start {k} came {:?} before its slot",
                slot.duration_since(*at).unwrap()
            );
        }
        for r in &runs {
            assert_eq!(
                r.attempt, 1,
                "{}: waiting for a slot spends no attempt",
                r.key
            );
        }
        let s = status(&timers, "r").unwrap();
        assert!(
            s.lateness_p99.is_some(),
            "the lateness the rate cost: {s:?}"
        );
        assert!(s.lateness_p99 >= s.lateness_p50);
        eventually("the node to hold nothing back", || {
            status(&timers, "r").unwrap().waiting == 0
        });
        timers.shutdown().unwrap();
    });
}

#[test]
fn a_parallelism_never_runs_more_of_a_key_at_once() {
    on_both_stores(|builder| {
        let rec = Recorder::new();
        let gauge = Arc::new(Gauge::default());
        let g = gauge.clone();
        let record = rec.handler(0, |_| Outcome::Done);
        let timers = node(builder, 8, move |f| {
            g.during(|| {
                std::thread::sleep(ms(50));
                record(f)
            })
        });
        timers
            .set_flow_limits("p", &FlowLimits::new().parallelism(3))
            .unwrap();
        let all = keys("p", 20);
        let due = in_ms(300);
        for key in &all {
            timers.add_at(key, due, b"").unwrap();
        }
        let mut most_in_flight = 0;
        while rec.runs().len() < all.len() {
            let s = status(&timers, "p").unwrap();
            assert!(s.in_flight <= 3, "{s:?}");
            most_in_flight = most_in_flight.max(s.in_flight);
            std::thread::sleep(ms(5));
        }
        let runs = wait_keys(&rec, &all);
        assert_eq!(runs.len(), all.len(), "each once");
        assert_eq!(gauge.max(), 3, "at most 3 at once, and 3 were let through");
        assert!(most_in_flight >= 1, "flows() counted the permits held");
        durable_common::assert_none_early(&runs);
        eventually("the permits to come back", || {
            status(&timers, "p").unwrap().in_flight == 0
        });
        timers.shutdown().unwrap();
    });
}

/// Every key's runs carry the attempts 1, 2, ... in order: no attempt was
/// counted without a run.
fn assert_attempts_are_runs(runs: &[Run]) {
    let mut by: HashMap<&str, Vec<u32>> = HashMap::new();
    for r in runs {
        by.entry(&r.key).or_default().push(r.attempt);
    }
    for (key, mut attempts) in by {
        attempts.sort_unstable();
        let expected: Vec<u32> = (1..=u32::try_from(attempts.len()).unwrap()).collect();
        assert_eq!(attempts, expected, "{key}: an attempt without a run");
    }
}

#[test]
fn a_breaker_opens_parks_without_spending_attempts_probes_once_per_cooldown_and_closes() {
    on_both_stores(|builder| {
        let rec = Recorder::new();
        let down = Arc::new(AtomicBool::new(true));
        let d = down.clone();
        // Each key's successful runs, counted by the handler's own answer.
        let done: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let done_in = done.clone();
        // Retries come back while the breaker is open, so they are parked
        // too; not sooner, so that the three first failures are recorded
        // (and the breaker opened) before any of them is retried.
        let retry = RetryPolicy::new()
            .initial(ms(150))
            .max_delay(ms(150))
            .jitter(0.0)
            .max_attempts(50);
        let timers = node(
            builder.retry(retry),
            4,
            rec.handler(0, move |f| {
                if d.load(Ordering::SeqCst) {
                    Outcome::Retry
                } else {
                    *done_in.lock().unwrap().entry(f.key.clone()).or_default() += 1;
                    Outcome::Done
                }
            }),
        );
        let breaker = CircuitBreaker::new()
            .failures(3)
            .cooldown(ms(100))
            .max_cooldown(ms(400));
        timers
            .set_flow_limits("b", &FlowLimits::new().breaker(breaker))
            .unwrap();
        let first = keys("b:f", 3);
        for key in &first {
            timers.add_at(key, in_ms(200), b"").unwrap();
        }
        rec.wait_for(3);
        eventually("the breaker to open", || {
            status(&timers, "b").unwrap().breaker.state != BreakerState::Closed
        });
        let s = status(&timers, "b").unwrap();
        assert!(s.breaker.next_probe.is_some(), "{s:?}");

        // Timers coming due while it is open are parked, with no attempt.
        let later = keys("b:w", 10);
        for key in &later {
            timers.add_at(key, in_ms(50), b"").unwrap();
        }
        eventually("the later timers to be parked or probed", || {
            let by = rec.by_key();
            later.iter().all(|k| {
                by.contains_key(k)
                    || timers
                        .get(k)
                        .unwrap()
                        .is_some_and(|t| t.state == TimerState::Parked)
            })
        });
        let runs_then = rec.by_key();
        for key in &later {
            let info = timers.get(key).unwrap().unwrap();
            let ran = runs_then.get(key).map_or(0, Vec::len);
            if info.state == TimerState::Parked {
                assert_eq!(info.attempts as usize, ran, "{key}: attempts are its runs");
            }
        }
        assert!(status(&timers, "b").unwrap().parked > 0);
        // Let it probe for a while: cool-downs 100, 200, 400, 400 ms...
        std::thread::sleep(ms(1_200));
        down.store(false, Ordering::SeqCst);
        let up = SystemTime::now();
        let all: Vec<String> = first.iter().chain(&later).cloned().collect();
        eventually("every timer to succeed", || {
            let done = done.lock().unwrap();
            all.iter().all(|k| done.contains_key(k))
        });
        eventually("the store to be empty", || {
            let s = timers.stats();
            (s.pending, s.claimed, s.parked) == (Some(0), Some(0), Some(0))
        });
        let runs = rec.runs();
        assert_attempts_are_runs(&runs);
        check_probes(&runs, up);
        // Each succeeded once: a run after its success would be another.
        let done = done.lock().unwrap().clone();
        assert_eq!(done.len(), all.len());
        assert!(done.values().all(|&n| n == 1), "{done:?}");
        let s = status(&timers, "b").unwrap();
        assert_eq!(
            (s.breaker.state, s.breaker.failures, s.parked),
            (BreakerState::Closed, 0, 0)
        );
        timers.shutdown().unwrap();
    });
}

/// While the target was down (runs before `up`): the three failures that
/// opened the breaker, then single probes, each at least its cool-down
/// after the one before (100, 200, then 400 ms).
fn check_probes(runs: &[Run], up: SystemTime) {
    let mut down: Vec<SystemTime> = runs.iter().filter(|r| r.at < up).map(|r| r.at).collect();
    down.sort();
    assert!(down.len() >= 3, "the three failures: {down:?}");
    let cooldowns = [100, 200, 400];
    for (i, pair) in down[2..].windows(2).enumerate() {
        let gap = pair[1].duration_since(pair[0]).unwrap();
        let least = ms(cooldowns[i.min(2)]);
        assert!(
            gap >= least,
            "probe {i} came {gap:?} after the run before it"
        );
    }
    // The gaps bound the count: n probes need 100 + 200 + 400 (n - 2) ms.
    eprintln!("breaker: {} runs while down", down.len());
}

#[test]
fn default_limits_apply_to_each_key_without_its_own() {
    on_both_stores(|builder| {
        let gauges: Arc<HashMap<&'static str, Gauge>> = Arc::new(
            ["a", "b", "c", "ab"]
                .into_iter()
                .map(|k| (k, Gauge::default()))
                .collect(),
        );
        let rec = Recorder::new();
        let record = rec.handler(0, |_| Outcome::Done);
        let g = gauges.clone();
        let timers = node(builder, 8, move |f| {
            let key = tenant(&f.key, &[]).unwrap();
            let both = &g["ab"];
            let run = || {
                g[key.as_str()].during(|| {
                    std::thread::sleep(ms(40));
                    record(f)
                })
            };
            if key == "c" { run() } else { both.during(run) }
        });
        let defaults = FlowLimits::new().parallelism(1);
        timers.set_default_flow_limits(&defaults).unwrap();
        let own = FlowLimits::new().parallelism(3);
        timers.set_flow_limits("c", &own).unwrap();
        let flows = timers.flows().unwrap();
        assert_eq!(flows.defaults, Some(defaults));
        assert_eq!(
            flows.keys.len(),
            1,
            "only c has limits of its own: {flows:?}"
        );
        assert_eq!(flows.keys[0].limits, Some(own));

        let all: Vec<String> = ["a", "b", "c"].iter().flat_map(|k| keys(k, 6)).collect();
        let due = in_ms(300);
        for key in &all {
            timers.add_at(key, due, b"").unwrap();
        }
        let runs = wait_keys(&rec, &all);
        assert_eq!(runs.len(), all.len());
        assert_eq!(gauges["a"].max(), 1, "the default parallelism");
        assert_eq!(gauges["b"].max(), 1, "the default parallelism");
        assert_eq!(gauges["ab"].max(), 2, "each key counts on its own");
        let c = gauges["c"].max();
        assert!(
            (2..=3).contains(&c),
            "c's own limits, not the defaults: {c}"
        );

        // Without its own limits, c falls back to the defaults.
        timers.remove_flow_limits("c").unwrap();
        assert_eq!(status(&timers, "c").and_then(|s| s.limits), None);
        let more = keys("c:again", 4);
        let before = gauges["c"].max.swap(0, Ordering::SeqCst);
        assert!(before >= 2);
        for key in &more {
            timers.add_at(key, in_ms(100), b"").unwrap();
        }
        wait_keys(&rec, &more);
        assert_eq!(gauges["c"].max(), 1, "the defaults apply to c again");
        timers.set_default_flow_limits(&FlowLimits::new()).unwrap();
        assert_eq!(timers.flows().unwrap().defaults, None);
        timers.shutdown().unwrap();
    });
}

#[test]
fn bad_limits_are_refused_and_change_nothing() {
    on_both_stores(|builder| {
        let timers = builder.build().unwrap();
        let s = Duration::from_secs(1);
        let week = Duration::from_secs(7 * 24 * 3600);
        let bad = [
            FlowLimits::new().rate(0, s),
            FlowLimits::new().rate(1_000_001, s),
            FlowLimits::new().rate(1, Duration::ZERO),
            FlowLimits::new().rate(1, week + s),
            FlowLimits::new().rate(5, s).burst(6),
            FlowLimits::new().rate(5, s).burst(0),
            FlowLimits::new().burst(2),
            FlowLimits::new().parallelism(0),
            FlowLimits::new().parallelism(1_000_001),
            FlowLimits::new().breaker(CircuitBreaker::new().failures(0)),
            FlowLimits::new().breaker(CircuitBreaker::new().failures(1001)),
            FlowLimits::new().breaker(CircuitBreaker::new().cooldown(Duration::ZERO)),
            FlowLimits::new().breaker(CircuitBreaker::new().max_cooldown(s)),
            FlowLimits::new().breaker(CircuitBreaker::new().pause_after(Duration::ZERO)),
            FlowLimits::new().breaker(CircuitBreaker::new().max_cooldown(week + s)),
        ];
        for l in &bad {
            let e = timers.set_flow_limits("k", l).unwrap_err();
            assert!(matches!(e, DurableError::InvalidFlow(_)), "{l:?}: {e}");
            assert!(e.is_input(), "{e}");
            let e = timers.set_default_flow_limits(l).unwrap_err();
            assert!(matches!(e, DurableError::InvalidFlow(_)), "{l:?}: {e}");
        }
        let good = FlowLimits::new().parallelism(2);
        for key in ["", "a\nb", &"x".repeat(513)] {
            let e = timers.set_flow_limits(key, &good).unwrap_err();
            assert!(matches!(e, DurableError::InvalidFlow(_)), "{key:?}: {e}");
            let e = timers.remove_flow_limits(key).unwrap_err();
            assert!(matches!(e, DurableError::InvalidFlow(_)), "{key:?}: {e}");
        }
        let flows = timers.flows().unwrap();
        assert_eq!((flows.defaults, flows.keys.len()), (None, 0), "{flows:?}");
        // The limits at the edges of their ranges are taken.
        let edge = FlowLimits::new()
            .rate(1_000_000, Duration::from_millis(1))
            .burst(1_000_000)
            .parallelism(1_000_000)
            .breaker(
                CircuitBreaker::new()
                    .failures(1000)
                    .cooldown(Duration::from_millis(1))
                    .max_cooldown(week)
                    .pause_after(week),
            );
        timers.set_flow_limits(&"x".repeat(512), &edge).unwrap();
        assert_eq!(timers.flows().unwrap().keys[0].limits, Some(edge));
        timers.shutdown().unwrap();
    });
}

#[test]
fn a_backlog_past_what_a_node_holds_is_deferred_to_the_store_and_still_keeps_the_rate() {
    on_both_stores(|builder| {
        let rec = Recorder::new();
        let timers = node(builder, 4, rec.handler(0, |_| Outcome::Done));
        // One slot a millisecond: 1 500 timers due at once take 1.5 s, and
        // the node holds at most 512 of them back; the rest it defers.
        timers
            .set_flow_limits("d", &FlowLimits::new().rate(1000, ms(1_000)))
            .unwrap();
        let all = keys("d", 1_500);
        let due = in_ms(300);
        let batch: Vec<(&str, SystemTime, &[u8])> =
            all.iter().map(|k| (k.as_str(), due, &b""[..])).collect();
        timers.add_many(&batch).unwrap();
        let mut most_waiting = 0;
        let mut most_parked = 0;
        while rec.runs().len() < all.len() / 2 {
            let s = status(&timers, "d").unwrap();
            most_waiting = most_waiting.max(s.waiting);
            most_parked = most_parked.max(s.parked);
            std::thread::sleep(ms(5));
        }
        let runs = wait_keys(&rec, &all);
        assert_eq!(runs.len(), all.len(), "each once");
        assert!(most_waiting <= 512, "the node held {most_waiting} back");
        assert!(most_parked > 0, "nothing was deferred to the store");
        assert!(timers.stats().deferred > 0);
        let mut starts: Vec<SystemTime> = runs.iter().map(|r| r.at).collect();
        starts.sort();
        for (k, at) in starts.iter().enumerate() {
            let slot = due + ms(u64::try_from(k).unwrap());
            assert!(*at >= slot, "start {k} came before its slot");
        }
        for r in &runs {
            assert_eq!(r.attempt, 1, "{}: deferring spends no attempt", r.key);
        }
        eventually("the store to be empty", || {
            let s = timers.stats();
            (s.pending, s.claimed, s.parked) == (Some(0), Some(0), Some(0))
        });
        timers.shutdown().unwrap();
    });
}
