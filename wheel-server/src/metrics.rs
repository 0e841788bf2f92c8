//! `GET /metrics`: the durable tier's counts and the server's own requests,
//! in the Prometheus text format (version 0.0.4).
//!
//! The flow keys' gauges are written by [`crate::flows_metrics`], bounded
//! in number. The store's counts (pending, claimed, dead) are every node's; the
//! counters (fired, retried, failed, ...) and the lateness are this
//! process's, so a dashboard sums them across servers. Requests are
//! counted by [`Requests`]. While the store's counts are unknown (no read
//! of them has finished since the start), their gauges have no sample:
//! a scraper sees them absent, never a zero that was not counted.
//!
//! The text is written here, from one [`DurableStats`] snapshot per
//! scrape, rather than with a metrics crate: such a crate keeps live
//! metric objects that code updates, while every value here is read at
//! once from the library, its lateness histogram included (already
//! cumulative at fixed bounds), so a crate would need a custom collector
//! for each and would change the text format scrapers and the dashboard
//! read.

use std::fmt::Write;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use wheel_durable::{DurableStats, Flows};

use crate::context::ApiContext;
use crate::requests::Requests;
use crate::schedule_stats::ScheduleCounts;

/// Writes one metric with its help and type.
fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
    );
}

/// The whole exposition; `flows` is `None` when reading them failed,
/// `flow_keys` the most flow keys shown one by one.
pub(crate) fn render(
    s: &DurableStats,
    requests: &Requests,
    sched: Option<&ScheduleCounts>,
    flows: Option<&Flows>,
    flow_keys: usize,
) -> String {
    let mut out = String::new();
    let (g, c) = ("gauge", "counter");
    let secs = |d: std::time::Duration| d.as_secs_f64();
    let known = |v: Option<u64>| v.map(|n| n as f64);
    #[rustfmt::skip]
    let store: [(&str, &str, Option<f64>); 6] = [
        ("wheel_timers_pending", "Timers waiting in the store (all nodes).", known(s.pending)),
        ("wheel_timers_claimed", "Timers claimed or running (all nodes).", known(s.claimed)),
        ("wheel_timers_dead", "Dead letters (all nodes).", known(s.dead)),
        ("wheel_timers_parked", "Timers parked in the store: flow key paused, breaker open or backlog deferred (all nodes).", known(s.parked)),
        ("wheel_oldest_overdue_seconds", "How long the earliest pending timer is overdue.", s.oldest_overdue.map(secs)),
        ("wheel_store_counts_age_seconds", "How old the store's counts are.", s.store_counts_age.map(secs)),
    ];
    metric(
        &mut out,
        "wheel_store_available",
        g,
        "1 when the store answers.",
        f64::from(u8::from(s.store_available)),
    );
    for (name, help, value) in store {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        if let Some(value) = value {
            let _ = writeln!(out, "{name} {value}");
        }
    }
    #[rustfmt::skip]
    let node: [(&str, &str, &str, f64); 9] = [
        ("wheel_timers_held", g, "Timers this node holds in memory, not started.", s.held as f64),
        ("wheel_fired_total", c, "Runs this node started.", s.fired as f64),
        ("wheel_retried_total", c, "Runs on this node that ended in a retry.", s.retried as f64),
        ("wheel_failed_total", c, "Timers this node turned into dead letters.", s.failed as f64),
        ("wheel_stale_total", c, "Runs not started: cancelled, rescheduled or claimed again.", s.stale as f64),
        ("wheel_store_errors_total", c, "Store calls that failed and were retried.", s.store_errors as f64),
        ("wheel_claims_total", c, "Claims this node made.", s.claims as f64),
        ("wheel_paused_total", c, "Claims this node did not start: namespace or flow key paused, or breaker open.", s.paused as f64),
        ("wheel_deferred_total", c, "Claims this node handed to the store to park: its flow key's backlog was over what a node keeps.", s.deferred as f64),
    ];
    for (name, kind, help, value) in node {
        metric(&mut out, name, kind, help, value);
    }
    lateness(&mut out, s);
    callbacks(&mut out, s);
    schedules(&mut out, s, sched);
    crate::flows_metrics::render(&mut out, flows, flow_keys);
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

/// The schedule counts: the store's (all nodes, summed over the
/// schedules that exist, so a deleted schedule's counts leave the sums:
/// gauges, not counters) and this node's schedule runs.
fn schedules(out: &mut String, s: &DurableStats, sched: Option<&ScheduleCounts>) {
    metric(
        out,
        "wheel_schedule_runs_total",
        "counter",
        "Runs of schedules this node started (chain, catch-up and triggered runs).",
        s.schedule_runs,
    );
    let gauge = |out: &mut String, name: &str, help: &str, value: Option<u64>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        if let Some(value) = value {
            let _ = writeln!(out, "{name} {value}");
        }
    };
    gauge(
        out,
        "wheel_schedules",
        "Schedules in the store (all nodes).",
        sched.map(|c| c.schedules),
    );
    gauge(
        out,
        "wheel_schedules_paused",
        "Paused schedules (all nodes).",
        sched.map(|c| c.paused),
    );
    out.push_str("# HELP wheel_schedule_runs_skipped Slots not run, by reason, summed over the schedules in the store.\n");
    out.push_str("# TYPE wheel_schedule_runs_skipped gauge\n");
    if let Some(c) = sched {
        for (reason, n) in [
            ("catch_up", c.skipped_catch_up),
            ("overlap", c.skipped_overlap),
            ("paused", c.skipped_paused),
        ] {
            let _ = writeln!(
                out,
                "wheel_schedule_runs_skipped{{reason=\"{reason}\"}} {n}"
            );
        }
    }
}

/// `GET /metrics`.
pub(crate) async fn metrics(State(ctx): State<ApiContext>) -> Response {
    let stats = ctx.timers.stats().await;
    let sched = ctx.schedule_stats.snapshot(&ctx.timers);
    // A store that does not answer leaves the flow gauges without
    // samples; the rest of the page is still served.
    let flows = ctx.timers.flows().await.ok();
    let body = render(
        &stats,
        &ctx.requests,
        sched.as_ref(),
        flows.as_ref(),
        ctx.metrics_flow_keys,
    );
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
    use std::time::Duration;

    use super::*;

    #[test]
    fn requests_are_rendered_by_route_method_and_status() {
        let r = Requests::default();
        r.count("/v1/timers/{key}", "GET", 404);
        r.count("/v1/timers/{key}", "GET", 404);
        r.count("/v1/timers", "POST", 201);
        let text = render(&DurableStats::default(), &r, None, None, 50);
        assert!(text.contains(
            "wheel_http_requests_total{route=\"/v1/timers/{key}\",method=\"GET\",status=\"404\"} 2\n"
        ));
        assert!(text.contains("wheel_lateness_seconds_bucket{le=\"0.001\"} 0\n"));
        assert!(text.contains("wheel_lateness_seconds_bucket{le=\"+Inf\"} 0\n"));
        assert!(text.contains("wheel_callback_attempts_total{result=\"2xx\"} 0\n"));
    }

    #[test]
    fn unknown_store_counts_have_no_sample_and_known_ones_do() {
        let unknown = render(
            &DurableStats::default(),
            &Requests::default(),
            None,
            None,
            50,
        );
        assert!(!unknown.contains("\nwheel_schedules "), "{unknown}");
        assert!(!unknown.contains("\nwheel_schedule_runs_skipped{"));
        assert!(unknown.contains("# TYPE wheel_timers_pending gauge\n"));
        assert!(!unknown.contains("\nwheel_timers_pending "), "{unknown}");
        assert!(!unknown.contains("\nwheel_store_counts_age_seconds "));
        let mut s = DurableStats::default();
        s.pending = Some(0);
        s.dead = Some(3);
        s.parked = Some(4);
        s.paused = 2;
        s.store_counts_age = Some(Duration::from_millis(1500));
        let counts = ScheduleCounts {
            schedules: 4,
            skipped_overlap: 2,
            ..ScheduleCounts::default()
        };
        let known = render(&s, &Requests::default(), Some(&counts), None, 50);
        assert!(known.contains("\nwheel_schedules 4\n"), "{known}");
        assert!(known.contains("\nwheel_schedule_runs_skipped{reason=\"overlap\"} 2\n"));
        assert!(known.contains("\nwheel_timers_pending 0\n"), "{known}");
        assert!(known.contains("\nwheel_timers_dead 3\n"));
        assert!(known.contains("\nwheel_timers_parked 4\n"), "{known}");
        assert!(known.contains("\nwheel_paused_total 2\n"), "{known}");
        assert!(!unknown.contains("\nwheel_timers_parked "), "{unknown}");
        assert!(known.contains("\nwheel_store_counts_age_seconds 1.5\n"));
    }
}
