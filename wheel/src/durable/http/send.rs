//! [`Sender`]: sends a due callback and turns the reply into an
//! [`Outcome`].
//!
//! One sender per node, shared by its workers: one `ureq` agent (its pool
//! keeps idle keep-alive connections, up to the per-host limit for each
//! host) and the per-host limit ([`Hosts`]). A request runs on the worker
//! that fires the timer, holding a slot of its host for its whole length.

use std::io::Read;
use std::time::{SystemTime, UNIX_EPOCH};

use ureq::http::{self, Uri};
use ureq::{Agent, SendBody};

use super::hosts::{Hosts, HOST_BUSY_RETRY, HOST_WAIT};
use super::reply::{self, Verdict, REASON_BODY};
use super::{headers, sign, HttpCallback, HttpConfig};
use crate::durable::retry::unit_random;
use crate::durable::{Fired, Outcome, RetryPolicy};

/// How much of a reply's body is read at most: reading a short body to
/// its end puts the connection back in the pool; a longer one is cut off
/// with its connection.
const DRAIN: u64 = 64 * 1024;

const USER_AGENT: &str = concat!("wheel/", env!("CARGO_PKG_VERSION"));

/// Sends callbacks for one node.
pub(crate) struct Sender {
    agent: Agent,
    hosts: Hosts,
    /// Names the deliveries' `webhook-id`s apart from other namespaces'.
    namespace: Box<str>,
    /// The signing keys; none: requests go unsigned.
    keys: Vec<Vec<u8>>,
    policy: RetryPolicy,
}

impl Sender {
    pub(crate) fn new(config: &HttpConfig, namespace: &str, policy: RetryPolicy) -> Sender {
        let agent = Agent::config_builder()
            // Every status is an answer to classify, not an error.
            .http_status_as_error(false)
            // A redirect is the endpoint's configuration going wrong: it is
            // reported as a dead letter rather than followed.
            .max_redirects(0)
            // Endpoints are called directly: proxy variables of the
            // environment are ignored, so a node behaves the same anywhere.
            .proxy(None)
            .timeout_connect(Some(config.connect_timeout))
            .timeout_global(Some(config.timeout))
            .max_idle_connections_per_host(config.per_host_limit)
            .max_idle_connections(config.per_host_limit.max(100))
            .user_agent(USER_AGENT)
            .build();
        Sender {
            agent: agent.into(),
            hosts: Hosts::new(config.per_host_limit),
            namespace: namespace.into(),
            keys: config.keys(),
            policy,
        }
    }

    /// Sends `cb` for the run `fired` and says how the run ended.
    pub(crate) fn fire(&self, fired: &Fired, cb: &HttpCallback) -> Outcome {
        reply::outcome(self.send(fired, cb), fired.attempt, &self.policy)
    }

    fn send(&self, fired: &Fired, cb: &HttpCallback) -> Verdict {
        let uri = match cb.uri() {
            Ok(uri) => uri,
            Err(e) => return Verdict::Dead(e.to_string()),
        };
        let host = host_key(&uri);
        let Some(_slot) = self.hosts.acquire(&host, HOST_WAIT) else {
            return Verdict::Retry {
                after: Some(busy_delay()),
                why: format!("{host} had {} requests in flight", self.hosts.limit),
            };
        };
        let request = self.request(fired, cb, uri);
        let sent = if cb.body.is_empty() && cb.method.omits_empty_body() {
            request.body(SendBody::none()).map(|r| self.agent.run(r))
        } else {
            request.body(cb.body.as_slice()).map(|r| self.agent.run(r))
        };
        match sent {
            Err(e) => Verdict::Dead(format!("the request cannot be built: {e}")),
            Ok(Err(e)) => reply::of_error(&e),
            Ok(Ok(mut response)) => {
                let status = response.status().as_u16();
                let retry_after = response
                    .headers()
                    .get(http::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let body = body_start(response.body_mut());
                reply::of_status(status, retry_after.as_deref(), &body, SystemTime::now())
            }
        }
    }

    /// The request's line and headers: the callback's own, then ours.
    fn request(&self, fired: &Fired, cb: &HttpCallback, uri: Uri) -> http::request::Builder {
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
        let id = sign::webhook_id(&self.namespace, &fired.key, fired.first_fence);
        let sent = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if !self.keys.is_empty() {
            let signature = sign::signature(&self.keys, &id, sent, &cb.body);
            b = b.header(headers::WEBHOOK_SIGNATURE, signature);
        }
        b.header(headers::WEBHOOK_ID, id)
            .header(headers::WEBHOOK_TIMESTAMP, sent)
    }
}

/// The per-host limit's key: the host, lower-case, and the port.
fn host_key(uri: &Uri) -> String {
    let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("https") => 443,
        _ => 80,
    });
    let host = uri.host().unwrap_or_default().to_ascii_lowercase();
    format!("{host}:{port}")
}

/// About [`HOST_BUSY_RETRY`], less up to half at random.
fn busy_delay() -> std::time::Duration {
    HOST_BUSY_RETRY.mul_f64(1.0 - 0.5 * unit_random())
}

/// The first [`REASON_BODY`] bytes of a reply's body; the rest, up to
/// [`DRAIN`], is read and dropped.
fn body_start(body: &mut ureq::Body) -> Vec<u8> {
    let mut reader = body.as_reader();
    let mut start = Vec::new();
    // A body that fails half-way changes nothing: the status is the answer.
    let _ = (&mut reader)
        .take(REASON_BODY as u64)
        .read_to_end(&mut start);
    let _ = std::io::copy(&mut reader.take(DRAIN), &mut std::io::sink());
    start
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn hosts_are_keyed_by_name_and_port() {
        let key = |u: &str| host_key(&u.parse().unwrap());
        assert_eq!(key("http://A.Example/x"), "a.example:80");
        assert_eq!(key("https://a.example/x"), "a.example:443");
        assert_eq!(key("HTTPS://a.example:8443"), "a.example:8443");
        assert_eq!(key("http://127.0.0.1:9/"), "127.0.0.1:9");
        assert_eq!(key("http://[::1]:8080/"), "[::1]:8080");
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
