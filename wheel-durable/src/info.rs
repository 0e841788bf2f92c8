//! What the durable tier reports: one timer ([`TimerInfo`]), a dead letter
//! ([`DeadLetter`]) and a node's counters ([`DurableStats`], with
//! [`LatenessBuckets`] and [`HttpCounts`]).
//!
//! Node state: none: these are copies, owned by whoever asked.

use std::time::{Duration, SystemTime};

/// Where a timer is in its life (see `docs/durable.md` for the state
/// machine).
///
/// # Examples
///
/// ```
/// use wheel_durable::TimerState;
/// assert_ne!(TimerState::Pending, TimerState::Running);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimerState {
    /// Waiting in the store for its due time; no node holds it.
    Pending,
    /// A node has claimed it (it is due soon) and holds it in memory until
    /// it is due; not started.
    Claimed,
    /// A node has started its handler.
    Running,
    /// Gave up: failed, or ran out of attempts. See [`DeadLetter`].
    Dead,
    /// Came due while its flow key was paused: kept in the store, claimed
    /// by no node, until the key is resumed (then pending again, in due
    /// order). See [`DurableTimers::pause_flow`](crate::DurableTimers::pause_flow).
    Parked,
}

/// One timer as the store holds it.
///
/// # Examples
///
/// ```no_run
/// use std::time::{Duration, SystemTime};
/// use wheel_durable::{DurableTimers, TimerState};
///
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// let timers = DurableTimers::builder().embedded("timers").build()?;
/// timers.add("order:17", Duration::from_secs(1800), b"close")?;
/// let info = timers.get("order:17")?.expect("just added");
/// assert_eq!(info.state, TimerState::Pending);
/// assert!(info.due > SystemTime::now());
/// assert_eq!(info.first_due, info.due); // never retried
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimerInfo {
    /// The key.
    pub key: String,
    /// When it is (or was) due, by the store's clock.
    pub due: SystemTime,
    /// When it was first due: the due time it was added, rescheduled or
    /// revived with. A retry moves [`due`](TimerInfo::due) but not this.
    pub first_due: SystemTime,
    /// Runs started so far.
    pub attempts: u32,
    /// Where it is in its life.
    pub state: TimerState,
    /// The payload.
    pub payload: Vec<u8>,
    /// When it gave up, by the store's clock: set for dead letters only.
    pub failed_at: Option<SystemTime>,
    /// Why it gave up: set for dead letters only.
    pub reason: Option<String>,
}

impl TimerInfo {
    /// The HTTP callback this timer sends, or `None` when its payload is
    /// not a callback (a timer added with a payload of its own; feature
    /// `http`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::http::{HttpCallback, Method};
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let at = SystemTime::now() + Duration::from_secs(3600);
    /// let cb = HttpCallback::new(Method::Post, "http://127.0.0.1:8080/remind/9");
    /// timers.add_callback_at("remind:9", at, &cb)?;
    /// timers.add_at("plain", at, b"close")?;
    /// assert_eq!(timers.get("remind:9")?.unwrap().callback(), Some(cb));
    /// assert_eq!(timers.get("plain")?.unwrap().callback(), None);
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "http")]
    pub fn callback(&self) -> Option<crate::http::HttpCallback> {
        crate::http::HttpCallback::from_payload(&self.payload)
    }
}

/// A timer that gave up: its handler returned
/// [`Outcome::Fail`](crate::Outcome::Fail), or it ran out of
/// attempts. It stays until [`retry_dead`](crate::DurableTimers::retry_dead)
/// revives it, or `add` or `cancel` of its key replaces or removes it.
///
/// # Examples
///
/// ```
/// use std::time::SystemTime;
/// use wheel_durable::DeadLetter;
///
/// let d = DeadLetter {
///     key: "hook:3".into(), payload: vec![], attempts: 10,
///     reason: "gave up after 10 attempts".into(), failed_at: SystemTime::now(),
/// };
/// assert!(d.reason.starts_with("gave up"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// The key.
    pub key: String,
    /// The payload.
    pub payload: Vec<u8>,
    /// Runs started.
    pub attempts: u32,
    /// Why it gave up.
    pub reason: String,
    /// When it gave up, by the store's clock.
    pub failed_at: SystemTime,
}

impl DeadLetter {
    /// The HTTP callback this dead letter sent, or `None` when its payload
    /// is not a callback (feature `http`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use wheel_durable::http::{HttpCallback, Method};
    /// use wheel_durable::DeadLetter;
    ///
    /// let cb = HttpCallback::new(Method::Post, "http://127.0.0.1:8080/hook");
    /// let d = DeadLetter {
    ///     key: "hook:3".into(), payload: cb.to_payload()?, attempts: 10,
    ///     reason: "gave up after 10 attempts".into(), failed_at: SystemTime::now(),
    /// };
    /// assert_eq!(d.callback(), Some(cb));
    /// # Ok::<(), wheel_durable::DurableError>(())
    /// ```
    #[cfg(feature = "http")]
    pub fn callback(&self) -> Option<crate::http::HttpCallback> {
        crate::http::HttpCallback::from_payload(&self.payload)
    }
}

/// A snapshot of a node's view: the store's counts and this node's own
/// counters.
///
/// [`stats`](crate::DurableTimers::stats) never waits long for
/// the store: the counts are the last ones read, `store_counts_age` says
/// how old they are, and `store_available` whether the store answers. A
/// metrics endpoint polling `stats` keeps answering during an outage and
/// shows the last known queue, marked as such. Before the first read of
/// the counts has finished they are unknown: `store_counts_age`,
/// `pending`, `claimed`, `dead`, `parked` and `oldest_overdue` are then all `None`
/// (never a zero that was not counted).
///
/// # Examples
///
/// ```no_run
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// let timers = wheel_durable::DurableTimers::builder().embedded("timers").build()?;
/// let s = timers.stats();
/// match (s.pending, s.store_counts_age) {
///     (Some(n), Some(age)) if s.store_available => println!("{n} pending (read {age:?} ago)"),
///     (Some(n), Some(age)) => println!("store down; {n} pending as of {age:?} ago"),
///     _ => println!("the store's counts are not read yet"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DurableStats {
    /// Whether the store answered the last read of its counts and has not
    /// failed since: no Redis call failed to reach the server, no write of
    /// the embedded store failed (after a failed write, a full disk, it
    /// refuses writes until it is opened again).
    pub store_available: bool,
    /// How old the store's counts below are; `None` until the first
    /// read of them has succeeded, and then the counts are `None` too.
    pub store_counts_age: Option<Duration>,
    /// Timers waiting in the store (all nodes); `None` while unknown.
    pub pending: Option<u64>,
    /// Timers claimed or running (all nodes); `None` while unknown.
    pub claimed: Option<u64>,
    /// Dead letters (all nodes); `None` while unknown.
    pub dead: Option<u64>,
    /// Timers parked in the store (all nodes): their flow key is paused
    /// ([`DurableTimers::pause_flow`](crate::DurableTimers::pause_flow)),
    /// its circuit breaker open, or its backlog deferred; `None` while
    /// unknown.
    pub parked: Option<u64>,
    /// How long the earliest pending timer was overdue when the counts
    /// were read (zero when none was): a growing value means no node is
    /// firing. `None` while unknown.
    pub oldest_overdue: Option<Duration>,
    /// Timers this node holds in memory, claimed and not yet started.
    pub held: u64,
    /// Handler runs this node started.
    pub fired: u64,
    /// Of those, runs of schedules (chain, catch-up and triggered runs).
    pub schedule_runs: u64,
    /// Runs on this node that ended in a retry.
    pub retried: u64,
    /// Timers this node turned into dead letters.
    pub failed: u64,
    /// Runs this node did not start because the timer had been cancelled,
    /// rescheduled or claimed again by then.
    pub stale: u64,
    /// Timers this node claimed and did not start because their namespace
    /// or flow key was paused, or its circuit breaker open, by then
    /// (handed back to the store, or parked there; no attempt spent).
    pub paused: u64,
    /// Claims this node handed to the store to park because their flow
    /// key's limits held back more of them than a node keeps (512 per
    /// key); the store hands them out again at the key's rate.
    pub deferred: u64,
    /// Store calls of this node that failed and were retried.
    pub store_errors: u64,
    /// Claims this node made (each takes up to 128 timers). They follow
    /// the timers coming due, not the adds: a burst of adds of near-due
    /// timers costs a node at most one claim per 5 ms.
    pub claims: u64,
    /// Median lateness of this node's runs (start minus due, store clock).
    pub lateness_p50: Duration,
    /// 99th percentile of the same.
    pub lateness_p99: Duration,
    /// The largest of the same.
    pub lateness_max: Duration,
    /// The same as cumulative counts at fixed bounds, for a Prometheus
    /// histogram.
    pub lateness_buckets: LatenessBuckets,
    /// This node's HTTP callback attempts by result (all zero on a node
    /// without [`http`](crate::DurableTimersBuilder::http)).
    pub http: HttpCounts,
}

/// A node's HTTP callback attempts by result, counted since it started:
/// each request sent counts once, under its reply's status class or why
/// it got no reply, and each target the private-target guard refused
/// counts once. Not counted: a run that found its host at the per-host
/// limit and sent nothing, and a callback whose request could not be
/// built. Read with [`DurableTimers::stats`](crate::DurableTimers::stats);
/// each count only grows, as a Prometheus counter does.
///
/// # Examples
///
/// ```
/// use wheel_durable::HttpCounts;
///
/// let c = HttpCounts::default();
/// let failed = c.status_4xx + c.status_5xx + c.timeout + c.connection_error;
/// println!("wheel_http_attempts_total{{result=\"2xx\"}} {}", c.status_2xx);
/// assert_eq!(failed, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpCounts {
    /// Replies with a 2xx status.
    pub status_2xx: u64,
    /// Replies with a 3xx status (redirects are not followed).
    pub status_3xx: u64,
    /// Replies with a 4xx status.
    pub status_4xx: u64,
    /// Replies with a 5xx status.
    pub status_5xx: u64,
    /// Replies with a status outside 200 to 599.
    pub other_status: u64,
    /// Requests that ran out of the connect timeout or the request timeout.
    pub timeout: u64,
    /// Requests that got no reply for another reason: a refused or reset
    /// connection, a failed DNS lookup or TLS handshake, a reply that did
    /// not parse.
    pub connection_error: u64,
    /// Targets refused by the private-target guard
    /// ([`HttpConfig::allow_private_targets`](crate::http::HttpConfig::allow_private_targets)).
    pub refused_target: u64,
}

/// The number of bounds in [`LatenessBuckets::BOUNDS`].
const BOUND_COUNT: usize = 13;

/// The lateness of a node's runs (start minus due, store clock) as
/// cumulative counts at fixed bounds, ready for a Prometheus histogram:
/// `le` is each bound, `+Inf` is [`count`](Self::count), and the sum is
/// [`sum`](Self::sum). Counted since the node started.
///
/// How exact: the node keeps lateness in a log-linear histogram whose
/// buckets each span at most 1/16 of their values, and a bound counts
/// every bucket that starts at or below it. So a count never misses a run
/// at or below its bound, and may include runs up to 1/16 (6.25 %) later
/// than it. Lateness is measured in whole milliseconds, which makes the
/// counts at the bounds up to 25 ms exact. `count` and `sum` are exact.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_durable::LatenessBuckets;
///
/// let b = LatenessBuckets::default();
/// assert_eq!(b.cumulative[0], (Duration::from_millis(1), 0));
/// assert_eq!(b.cumulative.last().unwrap().0, Duration::from_secs(10));
/// // As Prometheus text:
/// for (le, n) in b.cumulative {
///     println!("wheel_lateness_seconds_bucket{{le=\"{}\"}} {n}", le.as_secs_f64());
/// }
/// println!("wheel_lateness_seconds_bucket{{le=\"+Inf\"}} {}", b.count);
/// println!("wheel_lateness_seconds_sum {}", b.sum.as_secs_f64());
/// println!("wheel_lateness_seconds_count {}", b.count);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LatenessBuckets {
    /// Each bound of [`BOUNDS`](Self::BOUNDS), in order, with the runs
    /// whose lateness was at most it (see the type's docs for how exact).
    pub cumulative: [(Duration, u64); BOUND_COUNT],
    /// All runs counted.
    pub count: u64,
    /// The sum of their lateness.
    pub sum: Duration,
}

impl LatenessBuckets {
    /// The bounds: 1, 2, 5, 10, 25, 50, 100, 250 and 500 ms, 1, 2.5, 5
    /// and 10 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::LatenessBuckets;
    /// assert_eq!(LatenessBuckets::BOUNDS[10], Duration::from_millis(2500));
    /// ```
    pub const BOUNDS: [Duration; BOUND_COUNT] = [
        Duration::from_millis(1),
        Duration::from_millis(2),
        Duration::from_millis(5),
        Duration::from_millis(10),
        Duration::from_millis(25),
        Duration::from_millis(50),
        Duration::from_millis(100),
        Duration::from_millis(250),
        Duration::from_millis(500),
        Duration::from_secs(1),
        Duration::from_millis(2500),
        Duration::from_secs(5),
        Duration::from_secs(10),
    ];

    /// The buckets of `counts` (one per bound), `count` runs and their
    /// `sum`.
    pub(crate) fn new(counts: [u64; BOUND_COUNT], count: u64, sum: Duration) -> LatenessBuckets {
        let cumulative = std::array::from_fn(|i| (Self::BOUNDS[i], counts[i]));
        LatenessBuckets {
            cumulative,
            count,
            sum,
        }
    }
}

/// Every bound with a zero count.
impl Default for LatenessBuckets {
    fn default() -> Self {
        LatenessBuckets::new([0; BOUND_COUNT], 0, Duration::ZERO)
    }
}
