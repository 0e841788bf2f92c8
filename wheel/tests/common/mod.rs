//! Helpers shared by the async test files: a minimal executor built on std
//! `Wake` and thread parking, a counting waker, and a bounded wait.
#![allow(dead_code)] // each test file uses a different subset

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

/// How long a test waits for something that must happen before failing
/// (instead of hanging on a lost wake-up).
pub const LIVENESS: Duration = Duration::from_secs(20);

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Wakes a parked thread and counts wake-ups.
struct Unpark {
    thread: thread::Thread,
    wakes: AtomicUsize,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// A minimal executor: poll, park until woken, repeat; panics past
/// `LIVENESS` so a lost wake-up fails instead of hanging. The wake count is
/// read before each poll, so a wake that arrives during the poll is seen.
pub fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let unpark = Arc::new(Unpark {
        thread: thread::current(),
        wakes: AtomicUsize::new(0),
    });
    let waker = Waker::from(Arc::clone(&unpark));
    let mut cx = Context::from_waker(&waker);
    let give_up = Instant::now() + LIVENESS;
    loop {
        let before = unpark.wakes.load(Ordering::SeqCst);
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        while unpark.wakes.load(Ordering::SeqCst) == before {
            assert!(Instant::now() < give_up, "future never woken");
            thread::park_timeout(ms(500));
        }
    }
}

/// A waker that only counts.
pub struct Count(pub AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A counting waker and the counter behind it.
pub fn counting() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count(AtomicUsize::new(0)));
    (Arc::clone(&c), Waker::from(c))
}

/// Waits until `cond` holds; fails naming `what` past the testkit's
/// liveness bound.
pub use wheel_testkit::eventually as wait_for;
