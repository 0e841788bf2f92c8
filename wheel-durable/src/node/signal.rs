//! Wakes the claimer early: at once (shutdown, room freed in the node), or
//! for a store notification that a timer became pending with a due time,
//! which the claimer weighs against its plan ([`super::claimer`]).
//!
//! Owns the notifications not yet seen. Anyone notifies (the store's
//! watcher, a claim leaving the holdings, the starter, shutdown); only the
//! claimer waits.

use std::time::Instant;

use crate::store::Millis;
use crate::sync::{Condvar, Mutex, lock, wait_until};

/// Why [`Signal::wait_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Woken {
    /// `until` came.
    Timeout,
    /// Claim at once.
    Now,
    /// Timers became pending; the earliest is due at this store time.
    Due(Millis),
}

#[derive(Default)]
struct Pending {
    now: bool,
    due: Option<Millis>,
}

/// Notifications for the claimer, folded together until it looks.
#[derive(Default)]
pub(super) struct Signal {
    pending: Mutex<Pending>,
    cond: Condvar,
}

impl Signal {
    /// Wakes the claimer to claim at once.
    pub(super) fn notify(&self) {
        lock(&self.pending).now = true;
        self.cond.notify_one();
    }

    /// Tells the claimer a timer due at `due` became pending; of several
    /// such notifications before it looks, it sees the earliest.
    pub(super) fn notify_due(&self, due: Millis) {
        let mut p = lock(&self.pending);
        p.due = Some(p.due.map_or(due, |d| d.min(due)));
        drop(p);
        self.cond.notify_one();
    }

    /// Waits until notified or `until`, and clears what it reports.
    pub(super) fn wait_until(&self, until: Instant) -> Woken {
        let mut p = lock(&self.pending);
        loop {
            if std::mem::take(&mut p.now) {
                p.due = None;
                return Woken::Now;
            }
            if let Some(due) = p.due.take() {
                return Woken::Due(due);
            }
            let (guard, over) = wait_until(&self.cond, p, until);
            if over {
                return Woken::Timeout;
            }
            p = guard;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn notifications_fold_into_the_earliest_and_now_wins() {
        let s = Signal::default();
        let soon = Instant::now() + Duration::from_millis(1);
        assert_eq!(s.wait_until(soon), Woken::Timeout);
        s.notify_due(500);
        s.notify_due(200);
        s.notify_due(900);
        assert_eq!(s.wait_until(soon), Woken::Due(200));
        assert_eq!(s.wait_until(soon), Woken::Timeout);
        s.notify_due(7);
        s.notify();
        assert_eq!(s.wait_until(soon), Woken::Now);
        assert_eq!(s.wait_until(soon), Woken::Timeout);
    }
}
