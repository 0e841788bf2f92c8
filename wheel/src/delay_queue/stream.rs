//! Polling a [`DelayQueue`] by hand: [`poll_expired`](DelayQueue::poll_expired),
//! and, with the feature `stream`, `futures_core::Stream` for
//! `DelayQueue<T>` and `&DelayQueue<T>`, so that
//! `while let Some(e) = q.next().await` works as with tokio-util's queue.
//!
//! A caller of `poll_expired` has no future to keep a registration id in,
//! so it is registered with the signal under its waker (id 0, one entry
//! per task; see `signal.rs`): every task that got `Pending` is woken when
//! an item comes due or the queue closes, and a task's entry is withdrawn
//! when its poll returns `Ready`.

use std::task::{Context, Poll};

use super::{DelayExpired, DelayQueue};

impl<T> DelayQueue<T> {
    /// Takes the earliest due item with its key and deadline, or registers
    /// the task to be woken when one may be due; `Ready(None)` once the
    /// queue is closed.
    ///
    /// tokio-util's `poll_expired` answers `Ready(None)` as soon as its
    /// queue is empty, since its owner is the only one who can insert.
    /// Ours is shared and other producers may insert at any time, so an
    /// empty open queue answers `Pending`, and the end of the stream is
    /// [`close`](Self::close) (as for a channel). To stop on empty, check
    /// [`is_empty`](Self::is_empty) first.
    ///
    /// Several tasks may poll at once: each one that got `Pending` is
    /// woken when an item comes due (one gets it, the others are `Pending`
    /// again), on an earlier insert or reset, and on `close`. A task's
    /// registration lasts until it is woken or its poll returns `Ready`; a
    /// task that stops polling is woken once more at most.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::time::Duration;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let q = wheel::DelayQueue::new();
    ///     q.insert("b", Duration::from_millis(4)).unwrap();
    ///     q.insert("a", Duration::from_millis(2)).unwrap();
    ///     let e = poll_fn(|cx| q.poll_expired(cx)).await.unwrap();
    ///     assert_eq!(e.into_inner(), "a");
    ///     q.close();
    ///     assert!(poll_fn(|cx| q.poll_expired(cx)).await.is_none());
    /// }
    /// ```
    pub fn poll_expired(&self, cx: &mut Context<'_>) -> Poll<Option<DelayExpired<T>>> {
        self.poll_take(None, cx)
            .map(|e| e.map(|e| DelayExpired::new(e, &self.time)))
    }
}

/// The items as they come due, ending when the queue is closed (see
/// [`DelayQueue::poll_expired`]).
///
/// # Examples
///
/// ```
/// use futures_util::StreamExt;
/// use std::time::Duration;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let mut q = wheel::DelayQueue::new();
///     q.insert(2, Duration::from_millis(2)).unwrap();
///     q.insert(1, Duration::from_millis(1)).unwrap();
///     let mut got = Vec::new();
///     while let Some(e) = q.next().await {
///         got.push(e.into_inner());
///         if q.is_empty() {
///             q.close();
///         }
///     }
///     assert_eq!(got, [1, 2]);
/// }
/// ```
#[cfg(feature = "stream")]
impl<T> futures_core::Stream for DelayQueue<T> {
    type Item = DelayExpired<T>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<DelayExpired<T>>> {
        self.as_ref().get_ref().poll_expired(cx)
    }
}

/// The items as they come due, from a shared queue: any number of tasks
/// may each stream from their own `&DelayQueue`, and every item goes to
/// exactly one of them. Ends when the queue is closed.
///
/// # Examples
///
/// ```
/// use futures_util::StreamExt;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let q = Arc::new(wheel::DelayQueue::new());
///     let consumer = {
///         let q = Arc::clone(&q);
///         tokio::spawn(async move {
///             let mut items = &*q;
///             let mut got = Vec::new();
///             while let Some(e) = items.next().await {
///                 got.push(e.into_inner());
///             }
///             got
///         })
///     };
///     q.insert("job", Duration::from_millis(1)).unwrap();
///     while !q.is_empty() {
///         tokio::task::yield_now().await;
///     }
///     q.close();
///     assert_eq!(consumer.await.unwrap(), ["job"]);
/// }
/// ```
#[cfg(feature = "stream")]
impl<T> futures_core::Stream for &DelayQueue<T> {
    type Item = DelayExpired<T>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<DelayExpired<T>>> {
        self.get_mut().poll_expired(cx)
    }
}
