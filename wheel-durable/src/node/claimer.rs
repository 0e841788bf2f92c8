//! The claimer thread: moves timers due soon from the store into the node.
//!
//! It claims when its plan says so: when the earliest pending timer enters
//! the claim window, when the earliest lease may have ended, or at the
//! safety poll. A store notification ("a timer due at `d` became pending")
//! changes the plan only if the planned claim would come too late for `d`:
//! the claim moves to [`LEAD`] before `d`, and never sooner than
//! [`MIN_GAP`] after the last claim. So a burst of adds costs each node a
//! bounded number of claims (at most one per `MIN_GAP`, and none at all for
//! timers that the next planned claim takes in time), instead of one claim
//! per add on every node.
//!
//! It also re-plans schedules whose chain lost its pending run, at most
//! once per [`REPLAN_EVERY`] (the recovery step, `docs/durable.md`,
//! "Schedules").
//!
//! Owns no state besides its thread's locals (the plan, the back-off,
//! when it last re-planned schedules): it enters claims through `hold.rs` and `starter.rs`, renews through
//! [`Runs`](super::runs::Runs), plans by [`StoreTime`](super::clock::StoreTime)
//! and sleeps on [`Signal`](super::signal::Signal), the one thread that
//! waits on it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::clock::Reading;
use super::config::NodeConfig;
use super::hold::hold;
use super::shared::NodeShared;
use super::signal::Woken;
use super::starter;
use crate::store::{ClaimBatch, ClaimRequest, Fenced};
use crate::sync::Ordering;
use crate::time::Backoff;

/// A node claims timers entering the window at most this many times per
/// window: each claim then takes a step's worth of timers, at least
/// `window - window / STEPS` ahead of their due time, instead of a claim
/// for every millisecond's few timers.
const STEPS: u32 = 64;

/// How long before a notified due time the claim for it comes: room for
/// the claim's round trip and the scheduling.
const LEAD: Duration = Duration::from_millis(100);

/// The shortest time between two claims made for notifications.
const MIN_GAP: Duration = Duration::from_millis(5);

/// The first wait after a failed store call; doubles up to the poll.
const FIRST_BACKOFF: Duration = Duration::from_millis(20);

/// How far ahead a timer made pending is announced to the nodes: the
/// poll plus the claimer's lead, at most the claim window. Every node
/// claims at least once per poll, so a timer due later than that is taken
/// in time by a claim the node makes anyway; only sooner ones need a node
/// to claim early. (This assumes the nodes of a namespace share the poll
/// of the process that adds; a node polling more slowly may fire such a
/// timer late, never early.)
pub(crate) fn notify_window(config: &NodeConfig) -> Duration {
    (config.poll + LEAD).min(config.window)
}

/// The claimer thread's loop, until the node stops.
pub(super) fn run(shared: &Arc<NodeShared>) {
    let mut backoff = Backoff::new(FIRST_BACKOFF, shared.config.poll);
    let mut replanned: Option<Instant> = None;
    while !shared.stopping() {
        let claimed_at = Instant::now();
        let room = shared.config.max_held.saturating_sub(shared.held_count());
        let req = ClaimRequest {
            window: shared.window_ms,
            lease: shared.lease_ms,
            max: room.min(shared.store.batch_limits().claim),
            max_attempts: shared.config.retry.attempts(),
        };
        shared.counters.claims.fetch_add(1, Ordering::Relaxed);
        let mut plan = match shared.store.claim(&req) {
            Ok(batch) => {
                backoff.reset();
                log_takeovers(shared, &batch);
                let m = shared.observe(batch.now, Instant::now());
                let full = batch.timers.len() == req.max && req.max > 0;
                let next = next_wake(shared, &batch, m, claimed_at, room > batch.timers.len());
                // The store answers earliest due first; what is due already
                // starts in that order.
                let now = Instant::now();
                let mut due_now = Vec::new();
                for c in batch.timers {
                    let at = m.instant(c.due);
                    if at <= now {
                        due_now.push(c);
                    } else {
                        hold(shared, c, at, starter::offer);
                    }
                }
                starter::offer_due(shared, due_now);
                if full && room > req.max {
                    continue; // more are due: claim again at once
                }
                next
            }
            Err(e) => {
                shared.store_error();
                tracing::debug!(namespace = %shared.config.namespace, error = %e, "claim failed; retried");
                Instant::now() + backoff.next()
            }
        };
        renew(shared);
        if replanned.is_none_or(|at| at.elapsed() >= REPLAN_EVERY) {
            replan_schedules(shared);
            replanned = Some(Instant::now());
        }
        // A safety net: runs taken for handlers resume the starts that
        // waited for room, but a wake-up lost in a race waits no longer
        // than this.
        starter::resume(shared);
        // Fold notifications into the plan until it is time to claim.
        loop {
            match shared.signal.wait_until(plan.min(renew_due(shared))) {
                Woken::Timeout | Woken::Now => break,
                Woken::Due(due) => {
                    let map = shared.store_time.best();
                    let wanted = map.map_or(claimed_at, |m| m.instant(due));
                    let wanted = wanted.checked_sub(LEAD).unwrap_or(wanted);
                    plan = plan.min(wanted.max(claimed_at + MIN_GAP));
                }
            }
        }
    }
}

/// Schedules re-planned per look at most.
const REPLAN_BATCH: usize = 16;

/// How often the claimer looks for unplanned schedules at most: a store
/// call, which a claim loop at full speed would otherwise add to every
/// claim.
const REPLAN_EVERY: Duration = Duration::from_secs(1);

/// Gives chains left without a pending run (a run started without its
/// step) their next run: the recovery step of the schedule rules.
fn replan_schedules(shared: &NodeShared) {
    if let Err(e) = crate::schedule_store::replan_unplanned(&*shared.store, REPLAN_BATCH) {
        tracing::debug!(namespace = %shared.config.namespace, error = %e, "re-planning schedules failed; retried");
    }
}

/// Logs the leases a claim found over: timers of a node that stopped or
/// stalled, taken back for any node to run again.
fn log_takeovers(shared: &NodeShared, batch: &ClaimBatch) {
    let ns = &*shared.config.namespace;
    // The first few keys, in lease order; the counts say how many in all.
    let keys = &batch.expired_keys;
    if batch.reclaimed > 0 {
        tracing::warn!(
            namespace = %ns,
            timers = batch.reclaimed,
            ?keys,
            "leases passed (a node stopped or stalled): timers taken back to run again"
        );
    }
    if batch.expired_dead > 0 {
        tracing::warn!(
            namespace = %ns,
            timers = batch.expired_dead,
            ?keys,
            "leases passed on the last attempt: timers made dead letters"
        );
    }
}

/// When to claim next: when the earliest pending timer enters the window
/// (but at most once per [`STEPS`]th of the window, and only while the node
/// has room), when the earliest lease may have ended, or at the safety
/// poll.
fn next_wake(
    shared: &NodeShared,
    batch: &ClaimBatch,
    map: Reading,
    claimed_at: Instant,
    has_room: bool,
) -> Instant {
    // `map` may be a reading of seconds ago: the poll counts from now.
    let mut wake = claimed_at + shared.config.poll;
    if let Some(due) = batch.next_due.filter(|_| has_room) {
        let enters = map.instant(due.saturating_sub(shared.window_ms));
        wake = wake.min(enters.max(claimed_at + shared.config.window / STEPS));
    }
    if let Some(lease) = batch.next_lease {
        wake = wake.min(map.instant(lease.saturating_add(1)));
    }
    wake
}

/// Renews, in batched store calls, the lease of every run not renewed for
/// a third of the lease.
fn renew(shared: &NodeShared) {
    let every = shared.config.lease / 3;
    let now = Instant::now();
    // A renewal writes per timer a subset of what a finish writes: the
    // finish limit bounds its time in the store too.
    let batch = shared.store.batch_limits().finish;
    let stale = shared.runs.to_renew(every, now);
    for part in stale.chunks(batch) {
        let held: Vec<Fenced<'_>> = part
            .iter()
            .map(|(key, fence)| Fenced { key, fence: *fence })
            .collect();
        if let Err(e) = shared.store.renew(&held, shared.lease_ms) {
            shared.store_error();
            tracing::debug!(namespace = %shared.config.namespace, error = %e, "renewal failed; retried");
            continue;
        }
        shared.runs.renewed(part, now);
    }
    // Claims waiting for their flow key: renewed too, so that a long wait
    // behind a rate does not lose them to their lease.
    let waiting = shared.flow_waits.to_renew(every, now);
    for part in waiting.chunks(batch) {
        let held: Vec<Fenced<'_>> = part
            .iter()
            .map(|(key, fence)| Fenced { key, fence: *fence })
            .collect();
        match shared.store.renew(&held, shared.lease_ms) {
            Ok(kept) => shared.flow_waits.renewed(part, &kept, now),
            Err(e) => {
                shared.store_error();
                tracing::debug!(namespace = %shared.config.namespace, error = %e, "renewal failed; retried");
            }
        }
    }
}

/// The next instant a running handler's lease wants renewing.
fn renew_due(shared: &NodeShared) -> Instant {
    let every = shared.config.lease / 3;
    let far = Instant::now() + shared.config.poll;
    shared
        .runs
        .next_renewal(every)
        .map_or(far, |at| at.min(far))
}
