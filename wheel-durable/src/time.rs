//! Store time: whole milliseconds since the Unix epoch.
//!
//! Every due time, lease and failure time in a store is such a count, read
//! off the store's clock (Redis `TIME`, or this machine's system clock for
//! the embedded store). `SystemTime`s from callers are rounded *up* to the
//! millisecond, so that rounding can only make a timer later, never early.
//!
//! Node state: none (pure functions and a back-off counter owned by its
//! caller).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::DurableError;
use crate::retry::backoff;

/// Milliseconds since the Unix epoch, by the store's clock.
pub(crate) type Millis = u64;

/// The latest store time: 2^53 - 1 ms (about the year 287 000), the largest
/// count a Redis score (a double) holds exactly.
pub(crate) const MAX_MILLIS: Millis = (1 << 53) - 1;

/// `ms` after `now`, saturating at [`MAX_MILLIS`].
#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
pub(crate) fn later(now: Millis, ms: Millis) -> Millis {
    now.saturating_add(ms).min(MAX_MILLIS)
}

/// `at` as store time, rounded up to the next whole millisecond.
pub(crate) fn millis_of(at: SystemTime) -> Result<Millis, DurableError> {
    let since = at
        .duration_since(UNIX_EPOCH)
        .map_err(|_| DurableError::InvalidTime)?;
    millis_ceil(since)
        .filter(|ms| *ms <= MAX_MILLIS)
        .ok_or(DurableError::InvalidTime)
}

/// A delay in whole milliseconds, rounded up; `None` past `u64::MAX` ms.
pub(crate) fn millis_ceil(d: Duration) -> Option<Millis> {
    let ms = d.as_nanos().div_ceil(1_000_000);
    u64::try_from(ms).ok()
}

/// The `SystemTime` of a store time (saturating at the far end of
/// `SystemTime`'s range).
pub(crate) fn system_time_of(ms: Millis) -> SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_millis(ms))
        .unwrap_or(UNIX_EPOCH + Duration::from_secs(i64::MAX as u64 / 2))
}

/// This machine's system clock as store time (rounded down: a clock read
/// that runs behind can only make a timer later).
#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
pub(crate) fn system_now() -> Millis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The doubling wait between tries of a failed store call: `first`, then
/// twice as long each time, at most `max`, on the one back-off curve
/// ([`backoff`]). No jitter: these waits are short and bounded by the
/// caller's own deadline, and the tests pin them.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    first: Duration,
    max: Duration,
    /// Waits handed out since the last success.
    tries: u32,
}

impl Backoff {
    pub(crate) fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            tries: 0,
        }
    }

    /// The wait before the next try.
    pub(crate) fn next(&mut self) -> Duration {
        self.tries = self.tries.saturating_add(1);
        backoff(self.first, 2.0, self.max, 0.0, self.tries)
    }

    /// Starts again from the first wait (after a success).
    pub(crate) fn reset(&mut self) {
        self.tries = 0;
    }
}

/// The timed wait on std's types, for the modules that keep std's locks
/// under `cfg(loom)` too (the stats); the node takes `sync::wait_until`.
pub(crate) use crate::sync::wait_until_std as wait_until;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap_and_starts_over() {
        let ms = Duration::from_millis;
        let mut b = Backoff::new(ms(10), ms(50));
        let waits: Vec<Duration> = (0..5).map(|_| b.next()).collect();
        assert_eq!(waits, [ms(10), ms(20), ms(40), ms(50), ms(50)]);
        b.reset();
        assert_eq!(b.next(), ms(10));
        assert_eq!(Backoff::new(ms(90), ms(50)).next(), ms(50));
        let mut long = Backoff::new(ms(10), Duration::MAX);
        assert!((0..100).map(|_| long.next()).all(|d| d >= ms(10)));
    }

    #[test]
    fn rounding_is_up_for_due_times() {
        let at = UNIX_EPOCH + Duration::from_micros(1_500);
        assert_eq!(millis_of(at), Ok(2));
        assert_eq!(millis_of(UNIX_EPOCH + Duration::from_millis(7)), Ok(7));
        assert_eq!(millis_of(UNIX_EPOCH), Ok(0));
        assert_eq!(millis_ceil(Duration::from_nanos(1)), Some(1));
        assert_eq!(millis_ceil(Duration::ZERO), Some(0));
    }

    #[test]
    fn out_of_range_times_are_refused() {
        let before = UNIX_EPOCH - Duration::from_millis(1);
        assert_eq!(millis_of(before), Err(DurableError::InvalidTime));
        let last = UNIX_EPOCH + Duration::from_millis(MAX_MILLIS);
        assert_eq!(millis_of(last), Ok(MAX_MILLIS));
        assert_eq!(
            millis_of(last + Duration::from_nanos(1)),
            Err(DurableError::InvalidTime)
        );
        assert_eq!(later(MAX_MILLIS - 1, 5), MAX_MILLIS);
        assert_eq!(later(u64::MAX, 5), MAX_MILLIS);
        assert_eq!(millis_ceil(Duration::MAX), None);
    }

    #[test]
    fn round_trip_keeps_whole_milliseconds() {
        for ms in [0, 1, 1_700_000_000_123, MAX_MILLIS] {
            assert_eq!(millis_of(system_time_of(ms)), Ok(ms));
        }
    }
}
