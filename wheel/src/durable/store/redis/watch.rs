//! The subscriber thread: turns messages on the wake channel into calls of
//! the node's wake-up.
//!
//! A notification only makes a node claim sooner; correctness never
//! depends on one arriving (the node's safety poll covers a lost one). So
//! after every (re)connection the thread wakes the node once, for whatever
//! it may have missed while disconnected. Every wake says due time 0 ("at
//! once"): the messages carry no due time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::durable::store::Wake;

/// How often a blocked read looks at the stop flag.
const READ_TIMEOUT: Duration = Duration::from_millis(200);

pub(super) struct Watcher {
    pub(super) client: redis::Client,
    pub(super) channel: String,
    pub(super) closed: Arc<AtomicBool>,
    pub(super) wake: Wake,
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
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_millis(500));
        }
    }

    /// One connection's life: subscribe, then wake on every message until
    /// the connection breaks or the store closes.
    fn listen(&self) -> redis::RedisResult<()> {
        let mut conn = self
            .client
            .get_connection_with_timeout(Duration::from_secs(1))?;
        let mut sub = conn.as_pubsub();
        sub.set_read_timeout(Some(READ_TIMEOUT))?;
        sub.subscribe(&self.channel)?;
        (self.wake)(0);
        while !self.closed.load(Ordering::SeqCst) {
            match sub.get_message() {
                Ok(_) => (self.wake)(0),
                Err(e) if e.is_timeout() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
