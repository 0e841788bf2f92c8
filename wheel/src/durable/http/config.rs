//! [`HttpConfig`]: how a node sends callbacks.

use std::fmt;
use std::time::Duration;

/// The largest per-host limit: each request in flight holds a connection.
const MAX_PER_HOST: usize = 65_536;

/// How a node sends HTTP callbacks; given to
/// [`DurableTimersBuilder::http`](crate::durable::DurableTimersBuilder::http).
///
/// Defaults: a 2 s connect timeout, a 30 s timeout for the whole request
/// (connecting, sending, the reply and its body), at most 1024 requests in
/// flight to one host, and no signing secret. The node's
/// [`max_in_flight`](crate::durable::DurableTimersBuilder::max_in_flight)
/// bounds the requests in flight to all hosts together.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::durable::http::HttpConfig;
///
/// let config = HttpConfig::new()
///     .connect_timeout(Duration::from_secs(1))
///     .timeout(Duration::from_secs(10))
///     .per_host_limit(8)
///     .signing_secret(b"whsec_5f1c".to_vec());
/// assert!(!format!("{config:?}").contains("whsec")); // the secret stays out of logs
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct HttpConfig {
    pub(crate) connect_timeout: Duration,
    pub(crate) timeout: Duration,
    /// 1 to [`MAX_PER_HOST`] (checked by the builder).
    pub(crate) per_host_limit: usize,
    pub(crate) signing_secret: Option<Vec<u8>>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            connect_timeout: Duration::from_secs(2),
            timeout: Duration::from_secs(30),
            per_host_limit: 1024,
            signing_secret: None,
        }
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("per_host_limit", &self.per_host_limit)
            .field("signed", &self.signing_secret.is_some())
            .finish()
    }
}

impl HttpConfig {
    /// The defaults (see the type's docs).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = wheel::durable::http::HttpConfig::new();
    /// # drop(config);
    /// ```
    pub fn new() -> HttpConfig {
        HttpConfig::default()
    }

    /// How long connecting (resolving, TCP, TLS) may take.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = wheel::durable::http::HttpConfig::new().connect_timeout(Duration::from_millis(500));
    /// # drop(config);
    /// ```
    #[must_use]
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = d;
        self
    }

    /// How long a whole request may take, connecting and reading the
    /// reply's body included. A request that runs out is retried.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = wheel::durable::http::HttpConfig::new().timeout(Duration::from_secs(5));
    /// # drop(config);
    /// ```
    #[must_use]
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }

    /// Requests in flight to one host (name and port) from this node, at
    /// most (1 to 65 536; default 1024): one slow host never takes every
    /// request in flight, and a host is not flooded.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = wheel::durable::http::HttpConfig::new().per_host_limit(4);
    /// # drop(config);
    /// ```
    #[must_use]
    pub fn per_host_limit(mut self, n: usize) -> Self {
        self.per_host_limit = n;
        self
    }

    /// Signs every request with this secret: a `Wheel-Signature` header
    /// `t=<unix seconds>,v1=<hex>`, where the hex is the HMAC-SHA256 of
    /// `"<t>."` followed by the body, keyed with the secret.
    ///
    /// # Examples
    ///
    /// The receiver's side: recompute the HMAC over the timestamp and the
    /// body as received, compare in constant time, and refuse old
    /// timestamps (replays).
    ///
    /// ```
    /// use hmac::{Hmac, KeyInit, Mac};
    /// use sha2::Sha256;
    ///
    /// /// Checks a `Wheel-Signature` header against the raw body.
    /// fn verify(secret: &[u8], header: &str, body: &[u8], now_secs: u64) -> bool {
    ///     let mut t = None;
    ///     let mut v1 = None;
    ///     for part in header.split(',') {
    ///         match part.trim().split_once('=') {
    ///             Some(("t", v)) => t = v.parse::<u64>().ok(),
    ///             Some(("v1", v)) => v1 = Some(v),
    ///             _ => {}
    ///         }
    ///     }
    ///     let (Some(t), Some(v1)) = (t, v1) else { return false };
    ///     if now_secs.abs_diff(t) > 300 {
    ///         return false; // too old (or from the future): refuse replays
    ///     }
    ///     let Some(expected) = (0..v1.len())
    ///         .step_by(2)
    ///         .map(|i| v1.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
    ///         .collect::<Option<Vec<u8>>>()
    ///     else {
    ///         return false;
    ///     };
    ///     let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("any key length");
    ///     mac.update(t.to_string().as_bytes());
    ///     mac.update(b".");
    ///     mac.update(body);
    ///     mac.verify_slice(&expected).is_ok() // constant-time comparison
    /// }
    ///
    /// // A request signed with the secret "whsec_test" at t = 1700000000:
    /// let header = "t=1700000000,v1=35495024f4ef3f94e5a93e22221544c4b75e9a42300cd965ab81cb85cd994e91";
    /// assert!(verify(b"whsec_test", header, b"{}", 1_700_000_060));
    /// assert!(!verify(b"whsec_test", header, b"{\"x\":1}", 1_700_000_060)); // another body
    /// assert!(!verify(b"another", header, b"{}", 1_700_000_060)); // another secret
    /// assert!(!verify(b"whsec_test", header, b"{}", 1_700_009_999)); // too late
    /// ```
    #[must_use]
    pub fn signing_secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.signing_secret = Some(secret.into());
        self
    }

    /// Why these settings cannot work, if they cannot.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        if self.connect_timeout.is_zero() || self.timeout.is_zero() {
            return Err("the HTTP timeouts must be non-zero");
        }
        if self.per_host_limit == 0 || self.per_host_limit > MAX_PER_HOST {
            return Err("the HTTP per-host limit must be 1 to 65536");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_cannot_work_are_named() {
        assert_eq!(HttpConfig::new().check(), Ok(()));
        assert!(HttpConfig::new().per_host_limit(0).check().is_err());
        assert!(HttpConfig::new().per_host_limit(1).check().is_ok());
        assert!(HttpConfig::new().per_host_limit(65_536).check().is_ok());
        assert!(HttpConfig::new().per_host_limit(65_537).check().is_err());
        assert!(HttpConfig::new().timeout(Duration::ZERO).check().is_err());
        assert!(HttpConfig::new()
            .connect_timeout(Duration::ZERO)
            .check()
            .is_err());
    }
}
