//! Holdings: the claims this node holds and has not started.
//!
//! Owns `held` (each key claimed and scheduled in the node's wheel: its
//! fence and scheduler handle) and `hand_back` (claims not started while
//! the node stops, returned to the store in one call at the end of
//! shutdown, so that other nodes fire them on time).
//!
//! Who touches what: `hold.rs` enters a claim ([`Holdings::hold`]) and its
//! scheduled closure removes its own entry (same fence) when it fires
//! ([`Holdings::unhold`]); shutdown cancels every entry left
//! ([`Holdings::cancel_all`]). Anyone holding a claim it cannot start
//! because the node stops hands it back ([`Holdings::hand_back`]), and
//! shutdown takes them all at the end ([`Holdings::take_hand_backs`]).

use std::collections::HashMap;

use crate::store::Claimed;
use crate::sync::{Mutex, lock};
use wheel::TimerHandle;

type Map<V> = HashMap<String, V, ahash::RandomState>;

/// A claimed timer held in memory until its instant.
struct Held {
    fence: u64,
    handle: TimerHandle,
}

/// The claims this node holds, not started.
pub(super) struct Holdings {
    held: Mutex<Map<Held>>,
    hand_back: Mutex<Vec<Claimed>>,
}

impl Holdings {
    pub(super) fn new() -> Holdings {
        Holdings {
            held: Mutex::new(Map::default()),
            hand_back: Mutex::new(Vec::new()),
        }
    }

    /// Enters the claim of `key` with `fence`, scheduled by `schedule`.
    /// `schedule` runs under the lock: a closure that fires at once, on a
    /// scheduler worker, waits for the entry before it removes it, so no
    /// entry outlives its closure. On an error nothing is entered (the
    /// scheduler stops, and the refused closure handed its claim back).
    pub(super) fn hold<E>(
        &self,
        key: String,
        fence: u64,
        schedule: impl FnOnce() -> Result<TimerHandle, E>,
    ) {
        let mut held = lock(&self.held);
        if let Ok(handle) = schedule()
            && let Some(old) = held.insert(key, Held { fence, handle })
        {
            // A newer claim of the same key replaces an older one,
            // whose start the store would refuse anyway.
            old.handle.cancel();
        }
    }

    /// Forgets the entry of `key` if it is still the claim with `fence` (a
    /// newer claim's entry stays); how many claims are left held, if it
    /// was.
    pub(super) fn unhold(&self, key: &str, fence: u64) -> Option<usize> {
        let mut held = lock(&self.held);
        if held.get(key).is_some_and(|h| h.fence == fence) {
            held.remove(key);
            return Some(held.len());
        }
        None
    }

    /// How many claims are scheduled.
    pub(super) fn len(&self) -> usize {
        lock(&self.held).len()
    }

    /// Cancels every scheduled claim (at shutdown): each closure dropped
    /// hands its claim back.
    pub(super) fn cancel_all(&self) {
        // Cancelled outside the lock: dropping a closure runs its guard.
        let held: Vec<Held> = lock(&self.held).drain().map(|(_, h)| h).collect();
        for h in held {
            h.handle.cancel();
        }
    }

    /// Keeps a claim the node cannot start any more for the store.
    pub(super) fn hand_back(&self, c: Claimed) {
        lock(&self.hand_back).push(c);
    }

    /// Keeps claims the node cannot start any more for the store.
    pub(super) fn hand_back_all(&self, cs: impl IntoIterator<Item = Claimed>) {
        lock(&self.hand_back).extend(cs);
    }

    /// Every claim handed back so far (at the end of shutdown).
    pub(super) fn take_hand_backs(&self) -> Vec<Claimed> {
        std::mem::take(&mut *lock(&self.hand_back))
    }
}
