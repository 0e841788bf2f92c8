//! The server section's tables: adds over HTTP, the idle server, and
//! callbacks from two servers. Every row names its workload; on a quick
//! run the workload says "quick".

use super::{FleetRow, ServerParams, SingleServer, idles, loads, rate_over};
use crate::report::Table;
use crate::server::fleet::FleetParams;
use crate::server::load::Loaded;
use crate::suite::fmt_count;
use crate::workloads::Check;

/// `what`, with "quick: " before it on a quick run.
fn sized(p: &ServerParams, what: String) -> String {
    if p.quick {
        format!("quick: {what}")
    } else {
        what
    }
}

/// "12.3 ms" from µs.
fn ms_us(us: u64) -> String {
    format!("{:.1} ms", us as f64 / 1e3)
}

/// "12.3 ms", or "-".
fn ms_cell(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1} ms"))
}

/// A row whose figures are missing: `last` in the check column, so that
/// a failure of ours fails the run.
fn without_figures(name: &str, workload: String, width: usize, last: String) -> Vec<String> {
    let mut row = vec![name.to_string(), workload];
    row.resize(width - 1, "-".into());
    row.push(last);
    row
}

/// One load's row.
fn load_row(name: &str, workload: String, r: &Result<Option<Loaded>, String>) -> Vec<String> {
    match r {
        Ok(Some(l)) => vec![
            name.into(),
            workload,
            fmt_count(l.timers() as usize),
            format!("{:.0}", l.wrk.per_sec()),
            format!("{:.0}", l.timers_per_sec()),
            ms_us(l.wrk.p50_us),
            ms_us(l.wrk.p99_us),
            ms_us(l.wrk.max_us),
            l.check().label(),
        ],
        Ok(None) => without_figures(name, workload, 9, "skipped: wrk is not on the PATH".into()),
        Err(e) => without_figures(name, workload, 9, Check::Failed(e.clone()).label()),
    }
}

/// What a table says of the repeated runs (nothing when each ran once).
fn repeats(p: &ServerParams, which: &str) -> String {
    if p.runs < 2 {
        return String::new();
    }
    format!(
        " Each run was made {} times: {which}; a run whose check failed is shown instead.",
        p.runs
    )
}

/// Adds over HTTP, and the library's beside them.
pub(super) fn adds(p: &ServerParams, single: &Result<SingleServer, String>, wrk: bool) -> Table {
    let l = &p.load;
    let intro = format!(
        "One wheel-server process on the embedded store (a fresh directory), loaded by wrk over \
         keep-alive connections for {} s: each request adds one timer (`POST /v1/timers`, a key \
         of its own) or a batch of {} (`POST /v1/timers:batch`, keys made by the server), every \
         timer a callback an hour out. Latency is wrk's, per request. Then, with the server \
         stopped, the library's `add_callback_at` (what the server stores, without HTTP) from {} \
         threads on an embedded store of its own, as many timers as the one-timer load added. \
         Check: every request answered 201 (one timer) or 200 (a batch), no wrk errors, and the \
         store's pending count (`/metrics`) holding every timer added.{}",
        l.load_for.as_secs(),
        fmt_count(l.batch),
        l.library_threads,
        repeats(
            p,
            "each row is the run with the median figure of that row (timers/s), the ratio in the \
             targets the median of the runs' own ratios"
        )
    );
    let mut t = Table::new(
        "Server: adds over HTTP, embedded store",
        &intro,
        &[
            "implementation",
            "workload",
            "timers",
            "requests/s",
            "timers/s",
            "latency p50",
            "p99",
            "max",
            "check",
        ],
    );
    let [adds, batches] = loads(single);
    let one = format!(
        "{} connections, {} wrk threads, {} s",
        l.connections,
        l.wrk_threads,
        l.load_for.as_secs()
    );
    let batch = format!(
        "{} timers per request, {} connections, {} s",
        fmt_count(l.batch),
        l.batch_connections,
        l.load_for.as_secs()
    );
    t.row(load_row(
        "wheel-server (ours), POST /v1/timers",
        sized(p, one),
        &adds,
    ));
    match single.as_ref().map(|s| &s.library) {
        Ok(Ok(Some(lib))) => t.row(vec![
            "library (ours), add_callback_at".into(),
            sized(p, format!("{} threads, as many timers", lib.threads)),
            fmt_count(lib.timers as usize),
            "-".into(),
            format!("{:.0}", lib.per_sec),
            "-".into(),
            "-".into(),
            "-".into(),
            "ok".into(),
        ]),
        Ok(Err(e)) => t.row(without_figures(
            "library (ours), add_callback_at",
            sized(p, format!("{} threads", l.library_threads)),
            9,
            Check::Failed(e.clone()).label(),
        )),
        // No one-timer load, nothing to compare with.
        _ => {}
    }
    t.row(load_row(
        "wheel-server (ours), POST /v1/timers:batch",
        sized(p, batch),
        &batches,
    ));
    if !wrk {
        t.notes.push(
            "wrk is not installed (Debian: apt-get install wrk): the loads did not run.".into(),
        );
    }
    t
}

/// The idle server, fresh and after the loads.
pub(super) fn idle(p: &ServerParams, single: &Result<SingleServer, String>) -> Table {
    let l = &p.load;
    let intro = format!(
        "The same server left alone {} s, then watched {} s: its CPU over the window (user + \
         system from /proc/<pid>/stat, in 10 ms ticks), as a share of one core, and its \
         resident set at the end (VmRSS of /proc/<pid>/status). Fresh: just started on an empty \
         store. Loaded: after the loads above, holding every timer they added (all an hour \
         out). The last row's check includes a clean exit on SIGTERM afterwards.{}",
        l.settle.as_secs(),
        l.idle_for.as_secs(),
        repeats(p, "each row is the run with the median resident set")
    );
    let mut t = Table::new(
        "Server: idle",
        &intro,
        &["implementation", "workload", "RSS", "CPU", "check"],
    );
    let clean = single.as_ref().map(|s| s.stopped_cleanly).unwrap_or(true);
    for (i, r) in idles(single).iter().enumerate() {
        let loaded = i == 1;
        let workload = match r {
            Ok((_, Some(n))) => format!("{} timers pending, idle", fmt_count(*n as usize)),
            _ if loaded => "after the loads, idle".into(),
            _ => "fresh, empty store, idle".into(),
        };
        let workload = sized(p, workload);
        let name = "wheel-server (ours), embedded";
        match r {
            Ok((idle, _)) => {
                let check = if loaded && !clean {
                    Check::Failed("no clean exit on SIGTERM within 30 s".into())
                } else {
                    Check::Passed
                };
                t.row(vec![
                    name.into(),
                    workload,
                    format!("{:.1} MiB", idle.rss as f64 / (1u64 << 20) as f64),
                    format!("{:.2} %", idle.cpu * 100.0),
                    check.label(),
                ]);
            }
            Err(e) => t.row(without_figures(
                name,
                workload,
                5,
                Check::Failed(e.clone()).label(),
            )),
        }
    }
    t
}

/// The workload of a fleet run.
pub(super) fn fleet_workload(p: &FleetParams) -> String {
    let mut w = format!("{}, added through both", rate_over(p));
    if let Some(after) = p.kill_after {
        w.push_str(&format!(
            ", one SIGKILLed {} s in, {}",
            after.as_secs_f64(),
            super::lease()
        ));
    }
    w
}

/// Callbacks from two servers on one Redis.
pub(super) fn callbacks(p: &ServerParams, rows: &[FleetRow]) -> Table {
    let intro = format!(
        "Two wheel-server processes on one local Redis, callbacks to a loopback receiver in the \
         bench (the HTTP section's) answering 200 at once. Timers due evenly, added {} s ahead \
         through the API (`POST /v1/timers:batch` of {} timers, in turn to each server). Lateness: \
         arrival minus the requested due time. Lost: not arrived {} s after the last due time \
         (with a kill: after the later of the last due time and the kill plus the lease, plus \
         1 s); a timer still pending then is \"not sent yet\". Taken over: arrived over half a \
         lease late (a killed server's timers, fired by the other once the lease ended; \"max\" \
         says when the last came). Duplicates of a new fence are runs sent again after the \
         kill (at-least-once); only duplicates of the same fence fail the check.{}",
        p.lateness.lead.as_secs(),
        crate::server::fleet::ADD_BATCH,
        p.lateness.bound.as_secs(),
        repeats(
            p,
            "the first row is the run with the median p99, the kill row the run whose last \
             timer came latest"
        ),
    );
    let mut t = Table::new(
        "Server: callbacks from 2 servers on one Redis",
        &intro,
        &[
            "implementation",
            "workload",
            "callbacks",
            "lateness p50",
            "p99",
            "max",
            "early",
            "lost",
            "duplicates",
            "taken over",
            "check",
        ],
    );
    for (name, params, run) in rows {
        let name = format!("wheel-server (ours), {name}");
        let workload = sized(p, fleet_workload(params));
        match run {
            Ok(r) => {
                let x = &r.tally;
                t.row(vec![
                    name,
                    workload,
                    fmt_count(x.expected),
                    ms_cell(x.lateness_ms(50.0)),
                    ms_cell(x.lateness_ms(99.0)),
                    ms_cell(r.max_late_ms()),
                    x.early.to_string(),
                    x.lost_cell(),
                    x.duplicates_cell(),
                    r.taken_over().to_string(),
                    r.check().label(),
                ]);
            }
            Err(None) => t.row(without_figures(
                &name,
                workload,
                11,
                "skipped: no redis-server".into(),
            )),
            Err(Some(e)) => t.row(without_figures(
                &name,
                workload,
                11,
                Check::Failed(e.clone()).label(),
            )),
        }
    }
    t
}
