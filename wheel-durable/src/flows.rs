//! Pausing and resuming: the whole namespace, or one flow key
//! ([`flow_key`](crate::flow_key) says how a timer gets one).
//!
//! A pause is kept in the store, so it holds on every node that shares
//! the namespace and across restarts. While the namespace is paused no
//! node claims its timers; a timer of a paused flow key that comes due is
//! parked ([`TimerState::Parked`](crate::TimerState::Parked)) without
//! spending an attempt. On resume, they become pending again and fire in
//! due order; runs started before the pause finish as usual. The store's
//! rules are in `store/flow_state.rs`.
//!
//! Node state: none: every call goes to the store.

use std::time::{Duration, SystemTime};

use super::flow_key::check_flow_key;
use super::flow_limits::FlowLimits;
use super::store::FlowsState;
use super::store::flow_state::Phase;
use super::time::system_time_of;
use super::{DurableError, DurableTimers};

/// The paused state of a namespace and its flow keys, from
/// [`DurableTimers::flows`].
///
/// # Examples
///
/// ```
/// use wheel_durable::DurableTimers;
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
/// timers.pause_flow("https://shop.example")?;
/// let flows = timers.flows()?;
/// assert!(!flows.paused);
/// assert_eq!(flows.keys[0].key, "https://shop.example");
/// assert!(flows.keys[0].paused);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Flows {
    /// Whether the whole namespace is paused.
    pub paused: bool,
    /// The limits of keys without their own, if set.
    pub defaults: Option<FlowLimits>,
    /// Every flow key that is paused, has parked timers, has its own
    /// limits, has runs in flight under a parallelism, or whose breaker
    /// is open or counting failures, and every key this node holds claims
    /// of for its limits or keeps the lateness of, in byte order.
    pub keys: Vec<FlowStatus>,
}

/// One flow key in [`Flows`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_durable::DurableTimers;
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
/// timers.pause_flow("reports")?;
/// let status = &timers.flows()?.keys[0];
/// assert_eq!((status.key.as_str(), status.paused, status.parked), ("reports", true, 0));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlowStatus {
    /// The flow key.
    pub key: String,
    /// Whether it is paused.
    pub paused: bool,
    /// Its timers parked in the store: came due while it was paused or
    /// its breaker open, and not made pending again yet.
    pub parked: u64,
    /// Its own limits, if set (else the defaults apply).
    pub limits: Option<FlowLimits>,
    /// Its runs in flight that hold a permit of its parallelism, on all
    /// nodes.
    pub in_flight: u32,
    /// Its timers this node has claimed and holds back for its rate or
    /// parallelism (they wait in the node, still claimed; `parked` ones
    /// wait in the store).
    pub waiting: u64,
    /// The median lateness (start minus due) of its runs on this node, if
    /// it ran any here: what its limits cost. A node keeps this for the
    /// first 64 flow keys it runs.
    pub lateness_p50: Option<Duration>,
    /// The 99th percentile of the same.
    pub lateness_p99: Option<Duration>,
    /// Its circuit breaker.
    pub breaker: BreakerStatus,
}

/// Where a flow key's circuit breaker is, in [`FlowStatus`].
///
/// # Examples
///
/// ```
/// use wheel_durable::{BreakerState, DurableTimers, FlowLimits};
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
/// timers.set_flow_limits("reports", &FlowLimits::new().parallelism(1))?;
/// let status = &timers.flows()?.keys[0];
/// assert_eq!(status.breaker.state, BreakerState::Closed);
/// assert_eq!(status.breaker.next_probe, None);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BreakerStatus {
    /// Closed, open or half-open.
    pub state: BreakerState,
    /// Consecutive failures counted while closed.
    pub failures: u32,
    /// Open: when it lets a probe through; half-open: when another probe
    /// candidate is let through if the probe has not answered.
    pub next_probe: Option<SystemTime>,
}

/// The state of a circuit breaker.
///
/// # Examples
///
/// ```
/// assert_eq!(wheel_durable::BreakerState::Open.as_str(), "open");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BreakerState {
    /// Runs start as the other limits allow.
    Closed,
    /// Nothing starts until the cool-down ends; timers coming due are
    /// parked.
    Open,
    /// One probe run is let through; the rest wait for its outcome.
    HalfOpen,
}

impl BreakerState {
    /// `closed`, `open` or `half-open`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_durable::BreakerState::HalfOpen.as_str(), "half-open");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half-open",
        }
    }
}

impl FlowStatus {
    /// A key the store keeps nothing of.
    fn unlisted(key: String) -> FlowStatus {
        FlowStatus {
            key,
            paused: false,
            parked: 0,
            limits: None,
            in_flight: 0,
            waiting: 0,
            lateness_p50: None,
            lateness_p99: None,
            breaker: BreakerStatus {
                state: BreakerState::Closed,
                failures: 0,
                next_probe: None,
            },
        }
    }
}

impl From<FlowsState> for Flows {
    fn from(s: FlowsState) -> Flows {
        Flows {
            paused: s.paused,
            defaults: s.defaults.as_ref().map(FlowLimits::of),
            keys: s
                .keys
                .into_iter()
                .map(|k| FlowStatus {
                    key: k.key,
                    paused: k.paused,
                    parked: k.parked,
                    limits: k.limits.as_ref().map(FlowLimits::of),
                    in_flight: k.in_flight,
                    waiting: 0,
                    lateness_p50: None,
                    lateness_p99: None,
                    breaker: BreakerStatus {
                        state: match k.breaker.phase {
                            Phase::Closed => BreakerState::Closed,
                            Phase::Open => BreakerState::Open,
                            Phase::HalfOpen => BreakerState::HalfOpen,
                        },
                        failures: k.breaker.failures,
                        next_probe: k.breaker.until.map(system_time_of),
                    },
                })
                .collect(),
        }
    }
}

impl DurableTimers {
    /// Pauses one flow key on every node of the namespace: its timers
    /// that come due are parked in the store, without spending an
    /// attempt, until [`resume_flow`](Self::resume_flow). Runs already
    /// started finish. True if it was not paused.
    ///
    /// # Errors
    ///
    /// [`DurableError::InvalidFlow`] for a key that is empty, over 512
    /// bytes or holds a control character; the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::DurableTimers;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// assert!(timers.pause_flow("https://api.example.com")?);
    /// assert!(!timers.pause_flow("https://api.example.com")?, "already paused");
    /// # Ok(()) }
    /// ```
    pub fn pause_flow(&self, key: &str) -> Result<bool, DurableError> {
        check_flow_key(key)?;
        self.store.set_paused(Some(key), true)
    }

    /// Resumes a paused flow key: its parked timers become pending again
    /// and fire in due order. True if it was paused.
    ///
    /// # Errors
    ///
    /// As for [`pause_flow`](Self::pause_flow).
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::DurableTimers;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// timers.pause_flow("reports")?;
    /// assert!(timers.resume_flow("reports")?);
    /// assert!(timers.flows()?.keys.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn resume_flow(&self, key: &str) -> Result<bool, DurableError> {
        check_flow_key(key)?;
        self.store.set_paused(Some(key), false)
    }

    /// Pauses the whole namespace on every node: no timer of it is
    /// claimed until [`resume_all`](Self::resume_all); runs already
    /// started finish, claims not started go back to the store. True if it
    /// was not paused.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::DurableTimers;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// assert!(timers.pause_all()?);
    /// assert!(timers.flows()?.paused);
    /// # Ok(()) }
    /// ```
    pub fn pause_all(&self) -> Result<bool, DurableError> {
        self.store.set_paused(None, true)
    }

    /// Resumes the namespace: its due timers are claimed again, earliest
    /// first. True if it was paused.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::DurableTimers;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// timers.pause_all()?;
    /// assert!(timers.resume_all()?);
    /// assert!(!timers.flows()?.paused);
    /// # Ok(()) }
    /// ```
    pub fn resume_all(&self) -> Result<bool, DurableError> {
        self.store.set_paused(None, false)
    }

    /// Whether the namespace is paused, and each flow key that is paused
    /// or still has parked timers.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::DurableTimers;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let flows = timers.flows()?;
    /// assert!(!flows.paused && flows.keys.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn flows(&self) -> Result<Flows, DurableError> {
        let mut flows: Flows = self.store.flows()?.into();
        let mut waiting = self.waiting_by_flow();
        let lateness = self.flow_lateness();
        // Keys the store does not list (limited by the defaults only, with
        // nothing in flight) that this node holds claims of or ran.
        let known: std::collections::HashSet<String> =
            flows.keys.iter().map(|k| k.key.clone()).collect();
        let extra: std::collections::BTreeSet<String> = waiting
            .keys()
            .chain(lateness.iter().map(|(k, _, _)| k))
            .filter(|k| !known.contains(*k))
            .cloned()
            .collect();
        flows
            .keys
            .extend(extra.into_iter().map(FlowStatus::unlisted));
        flows.keys.sort_by(|a, b| a.key.cmp(&b.key));
        for k in &mut flows.keys {
            k.waiting = waiting.remove(&k.key).map_or(0, |n| n as u64);
        }
        for (key, p50, p99) in lateness {
            if let Ok(i) = flows.keys.binary_search_by(|k| k.key.as_str().cmp(&key)) {
                flows.keys[i].lateness_p50 = Some(p50);
                flows.keys[i].lateness_p99 = Some(p99);
            }
        }
        Ok(flows)
    }
}

#[cfg(feature = "tokio")]
impl crate::AsyncTimers {
    /// [`DurableTimers::pause_flow`], awaited (feature `tokio`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::pause_flow`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use wheel_durable::{AsyncTimers, DurableTimers};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = AsyncTimers::new(Arc::new(
    ///     DurableTimers::builder().embedded(dir.path().join("timers")).build()?,
    /// ));
    /// assert!(timers.pause_flow("reports").await?);
    /// assert!(timers.resume_flow("reports").await?);
    /// # Ok(()) }
    /// ```
    pub async fn pause_flow(&self, key: &str) -> Result<bool, DurableError> {
        let key = key.to_owned();
        self.call(move |t| t.pause_flow(&key)).await
    }

    /// [`DurableTimers::resume_flow`], awaited (feature `tokio`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::resume_flow`].
    ///
    /// # Examples
    ///
    /// See [`pause_flow`](Self::pause_flow).
    pub async fn resume_flow(&self, key: &str) -> Result<bool, DurableError> {
        let key = key.to_owned();
        self.call(move |t| t.resume_flow(&key)).await
    }

    /// [`DurableTimers::pause_all`], awaited (feature `tokio`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::pause_all`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use wheel_durable::{AsyncTimers, DurableTimers};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = AsyncTimers::new(Arc::new(
    ///     DurableTimers::builder().embedded(dir.path().join("timers")).build()?,
    /// ));
    /// timers.pause_all().await?;
    /// assert!(timers.flows().await?.paused);
    /// timers.resume_all().await?;
    /// # Ok(()) }
    /// ```
    pub async fn pause_all(&self) -> Result<bool, DurableError> {
        self.call(DurableTimers::pause_all).await
    }

    /// [`DurableTimers::resume_all`], awaited (feature `tokio`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::resume_all`].
    ///
    /// # Examples
    ///
    /// See [`pause_all`](Self::pause_all).
    pub async fn resume_all(&self) -> Result<bool, DurableError> {
        self.call(DurableTimers::resume_all).await
    }

    /// [`DurableTimers::flows`], awaited (feature `tokio`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::flows`].
    ///
    /// # Examples
    ///
    /// See [`pause_all`](Self::pause_all).
    pub async fn flows(&self) -> Result<Flows, DurableError> {
        self.call(DurableTimers::flows).await
    }
}
