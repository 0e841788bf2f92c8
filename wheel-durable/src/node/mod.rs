//! A node: the part of [`DurableTimers`](super::DurableTimers) that fires.
//!
//! A timer's way through a node, one thread after another:
//! - the claimer ([`claimer`]) asks the store for timers due within the
//!   claim window and schedules each in the node's in-memory [`Scheduler`]
//!   at its instant ([`hold`]), except claims already due, which go
//!   straight to the starter together, earliest first; it also renews, in
//!   one store call, the leases of every run that needs it, and sleeps
//!   until the next timer enters the window, a lease may end, a
//!   notification says a timer became due sooner than its plan, or the
//!   safety poll is up;
//! - at the instant, a scheduler worker offers the claim to be started
//!   ([`starter`]): one store call starts every claim waiting (timers due
//!   together start together);
//! - a handler worker ([`run`]) runs each started timer's handler and
//!   hands the outcome to the finisher;
//! - the finisher ([`finisher`]) records every outcome waiting in one store
//!   call, like a group commit: no outcome waits for a timer, each waits
//!   at most for the call before it.
//!
//! Who touches what: `held` maps each key this node holds (claimed, not
//! started) to its fence and scheduler handle; the claimer inserts, the
//! scheduled closure removes its own entry (same fence) when it fires, and
//! shutdown drains it. `running` maps each started key to its fence and
//! last renewal: the worker that starts it inserts, the claimer renews, the finisher
//! removes the entry once the store has the outcome (or the lease is over),
//! and a worker that unwinds before handing over an outcome removes it too
//! ([`run`]'s guard), so no run is renewed forever. Claims that are not
//! started while the node stops are collected in `hand_back` and returned
//! to the store in one call at the end of [`Node::shutdown`], so other
//! nodes fire them on time.

mod claimer;
mod clock;
mod finisher;
mod hold;
mod queue;
mod run;
mod signal;
mod starter;
#[cfg(feature = "tokio")]
pub(crate) mod tasks;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use self::clock::{Reading, StoreTime};
use self::queue::Queue;
use self::signal::Signal;
use super::lateness::Histogram;
use super::store::{Claimed, Fenced, Finish, Millis, Store};
use super::LatenessBuckets;
use super::{DurableError, ErrorDetail, Fired, Outcome, RetryPolicy};
use crate::sync::lock;
use wheel::{Scheduler, TimerHandle};

/// The user's handler.
pub(crate) type Handler = Arc<dyn Fn(&Fired) -> Outcome + Send + Sync>;

type Map<V> = HashMap<String, V, ahash::RandomState>;

/// Entries of one store call at most (a start, finish, renew or release
/// batch): bounds how long one call holds the store (a Redis script
/// blocks the server while it runs, about a millisecond for this many).
const STORE_BATCH: usize = 256;

/// Start calls a node has in flight at most. One: while it runs, the
/// claims coming due pile up into the next call's batch. With two, calls
/// were measured to carry one timer each at 10 000 timers/s on 3 nodes,
/// and their fixed cost in Redis made every timer later.
const START_CALLS: usize = 1;

/// Started runs that wait for a handler at most (see `starter`): enough
/// for the next few store calls' worth while the handlers are busy, few
/// enough that their lease renewals stay a call or two.
const RUN_AHEAD: usize = STORE_BATCH;

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

/// A started timer on its way to a handler worker.
struct Started {
    claim: Claimed,
    attempt: u32,
}

/// A run's outcome on its way to the store.
struct Ending {
    key: String,
    fence: u64,
    finish: Finish,
    /// After this the run's lease is over: the store has handed the timer
    /// to another run, and recording this outcome is pointless.
    give_up: Instant,
}

/// How a node runs.
#[derive(Clone)]
pub(crate) struct NodeConfig {
    /// For the logs: which timers these are.
    pub(crate) namespace: Arc<str>,
    pub(crate) handler: Handler,
    pub(crate) workers: usize,
    pub(crate) lease: Duration,
    pub(crate) window: Duration,
    pub(crate) poll: Duration,
    pub(crate) max_held: usize,
    pub(crate) retry: RetryPolicy,
    /// Async handlers: run as tasks instead of on `workers` threads (which
    /// then size the runtime the node owns).
    #[cfg(feature = "tokio")]
    pub(crate) tasks: Option<tasks::TaskConfig>,
}

impl NodeConfig {
    /// Threads for blocking handlers: none when the handler is async.
    fn blocking_workers(&self) -> usize {
        #[cfg(feature = "tokio")]
        if self.tasks.is_some() {
            return 0;
        }
        self.workers
    }
}

/// This node's counters.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) fired: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) stale: AtomicU64,
    pub(crate) store_errors: AtomicU64,
    pub(crate) claims: AtomicU64,
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
    /// Claims at their instant, waiting for a start call.
    to_start: Queue<Claimed>,
    /// Start calls in flight (at most [`START_CALLS`]).
    starting: AtomicUsize,
    /// A start pass is scheduled by `starter::resume` and has not run yet:
    /// the runs taken meanwhile need not schedule another.
    resuming: AtomicBool,
    /// Started timers, for the handler workers.
    to_run: Queue<Started>,
    /// Outcomes, for the finisher.
    to_finish: Queue<Ending>,
    /// Claims not started while the node stops, released at the end.
    hand_back: Mutex<Vec<Claimed>>,
    /// The tightest recent reading of the store's clock.
    store_time: Mutex<StoreTime>,
    signal: Signal,
    stopping: AtomicBool,
    pub(crate) counters: Counters,
    lateness: Mutex<Histogram>,
}

/// A running node.
pub(crate) struct Node {
    shared: Arc<NodeShared>,
    threads: Mutex<Threads>,
}

/// The node's own threads, joined in this order at shutdown.
#[derive(Default)]
struct Threads {
    claimer: Option<JoinHandle<()>>,
    workers: Vec<JoinHandle<()>>,
    finisher: Option<JoinHandle<()>>,
}

/// How far ahead a timer made pending is announced to the nodes: the
/// poll plus the claimer's lead, at most the claim window. Every node
/// claims at least once per poll, so a timer due later than that is taken
/// in time by a claim the node makes anyway; only sooner ones need a node
/// to claim early. (This assumes the nodes of a namespace share the poll
/// of the process that adds; a node polling more slowly may fire such a
/// timer late, never early.)
pub(crate) fn notify_window(config: &NodeConfig) -> Duration {
    (config.poll + claimer::LEAD).min(config.window)
}

fn millis(d: Duration) -> Millis {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, DurableError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| {
            DurableError::Io(ErrorDetail::new(format!("cannot start {name}")).with_source(e))
        })
}

impl Node {
    /// Starts the scheduler and the node's threads, and subscribes to the
    /// store's notifications.
    pub(crate) fn start(store: Arc<dyn Store>, config: NodeConfig) -> Result<Node, DurableError> {
        // The scheduled closures make the start calls, and one more worker
        // leaves claims for them while they do. A start call takes far
        // longer than a timed wake-up comes late, so the scheduler only
        // sleeps: polling before each due claim would keep a thread
        // spinning whenever claims come due every millisecond or two.
        let scheduler = Scheduler::builder()
            .workers(START_CALLS + 1)
            .sleep_only()
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
            to_start: Queue::new(),
            starting: AtomicUsize::new(0),
            resuming: AtomicBool::new(false),
            to_run: Queue::new(),
            to_finish: Queue::new(),
            hand_back: Mutex::new(Vec::new()),
            store_time: Mutex::new(StoreTime::default()),
            signal: Signal::default(),
            stopping: AtomicBool::new(false),
            counters: Counters::default(),
            lateness: Mutex::new(Histogram::new()),
        });
        let weak = Arc::downgrade(&shared);
        shared.store.watch(Arc::new(move |due| {
            if let Some(s) = weak.upgrade() {
                s.signal.notify_due(due);
            }
        }))?;
        let node = Node {
            shared: shared.clone(),
            threads: Mutex::new(Threads::default()),
        };
        // On an error, dropping `node` stops the threads started so far.
        let s = shared.clone();
        let finisher = spawn("wheel-durable-finish", move || finisher::run(&s))?;
        lock(&node.threads).finisher = Some(finisher);
        #[cfg(feature = "tokio")]
        if let Some(config) = shared.config.tasks.clone() {
            let tasks = tasks::Tasks::new(config, shared.config.workers)?;
            let s = shared.clone();
            let dispatcher = spawn("wheel-durable-dispatch", move || {
                tasks::dispatch(&s, &tasks)
            })?;
            lock(&node.threads).workers.push(dispatcher);
        }
        for _ in 0..shared.config.blocking_workers() {
            let s = shared.clone();
            let worker = spawn("wheel-durable-worker", move || run::work(&s))?;
            lock(&node.threads).workers.push(worker);
        }
        let s = shared.clone();
        let claimer = spawn("wheel-durable-claimer", move || claimer::run(&s))?;
        lock(&node.threads).claimer = Some(claimer);
        Ok(node)
    }

    pub(crate) fn shared(&self) -> &NodeShared {
        &self.shared
    }

    /// Stops claiming, hands back every claim not started, waits for
    /// started runs to finish and their outcomes to be recorded.
    pub(crate) fn shutdown(&self) {
        let s = &self.shared;
        if s.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        s.signal.notify();
        let mut threads = lock(&self.threads);
        join(threads.claimer.take());
        // Cancelling drops each closure, whose guard hands the claim back;
        // a closure already firing sees `stopping` and does the same.
        let held: Vec<Held> = lock(&s.held).drain().map(|(_, h)| h).collect();
        for h in held {
            h.handle.cancel();
        }
        s.scheduler.shutdown();
        // No closure runs any more: whatever waits to start goes back.
        s.to_start.close();
        let left = s.to_start.try_take_up_to(usize::MAX);
        lock(&s.hand_back).extend(left);
        // Started runs are the store's `Running`: they run to the end.
        s.to_run.close();
        for w in threads.workers.drain(..) {
            join(Some(w));
        }
        s.to_finish.close();
        join(threads.finisher.take());
        let claims = std::mem::take(&mut *lock(&s.hand_back));
        s.release(&claims);
    }
}

fn join(thread: Option<JoinHandle<()>>) {
    if let Some(t) = thread {
        let _ = t.join();
    }
}

impl NodeShared {
    /// Lateness percentiles and the largest, for stats.
    pub(crate) fn lateness(&self) -> (Duration, Duration, Duration) {
        let h = lock(&self.lateness);
        (h.quantile(0.5), h.quantile(0.99), h.max())
    }

    /// Lateness as cumulative counts, for stats.
    pub(crate) fn lateness_buckets(&self) -> LatenessBuckets {
        let h = lock(&self.lateness);
        let (count, sum) = h.count_and_sum();
        LatenessBuckets::new(h.cumulative(LatenessBuckets::BOUNDS), count, sum)
    }

    /// Claims this node holds: scheduled, or at their instant and waiting
    /// to start. What `max_claimed` bounds.
    pub(crate) fn held_count(&self) -> usize {
        lock(&self.held).len() + self.to_start.len()
    }

    /// Hands claims back to the store, in batches. After a batch fails the
    /// rest are left to their leases too (other nodes fire those timers
    /// once the leases end): a store that failed one call for
    /// `unavailable_after` would fail the others as slowly, and shutdown
    /// must end.
    fn release(&self, claims: &[Claimed]) {
        let ns = &*self.config.namespace;
        let mut released = 0;
        for (i, part) in claims.chunks(STORE_BATCH).enumerate() {
            let fenced: Vec<Fenced<'_>> = part.iter().map(Claimed::fenced).collect();
            match self.store.release(&fenced) {
                Ok(done) => released += done.iter().filter(|&&d| d).count(),
                Err(e) => {
                    self.counters.store_errors.fetch_add(1, Ordering::Relaxed);
                    let left = claims.len() - i * STORE_BATCH;
                    tracing::warn!(namespace = %ns, left, error = %e,
                        "claims not handed back at shutdown; they fire after their leases end");
                    break;
                }
            }
        }
        if !claims.is_empty() {
            tracing::info!(namespace = %ns, released, "claims handed back at shutdown");
        }
    }

    /// Takes in a store reply's clock reading; the reading to schedule by.
    fn observe(&self, now: Millis, received: Instant) -> Reading {
        let r = Reading { now, received };
        let mut st = lock(&self.store_time);
        st.observe(r);
        st.best().unwrap_or(r)
    }

    /// Forgets the renewal of a run held with `fence` (a newer run of the
    /// same key keeps its own).
    fn forget_run(&self, running: &mut Map<Running>, key: &str, fence: u64) {
        if running.get(key).is_some_and(|r| r.fence == fence) {
            running.remove(key);
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.shutdown();
    }
}
