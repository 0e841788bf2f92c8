//! Schedule time: whole Unix milliseconds as `i64`, so that "one before the
//! epoch" (-1) is a search start like any other.
//!
//! Every nominal time a schedule yields is in `[0, MAX_MILLIS]`, the store's
//! range, so it converts to a store time without loss.
//!
//! Node state: none (pure functions).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::SpecError;
use crate::time::MAX_MILLIS;

/// Unix milliseconds.
pub(crate) type Ms = i64;

/// The store's last millisecond, as schedule time.
pub(crate) const fn max_ms() -> Ms {
    MAX_MILLIS as Ms
}

/// `t` rounded down to the millisecond, clamped to `[-1, MAX_MILLIS + 1]`:
/// a search from before the epoch starts at -1, one from past the range
/// finds nothing.
pub(crate) fn floor_ms(t: SystemTime) -> Ms {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => Ms::try_from(d.as_millis()).map_or(max_ms() + 1, |ms| ms.min(max_ms() + 1)),
        Err(_) => -1,
    }
}

/// `t` as a bound or anchor: whole milliseconds in the store's range,
/// rounded up (like every due time) so a bound never moves earlier.
pub(crate) fn bound_ms(t: SystemTime, field: &'static str) -> Result<Ms, SpecError> {
    crate::time::millis_of(t)
        .map(|ms| ms as Ms)
        .map_err(|_| SpecError::TimeOutOfRange { field })
}

/// The `SystemTime` of a schedule time in `[0, MAX_MILLIS]`.
pub(crate) fn system_time(ms: Ms) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_clamp_and_round_at_the_edges() {
        assert_eq!(floor_ms(UNIX_EPOCH - Duration::from_nanos(1)), -1);
        assert_eq!(floor_ms(UNIX_EPOCH + Duration::from_micros(1_999)), 1);
        let far = UNIX_EPOCH + Duration::from_millis(MAX_MILLIS + 10);
        assert_eq!(floor_ms(far), max_ms() + 1);
        assert_eq!(
            bound_ms(UNIX_EPOCH + Duration::from_micros(1_001), "start"),
            Ok(2)
        );
        assert_eq!(
            bound_ms(far, "end"),
            Err(SpecError::TimeOutOfRange { field: "end" })
        );
        assert_eq!(
            bound_ms(UNIX_EPOCH - Duration::from_secs(1), "anchor"),
            Err(SpecError::TimeOutOfRange { field: "anchor" })
        );
        assert_eq!(
            system_time(1_500),
            UNIX_EPOCH + Duration::from_millis(1_500)
        );
    }
}
