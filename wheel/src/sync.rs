//! The one place that names synchronisation primitives.
//!
//! Every module imports atomics, `Arc`, `Mutex`, `Condvar`, threads, the
//! lock-free queue and the back-off helper from here. Under `cfg(loom)` the
//! same names resolve to loom's model-checked types, so the loom tests in
//! `tests/loom_*.rs` check the real protocol code rather than a copy of it.
//!
//! crossbeam-queue and crossbeam-utils are not loom-aware, so under loom:
//! - [`Queue`] is a loom `Mutex<VecDeque<T>>` (same FIFO semantics, every
//!   access is a visible synchronisation point);
//! - [`Backoff`] yields to the loom scheduler instead of spinning.

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::{
    atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
    Arc, Condvar, Mutex, MutexGuard, Weak,
};
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::thread;

#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::{
    atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
    Arc, Condvar, Mutex, MutexGuard,
};
#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::thread;
// loom has no `Weak`; std's is only used for non-modelled bookkeeping.
#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use std::sync::Weak;

/// Locks a mutex, recovering the guard if a panicking thread poisoned it.
///
/// Callbacks never run while one of our locks is held, so a poisoned lock
/// only means a panic unwound through code that left the data consistent.
#[cfg(not(loom))]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks a mutex (loom version; loom mutexes are never poisoned in models).
#[cfg(loom)]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap()
}

/// An unbounded multi-producer multi-consumer FIFO queue.
#[cfg(not(loom))]
pub(crate) struct Queue<T>(crossbeam_queue::SegQueue<T>);

#[cfg(not(loom))]
#[allow(dead_code)]
impl<T> Queue<T> {
    pub(crate) fn new() -> Self {
        Queue(crossbeam_queue::SegQueue::new())
    }
    pub(crate) fn push(&self, value: T) {
        self.0.push(value)
    }
    pub(crate) fn pop(&self) -> Option<T> {
        self.0.pop()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// An unbounded multi-producer multi-consumer FIFO queue (loom model).
#[cfg(loom)]
pub(crate) struct Queue<T>(loom::sync::Mutex<std::collections::VecDeque<T>>);

#[cfg(loom)]
#[allow(dead_code)]
impl<T> Queue<T> {
    pub(crate) fn new() -> Self {
        Queue(loom::sync::Mutex::new(std::collections::VecDeque::new()))
    }
    pub(crate) fn push(&self, value: T) {
        self.0.lock().unwrap().push_back(value)
    }
    pub(crate) fn pop(&self) -> Option<T> {
        self.0.lock().unwrap().pop_front()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.lock().unwrap().is_empty()
    }
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// Waits on `cv`, recovering the guard if the mutex was poisoned (see
/// [`lock`]).
#[cfg(not(loom))]
#[allow(dead_code)]
pub(crate) fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap_or_else(|e| e.into_inner())
}

/// Waits on `cv` (loom version).
#[cfg(loom)]
#[allow(dead_code)]
pub(crate) fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap()
}

/// Tries to lock without blocking; `None` if another thread holds the lock.
/// A poisoned lock is recovered as in [`lock`].
#[allow(dead_code)]
pub(crate) fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// A token parker for one thread, woken through cloneable [`Unparker`]s
/// (crossbeam's: `unpark` on a thread that is not parked is one atomic
/// swap; a timed park may return early).
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use crossbeam_utils::sync::{Parker, Unparker};

/// A token parker, loom model: a loom mutex and condvar around the token,
/// so loom sees every park and unpark. (loom's own `Thread::unpark` also
/// wakes a thread blocked on a *mutex*, which real threads never do, so it
/// cannot stand in for a parker that is unparked at arbitrary moments.)
///
/// loom has no time: `park_timeout` consumes a pending token and returns at
/// once, modelling a timed wait that may end at any moment. Protocols must
/// be correct when every timed wait returns early; the loom tests use a
/// [`ManualClock`](crate::ManualClock), whose waits are untimed.
#[cfg(loom)]
pub(crate) struct Parker {
    unparker: Unparker,
}

/// Wakes the [`Parker`] it came from (loom model).
#[cfg(loom)]
#[derive(Clone)]
pub(crate) struct Unparker {
    inner: Arc<(Mutex<bool>, Condvar)>,
}

#[cfg(loom)]
#[allow(dead_code)]
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

#[cfg(loom)]
impl Unparker {
    pub(crate) fn unpark(&self) {
        let (token, cv) = &*self.inner;
        *lock(token) = true;
        cv.notify_one();
    }
}

/// A cell written once, read lock-free afterwards (std's `OnceLock`).
///
/// Used for the slot table's chunk directory and for thread handles that
/// are known only after spawning. loom has no `OnceLock`; std's is used
/// under loom too: loom runs one model thread at a time, so the std cell
/// never blocks, and the loom models keep their indices inside the chunk
/// allocated up front (the lazily allocated chunks are exercised by the
/// ordinary tests).
#[allow(unused_imports)]
pub(crate) use std::sync::OnceLock;

/// Exponential back-off for spin loops.
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use crossbeam_utils::Backoff;

/// Back-off for spin loops (loom model: every step yields to the scheduler).
#[cfg(loom)]
#[derive(Default)]
pub(crate) struct Backoff;

#[cfg(loom)]
#[allow(dead_code)]
impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff
    }
    pub(crate) fn spin(&self) {
        loom::thread::yield_now()
    }
    pub(crate) fn snooze(&self) {
        loom::thread::yield_now()
    }
    pub(crate) fn is_completed(&self) -> bool {
        false
    }
}
