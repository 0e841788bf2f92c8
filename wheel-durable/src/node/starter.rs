//! Starting claims: one store call for every claim that came to its
//! instant while the previous call ran.
//!
//! No thread and no state of its own: the claims wait in
//! [`Starts`](super::starts::Starts), whose module doc gives the hand-off
//! between the threads that offer claims and the one that makes the call.
//! The scheduler worker that runs a claim's closure offers the claim and,
//! if no call is in flight, makes one; otherwise it leaves the claim for
//! the call in flight. So a timer at a quiet moment starts without a
//! hand-over to another thread, and timers that come due while a call
//! runs pile up and start together in the next one.
//!
//! A claim that is a schedule's pending run goes with the chain's next
//! step, planned from the schedule's record
//! ([`schedule_store`](crate::schedule_store)): the one the claim read
//! where the store kept it, else one read now; the store applies the
//! step in the same operation as the start, if the record is still the
//! one planned from.
//!
//! The store starts a claim only if it is still claimed with the same
//! fence and due by the store's clock (and the schedule rules allow it), and answers each claim of the batch
//! on its own: a started one goes to the handlers ([`Runs`](super::runs::Runs)),
//! one not yet due by the store's clock is held again for the difference,
//! a stale one (cancelled, moved, claimed again elsewhere) is dropped. A
//! batch the store could not take is held again shortly; after the lease
//! the claims are another node's to fire anyway.
//!
//! A node never starts more than its handlers can take soon: a call takes
//! only what [`Runs::room`](super::runs::Runs::room) allows. Past that,
//! claims wait, still claimed; whoever takes a run for a handler calls
//! [`resume`] once half that room is free, which makes the next call on a
//! scheduler worker (the claimer's loop does too, as a safety net). The
//! waiting claims count towards `max_claimed`, so a node that far behind
//! also stops claiming.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::hold::hold;
use super::runs::{Begun, RUN_AHEAD};
use super::shared::NodeShared;
use crate::store::{Claimed, Fenced, Start};

/// How long a claim waits before its start is tried again after a store
/// error.
const RETRY_AFTER_ERROR: Duration = Duration::from_millis(50);

/// Offers a claim at its instant to be started (or handed back, while the
/// node stops).
pub(super) fn offer(shared: &Arc<NodeShared>, c: Claimed) {
    if let Err(c) = shared.starts.offer(c) {
        shared.holdings.hand_back(c);
        return;
    }
    drain(shared);
}

/// Offers claims already due when claimed (a backlog after a restart or
/// an outage), in the claim's order, earliest due first: they wait
/// together and one pass on a scheduler worker starts them, so they start
/// in that order instead of in whatever order separate scheduler closures
/// would offer them.
pub(super) fn offer_due(shared: &Arc<NodeShared>, claims: Vec<Claimed>) {
    if claims.is_empty() {
        return;
    }
    for c in claims {
        if let Err(c) = shared.starts.offer(c) {
            shared.holdings.hand_back(c);
        }
    }
    let s = shared.clone();
    // On an error the scheduler stops, and shutdown hands the starts back.
    let _ = shared.scheduler.schedule(Duration::ZERO, move || drain(&s));
}

/// Starts what waits, as long as the handlers have room for it: a claim
/// left waiting stays claimed (its start is fenced, so a claim the store
/// took back meanwhile is only refused, never run twice).
fn drain(shared: &Arc<NodeShared>) {
    let most = shared.store.batch_limits().start;
    let room = || shared.runs.room().min(most);
    shared.starts.pass(room, |batch| {
        wake_claimer_below_half(shared, batch.len());
        if shared.stopping() {
            shared.holdings.hand_back_all(batch);
        } else {
            start(shared, batch);
        }
    });
}

/// Called by whoever takes a started run for a handler: once there is
/// room again, starts what waits, on a scheduler worker (the caller is a
/// handler worker or the dispatcher, which must not wait on the store).
pub(super) fn resume(shared: &Arc<NodeShared>) {
    if !shared
        .starts
        .resume_wanted(|| shared.runs.room() >= RUN_AHEAD / 2)
    {
        return;
    }
    let s = shared.clone();
    let scheduled = shared.scheduler.schedule(Duration::ZERO, move || {
        // Before the pass looks at the queues: a run taken after this may
        // schedule the next pass.
        s.starts.resumed();
        drain(&s);
    });
    if scheduled.is_err() {
        // The scheduler stops: shutdown hands the starts back.
        shared.starts.resumed();
    }
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
    // Claims that came due together are offered from several scheduler
    // workers in any order: started (and handed to the handlers) earliest
    // due first.
    batch.sort_unstable_by(|a, b| (a.due, &a.key).cmp(&(b.due, &b.key)));
    let fenced: Vec<Fenced<'_>> = batch.iter().map(Claimed::fenced).collect();
    // The chain steps of schedules' pending runs go with their start.
    let keys: Vec<&str> = batch.iter().map(|c| c.key.as_str()).collect();
    let flow_keys = shared.config.flows.keys_of(&batch);
    let flows: Vec<&str> = flow_keys
        .iter()
        .map(|f| f.as_deref().unwrap_or(""))
        .collect();
    let answers = crate::schedule_store::advances(&*shared.store, &keys).and_then(|plans| {
        shared
            .store
            .start_runs(&fenced, &plans, &flows, shared.lease_ms)
    });
    let answers = match answers {
        Ok(answers) => answers,
        Err(e) => {
            shared.store_error();
            tracing::debug!(namespace = %shared.config.namespace, error = %e, "start failed; retried");
            let at = Instant::now() + RETRY_AFTER_ERROR;
            for c in batch {
                hold(shared, c, at, offer);
            }
            return;
        }
    };
    let received = Instant::now();
    if let Some(now) = answers.iter().find_map(Start::now) {
        shared.observe(now, received);
    }
    let mut started = Vec::with_capacity(batch.len());
    let mut tally = Tally::default();
    for ((c, answer), flow) in batch.into_iter().zip(answers).zip(flow_keys) {
        tally.count(flow.as_deref(), &answer);
        settle(shared, c, answer, flow, received, &mut started);
    }
    for (flow, (went, held)) in tally.0 {
        shared.flow_waits.answered(&flow, went, held);
    }
    if !started.is_empty() {
        shared
            .counters
            .fired
            .fetch_add(started.len() as u64, Ordering::Relaxed);
        // Runs of schedules are told apart by their reserved key prefix.
        let schedule_runs = started
            .iter()
            .filter(|b| crate::schedule::is_reserved_key(&b.claim.key))
            .count();
        shared
            .counters
            .schedule_runs
            .fetch_add(schedule_runs as u64, Ordering::Relaxed);
        shared.runs.enter(started, received);
    }
}

/// Leaves a claim its flow key holds back to be retried at `at`, and
/// schedules the key's retry if none as early is.
fn wait_for_flow(shared: &Arc<NodeShared>, c: Claimed, flow: String, at: Instant, now: Instant) {
    let (retry, over) = match shared.flow_waits.wait(c, &flow, at, now) {
        Err(c) => return shared.holdings.hand_back(c),
        Ok(answer) => answer,
    };
    if !over.is_empty() {
        defer(shared, &flow, over, now);
    }
    if let Some(at) = retry {
        schedule_retry(shared, flow, at);
    }
}

/// Hands a key's claims past what a node holds back to the store, which
/// parks them and hands them out again at the key's rate. Claims the
/// store cannot take now keep waiting here.
fn defer(shared: &Arc<NodeShared>, flow: &str, claims: Vec<Claimed>, now: Instant) {
    let fenced: Vec<Fenced<'_>> = claims.iter().map(Claimed::fenced).collect();
    let flows = vec![flow; claims.len()];
    match shared.store.defer(&fenced, &flows) {
        Ok(parked) => {
            let n = parked.iter().filter(|&&p| p).count();
            shared
                .counters
                .deferred
                .fetch_add(n as u64, Ordering::Relaxed);
        }
        Err(e) => {
            shared.store_error();
            tracing::debug!(namespace = %shared.config.namespace, error = %e, "deferring failed; the claims wait here");
            shared
                .holdings
                .hand_back_all(shared.flow_waits.keep(claims, flow, now));
        }
    }
}

/// Schedules the retry of `flow`'s waiting claims at `at`. If the
/// scheduler stops first, shutdown hands them back.
pub(super) fn schedule_retry(shared: &Arc<NodeShared>, flow: String, at: Instant) {
    let s = shared.clone();
    let _ = shared.scheduler.schedule_at(at, move || {
        let claims = s.flow_waits.take(&flow);
        for c in claims {
            if let Err(c) = s.starts.offer(c) {
                s.holdings.hand_back(c);
            }
        }
        drain(&s);
    });
}

/// Enters a run started with a rate slot for its handler at the slot's
/// instant. A run whose entry the stopping scheduler drops is entered at
/// once (up to the rate's horizon before its slot): it is started in the
/// store, and a run left out would only wait for its lease to end.
fn enter_at(shared: &Arc<NodeShared>, run: Begun, at: Instant, received: Instant) {
    struct Entry(Option<(Arc<NodeShared>, Begun, Instant)>);
    impl Drop for Entry {
        fn drop(&mut self) {
            if let Some((s, run, received)) = self.0.take() {
                s.runs.enter(vec![run], received);
            }
        }
    }
    let entry = Entry(Some((shared.clone(), run, received)));
    // Dropping the closure, run or not, enters the run.
    let _ = shared.scheduler.schedule_at(at, move || drop(entry));
}

/// Per flow key of a start call: claims started, claims held back.
#[derive(Default)]
struct Tally(std::collections::HashMap<String, (usize, usize)>);

impl Tally {
    fn count(&mut self, flow: Option<&str>, answer: &Start) {
        let Some(flow) = flow else { return };
        let (went, held) = match answer {
            Start::Started { .. } | Start::Reserved { .. } => (1, 0),
            Start::Wait { .. } => (0, 1),
            _ => return,
        };
        let t = self.0.entry(flow.to_owned()).or_default();
        t.0 += went;
        t.1 += held;
    }
}

/// Acts on the store's answer to one claim's start: a started run joins
/// `started` (or waits for its rate slot), the rest wait, are held again,
/// or are dropped.
fn settle(
    shared: &Arc<NodeShared>,
    c: Claimed,
    answer: Start,
    flow: Option<String>,
    received: Instant,
    started: &mut Vec<Begun>,
) {
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
        Start::Paused { .. } => {
            // The store keeps it (pending or parked) until the resume.
            shared.counters.paused.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                namespace = %shared.config.namespace,
                key = ?c.key,
                "not started: its namespace or flow key is paused, or its breaker open"
            );
        }
        Start::Wait { now, until } => {
            let at = received + Duration::from_millis(until.saturating_sub(now));
            wait_for_flow(shared, c, flow.unwrap_or_default(), at, received);
        }
        Start::Reserved { now, attempt, at } => {
            let send = received + Duration::from_millis(at.saturating_sub(now));
            // Its lateness counts to its slot, when it is sent.
            let run = Begun {
                claim: c,
                now: at,
                attempt,
                flow,
            };
            enter_at(shared, run, send, received);
        }
        Start::NotYet { now, due } => {
            hold(
                shared,
                c,
                received + Duration::from_millis(due - now),
                offer,
            );
        }
        Start::Started { now, attempt } => started.push(Begun {
            claim: c,
            now,
            attempt,
            flow,
        }),
    }
}
