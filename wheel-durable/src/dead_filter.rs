//! [`DeadFilter`]: which dead letters a replay takes, and the flow key of a
//! payload.
//!
//! A filter is plain data, checked once when a replay starts
//! ([`DeadFilter::bounds`]) and then read by the replay's thread only.
//! The time bounds are whole store milliseconds, as failure times are:
//! `failed_since` is inclusive, `failed_before` exclusive, so two
//! filters that share a bound split the dead letters without overlap.
//!
//! Node state: none.

use std::time::SystemTime;

use super::store::Millis;
use super::time::millis_of;
use super::{DurableError, TimerInfo};

/// Which dead letters a replay takes: every condition given must hold.
/// The default takes every dead letter.
///
/// - `flow`: the dead letter is an HTTP callback (feature `http`) whose
///   target origin, `scheme://host:port` with the port always written
///   (`http://127.0.0.1:8080`, `https://example.com:443`), equals this
///   text exactly. A dead letter whose payload is not a callback has no
///   flow key and never matches a flow filter.
/// - `reason`: the dead letter's reason contains this text (a substring,
///   case-sensitive): reasons carry attempt counts and statuses
///   (`"HTTP 503 after 10 attempts"`), so a part of one is what a caller
///   knows.
/// - `failed_since` (inclusive) and `failed_before` (exclusive): the
///   failure time, by the store's clock.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use wheel_durable::DeadFilter;
///
/// let hour_ago = SystemTime::now() - Duration::from_secs(3600);
/// let f = DeadFilter::default()
///     .flow("http://127.0.0.1:8080")
///     .reason("HTTP 503")
///     .failed_since(hour_ago);
/// assert_eq!(f.flow.as_deref(), Some("http://127.0.0.1:8080"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadFilter {
    /// The callback's target origin, exactly (`scheme://host:port`).
    pub flow: Option<String>,
    /// A text the reason contains.
    pub reason: Option<String>,
    /// Failed at or after this time.
    pub failed_since: Option<SystemTime>,
    /// Failed before this time.
    pub failed_before: Option<SystemTime>,
}

impl DeadFilter {
    /// This filter, taking only callbacks to `origin` (`scheme://host:port`).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = wheel_durable::DeadFilter::default().flow("https://api.example:443");
    /// assert!(f.reason.is_none());
    /// ```
    pub fn flow(mut self, origin: impl Into<String>) -> DeadFilter {
        self.flow = Some(origin.into());
        self
    }

    /// This filter, taking only dead letters whose reason contains `text`.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = wheel_durable::DeadFilter::default().reason("timed out");
    /// assert_eq!(f.reason.as_deref(), Some("timed out"));
    /// ```
    pub fn reason(mut self, text: impl Into<String>) -> DeadFilter {
        self.reason = Some(text.into());
        self
    }

    /// This filter, taking only dead letters that failed at or after `at`.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = wheel_durable::DeadFilter::default().failed_since(std::time::SystemTime::UNIX_EPOCH);
    /// assert!(f.failed_since.is_some());
    /// ```
    pub fn failed_since(mut self, at: SystemTime) -> DeadFilter {
        self.failed_since = Some(at);
        self
    }

    /// This filter, taking only dead letters that failed before `at`.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = wheel_durable::DeadFilter::default().failed_before(std::time::SystemTime::now());
    /// assert!(f.failed_before.is_some());
    /// ```
    pub fn failed_before(mut self, at: SystemTime) -> DeadFilter {
        self.failed_before = Some(at);
        self
    }

    /// The time bounds as store times, `[since, before)`; an empty range
    /// or a time the store cannot hold is the caller's error.
    pub(crate) fn bounds(&self) -> Result<(Option<Millis>, Option<Millis>), DurableError> {
        let bound = |t: Option<SystemTime>, name: &str| {
            t.map(millis_of).transpose().map_err(|_| {
                DurableError::InvalidReplay(format!(
                    "{name} must be after 1970-01-01 and before the year 285000"
                ))
            })
        };
        let since = bound(self.failed_since, "failed_since")?;
        let before = bound(self.failed_before, "failed_before")?;
        if let (Some(s), Some(b)) = (since, before)
            && s >= b
        {
            return Err(DurableError::InvalidReplay(
                "failed_since must be before failed_before: the time range is empty".into(),
            ));
        }
        Ok((since, before))
    }

    /// Whether a dead letter matches the flow and reason conditions (the
    /// time bounds are the walk's, which reads in failure order).
    pub(crate) fn matches(&self, dead: &TimerInfo) -> bool {
        if let Some(text) = &self.reason
            && !dead.reason.as_deref().unwrap_or("").contains(text.as_str())
        {
            return false;
        }
        match &self.flow {
            Some(flow) => flow_key(&dead.payload).is_some_and(|k| k == *flow),
            None => true,
        }
    }
}

/// The flow key of a payload: its callback's target origin,
/// `scheme://host:port` with the port always written; `None` for a payload
/// that is not a callback.
#[cfg(feature = "http")]
pub(crate) fn flow_key(payload: &[u8]) -> Option<String> {
    let cb = crate::http::HttpCallback::from_payload(payload)?;
    let url = url::Url::parse(&cb.url).ok()?;
    let host = url.host_str()?;
    let port = url.port_or_known_default()?;
    Some(format!("{}://{host}:{port}", url.scheme()))
}

/// Without HTTP callbacks no payload has a flow key.
#[cfg(not(feature = "http"))]
pub(crate) fn flow_key(_payload: &[u8]) -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::TimerState;

    fn dead(reason: &str, payload: Vec<u8>) -> TimerInfo {
        let at = SystemTime::UNIX_EPOCH;
        TimerInfo {
            key: "k".into(),
            due: at,
            first_due: at,
            attempts: 1,
            state: TimerState::Dead,
            payload,
            failed_at: Some(at),
            reason: Some(reason.into()),
        }
    }

    #[test]
    fn an_empty_or_unstorable_time_range_is_the_caller_s_error() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let same = DeadFilter::default().failed_since(t).failed_before(t);
        assert!(same.bounds().unwrap_err().is_input());
        let early = SystemTime::UNIX_EPOCH - Duration::from_secs(1);
        assert!(
            DeadFilter::default()
                .failed_since(early)
                .bounds()
                .unwrap_err()
                .is_input()
        );
        let ok = DeadFilter::default()
            .failed_since(t)
            .failed_before(t + Duration::from_millis(1));
        assert_eq!(ok.bounds(), Ok((Some(100_000), Some(100_001))));
    }

    #[test]
    fn the_reason_matches_as_a_substring() {
        let f = DeadFilter::default().reason("HTTP 503");
        assert!(f.matches(&dead("HTTP 503 after 3 attempts", b"x".to_vec())));
        assert!(!f.matches(&dead("HTTP 500 after 3 attempts", b"x".to_vec())));
        assert!(DeadFilter::default().matches(&dead("", b"x".to_vec())));
    }

    #[cfg(feature = "http")]
    #[test]
    fn the_flow_is_the_callback_s_origin_with_its_port_and_plain_payloads_have_none() {
        use crate::http::{HttpCallback, Method};
        let cb = |url: &str| HttpCallback::new(Method::Post, url).to_payload().unwrap();
        assert_eq!(
            flow_key(&cb("http://127.0.0.1:8080/a?b")).as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            flow_key(&cb("https://Example.com/x")).as_deref(),
            Some("https://example.com:443")
        );
        assert_eq!(flow_key(b"plain"), None);
        let f = DeadFilter::default().flow("http://127.0.0.1:8080");
        assert!(f.matches(&dead("r", cb("http://127.0.0.1:8080/hook"))));
        assert!(!f.matches(&dead("r", cb("http://127.0.0.1:8081/hook"))));
        assert!(!f.matches(&dead("r", b"plain".to_vec())));
    }
}
