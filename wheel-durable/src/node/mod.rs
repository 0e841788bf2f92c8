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
//! - a handler worker ([`run`]), or an async task ([`tasks`]), runs each
//!   started timer's handler and hands the outcome ([`outcome`]) to the
//!   finisher;
//! - the finisher ([`finisher`]) records every outcome waiting in one store
//!   call, like a group commit: no outcome waits for a timer, each waits
//!   at most for the call before it.
//!
//! # Who owns what
//!
//! The state the threads share ([`shared::NodeShared`]) is one value per
//! stage, each of its own type whose fields are private to its module:
//! only its methods touch it, and its module doc says who calls which.
//! - [`holdings::Holdings`]: the claims held and not started (scheduled,
//!   or set aside to hand back at shutdown);
//! - [`starts::Starts`]: the claims at their instant waiting for a start
//!   call, and the lock-free hand-off between the threads that offer them
//!   and the one that makes the call (model-checked by
//!   `tests/loom_node.rs`);
//! - [`runs::Runs`]: the started runs: waiting for a handler, renewed by
//!   the claimer until their outcome is recorded, and their lateness;
//! - [`finishes::Finishes`]: the outcomes waiting for the finisher;
//! - [`flow_waits::FlowWaits`]: the claims whose flow key's parallelism or
//!   rate holds them back, by key, until their retry;
//! - [`clock::StoreTime`] and [`signal::Signal`]: what the claimer plans
//!   by.
//!
//! The modules that run the stages ([`claimer`], [`hold`], [`starter`],
//! [`run`], [`tasks`], [`outcome`], [`finisher`]) own no state of their own
//! besides their thread's locals (and the async dispatcher's
//! [`tasks::Tasks`]). Ground rules, each kept by the type that owns the
//! state:
//! - a claim is in exactly one place: held (a scheduler closure owns it),
//!   waiting to start, started (in the store; the node only renews it), or
//!   handed back; never two, so never started twice by this node;
//! - no lock is held while a handler or a store call runs, and locks nest
//!   in one order only (a claim whose scheduling is refused goes back
//!   under `Holdings`' lock of held claims: that lock, then the one of
//!   claims to hand back);
//! - a started run is renewed until its outcome is recorded, its lease is
//!   over, or its run unwound ([`runs::RunGuard`]), never forever;
//! - while the node stops, whatever cannot start any more goes back to the
//!   store in one call at the end of [`Node::shutdown`], so other nodes
//!   fire it on time.

mod claimer;
mod clock;
mod config;
mod finisher;
mod finishes;
mod flow_waits;
mod hold;
mod holdings;
mod outcome;
mod pause_watch;
mod queue;
mod run;
mod runs;
mod shared;
mod signal;
mod starter;
mod starts;
#[cfg(feature = "tokio")]
pub(crate) mod tasks;

use std::sync::Arc;
use std::thread::JoinHandle;

use crate::store::Store;
use crate::sync::{Mutex, lock};
use crate::{DurableError, ErrorDetail};
use wheel::Scheduler;

pub(crate) use self::claimer::notify_window;
pub(crate) use self::config::{Handler, NodeConfig};
pub(crate) use self::shared::NodeShared;
use self::starts::START_CALLS;

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
        let shared = Arc::new(NodeShared::new(store, scheduler, config));
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
        if !s.stop() {
            return;
        }
        s.signal.notify();
        let mut threads = lock(&self.threads);
        join(threads.claimer.take());
        // Cancelling drops each closure, whose guard hands the claim back;
        // a closure already firing sees the stop and does the same.
        s.holdings.cancel_all();
        s.scheduler.shutdown();
        // No closure runs any more: whatever waits to start goes back.
        s.holdings.hand_back_all(s.starts.close());
        s.holdings.hand_back_all(s.flow_waits.close());
        // Started runs are the store's `Running`: they run to the end.
        s.runs.close();
        for w in threads.workers.drain(..) {
            join(Some(w));
        }
        s.finishes.close();
        join(threads.finisher.take());
        s.release(&s.holdings.take_hand_backs());
    }
}

fn join(thread: Option<JoinHandle<()>>) {
    if let Some(t) = thread {
        let _ = t.join();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.shutdown();
    }
}
