//! [`DurableTimersBuilder`]: which store, and how this node fires.
//!
//! Node state: none. It owns the settings until `build`, which hands them to
//! the node (`node/config.rs`) and the store, and keeps nothing.

#[cfg(feature = "embedded")]
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::node::{Handler, NodeConfig, notify_window};
use super::stats::HttpCounters;
use super::store::{Store, StoreClock};
use super::timers::DurableTimers;
use super::{DEFAULT_MAX_PAYLOAD, DurableError, Fired, Outcome, RetryPolicy};

#[cfg(feature = "redis")]
#[path = "builder_redis.rs"]
mod redis_store;

/// Where the timers live.
#[derive(Debug, Clone)]
pub(super) enum Choice {
    #[cfg(feature = "embedded")]
    Embedded(PathBuf),
    #[cfg(feature = "redis")]
    Redis(super::store::redis::Servers),
}

/// Configures and opens [`DurableTimers`].
///
/// Pick one store: [`embedded`](Self::embedded) (one file, one process) or
/// [`redis`](Self::redis) (feature `redis`, shared). Without a
/// [`handler`](Self::handler) (or `http`, feature `http`) the result is a
/// client that adds, cancels and reads but fires nothing.
///
/// Defaults: namespace `"wheel"`, 4 workers, a 5 s lease, the default
/// [`RetryPolicy`], timers claimed 2 s ahead, a safety poll every 500 ms,
/// at most 10 000 claimed timers in memory, payloads up to
/// [`DEFAULT_MAX_PAYLOAD`], and a store that keeps failing for 5 s is
/// [`Unavailable`](DurableError::Unavailable).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use wheel_durable::{DurableTimers, Outcome, RetryPolicy};
///
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// let timers = DurableTimers::builder()
///     .embedded("/var/lib/orders/timers")
///     .namespace("orders")
///     .workers(8)
///     .lease(Duration::from_secs(10))
///     .retry(RetryPolicy::new().max_attempts(5))
///     .handler(|t| if t.payload == b"close" { Outcome::Done } else { Outcome::Retry })
///     .build()?;
/// # Ok(()) }
/// ```
#[must_use]
#[derive(Clone)]
pub struct DurableTimersBuilder {
    choice: Result<Option<Choice>, String>,
    namespace: String,
    handler: Option<Handler>,
    node: NodeConfig,
    max_payload: usize,
    unavailable_after: Duration,
    /// Replicas each write waits for (0: none), and for how long.
    pub(super) replicas: (u32, Duration),
    /// The namespace's partitions (`builder_redis.rs`); 1: undivided.
    pub(super) partitions: u32,
    /// How long a key is remembered after its timer ended (zero: off).
    dedup: Duration,
    clock: StoreClock,
    /// Set: this node sends callback timers by HTTP.
    #[cfg(feature = "http")]
    http: Option<super::http::HttpConfig>,
    /// Async handlers and how they run (`builder_async.rs`).
    #[cfg(feature = "tokio")]
    pub(super) tasks: super::builder_async::AsyncOptions,
}

impl std::fmt::Debug for DurableTimersBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableTimersBuilder")
            .field("store", &self.choice)
            .field("namespace", &self.namespace)
            .field("handler", &self.handler.is_some())
            .field("workers", &self.node.workers)
            .field("lease", &self.node.lease)
            .finish_non_exhaustive()
    }
}

impl Default for DurableTimersBuilder {
    fn default() -> Self {
        DurableTimersBuilder {
            choice: Ok(None),
            namespace: "wheel".into(),
            handler: None,
            node: NodeConfig {
                namespace: "wheel".into(),
                handler: Arc::new(|_: &Fired| Outcome::Done),
                workers: 4,
                lease: Duration::from_secs(5),
                window: Duration::from_secs(2),
                poll: Duration::from_millis(500),
                max_held: 10_000,
                retry: RetryPolicy::default(),
                flows: crate::flow_key::FlowKeys::default(),
                #[cfg(feature = "tokio")]
                tasks: None,
            },
            max_payload: DEFAULT_MAX_PAYLOAD,
            unavailable_after: Duration::from_secs(5),
            replicas: (0, Duration::ZERO),
            partitions: 1,
            dedup: Duration::ZERO,
            clock: StoreClock::Real,
            #[cfg(feature = "http")]
            http: None,
            #[cfg(feature = "tokio")]
            tasks: super::builder_async::AsyncOptions::default(),
        }
    }
}

impl DurableTimersBuilder {
    pub(super) fn choose(mut self, c: Choice) -> Self {
        self.choice = match self.choice {
            Ok(None) => Ok(Some(c)),
            Ok(Some(_)) | Err(_) => Err("choose one store: embedded or redis".into()),
        };
        self
    }

    /// The embedded store in the directory `path`. One process at a time
    /// may open it, and it once.
    ///
    /// A path that does not exist (its parent must) or an empty directory,
    /// such as a freshly mounted volume, becomes a new store. An existing
    /// store is opened as it is. Anything else is refused untouched, with
    /// [`DurableError::Corrupt`]: a regular file, empty or not, or a
    /// directory that holds other files or another program's fjall
    /// database. A directory this process has open already is
    /// [`DurableError::Locked`] saying so; one another process holds is
    /// `Locked` too, saying that.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder()
    ///     .embedded(dir.path().join("timers"))
    ///     .build()?;
    /// timers.shutdown()?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "embedded")]
    pub fn embedded(self, path: impl AsRef<Path>) -> Self {
        self.choose(Choice::Embedded(path.as_ref().to_owned()))
    }

    /// Keeps these timers apart from other namespaces in the same store
    /// (for Redis, every key carries the hash tag `{ns}`).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = wheel_durable::DurableTimers::builder().namespace("billing");
    /// # drop(b);
    /// ```
    pub fn namespace(mut self, ns: &str) -> Self {
        self.namespace = ns.to_owned();
        self
    }

    /// Makes this node fire due timers with `f`, on worker threads.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::Outcome;
    /// let b = wheel_durable::DurableTimers::builder().handler(|t| {
    ///     println!("{} is due", t.key);
    ///     Outcome::Done
    /// });
    /// # drop(b);
    /// ```
    pub fn handler<F>(mut self, f: F) -> Self
    where
        F: Fn(&Fired) -> Outcome + Send + Sync + 'static,
    {
        self.handler = Some(Arc::new(f));
        self
    }

    /// Makes this node send callback timers (added with
    /// [`add_callback_at`](DurableTimers::add_callback_at)) by HTTP, with or
    /// without a [`handler`](Self::handler) for the other timers (feature
    /// `http`, which implies `tokio`). Requests run as tasks on the node's
    /// runtime, as async handlers do (see
    /// [`max_in_flight`](Self::max_in_flight)); a blocking handler runs on
    /// the runtime's blocking threads. See [`wheel_durable::http`].
    ///
    /// [`wheel_durable::http`]: super::http
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::http::HttpConfig;
    /// let b = wheel_durable::DurableTimers::builder().http(HttpConfig::new());
    /// # drop(b);
    /// ```
    #[cfg(feature = "http")]
    pub fn http(mut self, config: super::http::HttpConfig) -> Self {
        self.http = Some(config);
        self
    }

    /// Gives plain timers (not callbacks) a flow key, found by `rule`
    /// from the timer's key and payload at each start: timers that share a
    /// key are paused and resumed together
    /// ([`DurableTimers::pause_flow`]). An answer that is not a valid flow
    /// key (empty, over 512 bytes, or with a control character) counts as
    /// none. Without a rule, plain timers have no flow key and only a
    /// pause of the whole namespace holds them. A callback's flow key is
    /// always its own ([`HttpCallback::flow_key`]).
    ///
    /// [`HttpCallback::flow_key`]: https://docs.rs/wheel-durable/latest/wheel_durable/http/struct.HttpCallback.html#method.flow_key
    ///
    /// # Examples
    ///
    /// ```
    /// // Timers keyed `tenant:...` are grouped by tenant.
    /// let b = wheel_durable::DurableTimers::builder()
    ///     .flow_key(|key, _payload| key.split_once(':').map(|(tenant, _)| tenant.to_owned()));
    /// # drop(b);
    /// ```
    pub fn flow_key<F>(mut self, rule: F) -> Self
    where
        F: Fn(&str, &[u8]) -> Option<String> + Send + Sync + 'static,
    {
        self.node.flows = crate::flow_key::FlowKeys::new(Some(Arc::new(rule)));
        self
    }

    /// Handler threads (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = wheel_durable::DurableTimers::builder().workers(16);
    /// # drop(b);
    /// ```
    pub fn workers(mut self, n: usize) -> Self {
        self.node.workers = n;
        self
    }

    /// How long a claim or a run stays this node's without news: a node
    /// that dies or stalls longer has its timers fired by another within
    /// about `lease` plus the safety poll. Running handlers renew it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::DurableTimers::builder().lease(Duration::from_secs(30));
    /// # drop(b);
    /// ```
    pub fn lease(mut self, d: Duration) -> Self {
        self.node.lease = d;
        self
    }

    /// The back-off for handlers that ask to retry.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = wheel_durable::DurableTimers::builder()
    ///     .retry(wheel_durable::RetryPolicy::new().max_attempts(3));
    /// # drop(b);
    /// ```
    pub fn retry(mut self, p: RetryPolicy) -> Self {
        self.node.retry = p;
        self
    }

    /// How far ahead of their due time timers are claimed into memory
    /// (at least the safety poll, so that a timer is held before it is
    /// due even when a notification is lost).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::DurableTimers::builder().claim_ahead(Duration::from_secs(5));
    /// # drop(b);
    /// ```
    pub fn claim_ahead(mut self, d: Duration) -> Self {
        self.node.window = d;
        self
    }

    /// The longest a node goes without looking at the store: bounds how late
    /// a lost notification can make a timer, and how soon a dead node's
    /// expired leases are taken over.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::DurableTimers::builder().poll(Duration::from_millis(200));
    /// # drop(b);
    /// ```
    pub fn poll(mut self, d: Duration) -> Self {
        self.node.poll = d;
        self
    }

    /// Claimed timers held in memory at most (at least 1): with millions
    /// overdue, the node claims more as it fires them.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = wheel_durable::DurableTimers::builder().max_claimed(50_000);
    /// # drop(b);
    /// ```
    pub fn max_claimed(mut self, n: usize) -> Self {
        self.node.max_held = n;
        self
    }

    /// The payload limit in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = wheel_durable::DurableTimers::builder().max_payload(64 * 1024);
    /// # drop(b);
    /// ```
    pub fn max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = bytes;
        self
    }

    /// The dedup window: how long a key stays remembered after its timer
    /// ended (its run finished [`Done`](crate::Outcome::Done), it was
    /// cancelled, or its dead letter was cancelled). Within the window an
    /// add-or-get of the key ([`add_at_or_get`](super::DurableTimers::add_at_or_get)
    /// and its family) adds nothing and answers
    /// [`AddOrGet::Ended`](crate::AddOrGet::Ended) with how and when it
    /// ended; after it, the key is added again. A replacing add
    /// ([`add_at`](super::DurableTimers::add_at), `add`, `add_many`) still
    /// adds (the caller asked for this timer) and forgets the memory, as
    /// [`retry_dead`](super::DurableTimers::retry_dead) does for a revived
    /// key. Off (zero) by default: nothing is remembered.
    ///
    /// A namespace setting: every node should use the same. The memory
    /// records its own expiry, set by the node whose call ended the timer
    /// (the node that ran it, or the one that cancelled it), so with
    /// different windows each key is remembered for the window of that
    /// node; a node with the window off remembers nothing but still
    /// honours the memories of the others. The time counts on the store's
    /// clock and is kept to the millisecond (rounded up). Memory stays
    /// bounded: expired memories are deleted a bounded number per store
    /// operation, with no background task.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::DurableTimers::builder().dedup_window(Duration::from_secs(600));
    /// # drop(b);
    /// ```
    pub fn dedup_window(mut self, window: Duration) -> Self {
        self.dedup = window;
        self
    }

    /// How long a store may keep failing (connection refused, timeouts,
    /// Redis loading after a restart) before a call reports
    /// [`Unavailable`](DurableError::Unavailable). Calls retry with
    /// back-off until then. Default 5 s.
    ///
    /// This bounds how long `add`, `cancel`, `reset_at`, `get` and the
    /// other calls wait for an unreachable store (a call already sent may
    /// also wait up to 5 s for its reply), and how long `shutdown` waits
    /// to hand claims back. [`stats`](super::DurableTimers::stats) never
    /// waits for it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::DurableTimers::builder().unavailable_after(Duration::from_secs(1));
    /// # drop(b);
    /// ```
    pub fn unavailable_after(mut self, d: Duration) -> Self {
        self.unavailable_after = d;
        self
    }

    /// Makes every write to the Redis store wait until `n` replicas have
    /// it, up to `timeout`; `n` = 0 (the default) waits for none.
    ///
    /// Redis replicates asynchronously: without this, a write the master
    /// acknowledged but had not yet sent to a replica is lost when that
    /// replica is promoted after the master fails. With it, each call that
    /// writes (adds, cancels, reschedules, schedule and flow changes, and
    /// the node's claims, starts, renewals and finishes) is followed on the
    /// same connection, in the same round trip, by `WAIT n timeout`, and
    /// fails with [`NotReplicated`](DurableError::NotReplicated) when fewer
    /// than `n` replicas confirmed in time: the change stands on the master
    /// but may be lost on a failover. Reads wait for nothing. The node
    /// treats the error as a failed store call and retries, so no timer is
    /// lost or run twice because of it.
    ///
    /// This narrows the loss window; it does not make Redis strongly
    /// consistent: a replica promoted that was not among the `n` that
    /// confirmed can still lack the write. Pick `n` so that the replica a
    /// failover promotes is always among them (for example, all replicas).
    /// Each write costs one round trip from the master to its replicas.
    ///
    /// # Errors
    ///
    /// [`build`](Self::build) fails with [`DurableError::Config`] when `n`
    /// is at least 1 and the store is not Redis (the embedded store has no
    /// replicas), or when `timeout` is under 1 ms (`WAIT 0` would block for
    /// good).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::{DurableError, DurableTimers};
    ///
    /// // With Redis (feature `redis`): every acknowledged add is on a replica.
    /// # #[cfg(feature = "redis")]
    /// let b = DurableTimers::builder()
    ///     .redis("redis://127.0.0.1:6379/0")
    ///     .replicas(1, Duration::from_millis(500));
    /// # #[cfg(feature = "redis")]
    /// # drop(b);
    /// // The embedded store has no replicas to wait for.
    /// let dir = tempfile::tempdir().unwrap();
    /// let e = DurableTimers::builder()
    ///     .embedded(dir.path().join("timers"))
    ///     .replicas(1, Duration::from_millis(500))
    ///     .build()
    ///     .unwrap_err();
    /// assert!(matches!(e, DurableError::Config(_)));
    /// ```
    pub fn replicas(mut self, n: u32, timeout: Duration) -> Self {
        self.replicas = (n, timeout);
        self
    }

    /// Test support: the store reads this clock (milliseconds since the
    /// epoch) instead of its own; the Redis store passes it to its scripts
    /// instead of `TIME`. Every node and client of a namespace must share
    /// it, as they share a server's clock. Only the Redis store's tests
    /// set it on a builder.
    #[cfg(all(test, feature = "redis"))]
    pub(crate) fn manual_store_clock(mut self, ms: Arc<std::sync::atomic::AtomicU64>) -> Self {
        self.clock = StoreClock::Manual(ms);
        self
    }

    /// Opens the store and, with a handler, starts firing.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for settings that cannot work (no store or
    /// two, zero workers or `max_claimed`, a zero lease, a claim window
    /// shorter than the poll, an empty namespace, `redis` without the
    /// feature, zero HTTP timeouts or a per-host limit outside 1 to 65 536, both
    /// `handler` and `handler_async`, [`replicas`](Self::replicas) without
    /// Redis or with a timeout under 1 ms); the store's errors on opening ([`Locked`],
    /// [`Corrupt`], [`Io`], [`Unavailable`]).
    ///
    /// [`Locked`]: DurableError::Locked
    /// [`Corrupt`]: DurableError::Corrupt
    /// [`Io`]: DurableError::Io
    /// [`Unavailable`]: DurableError::Unavailable
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::{DurableError, DurableTimers};
    /// let e = DurableTimers::builder().build().unwrap_err();
    /// assert!(matches!(e, DurableError::Config(_)));
    /// ```
    pub fn build(self) -> Result<DurableTimers, DurableError> {
        self.check()?;
        let store = self.open_store()?;
        store.set_dedup_window(super::dedup::window_ms(self.dedup));
        let http_counts = Arc::new(HttpCounters::default());
        let node = self.node_config(&http_counts)?;
        DurableTimers::start(store, node, self.max_payload, http_counts)
    }

    /// How the node fires, or `None` for a client that fires nothing; an
    /// HTTP node counts its attempts in `http_counts`.
    #[cfg_attr(not(feature = "http"), allow(unused_variables))]
    fn node_config(
        &self,
        http_counts: &Arc<HttpCounters>,
    ) -> Result<Option<NodeConfig>, DurableError> {
        let mut config = self.node.clone();
        config.namespace = self.namespace.as_str().into();
        #[cfg(feature = "http")]
        if let Some(http) = &self.http {
            use super::http::Others;
            let others = match (self.tasks.handler(), self.handler.clone()) {
                (Some(h), _) => Others::Async(h),
                (None, Some(h)) => Others::Blocking(h),
                (None, None) => Others::None,
            };
            let handler = super::http::handler(
                http,
                &config.namespace,
                others,
                &config.retry,
                http_counts.clone(),
            )?;
            config.tasks = Some(self.tasks.config_with(handler));
            return Ok(Some(config));
        }
        #[cfg(feature = "tokio")]
        if let Some(tasks) = self.tasks.config() {
            config.tasks = Some(tasks);
            return Ok(Some(config));
        }
        let Some(handler) = self.handler.clone() else {
            return Ok(None);
        };
        config.handler = handler;
        Ok(Some(config))
    }

    /// Whether this node sends callback timers by HTTP.
    #[cfg(feature = "tokio")]
    fn has_http(&self) -> bool {
        #[cfg(feature = "http")]
        return self.http.is_some();
        #[cfg(not(feature = "http"))]
        false
    }

    fn check(&self) -> Result<(), DurableError> {
        let bad = |why: &str| Err(DurableError::Config(why.into()));
        match &self.choice {
            Err(why) => return bad(why),
            Ok(None) => return bad("choose a store: embedded(path) or redis(url)"),
            Ok(Some(_)) => {}
        }
        if self.namespace.is_empty() || self.namespace.contains(['{', '}']) {
            return bad("the namespace must be non-empty, without braces");
        }
        #[cfg(feature = "tokio")]
        if let Err(why) = self.tasks.check(self.handler.is_some(), self.has_http()) {
            return bad(why);
        }
        if self.node.workers == 0 || self.node.max_held == 0 {
            return bad("workers and max_claimed must be at least 1");
        }
        if self.node.lease < Duration::from_millis(10) {
            return bad("the lease must be at least 10 ms");
        }
        if self.node.window < self.node.poll || self.node.poll.is_zero() {
            return bad("the poll must be non-zero and no longer than claim_ahead");
        }
        #[cfg(feature = "http")]
        if let Some(Err(why)) = self.http.as_ref().map(super::http::HttpConfig::check) {
            return bad(why);
        }
        self.check_replicas()?;
        self.check_partitions()
    }

    /// Whether the store chosen is Redis.
    fn on_redis(&self) -> bool {
        #[cfg(feature = "redis")]
        return matches!(self.choice, Ok(Some(Choice::Redis(_))));
        #[cfg(not(feature = "redis"))]
        false
    }

    /// A partitioned namespace needs Redis, and a count it can place.
    fn check_partitions(&self) -> Result<(), DurableError> {
        let n = self.partitions;
        if n == 1 {
            return Ok(());
        }
        if !self.on_redis() {
            return Err(DurableError::Config(
                "partitions need the Redis store: the embedded store is one file".into(),
            ));
        }
        #[cfg(feature = "redis")]
        {
            let max = super::store::partitioned::MAX_PARTITIONS;
            if n == 0 || n > max {
                return Err(DurableError::Config(format!(
                    "partitions must be from 1 to {max}, not {n}"
                )));
            }
        }
        Ok(())
    }

    /// The replicas asked for need Redis and a timeout `WAIT` can keep.
    fn check_replicas(&self) -> Result<(), DurableError> {
        let bad = |why: &str| Err(DurableError::Config(why.into()));
        let (n, timeout) = self.replicas;
        if n == 0 {
            return Ok(());
        }
        if !self.on_redis() {
            return bad("replicas need the Redis store: the embedded store has none");
        }
        if timeout < Duration::from_millis(1) {
            return bad("the replica timeout must be at least 1 ms");
        }
        Ok(())
    }

    /// How close to now a timer made pending is announced to the nodes
    /// (see [`notify_window`]).
    fn window_ms(&self) -> u64 {
        u64::try_from(notify_window(&self.node).as_millis()).unwrap_or(u64::MAX)
    }

    fn open_store(&self) -> Result<Arc<dyn Store>, DurableError> {
        match self.choice.clone() {
            #[cfg(feature = "embedded")]
            Ok(Some(Choice::Embedded(path))) => {
                Ok(Arc::new(super::store::embedded::Embedded::open(
                    &path,
                    self.clock.clone(),
                    self.window_ms(),
                )?))
            }
            #[cfg(feature = "redis")]
            Ok(Some(Choice::Redis(servers))) => self.open_redis(servers),
            _ => Err(DurableError::Config("no store".into())),
        }
    }
}
