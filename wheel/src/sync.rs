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

/// The data of a mutex borrowed exclusively: no locking, since the `&mut`
/// borrow already excludes every other user (recovering from poison as
/// [`lock`] does).
#[cfg(not(loom))]
pub(crate) fn get_mut<T>(m: &mut Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(|e| e.into_inner())
}

/// [`get_mut`] (loom version).
#[cfg(loom)]
pub(crate) fn get_mut<T>(m: &mut Mutex<T>) -> &mut T {
    m.get_mut().unwrap()
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

/// A lock-free multi-producer multi-consumer bag: a bounded ring that
/// never allocates after its first use (crossbeam's `ArrayQueue`, created
/// on the first push), and an unbounded `SegQueue` for what does not fit.
/// FIFO within each part, **not** across them: use it only where order
/// does not matter, or where the consumer tolerates reordering.
///
/// The point is allocation traffic: `SegQueue` allocates a block every 31
/// pushes and the consumer frees it, so a producer and a consumer on
/// different threads keep handing memory across the allocator's per-thread
/// caches (with glibc, contending on an arena lock).
#[cfg(not(loom))]
pub(crate) struct RingQueue<T> {
    ring: OnceLock<crossbeam_queue::ArrayQueue<T>>,
    cap: usize,
    overflow: crossbeam_queue::SegQueue<T>,
}

#[cfg(not(loom))]
#[allow(dead_code)]
impl<T> RingQueue<T> {
    /// A queue whose ring holds `cap` (at least 1) values.
    pub(crate) fn new(cap: usize) -> Self {
        RingQueue {
            ring: OnceLock::new(),
            cap: cap.max(1),
            overflow: crossbeam_queue::SegQueue::new(),
        }
    }
    pub(crate) fn push(&self, value: T) {
        let ring = self
            .ring
            .get_or_init(|| crossbeam_queue::ArrayQueue::new(self.cap));
        if let Err(value) = ring.push(value) {
            self.overflow.push(value)
        }
    }
    pub(crate) fn pop(&self) -> Option<T> {
        if let Some(ring) = self.ring.get() {
            if !ring.is_empty() {
                if let Some(v) = ring.pop() {
                    return Some(v);
                }
            }
        }
        if self.overflow.is_empty() {
            return None;
        }
        self.overflow.pop()
    }
    pub(crate) fn is_empty(&self) -> bool {
        let ring_empty = match self.ring.get() {
            Some(r) => r.is_empty(),
            None => true,
        };
        ring_empty && self.overflow.is_empty()
    }
    pub(crate) fn len(&self) -> usize {
        self.ring.get().map_or(0, |r| r.len()) + self.overflow.len()
    }
}

/// The loom model of [`RingQueue`]: a ring of capacity 1 and an overflow,
/// so that models see values overtake each other.
#[cfg(loom)]
pub(crate) struct RingQueue<T>(
    loom::sync::Mutex<(std::collections::VecDeque<T>, std::collections::VecDeque<T>)>,
);

#[cfg(loom)]
#[allow(dead_code)]
impl<T> RingQueue<T> {
    pub(crate) fn new(_cap: usize) -> Self {
        RingQueue(loom::sync::Mutex::new(Default::default()))
    }
    pub(crate) fn push(&self, value: T) {
        let mut q = self.0.lock().unwrap();
        if q.0.is_empty() {
            q.0.push_back(value)
        } else {
            q.1.push_back(value)
        }
    }
    pub(crate) fn pop(&self) -> Option<T> {
        let mut q = self.0.lock().unwrap();
        q.0.pop_front().or_else(|| q.1.pop_front())
    }
    pub(crate) fn is_empty(&self) -> bool {
        let q = self.0.lock().unwrap();
        q.0.is_empty() && q.1.is_empty()
    }
    pub(crate) fn len(&self) -> usize {
        let q = self.0.lock().unwrap();
        q.0.len() + q.1.len()
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

/// Pads and aligns a value to a cache line so that values written by
/// different threads do not share one (plain alignment, valid under loom).
#[allow(unused_imports)]
pub(crate) use crossbeam_utils::CachePadded;

/// A small number that identifies the calling thread for striping: stable
/// for the thread's lifetime, assigned round-robin on first use, so that a
/// few threads get distinct stripes. Collisions only cost contention,
/// never correctness.
#[cfg(not(loom))]
pub(crate) fn thread_stripe() -> usize {
    use std::cell::Cell;
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local! {
        static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    STRIPE
        .try_with(|s| {
            let v = s.get();
            if v != usize::MAX {
                return v;
            }
            let v = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & (usize::MAX >> 1);
            s.set(v);
            v
        })
        .unwrap_or(0)
}

/// A small number that identifies the calling thread (loom model: the model
/// thread's number, deterministic across executions, so models see threads
/// on different stripes as well as on the same one).
#[cfg(loom)]
pub(crate) fn thread_stripe() -> usize {
    let id = format!("{:?}", loom::thread::current().id());
    id.trim_start_matches("ThreadId(")
        .trim_end_matches(')')
        .parse()
        .unwrap_or(0)
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
