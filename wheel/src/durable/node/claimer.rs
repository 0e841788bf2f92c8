//! The claimer thread: moves timers due soon from the store into the node.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::fire::hold;
use super::NodeShared;
use crate::durable::store::{ClaimBatch, ClaimRequest, Millis};

/// Timers claimed by one store call at most: bounds how long one claim
/// holds the store (a Redis script blocks the server while it runs).
const CLAIM_BATCH: usize = 512;

/// The first wait after a failed store call; doubles up to the poll.
const FIRST_BACKOFF: Duration = Duration::from_millis(20);

pub(super) fn run(shared: &Arc<NodeShared>) {
    let mut backoff = FIRST_BACKOFF;
    while !shared.stopping.load(Ordering::SeqCst) {
        let room = shared.config.max_held.saturating_sub(shared.held_count());
        let req = ClaimRequest {
            window: shared.window_ms,
            lease: shared.lease_ms,
            max: room.min(CLAIM_BATCH),
            max_attempts: shared.config.retry.attempts(),
        };
        let wake_at = match shared.store.claim(&req) {
            Ok(batch) => {
                backoff = FIRST_BACKOFF;
                let received = Instant::now();
                let full = batch.timers.len() == req.max && req.max > 0;
                let next = next_wake(shared, &batch, received);
                for c in batch.timers {
                    let at = received + Duration::from_millis(c.due.saturating_sub(batch.now));
                    hold(shared, c, at);
                }
                if full && room > req.max {
                    continue; // more are due: claim again at once
                }
                next
            }
            Err(_) => {
                shared.counters.store_errors.fetch_add(1, Ordering::Relaxed);
                backoff = (backoff * 2).min(shared.config.poll);
                Instant::now() + backoff
            }
        };
        renew(shared);
        shared.signal.wait_until(wake_at.min(renew_due(shared)));
    }
}

/// When to claim next: when the earliest pending timer enters the window,
/// when the earliest lease may have ended, or at the safety poll.
fn next_wake(shared: &NodeShared, batch: &ClaimBatch, received: Instant) -> Instant {
    let after = |at: Millis| received + Duration::from_millis(at.saturating_sub(batch.now));
    let mut wake = received + shared.config.poll;
    if let Some(due) = batch.next_due {
        wake = wake.min(after(due.saturating_sub(shared.window_ms)));
    }
    if let Some(lease) = batch.next_lease {
        wake = wake.min(after(lease.saturating_add(1)));
    }
    wake
}

/// Renews the lease of every run not renewed for a third of the lease.
fn renew(shared: &NodeShared) {
    let every = shared.config.lease / 3;
    let now = Instant::now();
    let stale: Vec<(String, u64)> = shared
        .running
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, r)| now.duration_since(r.renewed) >= every)
        .map(|(k, r)| (k.clone(), r.fence))
        .collect();
    for (key, fence) in stale {
        match shared.store.renew(&key, fence, shared.lease_ms) {
            Ok(_) => {
                if let Some(r) = shared.running.lock().unwrap().get_mut(&key) {
                    r.renewed = now;
                }
            }
            Err(_) => {
                shared.counters.store_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The next instant a running handler's lease wants renewing.
fn renew_due(shared: &NodeShared) -> Instant {
    let every = shared.config.lease / 3;
    let far = Instant::now() + shared.config.poll;
    shared
        .running
        .lock()
        .unwrap()
        .values()
        .map(|r| r.renewed + every)
        .min()
        .map_or(far, |at| at.min(far))
}
