//! Holding a claim: from the claim until the scheduler's instant for it,
//! when the claim goes to the starter.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::{starter, Held, NodeShared};
use crate::store::Claimed;
use crate::sync::lock;

/// Owns a claim inside its scheduler closure. Dropped without firing while
/// the node stops (the scheduler dropped the closure), it hands the claim
/// back, so that another node fires it on time.
struct ClaimGuard {
    shared: Arc<NodeShared>,
    claim: Option<Claimed>,
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        if let Some(c) = self.claim.take() {
            if self.shared.stopping.load(Ordering::SeqCst) {
                lock(&self.shared.hand_back).push(c);
            }
        }
    }
}

/// Schedules `c` in the node's wheel at `at` and records it as held.
pub(super) fn hold(shared: &Arc<NodeShared>, c: Claimed, at: Instant) {
    let key = c.key.clone();
    let fence = c.fence;
    let mut guard = ClaimGuard {
        shared: shared.clone(),
        claim: Some(c),
    };
    let mut held = lock(&shared.held);
    let scheduled = shared.scheduler.schedule_at(at, move || {
        if let Some(c) = guard.claim.take() {
            due(&guard.shared, c);
        }
    });
    // On an error the scheduler is shutting down: the guard inside the
    // refused closure has already handed the claim back.
    if let Ok(handle) = scheduled {
        if let Some(old) = held.insert(key, Held { fence, handle }) {
            // A newer claim of the same key replaces an older one, whose
            // start the store would refuse anyway.
            old.handle.cancel();
        }
    }
}

/// Runs on a scheduler worker at the claim's instant: the claim is no
/// longer held, and is started (or handed back, while the node stops).
fn due(shared: &Arc<NodeShared>, c: Claimed) {
    unhold(shared, &c);
    if shared.stopping.load(Ordering::SeqCst) {
        lock(&shared.hand_back).push(c);
        return;
    }
    starter::offer(shared, c);
}

/// Forgets the held entry of this claim (a newer claim's entry stays).
/// When the node's holdings fall to half of `max_claimed`, the claimer
/// (which stops planning claims while the node is full) claims again: in
/// one batch for half the room, not one claim per freed place.
fn unhold(shared: &NodeShared, c: &Claimed) {
    let mut held = lock(&shared.held);
    if held.get(&c.key).is_some_and(|h| h.fence == c.fence) {
        held.remove(&c.key);
        if held.len() == shared.config.max_held / 2 {
            shared.signal.notify();
        }
    }
}
