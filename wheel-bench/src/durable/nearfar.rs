//! Adds while nodes fire: the same threads adding single timers to Redis
//! with our nodes running, once with timers due soon (so that the nodes
//! claim and fire them while the adding goes on) and once with timers an
//! hour out (which the nodes never touch). The ratio of the two rates says
//! what firing costs the adding side.
//!
//! The nodes' handler keeps the set of keys it ran: the near-due timers
//! that fire during the measurement are counted (not errors), a key run
//! twice is a duplicate and a run before its due time is early. Nothing
//! waits for the rest: the nodes stop after the adding and the caller
//! empties the server before the next run.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use wheel_durable::{Fired, Outcome};

use super::ours::{self, Store};
use super::throughput::add_rate_due;
use super::whole_ms;
use crate::rng::Rng;
use crate::workloads::Check;

/// One near-versus-far workload.
#[derive(Debug, Clone)]
pub struct NearFarParams {
    /// Threads adding, sharing one handle.
    pub threads: usize,
    /// How long each run adds for.
    pub add_for: Duration,
    /// Near-due timers are due this long after their add at the earliest...
    pub near_from: Duration,
    /// ...and at the latest (uniformly in between, whole milliseconds).
    pub near_to: Duration,
    /// Nodes running meanwhile.
    pub nodes: usize,
}

/// How far out a far-off timer is due.
pub const FAR: Duration = Duration::from_secs(3_600);

/// What one run measured.
#[derive(Debug, Clone)]
pub struct AddsWhileFiring {
    /// Single adds per second over all threads.
    pub per_sec: f64,
    /// Timers the nodes ran before they stopped.
    pub fired: usize,
    /// Of which before their due time.
    pub early: usize,
    /// Runs of a key beyond its first.
    pub duplicates: u64,
}

impl AddsWhileFiring {
    /// Early and duplicate runs are failures.
    pub fn check(&self) -> Check {
        Check::from_errors(&[
            ("fired early", self.early as u64),
            ("duplicates", self.duplicates),
        ])
    }
}

/// The offset of add `i` of thread `t` in `from..to`, whole milliseconds,
/// the same in every run.
pub fn near_offset(from: Duration, to: Duration, t: usize, i: u64) -> Duration {
    let span = to.saturating_sub(from).as_millis() as u64;
    let mut r = Rng::new((t as u64) << 40 ^ i);
    from + Duration::from_millis(r.range_inclusive(0, span))
}

/// What the nodes' handler saw.
#[derive(Default)]
struct Seen {
    keys: Mutex<HashSet<String>>,
    early: AtomicUsize,
    duplicates: AtomicUsize,
}

/// Adds for `p.add_for` from `p.threads` threads with `p.nodes` of ours
/// running on the Redis server at `url`, near-due timers if `near`, else
/// timers an hour out; the nodes stop when the adding ends.
pub fn run(url: &str, p: &NearFarParams, near: bool) -> Result<AddsWhileFiring, String> {
    let store = Store::Redis(url.into());
    let ns = if near { "near" } else { "far" };
    let err = |e: wheel_durable::DurableError| e.to_string();
    let seen = Arc::new(Seen::default());
    let nodes = (0..p.nodes)
        .map(|_| {
            let seen = seen.clone();
            ours::builder(&store, ns)
                .handler(move |t: &Fired| {
                    if SystemTime::now() < t.due {
                        seen.early.fetch_add(1, Ordering::Relaxed);
                    }
                    if !seen.keys.lock().expect("seen").insert(t.key.clone()) {
                        seen.duplicates.fetch_add(1, Ordering::Relaxed);
                    }
                    Outcome::Done
                })
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    let far = whole_ms(SystemTime::now() + FAR);
    let due = |t: usize, i: u64| {
        if near {
            whole_ms(SystemTime::now() + near_offset(p.near_from, p.near_to, t, i))
        } else {
            far
        }
    };
    let per_sec = add_rate_due(&nodes[0], p.threads, p.add_for, 'a', due);
    ours::shutdown_all(nodes).map_err(err)?;
    let fired = seen.keys.lock().expect("seen").len();
    Ok(AddsWhileFiring {
        per_sec: per_sec?,
        fired,
        early: seen.early.load(Ordering::Relaxed),
        duplicates: seen.duplicates.load(Ordering::Relaxed) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_offsets_stay_in_range_and_repeat() {
        let (from, to) = (Duration::from_millis(500), Duration::from_secs(3));
        let offs: Vec<Duration> = (0..1_000).map(|i| near_offset(from, to, 3, i)).collect();
        assert!(offs.iter().all(|d| *d >= from && *d <= to));
        assert!(offs.iter().any(|d| *d < Duration::from_millis(1_000)));
        assert!(offs.iter().any(|d| *d > Duration::from_millis(2_500)));
        assert_eq!(near_offset(from, to, 3, 7), offs[7]);
        let ok = AddsWhileFiring {
            per_sec: 1.0,
            fired: 5,
            early: 0,
            duplicates: 0,
        };
        assert_eq!(ok.check(), Check::Passed);
    }
}
