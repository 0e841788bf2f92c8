//! The firing path: from a claimed timer's instant to its `finish`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Held, NodeShared, Running};
use crate::durable::retry::gave_up;
use crate::durable::store::{Claimed, Finish, Millis, Start};
use crate::durable::time::system_time_of;
use crate::durable::{Fired, Outcome};

/// Owns a claim inside its scheduler closure. Dropped without firing while
/// the node stops (the scheduler dropped the closure), it hands the claim
/// back to the store so that another node fires it on time.
pub(super) struct ClaimGuard {
    shared: Arc<NodeShared>,
    claim: Option<Claimed>,
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        if let Some(c) = self.claim.take() {
            if self.shared.stopping.load(Ordering::SeqCst) {
                release(&self.shared, &c);
            }
        }
    }
}

fn release(shared: &NodeShared, c: &Claimed) {
    if shared.store.release(&c.key, c.fence).is_err() {
        // The lease ends it instead: another node fires it after the lease.
        shared.counters.store_errors.fetch_add(1, Ordering::Relaxed);
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
    let mut held = shared.held.lock().unwrap();
    let scheduled = shared.scheduler.schedule_at(at, move || {
        let c = guard.claim.take().expect("a claim fires once");
        fire(&guard.shared, c);
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

/// Runs on a worker at the timer's instant.
fn fire(shared: &Arc<NodeShared>, c: Claimed) {
    unhold(shared, &c);
    if shared.stopping.load(Ordering::SeqCst) {
        release(shared, &c);
        return;
    }
    match shared.store.start(&c.key, c.fence, shared.lease_ms) {
        Err(_) => {
            // Still claimed by us: try again shortly; after the lease it is
            // another pass's (or node's) to fire.
            shared.counters.store_errors.fetch_add(1, Ordering::Relaxed);
            hold(shared, c, Instant::now() + Duration::from_millis(50));
        }
        Ok(Start::Stale) => {
            shared.counters.stale.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Start::NotYet { now, due }) => {
            hold(shared, c, Instant::now() + Duration::from_millis(due - now));
        }
        Ok(Start::Started { now, attempt }) => run(shared, c, now, attempt),
    }
}

/// Forgets the held entry of this claim (a newer claim's entry stays).
fn unhold(shared: &NodeShared, c: &Claimed) {
    let mut held = shared.held.lock().unwrap();
    let was_full = held.len() >= shared.config.max_held;
    if held.get(&c.key).is_some_and(|h| h.fence == c.fence) {
        held.remove(&c.key);
        if was_full {
            shared.signal.notify();
        }
    }
}

fn run(shared: &NodeShared, c: Claimed, now: Millis, attempt: u32) {
    shared.counters.fired.fetch_add(1, Ordering::Relaxed);
    let late = Duration::from_millis(now.saturating_sub(c.due));
    shared.lateness.lock().unwrap().record(late);
    let running = Running {
        fence: c.fence,
        renewed: Instant::now(),
    };
    shared
        .running
        .lock()
        .unwrap()
        .insert(c.key.clone(), running);
    let fired = Fired {
        key: c.key,
        due: system_time_of(c.due),
        payload: c.payload,
        attempt,
        fence: c.fence,
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| (shared.config.handler)(&fired)))
        .unwrap_or(Outcome::Retry);
    let finish = settle(shared, attempt, outcome);
    report(shared, &fired, &finish);
    let mut running = shared.running.lock().unwrap();
    if running
        .get(&fired.key)
        .is_some_and(|r| r.fence == fired.fence)
    {
        running.remove(&fired.key);
    }
}

/// What the store records for a handler's outcome on this attempt.
fn settle(shared: &NodeShared, attempt: u32, outcome: Outcome) -> Finish {
    let policy = &shared.config.retry;
    let (wait, why) = match outcome {
        Outcome::Done => return Finish::Done,
        Outcome::Fail(reason) => {
            shared.counters.failed.fetch_add(1, Ordering::Relaxed);
            return Finish::Dead { reason };
        }
        Outcome::Retry => (policy.delay(attempt), "the handler asked to retry"),
        Outcome::RetryAfter(d) => (
            policy.delay(attempt).map(|_| d),
            "the handler asked to retry later",
        ),
    };
    match wait {
        Some(d) => {
            shared.counters.retried.fetch_add(1, Ordering::Relaxed);
            Finish::Retry {
                delay: crate::durable::time::millis_ceil(d).unwrap_or(u64::MAX),
            }
        }
        None => {
            shared.counters.failed.fetch_add(1, Ordering::Relaxed);
            Finish::Dead {
                reason: gave_up(attempt, why),
            }
        }
    }
}

/// Tells the store how the run ended, retrying a failed call while the
/// run's lease lasts (after that, the store hands the timer to another run).
fn report(shared: &NodeShared, fired: &Fired, finish: &Finish) {
    let give_up = Instant::now() + shared.config.lease;
    let mut wait = Duration::from_millis(10);
    while shared
        .store
        .finish(&fired.key, fired.fence, finish)
        .is_err()
    {
        shared.counters.store_errors.fetch_add(1, Ordering::Relaxed);
        if Instant::now() + wait >= give_up {
            return;
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_millis(500));
    }
}
