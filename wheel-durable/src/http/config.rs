//! [`HttpConfig`]: how a node sends callbacks.
//!
//! Node state: none: the settings, read-only once the node starts.

use std::fmt;
use std::time::Duration;

/// The largest per-host limit: each request in flight holds a connection.
const MAX_PER_HOST: usize = 65_536;

/// How a node sends HTTP callbacks; given to
/// [`DurableTimersBuilder::http`](crate::DurableTimersBuilder::http).
///
/// Defaults: a 2 s connect timeout, a 30 s timeout for the whole request
/// (connecting, sending, the reply and its body), at most 1024 requests in
/// flight to one host, no signing secrets, and private targets allowed.
/// The node's
/// [`max_in_flight`](crate::DurableTimersBuilder::max_in_flight)
/// bounds the requests in flight to all hosts together.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_durable::http::HttpConfig;
///
/// let config = HttpConfig::new()
///     .connect_timeout(Duration::from_secs(1))
///     .timeout(Duration::from_secs(10))
///     .per_host_limit(8)
///     .signing_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
/// assert!(!format!("{config:?}").contains("MfKQ")); // the secret stays out of logs
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct HttpConfig {
    pub(crate) connect_timeout: Duration,
    pub(crate) timeout: Duration,
    /// 1 to [`MAX_PER_HOST`] (checked by the builder).
    pub(crate) per_host_limit: usize,
    /// The key bytes of each secret given, in order, or why it is not
    /// one (reported by the builder).
    pub(crate) signing_keys: Vec<Result<Vec<u8>, &'static str>>,
    /// Whether callbacks may target addresses that are not public.
    pub(crate) allow_private: bool,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            connect_timeout: Duration::from_secs(2),
            timeout: Duration::from_secs(30),
            per_host_limit: 1024,
            signing_keys: Vec::new(),
            allow_private: true,
        }
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("per_host_limit", &self.per_host_limit)
            .field("signing_secrets", &self.signing_keys.len())
            .field("allow_private_targets", &self.allow_private)
            .finish()
    }
}

impl HttpConfig {
    /// The defaults (see the type's docs).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = wheel_durable::http::HttpConfig::new();
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
    /// let config = wheel_durable::http::HttpConfig::new().connect_timeout(Duration::from_millis(500));
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
    /// let config = wheel_durable::http::HttpConfig::new().timeout(Duration::from_secs(5));
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
    /// let config = wheel_durable::http::HttpConfig::new().per_host_limit(4);
    /// # drop(config);
    /// ```
    #[must_use]
    pub fn per_host_limit(mut self, n: usize) -> Self {
        self.per_host_limit = n;
        self
    }

    /// Signs every request in the [Standard Webhooks] scheme with this
    /// secret, `whsec_` followed by the standard base64 of the key (as
    /// the Standard Webhooks libraries make and read them; padding may be
    /// left out). Call it again to add another secret: every secret signs,
    /// and `webhook-signature` holds one `v1,<base64>` entry per secret,
    /// in the order given, so a receiver that knows any one of them
    /// accepts the request while keys are rotated. A secret that does not
    /// parse makes [`build`](crate::DurableTimersBuilder::build)
    /// fail with [`DurableError::Config`](crate::DurableError::Config).
    ///
    /// Every request carries `webhook-id` (the same on every attempt of a
    /// timer, new for a timer added again under the same key) and
    /// `webhook-timestamp` (Unix seconds, when sent); with secrets, also
    /// `webhook-signature`: HMAC-SHA256 under the key of
    /// `"<webhook-id>.<webhook-timestamp>."` followed by the raw body.
    /// Receivers check it with their Standard Webhooks library (Python
    /// `standardwebhooks`, the npm package `standardwebhooks`, and others),
    /// or in Rust with [`verify_signature`](super::verify_signature).
    ///
    /// [Standard Webhooks]: https://www.standardwebhooks.com
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::http::HttpConfig;
    /// use wheel_durable::{DurableError, DurableTimers};
    ///
    /// // Rotating: the new secret and the old one both sign until every
    /// // receiver has the new one.
    /// let config = HttpConfig::new()
    ///     .signing_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    ///     .signing_secret("whsec_c2VjcmV0LWtleS1mb3Itd2hlZWwtdGVzdHM=");
    /// # drop(config);
    ///
    /// // A secret that is not `whsec_` and base64 is refused at build.
    /// let dir = tempfile::tempdir().unwrap();
    /// let built = DurableTimers::builder()
    ///     .embedded(dir.path())
    ///     .http(HttpConfig::new().signing_secret("hunter2"))
    ///     .build();
    /// assert!(matches!(built, Err(DurableError::Config(_))));
    /// ```
    #[must_use]
    pub fn signing_secret(mut self, secret: &str) -> Self {
        self.signing_keys.push(super::sign::parse_secret(secret));
        self
    }

    /// Whether callbacks may call addresses that are not public (default:
    /// true, they may). Off, the node refuses a callback whose URL names
    /// an IP address that is not public (see
    /// [`is_public_address`](super::is_public_address): loopback, private,
    /// link-local and cloud metadata addresses, and the rest), and resolves
    /// names itself, keeping only their public addresses, so a name that
    /// resolves to `127.0.0.1` is refused too. Turn it off on a node whose
    /// callbacks come from users who must not reach the node's own network.
    ///
    /// A refused callback is a dead letter at once, its reason starting
    /// `refused target:`: the same target is refused on every attempt, so
    /// retrying would only delay the news. If a name was refused while its
    /// DNS pointed somewhere private for a while,
    /// [`retry_dead`](crate::DurableTimers::retry_dead) sends it
    /// again. The check is made when a request is sent, not by
    /// `add_callback`: a name's addresses are only known then.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = wheel_durable::http::HttpConfig::new().allow_private_targets(false);
    /// assert!(format!("{config:?}").contains("allow_private_targets: false"));
    /// ```
    #[must_use]
    pub fn allow_private_targets(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// The key bytes of every secret (all parse once `check` passed).
    pub(crate) fn keys(&self) -> Vec<Vec<u8>> {
        self.signing_keys
            .iter()
            .filter_map(|k| k.clone().ok())
            .collect()
    }

    /// Why these settings cannot work, if they cannot.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        if self.connect_timeout.is_zero() || self.timeout.is_zero() {
            return Err("the HTTP timeouts must be non-zero");
        }
        if self.per_host_limit == 0 || self.per_host_limit > MAX_PER_HOST {
            return Err("the HTTP per-host limit must be 1 to 65536");
        }
        if let Some(Err(why)) = self.signing_keys.iter().find(|k| k.is_err()) {
            return Err(why);
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
        assert!(
            HttpConfig::new()
                .connect_timeout(Duration::ZERO)
                .check()
                .is_err()
        );
    }

    #[test]
    fn every_secret_must_parse() {
        let good = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let two = HttpConfig::new()
            .signing_secret(good)
            .signing_secret("whsec_AA==");
        assert_eq!(two.check(), Ok(()));
        assert_eq!(two.keys().len(), 2);
        assert_eq!(two.keys()[1], vec![0]);
        for bad in ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_%%", "whsec_"] {
            let config = HttpConfig::new().signing_secret(good).signing_secret(bad);
            assert!(config.check().is_err(), "{bad:?}");
        }
    }
}
