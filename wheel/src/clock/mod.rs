//! Clocks, and the one conversion between [`Instant`]s and wheel ticks.
//!
//! The core [`Wheel`](crate::Wheel) counts integer ticks and knows nothing of
//! time. The scheduler and the delay queue each hold a [`TimeBase`]: a
//! [`Clock`] (the system's monotonic clock or a [`ManualClock`]), an origin
//! (the instant at which tick 0 starts) and a tick length, with the
//! arithmetic in [`TickConv`]:
//!
//! - a deadline instant becomes the tick that *rounds up* (`ceil`), and
//! - the current instant becomes the tick that *rounds down* (`floor`),
//!
//! so a timer fires only when `floor(now) >= ceil(deadline)`, which implies
//! `now >= deadline`: never early, at most one tick late from rounding.
//!
//! A deadline past the range of `Instant` is [`NEVER`], and the current
//! tick is always below it, so such a deadline never comes.
//!
//! - `manual.rs`: [`ManualClock`].
//! - `conv.rs`: [`TickConv`], the pure arithmetic.
//! - `base.rs`: [`TimeBase`], the clock reading and the two rounding rules
//!   (the scheduler's and the delay queue's).

use std::time::{Duration, Instant};

use crate::error::BuildError;

mod base;
mod conv;
mod manual;

pub(crate) use self::base::TimeBase;
pub(crate) use self::conv::TickConv;
pub use self::manual::ManualClock;

/// The tick, or the due time in nanoseconds, of a deadline that never
/// comes: a delay or an instant past the range of `Instant`. No clock
/// reaches it: the current tick stays below it ([`TickConv::now_tick`]),
/// and the tick thread never advances its wheel to it.
pub(crate) const NEVER: u64 = u64::MAX;

/// Checks a tick length for a builder: [`BuildError::ZeroTick`] for zero,
/// [`BuildError::TickTooLong`] for more than `u64::MAX` nanoseconds.
pub(crate) fn check_tick(tick: Duration) -> Result<(), BuildError> {
    if tick.is_zero() {
        return Err(BuildError::ZeroTick);
    }
    if u64::try_from(tick.as_nanos()).is_err() {
        return Err(BuildError::TickTooLong);
    }
    Ok(())
}

/// The largest offset that can be added to `start` without overflowing
/// `Instant` (found by halving; computed once per clock or queue).
pub(crate) fn max_offset(start: Instant) -> Duration {
    let mut hi = Duration::MAX;
    if start.checked_add(hi).is_some() {
        return hi;
    }
    let mut lo = Duration::ZERO;
    // Invariant: start + lo fits, start + hi does not.
    while hi - lo > Duration::from_nanos(1) {
        let mid = lo + (hi - lo) / 2;
        if start.checked_add(mid).is_some() {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Where time comes from: the system's monotonic clock or a [`ManualClock`].
#[derive(Clone, Debug, Default)]
pub(crate) enum Clock {
    /// `Instant::now()`.
    #[default]
    System,
    /// A shared manual time line.
    Manual(ManualClock),
}

impl Clock {
    /// The current instant of this clock.
    pub(crate) fn now(&self) -> Instant {
        match self {
            Clock::System => Instant::now(),
            Clock::Manual(m) => m.now(),
        }
    }

    /// The manual clock, if this is one.
    pub(crate) fn manual(&self) -> Option<&ManualClock> {
        match self {
            Clock::System => None,
            Clock::Manual(m) => Some(m),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn tick_lengths_are_checked() {
        assert!(matches!(
            check_tick(Duration::ZERO),
            Err(BuildError::ZeroTick)
        ));
        assert!(check_tick(Duration::from_nanos(1)).is_ok());
        assert!(check_tick(Duration::from_nanos(u64::MAX)).is_ok());
        let too_long = Duration::from_nanos(u64::MAX) + Duration::from_nanos(1);
        assert!(matches!(check_tick(too_long), Err(BuildError::TickTooLong)));
        assert!(matches!(
            check_tick(Duration::MAX),
            Err(BuildError::TickTooLong)
        ));
    }
}
