//! [`DurableTimers`]: one node's handle on a store.
//!
//! Node state: none of its own. A [`DurableTimers`] holds the store and, with
//! a handler, the node (`node/`), whose stages own their state; it reaches
//! them only through the node's methods.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::add::{AddMode, add_bounded};
use super::node::{Node, NodeConfig};
use super::replay::{Replay, Replays};
use super::stats::{CountsReader, HttpCounters, STATS_WAIT, Snapshot};
use super::store::{Due, NewTimer, Store};
use super::time::{millis_ceil, millis_of};
use super::{
    DeadFilter, DeadLetter, DurableError, DurableStats, DurableTimersBuilder, TimerInfo,
    check_input, check_new,
};
use crate::sync::lock;

/// Durable timers: one node's handle on a store (`Send + Sync`; share it
/// behind an `Arc`).
///
/// With a handler ([`DurableTimersBuilder::handler`]) the node fires due
/// timers until [`shutdown`](Self::shutdown) (or drop, which does the same
/// and ignores its errors); without one it is a client.
///
/// Every call that asks the store waits for an unreachable one at most
/// [`unavailable_after`](DurableTimersBuilder::unavailable_after) (5 s by
/// default), then returns [`DurableError::Unavailable`];
/// [`stats`](Self::stats) never waits for it.
///
/// # Examples
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
/// use wheel_durable::{DurableTimers, Outcome};
///
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// let dir = tempfile::tempdir().unwrap();
/// let (tx, rx) = mpsc::channel();
/// let tx = std::sync::Mutex::new(tx);
/// let timers = DurableTimers::builder()
///     .embedded(dir.path().join("timers"))
///     .handler(move |t| {
///         tx.lock().unwrap().send(t.key.clone()).unwrap();
///         Outcome::Done
///     })
///     .build()?;
/// timers.add("reminder:1", Duration::from_millis(20), b"")?;
/// assert_eq!(rx.recv().unwrap(), "reminder:1");
/// timers.shutdown()?;
/// # Ok(()) }
/// ```
pub struct DurableTimers {
    pub(super) store: Arc<dyn Store>,
    node: Option<Node>,
    pub(super) max_payload: usize,
    /// Reads the store's counts for `stats` on its own thread.
    counts: Arc<CountsReader>,
    /// The node's HTTP callback attempts (shared with its sender).
    http_counts: Arc<HttpCounters>,
    /// Held through a shutdown, so that a second caller returns only once
    /// the first one's shutdown is complete.
    stopping: Mutex<()>,
    /// The dead-letter replays this handle started (stopped on shutdown).
    replays: Replays,
}

impl std::fmt::Debug for DurableTimers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableTimers")
            .field("fires", &self.node.is_some())
            .finish_non_exhaustive()
    }
}

impl DurableTimers {
    /// The claims this node holds back for each flow key's limits (none
    /// on a node that fires nothing).
    pub(crate) fn waiting_by_flow(&self) -> std::collections::HashMap<String, usize> {
        self.node
            .as_ref()
            .map(|n| n.shared().waiting_by_flow())
            .unwrap_or_default()
    }

    /// The median and 99th percentile lateness of each flow key's runs on
    /// this node (the first keys seen).
    pub(crate) fn flow_lateness(&self) -> Vec<(String, Duration, Duration)> {
        self.node
            .as_ref()
            .map(|n| n.shared().flow_lateness())
            .unwrap_or_default()
    }
}

impl DurableTimers {
    /// A builder with the defaults of [`DurableTimersBuilder`].
    ///
    /// # Examples
    ///
    /// ```
    /// let b = wheel_durable::DurableTimers::builder();
    /// # drop(b);
    /// ```
    pub fn builder() -> DurableTimersBuilder {
        DurableTimersBuilder::default()
    }

    pub(crate) fn start(
        store: Arc<dyn Store>,
        node: Option<NodeConfig>,
        max_payload: usize,
        http_counts: Arc<HttpCounters>,
    ) -> Result<DurableTimers, DurableError> {
        let node = match node {
            Some(config) => Some(Node::start(store.clone(), config)?),
            None => None,
        };
        Ok(DurableTimers {
            counts: CountsReader::new(store.clone()),
            store,
            node,
            max_payload,
            http_counts,
            stopping: Mutex::new(()),
            replays: Replays::default(),
        })
    }

    /// Adds a timer due at `due` (by the store's clock), or replaces the
    /// timer with this key, whatever its state. Returns once the store
    /// holds it durably.
    ///
    /// # Errors
    ///
    /// [`InvalidKey`](DurableError::InvalidKey),
    /// [`PayloadTooLarge`](DurableError::PayloadTooLarge),
    /// [`InvalidTime`](DurableError::InvalidTime), or the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let tomorrow = SystemTime::now() + Duration::from_secs(24 * 3600);
    /// timers.add_at("rate:order:17", tomorrow, b"auto-rate")?;
    /// assert!(timers.get("rate:order:17")?.is_some());
    /// # Ok(()) }
    /// ```
    pub fn add_at(&self, key: &str, due: SystemTime, payload: &[u8]) -> Result<(), DurableError> {
        check_new(key, payload, self.max_payload)?;
        let due = Due::At(millis_of(due)?);
        self.store
            .add(&[NewTimer { key, due, payload }], AddMode::Replace)
            .map(drop)
    }

    /// Adds a timer due `delay` from now, measured on the store's clock.
    ///
    /// # Errors
    ///
    /// As for [`add`](Self::add).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// timers.add("heartbeat:7", Duration::from_secs(30), b"")?;
    /// # Ok(()) }
    /// ```
    pub fn add(&self, key: &str, delay: Duration, payload: &[u8]) -> Result<(), DurableError> {
        check_new(key, payload, self.max_payload)?;
        let due = Due::After(millis_ceil(delay).ok_or(DurableError::InvalidTime)?);
        self.store
            .add(&[NewTimer { key, due, payload }], AddMode::Replace)
            .map(drop)
    }

    /// Adds a callback timer (or replaces the timer with this key): at
    /// `due`, a node built with
    /// [`http`](crate::DurableTimersBuilder::http) sends `cb`
    /// (feature `http`; see [`wheel_durable::http`](crate::http)).
    /// Checked, then stored like [`add`](Self::add): durable on return.
    ///
    /// # Errors
    ///
    /// [`InvalidUrl`](DurableError::InvalidUrl) (not an `http://` or
    /// `https://` URL with a host), [`InvalidHeader`](DurableError::InvalidHeader)
    /// (a bad name or value, or a name the node sets), then as for
    /// [`add`](Self::add) ([`PayloadTooLarge`](DurableError::PayloadTooLarge)
    /// counts the encoded request: URL, headers and body).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::http::{HttpCallback, Method};
    /// use wheel_durable::DurableError;
    /// # fn main() -> Result<(), DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let at = SystemTime::now() + Duration::from_secs(3600);
    /// let remind = HttpCallback::new(Method::Post, "http://127.0.0.1:8080/remind/9");
    /// timers.add_callback_at("remind:9", at, &remind)?;
    /// let ftp = HttpCallback::new(Method::Get, "ftp://files.example/x");
    /// assert!(matches!(timers.add_callback_at("x", at, &ftp), Err(DurableError::InvalidUrl(_))));
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "http")]
    pub fn add_callback_at(
        &self,
        key: &str,
        due: SystemTime,
        cb: &super::http::HttpCallback,
    ) -> Result<(), DurableError> {
        self.add_at(key, due, &cb.to_payload()?)
    }

    /// Adds (or replaces) many timers, as [`add`](Self::add) each. Every
    /// input is checked before anything is written. The batch is stored in
    /// chunks of at most 1000 timers and 4 MiB of keys and payloads (a
    /// larger timer goes alone), each chunk one atomic store operation (one
    /// write batch of the embedded store, one Lua script on Redis); the
    /// whole call is not atomic: if it fails, earlier chunks may be stored.
    ///
    /// # Errors
    ///
    /// As for [`add`](Self::add), for the first bad timer (nothing added),
    /// or the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let at = SystemTime::now() + Duration::from_secs(60);
    /// timers.add_many(&[("a", at, b"1".as_slice()), ("b", at, b"2".as_slice())])?;
    /// assert_eq!(timers.get("b")?.unwrap().payload, b"2");
    /// # Ok(()) }
    /// ```
    pub fn add_many(&self, timers: &[(&str, SystemTime, &[u8])]) -> Result<(), DurableError> {
        let batch = self.checked(timers)?;
        add_bounded(self.store.as_ref(), &batch, AddMode::Replace).map(drop)
    }

    /// Checks every timer of a batch before anything is written.
    pub(super) fn checked<'a>(
        &self,
        timers: &[(&'a str, SystemTime, &'a [u8])],
    ) -> Result<Vec<NewTimer<'a>>, DurableError> {
        let mut batch = Vec::with_capacity(timers.len());
        for &(key, due, payload) in timers {
            check_new(key, payload, self.max_payload)?;
            let due = Due::At(millis_of(due)?);
            batch.push(NewTimer { key, due, payload });
        }
        Ok(batch)
    }

    /// Cancels a timer. True iff it was pending or claimed and had not
    /// started: then it never starts, on any node. A timer whose handler
    /// has started is removed too (false): the run finishes, and its
    /// outcome, even a retry, is ignored. A dead letter is removed (false).
    ///
    /// # Errors
    ///
    /// [`InvalidKey`](DurableError::InvalidKey) or the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// timers.add("order:17", Duration::from_secs(1800), b"close")?;
    /// assert!(timers.cancel("order:17")?);
    /// assert!(!timers.cancel("order:17")?);
    /// # Ok(()) }
    /// ```
    pub fn cancel(&self, key: &str) -> Result<bool, DurableError> {
        check_input(key, &[], 0)?;
        self.store.cancel(key)
    }

    /// Moves a pending or claimed timer to `due` (keeping its payload and
    /// attempts). False if there is no such timer or it has started.
    ///
    /// # Errors
    ///
    /// As for [`add`](Self::add).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// timers.add("session:9", Duration::from_secs(60), b"")?;
    /// let later = SystemTime::now() + Duration::from_secs(600);
    /// assert!(timers.reset_at("session:9", later)?);
    /// # Ok(()) }
    /// ```
    pub fn reset_at(&self, key: &str, due: SystemTime) -> Result<bool, DurableError> {
        check_input(key, &[], 0)?;
        self.store.reschedule(key, Due::At(millis_of(due)?))
    }

    /// One timer, whatever its state (dead letters included).
    ///
    /// # Errors
    ///
    /// [`InvalidKey`](DurableError::InvalidKey) or the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// assert_eq!(timers.get("nothing")?, None);
    /// # Ok(()) }
    /// ```
    pub fn get(&self, key: &str) -> Result<Option<TimerInfo>, DurableError> {
        check_input(key, &[], 0)?;
        self.store.get(key)
    }

    /// Up to `limit` dead letters, oldest failure first.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// for d in timers.dead_letters(100)? {
    ///     println!("{}: {}", d.key, d.reason);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn dead_letters(&self, limit: usize) -> Result<Vec<DeadLetter>, DurableError> {
        self.store.dead_letters(limit)
    }

    /// Makes a dead letter pending again, due at `due`, with its attempts
    /// reset. False if there is no dead letter with this key.
    ///
    /// # Errors
    ///
    /// As for [`reset_at`](Self::reset_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::SystemTime;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// assert!(!timers.retry_dead("hook:3", SystemTime::now())?);
    /// # Ok(()) }
    /// ```
    pub fn retry_dead(&self, key: &str, due: SystemTime) -> Result<bool, DurableError> {
        check_input(key, &[], 0)?;
        self.store.retry_dead(key, Due::At(millis_of(due)?))
    }

    /// Revives the dead letters that `filter` takes, in the background, at
    /// most `rate` per second, evenly paced (the `n`-th, from 0, no earlier
    /// than `n / rate` seconds after the start), and at most `limit` of
    /// them (matched ones, revived or skipped) if given. Each is revived as
    /// [`retry_dead`](Self::retry_dead) with the store's `now` does:
    /// pending, due now, attempts reset. Returns at once with the
    /// [`Replay`]: its progress, cancel and wait.
    ///
    /// The replay walks the dead letters in failure order with a cursor,
    /// so ones that do not match never hold it up. It takes every dead
    /// letter that failed up to the store's clock when it starts (that
    /// millisecond included: its first revival waits for the next one), and
    /// only those: a dead letter added later, a revived one that fails
    /// again included, is not replayed. A letter that changed after the walk read it (revived or
    /// removed by someone else) is skipped and counted. The replay lives
    /// in this handle: [`shutdown`](Self::shutdown) stops it
    /// ([`ReplayState::Stopped`](crate::ReplayState::Stopped)); what it
    /// revived stays revived, the rest stays dead, and a new replay picks
    /// up the rest.
    ///
    /// # Errors
    ///
    /// [`InvalidReplay`](DurableError::InvalidReplay) for a rate that is
    /// not more than 0 and at most [`MAX_REPLAY_RATE`](crate::MAX_REPLAY_RATE),
    /// a limit of 0, or an empty or unstorable time range; the store's
    /// error reading its clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::{DeadFilter, DurableError, ReplayState};
    /// # fn main() -> Result<(), DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let filter = DeadFilter::default().flow("http://127.0.0.1:8080");
    /// let replay = timers.replay_dead(&filter, 200.0, Some(1_000))?;
    /// let end = replay.wait();
    /// assert_eq!(end.state, ReplayState::Done);
    /// assert!(timers.replay_dead(&filter, 0.0, None).unwrap_err().is_input());
    /// # Ok(()) }
    /// ```
    pub fn replay_dead(
        &self,
        filter: &DeadFilter,
        rate: f64,
        limit: Option<u64>,
    ) -> Result<Replay, DurableError> {
        self.replays.start(self.store.clone(), filter, rate, limit)
    }

    /// The store's counts and this node's counters. Never fails, and
    /// never waits for the store longer than 25 ms: it asks for a fresh
    /// read of the counts and waits that long for it (not at all while
    /// the store is known to be unreachable); otherwise the counts are the
    /// last ones read. [`DurableStats::store_available`] and
    /// [`DurableStats::store_counts_age`] say which; before any read has
    /// finished, the counts are unknown (`None`).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let s = timers.stats();
    /// if let (true, Some(pending)) = (s.store_available, s.pending) {
    ///     println!("{pending} pending (read {:?} ago)", s.store_counts_age);
    /// }
    /// assert_eq!(s.fired, 0);
    /// # Ok(()) }
    /// ```
    pub fn stats(&self) -> DurableStats {
        let mut s = store_stats(self.counts.snapshot(STATS_WAIT));
        if let Some(node) = &self.node {
            let n = node.shared();
            let c = &n.counters;
            s.held = n.held_count() as u64;
            s.fired = c.fired.load(Ordering::Relaxed);
            s.schedule_runs = c.schedule_runs.load(Ordering::Relaxed);
            s.retried = c.retried.load(Ordering::Relaxed);
            s.failed = c.failed.load(Ordering::Relaxed);
            s.stale = c.stale.load(Ordering::Relaxed);
            s.paused = c.paused.load(Ordering::Relaxed);
            s.deferred = c.deferred.load(Ordering::Relaxed);
            s.store_errors = c.store_errors.load(Ordering::Relaxed);
            s.claims = c.claims.load(Ordering::Relaxed);
            (s.lateness_p50, s.lateness_p99, s.lateness_max) = n.lateness();
            s.lateness_buckets = n.lateness_buckets();
        }
        s.http = self.http_counts.snapshot();
        s
    }

    /// Stops firing: hands claimed timers that have not started back to
    /// the store (other nodes fire them on time), waits for running
    /// handlers to finish and report, and closes the store (the embedded
    /// store's last commits become durable). Calls made after it answer
    /// [`Closed`](DurableError::Closed).
    ///
    /// Takes `&self`, as [`Scheduler::shutdown`](wheel::Scheduler::shutdown)
    /// does, so that a handle shared in an `Arc` (as [`AsyncTimers`](crate::AsyncTimers)
    /// holds it) can be shut down; a second call, or one from another
    /// thread, returns once the first has finished and does nothing more.
    /// Dropping the last handle shuts down too.
    ///
    /// # Waits
    ///
    /// For the running handlers, for their outcomes to be recorded (each
    /// at most until its run's lease ends, while the store fails), and for
    /// one hand-back call, which an unreachable store fails after
    /// [`unavailable_after`](DurableTimersBuilder::unavailable_after):
    /// the claims are then left to their leases, and other nodes fire them
    /// when the leases end.
    ///
    /// # Errors
    ///
    /// The store's error on closing.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// timers.shutdown()?;
    /// timers.shutdown()?; // nothing more to do
    /// assert!(matches!(timers.cancel("k"), Err(wheel_durable::DurableError::Closed)));
    /// # Ok(()) }
    /// ```
    pub fn shutdown(&self) -> Result<(), DurableError> {
        let _one_at_a_time = lock(&self.stopping);
        // Before the store closes: a replay's revival under way completes.
        self.replays.stop_all();
        self.counts.stop();
        if let Some(node) = &self.node {
            node.shutdown();
        }
        self.store.close()
    }
}

/// The store's part of the stats: what the counts reader has read, or
/// nothing known before its first read.
fn store_stats(snap: Snapshot) -> DurableStats {
    let mut s = DurableStats {
        store_available: snap.available,
        ..DurableStats::default()
    };
    if let Some((counts, read_at)) = snap.counts {
        s.store_counts_age = Some(read_at.elapsed());
        s.pending = Some(counts.pending);
        s.claimed = Some(counts.claimed);
        s.dead = Some(counts.dead);
        s.parked = Some(counts.parked);
        let overdue = counts
            .next_due
            .map_or(0, |due| counts.now.saturating_sub(due));
        s.oldest_overdue = Some(Duration::from_millis(overdue));
    }
    s
}

impl Drop for DurableTimers {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::store::Counts;

    #[test]
    fn counts_not_read_yet_are_unknown_not_zero() {
        let none = store_stats(Snapshot {
            counts: None,
            available: true,
        });
        assert_eq!(
            (
                none.pending,
                none.claimed,
                none.dead,
                none.parked,
                none.oldest_overdue
            ),
            (None, None, None, None, None)
        );
        assert_eq!(none.store_counts_age, None);
        let counts = Counts {
            now: 1_000,
            pending: 0,
            claimed: 2,
            dead: 3,
            parked: 4,
            next_due: Some(400),
        };
        let read = store_stats(Snapshot {
            counts: Some((counts, Instant::now())),
            available: false,
        });
        assert_eq!(
            (read.pending, read.claimed, read.dead, read.parked),
            (Some(0), Some(2), Some(3), Some(4))
        );
        assert_eq!(read.oldest_overdue, Some(Duration::from_millis(600)));
        assert!(read.store_counts_age.is_some() && !read.store_available);
    }
}
