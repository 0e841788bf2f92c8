//! The one place that names synchronisation primitives.
//!
//! Every module imports atomics, `Arc`, `Mutex`, `Condvar`, threads, the
//! lock-free queues, the parker and the back-off helper from here. One
//! switch picks where they come from: `sync/std.rs` (std and crossbeam)
//! normally, `sync/loom.rs` (loom's model-checked types, and models of the
//! crossbeam parts) under `cfg(loom)`. Both expose the same names, so the
//! loom tests in `tests/loom_*.rs` check the real protocol code rather
//! than a copy of it.
//!
//! What both configurations share (lock helpers, cache padding, `OnceLock`)
//! is defined once, here.

#[cfg(not(loom))]
#[path = "std.rs"]
mod imp;

#[cfg(loom)]
#[path = "loom.rs"]
mod imp;

pub(crate) use self::imp::*;

/// Pads and aligns a value to a cache line so that values written by
/// different threads do not share one (plain alignment, valid under loom).
pub(crate) use crossbeam_utils::CachePadded;

/// A cell written once, read lock-free afterwards (std's `OnceLock`).
///
/// Used for the slot table's chunk directory, the ring of a
/// [`RingQueue`], and thread handles that are known only after spawning.
/// loom has no `OnceLock`; std's is used under loom too: loom runs one
/// model thread at a time, so the std cell never blocks, and the loom
/// models keep their indices inside the chunk allocated up front (the
/// lazily allocated chunks are exercised by the ordinary tests).
pub(crate) use std::sync::OnceLock;

/// Locks a mutex, recovering the guard if a panicking thread poisoned it.
///
/// Callbacks never run while one of our locks is held, so a poisoned lock
/// only means a panic unwound through code that left the data consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The data of a mutex borrowed exclusively: no locking, since the `&mut`
/// borrow already excludes every other user (recovering from poison as
/// [`lock`] does).
pub(crate) fn get_mut<T>(m: &mut Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(|e| e.into_inner())
}

/// Tries to lock without blocking; `None` if another thread holds the lock.
/// A poisoned lock is recovered as in [`lock`].
pub(crate) fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// Waits on `cv`, recovering the guard if the mutex was poisoned (see
/// [`lock`]).
pub(crate) fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap_or_else(|e| e.into_inner())
}
