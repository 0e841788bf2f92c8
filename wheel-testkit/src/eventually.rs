//! A bounded wait for a condition: polls until it holds and fails the test
//! with a message naming what was awaited once the bound passes, so that a
//! lost wake-up or a stuck node is a failure, never a hang.
//!
//! The bound is a liveness limit, not a timing figure: it is far above
//! what any condition takes on a loaded machine, and no test reads how
//! long the wait took.

use std::time::{Duration, Instant};

/// How long [`eventually`] waits before failing: far longer than anything
/// a test waits for takes, even on a loaded two-core machine.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// assert!(wheel_testkit::LIVENESS >= Duration::from_secs(10));
/// ```
pub const LIVENESS: Duration = Duration::from_secs(30);

/// The first pause between two polls; it doubles up to [`MAX_PAUSE`], so a
/// condition that holds soon is seen soon and a long wait costs little.
const FIRST_PAUSE: Duration = Duration::from_millis(1);

/// The longest pause between two polls.
const MAX_PAUSE: Duration = Duration::from_millis(20);

/// Polls `cond` until it returns true; panics with "timed out after
/// [`LIVENESS`] waiting for `what`" if it has not by then.
///
/// # Panics
///
/// When `cond` is still false after [`LIVENESS`], or when `cond` panics.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
///
/// let done = Arc::new(AtomicBool::new(false));
/// let flag = done.clone();
/// std::thread::spawn(move || flag.store(true, Ordering::SeqCst));
/// wheel_testkit::eventually("the thread to run", || done.load(Ordering::SeqCst));
/// ```
#[track_caller]
pub fn eventually(what: &str, cond: impl FnMut() -> bool) {
    eventually_within(LIVENESS, what, cond);
}

/// [`eventually`] with a bound of the caller's: for a wait that must fail
/// sooner (a test of a liveness bound of its own) or may take longer.
///
/// # Panics
///
/// When `cond` is still false after `limit`, or when `cond` panics.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let start = Instant::now();
/// wheel_testkit::eventually_within(Duration::from_secs(60), "5 ms to pass", || {
///     start.elapsed() >= Duration::from_millis(5)
/// });
/// ```
#[track_caller]
pub fn eventually_within(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    let mut pause = FIRST_PAUSE;
    while !cond() {
        assert!(
            Instant::now() < until,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(pause);
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_that_holds_returns_at_once() {
        let mut polls = 0;
        eventually("a true condition", || {
            polls += 1;
            true
        });
        assert_eq!(polls, 1);
    }

    #[test]
    fn a_condition_is_polled_until_it_holds() {
        let mut polls = 0;
        eventually("the third poll", || {
            polls += 1;
            polls == 3
        });
        assert_eq!(polls, 3);
    }

    #[test]
    #[should_panic(expected = "waiting for something that never happens")]
    fn a_condition_that_never_holds_fails_with_its_message() {
        eventually_within(
            Duration::from_millis(30),
            "something that never happens",
            || false,
        );
    }
}
