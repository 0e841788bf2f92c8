//! The fixed-period recurrence: the slots `anchor + k × period` for every
//! whole `k` (negative too), restricted to store time `[0, MAX_MILLIS]`.
//!
//! Pure arithmetic on whole milliseconds; no time zone, so no DST: a
//! period is real elapsed time.
//!
//! Node state: none (plain values).

use std::time::Duration;

use super::SpecError;
use super::instant::{Ms, max_ms};

/// The shortest period. Cron's resolution is a second too, and each run is
/// a durable store write: a faster beat belongs on the in-memory wheel.
pub(crate) const MIN_PERIOD: Duration = Duration::from_secs(1);

/// Slots `period` apart, one of them at `anchor` (both whole ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Every {
    pub(crate) period: Ms,
    pub(crate) anchor: Ms,
}

impl Every {
    /// Checks the period: at least [`MIN_PERIOD`], whole milliseconds.
    pub(crate) fn new(period: Duration, anchor: Ms) -> Result<Every, SpecError> {
        if period < MIN_PERIOD {
            return Err(SpecError::PeriodTooShort { period });
        }
        if !period.subsec_nanos().is_multiple_of(1_000_000) {
            return Err(SpecError::PeriodNotWholeMillis { period });
        }
        // A period past the store's range has at most one slot in it (the
        // anchor); saturating keeps the arithmetic below in `i64`.
        let period = Ms::try_from(period.as_millis()).map_or(max_ms() + 1, |p| p.min(max_ms() + 1));
        Ok(Every { period, anchor })
    }

    /// The first slot strictly after `t` (`t` in `[-1, MAX_MILLIS]`).
    pub(crate) fn next_after(&self, t: Ms) -> Option<Ms> {
        // Slots before the epoch do not exist: start the search at -1.
        let t = t.max(-1);
        let k = (t - self.anchor).div_euclid(self.period) + 1;
        let slot = self.anchor + k * self.period;
        (slot <= max_ms()).then_some(slot)
    }

    /// The last slot strictly before `t`, if one is in store time.
    pub(crate) fn prev_before(&self, t: Ms) -> Option<Ms> {
        let t = t.min(max_ms() + 1);
        let k = (t - 1 - self.anchor).div_euclid(self.period);
        let slot = self.anchor + k * self.period;
        (slot >= 0).then_some(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every(period_ms: u64, anchor: Ms) -> Every {
        Every::new(Duration::from_millis(period_ms), anchor).unwrap()
    }

    #[test]
    fn the_period_has_a_floor_and_whole_milliseconds() {
        let short = Duration::from_millis(999);
        assert_eq!(
            Every::new(short, 0),
            Err(SpecError::PeriodTooShort { period: short })
        );
        assert_eq!(
            Every::new(Duration::ZERO, 0),
            Err(SpecError::PeriodTooShort {
                period: Duration::ZERO
            })
        );
        let odd = Duration::from_micros(1_000_500);
        assert_eq!(
            Every::new(odd, 0),
            Err(SpecError::PeriodNotWholeMillis { period: odd })
        );
        assert!(Every::new(MIN_PERIOD, 0).is_ok());
    }

    #[test]
    fn slots_align_to_the_anchor_on_both_sides() {
        let e = every(300_000, 60_000); // every 5 min, at :01, :06, ...
        assert_eq!(e.next_after(0), Some(60_000));
        assert_eq!(e.next_after(59_999), Some(60_000));
        assert_eq!(e.next_after(60_000), Some(360_000));
        assert_eq!(e.prev_before(60_000), None); // the slot at -240 s is before the epoch
        assert_eq!(e.prev_before(360_000), Some(60_000));
        assert_eq!(e.prev_before(360_001), Some(360_000));
        // An anchor in the future still places the slots before it.
        let e = every(1_000, 10_500);
        assert_eq!(e.next_after(-1), Some(500));
        assert_eq!(e.next_after(2_000), Some(2_500));
        assert_eq!(e.prev_before(2_500), Some(1_500));
    }

    #[test]
    fn the_store_range_ends_the_slots() {
        let e = every(1_000, 0);
        let last = max_ms() - max_ms() % 1_000;
        assert_eq!(e.next_after(last - 1), Some(last));
        assert_eq!(e.next_after(last), None);
        assert_eq!(e.next_after(max_ms()), None);
        assert_eq!(e.prev_before(max_ms() + 1), Some(last));
        assert_eq!(e.prev_before(0), None);
        let huge = Every::new(
            Duration::MAX - Duration::from_nanos(Duration::MAX.subsec_nanos().into()),
            7,
        )
        .unwrap();
        assert_eq!(huge.next_after(0), Some(7));
        assert_eq!(huge.next_after(7), None);
        assert_eq!(huge.prev_before(8), Some(7));
    }
}
