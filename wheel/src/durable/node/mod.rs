//! A node: the part of [`DurableTimers`](super::DurableTimers) that fires.
//!
//! Three kinds of thread share one [`NodeShared`]:
//! - the claimer ([`claimer`]) asks the store for timers due within the
//!   claim window, schedules each in the node's in-memory [`Scheduler`] at
//!   its instant, renews the leases of running handlers, and sleeps until
//!   the next timer enters the window, a lease may end, a notification
//!   comes, or the safety poll is up;
//! - the scheduler's tick thread fires each timer at its instant;
//! - the scheduler's workers run [`fire`]: `start` in the store, the
//!   handler, then `finish`.
//!
//! Who touches what: `held` maps each key this node holds (claimed, not
//! started) to its fence and scheduler handle; the claimer inserts, the
//! firing worker removes its own entry (same fence) before starting, and
//! shutdown drains it. `running` maps each started key to its fence and last
//! renewal; the worker inserts and removes, the claimer renews. A claim that
//! is dropped without running while the node stops is handed back to the
//! store ([`fire::ClaimGuard`]), so other nodes fire it on time.

mod claimer;
mod fire;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::lateness::Histogram;
use super::store::{Millis, Store};
use super::{DurableError, Fired, Outcome, RetryPolicy};
use crate::{Scheduler, TimerHandle};

/// The user's handler.
pub(crate) type Handler = Arc<dyn Fn(&Fired) -> Outcome + Send + Sync>;

type Map<V> = HashMap<String, V, ahash::RandomState>;

/// A claimed timer held in memory until its instant.
struct Held {
    fence: u64,
    handle: TimerHandle,
}

/// A started timer whose lease the claimer renews.
struct Running {
    fence: u64,
    renewed: Instant,
}

/// How a node runs.
#[derive(Clone)]
pub(crate) struct NodeConfig {
    pub(crate) handler: Handler,
    pub(crate) workers: usize,
    pub(crate) lease: Duration,
    pub(crate) window: Duration,
    pub(crate) poll: Duration,
    pub(crate) max_held: usize,
    pub(crate) retry: RetryPolicy,
}

/// This node's counters.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) fired: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) stale: AtomicU64,
    pub(crate) store_errors: AtomicU64,
}

/// A flag and a condition variable: wakes the claimer early.
#[derive(Default)]
struct Signal {
    set: Mutex<bool>,
    cond: Condvar,
}

impl Signal {
    fn notify(&self) {
        *self.set.lock().unwrap() = true;
        self.cond.notify_one();
    }

    /// Waits until notified or `until`; clears the flag.
    fn wait_until(&self, until: Instant) {
        let mut set = self.set.lock().unwrap();
        while !*set {
            let now = Instant::now();
            if now >= until {
                break;
            }
            set = self.cond.wait_timeout(set, until - now).unwrap().0;
        }
        *set = false;
    }
}

/// What every thread of a node shares.
pub(crate) struct NodeShared {
    store: Arc<dyn Store>,
    scheduler: Scheduler,
    config: NodeConfig,
    lease_ms: Millis,
    window_ms: Millis,
    held: Mutex<Map<Held>>,
    running: Mutex<Map<Running>>,
    signal: Signal,
    stopping: AtomicBool,
    pub(crate) counters: Counters,
    lateness: Mutex<Histogram>,
}

/// A running node.
pub(crate) struct Node {
    shared: Arc<NodeShared>,
    claimer: Mutex<Option<JoinHandle<()>>>,
}

fn millis(d: Duration) -> Millis {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Node {
    /// Starts the scheduler and the claimer, and subscribes to the store's
    /// notifications.
    pub(crate) fn start(store: Arc<dyn Store>, config: NodeConfig) -> Result<Node, DurableError> {
        let scheduler = Scheduler::builder()
            .workers(config.workers)
            .build()
            .map_err(|e| DurableError::Config(e.to_string()))?;
        let shared = Arc::new(NodeShared {
            lease_ms: millis(config.lease),
            window_ms: millis(config.window),
            store,
            scheduler,
            config,
            held: Mutex::new(Map::default()),
            running: Mutex::new(Map::default()),
            signal: Signal::default(),
            stopping: AtomicBool::new(false),
            counters: Counters::default(),
            lateness: Mutex::new(Histogram::new()),
        });
        let weak = Arc::downgrade(&shared);
        shared.store.watch(Arc::new(move |_due| {
            if let Some(s) = weak.upgrade() {
                s.signal.notify();
            }
        }))?;
        let for_claimer = shared.clone();
        let claimer = std::thread::Builder::new()
            .name("wheel-durable-claimer".into())
            .spawn(move || claimer::run(&for_claimer))
            .map_err(|e| DurableError::Io(e.to_string()))?;
        Ok(Node {
            shared,
            claimer: Mutex::new(Some(claimer)),
        })
    }

    pub(crate) fn shared(&self) -> &NodeShared {
        &self.shared
    }

    /// Stops claiming, hands back every claim not started, waits for running
    /// handlers to finish and report.
    pub(crate) fn shutdown(&self) {
        let s = &self.shared;
        if s.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        s.signal.notify();
        if let Some(t) = self.claimer.lock().unwrap().take() {
            let _ = t.join();
        }
        // Cancelling drops each closure, whose guard hands the claim back.
        let held: Vec<Held> = s.held.lock().unwrap().drain().map(|(_, h)| h).collect();
        for h in held {
            // A closure already firing sees `stopping` and hands it back.
            h.handle.cancel();
        }
        s.scheduler.shutdown();
    }
}

impl NodeShared {
    /// Lateness percentiles and the largest, for stats.
    pub(crate) fn lateness(&self) -> (Duration, Duration, Duration) {
        let h = self.lateness.lock().unwrap();
        (h.quantile(0.5), h.quantile(0.99), h.max())
    }

    pub(crate) fn held_count(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.shutdown();
    }
}
