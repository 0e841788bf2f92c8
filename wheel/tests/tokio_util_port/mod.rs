//! The harness of `delay_queue_tokio_util.rs`: one way of taking
//! ([`Way`]), a [`Taker`] that takes that way and counts its waker's
//! wake-ups, a queue on a manual clock, and the scenarios, grouped by
//! subject. Each scenario is a `fn(Way)`; the test file runs it every way.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use wheel::{DelayExpired, DelayQueue, ManualClock, TakeExpiredFuture};

use crate::common::{Count, LIVENESS, counting, ms, wait_for};

pub(crate) mod keys;
pub(crate) mod reset;
pub(crate) mod take;

/// One way of taking items out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    /// `DelayQueue::poll_expired` with a counting waker.
    Poll,
    /// `DelayQueue::try_take_expired`.
    Try,
    /// `take_timeout_expired(0)` to find nothing due, `take_expired` (on a
    /// thread, bounded) to take.
    Blocking,
    /// One `take_async_expired` future, kept while it is pending.
    Future,
    /// `Stream::poll_next` on `&DelayQueue`.
    #[cfg(feature = "stream")]
    Stream,
}

/// Takes from a queue one way, and remembers the wake-ups of its waker.
pub(crate) struct Taker<'q, T> {
    q: &'q DelayQueue<T>,
    way: Way,
    wakes: Arc<Count>,
    waker: Waker,
    /// Wake-ups counted when the last `Pending` poll was made.
    seen: usize,
    fut: Option<Pin<Box<TakeExpiredFuture<'q, T>>>>,
}

impl<'q, T: Send + Debug> Taker<'q, T> {
    pub(crate) fn new(q: &'q DelayQueue<T>, way: Way) -> Self {
        let (wakes, waker) = counting();
        Taker {
            q,
            way,
            wakes,
            waker,
            seen: 0,
            fut: None,
        }
    }

    fn wakes(&self) -> usize {
        self.wakes.0.load(Ordering::SeqCst)
    }

    /// One non-blocking attempt, as a poll.
    fn poll(&mut self) -> Poll<Option<DelayExpired<T>>> {
        let mut cx = Context::from_waker(&self.waker);
        match self.way {
            Way::Poll => self.q.poll_expired(&mut cx),
            Way::Try => match self.q.try_take_expired() {
                Some(e) => Poll::Ready(Some(e)),
                None if self.q.is_closed() => Poll::Ready(None),
                None => Poll::Pending,
            },
            Way::Blocking => match self.q.take_timeout_expired(Duration::ZERO) {
                Some(e) => Poll::Ready(Some(e)),
                None if self.q.is_closed() => Poll::Ready(None),
                None => Poll::Pending,
            },
            Way::Future => {
                let q = self.q;
                let fut = self
                    .fut
                    .get_or_insert_with(|| Box::pin(q.take_async_expired()));
                let got = fut.as_mut().poll(&mut cx);
                if got.is_ready() {
                    self.fut = None;
                }
                got
            }
            #[cfg(feature = "stream")]
            Way::Stream => {
                let mut items = self.q;
                futures_core::Stream::poll_next(Pin::new(&mut items), &mut cx)
            }
        }
    }

    /// Nothing is due: the take finds nothing (and the async ways register).
    #[track_caller]
    pub(crate) fn pending(&mut self) {
        self.seen = self.wakes();
        let got = self.poll();
        assert!(
            got.is_pending(),
            "{:?}: expected nothing due, got {got:?}",
            self.way
        );
    }

    /// The async ways: the task registered by the last `Pending` poll is
    /// woken (the other ways have no task to wake).
    #[track_caller]
    pub(crate) fn woken(&self) {
        if matches!(self.way, Way::Try | Way::Blocking) {
            return;
        }
        wait_for("the pending task to be woken", || self.wakes() > self.seen);
    }

    /// An item is due: the take hands it out.
    #[track_caller]
    pub(crate) fn ready(&mut self) -> DelayExpired<T> {
        let got = if self.way == Way::Blocking {
            self.blocking_take()
        } else {
            match self.poll() {
                Poll::Ready(got) => got,
                Poll::Pending => panic!("{:?}: expected an item, got Pending", self.way),
            }
        };
        got.unwrap_or_else(|| panic!("{:?}: expected an item, got the end", self.way))
    }

    /// The queue is closed: the take reports the end.
    #[track_caller]
    pub(crate) fn ended(&mut self) {
        let got = if self.way == Way::Blocking {
            self.blocking_take().map(|_| ())
        } else {
            match self.poll() {
                Poll::Ready(got) => got.map(|_| ()),
                Poll::Pending => panic!("{:?}: expected the end, got Pending", self.way),
            }
        };
        assert_eq!(got, None, "{:?}: expected the end", self.way);
    }

    /// `take_expired` on a thread; fails (closing the queue to free the
    /// thread) if it has not returned within the liveness bound.
    fn blocking_take(&self) -> Option<DelayExpired<T>> {
        let q = self.q;
        thread::scope(|s| {
            let h = s.spawn(|| q.take_expired());
            let give_up = Instant::now() + LIVENESS;
            while !h.is_finished() {
                if Instant::now() > give_up {
                    q.close();
                    panic!("a blocking take never returned");
                }
                thread::sleep(ms(1));
            }
            h.join().unwrap()
        })
    }
}

/// A queue on a manual clock, and the instant its clock started at.
pub(crate) fn setup<T>() -> (ManualClock, DelayQueue<T>, Instant) {
    let clock = ManualClock::new();
    let q = DelayQueue::builder().clock(clock.clone()).build().unwrap();
    let start = clock.now();
    (clock, q, start)
}

/// Moves the clock forward to `at`.
pub(crate) fn advance_to(clock: &ManualClock, at: Instant) {
    clock.advance(at.saturating_duration_since(clock.now()));
}
