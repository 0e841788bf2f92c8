//! Runtime-agnostic async timers on top of the [`Scheduler`]: [`Sleep`],
//! [`Timeout`] and [`Interval`].
//!
//! They use only the scheduler's public API and `std::task`: no executor
//! is assumed, so they work on tokio, async-std, smol or a ten-line
//! `block_on`.
//!
//! # Design
//!
//! Each future owns a [`TimerHandle`] and shares a small [`Link`] with the
//! timer's callback. The callback, run on a scheduler worker, bumps the
//! link's `fired` counter and then wakes the waker stored in the link.
//!
//! # Invariants
//!
//! - `fired` only grows, and only from the callback. A future completes
//!   only after reading `fired > seen`, and the scheduler starts a callback
//!   only at or after its deadline, so no future completes early.
//! - No lost wake-up: the callback stores `fired` *before* it takes the
//!   waker under the link's lock; `poll` stores its waker under that lock
//!   and re-reads `fired` before returning `Pending`.
//! - The callback owns a guard; if the scheduler drops the callback without
//!   running it (shut down), the guard marks the link `lost` and wakes the
//!   task, so the loss is observable through `error()`.
//! - Dropping a future clears its waker and cancels its timer, so the
//!   scheduler frees the slot and the closure within a tick or two.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::error::ScheduleError;
use crate::scheduler::{Scheduler, TimerHandle};
use crate::sync::{Arc, AtomicBool, AtomicU64, Mutex, Ordering, lock};

/// What a timer callback shares with its future.
struct Link {
    /// Number of times the timer fired.
    fired: AtomicU64,
    /// The scheduler dropped the timer without (further) runs.
    lost: AtomicBool,
    /// The task to wake.
    waker: Mutex<Option<Waker>>,
}

impl Link {
    fn new() -> Arc<Link> {
        Arc::new(Link {
            fired: AtomicU64::new(0),
            lost: AtomicBool::new(false),
            waker: Mutex::new(None),
        })
    }

    fn fire(&self) {
        self.fired.fetch_add(1, Ordering::Release);
        self.wake();
    }

    fn lose(&self) {
        self.lost.store(true, Ordering::Release);
        self.wake();
    }

    fn wake(&self) {
        let w = lock(&self.waker).take();
        if let Some(w) = w {
            w.wake();
        }
    }

    /// `Ready(n)` once the timer fired more than `seen` times (`n` = total
    /// fires); otherwise registers `cx`'s waker and returns `Pending`.
    fn poll_fired(&self, cx: &mut Context<'_>, seen: u64) -> Poll<u64> {
        let n = self.fired.load(Ordering::Acquire);
        if n > seen {
            return Poll::Ready(n);
        }
        let mut slot = lock(&self.waker);
        match slot.as_mut() {
            Some(w) if w.will_wake(cx.waker()) => {}
            Some(w) => w.clone_from(cx.waker()),
            None => *slot = Some(cx.waker().clone()),
        }
        // Re-read under the lock: a fire that took the slot before we
        // filled it has already stored `fired`.
        let n = self.fired.load(Ordering::Acquire);
        if n > seen {
            return Poll::Ready(n);
        }
        Poll::Pending
    }

    fn forget_waker(&self) {
        lock(&self.waker).take();
    }
}

/// Owned by the timer's callback: fires the link, or marks it lost when
/// the callback is dropped without a (further) run.
struct Guard {
    link: Arc<Link>,
    /// One-shot timer that already ran.
    done: bool,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.done {
            self.link.lose();
        }
    }
}

/// The timer behind a future: its link and handle, or why there is none.
struct Timer {
    link: Arc<Link>,
    handle: Result<TimerHandle, ScheduleError>,
}

/// A fresh link and the one-shot callback that fires it.
fn one_shot() -> (Arc<Link>, impl FnOnce() + Send + 'static) {
    let link = Link::new();
    let mut guard = Guard {
        link: Arc::clone(&link),
        done: false,
    };
    let callback = move || {
        guard.done = true;
        guard.link.fire();
    };
    (link, callback)
}

impl Timer {
    /// Why this timer will never fire again, if so.
    fn error(&self) -> Option<ScheduleError> {
        match &self.handle {
            Err(e) => Some(*e),
            Ok(_) if self.link.lost.load(Ordering::Acquire) => Some(ScheduleError::Shutdown),
            Ok(_) => None,
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.link.forget_waker();
        if let Ok(h) = &self.handle {
            h.cancel();
        }
    }
}

impl Scheduler {
    /// A future that completes `delay` from now (on the scheduler's clock),
    /// never before.
    ///
    /// Dropping it cancels the timer. If the scheduler cannot hold the
    /// timer (it is shut down, before or while the `Sleep` waits, or it
    /// already holds `max_pending` timers), the `Sleep` never completes,
    /// exactly as a callback timer would never run; [`Sleep::error`] then
    /// says why.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let scheduler = wheel::Scheduler::new();
    ///     let start = Instant::now();
    ///     scheduler.sleep(Duration::from_millis(10)).await;
    ///     assert!(start.elapsed() >= Duration::from_millis(10));
    /// }
    /// ```
    pub fn sleep(&self, delay: Duration) -> Sleep {
        let (link, callback) = one_shot();
        let handle = self.schedule(delay, callback);
        Sleep {
            timer: Timer { link, handle },
        }
    }

    /// A future that completes at `at` (on the scheduler's clock), never
    /// before; at once (on the next tick) if `at` has passed. Otherwise as
    /// [`sleep`](Scheduler::sleep).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let scheduler = wheel::Scheduler::new();
    ///     let at = Instant::now() + Duration::from_millis(5);
    ///     scheduler.sleep_until(at).await;
    ///     assert!(Instant::now() >= at);
    /// }
    /// ```
    pub fn sleep_until(&self, at: Instant) -> Sleep {
        let (link, callback) = one_shot();
        let handle = self.schedule_at(at, callback);
        Sleep {
            timer: Timer { link, handle },
        }
    }

    /// Runs `fut` with a deadline `delay` from now: `Ok(output)` if it
    /// finishes first, `Err(Elapsed)` once the deadline has passed (never
    /// before). The inner future is boxed (one allocation) so that
    /// `Timeout` is `Unpin` without unsafe pin projection. If the timer
    /// cannot be held (see [`sleep`](Scheduler::sleep)), the deadline is
    /// not enforced and [`Timeout::error`] says why.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let s = wheel::Scheduler::new();
    ///     let fast = s.timeout(Duration::from_secs(5), async { 7 }).await;
    ///     assert_eq!(fast, Ok(7));
    ///     let slow = s.timeout(Duration::from_millis(5), s.sleep(Duration::from_secs(60))).await;
    ///     assert!(slow.is_err());
    /// }
    /// ```
    pub fn timeout<F: Future>(&self, delay: Duration, fut: F) -> Timeout<F> {
        Timeout {
            fut: Box::pin(fut),
            sleep: self.sleep(delay),
        }
    }

    /// Runs `fut` with the deadline `deadline` (on the scheduler's clock):
    /// `Ok(output)` if it finishes first, `Err(Elapsed)` once the deadline
    /// has passed (never before; on the next tick if it has passed
    /// already). Otherwise as [`timeout`](Scheduler::timeout).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let s = wheel::Scheduler::new();
    ///     let deadline = Instant::now() + Duration::from_millis(5);
    ///     let fast = s.timeout_at(deadline, async { 7 }).await;
    ///     assert_eq!(fast, Ok(7));
    ///     let slow = s.timeout_at(deadline, s.sleep(Duration::from_secs(60))).await;
    ///     assert!(slow.is_err());
    ///     assert!(Instant::now() >= deadline);
    /// }
    /// ```
    pub fn timeout_at<F: Future>(&self, deadline: Instant, fut: F) -> Timeout<F> {
        Timeout {
            fut: Box::pin(fut),
            sleep: self.sleep_until(deadline),
        }
    }

    /// A fixed-rate ticker: tick `n` is due `n * period` after this call
    /// (the first one period from now, not at once). Ticks the consumer
    /// misses are not replayed in a burst: the next [`tick`](Interval::tick)
    /// completes at once and reports how many periods passed.
    ///
    /// A zero period cannot be scheduled: that `Interval` never ticks and
    /// [`Interval::error`] returns [`ScheduleError::ZeroPeriod`]. As with
    /// [`sleep`](Scheduler::sleep), an interval whose timer the scheduler
    /// cannot hold never ticks.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let s = wheel::Scheduler::new();
    ///     let start = Instant::now();
    ///     let mut every = s.interval(Duration::from_millis(5));
    ///     for _ in 0..3 {
    ///         every.tick().await;
    ///     }
    ///     assert!(start.elapsed() >= Duration::from_millis(15));
    /// }
    /// ```
    pub fn interval(&self, period: Duration) -> Interval {
        let link = Link::new();
        let guard = Guard {
            link: Arc::clone(&link),
            done: false,
        };
        let handle = self.schedule_repeating(period, move || guard.link.fire());
        Interval {
            timer: Timer { link, handle },
            seen: 0,
            period,
        }
    }
}

/// A future that completes at its deadline, never before; see
/// [`Scheduler::sleep`].
///
/// Polling it with a different waker replaces the stored one, so only the
/// latest task is woken. Dropping it cancels its timer.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let s = wheel::Scheduler::new();
///     let sleep: wheel::Sleep = s.sleep(Duration::from_millis(1));
///     assert!(!sleep.is_elapsed());
///     sleep.await;
/// }
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Sleep {
    timer: Timer,
}

impl Sleep {
    /// `true` once the deadline has passed and the timer fired.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = wheel::Scheduler::new();
    /// let sleep = s.sleep(Duration::ZERO);
    /// while !sleep.is_elapsed() {
    ///     std::thread::yield_now();
    /// }
    /// ```
    pub fn is_elapsed(&self) -> bool {
        self.timer.link.fired.load(Ordering::Acquire) > 0
    }

    /// Why this `Sleep` will never complete, if so:
    /// [`ScheduleError::Shutdown`] if the scheduler was shut down before
    /// the timer fired, or the error of scheduling it (such as
    /// [`ScheduleError::Full`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{ScheduleError, Scheduler};
    ///
    /// let s = Scheduler::new();
    /// let sleep = s.sleep(Duration::from_secs(60));
    /// assert_eq!(sleep.error(), None);
    /// s.shutdown();
    /// assert_eq!(sleep.error(), Some(ScheduleError::Shutdown));
    /// assert_eq!(s.sleep(Duration::ZERO).error(), Some(ScheduleError::Shutdown));
    /// ```
    pub fn error(&self) -> Option<ScheduleError> {
        if self.is_elapsed() {
            return None;
        }
        self.timer.error()
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.timer.link.poll_fired(cx, 0).map(|_| ())
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("elapsed", &self.is_elapsed())
            .field("error", &self.error())
            .finish()
    }
}

/// The error of a [`Timeout`] whose deadline passed first.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let s = wheel::Scheduler::new();
///     let never = std::future::pending::<()>();
///     let err: wheel::Elapsed = s.timeout(Duration::from_millis(1), never).await.unwrap_err();
///     assert_eq!(err.to_string(), "deadline has elapsed");
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// A future with a deadline; see [`Scheduler::timeout`] and
/// [`Scheduler::timeout_at`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let s = wheel::Scheduler::new();
///     let t: wheel::Timeout<_> = s.timeout(Duration::from_secs(1), async { "done" });
///     assert_eq!(t.await, Ok("done"));
/// }
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Timeout<F> {
    fut: Pin<Box<F>>,
    sleep: Sleep,
}

impl<F> Timeout<F> {
    /// Why the deadline will not be enforced, if so (see
    /// [`Sleep::error`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = wheel::Scheduler::new();
    /// let t = s.timeout(Duration::from_secs(1), async {});
    /// assert_eq!(t.error(), None);
    /// ```
    pub fn error(&self) -> Option<ScheduleError> {
        self.sleep.error()
    }

    /// The inner future, dropping the deadline (and cancelling its timer).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = wheel::Scheduler::new();
    /// let t = s.timeout(Duration::from_secs(1), async { 1 });
    /// let inner = t.into_inner();
    /// # drop(inner);
    /// ```
    pub fn into_inner(self) -> Pin<Box<F>> {
        self.fut
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(v) = self.fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(&mut self.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<F> fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("sleep", &self.sleep)
            .finish_non_exhaustive()
    }
}

/// A fixed-rate ticker; see [`Scheduler::interval`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let s = wheel::Scheduler::new();
///     let mut heartbeat: wheel::Interval = s.interval(Duration::from_millis(2));
///     assert_eq!(heartbeat.tick().await, 1);
/// }
/// ```
pub struct Interval {
    timer: Timer,
    /// Fires consumed by `tick`.
    seen: u64,
    period: Duration,
}

impl Interval {
    /// Waits for the next tick. Returns how many periods passed since the
    /// previous tick (or since the interval was created): 1 normally, more
    /// if the consumer was late and ticks were coalesced.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let s = wheel::Scheduler::new();
    ///     let mut i = s.interval(Duration::from_millis(1));
    ///     std::thread::sleep(Duration::from_millis(10)); // miss some ticks
    ///     // The missed ticks come back as one call that counts them all.
    ///     assert!(i.tick().await >= 1);
    ///     assert!(i.tick().await >= 1);
    /// }
    /// ```
    pub async fn tick(&mut self) -> u64 {
        std::future::poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick (the building block of
    /// [`tick`](Interval::tick), for hand-written futures and streams).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Wake, Waker};
    /// use std::time::Duration;
    ///
    /// struct Nothing;
    /// impl Wake for Nothing {
    ///     fn wake(self: Arc<Self>) {}
    /// }
    /// let s = wheel::Scheduler::new();
    /// let mut i = s.interval(Duration::from_secs(3600));
    /// let waker = Waker::from(Arc::new(Nothing));
    /// let mut cx = Context::from_waker(&waker);
    /// assert_eq!(i.poll_tick(&mut cx), Poll::Pending);
    /// ```
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<u64> {
        match self.timer.link.poll_fired(cx, self.seen) {
            Poll::Ready(n) => {
                let passed = n - self.seen;
                self.seen = n;
                Poll::Ready(passed)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// The period.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = wheel::Scheduler::new();
    /// assert_eq!(s.interval(Duration::from_secs(5)).period(), Duration::from_secs(5));
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Why this interval will not tick (again), if so:
    /// [`ScheduleError::ZeroPeriod`], [`ScheduleError::Full`], or
    /// [`ScheduleError::Shutdown`] (also once the scheduler shut down).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::ScheduleError;
    /// let s = wheel::Scheduler::new();
    /// assert_eq!(s.interval(Duration::ZERO).error(), Some(ScheduleError::ZeroPeriod));
    /// assert_eq!(s.interval(Duration::from_secs(1)).error(), None);
    /// ```
    pub fn error(&self) -> Option<ScheduleError> {
        self.timer.error()
    }
}

impl fmt::Debug for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interval")
            .field("period", &self.period)
            .field("ticks", &self.seen)
            .field("error", &self.error())
            .finish()
    }
}
