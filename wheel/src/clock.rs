//! Clocks and the conversion between [`Instant`]s and wheel ticks.
//!
//! The core [`Wheel`](crate::Wheel) counts integer ticks and knows nothing of
//! time. The layers above it read a [`Clock`] (the system's monotonic clock or
//! a [`ManualClock`]) and convert with [`TickConv`]:
//!
//! - a deadline instant becomes the tick that *rounds up* (`ceil`), and
//! - the current instant becomes the tick that *rounds down* (`floor`),
//!
//! so a timer fires only when `floor(now) >= ceil(deadline)`, which implies
//! `now >= deadline`: never early, at most one tick late from rounding.

use std::time::{Duration, Instant};

use crate::sync::{lock, AtomicU64, Mutex, Ordering};

/// A clock that only moves when told to, for tests and simulations.
///
/// Clones share one time line. Every [`Scheduler`](crate::Scheduler) and
/// [`DelayQueue`](crate::DelayQueue) built with a clone is woken by
/// [`advance`](ManualClock::advance), so a test can run "48 hours later" in
/// microseconds.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::ManualClock;
///
/// let clock = ManualClock::new();
/// let start = clock.now();
/// clock.advance(Duration::from_secs(48 * 3600));
/// assert_eq!(clock.now() - start, Duration::from_secs(48 * 3600));
/// ```
#[derive(Clone)]
pub struct ManualClock {
    inner: std::sync::Arc<ManualInner>,
}

struct ManualInner {
    start: Instant,
    /// Nanoseconds since `start`: read without a lock (`now` is on the hot
    /// path of every push and schedule), written only under `state`.
    offset_nanos: AtomicU64,
    /// The largest offset that keeps `start + offset` representable.
    max_nanos: u64,
    state: Mutex<ManualState>,
}

struct ManualState {
    listeners: Vec<std::sync::Weak<dyn Fn() + Send + Sync>>,
}

impl ManualClock {
    /// Creates a clock that starts at the current instant and stays there
    /// until [`advance`](ManualClock::advance) is called.
    ///
    /// # Examples
    ///
    /// ```
    /// let clock = wheel::ManualClock::new();
    /// assert_eq!(clock.now(), clock.now());
    /// ```
    pub fn new() -> ManualClock {
        let start = Instant::now();
        let max_nanos = u64::try_from(max_offset(start).as_nanos()).unwrap_or(u64::MAX);
        ManualClock {
            inner: std::sync::Arc::new(ManualInner {
                start,
                offset_nanos: AtomicU64::new(0),
                max_nanos,
                state: Mutex::new(ManualState {
                    listeners: Vec::new(),
                }),
            }),
        }
    }

    /// The clock's current instant.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = wheel::ManualClock::new();
    /// let t0 = clock.now();
    /// clock.advance(Duration::from_millis(5));
    /// assert_eq!(clock.now(), t0 + Duration::from_millis(5));
    /// ```
    pub fn now(&self) -> Instant {
        self.now_and_offset().0
    }

    /// The current instant and the nanoseconds since the clock started,
    /// from one read: `now == start + offset`.
    pub(crate) fn now_and_offset(&self) -> (Instant, u64) {
        let offset = self.offset();
        (self.inner.start + Duration::from_nanos(offset), offset)
    }

    /// Nanoseconds since the clock started (one atomic load, no `Instant`
    /// arithmetic: the fast path of [`DelayQueue::push`](crate::DelayQueue::push)).
    #[inline]
    pub(crate) fn offset(&self) -> u64 {
        self.inner.offset_nanos.load(Ordering::SeqCst)
    }

    /// Moves time forward by `by` and wakes every scheduler and delay queue
    /// that uses this clock. Saturates instead of overflowing: the clock
    /// stops at the end of `Instant`'s range or about 584 years after it
    /// started, whichever comes first.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = wheel::ManualClock::new();
    /// let t0 = clock.now();
    /// clock.advance(Duration::from_secs(1));
    /// clock.advance(Duration::from_secs(2));
    /// assert_eq!(clock.now() - t0, Duration::from_secs(3));
    /// ```
    pub fn advance(&self, by: Duration) {
        let listeners: Vec<_> = {
            // The lock serializes advances and the listener list.
            let mut state = lock(&self.inner.state);
            let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
            let old = self.inner.offset_nanos.load(Ordering::SeqCst);
            let new = old.saturating_add(by).min(self.inner.max_nanos);
            self.inner.offset_nanos.store(new, Ordering::SeqCst);
            state.listeners.retain(|w| w.strong_count() > 0);
            state.listeners.iter().filter_map(|w| w.upgrade()).collect()
        };
        // Call outside the lock: a listener may read the clock.
        for wake in listeners {
            wake();
        }
    }

    /// Registers a function called after every [`advance`](Self::advance).
    /// The clock holds it weakly: dropping the `Arc` unregisters it.
    pub(crate) fn on_advance(&self, wake: &std::sync::Arc<dyn Fn() + Send + Sync>) {
        lock(&self.inner.state)
            .listeners
            .push(std::sync::Arc::downgrade(wake));
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl std::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManualClock")
            .field("now", &self.now())
            .finish()
    }
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

#[allow(dead_code)]
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

/// Converts between instants and ticks of a fixed length from an origin.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TickConv {
    origin: Instant,
    tick_nanos: u64,
    /// `u64::MAX / tick_nanos`, for [`div_rem_by`].
    recip: u64,
    /// The largest nanosecond count after the origin that is an `Instant`
    /// and below `u64::MAX` (see [`TickConv::due_after`]).
    limit: u64,
}

#[allow(dead_code)]
impl TickConv {
    /// A converter whose tick 0 starts at `origin`. `tick` must be at least
    /// one nanosecond and at most `u64::MAX` nanoseconds; callers validate
    /// this and report a typed error (see [`TickConv::validate`]).
    pub(crate) fn new(origin: Instant, tick: Duration) -> TickConv {
        let tick_nanos = u64::try_from(tick.as_nanos()).unwrap_or(u64::MAX).max(1);
        let limit = u64::try_from(max_offset(origin).as_nanos())
            .unwrap_or(u64::MAX)
            .min(u64::MAX - 1);
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
    /// (capped below `u64::MAX`, which callers use for "never").
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// `true` if `tick` is usable as a tick length (non-zero, fits in u64 ns).
    pub(crate) fn validate(tick: Duration) -> bool {
        !tick.is_zero() && u64::try_from(tick.as_nanos()).is_ok()
    }

    /// The tick length.
    pub(crate) fn tick(&self) -> Duration {
        Duration::from_nanos(self.tick_nanos)
    }

    /// The tick that contains `now` (rounded down): what the wheel may be
    /// advanced to at that instant.
    pub(crate) fn now_tick(&self, now: Instant) -> u64 {
        let nanos = now.saturating_duration_since(self.origin).as_nanos();
        match u64::try_from(nanos) {
            Ok(n) => self.floor_tick_of_nanos(n),
            Err(_) => floor_ticks(nanos, self.tick_nanos),
        }
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

    /// The deadline tick for `now + delay`; `u64::MAX` (never) if the sum
    /// overflows `Instant`.
    pub(crate) fn delay_tick(&self, now: Instant, delay: Duration) -> u64 {
        match now.checked_add(delay) {
            Some(at) => self.deadline_tick(at),
            None => u64::MAX,
        }
    }

    /// The origin: the instant at which tick 0 starts.
    pub(crate) fn origin(&self) -> Instant {
        self.origin
    }

    /// Nanoseconds from the origin to `at` (0 before the origin), saturating
    /// at `u64::MAX` (about 584 years).
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
    /// on the path of a push or a schedule, so they multiply by the stored
    /// reciprocal instead of dividing (see [`div_rem_by`]).
    #[inline]
    pub(crate) fn tick_of_nanos(&self, nanos: u64) -> u64 {
        let (q, r) = div_rem_by(nanos, self.tick_nanos, self.recip);
        // `q + 1 <= u64::MAX` when `r != 0`: then `q < nanos <= u64::MAX`.
        q + u64::from(r != 0)
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
/// and sits on the critical path of every push).
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
    if r >= d {
        (e + 1, r - d)
    } else {
        (e, r)
    }
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
    fn overflowing_delay_never_fires() {
        let origin = Instant::now();
        let conv = TickConv::new(origin, Duration::from_millis(1));
        assert_eq!(conv.delay_tick(origin, Duration::MAX), u64::MAX);
        assert!(conv.deadline_tick(origin) == 0);
        assert!(!TickConv::validate(Duration::ZERO));
        assert!(TickConv::validate(Duration::from_nanos(1)));
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

    #[test]
    fn manual_clock_saturates_and_notifies() {
        let clock = ManualClock::new();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let h = hits.clone();
        let listener: std::sync::Arc<dyn Fn() + Send + Sync> = std::sync::Arc::new(move || {
            h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        clock.on_advance(&listener);
        let t0 = clock.now();
        clock.advance(Duration::from_secs(1));
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
        clock.advance(Duration::MAX);
        assert!(clock.now() > t0);
        drop(listener);
        clock.advance(Duration::from_secs(1));
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
