//! Holding a claim: from the claim until the scheduler's instant for it,
//! when the claim goes where its holder said.
//!
//! Owns no state: a held claim lives in its scheduler closure, and its
//! entry in [`Holdings`](super::holdings::Holdings). Called by the claimer
//! (new claims) and the starter (claims the store answered "not yet", or a
//! start that failed); both name what happens at the instant (the
//! starter's `offer`), so this module knows nothing of starting.

use std::sync::Arc;
use std::time::Instant;

use super::shared::NodeShared;
use crate::store::Claimed;

/// What takes a claim at its instant.
pub(super) type Then = fn(&Arc<NodeShared>, Claimed);

/// Owns a claim inside its scheduler closure. Dropped without firing while
/// the node stops (the scheduler dropped the closure), it hands the claim
/// back, so that another node fires it on time.
struct ClaimGuard {
    shared: Arc<NodeShared>,
    claim: Option<Claimed>,
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        if let Some(c) = self.claim.take()
            && self.shared.stopping()
        {
            self.shared.holdings.hand_back(c);
        }
    }
}

/// Schedules `c` in the node's wheel at `at`, records it as held, and at
/// the instant gives it to `then`.
pub(super) fn hold(shared: &Arc<NodeShared>, c: Claimed, at: Instant, then: Then) {
    let key = c.key.clone();
    let fence = c.fence;
    let mut guard = ClaimGuard {
        shared: shared.clone(),
        claim: Some(c),
    };
    // On an error the scheduler is shutting down: the guard inside the
    // refused closure has already handed the claim back.
    shared.holdings.hold(key, fence, || {
        shared.scheduler.schedule_at(at, move || {
            if let Some(c) = guard.claim.take() {
                due(&guard.shared, c, then);
            }
        })
    });
}

/// Runs on a scheduler worker at the claim's instant: the claim is no
/// longer held, and goes to `then` (or back, while the node stops).
fn due(shared: &Arc<NodeShared>, c: Claimed, then: Then) {
    unhold(shared, &c);
    if shared.stopping() {
        shared.holdings.hand_back(c);
        return;
    }
    then(shared, c);
}

/// Forgets the held entry of this claim (a newer claim's entry stays).
/// When the node's holdings fall to half of `max_claimed`, the claimer
/// (which stops planning claims while the node is full) claims again: in
/// one batch for half the room, not one claim per freed place.
fn unhold(shared: &NodeShared, c: &Claimed) {
    if shared.holdings.unhold(&c.key, c.fence) == Some(shared.config.max_held / 2) {
        shared.signal.notify();
    }
}
