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
use std::sync::Arc;
use std::time::Instant;

use super::{starter, Ending, NodeShared, Started};
use crate::retry::gave_up;
use crate::store::Finish;
use crate::sync::lock;
use crate::time::{millis_ceil, system_time_of};
use crate::{Fired, Outcome};

pub(super) fn work(shared: &Arc<NodeShared>) {
    while let Some(started) = shared.to_run.take_one() {
        starter::resume(shared);
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

    pub(super) fn disarm(mut self) {
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
    let fired = fired_of(started);
    let guard = RunGuard::new(shared, &fired.key, fired.fence);
    let outcome = catch_unwind(AssertUnwindSafe(|| (shared.config.handler)(&fired)))
        .unwrap_or_else(|panic| {
            log_panic(
                shared,
                &fired.key,
                fired.attempt,
                fired.fence,
                panic_message(&*panic),
            );
            Outcome::Retry
        });
    let finish = settle(shared, fired.attempt, outcome);
    hand_over(shared, fired.key, fired.fence, finish);
    guard.disarm();
}

/// What the handler is given for a started timer.
pub(super) fn fired_of(started: Started) -> Fired {
    let c = started.claim;
    Fired {
        key: c.key,
        due: system_time_of(c.due),
        first_due: system_time_of(c.first_due),
        payload: c.payload,
        attempt: started.attempt,
        fence: c.fence,
        first_fence: c.first_fence,
    }
}

pub(super) fn log_panic(shared: &NodeShared, key: &str, attempt: u32, fence: u64, panic: &str) {
    tracing::error!(
        namespace = %shared.config.namespace,
        key = ?key,
        attempt,
        fence,
        panic,
        "handler panicked; the run counts as a retry"
    );
}

/// Gives a run's outcome to the finisher.
pub(super) fn hand_over(shared: &NodeShared, key: String, fence: u64, finish: Finish) {
    let ending = Ending {
        key,
        fence,
        finish,
        give_up: Instant::now() + shared.config.lease,
    };
    if let Err(e) = shared.to_finish.push(ending) {
        // Only while stopping, after the finisher is gone (it never is
        // before the workers): the lease ends the run.
        let mut running = lock(&shared.running);
        shared.forget_run(&mut running, &e.key, e.fence);
    }
}

/// The text a panic was raised with, if it was a string.
pub(super) fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not a string)")
}

/// What the store records for a handler's outcome on this attempt.
pub(super) fn settle(shared: &NodeShared, attempt: u32, outcome: Outcome) -> Finish {
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

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::RunGuard;
    use crate::node::{Node, NodeConfig, Running};
    use crate::store::model::Model;
    use crate::store::StoreClock;
    use crate::sync::lock;
    use crate::{Fired, Outcome, RetryPolicy};

    fn node() -> Node {
        let config = NodeConfig {
            namespace: "test".into(),
            handler: Arc::new(|_: &Fired| Outcome::Done),
            workers: 1,
            lease: Duration::from_secs(5),
            window: Duration::from_secs(2),
            poll: Duration::from_millis(500),
            max_held: 10,
            retry: RetryPolicy::new(),
            #[cfg(feature = "tokio")]
            tasks: None,
        };
        Node::start(Arc::new(Model::new(StoreClock::Real)), config).unwrap()
    }

    fn enter(node: &Node, key: &str, fence: u64) {
        let r = Running {
            fence,
            renewed: Instant::now(),
        };
        lock(&node.shared().running).insert(key.into(), r);
    }

    #[test]
    fn a_panic_between_start_and_hand_over_stops_the_renewals() {
        let node = node();
        let shared = node.shared();
        enter(&node, "a", 7);
        enter(&node, "b", 9);
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            let _guard = RunGuard::new(shared, "a", 7);
            panic!("our own code failed mid run");
        }));
        assert!(unwound.is_err());
        // A guard of an older fence leaves the newer run alone.
        drop(RunGuard::new(shared, "b", 8));
        // A disarmed guard (the outcome was handed over) leaves it too.
        RunGuard::new(shared, "b", 9).disarm();
        let running = lock(&shared.running);
        assert!(
            !running.contains_key("a"),
            "no renewal for the run that unwound"
        );
        assert_eq!(running.get("b").map(|r| r.fence), Some(9));
    }
}
