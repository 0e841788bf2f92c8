//! The scheduler's threads: started by [`SchedulerBuilder::build`](super::SchedulerBuilder::build),
//! stopped and joined by [`shutdown`], which runs on
//! [`Scheduler::shutdown`](super::Scheduler::shutdown) and when the last
//! `Scheduler` clone is dropped.
//!
//! The `Scheduler` clones share one [`Outer`], which holds the join
//! handles; the threads hold only [`Shared`], never `Outer`, so they never
//! keep the engine alive. Whoever calls `shutdown` first joins what it
//! may: a worker never joins itself, and a worker that finds another
//! thread already shutting down returns at once (that thread may be
//! joining it).

use crate::core::Wheel;
use crate::error::BuildError;
use crate::sync::{Arc, Mutex, Ordering, Parker, fence, lock, thread, try_lock};

use super::Shared;
use super::lanes::LaneRef;
use super::ticker::Ticker;
use super::workers::worker_main;

/// Join handles, taken by whichever `shutdown` joins them.
pub(crate) struct Threads {
    ticker: Option<thread::JoinHandle<()>>,
    workers: Vec<thread::JoinHandle<()>>,
}

/// What the `Scheduler` clones share; its `Drop` shuts down.
pub(crate) struct Outer {
    pub(crate) shared: Arc<Shared>,
    /// One handle target per lane (see [`LaneRef`]).
    pub(crate) refs: Box<[Arc<LaneRef>]>,
    pub(crate) threads: Mutex<Threads>,
}

impl Outer {
    /// The handle targets for `shared`'s lanes, and room for the handles
    /// of its worker threads (none started yet).
    pub(crate) fn new(shared: Arc<Shared>) -> Outer {
        Outer {
            refs: (0..shared.lanes.len())
                .map(|lane| {
                    Arc::new(LaneRef {
                        shared: shared.clone(),
                        lane,
                    })
                })
                .collect(),
            threads: Mutex::new(Threads {
                ticker: None,
                workers: Vec::with_capacity(shared.workers),
            }),
            shared,
        }
    }

    /// Starts the tick thread (owning `wheel`, parking on `parker`) and the
    /// workers. On an error, what was started is stopped and joined when
    /// `self` is dropped.
    pub(crate) fn start(&self, wheel: Wheel<u64>, parker: Parker) -> Result<(), BuildError> {
        let shared = &self.shared;
        let ticker = Ticker::new(shared.clone(), wheel, parker);
        let handle = thread::Builder::new()
            .name("wheel-tick".into())
            .spawn(move || ticker.run())
            .map_err(BuildError::Spawn)?;
        lock(&self.threads).ticker = Some(handle);
        let workers = shared.workers;
        let mut ids = Vec::with_capacity(workers);
        for i in 0..workers {
            let s = shared.clone();
            let spawned = thread::Builder::new()
                .name(format!("wheel-worker-{i}"))
                .spawn(move || worker_main(s));
            match spawned {
                Ok(h) => {
                    ids.push(h.thread().id());
                    lock(&self.threads).workers.push(h);
                }
                Err(e) => {
                    let _ = shared.worker_ids.set(ids);
                    return Err(BuildError::Spawn(e));
                }
            }
        }
        let _ = shared.worker_ids.set(ids);
        Ok(())
    }
}

impl Drop for Outer {
    fn drop(&mut self) {
        shutdown(&self.shared, &self.threads);
    }
}

/// Sets the flag, wakes the tick thread, and joins what this caller may.
pub(crate) fn shutdown(shared: &Shared, threads: &Mutex<Threads>) -> usize {
    shared.shutdown.store(true, Ordering::SeqCst);
    // Pairs with the fence after a producer's push (see `schedule_entry`).
    fence(Ordering::SeqCst);
    shared.unpark_ticker();
    let me = thread::current().id();
    let in_worker = shared.worker_ids.get().is_some_and(|ids| ids.contains(&me));
    let mut guard = if in_worker {
        // Another thread holding the lock may be joining this very worker.
        match try_lock(threads) {
            Some(g) => g,
            None => return 0,
        }
    } else {
        lock(threads)
    };
    let mut dropped = 0;
    if let Some(t) = guard.ticker.take() {
        // The tick thread never waits for workers or callers: safe to join
        // from anywhere, including a worker.
        let _ = t.join();
        dropped = shared.counters.dropped.load(Ordering::Relaxed) as usize;
    }
    let mut mine = Vec::new();
    for h in guard.workers.drain(..) {
        if h.thread().id() == me {
            mine.push(h); // joined later by another caller, or detached
        } else {
            let _ = h.join();
        }
    }
    guard.workers = mine;
    dropped
}
