//! [`Sender`]: sends a due callback and turns the reply into an
//! [`Outcome`].
//!
//! One sender per node, shared by its runs: one async client (`reqwest`
//! on the node's tokio runtime, rustls with the `ring` provider and the
//! webpki roots; its pool keeps idle keep-alive connections, and HTTP/2 is
//! used where the server offers it by ALPN) and the per-host limit
//! ([`Hosts`]). A request runs as part of its timer's task, holding a slot
//! of its host for its whole length.
//!
//! Node state: none of the stages'. A [`Sender`] owns the HTTP client and the
//! per-host permits; only the async dispatcher's tasks call it, and its
//! counters are the node's `HttpCounters` (written here, read by the stats).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use http::Uri;

use super::hosts::{HOST_BUSY_RETRY, HOST_WAIT, Hosts};
use super::reply::{self, REASON_BODY, Verdict};
use super::{HttpCallback, HttpConfig, guard, headers, sign};
use crate::retry::unit_random;
use crate::stats::HttpCounters;
use crate::{DurableError, Fired, Outcome, RetryPolicy};

/// How much of a reply's body is read at most: reading a short body to
/// its end puts the connection back in the pool; a longer one is cut off
/// with its connection.
const DRAIN: usize = 64 * 1024;

const USER_AGENT: &str = concat!("wheel/", env!("CARGO_PKG_VERSION"));

/// Sends callbacks for one node.
pub(crate) struct Sender {
    client: reqwest::Client,
    hosts: Hosts,
    /// Names the deliveries' `webhook-id`s apart from other namespaces'.
    namespace: Box<str>,
    /// The signing keys; none: requests go unsigned.
    keys: Vec<Vec<u8>>,
    policy: RetryPolicy,
    /// Off: only public addresses are called (see [`guard`]).
    allow_private: bool,
    /// Attempts by result, for `stats`.
    counts: Arc<HttpCounters>,
}

/// TLS for the client: rustls with the webpki roots, offering HTTP/2 and
/// HTTP/1.1, on the `ring` provider with the feature `tls-ring`, else on
/// the provider the application installed as rustls's process default.
pub(super) fn tls() -> Result<rustls::ClientConfig, DurableError> {
    let provider = provider().ok_or_else(|| {
        DurableError::Config(
            "HTTP callbacks need a TLS provider: enable the feature `tls-ring`, \
             or install one with rustls's `CryptoProvider::install_default`"
                .into(),
        )
    })?;
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| DurableError::Config(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(feature = "tls-ring")]
fn provider() -> Option<Arc<rustls::crypto::CryptoProvider>> {
    Some(Arc::new(rustls::crypto::ring::default_provider()))
}

#[cfg(not(feature = "tls-ring"))]
fn provider() -> Option<Arc<rustls::crypto::CryptoProvider>> {
    rustls::crypto::CryptoProvider::get_default().cloned()
}

impl Sender {
    pub(crate) fn new(
        config: &HttpConfig,
        namespace: &str,
        policy: RetryPolicy,
        counts: Arc<HttpCounters>,
    ) -> Result<Sender, DurableError> {
        let mut builder = reqwest::Client::builder();
        if !config.allow_private {
            builder = builder.dns_resolver(guard::PublicOnly);
        }
        let client = builder
            .tls_backend_preconfigured(tls()?)
            // A redirect is the endpoint's configuration going wrong: it is
            // a failed attempt, not followed.
            .redirect(reqwest::redirect::Policy::none())
            // Endpoints are called directly: proxy variables of the
            // environment are ignored, so a node behaves the same anywhere.
            .no_proxy()
            .connect_timeout(config.connect_timeout)
            .timeout(config.timeout)
            .pool_max_idle_per_host(config.per_host_limit)
            .pool_idle_timeout(std::time::Duration::from_secs(15))
            .user_agent(USER_AGENT)
            .build()
            .map_err(|e| DurableError::Config(format!("HTTP client: {e}")))?;
        Ok(Sender {
            client,
            hosts: Hosts::new(config.per_host_limit),
            namespace: namespace.into(),
            keys: config.keys(),
            policy,
            allow_private: config.allow_private,
            counts,
        })
    }

    /// Sends `cb` for the run `fired` and says how the run ended.
    pub(crate) async fn fire(&self, fired: &Fired, cb: &HttpCallback) -> Outcome {
        let verdict = self.send(fired, cb).await;
        reply::outcome(verdict, fired.attempt, &self.policy, cb.retry.as_ref())
    }

    async fn send(&self, fired: &Fired, cb: &HttpCallback) -> Verdict {
        let uri = match cb.uri() {
            Ok(uri) => uri,
            Err(e) => return Verdict::Dead(e.to_string()),
        };
        let request = match self.request(fired, cb, uri) {
            Ok(r) => r,
            Err(why) => return Verdict::Dead(format!("the request cannot be built: {why}")),
        };
        if !self.allow_private {
            // The client connects to an address without resolving it, so
            // the resolver's check never sees it: judge the host of the URL
            // the request goes to, as the client has normalised it.
            if let Some(refused) = guard::refused_before_lookup(request.url()) {
                self.counts.refused_target.fetch_add(1, Ordering::Relaxed);
                return Verdict::Dead(refused.to_string());
            }
        }
        let host = host_key(request.url());
        let Some(_slot) = self.hosts.acquire(&host, HOST_WAIT).await else {
            return Verdict::Retry {
                after: Some(busy_delay()),
                why: format!("{host} had {} requests in flight", self.hosts.limit),
            };
        };
        match self.client.execute(request).await {
            Err(e) => {
                self.count_error(&e);
                reply::of_error(&e)
            }
            Ok(response) => {
                let status = response.status().as_u16();
                self.counts.status(status);
                let retry_after = response
                    .headers()
                    .get(http::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let body = body_start(response).await;
                reply::of_status(status, retry_after.as_deref(), &body, SystemTime::now())
            }
        }
    }

    /// Counts a request that got no reply under why; one the client
    /// would not build was never sent and is not counted.
    fn count_error(&self, e: &reqwest::Error) {
        let counter = if guard::refusal(e).is_some() {
            &self.counts.refused_target
        } else if e.is_timeout() {
            &self.counts.timeout
        } else if e.is_builder() {
            return;
        } else {
            &self.counts.connection_error
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The request: the callback's line, headers and body, then ours. A
    /// GET or DELETE with an empty body goes without one.
    fn request(
        &self,
        fired: &Fired,
        cb: &HttpCallback,
        uri: Uri,
    ) -> Result<reqwest::Request, String> {
        let mut b = http::Request::builder().method(cb.method.as_str()).uri(uri);
        for (name, value) in &cb.headers {
            b = b.header(name.as_str(), value.as_str());
        }
        let unix_ms = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        b = b
            .header(headers::TIMER_KEY, headers::key_value(&fired.key))
            .header(headers::ATTEMPT, fired.attempt)
            .header(headers::FENCE, fired.fence)
            .header(headers::DUE, unix_ms(fired.first_due).to_string())
            .header(headers::ATTEMPT_DUE, unix_ms(fired.due).to_string());
        if let Some(run) = &fired.schedule {
            b = b
                .header(headers::SCHEDULE_ID, headers::key_value(&run.id))
                .header(headers::SCHEDULE_TIME, unix_ms(run.nominal).to_string());
        }
        let id = sign::webhook_id(&self.namespace, &fired.key, fired.first_fence);
        let sent = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if !self.keys.is_empty() {
            let signature = sign::signature(&self.keys, &id, sent, &cb.body);
            b = b.header(headers::WEBHOOK_SIGNATURE, signature);
        }
        b = b
            .header(headers::WEBHOOK_ID, id)
            .header(headers::WEBHOOK_TIMESTAMP, sent);
        let body = if cb.body.is_empty() && cb.method.omits_empty_body() {
            reqwest::Body::default()
        } else {
            if !b
                .headers_ref()
                .is_some_and(|h| h.contains_key(http::header::CONTENT_LENGTH))
            {
                b = b.header(http::header::CONTENT_LENGTH, cb.body.len());
            }
            reqwest::Body::from(cb.body.clone())
        };
        let request = b.body(body).map_err(|e| e.to_string())?;
        reqwest::Request::try_from(request).map_err(|e| e.to_string())
    }
}

/// The per-host limit's key: the host as the client connects to it (so
/// every spelling of one address is one host) and the port.
fn host_key(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or_default();
    format!("{host}:{port}")
}

/// About [`HOST_BUSY_RETRY`], less up to half at random.
fn busy_delay() -> std::time::Duration {
    HOST_BUSY_RETRY.mul_f64(1.0 - 0.5 * unit_random())
}

/// The first [`REASON_BODY`] bytes of a reply's body; the rest, up to
/// [`DRAIN`], is read and dropped.
async fn body_start(mut response: reqwest::Response) -> Vec<u8> {
    let mut start = Vec::new();
    let mut read = 0;
    // A body that fails half-way changes nothing: the status is the answer.
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = REASON_BODY.saturating_sub(start.len());
        start.extend_from_slice(&chunk[..chunk.len().min(room)]);
        read += chunk.len();
        if read > DRAIN {
            break;
        }
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn hosts_are_keyed_by_name_and_port() {
        let key = |u: &str| host_key(&reqwest::Url::parse(u).unwrap());
        assert_eq!(key("http://A.Example/x"), "a.example:80");
        assert_eq!(key("https://a.example/x"), "a.example:443");
        assert_eq!(key("HTTPS://a.example:8443"), "a.example:8443");
        assert_eq!(key("http://127.0.0.1:9/"), "127.0.0.1:9");
        assert_eq!(key("http://[::1]:8080/"), "[::1]:8080");
        assert_eq!(key("http://0x7f.1.:9/"), "127.0.0.1:9");
        assert_eq!(key("http://A.Example:80/"), "a.example:80");
    }

    #[test]
    fn a_busy_host_waits_between_half_and_all_of_the_retry() {
        for _ in 0..50 {
            let d = busy_delay();
            assert!(d >= HOST_BUSY_RETRY / 2 && d <= HOST_BUSY_RETRY, "{d:?}");
        }
        assert!(HOST_WAIT < Duration::from_secs(1));
    }
}
