//! The receiver's record of the requests it read: every request in order
//! of arrival, how many each path has had, and how many are in flight.
//!
//! Invariants: the serving tasks only append, under the lock; readers
//! clone or take the list under the same lock. A waiter registers how
//! many requests it waits for under the lock before it sleeps, and an
//! append wakes the waiters once the list reaches the least of those
//! counts: not on every append, since under a load of thousands of
//! requests a second each wake would take the lock from the serving tasks
//! for nothing. A request counts in flight from its append until its
//! [`InFlight`] guard drops.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::SystemTime;

use super::exchange::Received;

#[derive(Default)]
pub(crate) struct Recorded {
    /// Every request, in order of arrival.
    pub(crate) requests: Vec<Received>,
    /// How many requests each path has had.
    per_path: HashMap<String, usize>,
    /// How many requests each sleeping waiter waits for.
    waiting_for: Vec<usize>,
}

#[derive(Default)]
pub(crate) struct Log {
    recorded: Mutex<Recorded>,
    arrived: Condvar,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

impl Log {
    /// Records a request and counts it in flight until the returned guard
    /// drops; returns which request to its path it is.
    pub(crate) fn record(&self, received: Received) -> (usize, InFlight<'_>) {
        let mut rec = self.recorded.lock().unwrap();
        // Looked up by reference first: a path seen before (the common
        // case) costs no allocation.
        let nth = match rec.per_path.get_mut(&received.path) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                rec.per_path.insert(received.path.clone(), 1);
                1
            }
        };
        rec.requests.push(received);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let len = rec.requests.len();
        if rec.waiting_for.iter().any(|&n| n <= len) {
            self.arrived.notify_all();
        }
        (nth, InFlight(self))
    }

    /// The record, locked.
    pub(crate) fn recorded(&self) -> MutexGuard<'_, Recorded> {
        self.recorded.lock().unwrap()
    }

    /// Waits until at least `n` requests are recorded or `deadline` passes
    /// on the machine's clock; returns the record, locked, and whether `n`
    /// arrived.
    pub(crate) fn wait(&self, n: usize, deadline: SystemTime) -> (MutexGuard<'_, Recorded>, bool) {
        let mut rec = self.recorded();
        while rec.requests.len() < n {
            let Ok(left) = deadline.duration_since(SystemTime::now()) else {
                return (rec, false);
            };
            rec.waiting_for.push(n);
            rec = self.arrived.wait_timeout(rec, left).unwrap().0;
            // Taken off again after each wake: a woken waiter that goes
            // back to sleep registers anew.
            let mine = rec.waiting_for.iter().position(|&w| w == n);
            rec.waiting_for.swap_remove(mine.expect("registered above"));
        }
        (rec, true)
    }

    /// The most requests in flight at once so far.
    pub(crate) fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    /// The requests in flight now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }
}

/// A request counted in flight; dropped when its reply is sent or its
/// client hung up (hyper then drops the request's future).
pub(crate) struct InFlight<'a>(&'a Log);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}
