//! `GET /metrics`: the durable tier's counts and the server's own requests,
//! in the Prometheus text format (version 0.0.4).
//!
//! The store's counts (pending, claimed, dead) are every node's; the
//! counters (fired, retried, failed, ...) and the lateness are this
//! process's, so a dashboard sums them across servers. Requests are
//! counted by route template, method and status, each from a fixed set so
//! that no client can add series: the route is the template
//! (`/v1/timers/{key}`, never the key itself), or `unmatched` for a path
//! that matches no route; the method is one of the nine of RFC 9110 and
//! RFC 5789, or `other` (a client may send any token as a method); the
//! status is the one the server answered (a `StatusCode`, 100 to 999).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use wheel_durable::DurableStats;

use crate::app::AppState;
use crate::listener::BodyTimedOut;

/// Requests served, by (route, method, status).
#[derive(Debug, Default)]
pub(crate) struct Requests {
    counts: Mutex<BTreeMap<(String, String, u16), u64>>,
}

impl Requests {
    fn count(&self, route: &str, method: &str, status: u16) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        *counts
            .entry((route.to_owned(), method.to_owned(), status))
            .or_insert(0) += 1;
    }

    fn render(&self, out: &mut String) {
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
    State(state): State<AppState>,
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
    state.requests().count(&route, method, status);
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

/// Writes one metric with its help and type.
fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
    );
}

/// The whole exposition.
pub(crate) fn render(s: &DurableStats, requests: &Requests) -> String {
    let mut out = String::new();
    let (g, c) = ("gauge", "counter");
    let secs = |d: std::time::Duration| d.as_secs_f64();
    #[rustfmt::skip]
    let simple: [(&str, &str, &str, f64); 12] = [
        ("wheel_store_available", g, "1 when the store answers.", f64::from(u8::from(s.store_available))),
        ("wheel_timers_pending", g, "Timers waiting in the store (all nodes).", s.pending as f64),
        ("wheel_timers_claimed", g, "Timers claimed or running (all nodes).", s.claimed as f64),
        ("wheel_timers_dead", g, "Dead letters (all nodes).", s.dead as f64),
        ("wheel_timers_held", g, "Timers this node holds in memory, not started.", s.held as f64),
        ("wheel_oldest_overdue_seconds", g, "How long the earliest pending timer is overdue.", secs(s.oldest_overdue)),
        ("wheel_fired_total", c, "Runs this node started.", s.fired as f64),
        ("wheel_retried_total", c, "Runs on this node that ended in a retry.", s.retried as f64),
        ("wheel_failed_total", c, "Timers this node turned into dead letters.", s.failed as f64),
        ("wheel_stale_total", c, "Runs not started: cancelled, rescheduled or claimed again.", s.stale as f64),
        ("wheel_store_errors_total", c, "Store calls that failed and were retried.", s.store_errors as f64),
        ("wheel_claims_total", c, "Claims this node made.", s.claims as f64),
    ];
    for (name, kind, help, value) in simple {
        metric(&mut out, name, kind, help, value);
    }
    lateness(&mut out, s);
    callbacks(&mut out, s);
    requests.render(&mut out);
    out
}

/// Lateness (start minus due, store clock) as a histogram, and its
/// largest value.
fn lateness(out: &mut String, s: &DurableStats) {
    let b = &s.lateness_buckets;
    out.push_str("# HELP wheel_lateness_seconds Lateness of this node's runs (start minus due).\n");
    out.push_str("# TYPE wheel_lateness_seconds histogram\n");
    for (le, n) in b.cumulative {
        let _ = writeln!(
            out,
            "wheel_lateness_seconds_bucket{{le=\"{}\"}} {n}",
            le.as_secs_f64()
        );
    }
    let _ = writeln!(
        out,
        "wheel_lateness_seconds_bucket{{le=\"+Inf\"}} {}",
        b.count
    );
    let _ = writeln!(out, "wheel_lateness_seconds_sum {}", b.sum.as_secs_f64());
    let _ = writeln!(out, "wheel_lateness_seconds_count {}", b.count);
    metric(
        out,
        "wheel_lateness_max_seconds",
        "gauge",
        "The largest lateness of this node's runs.",
        s.lateness_max.as_secs_f64(),
    );
}

/// The node's callback attempts by result.
fn callbacks(out: &mut String, s: &DurableStats) {
    let h = &s.http;
    out.push_str("# HELP wheel_callback_attempts_total Callback requests this node sent, by result, and targets it refused.\n");
    out.push_str("# TYPE wheel_callback_attempts_total counter\n");
    for (result, n) in [
        ("2xx", h.status_2xx),
        ("3xx", h.status_3xx),
        ("4xx", h.status_4xx),
        ("5xx", h.status_5xx),
        ("other_status", h.other_status),
        ("timeout", h.timeout),
        ("connection_error", h.connection_error),
        ("refused_target", h.refused_target),
    ] {
        let _ = writeln!(
            out,
            "wheel_callback_attempts_total{{result=\"{result}\"}} {n}"
        );
    }
}

/// `GET /metrics`.
pub(crate) async fn metrics(State(state): State<AppState>) -> Response {
    let stats = state.stats().await;
    let body = render(&stats, state.requests());
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_rendered_by_route_method_and_status() {
        let r = Requests::default();
        r.count("/v1/timers/{key}", "GET", 404);
        r.count("/v1/timers/{key}", "GET", 404);
        r.count("/v1/timers", "POST", 201);
        let text = render(&DurableStats::default(), &r);
        assert!(text.contains(
            "wheel_http_requests_total{route=\"/v1/timers/{key}\",method=\"GET\",status=\"404\"} 2\n"
        ));
        assert!(text.contains("wheel_timers_pending 0\n"));
        assert!(text.contains("wheel_lateness_seconds_bucket{le=\"0.001\"} 0\n"));
        assert!(text.contains("wheel_lateness_seconds_bucket{le=\"+Inf\"} 0\n"));
        assert!(text.contains("wheel_callback_attempts_total{result=\"2xx\"} 0\n"));
    }

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
