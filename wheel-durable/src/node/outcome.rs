//! From a started run to its outcome, whichever executor ran the handler:
//! the blocking workers (`run.rs`) and the async tasks (`tasks.rs`) both
//! build the handler's [`Fired`] here, turn its [`Outcome`] (or its panic)
//! into what the store records, and hand that to the finisher. Leases,
//! fences, retries and dead letters do not know how the handler ran.
//!
//! Owns no state. Touches the counters (retried, failed), and
//! [`Finishes`](super::finishes::Finishes) through [`hand_over`], which
//! forgets the run in [`Runs`](super::runs::Runs) when the finisher is
//! gone.

use std::sync::atomic::Ordering;

use super::runs::Started;
use super::shared::NodeShared;
use crate::retry::gave_up;
use crate::store::Finish;
use crate::store::flow_state::FlowClass;
use crate::time::{millis_ceil, system_time_of};
use crate::{Fired, Outcome};

/// What the handler is given for a started timer.
pub(super) fn fired_of(started: Started) -> Fired {
    let c = started.claim;
    Fired {
        schedule: crate::ScheduleRun::of_key(&c.key),
        key: c.key,
        due: system_time_of(c.due),
        first_due: system_time_of(c.first_due),
        payload: c.payload,
        attempt: started.attempt,
        fence: c.fence,
        first_fence: c.first_fence,
    }
}

/// Logs a handler's panic; the caller counts the run as a retry.
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

/// The text a panic was raised with, if it was a string.
pub(super) fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not a string)")
}

/// Gives a run's outcome to the finisher, with its flow key and class if
/// it has a flow key.
pub(super) fn hand_over(
    shared: &NodeShared,
    key: String,
    fence: u64,
    finish: Finish,
    flow: Option<(String, FlowClass)>,
) {
    if let Err(e) = shared
        .finishes
        .hand_over(key, fence, finish, flow, shared.config.lease)
    {
        // Only while stopping, after the finisher is gone (it never is
        // before the workers): the lease ends the run.
        shared.runs.forget(&e.key, e.fence);
    }
}

/// How a handler's outcome counts for its flow key's breaker: done is a
/// success, a retry (a connection error, a timeout, a 5xx or a 429 for a
/// callback) a failure, a refusal neither.
pub(super) fn class_of(outcome: &Outcome) -> FlowClass {
    match outcome {
        Outcome::Done => FlowClass::Success,
        Outcome::Retry => FlowClass::Failure { retry_after: 0 },
        Outcome::RetryAfter(d) => FlowClass::Failure {
            retry_after: millis_ceil(*d).unwrap_or(u64::MAX),
        },
        Outcome::Fail(_) => FlowClass::Neutral,
    }
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
