//! The per-host limit: requests in flight to one host from this node.
//!
//! A worker takes a [`Slot`] for the request's host before sending and
//! gives it back when the [`Slot`] drops, after the reply (or the error).
//! A worker that finds the host at its limit waits at most [`HOST_WAIT`]
//! for a slot to free; then it does not send, and the timer is retried
//! after about [`HOST_BUSY_RETRY`]. So one slow host holds at most `limit`
//! workers for long, and the node runs `limit` workers more than it was
//! configured with: the rest always have workers.
//!
//! Invariant: `in_flight[host]` is the number of live slots for `host`,
//! never above `limit`, and a host with none has no entry (the map stays
//! as small as the set of hosts being called).

use crate::durable::time::wait_until;
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The longest a worker waits for a host at its limit.
pub(crate) const HOST_WAIT: Duration = Duration::from_millis(100);

/// The delay before a timer whose host was at its limit is tried again
/// (jitter takes up to half of it away, so that waiting timers spread out).
pub(crate) const HOST_BUSY_RETRY: Duration = Duration::from_secs(1);

/// Requests in flight by host.
pub(crate) struct Hosts {
    pub(crate) limit: usize,
    in_flight: Mutex<HashMap<String, usize>>,
    /// Signalled whenever a slot of any host is given back.
    freed: Condvar,
}

/// One request in flight to `host`; gives its place back when dropped.
pub(crate) struct Slot<'a> {
    hosts: &'a Hosts,
    host: String,
}

impl Hosts {
    pub(crate) fn new(limit: usize) -> Hosts {
        Hosts {
            limit,
            in_flight: Mutex::new(HashMap::new()),
            freed: Condvar::new(),
        }
    }

    /// A slot for `host`, waiting at most `wait` for one to free; `None`
    /// when the host stayed at its limit.
    pub(crate) fn acquire(&self, host: &str, wait: Duration) -> Option<Slot<'_>> {
        let until = Instant::now() + wait;
        let mut in_flight = lock(&self.in_flight);
        loop {
            let n = in_flight.get(host).copied().unwrap_or(0);
            if n < self.limit {
                in_flight.insert(host.to_owned(), n + 1);
                return Some(Slot {
                    hosts: self,
                    host: host.to_owned(),
                });
            }
            let (guard, over) = wait_until(&self.freed, in_flight, until);
            if over {
                return None;
            }
            in_flight = guard;
        }
    }

    #[cfg(test)]
    fn count(&self, host: &str) -> Option<usize> {
        lock(&self.in_flight).get(host).copied()
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut in_flight = lock(&self.hosts.in_flight);
        if let Some(n) = in_flight.get_mut(&self.host) {
            *n -= 1;
            if *n == 0 {
                in_flight.remove(&self.host);
            }
        }
        drop(in_flight);
        // Waiters of every host share the condition variable: wake them
        // all, each checks its own host.
        self.hosts.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_host_at_its_limit_refuses_after_the_wait_and_others_are_free() {
        let hosts = Hosts::new(2);
        let a1 = hosts.acquire("a:80", Duration::ZERO).unwrap();
        let _a2 = hosts.acquire("a:80", Duration::ZERO).unwrap();
        assert!(hosts.acquire("a:80", Duration::from_millis(5)).is_none());
        let b = hosts.acquire("b:80", Duration::ZERO).unwrap();
        assert_eq!(hosts.count("a:80"), Some(2));
        drop(a1);
        assert_eq!(hosts.count("a:80"), Some(1));
        assert!(hosts.acquire("a:80", Duration::ZERO).is_some());
        drop(b);
        assert_eq!(hosts.count("b:80"), None, "an idle host leaves the map");
    }

    #[test]
    fn a_waiting_worker_gets_the_slot_given_back() {
        let hosts = Arc::new(Hosts::new(1));
        let (taken_tx, taken_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let hosts = hosts.clone();
            std::thread::spawn(move || {
                let _slot = hosts.acquire("a:80", Duration::ZERO).unwrap();
                taken_tx.send(()).unwrap();
                release_rx.recv().unwrap();
            })
        };
        taken_rx.recv().unwrap();
        let waiter = {
            let hosts = hosts.clone();
            // Generous: the holder gives its slot back right away.
            std::thread::spawn(move || hosts.acquire("a:80", Duration::from_secs(60)).is_some())
        };
        release_tx.send(()).unwrap();
        holder.join().unwrap();
        assert!(waiter.join().unwrap());
        assert_eq!(hosts.count("a:80"), None);
    }
}
