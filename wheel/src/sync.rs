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

/// Exponential back-off for spin loops.
#[cfg(not(loom))]
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
