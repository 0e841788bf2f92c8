//! The real primitives: std's atomics, locks and threads, and crossbeam's
//! lock-free queues, parker and back-off.

pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
pub(crate) use std::thread;

/// A token parker for one thread, woken through cloneable [`Unparker`]s
/// (crossbeam's: `unpark` on a thread that is not parked is one atomic
/// swap; a timed park may return early).
pub(crate) use crossbeam_utils::sync::{Parker, Unparker};

/// Exponential back-off for spin loops.
pub(crate) use crossbeam_utils::Backoff;

#[path = "ring_queue.rs"]
mod ring_queue;

pub(crate) use self::ring_queue::RingQueue;

/// An unbounded multi-producer multi-consumer FIFO queue.
pub(crate) struct Queue<T>(crossbeam_queue::SegQueue<T>);

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
}

/// A small number that identifies the calling thread for striping: stable
/// for the thread's lifetime, assigned round-robin on first use, so that a
/// few threads get distinct stripes. Collisions only cost contention,
/// never correctness.
pub(crate) fn thread_stripe() -> usize {
    use std::cell::Cell;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    STRIPE
        .try_with(|s| {
            let v = s.get();
            if v != usize::MAX {
                return v;
            }
            let v = NEXT.fetch_add(1, Ordering::Relaxed) & (usize::MAX >> 1);
            s.set(v);
            v
        })
        .unwrap_or(0)
}
