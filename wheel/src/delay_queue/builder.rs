//! [`DelayQueueBuilder`]: the tick, clock and capacity of a
//! [`DelayQueue`].

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use super::{DEFAULT_TICK, DelayQueue};
use crate::clock::{ManualClock, check_tick};
use crate::core::Tuning;
use crate::error::BuildError;

/// Configures a [`DelayQueue`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let q = wheel::DelayQueue::<String>::builder()
///     .tick(Duration::from_micros(100))
///     .build()
///     .unwrap();
/// assert!(q.is_empty());
/// ```
pub struct DelayQueueBuilder<T> {
    tick: Duration,
    clock: Option<ManualClock>,
    capacity: usize,
    /// The wheel's tuning: always the default outside the tests, whose
    /// harness also runs the small one (see `Tuning`).
    tuning: Tuning,
    _items: PhantomData<fn() -> T>,
}

impl<T> DelayQueueBuilder<T> {
    /// The defaults: a 1 ms tick, the system clock, no room reserved.
    pub(super) fn new() -> Self {
        DelayQueueBuilder {
            tick: DEFAULT_TICK,
            clock: None,
            capacity: 0,
            tuning: Tuning::DEFAULT,
            _items: PhantomData,
        }
    }
}

impl<T> DelayQueueBuilder<T> {
    /// The resolution of deadlines (default 1 ms). Items come out at the
    /// first tick boundary at or after their deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let err = wheel::DelayQueue::<u8>::builder().tick(Duration::ZERO).build();
    /// assert!(matches!(err, Err(wheel::BuildError::ZeroTick)));
    /// ```
    pub fn tick(self, tick: Duration) -> Self {
        DelayQueueBuilder { tick, ..self }
    }

    /// Uses `clock` instead of the system clock: items come due only when
    /// the clock is [advanced](ManualClock::advance), which also wakes
    /// blocked takers. The queue never reads the system clock then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{DelayQueue, ManualClock};
    /// let clock = ManualClock::new();
    /// let q = DelayQueue::builder().clock(clock.clone()).build().unwrap();
    /// q.insert("rated", Duration::from_secs(48 * 3600)).unwrap();
    /// clock.advance(Duration::from_secs(48 * 3600));
    /// assert_eq!(q.try_take(), Some("rated"));
    /// ```
    pub fn clock(self, clock: ManualClock) -> Self {
        DelayQueueBuilder {
            clock: Some(clock),
            ..self
        }
    }

    /// Reserves room for `n` items up front (default 0: grow on demand).
    ///
    /// # Examples
    ///
    /// ```
    /// let q = wheel::DelayQueue::<u64>::builder().capacity(10_000).build().unwrap();
    /// assert_eq!(q.len(), 0);
    /// ```
    pub fn capacity(self, n: usize) -> Self {
        DelayQueueBuilder {
            capacity: n,
            ..self
        }
    }

    /// Builds the queue.
    ///
    /// # Errors
    ///
    /// [`BuildError::ZeroTick`] for a zero tick,
    /// [`BuildError::TickTooLong`] for a tick over `u64::MAX` nanoseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{BuildError, DelayQueue};
    /// let r = DelayQueue::<u8>::builder().tick(Duration::MAX).build();
    /// assert!(matches!(r, Err(BuildError::TickTooLong)));
    /// assert!(DelayQueue::<u8>::builder().build().is_ok());
    /// ```
    pub fn build(self) -> Result<DelayQueue<T>, BuildError> {
        check_tick(self.tick)?;
        Ok(DelayQueue::from_parts(
            self.tick,
            self.clock,
            self.capacity,
            self.tuning,
        ))
    }

    /// The wheel's tuning, for the harness that runs both.
    #[cfg(any(test, fuzzing))]
    pub(crate) fn tuning(self, tuning: Tuning) -> Self {
        DelayQueueBuilder { tuning, ..self }
    }
}

impl<T> fmt::Debug for DelayQueueBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayQueueBuilder")
            .field("tick", &self.tick)
            .field("manual_clock", &self.clock.is_some())
            .field("capacity", &self.capacity)
            .finish()
    }
}
