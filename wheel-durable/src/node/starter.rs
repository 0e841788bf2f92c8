//! Starting claims: one store call for every claim that came to its
//! instant while the previous call ran.
//!
//! No thread of its own: the scheduler worker that runs a claim's closure
//! leaves the claim in a queue and, if fewer than [`START_CALLS`] start
//! calls are in flight, makes one: it takes everything waiting, starts it,
//! and goes on while more is waiting; otherwise it only leaves the claim
//! for a call in flight, whose worker looks at the queue again when it is
//! done (it counts calls in flight, then looks at the queue once more after
//! it stops, so a claim left just as it stopped is not stranded). So a
//! timer at a quiet moment starts without a hand-over to another thread,
//! and timers that come due while a call runs pile up and start together
//! in the next one.
//!
//! The store starts a claim only if it is still claimed with the same
//! fence and due by the store's clock, and answers each claim of the batch
//! on its own: a started one goes to the handler workers, one not yet due
//! by the store's clock is held again for the difference, a stale one
//! (cancelled, moved, claimed again elsewhere) is dropped. A batch the
//! store could not take is held again shortly; after the lease the claims
//! are another node's to fire anyway.
//!
//! A node never starts more than its handlers can take soon: started runs
//! wait for a handler at most [`RUN_AHEAD`] deep, and a call takes only
//! what fits. Past that, claims wait in the queue, still claimed; whoever
//! takes a run for a handler calls [`resume`] once half that room is free,
//! which makes the next call on a scheduler worker (the claimer's loop
//! does too, in case a wake-up was lost to a race). The queue counts
//! towards `max_claimed`, so a node that far behind also stops claiming.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::hold::hold;
use super::{NodeShared, Running, Started, RUN_AHEAD, START_CALLS, STORE_BATCH};
use crate::store::{Claimed, Fenced, Start};
use crate::sync::lock;

/// How long a claim waits before its start is tried again after a store
/// error.
const RETRY_AFTER_ERROR: Duration = Duration::from_millis(50);

/// Offers a claim at its instant to be started (or handed back, while the
/// node stops).
pub(super) fn offer(shared: &Arc<NodeShared>, c: Claimed) {
    if let Err(c) = shared.to_start.push(c) {
        lock(&shared.hand_back).push(c);
        return;
    }
    drain(shared);
}

/// Offers claims already due when claimed (a backlog after a restart or
/// an outage), in the claim's order, earliest due first: they go to the
/// queue together and one pass on a scheduler worker starts them, so they
/// start in that order instead of in whatever order separate scheduler
/// closures would reach the queue.
pub(super) fn offer_due(shared: &Arc<NodeShared>, claims: Vec<Claimed>) {
    if claims.is_empty() {
        return;
    }
    for c in claims {
        if let Err(c) = shared.to_start.push(c) {
            lock(&shared.hand_back).push(c);
        }
    }
    let s = shared.clone();
    // On an error the scheduler stops, and shutdown hands `to_start` back.
    let _ = shared.scheduler.schedule(Duration::ZERO, move || drain(&s));
}

/// Starts what waits, as long as the handlers have room for it: a claim
/// left in `to_start` stays claimed (its start is fenced, so a claim the
/// store took back meanwhile is only refused, never run twice).
fn drain(shared: &Arc<NodeShared>) {
    while !shared.to_start.is_empty() && run_room(shared) > 0 {
        if shared.starting.fetch_add(1, Ordering::SeqCst) >= START_CALLS {
            // Every call is taken: one of them takes this claim when it
            // is done (it looks at the queue again after it stops).
            shared.starting.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        loop {
            let room = run_room(shared).min(STORE_BATCH);
            let batch = shared.to_start.try_take_up_to(room);
            if batch.is_empty() {
                break;
            }
            wake_claimer_below_half(shared, batch.len());
            if shared.stopping.load(Ordering::SeqCst) {
                lock(&shared.hand_back).extend(batch);
            } else {
                start(shared, batch);
            }
        }
        shared.starting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Called by whoever takes a started run for a handler: once there is
/// room again, starts what waits, on a scheduler worker (the caller is a
/// handler worker or the dispatcher, which must not wait on the store).
pub(super) fn resume(shared: &Arc<NodeShared>) {
    if shared.starting.load(Ordering::SeqCst) > 0
        || shared.resuming.load(Ordering::SeqCst)
        || shared.to_start.is_empty()
        || run_room(shared) < RUN_AHEAD / 2
        || shared.resuming.swap(true, Ordering::SeqCst)
    {
        return;
    }
    let s = shared.clone();
    let scheduled = shared.scheduler.schedule(Duration::ZERO, move || {
        // Cleared before the pass looks at the queues: a run taken after
        // this may schedule the next pass.
        s.resuming.store(false, Ordering::SeqCst);
        drain(&s);
    });
    if scheduled.is_err() {
        // The scheduler stops: shutdown hands `to_start` back.
        shared.resuming.store(false, Ordering::SeqCst);
    }
}

/// How many more runs may be started now: started runs wait for a handler
/// at most [`RUN_AHEAD`] deep. Past that the node is behind; starting
/// more would only pile up runs whose leases must be renewed while they
/// wait (and, when the renewals fall behind, runs the store gives to
/// another run while this one still holds them).
fn run_room(shared: &NodeShared) -> usize {
    RUN_AHEAD.saturating_sub(shared.to_run.len())
}

/// Wakes the claimer when this take brings the claims the node holds
/// (scheduled or waiting to start) to half of `max_claimed`: the claimer
/// stops claiming while the node is full.
fn wake_claimer_below_half(shared: &NodeShared, taken: usize) {
    let half = shared.config.max_held / 2;
    let after = shared.held_count();
    if after + taken > half && after <= half {
        shared.signal.notify();
    }
}

fn start(shared: &Arc<NodeShared>, mut batch: Vec<Claimed>) {
    // Claims that came due together reach the queue from several scheduler
    // workers in any order: started (and handed to the handlers) earliest
    // due first.
    batch.sort_unstable_by(|a, b| (a.due, &a.key).cmp(&(b.due, &b.key)));
    let fenced: Vec<Fenced<'_>> = batch.iter().map(Claimed::fenced).collect();
    let answers = match shared.store.start(&fenced, shared.lease_ms) {
        Ok(answers) => answers,
        Err(e) => {
            shared.counters.store_errors.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(namespace = %shared.config.namespace, error = %e, "start failed; retried");
            let at = Instant::now() + RETRY_AFTER_ERROR;
            for c in batch {
                hold(shared, c, at);
            }
            return;
        }
    };
    let received = Instant::now();
    if let Some(now) = answers.iter().find_map(Start::now) {
        shared.observe(now, received);
    }
    let mut started = Vec::with_capacity(batch.len());
    for (c, answer) in batch.into_iter().zip(answers) {
        match answer {
            Start::Stale => {
                shared.counters.stale.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    namespace = %shared.config.namespace,
                    key = ?c.key,
                    fence = c.fence,
                    "not started: cancelled, rescheduled or claimed again since this node's claim"
                );
            }
            Start::NotYet { now, due } => {
                hold(shared, c, received + Duration::from_millis(due - now));
            }
            Start::Started { now, attempt } => started.push((c, now, attempt)),
        }
    }
    record(shared, &started, received);
    for (claim, _, attempt) in started {
        if let Err(s) = shared.to_run.push(Started { claim, attempt }) {
            // Only while stopping, after the workers are gone: the lease
            // ends the run, and another node runs the timer again.
            shared.forget_run(&mut lock(&shared.running), &s.claim.key, s.claim.fence);
        }
    }
}

/// Counts the started runs, their lateness, and enters them for renewal.
fn record(shared: &NodeShared, started: &[(Claimed, u64, u32)], received: Instant) {
    if started.is_empty() {
        return;
    }
    shared
        .counters
        .fired
        .fetch_add(started.len() as u64, Ordering::Relaxed);
    let mut lateness = lock(&shared.lateness);
    for (c, now, _) in started {
        lateness.record(Duration::from_millis(now.saturating_sub(c.due)));
    }
    drop(lateness);
    let mut running = lock(&shared.running);
    for (c, _, _) in started {
        let r = Running {
            fence: c.fence,
            renewed: received,
        };
        running.insert(c.key.clone(), r);
    }
}
