//! The handler workers: each takes a started timer, runs the handler, and
//! hands the outcome to the finisher.
//!
//! Nothing a worker runs may leave a started timer renewed forever: the
//! handler runs under `catch_unwind` (a panic counts as `Retry`), and a
//! panic anywhere else between the start and the hand-over (our own code,
//! a retry policy) unwinds through a [`RunGuard`] that stops the renewals,
//! so the run's lease ends and the store hands the timer to another run.
//! The worker itself survives and takes the next timer.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{Ending, NodeShared, Started};
use crate::durable::retry::gave_up;
use crate::durable::store::Finish;
use crate::durable::time::{millis_ceil, system_time_of};
use crate::durable::{Fired, Outcome};
use crate::sync::lock;

pub(super) fn work(shared: &NodeShared) {
    while let Some(started) = shared.to_run.take_one() {
        // The guard inside has already cleaned up after a panic.
        let _ = catch_unwind(AssertUnwindSafe(|| run(shared, started)));
    }
}

/// Stops the renewals of a run unless disarmed: dropped while unwinding,
/// it lets the run's lease end.
pub(super) struct RunGuard<'a> {
    shared: &'a NodeShared,
    key: String,
    fence: u64,
    armed: bool,
}

impl<'a> RunGuard<'a> {
    pub(super) fn new(shared: &'a NodeShared, key: &str, fence: u64) -> RunGuard<'a> {
        RunGuard {
            shared,
            key: key.to_owned(),
            fence,
            armed: true,
        }
    }

    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut running = lock(&self.shared.running);
            self.shared.forget_run(&mut running, &self.key, self.fence);
        }
    }
}

fn run(shared: &NodeShared, started: Started) {
    let c = started.claim;
    let guard = RunGuard::new(shared, &c.key, c.fence);
    let fired = Fired {
        key: c.key,
        due: system_time_of(c.due),
        payload: c.payload,
        attempt: started.attempt,
        fence: c.fence,
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| (shared.config.handler)(&fired)))
        .unwrap_or(Outcome::Retry);
    let finish = settle(shared, fired.attempt, outcome);
    let ending = Ending {
        key: fired.key,
        fence: fired.fence,
        finish,
        give_up: Instant::now() + shared.config.lease,
    };
    if let Err(e) = shared.to_finish.push(ending) {
        // Only while stopping, after the finisher is gone (it never is
        // before the workers): the lease ends the run.
        let mut running = lock(&shared.running);
        shared.forget_run(&mut running, &e.key, e.fence);
    }
    guard.disarm();
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
                delay: millis_ceil(d).unwrap_or(u64::MAX),
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
