//! The loom configuration: loom's model-checked atomics, locks and
//! threads, and models of the crossbeam parts, which are not loom-aware.
//!
//! - [`Queue`] and [`RingQueue`] are loom mutexes around `VecDeque`s (the
//!   same FIFO semantics; every access is a visible synchronisation point).
//! - [`Parker`] is a loom mutex and condvar around the token.
//! - [`Backoff`] yields to the loom scheduler instead of spinning.
//! - [`thread_stripe`] is the model thread's number.

use std::collections::VecDeque;

pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
pub(crate) use loom::thread;

use super::{lock, wait};

/// An unbounded multi-producer multi-consumer FIFO queue (loom model).
pub(crate) struct Queue<T>(Mutex<VecDeque<T>>);

impl<T> Queue<T> {
    pub(crate) fn new() -> Self {
        Queue(Mutex::new(VecDeque::new()))
    }
    pub(crate) fn push(&self, value: T) {
        lock(&self.0).push_back(value)
    }
    pub(crate) fn pop(&self) -> Option<T> {
        lock(&self.0).pop_front()
    }
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.0).is_empty()
    }
}

/// The loom model of `RingQueue` (`sync/ring_queue.rs`): a ring of
/// capacity 1 and an overflow, so that models see values overtake each
/// other.
pub(crate) struct RingQueue<T>(Mutex<(VecDeque<T>, VecDeque<T>)>);

impl<T> RingQueue<T> {
    pub(crate) fn new(_cap: usize) -> Self {
        RingQueue(Mutex::new(Default::default()))
    }
    pub(crate) fn push(&self, value: T) {
        let mut q = lock(&self.0);
        if q.0.is_empty() {
            q.0.push_back(value)
        } else {
            q.1.push_back(value)
        }
    }
    pub(crate) fn pop(&self) -> Option<T> {
        let mut q = lock(&self.0);
        q.0.pop_front().or_else(|| q.1.pop_front())
    }
    pub(crate) fn is_empty(&self) -> bool {
        let q = lock(&self.0);
        q.0.is_empty() && q.1.is_empty()
    }
    pub(crate) fn len(&self) -> usize {
        let q = lock(&self.0);
        q.0.len() + q.1.len()
    }
}

/// A token parker, loom model: a loom mutex and condvar around the token,
/// so loom sees every park and unpark. (loom's own `Thread::unpark` also
/// wakes a thread blocked on a *mutex*, which real threads never do, so it
/// cannot stand in for a parker that is unparked at arbitrary moments.)
///
/// loom has no time: `park_timeout` consumes a pending token and returns at
/// once, modelling a timed wait that may end at any moment. Protocols must
/// be correct when every timed wait returns early; the loom tests use a
/// [`ManualClock`](crate::ManualClock), whose waits are untimed.
pub(crate) struct Parker {
    unparker: Unparker,
}

/// Wakes the [`Parker`] it came from (loom model).
#[derive(Clone)]
pub(crate) struct Unparker {
    inner: Arc<(Mutex<bool>, Condvar)>,
}

impl Parker {
    pub(crate) fn new() -> Parker {
        Parker {
            unparker: Unparker {
                inner: Arc::new((Mutex::new(false), Condvar::new())),
            },
        }
    }
    pub(crate) fn unparker(&self) -> &Unparker {
        &self.unparker
    }
    pub(crate) fn park(&self) {
        let (token, cv) = &*self.unparker.inner;
        let mut t = lock(token);
        while !*t {
            t = wait(cv, t);
        }
        *t = false;
    }
    pub(crate) fn park_timeout(&self, _dur: std::time::Duration) {
        *lock(&self.unparker.inner.0) = false;
    }
}

impl Unparker {
    pub(crate) fn unpark(&self) {
        let (token, cv) = &*self.inner;
        *lock(token) = true;
        cv.notify_one();
    }
}

/// Back-off for spin loops (loom model: every step yields to the scheduler).
#[derive(Default)]
pub(crate) struct Backoff;

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff
    }
    pub(crate) fn snooze(&self) {
        loom::thread::yield_now()
    }
    pub(crate) fn is_completed(&self) -> bool {
        false
    }
}

/// A small number that identifies the calling thread (loom model: the model
/// thread's number, deterministic across executions, so models see threads
/// on different stripes as well as on the same one).
pub(crate) fn thread_stripe() -> usize {
    let id = format!("{:?}", loom::thread::current().id());
    id.trim_start_matches("ThreadId(")
        .trim_end_matches(')')
        .parse()
        .unwrap_or(0)
}
