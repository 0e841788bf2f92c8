//! Looking into a [`DelayQueue`] without taking from it, and managing its
//! memory: [`deadline`](DelayQueue::deadline), [`peek`](DelayQueue::peek),
//! [`with_capacity`](DelayQueue::with_capacity),
//! [`capacity`](DelayQueue::capacity),
//! [`shrink_to_fit`](DelayQueue::shrink_to_fit), [`clear`](DelayQueue::clear).
//!
//! Each takes the state lock once and changes no deadline, so none of them
//! wakes a taker.

use std::time::Instant;

use super::{DEFAULT_TICK, DelayKey, DelayQueue};
use crate::core::Tuning;
use crate::sync::lock;

impl<T> DelayQueue<T> {
    /// A queue with a 1 ms tick on the system's monotonic clock and room
    /// for `capacity` items before it allocates (the builder's
    /// [`capacity`](super::DelayQueueBuilder::capacity)).
    ///
    /// # Examples
    ///
    /// ```
    /// let q: wheel::DelayQueue<u32> = wheel::DelayQueue::with_capacity(100);
    /// assert!(q.capacity() >= 100);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self::from_parts(DEFAULT_TICK, None, capacity, Tuning::DEFAULT)
    }

    /// The instant the item of `key` comes due: its deadline rounded up to
    /// the queue's tick (the current tick's start for one inserted or reset
    /// to a deadline that had passed). `None` if the item already left the
    /// queue, or never comes due (a delay past the range of `Instant`).
    ///
    /// tokio-util's `deadline` panics on a stale key; this one answers
    /// `None`, as [`remove`](Self::remove) and [`reset`](Self::reset) do.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{DelayQueue, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let q = DelayQueue::builder().clock(clock.clone()).build().unwrap();
    /// let key = q.insert("x", Duration::from_micros(2_500)).unwrap();
    /// assert_eq!(q.deadline(key), Some(clock.now() + Duration::from_millis(3)));
    /// q.remove(key);
    /// assert_eq!(q.deadline(key), None);
    /// ```
    pub fn deadline(&self, key: DelayKey) -> Option<Instant> {
        lock(&self.state).deadline(&self.time, key)
    }

    /// The key of the item that comes due first, due yet or not; `None` if
    /// the queue is empty. Works after [`close`](Self::close) too.
    ///
    /// If an item is due and the wheel has reached its tick (a take has
    /// seen it), this is exactly the item the next take returns, found in
    /// O(1). Otherwise the items are scanned, in time linear in
    /// [`len`](Self::len) and under the lock: for a large queue, call it
    /// sparingly. Among items that come due in the same tick it then names
    /// one of them, not necessarily the first to be taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// assert_eq!(q.peek(), None);
    /// q.insert("later", Duration::from_secs(20)).unwrap();
    /// let soon = q.insert("soon", Duration::from_secs(10)).unwrap();
    /// assert_eq!(q.peek(), Some(soon));
    /// ```
    pub fn peek(&self) -> Option<DelayKey> {
        lock(&self.state).peek()
    }

    /// How many items fit before the queue allocates again.
    ///
    /// # Examples
    ///
    /// ```
    /// let q = wheel::DelayQueue::<u8>::builder().capacity(64).build().unwrap();
    /// assert!(q.capacity() >= 64);
    /// ```
    pub fn capacity(&self) -> usize {
        lock(&self.state).wheel.capacity()
    }

    /// Releases memory kept for items that left the queue, as far as the
    /// items still inside allow: the wheel's slab is cut after its last
    /// occupied slot and the slot storage compacted. Keys stay valid (there
    /// is no re-mapping, so unlike tokio-util's `compact` a live item in a
    /// high slot keeps the slab that long); the queue allocates again as it
    /// grows.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// let keys: Vec<_> = (0..1000).map(|i| q.insert(i, Duration::from_secs(9)).unwrap()).collect();
    /// for k in keys {
    ///     q.remove(k);
    /// }
    /// q.shrink_to_fit();
    /// assert_eq!(q.capacity(), 0);
    /// ```
    #[doc(alias = "compact")]
    pub fn shrink_to_fit(&self) {
        lock(&self.state).wheel.shrink_to_fit();
    }

    /// Drops every item inside, due or not; their keys become stale. The
    /// capacity is kept (see [`shrink_to_fit`](Self::shrink_to_fit)); to
    /// keep the items, use [`drain`](Self::drain). Works after
    /// [`close`](Self::close) too, and does not reopen the queue.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// let k = q.insert("a", Duration::from_secs(1)).unwrap();
    /// q.insert("b", Duration::ZERO).unwrap();
    /// q.clear();
    /// assert!(q.is_empty());
    /// assert_eq!(q.remove(k), None);
    /// ```
    pub fn clear(&self) {
        let items = lock(&self.state).clear();
        // Dropped after the lock is released: an item's `Drop` may use the
        // queue.
        drop(items);
    }
}
