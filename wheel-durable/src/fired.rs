//! What a handler is given ([`Fired`]) and what it answers ([`Outcome`]).
//!
//! Node state: none: a [`Fired`] is a copy of one run, owned by the handler
//! that gets it.

use std::time::{Duration, SystemTime};

/// A timer that came due, as handed to the handler.
///
/// The handler may be called more than once for one timer only after a
/// failure (a node died or stalled past its lease while running it, or the
/// handler asked for a retry); `attempt` counts the runs and `fence` tells
/// runs apart, while `first_fence` names the delivery they all belong to.
///
/// # Examples
///
/// ```
/// use std::time::SystemTime;
/// use wheel_durable::{Fired, Outcome};
///
/// fn handle(t: &Fired) -> Outcome {
///     if t.payload.is_empty() { Outcome::Fail("empty order".into()) } else { Outcome::Done }
/// }
/// let now = SystemTime::now();
/// let t = Fired {
///     key: "order:17".into(), due: now, first_due: now, payload: b"close".to_vec(), attempt: 1, fence: 9,
///     first_fence: 9, schedule: None,
/// };
/// assert_eq!(handle(&t), Outcome::Done);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// The timer's key.
    pub key: String,
    /// When this run was due (store time): after a retry, the retry's due
    /// time.
    pub due: SystemTime,
    /// When the timer was first due (store time): the due time it was
    /// added, rescheduled or revived with, the same on every attempt.
    pub first_due: SystemTime,
    /// The payload given when it was added.
    pub payload: Vec<u8>,
    /// Which run this is: 1 for the first, 2 after one retry or one lost
    /// lease, and so on.
    pub attempt: u32,
    /// A number that strictly increases every time any node claims this
    /// key. A callback target that remembers the highest fence it accepted
    /// for a key can refuse a stale duplicate.
    pub fence: u64,
    /// The fence of the timer's first started run: the same on every
    /// attempt (retries, and runs again after a lost lease, on any node),
    /// and new for a timer added again under the same key, or revived from
    /// the dead letters. Equal to `fence` on the first attempt. A receiver
    /// can use the key and this number to drop deliveries it already
    /// handled; HTTP callbacks send an id made from it as `webhook-id`.
    pub first_fence: u64,
    /// For a run of a schedule, which schedule and slot it is (from its
    /// key); `None` for any other timer.
    pub schedule: Option<crate::ScheduleRun>,
}

/// What the handler reports back after a run.
///
/// A handler that panics counts as [`Outcome::Retry`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_durable::Outcome;
///
/// let busy = Outcome::RetryAfter(Duration::from_secs(30));
/// assert_ne!(busy, Outcome::Done);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The work is done: the timer is removed.
    Done,
    /// Try again later, after the back-off of the node's
    /// [`RetryPolicy`](crate::RetryPolicy).
    Retry,
    /// Try again after this delay (counts as an attempt like `Retry`).
    RetryAfter(Duration),
    /// Give up: the timer becomes a dead letter with this reason.
    Fail(String),
}
