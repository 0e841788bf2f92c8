//! The finisher thread: records, in one store call, every outcome handed
//! over while the previous call ran (a group commit: an outcome waits at
//! most for the call before it, never for a timer).
//!
//! A call that fails is tried again with back-off, together with whatever
//! arrived meanwhile, for as long as each run's lease lasts; past that the
//! store has handed the timer to another run and the outcome is dropped.
//! Once an outcome is recorded (or dropped), its run is no longer renewed.
//!
//! Owns no state: the only taker of [`Finishes`](super::finishes::Finishes),
//! and the one who forgets a run in [`Runs`](super::runs::Runs) once its
//! outcome is settled.

use std::time::{Duration, Instant};

use super::finishes::Ending;
use super::shared::NodeShared;
use std::sync::Arc;

use super::pause_watch::PauseWatch;
use super::starter;
use crate::store::flow_state::FlowClass;
use crate::store::{Fenced, Finish, FlowOutcome};
use crate::time::Backoff;

pub(super) fn run(shared: &Arc<NodeShared>) {
    let mut watch = PauseWatch::default();
    while let Some(mut batch) = next_batch(shared, &mut watch) {
        let mut backoff = Backoff::new(Duration::from_millis(10), Duration::from_millis(500));
        while !record(shared, &batch, &mut watch) {
            shared.store_error();
            let now = Instant::now();
            let (live, over): (Vec<Ending>, Vec<Ending>) =
                batch.into_iter().partition(|e| e.give_up > now);
            if !over.is_empty() {
                tracing::warn!(
                    namespace = %shared.config.namespace,
                    outcomes = over.len(),
                    "outcomes not recorded before their leases ended; those timers run again"
                );
            }
            forget(shared, &over);
            batch = live;
            if batch.is_empty() {
                break;
            }
            shared.finishes.wait_until(now + backoff.next());
            let room = shared
                .store
                .batch_limits()
                .finish
                .saturating_sub(batch.len());
            batch.extend(shared.finishes.more(room));
        }
        forget(shared, &batch);
    }
}

/// Waits for the next outcomes; while a look of the pause watch is
/// pending, only until it is due, and looks then. `None` once the
/// finishes are closed and empty.
fn next_batch(shared: &NodeShared, watch: &mut PauseWatch) -> Option<Vec<Ending>> {
    while let Some(due) = watch.due() {
        shared.finishes.wait_until(due);
        let batch = shared.finishes.more(shared.store.batch_limits().finish);
        if !batch.is_empty() {
            return Some(batch);
        }
        // Due, or woken early with nothing to take (the finishes closed):
        // look now rather than wait on a queue that no longer blocks.
        watch.look(shared);
    }
    shared
        .finishes
        .take_up_to(shared.store.batch_limits().finish)
}

/// One store call for the batch; false if the store could not take it.
fn record(shared: &Arc<NodeShared>, batch: &[Ending], watch: &mut PauseWatch) -> bool {
    let runs: Vec<(Fenced<'_>, Finish)> = batch
        .iter()
        .map(|e| {
            let run = Fenced {
                key: &e.key,
                fence: e.fence,
            };
            (run, e.finish.clone())
        })
        .collect();
    // One flow outcome per run, or none at all when no run has a key.
    let flows: Vec<FlowOutcome<'_>> = if batch.iter().any(|e| e.flow.is_some()) {
        batch.iter().map(flow_outcome).collect()
    } else {
        Vec::new()
    };
    match shared.store.finish(&runs, &flows) {
        Ok(recorded) => {
            log_settled(shared, batch, &recorded);
            log_dead_letters(shared, batch, &recorded);
            nudge_flows(shared, batch, &recorded);
            let classes = batch.iter().zip(&recorded).filter(|&(_, &r)| r);
            watch.note(classes.filter_map(|(e, _)| e.flow.as_ref().map(|f| &f.1)));
            true
        }
        Err(e) => {
            tracing::debug!(namespace = %shared.config.namespace, error = %e, "finish failed; retried");
            false
        }
    }
}

fn flow_outcome(e: &Ending) -> FlowOutcome<'_> {
    match &e.flow {
        Some((flow, class)) => FlowOutcome {
            flow,
            class: *class,
        },
        None => FlowOutcome {
            flow: "",
            class: FlowClass::Neutral,
        },
    }
}

/// Retries at once the claims waiting for the flow keys of recorded
/// runs: each gave its permit back.
fn nudge_flows(shared: &Arc<NodeShared>, batch: &[Ending], recorded: &[bool]) {
    let now = Instant::now();
    for (e, _) in batch.iter().zip(recorded).filter(|&(_, &r)| r) {
        if let Some((flow, _)) = &e.flow
            && let Some(at) = shared.flow_waits.nudge(flow, now)
        {
            starter::schedule_retry(shared, flow.clone(), at);
        }
    }
}

/// Logs at TRACE, per run, the store's answer to its outcome: a run
/// whose `Done` was recorded never runs again, one refused (its lease
/// had passed, another run holds the timer) may. A watcher tells an
/// at-least-once run again from a duplicate by these events; the check
/// keeps a busy node from formatting them for nobody.
fn log_settled(shared: &NodeShared, batch: &[Ending], recorded: &[bool]) {
    if !tracing::enabled!(tracing::Level::TRACE) {
        return;
    }
    for (e, &r) in batch.iter().zip(recorded) {
        tracing::trace!(
            namespace = %shared.config.namespace,
            key = ?e.key,
            fence = e.fence,
            recorded = r,
            "outcome settled"
        );
    }
}

/// Logs each run the store recorded as a dead letter.
fn log_dead_letters(shared: &NodeShared, batch: &[Ending], recorded: &[bool]) {
    for (e, _) in batch.iter().zip(recorded).filter(|&(_, &r)| r) {
        if let Finish::Dead { reason } = &e.finish {
            tracing::warn!(
                namespace = %shared.config.namespace,
                key = ?e.key,
                fence = e.fence,
                reason = ?reason,
                "timer became a dead letter"
            );
        }
    }
}

/// Stops renewing the runs of these outcomes.
fn forget(shared: &NodeShared, batch: &[Ending]) {
    for e in batch {
        shared.runs.forget(&e.key, e.fence);
    }
}
