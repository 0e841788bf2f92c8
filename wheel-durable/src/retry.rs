//! The back-off between runs of a timer whose handler asked to retry, and
//! the one back-off curve ([`backoff`]) that it and the store calls' retries
//! ([`Backoff`](crate::time::Backoff)) both wait by.
//!
//! Node state: none (a policy is read-only; the jitter's generator is per
//! thread).

use std::time::Duration;

/// Exponential back-off with jitter, and a limit on attempts.
///
/// The n-th retry (n = 1 after the first failed run) waits
/// `min(initial * multiplier^(n-1), max_delay)`, then jitter takes away up
/// to `jitter` of it at random, so that many timers failing together do not
/// come back together. After `max_attempts` runs the timer becomes a dead
/// letter instead.
///
/// Defaults: 1 s initial, doubling, at most 1 h, 20 % jitter, 10 attempts.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_durable::RetryPolicy;
///
/// let p = RetryPolicy::new()
///     .initial(Duration::from_millis(100))
///     .max_delay(Duration::from_secs(5))
///     .jitter(0.0)
///     .max_attempts(4);
/// assert_eq!(p.delay(1), Some(Duration::from_millis(100)));
/// assert_eq!(p.delay(3), Some(Duration::from_millis(400)));
/// assert_eq!(p.delay(4), None); // the fourth run was the last
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    initial: Duration,
    multiplier: f64,
    max_delay: Duration,
    jitter: f64,
    max_attempts: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial: Duration::from_secs(1),
            multiplier: 2.0,
            max_delay: Duration::from_secs(3600),
            jitter: 0.2,
            max_attempts: 10,
        }
    }
}

impl RetryPolicy {
    /// The default policy (see the type's docs).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_durable::RetryPolicy::new().attempts(), 10);
    /// ```
    pub fn new() -> RetryPolicy {
        RetryPolicy::default()
    }

    /// The wait before the first retry.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = wheel_durable::RetryPolicy::new().initial(Duration::from_secs(2)).jitter(0.0);
    /// assert_eq!(p.delay(1), Some(Duration::from_secs(2)));
    /// ```
    pub fn initial(mut self, d: Duration) -> Self {
        self.initial = d;
        self
    }

    /// The factor between one wait and the next (at least 1; values below
    /// 1, or not a number, count as 1).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = wheel_durable::RetryPolicy::new().multiplier(3.0).jitter(0.0);
    /// assert_eq!(p.delay(3), Some(Duration::from_secs(9)));
    /// ```
    pub fn multiplier(mut self, m: f64) -> Self {
        self.multiplier = if m >= 1.0 { m } else { 1.0 };
        self
    }

    /// The longest wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = wheel_durable::RetryPolicy::new().max_delay(Duration::from_secs(3)).jitter(0.0);
    /// assert_eq!(p.delay(9), Some(Duration::from_secs(3)));
    /// ```
    pub fn max_delay(mut self, d: Duration) -> Self {
        self.max_delay = d;
        self
    }

    /// The share of each wait that jitter may take away, from 0 (none) to
    /// 1 (anything from zero to the full wait); clamped to that range.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = wheel_durable::RetryPolicy::new().jitter(0.5);
    /// let d = p.delay(1).unwrap();
    /// assert!(d >= Duration::from_millis(500) && d <= Duration::from_secs(1));
    /// ```
    pub fn jitter(mut self, share: f64) -> Self {
        self.jitter = if share.is_nan() {
            0.0
        } else {
            share.clamp(0.0, 1.0)
        };
        self
    }

    /// How many runs a timer gets in all (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// let p = wheel_durable::RetryPolicy::new().max_attempts(1);
    /// assert_eq!(p.delay(1), None); // no retry at all
    /// ```
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// How many runs a timer gets in all.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_durable::RetryPolicy::new().max_attempts(3).attempts(), 3);
    /// ```
    pub fn attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The wait after run number `attempt` failed, or `None` when that run
    /// was the last one allowed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = wheel_durable::RetryPolicy::new().jitter(0.0);
    /// assert_eq!(p.delay(2), Some(Duration::from_secs(2)));
    /// ```
    pub fn delay(&self, attempt: u32) -> Option<Duration> {
        if self.is_last(attempt) {
            return None;
        }
        Some(backoff(
            self.initial,
            self.multiplier,
            self.max_delay,
            self.jitter,
            attempt,
        ))
    }
}

/// The wait before try number `n` after the first (1 for the first
/// retry): `min(first * factor^(n-1), max)`, less up to `jitter` (a share
/// from 0 to 1) of it at random, so that callers failing together do not
/// come back together. Never more than `max`; never a panic, whatever the
/// settings (a `NaN` product counts as `max`).
pub(crate) fn backoff(
    first: Duration,
    factor: f64,
    max: Duration,
    jitter: f64,
    n: u32,
) -> Duration {
    let exp = i32::try_from(n.saturating_sub(1)).unwrap_or(i32::MAX);
    let full = first.as_secs_f64() * factor.powi(exp);
    let capped = full.min(max.as_secs_f64());
    let cut = capped * jitter * unit_random();
    // A wait too long for a `Duration` (a `max` near `Duration::MAX` loses
    // precision as a float) is the longest wait.
    Duration::try_from_secs_f64((capped - cut).max(0.0)).unwrap_or(max)
}

// The builder keeps both floats finite-or-clamped and never NaN (a NaN
// multiplier counts as 1, a NaN jitter as 0), so equality is an
// equivalence relation.
impl Eq for RetryPolicy {}

/// A policy's settings as plain values, in the order of the builder's
/// methods: initial, multiplier, max delay, jitter, max attempts. Stored
/// callbacks carry their policy in this form.
#[cfg(feature = "http")]
pub(crate) type PolicyParts = (Duration, f64, Duration, f64, u32);

impl RetryPolicy {
    /// Whether run number `attempt` was the last one allowed.
    pub(crate) fn is_last(&self, attempt: u32) -> bool {
        attempt >= self.max_attempts
    }

    /// The settings, for storing.
    #[cfg(feature = "http")]
    pub(crate) fn parts(&self) -> PolicyParts {
        (
            self.initial,
            self.multiplier,
            self.max_delay,
            self.jitter,
            self.max_attempts,
        )
    }

    /// A policy from stored settings, clamped as the builder clamps, so a
    /// damaged value still makes a policy that works.
    #[cfg(feature = "http")]
    pub(crate) fn from_parts(parts: PolicyParts) -> RetryPolicy {
        let (initial, multiplier, max_delay, jitter, attempts) = parts;
        RetryPolicy::new()
            .initial(initial)
            .multiplier(multiplier)
            .max_delay(max_delay)
            .jitter(jitter)
            .max_attempts(attempts)
    }
}

/// A dead letter's reason when a timer's runs are used up: how many, and
/// what went wrong last.
pub(crate) fn gave_up(attempt: u32, why: &str) -> String {
    format!("gave up after {attempt} attempts: {why}")
}

/// A number in [0, 1), from `fastrand`'s per-thread generator (jitter
/// needs spread, not cryptographic quality).
pub(crate) fn unit_random() -> f64 {
    fastrand::f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_then_cap() {
        let p = RetryPolicy::new()
            .initial(Duration::from_millis(10))
            .max_delay(Duration::from_millis(50))
            .jitter(0.0)
            .max_attempts(100);
        let waits: Vec<_> = (1..=5).map(|a| p.delay(a).unwrap().as_millis()).collect();
        assert_eq!(waits, [10, 20, 40, 50, 50]);
        assert_eq!(p.delay(1_000_000).map(|d| d.as_millis()), None);
        let p = p.max_attempts(u32::MAX);
        assert_eq!(p.delay(u32::MAX - 1).unwrap().as_millis(), 50);
    }

    #[test]
    fn jitter_stays_within_its_share_and_spreads() {
        let p = RetryPolicy::new()
            .initial(Duration::from_secs(1))
            .jitter(0.5);
        let waits: Vec<_> = (0..200).map(|_| p.delay(1).unwrap()).collect();
        assert!(
            waits
                .iter()
                .all(|d| *d >= Duration::from_millis(500) && *d <= Duration::from_secs(1))
        );
        let distinct: std::collections::HashSet<_> = waits.iter().collect();
        assert!(distinct.len() > 100, "jitter should spread the waits");
    }

    #[test]
    fn the_longest_wait_does_not_overflow() {
        let p = RetryPolicy::new()
            .max_delay(Duration::MAX)
            .jitter(0.0)
            .max_attempts(u32::MAX);
        assert_eq!(p.delay(70), Some(Duration::MAX));
        assert_eq!(p.delay(u32::MAX - 1), Some(Duration::MAX));
        let p = p.initial(Duration::MAX).jitter(1.0);
        assert!(p.delay(1).is_some());
    }

    #[test]
    fn odd_settings_are_clamped() {
        let p = RetryPolicy::new()
            .multiplier(f64::NAN)
            .jitter(f64::NAN)
            .max_attempts(0)
            .initial(Duration::from_secs(1));
        assert_eq!(p.attempts(), 1);
        let p = p.max_attempts(5);
        assert_eq!(p.delay(4), Some(Duration::from_secs(1)));
        assert_eq!(RetryPolicy::new().jitter(7.0).jitter, 1.0);
    }

    #[test]
    #[cfg(feature = "http")]
    fn parts_round_trip_and_damaged_parts_are_clamped() {
        let p = RetryPolicy::new()
            .initial(Duration::from_millis(250))
            .multiplier(1.5)
            .max_delay(Duration::from_secs(90))
            .jitter(0.1)
            .max_attempts(7);
        assert_eq!(RetryPolicy::from_parts(p.parts()), p);
        let odd = RetryPolicy::from_parts((Duration::ZERO, f64::NAN, Duration::ZERO, -3.0, 0));
        assert_eq!(odd.parts(), (Duration::ZERO, 1.0, Duration::ZERO, 0.0, 1));
    }
}
