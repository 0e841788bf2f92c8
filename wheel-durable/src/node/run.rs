//! The blocking executor: handler worker threads, each of which takes a
//! started timer, runs the handler, and hands the outcome to the finisher.
//!
//! Owns no state: takes from [`Runs`](super::runs::Runs) and builds the
//! outcome with `outcome.rs`. Nothing a worker runs may leave a started
//! timer renewed forever: the handler runs under `catch_unwind` (a panic
//! counts as `Retry`), and a panic anywhere else between the start and the
//! hand-over (our own code, a retry policy) unwinds through a
//! [`RunGuard`](super::runs::RunGuard) that stops the renewals, so the
//! run's lease ends and the store hands the timer to another run. The
//! worker itself survives and takes the next timer.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use super::outcome::{class_of, fired_of, hand_over, log_panic, panic_message, settle};
use super::runs::Started;
use super::shared::NodeShared;
use super::starter;
use crate::Outcome;

/// A worker thread's loop, until shutdown closes the runs.
pub(super) fn work(shared: &Arc<NodeShared>) {
    while let Some(started) = shared.runs.take() {
        starter::resume(shared);
        // The guard inside has already cleaned up after a panic.
        let _ = catch_unwind(AssertUnwindSafe(|| run(shared, started)));
    }
}

fn run(shared: &NodeShared, started: Started) {
    let flow = started.flow.clone();
    let fired = fired_of(started);
    let guard = shared.runs.guard(&fired.key, fired.fence);
    let handled = catch_unwind(AssertUnwindSafe(|| (shared.config.handler)(&fired)));
    let (outcome, flow) = match handled {
        Ok(outcome) => {
            let flow = flow.map(|f| (f, class_of(&outcome)));
            (outcome, flow)
        }
        Err(panic) => {
            log_panic(
                shared,
                &fired.key,
                fired.attempt,
                fired.fence,
                panic_message(&*panic),
            );
            // A panic is this node's fault, not the flow key's target's.
            (Outcome::Retry, None)
        }
    };
    let finish = settle(shared, fired.attempt, outcome);
    hand_over(shared, fired.key, fired.fence, finish, flow);
    guard.disarm();
}
