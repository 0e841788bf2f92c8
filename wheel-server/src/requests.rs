//! Counting the requests this server answers, for `/metrics`: by route
//! template, method and status, each from a fixed set so that no client
//! can add series. The route is the template (`/v1/timers/{key}`, never
//! the key itself), or `unmatched` for a path that matches no route; the
//! method is one of the nine of RFC 9110 and RFC 5789, or `other` (a client
//! may send any token as a method); the status is the one the server
//! answered (a `StatusCode`, 100 to 999).
//!
//! The middleware holds the counter itself (its state is the `Arc`), so
//! this module depends on no application state; `/metrics` reads the same
//! `Arc`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use crate::listener::BodyTimedOut;

/// Requests served, by (route, method, status).
#[derive(Debug, Default)]
pub(crate) struct Requests {
    counts: Mutex<BTreeMap<(String, String, u16), u64>>,
}

impl Requests {
    pub(crate) fn count(&self, route: &str, method: &str, status: u16) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        *counts
            .entry((route.to_owned(), method.to_owned(), status))
            .or_insert(0) += 1;
    }

    pub(crate) fn render(&self, out: &mut String) {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        out.push_str("# HELP wheel_http_requests_total Requests this server answered, by route, method and status.\n");
        out.push_str("# TYPE wheel_http_requests_total counter\n");
        for ((route, method, status), n) in counts.iter() {
            let _ = writeln!(
                out,
                "wheel_http_requests_total{{route=\"{}\",method=\"{method}\",status=\"{status}\"}} {n}",
                escape(route)
            );
        }
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The middleware that counts (and logs, at debug; at warn for 5xx) every
/// request once answered.
pub(crate) async fn count_requests(
    State(requests): State<Arc<Requests>>,
    request: Request,
    next: Next,
) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let method = method_label(request.method());
    let body_timed_out = request.extensions().get::<BodyTimedOut>().cloned();
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    // The listener answers 408 in place of whatever a handler made of a
    // body that missed its deadline.
    let status = match body_timed_out {
        Some(t) if t.get() => StatusCode::REQUEST_TIMEOUT.as_u16(),
        _ => response.status().as_u16(),
    };
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    if status >= 500 {
        tracing::warn!(%method, %route, status, elapsed_ms, "request failed");
    } else {
        tracing::debug!(%method, %route, status, elapsed_ms, "request");
    }
    requests.count(&route, method, status);
    response
}

/// The method's label: a standard method's name, or `other`.
fn method_label(method: &Method) -> &'static str {
    const KNOWN: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
        Method::CONNECT,
        Method::TRACE,
    ];
    KNOWN
        .iter()
        .find(|known| *known == method)
        .map_or("other", Method::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_are_labelled_from_a_fixed_set() {
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        assert_eq!(method_label(&Method::TRACE), "TRACE");
        let invented = Method::from_bytes(b"BREW").unwrap();
        assert_eq!(method_label(&invented), "other");
        let lower = Method::from_bytes(b"get").unwrap();
        assert_eq!(method_label(&lower), "other");
    }
}
