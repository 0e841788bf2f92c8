//! [`DelayQueueMut`]: a [`DelayQueue`] borrowed exclusively, used without
//! its lock.
//!
//! A `&mut DelayQueue` proves that no other thread, blocked taker or
//! [`TakeFuture`](super::TakeFuture) can reach the queue for as long as the
//! borrow lasts, so its state can be used directly, as
//! [`std::sync::Mutex::get_mut`] does. The operations are the very ones the
//! shared methods run under the lock (`State`'s methods, `state.rs`), so
//! both behave alike: same deadlines, same order, same
//! [`Closed`] after [`close`](DelayQueue::close), and the same bookkeeping
//! of waiting takers (which, under an exclusive borrow, can only be left
//! over from a take future that was leaked with `mem::forget`).
//!
//! What it saves: the lock's two atomic read-modify-write instructions per
//! operation (`docs/benchmarks.md` has the figures).

use std::fmt;
use std::time::{Duration, Instant};

use super::{Closed, DelayExpired, DelayKey, DelayQueue, Signal, State};
use crate::clock::TimeBase;
use crate::sync::{Arc, get_mut};

/// A [`DelayQueue`] borrowed exclusively (`&mut`), from
/// [`DelayQueue::exclusive`]: the same insert, remove, reset and
/// non-blocking take, without taking the queue's lock.
///
/// For a queue owned by one thread or one task, such as an event loop's
/// (the way tokio-util's `DelayQueue`, whose methods all take `&mut self`,
/// is used). Blocking and async takes need other threads or tasks to insert,
/// so they stay on the shared [`DelayQueue`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::{DelayQueue, ManualClock};
///
/// let clock = ManualClock::new();
/// let mut queue = DelayQueue::builder().clock(clock.clone()).build().unwrap();
/// let mut q = queue.exclusive();
/// let close = q.insert("close order 7", Duration::from_secs(30 * 60)).unwrap();
/// q.insert("rate order 8", Duration::from_secs(60)).unwrap();
/// assert_eq!(q.remove(close), Some("close order 7")); // paid in time
///
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(q.try_take(), Some("rate order 8"));
/// assert!(q.is_empty());
/// ```
pub struct DelayQueueMut<'a, T> {
    state: &'a mut State<T>,
    signal: &'a Arc<Signal>,
    time: &'a TimeBase,
}

impl<T> DelayQueue<T> {
    /// Borrows the queue exclusively, to use it without its lock (see
    /// [`DelayQueueMut`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut queue = wheel::DelayQueue::new();
    /// queue.exclusive().insert(1, Duration::ZERO).unwrap();
    /// assert_eq!(queue.try_take(), Some(1)); // the shared methods see it
    /// ```
    pub fn exclusive(&mut self) -> DelayQueueMut<'_, T> {
        DelayQueueMut {
            state: get_mut(&mut self.state),
            signal: &self.signal,
            time: &self.time,
        }
    }
}

impl<T> DelayQueueMut<'_, T> {
    /// [`DelayQueue::insert`]: adds `value`, due `delay` from now.
    ///
    /// # Errors
    ///
    /// [`Closed`] with the value if the queue was closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut queue = wheel::DelayQueue::new();
    /// let mut q = queue.exclusive();
    /// q.insert("now", Duration::ZERO).unwrap();
    /// assert_eq!(q.try_take(), Some("now"));
    /// ```
    pub fn insert(&mut self, value: T, delay: Duration) -> Result<DelayKey, Closed<T>> {
        let tick = self.time.delay_tick(delay);
        self.insert_tick(value, tick)
    }

    /// [`DelayQueue::insert_at`]: adds `value`, due at `deadline` (at once
    /// if `deadline` has passed).
    ///
    /// # Errors
    ///
    /// [`Closed`] with the value if the queue was closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Instant;
    /// let mut queue = wheel::DelayQueue::new();
    /// let mut q = queue.exclusive();
    /// q.insert_at('x', Instant::now()).unwrap();
    /// assert_eq!(q.try_take(), Some('x'));
    /// ```
    pub fn insert_at(&mut self, value: T, deadline: Instant) -> Result<DelayKey, Closed<T>> {
        let tick = self.time.at_tick(deadline);
        self.insert_tick(value, tick)
    }

    /// [`DelayQueue`]'s `insert_tick`, without the lock.
    fn insert_tick(&mut self, value: T, tick: u64) -> Result<DelayKey, Closed<T>> {
        let (key, wake) = self.state.add(self.signal, value, tick)?;
        if wake {
            self.signal.notify_taker();
        }
        Ok(key)
    }

    /// [`DelayQueue::remove`]: removes the item of `key` and returns it, or
    /// `None` if it already left the queue.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut queue = wheel::DelayQueue::new();
    /// let mut q = queue.exclusive();
    /// let k = q.insert(5, Duration::from_secs(9)).unwrap();
    /// assert_eq!(q.remove(k), Some(5));
    /// assert_eq!(q.remove(k), None);
    /// ```
    pub fn remove(&mut self, key: DelayKey) -> Option<T> {
        self.state.remove(key)
    }

    /// [`DelayQueue::reset`]: makes the item of `key` due `delay` from now
    /// instead; `false` if it already left the queue.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut queue = wheel::DelayQueue::new();
    /// let mut q = queue.exclusive();
    /// let k = q.insert("x", Duration::from_secs(3600)).unwrap();
    /// assert!(q.reset(k, Duration::ZERO));
    /// assert_eq!(q.try_take(), Some("x"));
    /// assert!(!q.reset(k, Duration::ZERO));
    /// ```
    pub fn reset(&mut self, key: DelayKey, delay: Duration) -> bool {
        let tick = self.time.delay_tick(delay);
        self.reset_tick(key, tick)
    }

    /// [`DelayQueue::reset_at`]: makes the item of `key` due at `deadline`
    /// instead (at once if `deadline` has passed); `false` if it already
    /// left the queue.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let mut queue = wheel::DelayQueue::new();
    /// let mut q = queue.exclusive();
    /// let k = q.insert("x", Duration::from_secs(3600)).unwrap();
    /// assert!(q.reset_at(k, Instant::now()));
    /// assert_eq!(q.try_take(), Some("x"));
    /// assert!(!q.reset_at(k, Instant::now()));
    /// ```
    pub fn reset_at(&mut self, key: DelayKey, deadline: Instant) -> bool {
        let tick = self.time.at_tick(deadline);
        self.reset_tick(key, tick)
    }

    /// [`DelayQueue`]'s `reset_tick`, without the lock.
    fn reset_tick(&mut self, key: DelayKey, tick: u64) -> bool {
        let (found, wake) = self.state.reset(self.signal, key, tick);
        if wake {
            self.signal.notify_taker();
        }
        found
    }

    /// [`DelayQueue::try_take`]: the earliest item if one is due now; `None`
    /// if nothing is due or the queue is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut queue = wheel::DelayQueue::new();
    /// let mut q = queue.exclusive();
    /// q.insert(1, Duration::from_secs(60)).unwrap();
    /// assert_eq!(q.try_take(), None);
    /// ```
    pub fn try_take(&mut self) -> Option<T> {
        self.state.try_take(self.time).map(|e| e.value)
    }

    /// [`DelayQueue::try_take_expired`]: the earliest due item with its key
    /// and deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut queue = wheel::DelayQueue::new();
    /// let mut q = queue.exclusive();
    /// let key = q.insert('x', Duration::ZERO).unwrap();
    /// assert_eq!(q.try_take_expired().map(|e| e.key()), Some(key));
    /// ```
    pub fn try_take_expired(&mut self) -> Option<DelayExpired<T>> {
        let e = self.state.try_take(self.time)?;
        Some(DelayExpired::new(e, self.time))
    }

    /// [`DelayQueue::deadline`]: when the item of `key` comes due; `None`
    /// if it left the queue or never comes due.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{DelayQueue, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut queue = DelayQueue::builder().clock(clock.clone()).build().unwrap();
    /// let mut q = queue.exclusive();
    /// let k = q.insert(1, Duration::from_secs(5)).unwrap();
    /// assert_eq!(q.deadline(k), Some(clock.now() + Duration::from_secs(5)));
    /// ```
    pub fn deadline(&self, key: DelayKey) -> Option<Instant> {
        self.state.deadline(self.time, key)
    }

    /// [`DelayQueue::peek`]: the key of the item that comes due first.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut queue = wheel::DelayQueue::new();
    /// let mut q = queue.exclusive();
    /// q.insert("later", Duration::from_secs(9)).unwrap();
    /// let first = q.insert("first", Duration::from_secs(1)).unwrap();
    /// assert_eq!(q.peek(), Some(first));
    /// ```
    pub fn peek(&self) -> Option<DelayKey> {
        self.state.peek()
    }

    /// [`DelayQueue::capacity`]: how many items fit before the queue
    /// allocates again.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut queue = wheel::DelayQueue::<u8>::with_capacity(32);
    /// assert!(queue.exclusive().capacity() >= 32);
    /// ```
    pub fn capacity(&self) -> usize {
        self.state.wheel.capacity()
    }

    /// [`DelayQueue::shrink_to_fit`]: releases memory kept for items that
    /// left the queue, as far as the items inside allow.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut queue = wheel::DelayQueue::new();
    /// let mut q = queue.exclusive();
    /// let k = q.insert(1, Duration::from_secs(1)).unwrap();
    /// q.remove(k);
    /// q.shrink_to_fit();
    /// assert_eq!(q.capacity(), 0);
    /// ```
    #[doc(alias = "compact")]
    pub fn shrink_to_fit(&mut self) {
        self.state.wheel.shrink_to_fit();
    }

    /// [`DelayQueue::clear`]: drops every item inside, due or not.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut queue = wheel::DelayQueue::new();
    /// let mut q = queue.exclusive();
    /// q.insert(1, Duration::from_secs(1)).unwrap();
    /// q.clear();
    /// assert!(q.is_empty());
    /// ```
    pub fn clear(&mut self) {
        self.state.clear();
    }

    /// The number of items inside, due or not.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut queue = wheel::DelayQueue::new();
    /// let mut q = queue.exclusive();
    /// q.insert((), Duration::from_secs(1)).unwrap();
    /// assert_eq!(q.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.state.wheel.len()
    }

    /// `true` if no item is inside.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut queue = wheel::DelayQueue::<u8>::new();
    /// assert!(queue.exclusive().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.state.wheel.is_empty()
    }
}

impl<T> fmt::Debug for DelayQueueMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayQueueMut")
            .field("len", &self.state.wheel.len())
            .field("closed", &self.state.closed)
            .finish_non_exhaustive()
    }
}
