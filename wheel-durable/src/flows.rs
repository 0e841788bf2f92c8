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

use super::flow_key::check_flow_key;
use super::store::FlowsState;
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
    /// Every flow key that is paused or still has parked timers, in byte
    /// order.
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
    /// Its timers parked in the store: came due while it was paused, or
    /// not yet made pending again since it resumed.
    pub parked: u64,
}

impl From<FlowsState> for Flows {
    fn from(s: FlowsState) -> Flows {
        Flows {
            paused: s.paused,
            keys: s
                .keys
                .into_iter()
                .map(|k| FlowStatus {
                    key: k.key,
                    paused: k.paused,
                    parked: k.parked,
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
        Ok(self.store.flows()?.into())
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
