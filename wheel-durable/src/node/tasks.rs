//! Async handlers: each started timer's handler runs as a task on a tokio
//! runtime, so a node holds thousands of runs in flight on a few threads
//! (a run waiting on the network costs a task, not a thread).
//!
//! One dispatcher thread takes started timers from
//! [`Runs`](super::runs::Runs) and spawns a task for each while fewer than
//! `max_in_flight` run; past that it waits, and the queue holds the rest.
//! A task spawns the user's future as a task of its own, so a panic inside
//! it ends only that task (the run counts as `Retry`), and races it
//! against `run_timeout` on the node's scheduler: a future still pending
//! then is aborted (dropped) and the run counts as `Retry` too. Either way
//! the outcome goes to the finisher exactly as a blocking handler's does:
//! leases, fences, retries and dead letters do not know how the handler
//! ran (`outcome.rs`).
//!
//! Owns [`Tasks`], the dispatcher's state. Who touches what: the
//! dispatcher increments `in_flight` before it spawns; the task decrements
//! it after handing its outcome over, and removes its entry from `aborts`,
//! which maps each run to the abort handle of the user's future. At
//! shutdown the dispatcher waits up to the grace period for `in_flight` to
//! reach zero, then aborts every future left: each such run is handed back
//! as a retry due at once (another node runs it), and the dispatcher waits
//! for those hand-overs too. A started run still waiting for a slot when
//! the grace period ends is handed back the same way without running (the
//! dispatcher's wait for a slot checks for the stop, so a node whose slots
//! never free still stops).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::{Handle, Runtime};
use tokio::task::AbortHandle;

use super::outcome::{class_of, fired_of, hand_over, log_panic, panic_message, settle};
use super::runs::Started;
use super::shared::NodeShared;
use super::starter;
use crate::store::Finish;
use crate::sync::{Condvar, Mutex, lock, wait_until};
use crate::{DurableError, Outcome};

/// The async handler's types live with the rest of the node's
/// configuration; the builder names them from here.
pub(crate) use super::config::{AsyncHandler, HandlerFuture, TaskConfig};

/// The runtime the tasks run on.
enum Rt {
    Owned(Runtime),
    Given(Handle),
}

/// The dispatcher's state, shared with its tasks.
pub(super) struct Tasks {
    config: TaskConfig,
    rt: Mutex<Option<Rt>>,
    handle: Handle,
    /// Runs spawned and not yet handed over.
    in_flight: Mutex<usize>,
    /// Notified when `in_flight` falls.
    fell: Condvar,
    /// The abort handle of each running user future, by run number.
    aborts: Mutex<HashMap<u64, AbortHandle>>,
}

impl Tasks {
    /// Builds the runtime the node owns (with `threads` workers) unless
    /// the user gave one.
    pub(super) fn new(config: TaskConfig, threads: usize) -> Result<Arc<Tasks>, DurableError> {
        let rt = match &config.runtime {
            Some(h) => Rt::Given(h.clone()),
            None => Rt::Owned(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads)
                    .thread_name("wheel-durable-task")
                    .enable_all()
                    .build()
                    .map_err(|e| DurableError::Io(format!("async runtime: {e}").into()))?,
            ),
        };
        let handle = match &rt {
            Rt::Owned(r) => r.handle().clone(),
            Rt::Given(h) => h.clone(),
        };
        Ok(Arc::new(Tasks {
            config,
            rt: Mutex::new(Some(rt)),
            handle,
            in_flight: Mutex::new(0),
            fell: Condvar::new(),
            aborts: Mutex::new(HashMap::new()),
        }))
    }
}

/// The dispatcher thread: spawns a task per started timer, at most
/// `max_in_flight` at once, until the queue closes; then drains.
pub(super) fn dispatch(shared: &Arc<NodeShared>, tasks: &Arc<Tasks>) {
    let mut next_run = 0u64;
    let mut stop_by = None;
    let mut handed_back = 0usize;
    while let Some(started) = shared.runs.take() {
        starter::resume(shared);
        if !wait_for_room(shared, tasks, &mut stop_by) {
            // The node stops and no slot freed within the grace period:
            // back to the store, due at once, as for a cancelled run.
            let c = started.claim;
            hand_over(shared, c.key, c.fence, Finish::Retry { delay: 0 }, None);
            handed_back += 1;
            continue;
        }
        next_run += 1;
        let (s, t) = (shared.clone(), tasks.clone());
        let run = next_run;
        tasks
            .handle
            .spawn(async move { run_task(&s, &t, run, started).await });
    }
    if handed_back > 0 {
        tracing::warn!(
            namespace = %shared.config.namespace,
            runs = handed_back,
            "started runs still waiting for a slot after the shutdown grace period: handed back"
        );
    }
    let stop_by = stop_by.unwrap_or_else(|| Instant::now() + tasks.config.grace);
    drain(tasks, stop_by);
}

/// Waits for a free slot and takes it. False if the node stops and none
/// frees by the end of the grace period (counted from when the wait first
/// saw the node stopping).
fn wait_for_room(shared: &NodeShared, tasks: &Tasks, stop_by: &mut Option<Instant>) -> bool {
    let mut n = lock(&tasks.in_flight);
    while *n >= tasks.config.max_in_flight {
        // A short wait: shutdown does not signal `fell`.
        let mut until = Instant::now() + Duration::from_millis(100);
        if shared.stopping() {
            let by = *stop_by.get_or_insert(Instant::now() + tasks.config.grace);
            if Instant::now() >= by {
                return false;
            }
            until = until.min(by);
        }
        n = wait_until(&tasks.fell, n, until).0;
    }
    *n += 1;
    true
}

/// One run: the user's future as a task of its own, under the run timeout.
async fn run_task(shared: &Arc<NodeShared>, tasks: &Arc<Tasks>, run: u64, started: Started) {
    let flow = started.flow.clone();
    let fired = fired_of(started);
    let (key, fence, attempt) = (fired.key.clone(), fired.fence, fired.attempt);
    let guard = shared.runs.guard(&key, fence);
    let user = tasks.handle.spawn((tasks.config.handler)(fired));
    lock(&tasks.aborts).insert(run, user.abort_handle());
    let abort = user.abort_handle();
    let timed = shared.scheduler.timeout(tasks.config.run_timeout, user);
    let (finish, class) = match timed.await {
        Ok(Ok(outcome)) => {
            let class = class_of(&outcome);
            (settle(shared, attempt, outcome), Some(class))
        }
        Ok(Err(e)) if e.is_panic() => {
            log_panic(
                shared,
                &key,
                attempt,
                fence,
                panic_message(&*e.into_panic()),
            );
            // This node's fault, not the flow key's target's.
            (settle(shared, attempt, Outcome::Retry), None)
        }
        // Aborted at shutdown: back to the store, due at once.
        Ok(Err(_)) => (Finish::Retry { delay: 0 }, None),
        Err(_) => {
            abort.abort();
            tracing::warn!(
                namespace = %shared.config.namespace,
                key = ?key,
                attempt,
                fence,
                timeout_ms = tasks.config.run_timeout.as_millis(),
                "async handler did not finish within its run timeout; cancelled, the run counts as a retry"
            );
            // The target did not answer in time: a failure of its key.
            let class = class_of(&Outcome::Retry);
            (settle(shared, attempt, Outcome::Retry), Some(class))
        }
    };
    lock(&tasks.aborts).remove(&run);
    let flow = flow.zip(class);
    hand_over(shared, key, fence, finish, flow);
    guard.disarm();
    *lock(&tasks.in_flight) -= 1;
    tasks.fell.notify_all();
}

/// Waits until `stop_by` (the end of the grace period) for the runs in
/// flight, aborts the rest (each hands its timer back), waits for those
/// hand-overs, and shuts an owned runtime down.
fn drain(tasks: &Tasks, stop_by: Instant) {
    let mut n = lock(&tasks.in_flight);
    while *n > 0 {
        let (guard, late) = wait_until(&tasks.fell, n, stop_by);
        n = guard;
        if late {
            break;
        }
    }
    if *n > 0 {
        let left: Vec<AbortHandle> = lock(&tasks.aborts).drain().map(|(_, a)| a).collect();
        tracing::warn!(
            runs = *n,
            "async runs still going after the shutdown grace period: cancelled and handed back"
        );
        for a in left {
            a.abort();
        }
        // Each aborted run hands its timer over at once.
        let until = Instant::now() + Duration::from_secs(5);
        while *n > 0 {
            let (guard, late) = wait_until(&tasks.fell, n, until);
            n = guard;
            if late {
                break;
            }
        }
    }
    drop(n);
    if let Some(Rt::Owned(rt)) = lock(&tasks.rt).take() {
        rt.shutdown_timeout(Duration::from_secs(1));
    }
}
