//! tokio-util's `DelayQueue` on a current-thread tokio runtime whose clock is
//! paused (tokio's `test-util`), so the figures are the queue's, not the clock's.
//!
//! The runtime context is entered once around a whole workload
//! (`TimerQueue::run`) — the `DelayQueue` needs it to create its
//! internal `Sleep` — and `poll_expired` is called with a no-op waker. Moving the
//! paused clock is `block_on(tokio::time::advance(..))`, which also lets the time
//! driver fire the queue's `Sleep`; that happens once per `advance` of the
//! workload (once per tick in churn), never per timer.

use super::TimerQueue;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio::time::Instant;
use tokio_util::time::delay_queue::{DelayQueue, Key};

/// A waker that does nothing: the workload polls again by itself after moving the
/// clock. (`Waker::noop` is newer than this workspace's minimum Rust version.)
struct NoopWake;
impl Wake for NoopWake {
    fn wake(self: Arc<Self>) {}
}

/// tokio-util's `DelayQueue<u64>` behind [`TimerQueue`].
pub struct TokioDelayQueue {
    // Field order: the queue (which holds `Sleep`s registered with the runtime's
    // driver) is dropped before the runtime.
    queue: DelayQueue<u64>,
    rt: Arc<Runtime>,
    start: Instant,
    waker: Waker,
    now: u64,
}

impl TokioDelayQueue {
    /// A queue pre-sized for `capacity`, on its own paused runtime.
    pub fn with_capacity(capacity: usize) -> TokioDelayQueue {
        let rt = Arc::new(
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .expect("tokio current-thread runtime"),
        );
        let (queue, start) = {
            let _ctx = rt.enter();
            (DelayQueue::with_capacity(capacity), Instant::now())
        };
        TokioDelayQueue {
            queue,
            rt,
            start,
            waker: Waker::from(Arc::new(NoopWake)),
            now: 0,
        }
    }

    /// The runtime, to enter it around a workload.
    pub fn runtime(&self) -> Arc<Runtime> {
        Arc::clone(&self.rt)
    }

    /// `DelayQueue::insert`: due `delay` after the paused clock's now.
    pub fn insert_after(&mut self, value: u64, delay: Duration) -> Key {
        self.queue.insert(value, delay)
    }

    /// Move the paused clock forward, letting the driver fire what is due.
    pub fn advance_clock(&mut self, by: Duration) {
        self.rt.block_on(tokio::time::advance(by));
        self.now += by.as_millis() as u64;
    }

    /// One expired item, if any is due (never waits).
    pub fn poll_one(&mut self) -> Option<u64> {
        let mut cx = Context::from_waker(&self.waker);
        match self.queue.poll_expired(&mut cx) {
            Poll::Ready(Some(expired)) => Some(expired.into_inner()),
            Poll::Ready(None) | Poll::Pending => None,
        }
    }
}

impl TimerQueue for TokioDelayQueue {
    type Handle = Key;

    #[inline]
    fn insert(&mut self, deadline: u64, id: u64) -> Key {
        self.queue
            .insert_at(id, self.start + Duration::from_millis(deadline))
    }

    #[inline]
    fn cancel(&mut self, key: Key) -> Option<u64> {
        self.queue.try_remove(&key).map(|e| e.into_inner())
    }

    /// Enter the runtime (required around every call that may create a `Sleep`:
    /// inserts and polls).
    fn run<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let rt = self.runtime();
        let _ctx = rt.enter();
        f(self)
    }

    fn advance<F: FnMut(u64)>(&mut self, now: u64, mut fire: F) {
        if now > self.now {
            self.advance_clock(Duration::from_millis(now - self.now));
        }
        while let Some(id) = self.poll_one() {
            fire(id);
        }
    }
}
