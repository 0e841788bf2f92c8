//! [`DelayExpired`]: an item taken from a [`DelayQueue`](super::DelayQueue)
//! together with the key it had and the deadline it came due at.
//!
//! Built only by the `*_expired` takes, `poll_expired` and the `Stream`
//! implementations, from the wheel's entry, under the state lock or an
//! exclusive borrow; immutable afterwards except through
//! [`get_mut`](DelayExpired::get_mut).

use std::time::Instant;

use super::DelayKey;
use crate::clock::TimeBase;
use crate::core::Expired as Entry;

/// An item taken from a [`DelayQueue`](super::DelayQueue), with its (now
/// stale) key and the deadline it came due at, from
/// [`try_take_expired`](super::DelayQueue::try_take_expired),
/// [`take_expired`](super::DelayQueue::take_expired),
/// [`take_timeout_expired`](super::DelayQueue::take_timeout_expired),
/// [`take_async_expired`](super::DelayQueue::take_async_expired),
/// [`poll_expired`](super::DelayQueue::poll_expired) and the `Stream`
/// implementations (feature `stream`).
///
/// The accessors have tokio-util's names (`tokio_util::time::delay_queue::Expired`);
/// the type is named `DelayExpired` because [`wheel::Expired`](crate::Expired)
/// is the core wheel's entry. A port writes
/// `use wheel::DelayExpired as Expired;`.
///
/// [`deadline`](Self::deadline) is the start of the tick the item came due
/// in: the requested deadline rounded up to the queue's tick, or, for an
/// item inserted or reset to a deadline that had passed, the tick that was
/// current then (as tokio-util reports it, at its 1 ms resolution).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::{DelayQueue, ManualClock};
///
/// let clock = ManualClock::new();
/// let q = DelayQueue::builder().clock(clock.clone()).build().unwrap();
/// let start = clock.now();
/// let key = q.insert("rate order 8", Duration::from_millis(30)).unwrap();
/// clock.advance(Duration::from_millis(45));
/// let mut e = q.try_take_expired().unwrap();
/// assert_eq!(e.key(), key);
/// assert_eq!(e.deadline(), start + Duration::from_millis(30));
/// *e.get_mut() = "rated order 8";
/// assert_eq!(e.get_ref(), &"rated order 8");
/// assert_eq!(e.into_inner(), "rated order 8");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[doc(alias = "Expired")]
pub struct DelayExpired<T> {
    value: T,
    key: DelayKey,
    deadline: Instant,
}

impl<T> DelayExpired<T> {
    /// Wraps the wheel's entry of a due item: its tick becomes an instant.
    pub(super) fn new(entry: Entry<T>, time: &TimeBase) -> DelayExpired<T> {
        // A due item's tick is at or before the current tick, so its start
        // is an `Instant` at or before now; the fallback only keeps this
        // free of a panic path.
        let deadline = time
            .conv()
            .instant_of(entry.deadline)
            .unwrap_or_else(|| time.now());
        DelayExpired {
            value: entry.value,
            key: DelayKey(entry.key),
            deadline,
        }
    }

    /// The item.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.insert(7, Duration::ZERO).unwrap();
    /// assert_eq!(q.try_take_expired().unwrap().get_ref(), &7);
    /// ```
    pub fn get_ref(&self) -> &T {
        &self.value
    }

    /// The item, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.insert(vec![1], Duration::ZERO).unwrap();
    /// let mut e = q.try_take_expired().unwrap();
    /// e.get_mut().push(2);
    /// assert_eq!(e.into_inner(), [1, 2]);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// The item, by value.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.insert("job", Duration::ZERO).unwrap();
    /// assert_eq!(q.try_take_expired().map(|e| e.into_inner()), Some("job"));
    /// ```
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The key the item had; stale now that it left the queue.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// let key = q.insert('x', Duration::ZERO).unwrap();
    /// let e = q.try_take_expired().unwrap();
    /// assert_eq!(e.key(), key);
    /// assert_eq!(q.remove(key), None);
    /// ```
    pub fn key(&self) -> DelayKey {
        self.key
    }

    /// The instant the item came due: the start of its tick (see the type's
    /// docs).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let q = wheel::DelayQueue::new();
    /// q.insert((), Duration::ZERO).unwrap();
    /// assert!(q.try_take_expired().unwrap().deadline() <= Instant::now());
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}
