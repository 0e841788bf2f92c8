//! The one place that names the node's synchronisation primitives.
//!
//! One switch picks where they come from: std normally, loom's
//! model-checked types under `cfg(loom)`. Both expose the same names, so
//! the loom model (`tests/loom_node.rs`) runs the node's real start
//! hand-off (`node/starts.rs` on `node/queue.rs`), not a copy of it.
//!
//! Every module of the node takes its locks, condition variables and
//! atomics from here. The stores, the HTTP module and the stats keep std's
//! types (no model runs them) and share only [`lock`], which takes either
//! kind of mutex, so that the crate builds under both configurations.
//!
//! loom has no time: under `cfg(loom)` a timed [`wait_until`] ends at once,
//! as if its deadline had come. The modelled code never relies on a timed
//! wait; the threads that do (claimer, finisher) are not modelled.
//!
//! Node state: none: it names the primitives each stage's state is built
//! from.

#[cfg(not(loom))]
pub(crate) use std::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, AtomicUsize},
};

#[cfg(loom)]
pub(crate) use loom::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, AtomicUsize},
};

/// loom's atomics take std's orderings.
pub(crate) use std::sync::atomic::Ordering;

/// Waits on `cond` until it is notified or `until` comes; the guard back,
/// and whether `until` had come.
#[cfg(not(loom))]
pub(crate) use self::wait_until_std as wait_until;

/// Waits on `cond` until it is notified or `until` comes; the guard back,
/// and whether `until` had already come (a poisoned lock is recovered as
/// `sync::lock` does). Callers loop on their own condition.
pub(crate) fn wait_until_std<'a, T>(
    cond: &std::sync::Condvar,
    guard: std::sync::MutexGuard<'a, T>,
    until: std::time::Instant,
) -> (std::sync::MutexGuard<'a, T>, bool) {
    let now = std::time::Instant::now();
    if now >= until {
        return (guard, true);
    }
    let guard = cond
        .wait_timeout(guard, until - now)
        .unwrap_or_else(|e| e.into_inner())
        .0;
    (guard, false)
}

/// Waits on `cond` until it is notified or `until` comes (loom model: the
/// deadline comes at once, since loom has no time).
#[cfg(loom)]
pub(crate) fn wait_until<'a, T>(
    _cond: &Condvar,
    guard: MutexGuard<'a, T>,
    _until: std::time::Instant,
) -> (MutexGuard<'a, T>, bool) {
    (guard, true)
}

/// A mutex [`lock`] takes: std's, and under `cfg(loom)` loom's too.
pub(crate) trait Lock {
    /// What holds the lock.
    type Guard<'a>
    where
        Self: 'a;

    /// Locks, recovering the guard if a panicking thread poisoned the lock.
    fn lock_recovering(&self) -> Self::Guard<'_>;
}

impl<T: ?Sized> Lock for std::sync::Mutex<T> {
    type Guard<'a>
        = std::sync::MutexGuard<'a, T>
    where
        Self: 'a;

    fn lock_recovering(&self) -> Self::Guard<'_> {
        self.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `lock(&arc)` locks the mutex inside (a generic parameter gets no deref
/// coercion).
impl<L: Lock + ?Sized> Lock for std::sync::Arc<L> {
    type Guard<'a>
        = L::Guard<'a>
    where
        Self: 'a;

    fn lock_recovering(&self) -> Self::Guard<'_> {
        (**self).lock_recovering()
    }
}

#[cfg(loom)]
impl<T> Lock for loom::sync::Mutex<T> {
    type Guard<'a>
        = loom::sync::MutexGuard<'a, T>
    where
        Self: 'a;

    fn lock_recovering(&self) -> Self::Guard<'_> {
        self.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Locks a mutex, recovering the guard if a panicking thread poisoned it.
///
/// Handlers never run while one of the node's locks is held, so a poisoned
/// lock only means a panic unwound through code that left the data
/// consistent.
pub(crate) fn lock<L: Lock + ?Sized>(m: &L) -> L::Guard<'_> {
    m.lock_recovering()
}

/// Waits on `cond` for a notification, recovering the guard as [`lock`]
/// does.
pub(crate) fn wait<'a, T>(cond: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cond.wait(guard).unwrap_or_else(|e| e.into_inner())
}
