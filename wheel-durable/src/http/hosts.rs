//! The per-host limit: requests in flight to one host from this node.
//!
//! A run takes a [`Slot`] for the request's host before sending and gives
//! it back when the [`Slot`] drops, after the reply (or the error). A run
//! that finds the host at its limit waits at most [`HOST_WAIT`] for a slot
//! to free; then it does not send, and the timer is retried after about
//! [`HOST_BUSY_RETRY`]. The runs are tasks, so a slow host holds tasks, not
//! threads; the limit keeps one host from taking every request in flight
//! and protects the host itself.
//!
//! Invariant: each host with a slot taken or awaited has one semaphore of
//! `limit` permits in the map; a slot holds a permit of it. The last slot
//! of a host to drop, with nobody waiting, removes the host's entry (the
//! map stays as small as the set of hosts being called). Acquirers clone
//! a host's semaphore under the map's lock, so a semaphore only referenced
//! by the map has no holder and no waiter.
//!
//! Node state: none of the stages'. It owns the per-host permits of the
//! node's HTTP sender, which only the sender's tasks take and release.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::sync::lock;

/// The longest a run waits for a host at its limit.
pub(crate) const HOST_WAIT: Duration = Duration::from_millis(100);

/// The delay before a timer whose host was at its limit is tried again
/// (jitter takes up to half of it away, so that waiting timers spread out).
pub(crate) const HOST_BUSY_RETRY: Duration = Duration::from_secs(1);

/// Requests in flight by host.
pub(crate) struct Hosts {
    pub(crate) limit: usize,
    by_host: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
}

/// One request in flight to `host`; gives its place back when dropped.
pub(crate) struct Slot {
    by_host: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
    host: String,
    permit: Option<OwnedSemaphorePermit>,
}

impl Hosts {
    pub(crate) fn new(limit: usize) -> Hosts {
        Hosts {
            limit,
            by_host: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A slot for `host`, waiting at most `wait` for one to free; `None`
    /// when the host stayed at its limit.
    pub(crate) async fn acquire(&self, host: &str, wait: Duration) -> Option<Slot> {
        let sem = lock(&self.by_host)
            .entry(host.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.limit)))
            .clone();
        let mut slot = Slot {
            by_host: self.by_host.clone(),
            host: host.to_owned(),
            permit: None,
        };
        // Dropped without a permit, the slot still tidies the map.
        let permit = tokio::time::timeout(wait, sem.clone().acquire_owned()).await;
        drop(sem);
        slot.permit = Some(permit.ok()?.ok()?);
        Some(slot)
    }

    #[cfg(test)]
    fn count(&self, host: &str) -> Option<usize> {
        lock(&self.by_host)
            .get(host)
            .map(|s| self.limit - s.available_permits())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut by_host = lock(&self.by_host);
        self.permit.take();
        if by_host
            .get(&self.host)
            .is_some_and(|s| Arc::strong_count(s) == 1)
        {
            by_host.remove(&self.host);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_host_at_its_limit_refuses_after_the_wait_and_others_are_free() {
        rt().block_on(async {
            let hosts = Hosts::new(2);
            let a1 = hosts.acquire("a:80", Duration::ZERO).await.unwrap();
            let _a2 = hosts.acquire("a:80", Duration::ZERO).await.unwrap();
            assert!(
                hosts
                    .acquire("a:80", Duration::from_millis(5))
                    .await
                    .is_none()
            );
            let b = hosts.acquire("b:80", Duration::ZERO).await.unwrap();
            assert_eq!(hosts.count("a:80"), Some(2));
            drop(a1);
            assert_eq!(hosts.count("a:80"), Some(1));
            assert!(hosts.acquire("a:80", Duration::ZERO).await.is_some());
            drop(b);
            assert_eq!(hosts.count("b:80"), None, "an idle host leaves the map");
        });
    }

    #[test]
    fn a_waiting_run_gets_the_slot_given_back() {
        rt().block_on(async {
            let hosts = Arc::new(Hosts::new(1));
            let held = hosts.acquire("a:80", Duration::ZERO).await.unwrap();
            let waiter = {
                let hosts = hosts.clone();
                // Generous: the holder gives its slot back right away.
                tokio::spawn(async move {
                    hosts
                        .acquire("a:80", Duration::from_secs(60))
                        .await
                        .is_some()
                })
            };
            tokio::task::yield_now().await;
            drop(held);
            assert!(waiter.await.unwrap());
            assert_eq!(hosts.count("a:80"), None);
        });
    }
}
