//! Taking items out of a [`DelayQueue`]: at once
//! ([`try_take`](DelayQueue::try_take)), blocking
//! ([`take`](DelayQueue::take), [`take_timeout`](DelayQueue::take_timeout),
//! [`iter`](DelayQueue::iter)) or async ([`take_async`](DelayQueue::take_async),
//! [`TakeFuture`]).
//!
//! Each take has an `_expired` twin ([`try_take_expired`](DelayQueue::try_take_expired),
//! [`take_expired`](DelayQueue::take_expired),
//! [`take_timeout_expired`](DelayQueue::take_timeout_expired),
//! [`take_async_expired`](DelayQueue::take_async_expired),
//! [`TakeExpiredFuture`]) that returns the item as a [`DelayExpired`], with
//! its key and deadline; both run the same code and differ only in what
//! they keep of the wheel's entry.
//!
//! A blocking taker that finds nothing due sleeps on the signal (see
//! `signal.rs` for the wake-up protocol). One of them, the *leader*, sleeps
//! with a timeout until the earliest deadline; the others (*followers*)
//! sleep without one. A leader that leaves while followers wait and items
//! remain hands leadership on by waking one follower. An async taker that
//! finds nothing due registers its waker with the signal, whose helper
//! thread wakes it at the earliest deadline.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::signal::Signal;
use super::state::State;
use super::{DelayExpired, DelayQueue};
use crate::clock::NEVER;
use crate::core::Expired as Entry;
use crate::sync::lock;

impl<T> DelayQueue<T> {
    /// Returns the earliest due item, waiting as long as needed; `None`
    /// once the queue is closed (even if items remain: see
    /// [`drain`](Self::drain)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let q = wheel::DelayQueue::new();
    /// let start = Instant::now();
    /// q.insert("ping", Duration::from_millis(15)).unwrap();
    /// assert_eq!(q.take(), Some("ping"));
    /// assert!(start.elapsed() >= Duration::from_millis(15));
    /// ```
    pub fn take(&self) -> Option<T> {
        self.take_until(None).map(|e| e.value)
    }

    /// Like [`take`](Self::take), but gives up and returns `None` once
    /// `timeout` has passed on the queue's clock (with a [`ManualClock`](crate::ManualClock),
    /// once the clock has been advanced by `timeout`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.insert("later", Duration::from_secs(3600)).unwrap();
    /// assert_eq!(q.take_timeout(Duration::from_millis(5)), None);
    /// assert_eq!(q.len(), 1);
    /// ```
    pub fn take_timeout(&self, timeout: Duration) -> Option<T> {
        self.take_until(self.limit_after(timeout)).map(|e| e.value)
    }

    /// Returns the earliest item if one is due now, without waiting; `None`
    /// if nothing is due or the queue is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// assert_eq!(q.try_take(), None::<u8>);
    /// q.insert(3, Duration::ZERO).unwrap();
    /// assert_eq!(q.try_take(), Some(3));
    /// ```
    pub fn try_take(&self) -> Option<T> {
        lock(&self.state).try_take(&self.time).map(|e| e.value)
    }

    /// Waits for the earliest due item without blocking a thread; `None`
    /// once the queue is closed. Works on any executor.
    ///
    /// The first `take_async` that has to wait starts one helper thread for
    /// this queue, which sleeps until the earliest deadline while async
    /// takers wait and wakes them then; it is joined when the queue is
    /// dropped. Dropping the future withdraws its registration. If several
    /// async takers wait, all are woken when an item comes due and one gets
    /// it; the others wait again.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # use std::sync::Arc;
    /// # use std::task::{Context, Poll, Wake, Waker};
    /// # struct Unpark(std::thread::Thread);
    /// # impl Wake for Unpark { fn wake(self: Arc<Self>) { self.0.unpark() } }
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     let mut f = std::pin::pin!(f);
    /// #     let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    /// #     let mut cx = Context::from_waker(&waker);
    /// #     loop {
    /// #         if let Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; }
    /// #         std::thread::park();
    /// #     }
    /// # }
    /// let q = wheel::DelayQueue::new();
    /// q.insert("async", Duration::from_millis(5)).unwrap();
    /// // `block_on` is any executor, here a ten-line one.
    /// assert_eq!(block_on(q.take_async()), Some("async"));
    /// ```
    pub fn take_async(&self) -> TakeFuture<'_, T> {
        TakeFuture { queue: self, id: 0 }
    }

    /// [`take`](Self::take), returning the item with its key and deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// let key = q.insert("ping", Duration::from_millis(5)).unwrap();
    /// let e = q.take_expired().unwrap();
    /// assert_eq!((e.key(), e.into_inner()), (key, "ping"));
    /// ```
    pub fn take_expired(&self) -> Option<DelayExpired<T>> {
        let e = self.take_until(None)?;
        Some(DelayExpired::new(e, &self.time))
    }

    /// [`take_timeout`](Self::take_timeout), returning the item with its key
    /// and deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.insert("later", Duration::from_secs(3600)).unwrap();
    /// assert_eq!(q.take_timeout_expired(Duration::from_millis(5)), None);
    /// q.insert("now", Duration::ZERO).unwrap();
    /// let e = q.take_timeout_expired(Duration::from_millis(5)).unwrap();
    /// assert_eq!(e.into_inner(), "now");
    /// ```
    pub fn take_timeout_expired(&self, timeout: Duration) -> Option<DelayExpired<T>> {
        let e = self.take_until(self.limit_after(timeout))?;
        Some(DelayExpired::new(e, &self.time))
    }

    /// [`try_take`](Self::try_take), returning the item with its key and
    /// deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// assert!(q.try_take_expired().is_none());
    /// let key = q.insert(3, Duration::ZERO).unwrap();
    /// let e = q.try_take_expired().unwrap();
    /// assert_eq!((e.key(), *e.get_ref()), (key, 3));
    /// ```
    pub fn try_take_expired(&self) -> Option<DelayExpired<T>> {
        let e = lock(&self.state).try_take(&self.time)?;
        Some(DelayExpired::new(e, &self.time))
    }

    /// [`take_async`](Self::take_async), resolving to the item with its key
    /// and deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let q = wheel::DelayQueue::new();
    ///     let key = q.insert("hello", Duration::from_millis(2)).unwrap();
    ///     let e = q.take_async_expired().await.unwrap();
    ///     assert_eq!((e.key(), e.into_inner()), (key, "hello"));
    /// }
    /// ```
    pub fn take_async_expired(&self) -> TakeExpiredFuture<'_, T> {
        TakeExpiredFuture { queue: self, id: 0 }
    }

    /// A blocking iterator over the items as they come due; it ends when
    /// the queue is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// for i in 0..3 {
    ///     q.insert(i, Duration::from_millis(3 - i)).unwrap();
    /// }
    /// let got: Vec<u64> = q.iter().take(3).collect();
    /// assert_eq!(got, [2, 1, 0]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.take())
    }

    /// The clock's instant `timeout` from now (`None`: past the range of
    /// `Instant`, so never).
    fn limit_after(&self, timeout: Duration) -> Option<Instant> {
        self.time.now().checked_add(timeout)
    }

    /// The tick to wake at for the earliest pending item, no earlier than
    /// the tick after `now` (nothing is due at `now`), `NEVER` if empty.
    fn wake_tick(&self, st: &State<T>, now: Instant) -> u64 {
        match st.wheel.next_expiration() {
            Some(t) => t.max(self.time.conv().now_tick(now) + 1),
            None => NEVER,
        }
    }

    /// The blocking take: waits until an item is due, the queue is closed,
    /// or the clock reaches `limit`.
    fn take_until(&self, limit: Option<Instant>) -> Option<Entry<T>> {
        let mut st = lock(&self.state);
        let mut token = 0;
        let out = loop {
            // Read before the clock (see `signal`).
            let epoch = self.signal.epoch();
            if st.closed {
                break None;
            }
            let now = match st.poll_due(&self.time) {
                Ok(v) => break Some(v),
                Err(now) => now,
            };
            if limit.is_some_and(|l| now >= l) {
                break None;
            }
            let mut until = None;
            if st.leader == 0 && !st.wheel.is_empty() {
                let at = self.wake_tick(&st, now);
                st.tokens += 1;
                token = st.tokens;
                st.leader = token;
                st.leader_at = at;
                until = self.time.conv().instant_of(at);
            }
            until = match (until, limit) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            st.waiters += 1;
            drop(st);
            self.signal.wait_taker(epoch, until, self.time.is_manual());
            st = lock(&self.state);
            st.waiters -= 1;
            if token != 0 && st.leader == token {
                st.leader = 0;
            }
            token = 0;
        };
        // Hand leadership on if we leave followers behind with items inside.
        let handoff = st.waiters > 0 && st.leader == 0 && !st.closed && !st.wheel.is_empty();
        if handoff {
            self.signal.bump();
        }
        drop(st);
        if handoff {
            self.signal.notify_taker();
        }
        out
    }

    /// Withdraws an async registration: the future's `id` (if any), or,
    /// for `None`, the `poll_expired` registration of `waker`'s task.
    fn unregister(&self, st: &mut State<T>, id: Option<&mut u64>, waker: &Waker) {
        match id {
            Some(id) => {
                if *id != 0 {
                    if self.signal.unregister(*id) {
                        st.async_waiting = false;
                    }
                    *id = 0;
                }
            }
            // With nobody registered (the mirror says so), there is nothing
            // to withdraw: a stream draining due items skips the signal lock.
            None => {
                if st.async_waiting && self.signal.unregister_waker(waker) {
                    st.async_waiting = false;
                }
            }
        }
    }

    /// One poll of an async take: the earliest due item, `None` once the
    /// queue is closed, or `Pending` with the caller's waker registered
    /// for the earliest deadline. `id` is a future's registration; `None`
    /// stands for `poll_expired`, registered by its waker.
    pub(super) fn poll_take(
        &self,
        id: Option<&mut u64>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Entry<T>>> {
        let mut st = lock(&self.state);
        if st.closed {
            self.unregister(&mut st, id, cx.waker());
            return Poll::Ready(None);
        }
        let now = match st.poll_due(&self.time) {
            Ok(e) => {
                self.unregister(&mut st, id, cx.waker());
                return Poll::Ready(Some(e));
            }
            Err(now) => now,
        };
        let at = self.wake_tick(&st, now);
        match Signal::register(&self.signal, id, cx.waker(), at, &self.time) {
            Some(deadline) => {
                st.async_waiting = true;
                st.async_at = deadline;
            }
            // No helper thread: stay live by asking to be polled again.
            None => cx.waker().wake_by_ref(),
        }
        Poll::Pending
    }
}

/// The future of [`DelayQueue::take_async`]: resolves to the earliest due
/// item, or `None` once the queue is closed.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let q = wheel::DelayQueue::new();
///     q.insert("hello", Duration::from_millis(2)).unwrap();
///     let fut: wheel::TakeFuture<'_, &str> = q.take_async();
///     assert_eq!(fut.await, Some("hello"));
/// }
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct TakeFuture<'a, T> {
    queue: &'a DelayQueue<T>,
    /// Registration id with the signal (0: not registered).
    id: u64,
}

impl<T> Future for TakeFuture<'_, T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        this.queue
            .poll_take(Some(&mut this.id), cx)
            .map(|e| e.map(|e| e.value))
    }
}

impl<T> Drop for TakeFuture<'_, T> {
    fn drop(&mut self) {
        withdraw(self.queue, &mut self.id);
    }
}

/// Withdraws a dropped future's registration `id` (if any).
fn withdraw<T>(queue: &DelayQueue<T>, id: &mut u64) {
    if *id != 0 {
        let mut st = lock(&queue.state);
        queue.unregister(&mut st, Some(id), Waker::noop());
    }
}

impl<T> fmt::Debug for TakeFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TakeFuture")
            .field("registered", &(self.id != 0))
            .finish_non_exhaustive()
    }
}

/// The future of [`DelayQueue::take_async_expired`]: resolves to the
/// earliest due item with its key and deadline, or `None` once the queue is
/// closed. It behaves as [`TakeFuture`] does.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let q = wheel::DelayQueue::new();
///     q.insert("hello", Duration::from_millis(2)).unwrap();
///     let fut: wheel::TakeExpiredFuture<'_, &str> = q.take_async_expired();
///     assert_eq!(fut.await.map(|e| e.into_inner()), Some("hello"));
/// }
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct TakeExpiredFuture<'a, T> {
    queue: &'a DelayQueue<T>,
    /// Registration id with the signal (0: not registered).
    id: u64,
}

impl<T> Future for TakeExpiredFuture<'_, T> {
    type Output = Option<DelayExpired<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let q = this.queue;
        q.poll_take(Some(&mut this.id), cx)
            .map(|e| e.map(|e| DelayExpired::new(e, &q.time)))
    }
}

impl<T> Drop for TakeExpiredFuture<'_, T> {
    fn drop(&mut self) {
        withdraw(self.queue, &mut self.id);
    }
}

impl<T> fmt::Debug for TakeExpiredFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TakeExpiredFuture")
            .field("registered", &(self.id != 0))
            .finish_non_exhaustive()
    }
}
