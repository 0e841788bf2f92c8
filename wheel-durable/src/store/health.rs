//! Whether a store is reachable, as its own calls find out, and the log
//! lines an operator sees when that changes.
//!
//! Every call of a remote store reports here: a failure to reach the
//! server marks the store down (logged once, when it goes down), and any
//! success marks it up again (logged once, with how long it was down).
//! [`stats`](crate::DurableTimers::stats) reads the mark instead
//! of waiting on a store that is known to be down.
//!
//! Node state: none: it owns a store's reachability and the log of its
//! outages.

use std::fmt::Display;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::sync::lock;

/// A store's reachability, shared by all its calls.
#[derive(Debug)]
pub(crate) struct Health {
    namespace: String,
    /// True from a failed attempt to reach the store until the next
    /// success.
    down: AtomicBool,
    /// When the store went down (set with `down`).
    since: Mutex<Option<Instant>>,
}

impl Health {
    pub(crate) fn new(namespace: &str) -> Health {
        Health {
            namespace: namespace.to_owned(),
            down: AtomicBool::new(false),
            since: Mutex::new(None),
        }
    }

    /// A call could not reach the store.
    pub(crate) fn failed(&self, why: &dyn Display) {
        if !self.down.swap(true, Ordering::SeqCst) {
            *lock(&self.since) = Some(Instant::now());
            tracing::warn!(
                namespace = %self.namespace,
                error = %why,
                "durable store unreachable; calls are retried until `unavailable_after`"
            );
        }
    }

    /// A call reached the store.
    pub(crate) fn reached(&self) {
        // The load keeps the common case (up, and staying up) a read.
        if self.down.load(Ordering::Relaxed) && self.down.swap(false, Ordering::SeqCst) {
            let down_ms = lock(&self.since)
                .take()
                .map_or(0, |t| t.elapsed().as_millis());
            tracing::info!(namespace = %self.namespace, down_ms, "durable store reachable again");
        }
    }

    /// False from a failed attempt to reach the store until the next
    /// success.
    pub(crate) fn reachable(&self) -> bool {
        !self.down.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::Health;

    #[test]
    fn a_failure_marks_the_store_down_until_a_success() {
        let h = Health::new("ns");
        assert!(h.reachable());
        h.reached();
        assert!(h.reachable());
        h.failed(&"connection refused");
        h.failed(&"connection refused");
        assert!(!h.reachable());
        h.reached();
        assert!(h.reachable());
    }
}
