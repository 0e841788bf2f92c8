//! [`TimeBase`]: the clock of a scheduler or a delay queue, read as
//! nanoseconds and ticks after its origin.
//!
//! The scheduler and the delay queue round with the same [`TickConv`] and
//! differ in one rule:
//!
//! - The scheduler keeps a timer's due time in nanoseconds after the origin
//!   ([`TimeBase::due_after`], [`TimeBase::due_at`]: workers measure
//!   lateness and the next run of a repeating timer from it) and puts the
//!   timer at the tick that rounds it up ([`TimeBase::tick_of_due`]), so
//!   even a zero delay waits for the next tick boundary.
//! - The delay queue goes to ticks directly ([`TimeBase::delay_tick`],
//!   [`TimeBase::at_tick`]): an item due at or before now goes to the
//!   current tick, so that it is due at once; a later one rounds up.
//!
//! Reading the clock costs one atomic load with a [`ManualClock`] (its
//! offset minus the offset at the origin), `Instant::now()` and a
//! subtraction with the system clock. A delay is added in nanoseconds
//! while the sum stays inside `Instant`'s range ([`TickConv::due_after`]);
//! past it a cold path does the same with `Instant`s, and a sum past the
//! range is [`NEVER`].

use std::time::{Duration, Instant};

use super::{Clock, ManualClock, NEVER, TickConv};

/// A clock, its origin (the instant at which tick 0 starts) and its tick
/// length. Fixed at construction; shared read-only by every thread of its
/// scheduler or queue.
#[derive(Clone, Debug)]
pub(crate) struct TimeBase {
    clock: Clock,
    /// The arithmetic from the origin.
    conv: TickConv,
    /// For a manual clock: its offset (nanoseconds since it started) at the
    /// origin, so that "nanoseconds since the origin" is `offset - base`.
    base: u64,
}

impl TimeBase {
    /// A time base on `clock` whose tick 0 starts now. `tick` must be valid
    /// (see [`check_tick`](super::check_tick)).
    pub(crate) fn new(clock: Clock, tick: Duration) -> TimeBase {
        let (origin, base) = match &clock {
            Clock::System => (Instant::now(), 0),
            Clock::Manual(m) => m.now_and_offset(),
        };
        TimeBase {
            clock,
            conv: TickConv::new(origin, tick),
            base,
        }
    }

    /// The arithmetic from the origin.
    pub(crate) fn conv(&self) -> &TickConv {
        &self.conv
    }

    /// The manual clock, if time comes from one.
    pub(crate) fn manual(&self) -> Option<&ManualClock> {
        self.clock.manual()
    }

    /// Whether time comes from a [`ManualClock`] (then nothing may wait on
    /// a system-clock timeout: only `advance` moves time).
    pub(crate) fn is_manual(&self) -> bool {
        self.clock.manual().is_some()
    }

    /// The clock's current instant.
    pub(crate) fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Nanoseconds from the origin to now (saturating at `u64::MAX`); for
    /// a manual clock, one atomic load.
    #[inline]
    pub(crate) fn now_nanos(&self) -> u64 {
        match &self.clock {
            Clock::System => self.conv.nanos_of(Instant::now()),
            Clock::Manual(m) => m.offset().saturating_sub(self.base),
        }
    }

    /// The scheduler's due time for "`delay` from now": nanoseconds after
    /// the origin, [`NEVER`] past the range of `Instant`.
    pub(crate) fn due_after(&self, delay: Duration) -> u64 {
        // In nanoseconds when the sum stays inside `Instant`'s range (the
        // same answer, without adding and subtracting `Instant`s).
        if let Some(due) = self.conv.due_after(self.now_nanos(), delay) {
            return due;
        }
        match self.now().checked_add(delay) {
            Some(at) => self.due_at(at),
            None => NEVER,
        }
    }

    /// The scheduler's due time for `at`: nanoseconds after the origin (0
    /// if earlier; [`NEVER`] about 584 years after it).
    pub(crate) fn due_at(&self, at: Instant) -> u64 {
        self.conv.nanos_of(at)
    }

    /// The wheel tick of a scheduler due time: rounded up (never early),
    /// [`NEVER`] for `NEVER`.
    #[inline]
    pub(crate) fn tick_of_due(&self, due: u64) -> u64 {
        if due == NEVER {
            NEVER
        } else {
            self.conv.tick_of_nanos(due)
        }
    }

    /// The delay queue's tick for an item due `delay` from now: what
    /// `item_tick(now + delay, now)` gives ([`NEVER`] if the sum is past the
    /// range of `Instant`), in nanoseconds when [`fast_delay_tick`] can,
    /// else with `Instant`s.
    #[inline]
    pub(crate) fn delay_tick(&self, delay: Duration) -> u64 {
        match fast_delay_tick(&self.conv, self.now_nanos(), delay) {
            Some(tick) => tick,
            None => self.slow_delay_tick(delay),
        }
    }

    /// [`TimeBase::delay_tick`] with `Instant`s (any delay).
    #[cold]
    #[inline(never)]
    fn slow_delay_tick(&self, delay: Duration) -> u64 {
        let now = self.now();
        match now.checked_add(delay) {
            Some(at) => item_tick(&self.conv, at, now),
            None => NEVER,
        }
    }

    /// The delay queue's tick for an item due at `at`, from a fresh clock
    /// reading.
    pub(crate) fn at_tick(&self, at: Instant) -> u64 {
        item_tick(&self.conv, at, self.now())
    }

    /// The current tick (rounded down, below [`NEVER`]).
    pub(crate) fn now_tick(&self) -> u64 {
        self.conv.now_tick(self.now())
    }
}

/// [`item_tick`]`(origin + now + delay, origin + now)` computed in
/// nanoseconds (`now` counts from the converter's origin), or `None` if the
/// due time is past [`TickConv::due_after`]'s limit. Below it each step
/// matches the `Instant` path exactly: a zero delay is the current tick, any
/// other rounds the due time up.
#[inline]
fn fast_delay_tick(conv: &TickConv, now: u64, delay: Duration) -> Option<u64> {
    let due = conv.due_after(now, delay)?;
    Some(if due == now {
        conv.floor_tick_of_nanos(now).min(NEVER - 1)
    } else {
        conv.tick_of_nanos(due)
    })
}

/// The delay queue's tick for an item due at `at` when the clock reads
/// `now`: the current tick (due at once) if `at` has passed, else `at`
/// rounded up.
fn item_tick(conv: &TickConv, at: Instant, now: Instant) -> u64 {
    if at <= now {
        conv.now_tick(now)
    } else {
        conv.deadline_tick(at)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::max_offset;
    use proptest::prelude::*;

    #[test]
    fn item_tick_boundaries() {
        let origin = Instant::now();
        let conv = TickConv::new(origin, Duration::from_millis(1));
        let ms = Duration::from_millis;
        // Past and present deadlines map to the current tick (due at once).
        assert_eq!(item_tick(&conv, origin, origin), 0);
        assert_eq!(item_tick(&conv, origin, origin + ms(5)), 5);
        assert_eq!(item_tick(&conv, origin + ms(5), origin + ms(5)), 5);
        let mid = origin + Duration::from_micros(5_500);
        assert_eq!(item_tick(&conv, mid, mid), 5);
        // Future deadlines round up.
        assert_eq!(item_tick(&conv, mid, origin), 6);
        assert_eq!(item_tick(&conv, origin + ms(6), origin), 6);
        assert_eq!(
            item_tick(&conv, origin + Duration::from_nanos(1), origin),
            1
        );
        // Before the origin saturates to tick 0.
        if let Some(before) = origin.checked_sub(ms(3)) {
            assert_eq!(item_tick(&conv, before, origin), 0);
        }
    }

    #[test]
    fn scheduler_due_times_round_up_and_overflow_to_never() {
        let clock = ManualClock::new();
        let time = TimeBase::new(Clock::Manual(clock.clone()), Duration::from_millis(1));
        clock.advance(Duration::from_micros(2_500));
        assert_eq!(time.now_nanos(), 2_500_000);
        assert_eq!(time.due_after(Duration::ZERO), 2_500_000);
        // A zero delay waits for the next boundary; an exact one does not.
        assert_eq!(time.tick_of_due(time.due_after(Duration::ZERO)), 3);
        assert_eq!(
            time.tick_of_due(time.due_after(Duration::from_micros(500))),
            3
        );
        assert_eq!(time.due_at(time.now()), 2_500_000);
        assert_eq!(time.due_after(Duration::MAX), NEVER);
        assert_eq!(time.tick_of_due(NEVER), NEVER);
        // The delay queue's rule: a zero delay is the current tick.
        assert_eq!(time.delay_tick(Duration::ZERO), 2);
        assert_eq!(time.delay_tick(Duration::MAX), NEVER);
        assert_eq!(time.now_tick(), 2);
    }

    /// An origin `room` nanoseconds before the end of `Instant`'s range
    /// (or now, if `room` is `None`).
    fn origin_with_room(room: Option<u64>) -> Instant {
        let now = Instant::now();
        match room {
            None => now,
            Some(room) => now + max_offset(now).saturating_sub(Duration::from_nanos(room)),
        }
    }

    proptest! {
        /// The nanosecond path gives exactly the tick of the `Instant`
        /// path whenever it answers, near the origin and at the very end of
        /// `Instant`'s range, and it answers for every due time up to its
        /// limit.
        #[test]
        fn fast_path_matches_instant_path(
            tick_nanos in prop_oneof![Just(1u64), Just(7), Just(1_000_000), 1u64..=u64::MAX],
            room in prop_oneof![Just(None), (0u64..20_000_000_000).prop_map(Some)],
            now_frac in 0.0f64..=1.0,
            delays in proptest::collection::vec(
                prop_oneof![
                    Just(0u64),
                    0u64..5_000_000_000,
                    0u64..=u64::MAX,
                ],
                1..6,
            ),
            big in prop_oneof![Just(Duration::MAX), (0u64..=u64::MAX, 0u32..1_000_000_000)
                .prop_map(|(s, n)| Duration::new(s, n))],
        ) {
            let origin = origin_with_room(room);
            let conv = TickConv::new(origin, Duration::from_nanos(tick_nanos));
            let limit = conv.limit();
            if let Some(room) = room {
                // The limit really is the end of the range.
                prop_assert!(limit <= room);
                prop_assert!(origin.checked_add(Duration::from_nanos(limit)).is_some());
                prop_assert!(origin.checked_add(Duration::from_nanos(limit + 1)).is_none());
            }
            // A `now` inside the range (the clocks never read past it).
            let span = room.unwrap_or(10_000_000_000).min(limit);
            let now_n = (span as f64 * now_frac) as u64;
            let now = origin + Duration::from_nanos(now_n);
            let left = limit - now_n;
            let edge = [left.saturating_sub(1), left, left.saturating_add(1)];
            let all = delays
                .into_iter()
                .chain(edge)
                .map(Duration::from_nanos)
                .chain([big]);
            for d in all {
                let slow = match now.checked_add(d) {
                    Some(at) => item_tick(&conv, at, now),
                    None => NEVER,
                };
                let fast = fast_delay_tick(&conv, now_n, d);
                let due = u128::from(now_n) + d.as_nanos();
                if due <= u128::from(limit) {
                    prop_assert_eq!(fast, Some(slow), "delay {:?} now {}", d, now_n);
                } else {
                    prop_assert_eq!(fast, None, "delay {:?} now {}", d, now_n);
                }
            }
        }
    }
}
