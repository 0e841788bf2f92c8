//! The limits a flow key can carry: a rate, a parallelism, a circuit
//! breaker ([`FlowLimits`], [`CircuitBreaker`]), and the calls that set
//! them. They are kept in the store, so every node of the namespace
//! enforces the same ones together; `store/flow_state.rs` states the
//! rules the stores follow.
//!
//! Node state: none: every call goes to the store.

use std::time::Duration;

use super::flow_key::check_flow_key;
use super::store::flow_state::{BreakerLimits, Rate};
use super::store::{Limits, Millis};
use super::time::millis_ceil;
use super::{DurableError, DurableTimers};

/// Starts per period at most in a rate.
pub const MAX_FLOW_RATE: u32 = 1_000_000;

/// Runs in flight at most in a parallelism.
pub const MAX_FLOW_PARALLELISM: u32 = 1_000_000;

/// The longest period, cool-down or pause delay a limit may name.
pub const MAX_FLOW_PERIOD: Duration = Duration::from_secs(7 * 24 * 3600);

/// A flow key's limits: how many of its timers may start per period, how
/// many may run at once, and when to stop sending to it for a while. A
/// limit left unset does not apply; [`FlowLimits::new`] sets none.
///
/// Timers over a limit wait (their attempts are not spent) and start in
/// due order once it allows; their lateness is what the limit costs. See
/// [`DurableTimers::set_flow_limits`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_durable::{CircuitBreaker, FlowLimits};
///
/// let limits = FlowLimits::new()
///     .rate(500, Duration::from_secs(1))
///     .parallelism(20)
///     .breaker(CircuitBreaker::new());
/// assert_eq!(limits.rate_limit(), Some((500, Duration::from_secs(1))));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowLimits {
    rate: Option<(u32, Duration)>,
    burst: u32,
    parallelism: Option<u32>,
    breaker: Option<CircuitBreaker>,
}

/// A circuit breaker: after `failures` consecutive failed runs
/// (connection errors, timeouts, 5xx and 429 answers for a callback; a
/// handler's `Retry`), nothing of the key starts for a cool-down, which
/// doubles at each failed probe up to `max_cooldown`, or lasts the
/// target's `Retry-After` if that is longer (up to an hour). Then one
/// timer starts as a probe: its success closes the breaker and the
/// waiting timers start in due order; its failure opens it again. While
/// open, timers are parked in the store without spending attempts.
/// Optionally, a key that keeps failing for `pause_after` is paused.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_durable::CircuitBreaker;
///
/// let b = CircuitBreaker::new().failures(3).cooldown(Duration::from_secs(10));
/// assert_eq!(b.failures_to_open(), 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CircuitBreaker {
    failures: u32,
    cooldown: Duration,
    max_cooldown: Duration,
    pause_after: Option<Duration>,
}

impl Default for CircuitBreaker {
    fn default() -> Self {
        CircuitBreaker::new()
    }
}

impl CircuitBreaker {
    /// Opens after 5 consecutive failures, for 5 s at first, doubling up
    /// to 5 minutes; never pauses the key.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = wheel_durable::CircuitBreaker::new();
    /// assert_eq!(b.failures_to_open(), 5);
    /// ```
    pub fn new() -> CircuitBreaker {
        CircuitBreaker {
            failures: 5,
            cooldown: Duration::from_secs(5),
            max_cooldown: Duration::from_secs(300),
            pause_after: None,
        }
    }

    /// Consecutive failures that open the breaker (1 to 1 000).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = wheel_durable::CircuitBreaker::new().failures(2);
    /// assert_eq!(b.failures_to_open(), 2);
    /// ```
    #[must_use]
    pub fn failures(mut self, n: u32) -> CircuitBreaker {
        self.failures = n;
        self
    }

    /// The first cool-down (at least 1 ms, at most a week).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::CircuitBreaker::new().cooldown(Duration::from_secs(1));
    /// # drop(b);
    /// ```
    #[must_use]
    pub fn cooldown(mut self, d: Duration) -> CircuitBreaker {
        self.cooldown = d;
        self
    }

    /// The longest cool-down (at least the first, at most a week).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::CircuitBreaker::new().max_cooldown(Duration::from_secs(3600));
    /// # drop(b);
    /// ```
    #[must_use]
    pub fn max_cooldown(mut self, d: Duration) -> CircuitBreaker {
        self.max_cooldown = d;
        self
    }

    /// Pauses the key once its breaker has been open this long without a
    /// successful probe ([`DurableTimers::resume_flow`] resumes it, and
    /// closes the breaker).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::CircuitBreaker::new().pause_after(Duration::from_secs(24 * 3600));
    /// # drop(b);
    /// ```
    #[must_use]
    pub fn pause_after(mut self, d: Duration) -> CircuitBreaker {
        self.pause_after = Some(d);
        self
    }

    /// How many consecutive failures open it.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_durable::CircuitBreaker::new().failures_to_open(), 5);
    /// ```
    pub fn failures_to_open(&self) -> u32 {
        self.failures
    }

    /// The first cool-down.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::CircuitBreaker::new();
    /// assert_eq!(b.first_cooldown(), Duration::from_secs(5));
    /// ```
    pub fn first_cooldown(&self) -> Duration {
        self.cooldown
    }

    /// The longest cool-down.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::CircuitBreaker::new();
    /// assert_eq!(b.longest_cooldown(), Duration::from_secs(300));
    /// ```
    pub fn longest_cooldown(&self) -> Duration {
        self.max_cooldown
    }

    /// How long it stays open before the key is paused, if it ever is.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_durable::CircuitBreaker::new().pause_delay(), None);
    /// ```
    pub fn pause_delay(&self) -> Option<Duration> {
        self.pause_after
    }

    fn check(&self) -> Result<BreakerLimits, DurableError> {
        if !(1..=1000).contains(&self.failures) {
            return Err(bad("a breaker's failures must be 1 to 1000"));
        }
        let cooldown = period(self.cooldown, "a breaker's cool-down")?;
        let max_cooldown = period(self.max_cooldown, "a breaker's longest cool-down")?;
        if max_cooldown < cooldown {
            return Err(bad(
                "a breaker's longest cool-down is shorter than its first",
            ));
        }
        let pause_after = match self.pause_after {
            Some(d) => Some(period(d, "a breaker's pause delay")?),
            None => None,
        };
        Ok(BreakerLimits {
            failures: self.failures,
            cooldown,
            max_cooldown,
            pause_after,
        })
    }

    fn of(b: &BreakerLimits) -> CircuitBreaker {
        CircuitBreaker {
            failures: b.failures,
            cooldown: Duration::from_millis(b.cooldown),
            max_cooldown: Duration::from_millis(b.max_cooldown),
            pause_after: b.pause_after.map(Duration::from_millis),
        }
    }
}

fn bad(why: &str) -> DurableError {
    DurableError::InvalidFlow(why.into())
}

/// A duration of 1 ms to [`MAX_FLOW_PERIOD`], in whole ms (rounded up).
fn period(d: Duration, what: &str) -> Result<Millis, DurableError> {
    if d.is_zero() || d > MAX_FLOW_PERIOD {
        return Err(DurableError::InvalidFlow(format!(
            "{what} must be 1 ms to 7 days"
        )));
    }
    millis_ceil(d).ok_or_else(|| bad("a period too long"))
}

impl Default for FlowLimits {
    fn default() -> Self {
        FlowLimits {
            rate: None,
            burst: 1,
            parallelism: None,
            breaker: None,
        }
    }
}

impl FlowLimits {
    /// No limit at all.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_durable::FlowLimits::new().parallelism_limit(), None);
    /// ```
    pub fn new() -> FlowLimits {
        FlowLimits::default()
    }

    /// At most `count` starts per `period` (1 to 1 000 000 per 1 ms to 7
    /// days), spread evenly: one every `period / count`, across all
    /// nodes. A callback is sent at its slot, never before.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = wheel_durable::FlowLimits::new().rate(500, Duration::from_secs(1));
    /// assert_eq!(l.rate_limit(), Some((500, Duration::from_secs(1))));
    /// ```
    #[must_use]
    pub fn rate(mut self, count: u32, period: Duration) -> FlowLimits {
        self.rate = Some((count, period));
        self
    }

    /// Lets up to `n` starts of the rate go at once after a quiet time
    /// (1 to the rate's count; 1, none at once beyond the rate, unless
    /// set).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = wheel_durable::FlowLimits::new().rate(100, Duration::from_secs(1)).burst(10);
    /// # drop(l);
    /// ```
    #[must_use]
    pub fn burst(mut self, n: u32) -> FlowLimits {
        self.burst = n;
        self
    }

    /// At most `n` runs in flight at once (1 to 1 000 000), across all
    /// nodes. A node that dies holding some gives them back when its
    /// runs' leases end.
    ///
    /// # Examples
    ///
    /// ```
    /// let l = wheel_durable::FlowLimits::new().parallelism(20);
    /// assert_eq!(l.parallelism_limit(), Some(20));
    /// ```
    #[must_use]
    pub fn parallelism(mut self, n: u32) -> FlowLimits {
        self.parallelism = Some(n);
        self
    }

    /// A circuit breaker.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::{CircuitBreaker, FlowLimits};
    /// let l = FlowLimits::new().breaker(CircuitBreaker::new());
    /// assert!(l.breaker_settings().is_some());
    /// ```
    #[must_use]
    pub fn breaker(mut self, b: CircuitBreaker) -> FlowLimits {
        self.breaker = Some(b);
        self
    }

    /// The rate: starts per period.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_durable::FlowLimits::new().rate_limit(), None);
    /// ```
    pub fn rate_limit(&self) -> Option<(u32, Duration)> {
        self.rate
    }

    /// The burst of the rate (1 unless set).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_durable::FlowLimits::new().burst_limit(), 1);
    /// ```
    pub fn burst_limit(&self) -> u32 {
        self.burst
    }

    /// The parallelism.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_durable::FlowLimits::new().parallelism(3).parallelism_limit(), Some(3));
    /// ```
    pub fn parallelism_limit(&self) -> Option<u32> {
        self.parallelism
    }

    /// The circuit breaker.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(wheel_durable::FlowLimits::new().breaker_settings().is_none());
    /// ```
    pub fn breaker_settings(&self) -> Option<CircuitBreaker> {
        self.breaker
    }

    /// The limits as a store keeps them, checked.
    pub(crate) fn check(&self) -> Result<Limits, DurableError> {
        let rate = match self.rate {
            None if self.burst != 1 => return Err(bad("a burst needs a rate")),
            None => None,
            Some((count, per)) => {
                if !(1..=MAX_FLOW_RATE).contains(&count) {
                    return Err(bad("a rate's count must be 1 to 1000000"));
                }
                let burst = self.burst;
                if burst == 0 || burst > count {
                    return Err(bad("a burst must be 1 to the rate's count"));
                }
                Some(Rate {
                    count,
                    period: period(per, "a rate's period")?,
                    burst,
                })
            }
        };
        if let Some(p) = self.parallelism
            && !(1..=MAX_FLOW_PARALLELISM).contains(&p)
        {
            return Err(bad("a parallelism must be 1 to 1000000"));
        }
        let breaker = match &self.breaker {
            Some(b) => Some(b.check()?),
            None => None,
        };
        Ok(Limits {
            rate,
            parallelism: self.parallelism,
            breaker,
        })
    }

    /// The limits a store keeps, as the user set them (periods in whole
    /// ms).
    pub(crate) fn of(l: &Limits) -> FlowLimits {
        FlowLimits {
            rate: l.rate.map(|r| (r.count, Duration::from_millis(r.period))),
            burst: l.rate.map_or(1, |r| r.burst),
            parallelism: l.parallelism,
            breaker: l.breaker.as_ref().map(CircuitBreaker::of),
        }
    }
}

impl DurableTimers {
    /// Sets a flow key's limits, for every node of the namespace from
    /// their next start on ([`FlowLimits::new`] sets none: the key then
    /// has no limits, not even the defaults).
    ///
    /// # Errors
    ///
    /// [`DurableError::InvalidFlow`] for an invalid key or a limit out of
    /// range; the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::{DurableTimers, FlowLimits};
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let limits = FlowLimits::new().rate(500, Duration::from_secs(1)).parallelism(20);
    /// timers.set_flow_limits("https://api.example.com", &limits)?;
    /// assert_eq!(timers.flows()?.keys[0].limits, Some(limits));
    /// # Ok(()) }
    /// ```
    pub fn set_flow_limits(&self, key: &str, limits: &FlowLimits) -> Result<(), DurableError> {
        check_flow_key(key)?;
        let limits = limits.check()?;
        self.store.set_limits(Some(key), Some(&limits))
    }

    /// Removes a flow key's own limits: the defaults apply to it again.
    ///
    /// # Errors
    ///
    /// [`DurableError::InvalidFlow`] for an invalid key; the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::{DurableTimers, FlowLimits};
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// timers.set_flow_limits("reports", &FlowLimits::new().parallelism(2))?;
    /// timers.remove_flow_limits("reports")?;
    /// assert!(timers.flows()?.keys.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn remove_flow_limits(&self, key: &str) -> Result<(), DurableError> {
        check_flow_key(key)?;
        self.store.set_limits(Some(key), None)
    }

    /// Sets the limits of every flow key without its own
    /// ([`FlowLimits::new`]: none). Each key counts on its own: a
    /// parallelism of 20 is 20 per key.
    ///
    /// # Errors
    ///
    /// [`DurableError::InvalidFlow`] for a limit out of range; the store's
    /// error.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::{CircuitBreaker, DurableTimers, FlowLimits};
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let limits = FlowLimits::new().parallelism(50).breaker(CircuitBreaker::new());
    /// timers.set_default_flow_limits(&limits)?;
    /// assert_eq!(timers.flows()?.defaults, Some(limits));
    /// # Ok(()) }
    /// ```
    pub fn set_default_flow_limits(&self, limits: &FlowLimits) -> Result<(), DurableError> {
        let limits = limits.check()?;
        let limits = (!limits.is_none()).then_some(limits);
        self.store.set_limits(None, limits.as_ref())
    }
}

#[cfg(feature = "tokio")]
impl crate::AsyncTimers {
    /// [`DurableTimers::set_flow_limits`], awaited (feature `tokio`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::set_flow_limits`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use wheel_durable::{AsyncTimers, DurableTimers, FlowLimits};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = AsyncTimers::new(Arc::new(
    ///     DurableTimers::builder().embedded(dir.path().join("timers")).build()?,
    /// ));
    /// timers.set_flow_limits("reports", &FlowLimits::new().parallelism(2)).await?;
    /// timers.set_default_flow_limits(&FlowLimits::new().parallelism(8)).await?;
    /// timers.remove_flow_limits("reports").await?;
    /// assert_eq!(timers.flows().await?.defaults, Some(FlowLimits::new().parallelism(8)));
    /// # Ok(()) }
    /// ```
    pub async fn set_flow_limits(
        &self,
        key: &str,
        limits: &FlowLimits,
    ) -> Result<(), DurableError> {
        let (key, limits) = (key.to_owned(), *limits);
        self.call(move |t| t.set_flow_limits(&key, &limits)).await
    }

    /// [`DurableTimers::remove_flow_limits`], awaited (feature `tokio`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::remove_flow_limits`].
    ///
    /// # Examples
    ///
    /// See [`set_flow_limits`](Self::set_flow_limits).
    pub async fn remove_flow_limits(&self, key: &str) -> Result<(), DurableError> {
        let key = key.to_owned();
        self.call(move |t| t.remove_flow_limits(&key)).await
    }

    /// [`DurableTimers::set_default_flow_limits`], awaited (feature
    /// `tokio`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::set_default_flow_limits`].
    ///
    /// # Examples
    ///
    /// See [`set_flow_limits`](Self::set_flow_limits).
    pub async fn set_default_flow_limits(&self, limits: &FlowLimits) -> Result<(), DurableError> {
        let limits = *limits;
        self.call(move |t| t.set_default_flow_limits(&limits)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_out_of_range_are_refused_with_the_reason() {
        let s = Duration::from_secs(1);
        let bad = [
            FlowLimits::new().rate(0, s),
            FlowLimits::new().rate(MAX_FLOW_RATE + 1, s),
            FlowLimits::new().rate(1, Duration::ZERO),
            FlowLimits::new().rate(1, MAX_FLOW_PERIOD + s),
            FlowLimits::new().rate(5, s).burst(6),
            FlowLimits::new().burst(2),
            FlowLimits::new().parallelism(0),
            FlowLimits::new().breaker(CircuitBreaker::new().failures(0)),
            FlowLimits::new().breaker(CircuitBreaker::new().cooldown(Duration::ZERO)),
            FlowLimits::new().breaker(CircuitBreaker::new().max_cooldown(Duration::from_secs(1))),
        ];
        for l in bad {
            let e = l.check().unwrap_err();
            assert!(matches!(e, DurableError::InvalidFlow(_)), "{l:?}: {e}");
        }
    }

    #[test]
    fn limits_come_back_as_set() {
        let l = FlowLimits::new()
            .rate(7, Duration::from_millis(1500))
            .burst(3)
            .parallelism(9)
            .breaker(CircuitBreaker::new().pause_after(Duration::from_secs(60)));
        assert_eq!(FlowLimits::of(&l.check().unwrap()), l);
        assert_eq!(
            FlowLimits::of(&FlowLimits::new().check().unwrap()),
            FlowLimits::new()
        );
    }
}
