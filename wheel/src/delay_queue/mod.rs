//! [`DelayQueue`]: a multi-producer, multi-consumer queue of values that
//! each become available at their own deadline.
//!
//! # Design
//!
//! One mutex (the *state lock*) guards a core [`Wheel`](crate::Wheel)
//! holding the items, the `closed` flag and the bookkeeping of blocked
//! consumers (`state.rs`). Producers and consumers take it once per
//! operation; nothing is allocated per item once the wheel's slab has grown
//! to the working-set size. [`DelayQueueMut`] (`exclusive.rs`) runs the same
//! operations without the lock, under an exclusive borrow.
//!
//! Blocked consumers sleep on a condition variable of the type-free
//! `signal` part (see its docs for the wake-up protocol). To avoid a
//! thundering herd, one blocked consumer, the *leader*, sleeps with a
//! timeout until the earliest deadline; the others (*followers*) sleep
//! without a timeout (`take.rs`). A producer wakes a consumer only if one
//! is blocked and the new item is due before the leader's planned wake-up
//! (or there is no leader).
//!
//! Deadlines are wheel ticks from the queue's origin, converted by the
//! queue's [`TimeBase`]: a deadline instant rounds *up* to a tick, the
//! current instant rounds *down*, so an item is never handed out before its
//! deadline. An instant at or before "now" maps to the current tick (due at
//! once). The invariants of the shared state are in `state.rs`.
//!
//! - this file: [`DelayQueue`], [`DelayKey`], [`Closed`]; construction,
//!   insert, remove, reset, close, drain.
//! - `take.rs`: the non-blocking, blocking and async takes, [`TakeFuture`],
//!   [`TakeExpiredFuture`].
//! - `expired.rs`: [`DelayExpired`], what the `*_expired` takes return.
//! - `stream.rs`: `poll_expired`, and the `Stream` implementations (feature
//!   `stream`).
//! - `inspect.rs`: `deadline`, `peek`, `capacity`, `shrink_to_fit`,
//!   `clear`, `with_capacity`.
//! - `state.rs`: what the state lock guards, and the operations on it.
//! - `signal.rs`: the wake-up side, free of the item type.
//! - `exclusive.rs`: [`DelayQueueMut`].
//! - `builder.rs`: [`DelayQueueBuilder`].

use std::fmt;
use std::time::{Duration, Instant};

use crate::clock::{Clock, ManualClock, TimeBase};
use crate::core::{TimerKey, Tuning};
use crate::sync::{Arc, Mutex, lock};

mod builder;
mod exclusive;
mod expired;
#[cfg(any(test, fuzzing))]
pub(crate) mod fuzz;
mod inspect;
mod signal;
mod state;
mod stream;
mod take;

pub use self::builder::DelayQueueBuilder;
pub use self::exclusive::DelayQueueMut;
pub use self::expired::DelayExpired;
pub use self::take::{TakeExpiredFuture, TakeFuture};

use self::signal::Signal;
use self::state::State;

/// The tick of [`DelayQueue::new`] and of a default builder: 1 ms.
const DEFAULT_TICK: Duration = Duration::from_millis(1);

/// Identifies an item in a [`DelayQueue`], for [`remove`](DelayQueue::remove),
/// [`reset`](DelayQueue::reset) and [`deadline`](DelayQueue::deadline); the
/// key of a taken item is in its [`DelayExpired`].
///
/// Keys are generational: once the item was taken, removed or drained, its
/// key answers `None`/`false` and never touches another item, even after
/// the slot was reused. A key must only be used with the queue that issued
/// it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::DelayQueue;
///
/// let q = DelayQueue::new();
/// let key = q.insert("late", Duration::from_secs(60)).unwrap();
/// assert_eq!(q.remove(key), Some("late"));
/// assert_eq!(q.remove(key), None); // stale key
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DelayKey(TimerKey);

/// The error of an insert into a closed [`DelayQueue`]; it gives the value
/// back.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::{Closed, DelayQueue};
///
/// let q = DelayQueue::new();
/// q.close();
/// let err = q.insert(7, Duration::ZERO).unwrap_err();
/// assert_eq!(err, Closed(7));
/// assert_eq!(err.to_string(), "the delay queue is closed");
/// assert_eq!(err.into_inner(), 7);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Closed<T>(pub T);

impl<T> Closed<T> {
    /// The value that could not be inserted.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = wheel::Closed("job");
    /// assert_eq!(err.into_inner(), "job");
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Display for Closed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the delay queue is closed")
    }
}

impl<T: fmt::Debug> std::error::Error for Closed<T> {}

/// A queue of values that each become available at their own deadline.
///
/// Producers [`insert`](Self::insert) values with a delay (or
/// [`insert_at`](Self::insert_at) a deadline); consumers [`take`](Self::take)
/// them once due, in deadline order (ties in insert order), never before
/// their deadline, each exactly once, from any number of threads. Share it
/// by reference (scoped threads) or in an `Arc`; it is `Send + Sync` when
/// `T: Send`.
///
/// Deadlines have the resolution of the queue's tick (1 ms by default): an
/// item comes out at the first tick boundary at or after its deadline, and
/// items due within the same tick come out in insert order.
///
/// A blocked consumer sleeps until the earliest deadline and is woken early
/// only when an earlier item arrives, an item is reset earlier, the queue is
/// closed, or its [`ManualClock`] advances. No polling loop.
///
/// # Closing
///
/// [`close`](Self::close) wakes every blocked consumer, which returns
/// `None`. From then on every take (`take*`, `try_take*`, `take_async*`,
/// [`poll_expired`](Self::poll_expired)) returns `None` even if items
/// remain, `iter` and the `Stream` end, and `insert` hands the value back
/// in [`Closed`]. [`drain`](Self::drain), [`remove`](Self::remove),
/// [`reset`](Self::reset) and [`reset_at`](Self::reset_at) keep working, so
/// nothing is lost: `drain` returns every item still inside, due or not.
/// `close`, not `shutdown`, because the queue is channel-like: closing
/// stops the flow and keeps the items, whereas
/// [`Scheduler::shutdown`](crate::Scheduler::shutdown) stops threads and
/// drops the timers it held.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::DelayQueue;
///
/// let q = DelayQueue::new();
/// q.insert("second", Duration::from_millis(20)).unwrap();
/// q.insert("first", Duration::from_millis(10)).unwrap();
/// assert_eq!(q.take(), Some("first"));
/// assert_eq!(q.take(), Some("second"));
/// assert!(q.is_empty());
/// ```
pub struct DelayQueue<T> {
    state: Mutex<State<T>>,
    signal: Arc<Signal>,
    time: TimeBase,
    /// Registered with the manual clock (held weakly there).
    _listener: Option<std::sync::Arc<dyn Fn() + Send + Sync>>,
}

impl<T> DelayQueue<T> {
    /// A queue with a 1 ms tick on the system's monotonic clock.
    ///
    /// # Examples
    ///
    /// ```
    /// let q: wheel::DelayQueue<u32> = wheel::DelayQueue::new();
    /// assert!(q.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::from_parts(DEFAULT_TICK, None, 0, Tuning::DEFAULT)
    }

    /// A builder to choose the tick, a [`ManualClock`] and the capacity.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{DelayQueue, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let q = DelayQueue::builder()
    ///     .tick(Duration::from_millis(10))
    ///     .clock(clock.clone())
    ///     .capacity(1024)
    ///     .build()
    ///     .unwrap();
    /// q.insert("x", Duration::from_secs(1)).unwrap();
    /// assert_eq!(q.try_take(), None);
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(q.try_take(), Some("x"));
    /// ```
    pub fn builder() -> DelayQueueBuilder<T> {
        DelayQueueBuilder::new()
    }

    /// Builds a queue from a validated tick.
    pub(super) fn from_parts(
        tick: Duration,
        manual: Option<ManualClock>,
        capacity: usize,
        tuning: Tuning,
    ) -> Self {
        let clock = match manual {
            Some(m) => Clock::Manual(m),
            None => Clock::System,
        };
        let time = TimeBase::new(clock, tick);
        let signal = Arc::new(Signal::new());
        let listener = time.manual().map(|m| {
            let sig = Arc::clone(&signal);
            let l: std::sync::Arc<dyn Fn() + Send + Sync> =
                std::sync::Arc::new(move || sig.on_advance());
            m.on_advance(&l);
            l
        });
        DelayQueue {
            state: Mutex::new(State::new(capacity, tuning)),
            signal,
            time,
            _listener: listener,
        }
    }

    /// Adds `value`, due `delay` from now. A zero delay makes it due at
    /// once; a delay past the range of `Instant` means it never comes due
    /// (only `remove` or `drain` return it).
    ///
    /// # Errors
    ///
    /// [`Closed`] with the value if the queue was closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.insert(1, Duration::ZERO).unwrap();
    /// assert_eq!(q.try_take(), Some(1));
    /// ```
    pub fn insert(&self, value: T, delay: Duration) -> Result<DelayKey, Closed<T>> {
        self.insert_tick(value, self.time.delay_tick(delay))
    }

    /// Adds `value`, due at `deadline` (at once if `deadline` has passed).
    ///
    /// # Errors
    ///
    /// [`Closed`] with the value if the queue was closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let q = wheel::DelayQueue::new();
    /// q.insert_at("now", Instant::now()).unwrap();
    /// q.insert_at("soon", Instant::now() + Duration::from_millis(5)).unwrap();
    /// assert_eq!(q.take(), Some("now"));
    /// assert_eq!(q.take(), Some("soon"));
    /// ```
    pub fn insert_at(&self, value: T, deadline: Instant) -> Result<DelayKey, Closed<T>> {
        self.insert_tick(value, self.time.at_tick(deadline))
    }

    /// Adds `value` at wheel tick `tick`, and wakes a taker if it is due
    /// before the one a blocked taker waits for.
    fn insert_tick(&self, value: T, tick: u64) -> Result<DelayKey, Closed<T>> {
        // The guard is dropped at the end of the statement: the taker is
        // woken after the lock is released.
        let (key, wake) = lock(&self.state).add(&self.signal, value, tick)?;
        if wake {
            self.signal.notify_taker();
        }
        Ok(key)
    }

    /// Removes the item of `key` and returns it, or `None` if it already
    /// left the queue. Works after [`close`](Self::close) too.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// let k = q.insert("order-7", Duration::from_secs(3600)).unwrap();
    /// assert_eq!(q.remove(k), Some("order-7"));
    /// assert!(q.is_empty());
    /// ```
    pub fn remove(&self, key: DelayKey) -> Option<T> {
        lock(&self.state).remove(key)
    }

    /// Makes the item of `key` due `delay` from now instead; `false` if it
    /// already left the queue. Among items due in the same tick, a reset
    /// item counts as inserted now.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// let k = q.insert("x", Duration::from_secs(3600)).unwrap();
    /// assert!(q.reset(k, Duration::ZERO));
    /// assert_eq!(q.take(), Some("x"));
    /// assert!(!q.reset(k, Duration::ZERO));
    /// ```
    pub fn reset(&self, key: DelayKey, delay: Duration) -> bool {
        self.reset_tick(key, self.time.delay_tick(delay))
    }

    /// Makes the item of `key` due at `deadline` instead (at once if
    /// `deadline` has passed); `false` if it already left the queue. Among
    /// items due in the same tick, a reset item counts as inserted now.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let q = wheel::DelayQueue::new();
    /// let k = q.insert("x", Duration::from_secs(3600)).unwrap();
    /// assert!(q.reset_at(k, Instant::now()));
    /// assert_eq!(q.take(), Some("x"));
    /// assert!(!q.reset_at(k, Instant::now()));
    /// ```
    pub fn reset_at(&self, key: DelayKey, deadline: Instant) -> bool {
        self.reset_tick(key, self.time.at_tick(deadline))
    }

    /// Moves the item of `key` to wheel tick `tick`, and wakes a taker if
    /// it is now due before the one a blocked taker waits for.
    fn reset_tick(&self, key: DelayKey, tick: u64) -> bool {
        let (found, wake) = lock(&self.state).reset(&self.signal, key, tick);
        if wake {
            self.signal.notify_taker();
        }
        found
    }

    /// Closes the queue, as one closes a channel: every blocked taker and
    /// every waiting [`take_async`](Self::take_async) wakes and gets `None`,
    /// later takes get `None`, and [`insert`](Self::insert) and
    /// [`insert_at`](Self::insert_at) hand the value back in [`Closed`].
    ///
    /// Pending items are neither handed out nor dropped: they stay inside,
    /// and [`drain`](Self::drain), [`remove`](Self::remove),
    /// [`reset`](Self::reset) and [`reset_at`](Self::reset_at) keep working
    /// on them (items nobody drains are dropped with the queue). A second
    /// call does nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.insert("kept", Duration::from_secs(60)).unwrap();
    /// std::thread::scope(|s| {
    ///     let taker = s.spawn(|| q.take());
    ///     q.close();
    ///     assert_eq!(taker.join().unwrap(), None);
    /// });
    /// assert_eq!(q.drain(), ["kept"]);
    /// ```
    pub fn close(&self) {
        let mut st = lock(&self.state);
        if st.closed {
            return;
        }
        st.closed = true;
        st.async_waiting = false;
        self.signal.bump();
        drop(st);
        self.signal.close();
    }

    /// `true` once [`close`](Self::close) was called.
    ///
    /// # Examples
    ///
    /// ```
    /// let q = wheel::DelayQueue::<()>::new();
    /// assert!(!q.is_closed());
    /// q.close();
    /// assert!(q.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// Removes and returns every item still inside, due or not, in
    /// deadline order (the order among items due in the same tick is
    /// unspecified). Works whether or not the queue is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.insert("b", Duration::from_secs(20)).unwrap();
    /// q.insert("a", Duration::from_secs(10)).unwrap();
    /// q.close();
    /// assert_eq!(q.drain(), ["a", "b"]);
    /// assert!(q.is_empty());
    /// ```
    pub fn drain(&self) -> Vec<T> {
        let mut all: Vec<(u64, T)> = {
            let mut st = lock(&self.state);
            st.wheel.drain().map(|e| (e.deadline, e.value)).collect()
        };
        all.sort_by_key(|e| e.0);
        all.into_iter().map(|e| e.1).collect()
    }

    /// The number of items inside, due or not.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.insert((), Duration::from_secs(1)).unwrap();
    /// assert_eq!(q.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        lock(&self.state).wheel.len()
    }

    /// `true` if no item is inside.
    ///
    /// # Examples
    ///
    /// ```
    /// let q = wheel::DelayQueue::<u8>::new();
    /// assert!(q.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        lock(&self.state).wheel.is_empty()
    }
}

impl<T> Default for DelayQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for DelayQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = lock(&self.state);
        f.debug_struct("DelayQueue")
            .field("len", &st.wheel.len())
            .field("closed", &st.closed)
            .field("async_takers", &self.signal.registered())
            .field("tick", &self.time.conv().tick_len())
            .finish_non_exhaustive()
    }
}

impl<T> Drop for DelayQueue<T> {
    fn drop(&mut self) {
        self.signal.stop_helper();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn insert_and_reset_use_it_on_a_manual_clock() {
        let clock = ManualClock::new();
        let q = DelayQueue::builder().clock(clock.clone()).build().unwrap();
        clock.advance(Duration::from_micros(2_500));
        let a = q.insert('a', Duration::from_micros(1_500)).unwrap(); // 4.0 ms: tick 4
        q.insert('b', Duration::ZERO).unwrap(); // current tick 2
        q.insert('c', Duration::MAX).unwrap(); // never
        let d = q.insert('d', Duration::from_millis(10)).unwrap();
        assert!(q.reset(d, Duration::from_nanos(1))); // 2.500001 ms: tick 3
        assert_eq!(q.try_take(), Some('b'));
        assert_eq!(q.try_take(), None);
        clock.advance(Duration::from_micros(500)); // 3.0 ms
        assert_eq!(q.try_take(), Some('d'));
        clock.advance(Duration::from_micros(999)); // 3.999 ms
        assert_eq!(q.try_take(), None);
        clock.advance(Duration::from_nanos(1_000)); // 4.0 ms
        assert_eq!(q.try_take(), Some('a'));
        assert!(q.remove(a).is_none());
        clock.advance(Duration::MAX);
        assert_eq!(q.try_take(), None);
        assert_eq!(q.drain(), vec!['c']);
    }
}
