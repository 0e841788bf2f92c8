//! Runs: the timers this node has started and whose outcome the store does
//! not have yet.
//!
//! Owns `waiting` (started runs waiting for a handler, at most
//! [`RUN_AHEAD`] deep), `running` (each started key's fence and last lease
//! renewal) and `lateness` (how late each run started).
//!
//! Who touches what: the starter enters started runs ([`Runs::enter`]:
//! lateness, renewal entry, then the queue); the handler workers or the
//! async dispatcher take them ([`Runs::take`]); the claimer renews
//! ([`Runs::to_renew`], [`Runs::renewed`], [`Runs::next_renewal`]); the
//! finisher forgets a run once the store has its outcome or its lease is
//! over ([`Runs::forget`]), and so does a [`RunGuard`] dropped while a run
//! unwinds before its outcome is handed over, so that no run is renewed
//! forever; shutdown closes the queue. The stats read the lateness.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::queue::Queue;
use crate::LatenessBuckets;
use crate::lateness::Histogram;
use crate::store::{Claimed, Millis};
use crate::sync::{Mutex, lock};

type Map<V> = HashMap<String, V, ahash::RandomState>;

/// Started runs that wait for a handler at most (see `starts.rs`): enough
/// for the next few store calls' worth while the handlers are busy, few
/// enough that their lease renewals stay a few calls. A queue depth, not
/// a call size: it stays this large when a store's start batches are
/// smaller (several starts then fill it), so that the handlers do not
/// run dry between them.
pub(super) const RUN_AHEAD: usize = 256;

/// A started timer on its way to a handler.
pub(super) struct Started {
    pub(super) claim: Claimed,
    pub(super) attempt: u32,
    /// Its flow key, if it has one: its outcome is reported with it.
    pub(super) flow: Option<String>,
}

/// A run the store started, as the starter enters it.
pub(super) struct Begun {
    pub(super) claim: Claimed,
    /// The store's clock at the start.
    pub(super) now: Millis,
    pub(super) attempt: u32,
    pub(super) flow: Option<String>,
}

/// A started timer whose lease the claimer renews.
struct Running {
    fence: u64,
    renewed: Instant,
}

/// Flow keys whose lateness a node keeps apart at most; the runs of
/// further keys count in the node's lateness only.
pub(crate) const FLOW_LATENESS_KEYS: usize = 64;

/// The runs this node has started and not finished.
pub(super) struct Runs {
    waiting: Queue<Started>,
    running: Mutex<Map<Running>>,
    lateness: Mutex<Histogram>,
    /// Lateness by flow key, for the first [`FLOW_LATENESS_KEYS`] keys
    /// seen: what each key's limits cost its runs.
    flow_lateness: Mutex<Map<Histogram>>,
}

impl Runs {
    pub(super) fn new() -> Runs {
        Runs {
            waiting: Queue::new(),
            running: Mutex::new(Map::default()),
            lateness: Mutex::new(Histogram::new()),
            flow_lateness: Mutex::new(Map::default()),
        }
    }

    /// Enters runs the store started at store time `now` (each with its
    /// attempt), answered at `received`: counts their lateness, renews
    /// them from `received` on, and queues them for the handlers, earliest
    /// first as given.
    pub(super) fn enter(&self, started: Vec<Begun>, received: Instant) {
        let mut lateness = lock(&self.lateness);
        for b in &started {
            lateness.record(Duration::from_millis(b.now.saturating_sub(b.claim.due)));
        }
        drop(lateness);
        if started.iter().any(|b| b.flow.is_some()) {
            let mut by_flow = lock(&self.flow_lateness);
            for b in &started {
                let Some(flow) = &b.flow else { continue };
                let late = Duration::from_millis(b.now.saturating_sub(b.claim.due));
                if let Some(h) = by_flow.get_mut(flow) {
                    h.record(late);
                } else if by_flow.len() < FLOW_LATENESS_KEYS {
                    let mut h = Histogram::new();
                    h.record(late);
                    by_flow.insert(flow.clone(), h);
                }
            }
        }
        let mut running = lock(&self.running);
        for b in &started {
            let r = Running {
                fence: b.claim.fence,
                renewed: received,
            };
            running.insert(b.claim.key.clone(), r);
        }
        drop(running);
        for b in started {
            let s = Started {
                claim: b.claim,
                attempt: b.attempt,
                flow: b.flow,
            };
            if let Err(s) = self.waiting.push(s) {
                // Only while stopping, after the workers are gone: the
                // lease ends the run, and another node runs the timer again.
                self.forget(&s.claim.key, s.claim.fence);
            }
        }
    }

    /// Waits for a started run; `None` once shutdown closed the queue and
    /// it is empty.
    pub(super) fn take(&self) -> Option<Started> {
        self.waiting.take_one()
    }

    /// How many more runs may be started now. Past [`RUN_AHEAD`] waiting
    /// the node is behind; starting more would only pile up runs whose
    /// leases must be renewed while they wait (and, when the renewals fall
    /// behind, runs the store gives to another run while this one still
    /// holds them).
    pub(super) fn room(&self) -> usize {
        RUN_AHEAD.saturating_sub(self.waiting.len())
    }

    /// Refuses further runs (at shutdown, once nothing starts any more).
    pub(super) fn close(&self) {
        self.waiting.close();
    }

    /// Forgets the renewal of the run with `fence` (a newer run of the same
    /// key keeps its own).
    pub(super) fn forget(&self, key: &str, fence: u64) {
        let mut running = lock(&self.running);
        if running.get(key).is_some_and(|r| r.fence == fence) {
            running.remove(key);
        }
    }

    /// The runs last renewed at least `every` before `now`.
    pub(super) fn to_renew(&self, every: Duration, now: Instant) -> Vec<(String, u64)> {
        lock(&self.running)
            .iter()
            .filter(|(_, r)| now.duration_since(r.renewed) >= every)
            .map(|(k, r)| (k.clone(), r.fence))
            .collect()
    }

    /// Records that the store renewed these runs at `at` (those still
    /// running with the same fence).
    pub(super) fn renewed(&self, runs: &[(String, u64)], at: Instant) {
        let mut running = lock(&self.running);
        for (key, fence) in runs {
            if let Some(r) = running.get_mut(key).filter(|r| r.fence == *fence) {
                r.renewed = at;
            }
        }
    }

    /// When the first run wants renewing, if any runs.
    pub(super) fn next_renewal(&self, every: Duration) -> Option<Instant> {
        lock(&self.running)
            .values()
            .map(|r| r.renewed + every)
            .min()
    }

    /// Lateness percentiles and the largest, for stats.
    pub(super) fn lateness(&self) -> (Duration, Duration, Duration) {
        let h = lock(&self.lateness);
        (h.quantile(0.5), h.quantile(0.99), h.max())
    }

    /// The median and 99th percentile lateness of each flow key's runs
    /// (of the keys kept apart).
    pub(super) fn flow_lateness(&self) -> Vec<(String, Duration, Duration)> {
        let by_flow = lock(&self.flow_lateness);
        let each = by_flow.iter();
        each.map(|(k, h)| (k.clone(), h.quantile(0.5), h.quantile(0.99)))
            .collect()
    }

    /// Lateness as cumulative counts, for stats.
    pub(super) fn lateness_buckets(&self) -> LatenessBuckets {
        let h = lock(&self.lateness);
        let (count, sum) = h.count_and_sum();
        LatenessBuckets::new(h.cumulative(LatenessBuckets::BOUNDS), count, sum)
    }

    /// A guard that forgets the run unless disarmed.
    pub(super) fn guard(&self, key: &str, fence: u64) -> RunGuard<'_> {
        RunGuard {
            runs: self,
            key: key.to_owned(),
            fence,
            armed: true,
        }
    }
}

/// Stops the renewals of a run unless disarmed: dropped while unwinding,
/// it lets the run's lease end.
pub(super) struct RunGuard<'a> {
    runs: &'a Runs,
    key: String,
    fence: u64,
    armed: bool,
}

impl RunGuard<'_> {
    /// The outcome is handed over: the finisher forgets the run.
    pub(super) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.runs.forget(&self.key, self.fence);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::time::{Duration, Instant};

    use super::{Begun, Runs};
    use crate::store::{Claimed, Millis};

    fn claim(key: &str, fence: u64, due: u64) -> Claimed {
        Claimed::fresh(key, due, fence)
    }

    fn begun(claim: Claimed, now: Millis, attempt: u32) -> Begun {
        Begun {
            claim,
            now,
            attempt,
            flow: None,
        }
    }

    fn fences(runs: &Runs, key: &str) -> Vec<u64> {
        let long_ago = Duration::ZERO;
        let now = Instant::now();
        runs.to_renew(long_ago, now)
            .into_iter()
            .filter(|(k, _)| k == key)
            .map(|(_, f)| f)
            .collect()
    }

    #[test]
    fn a_panic_between_start_and_hand_over_stops_the_renewals() {
        let runs = Runs::new();
        let at = Instant::now();
        runs.enter(
            vec![begun(claim("a", 7, 0), 0, 1), begun(claim("b", 9, 0), 0, 1)],
            at,
        );
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            let _guard = runs.guard("a", 7);
            panic!("our own code failed mid run");
        }));
        assert!(unwound.is_err());
        // A guard of an older fence leaves the newer run alone.
        drop(runs.guard("b", 8));
        // A disarmed guard (the outcome was handed over) leaves it too.
        runs.guard("b", 9).disarm();
        assert!(
            fences(&runs, "a").is_empty(),
            "no renewal for the run that unwound"
        );
        assert_eq!(fences(&runs, "b"), [9]);
    }

    #[test]
    fn entered_runs_queue_in_order_count_lateness_and_renew() {
        let runs = Runs::new();
        let at = Instant::now();
        runs.enter(
            vec![
                begun(claim("a", 1, 100), 130, 1),
                begun(claim("b", 2, 100), 100, 2),
            ],
            at,
        );
        assert_eq!(runs.room(), super::RUN_AHEAD - 2);
        assert_eq!(runs.take().map(|s| s.claim.key), Some("a".into()));
        assert_eq!(runs.lateness().2, Duration::from_millis(30));
        let every = Duration::from_secs(1);
        assert_eq!(runs.next_renewal(every), Some(at + every));
        assert!(runs.to_renew(every, at).is_empty());
        runs.renewed(&[("b".into(), 2)], at + every);
        assert_eq!(runs.to_renew(every, at + every), [("a".to_string(), 1)]);
        runs.close();
        assert_eq!(runs.take().map(|s| s.attempt), Some(2));
        assert!(runs.take().is_none());
    }
}
