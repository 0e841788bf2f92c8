//! The HTTP section: our durable timers sending HTTP callbacks (one node,
//! embedded and on Redis) against the one-second Redis wheel with a thread
//! per callback, to a loopback receiver ([`crate::durable::http`]). Redis
//! rows need a `redis-server` (started for the section; skipped with a
//! printed reason without one); the embedded rows run anyway.
//!
//! Tables: callbacks due at once, callbacks due evenly (the sustained rate
//! and 1 000/s), and the bytes per callback in flight. Its targets go into
//! the durable targets table when the durable section runs, and into a
//! table of their own otherwise ([`HttpFigures`]).

use std::time::Duration;

use wheel_testkit::{RedisServer, ServerOptions};

use super::{Progress, Results, Settings, fmt_count};
use crate::cpu::process_cpu;
use crate::durable::http::tally::Tally;
use crate::durable::http::{self, InFlight, Sender, Shape};
use crate::durable::ours::Store;
use crate::durable::{flush, redis_cpu, temp_store};
use crate::report::Table;
use crate::workloads::Check;

/// The section's sizes.
#[derive(Debug, Clone)]
pub struct HttpParams {
    /// The quick run's smaller sizes.
    pub quick: bool,
    /// Callbacks due at once, and the endpoint's delay in ms.
    pub bursts: Vec<(usize, u64)>,
    /// From the sender's start to the due time of a burst.
    pub lead: Duration,
    /// How long after the last due time a request may arrive before it
    /// counts as lost.
    pub bound: Duration,
    /// The rate offered for the sustained run, per second.
    pub sustained_rate: u64,
    /// How long callbacks keep coming due, in the sustained and the
    /// 1 000/s runs.
    pub window: Duration,
    /// Requests held open for the memory figure.
    pub in_flight: usize,
    /// How long the endpoint holds them.
    pub hold: Duration,
}

impl HttpParams {
    /// `--quick`: 1K and 5K due at once, 2 s windows, 1K held open.
    pub fn quick() -> HttpParams {
        HttpParams {
            quick: true,
            bursts: vec![(1_000, 0), (1_000, 100), (5_000, 100)],
            lead: Duration::from_secs(2),
            bound: Duration::from_secs(5),
            sustained_rate: 25_000,
            window: Duration::from_secs(2),
            in_flight: 1_000,
            hold: Duration::from_secs(5),
        }
    }

    /// The full run: 1K and 10K due at once, 10 s windows, 4 096 held open.
    pub fn full() -> HttpParams {
        HttpParams {
            quick: false,
            bursts: vec![(1_000, 0), (1_000, 100), (10_000, 0), (10_000, 100)],
            lead: Duration::from_secs(2),
            bound: Duration::from_secs(10),
            sustained_rate: 25_000,
            window: Duration::from_secs(10),
            in_flight: 4_096,
            hold: Duration::from_secs(5),
        }
    }

    /// The largest burst to a 100 ms endpoint (the target's workload).
    pub fn target_burst(&self) -> usize {
        self.bursts
            .iter()
            .filter(|b| b.1 == 100)
            .map(|b| b.0)
            .max()
            .unwrap_or(0)
    }

    /// The lead for `n` callbacks due evenly: adding them all takes time.
    fn spread_lead(&self, n: usize) -> Duration {
        Duration::from_secs(1) + Duration::from_micros(15) * n as u32
    }
}

/// What the targets read from this section.
#[derive(Debug, Clone, Default)]
pub struct HttpFigures {
    /// The target burst of ours (embedded): due → last request (s), and
    /// whether its check passed.
    pub burst: Option<(f64, bool)>,
    /// The sustained run: arrivals/s, lateness p99 (ms), lag at the end
    /// (s), and whether its check passed.
    pub sustained: Option<(f64, f64, f64, bool)>,
    /// Bytes per callback in flight.
    pub in_flight: Option<f64>,
    /// At 1 000/s: lateness p99 (ms), the store, and whether the check
    /// passed.
    pub at_1k: Option<(f64, &'static str, bool)>,
}

/// "12.3 ms", or "-".
fn ms_cell(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1} ms"))
}

/// The check of a row: ours must pass; the peer's failures are figures.
fn check_cell(t: &Tally, ours: bool) -> String {
    match (ours, t.check()) {
        (_, Check::Passed) => "ok".into(),
        (true, c) => c.label(),
        (false, Check::Failed(why)) => format!("peer: {why}"),
        (false, c) => c.label(),
    }
}

/// Starts the section's Redis server, or says why there is none.
fn start_server(progress: &Progress) -> Option<RedisServer> {
    if !RedisServer::available() {
        progress.say("http: redis-server is not on the PATH; the Redis rows are skipped");
        return None;
    }
    match RedisServer::start(ServerOptions::default()) {
        Ok(s) => Some(s),
        Err(e) => {
            progress.say(format!(
                "http: redis-server did not start ({e}); the Redis rows are skipped"
            ));
            None
        }
    }
}

/// The senders of a burst: ours embedded, and with Redis ours on Redis
/// and the peer.
fn senders(url: Option<&str>) -> Vec<(String, Sender, bool)> {
    let mut v = vec![(
        "ours, embedded, 1 node".to_string(),
        Sender::Ours(Store::Embedded(temp_store("http"))),
        true,
    )];
    if let Some(url) = url {
        v.push((
            "ours, Redis, 1 node".into(),
            Sender::Ours(Store::Redis(url.into())),
            true,
        ));
        v.push((
            "one-second Redis wheel, thread per callback".into(),
            Sender::Peer(url.into()),
            false,
        ));
    }
    v
}

/// Runs the section into `results`.
pub fn run_http(s: &Settings, progress: &Progress, results: &mut Results) {
    let p = &s.http;
    let server = start_server(progress);
    let url = server.as_ref().map(RedisServer::url);
    let url = url.as_deref();
    let mut figures = HttpFigures::default();
    results
        .tables
        .push(burst_table(p, url, progress, &mut figures));
    results
        .tables
        .push(even_table(p, url, progress, &mut figures));
    results.tables.push(memory_table(p, progress, &mut figures));
    if !s.sections.durable {
        results
            .tables
            .push(super::durable::http_targets_table(&figures, p));
    }
    results.http = Some(figures);
}

fn burst_table(
    p: &HttpParams,
    url: Option<&str>,
    progress: &Progress,
    figures: &mut HttpFigures,
) -> Table {
    let intro = format!(
        "N callbacks added up front (add_many), all due {} s after the sender starts, to a \
         loopback endpoint answering 200 after the delay shown. Ours: one node, defaults \
         (max_in_flight 4096, 1024 per host). The peer: the one-second Redis wheel, one thread \
         and one plain HTTP/1.1 connection per callback. Lateness: arrival minus the due time; \
         lost: not arrived {} s after it, except that a callback of ours still in the store \
         then (not dead) is \"not sent yet\": behind, not lost, and no failure.",
        p.lead.as_secs(),
        p.bound.as_secs()
    );
    let mut t = Table::new(
        "HTTP callbacks due at once",
        &intro,
        &[
            "implementation",
            "callbacks",
            "endpoint",
            "due → last request",
            "requests/s",
            "lateness p50",
            "p99",
            "early",
            "lost",
            "duplicates",
            "check",
        ],
    );
    for &(n, delay) in &p.bursts {
        for (name, sender, ours) in senders(url) {
            progress.say(format!(
                "http: {} at once, {delay} ms: {name}",
                fmt_count(n)
            ));
            if let Some(url) = url {
                let _ = flush(url);
            }
            let shape = Shape {
                n,
                delay: Duration::from_millis(delay),
                lead: p.lead,
                window: Duration::ZERO,
                bound: p.bound,
            };
            match http::run(&sender, &shape) {
                Ok(r) => {
                    let embedded = matches!(sender, Sender::Ours(Store::Embedded(_)));
                    if embedded && delay == 100 && n == p.target_burst() {
                        let ok = r.check() == Check::Passed;
                        figures.burst = r.span_s().map(|s| (s, ok));
                    }
                    t.row(burst_row(name, n, delay, &r, ours));
                }
                Err(e) => t.row(vec![name, Check::Failed(e).label()]),
            }
        }
    }
    t
}

/// One row of the burst table.
fn burst_row(name: String, n: usize, delay: u64, r: &Tally, ours: bool) -> Vec<String> {
    vec![
        name,
        fmt_count(n),
        format!("{delay} ms"),
        r.span_s()
            .map_or("-".into(), |s| format!("{:.0} ms", s * 1e3)),
        r.per_sec().map_or("-".into(), |v| format!("{v:.0}")),
        ms_cell(r.lateness_ms(50.0)),
        ms_cell(r.lateness_ms(99.0)),
        r.early.to_string(),
        r.lost_cell(),
        r.duplicates_cell(),
        check_cell(r, ours),
    ]
}

fn even_table(
    p: &HttpParams,
    url: Option<&str>,
    progress: &Progress,
    figures: &mut HttpFigures,
) -> Table {
    let intro = format!(
        "Callbacks due evenly over {} s to an endpoint answering at once, added up front; one \
         node of ours, defaults. Behind: the last arrival minus the last due time (a sender that \
         keeps up ends within milliseconds; one offered more than it can send ends behind by the \
         excess, and its arrivals/s is what it sustained). CPU per callback: the CPU this \
         process (node, receiver and the adding) and the Redis server used over the whole run, \
         divided by the callbacks; on 2 cores, 20 000/s leaves 100 µs for both together. The \
         sustained rate needs Redis; 1 000/s runs on Redis, or on the embedded store without a \
         server.",
        p.window.as_secs()
    );
    let mut t = Table::new(
        "HTTP callbacks due evenly",
        &intro,
        &[
            "implementation",
            "offered/s",
            "callbacks",
            "arrivals/s",
            "lateness p50",
            "p99",
            "behind at the end",
            "CPU µs/callback (process + Redis)",
            "early",
            "lost",
            "duplicates",
            "check",
        ],
    );
    let mut runs = Vec::new();
    if let Some(url) = url {
        runs.push((
            p.sustained_rate,
            Store::Redis(url.into()),
            "ours, Redis, 1 node",
        ));
        runs.push((1_000, Store::Redis(url.into()), "ours, Redis, 1 node"));
    } else {
        progress.say("http: no Redis server: the sustained rate is skipped");
        runs.push((
            1_000,
            Store::Embedded(temp_store("http")),
            "ours, embedded, 1 node",
        ));
    }
    for (rate, store, name) in runs {
        progress.say(format!(
            "http: {}/s over {} s: {name}",
            fmt_count(rate as usize),
            p.window.as_secs()
        ));
        if let Some(url) = url {
            let _ = flush(url);
        }
        let n = (rate as f64 * p.window.as_secs_f64()) as usize;
        let shape = Shape {
            n,
            delay: Duration::ZERO,
            lead: p.spread_lead(n),
            window: p.window,
            bound: p.bound,
        };
        let cpu = RunCpu::start(url);
        match http::run(&Sender::Ours(store.clone()), &shape) {
            Ok(r) => {
                let cpu_cell = cpu.per_callback_cell(n);
                let ok = r.check() == Check::Passed;
                let p99 = r.lateness_ms(99.0);
                if rate == 1_000 {
                    let kind = if url.is_some() { "Redis" } else { "embedded" };
                    figures.at_1k = p99.map(|v| (v, kind, ok));
                } else if let (Some(rate), Some(p99), Some(lag)) = (r.per_sec(), p99, r.lag_s()) {
                    figures.sustained = Some((rate, p99, lag, ok));
                }
                t.row(vec![
                    name.into(),
                    fmt_count(rate as usize),
                    fmt_count(n),
                    r.per_sec().map_or("-".into(), |v| format!("{v:.0}")),
                    ms_cell(r.lateness_ms(50.0)),
                    ms_cell(p99),
                    r.lag_s()
                        .map_or("-".into(), |s| format!("{:.0} ms", s * 1e3)),
                    cpu_cell,
                    r.early.to_string(),
                    r.lost_cell(),
                    r.duplicates_cell(),
                    check_cell(&r, true),
                ]);
            }
            Err(e) => t.row(vec![name.into(), Check::Failed(e).label()]),
        }
    }
    t
}

/// The CPU of this process and of the Redis server (when there is one)
/// from the start of a run.
struct RunCpu {
    process: Option<Duration>,
    redis: Option<(redis::Connection, f64)>,
}

impl RunCpu {
    fn start(url: Option<&str>) -> RunCpu {
        let redis = url.and_then(|u| {
            let mut c = redis::Client::open(u)
                .and_then(|c| c.get_connection())
                .ok()?;
            let at = redis_cpu::read(&mut c).ok()?.server;
            Some((c, at))
        });
        RunCpu {
            process: process_cpu(),
            redis,
        }
    }

    /// "85 + 24": µs per callback of this process and of Redis since the
    /// start ("-" for a reading that failed).
    fn per_callback_cell(self, n: usize) -> String {
        let per = |secs: f64| format!("{:.0}", secs * 1e6 / n.max(1) as f64);
        let process = match (self.process, process_cpu()) {
            (Some(a), Some(b)) => per(b.saturating_sub(a).as_secs_f64()),
            _ => "-".into(),
        };
        let redis = match self.redis {
            Some((mut c, a)) => redis_cpu::read(&mut c).map_or("-".into(), |b| per(b.server - a)),
            None => "-".into(),
        };
        format!("{process} + {redis}")
    }
}

fn memory_table(p: &HttpParams, progress: &Progress, figures: &mut HttpFigures) -> Table {
    let intro = format!(
        "{} callbacks due at once on the embedded store (per-host limit and max_in_flight raised \
         to {0}), to an endpoint that holds each request {} s: the bytes the whole process \
         allocated from just before the due time until all {0} requests were open, per request. \
         The receiver runs in the same process, so its side of each connection is counted too; \
         the control holds as many requests sent by plain threads (the receiver's side and a \
         thread's few hundred heap bytes), and the node's share is the difference (the figure \
         the target reads; the whole when the control failed). The last row holds as many \
         requests sent by a bare reqwest client, the node's own HTTP client: its share is the \
         floor under the node's (HTTP/1.1 takes a connection per request in flight, and hyper \
         gives each an 8 KiB head buffer and reserves 8 KiB to read the reply).",
        p.in_flight,
        p.hold.as_secs()
    );
    let mut t = Table::new(
        "HTTP callbacks: memory per callback in flight",
        &intro,
        &[
            "implementation",
            "requests open",
            "whole process, per request",
            "receiver alone",
            "sender's share (less the receiver)",
            "check",
        ],
    );
    progress.say(format!(
        "http: {} requests held open {} s",
        p.in_flight,
        p.hold.as_secs()
    ));
    let name = "ours, embedded, 1 node";
    let whole = http::in_flight(p.in_flight, p.hold);
    // The receiver alone, for the node's share: the hold only has to
    // outlast the measurement.
    let control = http::in_flight_control(p.in_flight, Duration::from_secs(2));
    let rx = control.as_ref().map(|c| c.bytes_per).ok();
    match whole {
        Ok(InFlight { open, bytes_per }) => {
            let node = rx.map(|rx| bytes_per - rx);
            figures.in_flight = Some(node.unwrap_or(bytes_per));
            t.row(vec![
                name.into(),
                fmt_count(open),
                kib(bytes_per),
                rx.map_or("-".into(), kib),
                node.map_or("-".into(), kib),
                "ok".into(),
            ]);
        }
        Err(e) => t.row(vec![name.into(), Check::Failed(e).label()]),
    }
    // The HTTP client alone, the floor under the node's share.
    let name = "reqwest alone (the node's HTTP client, one task per request)";
    match http::in_flight_reqwest(p.in_flight, Duration::from_secs(2)) {
        Ok(InFlight { open, bytes_per }) => t.row(vec![
            name.into(),
            fmt_count(open),
            kib(bytes_per),
            rx.map_or("-".into(), kib),
            rx.map_or("-".into(), |rx| kib(bytes_per - rx)),
            "ok".into(),
        ]),
        Err(e) => t.row(vec![name.into(), Check::Failed(e).label()]),
    }
    t
}

/// "72271 (70.6 KiB)".
fn kib(bytes: f64) -> String {
    format!("{bytes:.0} ({:.1} KiB)", bytes / 1024.0)
}
