//! [`TickConv`]: the arithmetic between instants, nanoseconds and ticks of
//! a fixed length from an origin (no clock reading).

use std::time::{Duration, Instant};

use super::{NEVER, max_offset};

/// Converts between instants and ticks of a fixed length from an origin.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TickConv {
    origin: Instant,
    tick_nanos: u64,
    /// `u64::MAX / tick_nanos`, for [`div_rem_by`].
    recip: u64,
    /// The largest nanosecond count after the origin that is an `Instant`
    /// and below [`NEVER`] (see [`TickConv::due_after`]).
    limit: u64,
}

impl TickConv {
    /// A converter whose tick 0 starts at `origin`. `tick` must be at least
    /// one nanosecond and at most `u64::MAX` nanoseconds; the builders check
    /// this first and report a typed error (see [`check_tick`](super::check_tick)).
    pub(crate) fn new(origin: Instant, tick: Duration) -> TickConv {
        let tick_nanos = u64::try_from(tick.as_nanos()).unwrap_or(u64::MAX).max(1);
        let limit = u64::try_from(max_offset(origin).as_nanos())
            .unwrap_or(u64::MAX)
            .min(NEVER - 1);
        TickConv {
            origin,
            tick_nanos,
            recip: u64::MAX / tick_nanos,
            limit,
        }
    }

    /// `now + delay` in nanoseconds after the origin (`now` counted the same
    /// way), or `None` if that is past [`limit`](TickConv::limit). When it
    /// answers, `origin + now + delay` is an `Instant` and the answer equals
    /// `nanos_of(origin + now + delay)`: callers use it to skip `Instant`
    /// arithmetic and fall back to it on `None`.
    #[inline]
    pub(crate) fn due_after(&self, now: u64, delay: Duration) -> Option<u64> {
        delay
            .as_secs()
            .checked_mul(1_000_000_000)?
            .checked_add(u64::from(delay.subsec_nanos()))
            .and_then(|d| now.checked_add(d))
            .filter(|&due| due <= self.limit)
    }

    /// The largest nanosecond count after the origin that is an `Instant`
    /// (capped below [`NEVER`]).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// The tick length.
    pub(crate) fn tick_len(&self) -> Duration {
        Duration::from_nanos(self.tick_nanos)
    }

    /// The tick that contains `now` (rounded down): what the wheel may be
    /// advanced to at that instant. Never [`NEVER`], even at the very end of
    /// `Instant`'s range: that tick stays in the future.
    pub(crate) fn now_tick(&self, now: Instant) -> u64 {
        let nanos = now.saturating_duration_since(self.origin).as_nanos();
        let tick = match u64::try_from(nanos) {
            Ok(n) => self.floor_tick_of_nanos(n),
            Err(_) => floor_ticks(nanos, self.tick_nanos),
        };
        tick.min(NEVER - 1)
    }

    /// The first tick at or after `at` (rounded up): a timer for `at` put at
    /// this tick never fires before `at`.
    pub(crate) fn deadline_tick(&self, at: Instant) -> u64 {
        let nanos = at.saturating_duration_since(self.origin).as_nanos();
        match u64::try_from(nanos) {
            Ok(n) => self.tick_of_nanos(n),
            Err(_) => ceil_ticks(nanos, self.tick_nanos),
        }
    }

    /// The origin: the instant at which tick 0 starts.
    pub(crate) fn origin(&self) -> Instant {
        self.origin
    }

    /// Nanoseconds from the origin to `at` (0 before the origin), saturating
    /// at `u64::MAX` (about 584 years; as a due time, [`NEVER`]).
    pub(crate) fn nanos_of(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX)
    }

    /// The tick that contains `nanos` past the origin (rounded down), the
    /// nanosecond form of [`TickConv::now_tick`].
    #[inline]
    pub(crate) fn floor_tick_of_nanos(&self, nanos: u64) -> u64 {
        div_rem_by(nanos, self.tick_nanos, self.recip).0
    }

    /// The first tick at or after `nanos` past the origin (rounded up), the
    /// nanosecond form of [`TickConv::deadline_tick`]. Every conversion of
    /// a `u64` nanosecond count (for the first 584 years, all of them) is
    /// on the path of an insert or a schedule, so they multiply by the stored
    /// reciprocal instead of dividing (see [`div_rem_by`]).
    #[inline]
    pub(crate) fn tick_of_nanos(&self, nanos: u64) -> u64 {
        let (q, r) = div_rem_by(nanos, self.tick_nanos, self.recip);
        // `q + 1 <= u64::MAX` when `r != 0`: then `q < nanos <= u64::MAX`.
        q + u64::from(r != 0)
    }

    /// Nanoseconds after the origin of the start of `tick`, saturating at
    /// `u64::MAX`.
    pub(crate) fn nanos_of_tick(&self, tick: u64) -> u64 {
        tick.saturating_mul(self.tick_nanos)
    }

    /// `origin + nanos`, or `None` past the range of `Instant`.
    pub(crate) fn instant_of_nanos(&self, nanos: u64) -> Option<Instant> {
        self.origin.checked_add(Duration::from_nanos(nanos))
    }

    /// The instant at which tick `tick` starts, or `None` past the range of
    /// `Instant`.
    pub(crate) fn instant_of(&self, tick: u64) -> Option<Instant> {
        let nanos = u128::from(tick) * u128::from(self.tick_nanos);
        let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
        let sub = (nanos % 1_000_000_000) as u32;
        self.origin.checked_add(Duration::new(secs, sub))
    }
}

/// `(n / d, n % d)` for a divisor `d >= 1` with `recip == u64::MAX / d`,
/// by a multiplication and at most one correction instead of a division
/// (a 64-bit division has several times the latency of the multiplication
/// and sits on the critical path of every insert).
///
/// Exact for every `n`: let `q = n / d`. Since `recip * d <= 2^64 - 1`, the
/// estimate `e = n * recip / 2^64` (rounded down) is at most `n / d`, so
/// `e <= q`. Since `recip >= ((2^64 - 1) - (d - 1)) / d = (2^64 - d) / d`,
/// `n * recip / 2^64 >= n / d - n / 2^64 > n / d - 1` (as `n < 2^64`), so
/// `e >= q - 1`. So `n - e * d` is the remainder or the remainder plus
/// `d` (no overflow: `e * d <= q * d <= n`), and one comparison finds
/// which.
#[inline]
pub(crate) fn div_rem_by(n: u64, d: u64, recip: u64) -> (u64, u64) {
    let e = ((u128::from(n) * u128::from(recip)) >> 64) as u64;
    let r = n - e * d;
    if r >= d { (e + 1, r - d) } else { (e, r) }
}

/// `nanos / tick`, rounded down, saturating at `u64::MAX`, in 128 bits:
/// the fallback of [`TickConv::now_tick`] for counts past `u64` (584
/// years), which converts every smaller count with the reciprocal.
pub(crate) fn floor_ticks(nanos: u128, tick_nanos: u64) -> u64 {
    u64::try_from(nanos / u128::from(tick_nanos)).unwrap_or(u64::MAX)
}

/// `nanos / tick`, rounded up, saturating at `u64::MAX`, in 128 bits: the
/// fallback of [`TickConv::deadline_tick`], as [`floor_ticks`] is of
/// `now_tick`.
pub(crate) fn ceil_ticks(nanos: u128, tick_nanos: u64) -> u64 {
    u64::try_from(nanos.div_ceil(u128::from(tick_nanos))).unwrap_or(u64::MAX)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// `div_rem_by` against `/` and `%` at the edges of the divisor's and
    /// the dividend's ranges, and where the estimate is one short.
    #[test]
    fn reciprocal_division_is_exact_at_the_boundaries() {
        let divisors = [
            1,
            2,
            3,
            7,
            1_000,
            999_999,
            1_000_000,
            1_000_000_007,
            1 << 32,
            (1 << 32) + 1,
            u64::MAX / 3,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for d in divisors {
            let recip = u64::MAX / d;
            let mut ns = vec![0, 1, 2, d - 1, d, u64::MAX, u64::MAX - 1, u64::MAX / 2];
            for k in [1u64, 2, 3, 1_000, 1 << 20, u64::MAX / d] {
                if let Some(m) = k.checked_mul(d) {
                    ns.extend([m - 1, m, m.saturating_add(1), m.saturating_add(d - 1)]);
                }
            }
            for n in ns {
                assert_eq!(div_rem_by(n, d, recip), (n / d, n % d), "{n} / {d}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn reciprocal_division_is_exact(n: u64, d in 1u64.., small in 1u64..=1 << 40) {
            for d in [d, small] {
                proptest::prop_assert_eq!(div_rem_by(n, d, u64::MAX / d), (n / d, n % d));
            }
        }

        #[test]
        fn tick_of_nanos_rounds_up(nanos: u64, tick in 1u64..=u64::MAX) {
            let conv = TickConv::new(Instant::now(), Duration::from_nanos(tick));
            proptest::prop_assert_eq!(conv.tick_of_nanos(nanos), nanos.div_ceil(tick));
        }
    }

    #[test]
    fn rounding_boundaries() {
        assert_eq!(floor_ticks(0, 1000), 0);
        assert_eq!(ceil_ticks(0, 1000), 0);
        assert_eq!(floor_ticks(999, 1000), 0);
        assert_eq!(ceil_ticks(999, 1000), 1);
        assert_eq!(floor_ticks(1000, 1000), 1);
        assert_eq!(ceil_ticks(1000, 1000), 1);
        assert_eq!(ceil_ticks(1001, 1000), 2);
        assert_eq!(floor_ticks(u128::MAX, 1), u64::MAX);
        assert_eq!(ceil_ticks(u128::MAX, 1), u64::MAX);
        assert_eq!(ceil_ticks(u128::from(u64::MAX), 1), u64::MAX);
        // Both sides of the 64-bit fast path agree.
        let big = u128::from(u64::MAX);
        assert_eq!(floor_ticks(big, 1000), u64::MAX / 1000);
        assert_eq!(floor_ticks(big + 1, 1000), ((big + 1) / 1000) as u64);
        assert_eq!(ceil_ticks(big, 1000), u64::MAX / 1000 + 1);
        assert_eq!(ceil_ticks(big + 1, 1000), (big + 1).div_ceil(1000) as u64);
        assert_eq!(ceil_ticks(big * 1000, 1000), u64::MAX);
        assert_eq!(ceil_ticks(big * 1000 + 1, 1000), u64::MAX);
    }

    #[test]
    fn never_early_after_round_trip() {
        let origin = Instant::now();
        let conv = TickConv::new(origin, Duration::from_micros(1500));
        for ns in [0u64, 1, 1_499_999, 1_500_000, 1_500_001, 7_777_777] {
            let at = origin + Duration::from_nanos(ns);
            let tick = conv.deadline_tick(at);
            // The instant at which this tick is reached is not before `at`.
            assert!(conv.instant_of(tick).unwrap() >= at);
            // Being in that tick means the deadline passed.
            assert_eq!(conv.now_tick(conv.instant_of(tick).unwrap()), tick);
        }
    }

    #[test]
    fn the_current_tick_stays_below_never() {
        let origin = Instant::now();
        let conv = TickConv::new(origin, Duration::from_nanos(1));
        assert_eq!(conv.deadline_tick(origin), 0);
        assert_eq!(conv.now_tick(origin), 0);
        let end = origin + max_offset(origin);
        assert!(conv.now_tick(end) < NEVER);
        assert_eq!(conv.nanos_of_tick(3), 3);
        assert_eq!(conv.nanos_of_tick(NEVER), u64::MAX);
        let ms = TickConv::new(origin, Duration::from_millis(1));
        assert_eq!(ms.nanos_of_tick(7), 7_000_000);
        let last = u64::MAX / 1_000_000;
        assert_eq!(ms.nanos_of_tick(last), last * 1_000_000);
        assert_eq!(ms.nanos_of_tick(last + 1), u64::MAX);
    }

    #[test]
    fn due_after_matches_instant_arithmetic_to_the_end_of_the_range() {
        let now = Instant::now();
        for room in [0u64, 1, 2, 999, 1_000_000_007] {
            let origin = now + max_offset(now) - Duration::from_nanos(room);
            let conv = TickConv::new(origin, Duration::from_millis(1));
            assert_eq!(conv.limit(), room);
            for at in [0, room / 2, room] {
                for d in [0, 1, room - at, room - at + 1, u64::MAX] {
                    let delay = Duration::from_nanos(d);
                    let start = origin + Duration::from_nanos(at);
                    let by_instant = start.checked_add(delay).map(|t| conv.nanos_of(t));
                    match conv.due_after(at, delay) {
                        Some(due) => assert_eq!(Some(due), by_instant, "at {at} d {d}"),
                        // `None` only where the sum leaves `Instant`'s range.
                        None => assert_eq!(by_instant, None, "at {at} d {d}"),
                    }
                }
            }
        }
        // Far from the end: answers up to the nanosecond count's range.
        let conv = TickConv::new(now, Duration::from_millis(1));
        assert_eq!(conv.due_after(5, Duration::new(3, 7)), Some(3_000_000_012));
        assert_eq!(conv.due_after(1, Duration::MAX), None);
    }
}
