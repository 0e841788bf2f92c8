//! The durable section's tables: their titles, intros and rows (the
//! targets table is in [`super::targets`]).

use std::time::Duration;

use super::DurableParams;
use crate::durable::adds_firing::{ADDING_TARGET, AddsFiringParams, AddsFiringRun, P99_TARGET_NS};
use crate::durable::disk::{AppendRate, RECORD};
use crate::durable::key;
use crate::durable::kill::{KillParams, KillRun, taken_over_after};
use crate::durable::lateness::{LatenessRun, PEER_RUNNERS};
use crate::durable::nearfar::{AddsWhileFiring, FAR, NearFarParams};
use crate::durable::outage::OutageParams;
use crate::durable::redis_cpu;
use crate::durable::throughput::{CPU_SPAN, DiskRates, Measured, ThroughputParams};
use crate::report::Table;
use crate::stats::percentile_sorted;
use crate::suite::fmt_count;
use crate::workloads::Check;

/// Signed nanoseconds as milliseconds, two decimals.
pub(super) fn ms2(ns: Option<i64>) -> String {
    ns.map_or("-".into(), |v| format!("{:.2}", v as f64 / 1e6))
}

/// A duration in seconds as short as it goes ("0.5", "2").
pub(super) fn secs(d: Duration) -> String {
    format!("{}", d.as_secs_f64())
}

/// The rates of the ladder, "1K, 10K and 30K".
pub(super) fn rate_list(rates: &[u64]) -> String {
    let r: Vec<String> = rates.iter().map(|&r| fmt_count(r as usize)).collect();
    match r.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => r.join(""),
    }
}

/// The lateness ladder, without rows.
pub(super) fn lateness(d: &DurableParams) -> Table {
    let p = &d.lateness;
    let full = DurableParams::full();
    let quick = if d.quick {
        format!(
            " (a quick run: the full run's windows are {} s and its ladder goes up to {}/s)",
            secs(full.lateness.window),
            fmt_count(full.rates.last().copied().unwrap_or(0) as usize)
        )
    } else {
        String::new()
    };
    Table::new(
        &format!(
            "Durable timers: lateness at {} timers/s",
            rate_list(&d.rates)
        ),
        &format!(
            "At each rate, rate × {} s timers due evenly over {} s{quick}: ours on the embedded store \
             (1 node) and on Redis (3 nodes), beside the one-second Redis wheel (3 nodes). \
             Timers with 16-byte keys and 32-byte payloads, added up front with `add_many` (1 000 per \
             call) while the nodes already run; the first is due {} s after the nodes start (plus {} µs \
             per timer for the adding). Lateness = handler start minus due, in ms, on this machine's \
             clock (the Redis server is local); negative is early. p50, p99 and max over each timer's \
             first run. Early: timers whose first run started before due (the largest earliness in \
             brackets). Lost: never ran within {} s after the window and no longer in the store; \
             \"not run yet\": still in the store then (the nodes fell behind; the percentiles leave them \
             out). Duplicates: runs beyond the first. \
             Adding: how long adding them all took. Redis CPU: the server's CPU seconds per second \
             from the first due time to the last (`INFO cpu`), the main thread's in brackets when it \
             differs; near 1 core, Redis is the bound. Ours: the builder's defaults (4 workers, claims 2 s \
             ahead, a 500 ms safety poll), every node in this process with its own store connections. \
             The one-second Redis wheel: nodes whose tickers are spread over a second, {PEER_RUNNERS} \
             runner threads each. Redis: a private `redis-server` without persistence, emptied between \
             runs. A node that falls behind is a figure, not a failure: the check fails on early, \
             lost and duplicate runs only.",
            secs(p.window),
            secs(p.window),
            secs(p.lead),
            p.add_allowance.as_micros(),
            secs(p.grace)
        ),
        &[
            "implementation",
            "timers/s",
            "p50 ms",
            "p99 ms",
            "max ms",
            "early",
            "lost",
            "duplicates",
            "adding ms",
            "Redis CPU",
            "check",
        ],
    )
}

pub(super) fn lateness_row(name: &str, rate: u64, r: &LatenessRun) -> Vec<String> {
    let s = &r.summary;
    vec![
        name.into(),
        fmt_count(rate as usize),
        ms2(s.pct(50.0)),
        ms2(s.pct(99.0)),
        ms2(s.max()),
        s.early_cell(),
        match r.pending_at_end {
            0 => r.lost().to_string(),
            n => format!("{} ({n} not run yet)", r.lost()),
        },
        s.duplicates.to_string(),
        format!("{:.0}", r.adding.as_secs_f64() * 1e3),
        r.redis_cpu.map_or("-".into(), |c| c.cell()),
        r.check().label(),
    ]
}

/// The kill table, without rows.
pub(super) fn kill(p: &KillParams) -> Table {
    let n = (p.rate as f64 * p.window.as_secs_f64()).round() as usize;
    Table::new(
        &format!(
            "Durable timers: one of {} nodes killed mid window ({}/s, {} timers over {} s)",
            p.nodes,
            fmt_count(p.rate as usize),
            fmt_count(n),
            secs(p.window)
        ),
        &format!(
            "{} node processes fire the timers; each handler works {} ms (ours: {} workers per node, a \
             {} s lease; the peer: {} runner threads per node). At the window's midpoint one node gets \
             SIGKILL: ours, the second node (every node holds what it claimed for the next 2 s); the \
             peer, the node whose tick took a batch first after the midpoint, as soon as it reports it. \
             Killed at: ms after the first due time. Taken over: the killed node's timers, which another \
             node ran more than half the lease ({} ms) after due; their median and longest delay \
             (handler start minus due) in ms. Cut short: runs started on the killed node that never ended. \
             Not acknowledged: runs that ended on the killed node without a report that the store recorded their \
             outcome (each node reports the store's answer to every outcome; none for the peer, whose take \
             removes a task before it runs). Run again (at-least-once): runs \
             beyond a timer's first that followed a run whose outcome the store never recorded, whether cut \
             short, not acknowledged, or on a live node whose lease ran out; ours runs those again after the lease. \
             After stored: runs beyond the first that followed a run whose outcome the store had recorded (for \
             the peer, whose take removes a task, any run beyond the first). Lost: never ran. Check: early and \
             lost timers, and any run after a stored outcome (the keys are named).",
            p.nodes,
            p.work.as_millis(),
            p.workers,
            secs(p.lease),
            p.workers,
            taken_over_after(p.lease).as_millis(),
        ),
        &[
            "implementation",
            "killed at ms",
            "taken over",
            "median delay ms",
            "longest delay ms",
            "cut short",
            "not acknowledged",
            "lost",
            "run again",
            "after stored",
            "early",
            "check",
        ],
    )
}

pub(super) fn kill_check(r: &KillRun) -> Check {
    let s = &r.summary;
    let check = Check::from_errors(&[
        ("fired early", s.early as u64),
        ("lost", s.lost as u64),
        ("runs after a stored outcome", after_stored(r)),
    ]);
    match check {
        Check::Failed(why) if !r.again.after_stored.is_empty() => {
            Check::Failed(format!("{why}: {}", keys(&r.again.after_stored)))
        }
        other => other,
    }
}

/// The first ten timers' keys, and how many more.
fn keys(timers: &[usize]) -> String {
    let mut named: Vec<String> = timers.iter().take(10).map(|&i| key(i)).collect();
    if timers.len() > 10 {
        named.push(format!("{} more", timers.len() - 10));
    }
    named.join(", ")
}

/// Runs beyond the first after a stored outcome: every duplicate not
/// allowed, so that a report missing from a node shows here too.
fn after_stored(r: &KillRun) -> u64 {
    r.summary
        .duplicates
        .saturating_sub(r.again.allowed() as u64)
}

pub(super) fn kill_row(name: &str, r: &KillRun) -> Vec<String> {
    let s = &r.summary;
    vec![
        name.into(),
        format!("{:.0}", r.killed_at.as_secs_f64() * 1e3),
        r.taken_over.len().to_string(),
        ms2(percentile_sorted(&r.taken_over, 50.0)),
        ms2(r.taken_over.last().copied()),
        r.cut_short.to_string(),
        r.unacked.to_string(),
        s.lost.to_string(),
        match r.again.allowed() {
            0 => "0".into(),
            n => format!(
                "{n} ({} cut short, {} not acknowledged, {} lease ran out)",
                r.again.after_cut_short, r.again.after_unacked, r.again.after_lapsed
            ),
        },
        after_stored(r).to_string(),
        s.early_cell(),
        kill_check(r).label(),
    ]
}

/// The throughput table, without rows.
pub(super) fn throughput(p: &ThroughputParams) -> Table {
    let most = format!("add/s, {} threads", p.most_threads);
    Table::new(
        "Durable timers: throughput and store bytes",
        &format!(
            "add/s: single `add` calls for {} s, each returning once the store holds the timer (fsynced \
             for the embedded store, acknowledged by Redis), from 1 thread and from {} and {} threads \
             sharing one handle; the peer's add is one script call. The disk's ceiling, measured right \
             after the embedded adds: {RECORD}-byte records appended to a file under the temporary \
             directory from as many threads, each returning once one `fdatasync` covering every caller \
             waiting at the time (group commit) has returned; in brackets, appends per `fdatasync`. \
             add_many/s: {} timers, 1 000 per call (the peer has no batch call: its add script, \
             pipelined 1 000 at a time). bytes/timer: Redis `used_memory` growth over those timers \
             (16-byte keys, 32-byte payloads), or the embedded store's growth on disk. fire/s: {} timers all due \
             at one instant, added while the nodes run, run per second from the first handler start to \
             the last, with 1 node and with 3 (the embedded store has one); the peer's tick takes the \
             whole second in one script and runs the callbacks in process, so its figure is the rate of \
             that loop. Redis CPU: the server's CPU seconds per second over that span (`INFO cpu`, read \
             every {} ms), the main thread's in brackets when it differs; near 1 core, Redis is the \
             bound; \"-\" for a span under {} ms. Check: early, lost or duplicate runs in the fire runs.",
            secs(p.add_for),
            p.threads,
            p.most_threads,
            fmt_count(p.bulk),
            fmt_count(p.fire),
            redis_cpu::EVERY.as_millis(),
            CPU_SPAN * 1e3
        ),
        &[
            "implementation",
            "add/s, 1 thread",
            &format!("add/s, {} threads", p.threads),
            &most,
            "add_many/s",
            "bytes/timer",
            "fire/s, 1 node",
            "Redis CPU, 1 node",
            "fire/s, 3 nodes",
            "Redis CPU, 3 nodes",
            "check",
        ],
    )
}

pub(super) fn throughput_row(name: &str, m: &Measured) -> Vec<String> {
    let check = m
        .fire3
        .iter()
        .fold(m.fire1.summary.check(), |c, f| c.merge(f.summary.check()));
    vec![
        name.into(),
        format!("{:.0}", m.adds.one),
        format!("{:.0}", m.adds.many),
        format!("{:.0}", m.adds.most),
        format!("{:.0}", m.adds.bulk),
        format!("{:.0}", m.adds.bytes),
        m.fire1.cell(),
        m.fire1.cpu_cell(),
        m.fire3.as_ref().map_or("-".into(), |f| f.cell()),
        m.fire3.as_ref().map_or("-".into(), |f| f.cpu_cell()),
        check.label(),
    ]
}

/// The name of the disk's row.
pub(super) const DISK: &str = "disk ceiling: raw append, group fdatasync";

/// "17520 (8.0/sync)".
fn append_cell(a: &AppendRate) -> String {
    format!("{:.0} ({:.1}/sync)", a.per_sec, a.per_sync)
}

/// The disk's row of the throughput table.
pub(super) fn disk_row(d: &DiskRates) -> Vec<String> {
    let mut row = vec![
        DISK.into(),
        append_cell(&d.one),
        append_cell(&d.many),
        append_cell(&d.most),
    ];
    row.extend(["-"; 6].map(String::from));
    row.push(Check::NotApplicable.label());
    row
}

/// What the timers of one near-versus-far run are due.
pub(super) fn near_far_due(p: &NearFarParams, near: bool) -> String {
    if near {
        format!("{}-{} s ahead", secs(p.near_from), secs(p.near_to))
    } else {
        format!("{} h ahead", FAR.as_secs() / 3_600)
    }
}

/// The adds-while-firing table, without rows.
pub(super) fn near_far(p: &NearFarParams) -> Table {
    Table::new(
        &format!("Durable timers: adds while {} nodes fire (Redis)", p.nodes),
        &format!(
            "{} threads sharing one handle make single `add` calls for {} s while {} nodes of ours \
             (the builder's defaults) run on the same Redis server: once with timers due {}, which the \
             nodes never touch, and once with timers due {} (uniformly, whole ms), which the nodes claim \
             and fire while the adding goes on; each on an emptied server with nodes of their own, \
             stopped when the adding ends. Fired: timers the handlers ran meanwhile (not errors; what \
             is left goes with the emptying). Check: runs before due and keys run twice.",
            p.threads,
            secs(p.add_for),
            p.nodes,
            near_far_due(p, false),
            near_far_due(p, true)
        ),
        &[
            "implementation",
            "timers due",
            &format!("add/s, {} threads", p.threads),
            "fired",
            "early",
            "duplicates",
            "check",
        ],
    )
}

pub(super) fn near_far_row(name: &str, due: &str, r: &AddsWhileFiring) -> Vec<String> {
    vec![
        name.into(),
        due.into(),
        format!("{:.0}", r.per_sec),
        r.fired.to_string(),
        r.early.to_string(),
        r.duplicates.to_string(),
        r.check().label(),
    ]
}

/// The single-adds-of-timers-due-soon table, without rows.
pub(super) fn adds_firing(p: &AddsFiringParams) -> Table {
    Table::new(
        &format!(
            "Durable timers: {} single adds due from {} s ahead while {} nodes fire them (Redis)",
            fmt_count(p.timers),
            secs(p.lead),
            p.nodes
        ),
        &format!(
            "{} threads sharing one handle add {} timers, one `add` call each, due from {} s after the \
             adding starts at {}/s (whole ms), while {} nodes of ours (the builder's defaults) claim and \
             fire them; thread t adds timers t, t + {}, ..., so the adding runs through the due times in \
             order. Adding: until the last `add` returned. Lateness: handler start minus due time. The \
             run waits until {} s after the last due time. Check: runs before due, timers never run, keys \
             run twice. Targets: adding within {} s (before the first due time) and p99 within {} ms.",
            p.threads,
            fmt_count(p.timers),
            secs(p.lead),
            fmt_count(p.rate as usize),
            p.nodes,
            p.threads,
            secs(p.grace),
            secs(ADDING_TARGET),
            P99_TARGET_NS / 1_000_000
        ),
        &[
            "implementation",
            "adding s",
            "p50 ms",
            "p99 ms",
            "max ms",
            "early",
            "lost",
            "duplicates",
            "check",
        ],
    )
}

pub(super) fn adds_firing_row(name: &str, r: &AddsFiringRun) -> Vec<String> {
    let s = &r.summary;
    vec![
        name.into(),
        format!("{:.2}", r.adding.as_secs_f64()),
        ms2(s.pct(50.0)),
        ms2(s.pct(99.0)),
        ms2(s.max()),
        s.early_cell(),
        s.lost.to_string(),
        s.duplicates.to_string(),
        r.check().label(),
    ]
}

/// The targets row: adding and p99 against their targets.
pub(super) fn adds_firing_targets(r: &AddsFiringRun) -> Vec<String> {
    vec![
        "targets".into(),
        format!("≤ {}", secs(ADDING_TARGET)),
        "-".into(),
        format!("≤ {}", P99_TARGET_NS / 1_000_000),
        "-".into(),
        "0".into(),
        "0".into(),
        "0".into(),
        r.targets().label(),
    ]
}

/// The restart table, without rows.
pub(super) fn restart(p: &ThroughputParams) -> Table {
    Table::new(
        &format!(
            "Durable timers: embedded restart with {} pending",
            fmt_count(p.restart)
        ),
        &format!(
            "{} timers pending in one embedded store ({} due by the time it is opened again, the rest an hour \
             out), filled with `add_many` (10 000 per call) and closed; then the store is opened again \
             with a handler. build(): how long `build()` took (it recovers the store and turns earlier \
             claims back to pending). First handler: from calling `build()` to the first handler start. \
             All overdue: to the last overdue timer's start. Check: overdue timers lost or run twice, \
             and any run of a timer not yet due.",
            fmt_count(p.restart),
            fmt_count(p.overdue)
        ),
        &[
            "implementation",
            "pending",
            "overdue",
            "fill add_many/s",
            "store MB",
            "build() ms",
            "first handler ms",
            "all overdue ms",
            "check",
        ],
    )
}

/// The outages and shutdown table, without rows.
pub(super) fn outage(p: &OutageParams) -> Table {
    Table::new(
        "Durable timers: outages and shutdown",
        &format!(
            "Every node and client built with `unavailable_after` = {} s. Unreachable: `build()` against a \
             loopback port nobody listens on, timed until it answers `Unavailable`. Killed: a node on a \
             private `redis-server` (append-only file on) holding {} timers due in an hour; the server gets \
             SIGKILL, `stats()` is called {} times, one every {} ms (the figure: the slowest call, the \
             median in brackets), then one `add_at` is timed until it answers `Unavailable`; the server is \
             started again and timed until `stats()` has fresh counts (read under 1 s ago, all {} timers) \
             and until an `add_at` succeeds. Shutdown: a node holding {} claims (due in 10 s, claimed 20 s \
             ahead) shut down, which hands them back in one store call; with the server killed first, that \
             call fails after `unavailable_after` and the claims are left to their leases. Check: the \
             answer is `Unavailable`; the outage shows within two polls and the last counts read stay \
             while it lasts; after a shutdown, a fresh client counts every claim pending again (or, the \
             server killed, still claimed).",
            secs(p.unavailable_after),
            fmt_count(p.timers),
            p.polls,
            p.poll_every.as_millis(),
            fmt_count(p.timers),
            fmt_count(p.claimed)
        ),
        &["store", "case", "measured", "ms", "check"],
    )
}

#[cfg(test)]
mod tests;
