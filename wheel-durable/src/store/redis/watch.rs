//! The subscriber thread: turns messages on the wake channel into calls of
//! the node's wake-up.
//!
//! A message carries the earliest due time (store milliseconds) that the
//! script made pending. A notification only makes a node claim sooner;
//! correctness never depends on one arriving (the node's safety poll covers
//! a lost one). So after every (re)connection the thread wakes the node
//! once, as for a timer due at once, for whatever it may have missed while
//! disconnected; a message it cannot read counts the same way.
//!
//! Node state: none: it owns the subscriber connection and calls the node
//! back only through the wake callback it was given.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::route::Route;
use crate::store::Wake;

/// How often a blocked read looks at the stop flag: closing the store
/// waits for the thread, so this bounds what a Redis node's `shutdown`
/// spends here (a timed-out read is one wake-up, nothing sent).
const READ_TIMEOUT: Duration = Duration::from_millis(50);

pub(super) struct Watcher {
    /// Any node will do: a cluster passes every message to all its nodes.
    pub(super) route: Arc<Route>,
    pub(super) channel: String,
    pub(super) closed: Arc<AtomicBool>,
    pub(super) wake: Wake,
}

/// The due time a message carries; 0 (due at once) if it does not parse.
fn due_of(payload: &[u8]) -> u64 {
    std::str::from_utf8(payload)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

impl Watcher {
    pub(super) fn run(self) {
        let mut wait = Duration::from_millis(10);
        while !self.closed.load(Ordering::SeqCst) {
            if self.listen().is_ok() {
                wait = Duration::from_millis(10);
            }
            if self.closed.load(Ordering::SeqCst) {
                break;
            }
            // Closing unparks the thread: a node shutting down while Redis
            // is gone does not wait out the back-off.
            std::thread::park_timeout(wait);
            wait = (wait * 2).min(Duration::from_millis(500));
        }
    }

    /// One connection's life: subscribe, then wake on every message until
    /// the connection breaks or the store closes.
    fn listen(&self) -> redis::RedisResult<()> {
        let (epoch, client) = self.route.client()?;
        let mut conn = client
            .get_connection_with_timeout(Duration::from_secs(1))
            .inspect_err(|_| self.route.stale(epoch))?;
        let mut sub = conn.as_pubsub();
        sub.set_read_timeout(Some(READ_TIMEOUT))?;
        sub.subscribe(&self.channel)?;
        (self.wake)(0);
        while !self.closed.load(Ordering::SeqCst) {
            match sub.get_message() {
                Ok(msg) => (self.wake)(due_of(msg.get_payload_bytes())),
                Err(e) if e.is_timeout() => {}
                Err(e) => {
                    self.route.stale(epoch);
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_message_gives_its_due_time_or_at_once() {
        assert_eq!(super::due_of(b"1700000000123"), 1_700_000_000_123);
        assert_eq!(super::due_of(b""), 0);
        assert_eq!(super::due_of(b"soon"), 0);
        assert_eq!(super::due_of(&[0xff]), 0);
    }
}
