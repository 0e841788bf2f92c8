//! The one place that names the node's synchronisation primitives.
//!
//! Every module takes `Mutex`, `Condvar` and the poison-recovering [`lock`]
//! from here, so that a model checker can stand in for std in one place.

pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// Locks a mutex, recovering the guard if a panicking thread poisoned it.
///
/// Handlers never run while one of the node's locks is held, so a poisoned
/// lock only means a panic unwound through code that left the data
/// consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
