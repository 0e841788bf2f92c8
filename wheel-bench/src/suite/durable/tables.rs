//! The durable section's tables: their titles, intros and rows, and the
//! targets table built from the figures the runs leave in [`Figures`].

use std::time::Duration;

use super::DurableParams;
use crate::durable::kill::{taken_over_after, KillParams, KillRun};
use crate::durable::lateness::{LatenessParams, LatenessRun, PEER_RUNNERS};
use crate::durable::throughput::{Measured, Restart, ThroughputParams};
use crate::durable::Impl;
use crate::report::Table;
use crate::stats::percentile_sorted;
use crate::suite::fmt_count;
use crate::workloads::Check;

/// Signed nanoseconds as milliseconds, two decimals.
fn ms2(ns: Option<i64>) -> String {
    ns.map_or("-".into(), |v| format!("{:.2}", v as f64 / 1e6))
}

fn secs(d: Duration) -> String {
    format!("{}", d.as_secs_f64())
}

/// The lateness table of one rate, without rows.
pub(super) fn lateness(p: &LatenessParams) -> Table {
    Table::new(
        &format!(
            "Durable timers at {}/s: {} timers due evenly over {} s",
            fmt_count(p.rate as usize),
            fmt_count(p.timers()),
            secs(p.window)
        ),
        &format!(
            "Timers with 16-byte keys and 32-byte payloads, added up front with `add_many` (1 000 per \
             call) while the nodes already run; the first is due {} s after the nodes start (plus {} µs \
             per timer for the adding). Lateness = handler start minus due, in ms, on this machine's \
             clock (the Redis server is local); negative is early. p50, p99 and max over each timer's \
             first run. Early: timers whose first run started before due (the largest earliness in \
             brackets). Lost: never ran within {} s after the window and no longer in the store; \
             \"not run yet\": still in the store then (the nodes fell behind; the percentiles leave them \
             out). Duplicates: runs beyond the first. \
             Adding: how long adding them all took. Ours: the builder's defaults (4 workers, claims 2 s \
             ahead, a 500 ms safety poll), every node in this process with its own store connections. \
             The one-second Redis wheel: nodes whose tickers are spread over a second, {PEER_RUNNERS} \
             runner threads each. Redis: a private `redis-server` without persistence, emptied between \
             runs.",
            secs(p.lead),
            p.add_allowance.as_micros(),
            secs(p.grace)
        ),
        &[
            "implementation",
            "p50 ms",
            "p99 ms",
            "max ms",
            "early",
            "lost",
            "duplicates",
            "adding ms",
            "check",
        ],
    )
}

pub(super) fn lateness_row(name: &str, r: &LatenessRun) -> Vec<String> {
    let s = &r.summary;
    vec![
        name.into(),
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
             (handler start minus due) in ms. Cut short: runs started on the killed node that never ended; ours runs them \
             again after the lease (at-least-once), so they count as duplicates too. Lost: never ran. \
             Check: early and lost timers, and duplicates beyond the runs cut short.",
            p.nodes,
            p.work.as_millis(),
            p.workers,
            secs(p.lease),
            p.workers,
            taken_over_after(p.lease).as_millis()
        ),
        &[
            "implementation",
            "killed at ms",
            "taken over",
            "median delay ms",
            "longest delay ms",
            "cut short",
            "lost",
            "duplicates",
            "early",
            "check",
        ],
    )
}

pub(super) fn kill_check(r: &KillRun) -> Check {
    let s = &r.summary;
    Check::from_errors(&[
        ("fired early", s.early as u64),
        ("lost", s.lost as u64),
        (
            "duplicates beyond the runs cut short",
            s.duplicates.saturating_sub(r.cut_short as u64),
        ),
    ])
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
        s.lost.to_string(),
        s.duplicates.to_string(),
        s.early_cell(),
        kill_check(r).label(),
    ]
}

/// The throughput table, without rows.
pub(super) fn throughput(p: &ThroughputParams) -> Table {
    Table::new(
        "Durable timers: throughput and store bytes",
        &format!(
            "add/s: single `add` calls for {} s, each returning once the store holds the timer (fsynced \
             for the embedded store, acknowledged by Redis), from 1 thread and from {} threads sharing \
             one handle; the peer's add is one script call. add_many/s: {} timers, 1 000 per call (the \
             peer has no batch call: its add script, pipelined 1 000 at a time). bytes/timer: Redis \
             `used_memory` growth over those timers (16-byte keys, 32-byte payloads), or the embedded \
             store's growth on disk. fire/s: {} timers all due at one instant, added while the nodes run, run \
             per second from the first handler start to the last, with 1 node and with 3 (the embedded \
             store has one); the peer's tick takes the whole second in one script and runs the callbacks \
             in process, so its figure is the rate of that loop. Check: early, lost or duplicate runs \
             in the fire runs.",
            secs(p.add_for),
            p.threads,
            fmt_count(p.bulk),
            fmt_count(p.fire)
        ),
        &[
            "implementation",
            "add/s, 1 thread",
            &format!("add/s, {} threads", p.threads),
            "add_many/s",
            "bytes/timer",
            "fire/s, 1 node",
            "fire/s, 3 nodes",
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
        format!("{:.0}", m.adds.bulk),
        format!("{:.0}", m.adds.bytes),
        m.fire1.cell(),
        m.fire3.as_ref().map_or("-".into(), |f| f.cell()),
        check.label(),
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

/// What the targets are checked against, gathered as the section runs.
#[derive(Debug, Default)]
pub(super) struct Figures {
    /// (rate, p99 ns) of ours on Redis with 3 nodes.
    p99_redis3: Vec<(u64, Option<i64>)>,
    /// Early, lost, duplicates and runs over every lateness run of ours.
    faults: (usize, usize, u64, usize),
    /// Timers of ours not run yet when their lateness run ended.
    behind: usize,
    /// The kill run of ours.
    pub(super) kill: Option<KillRun>,
    /// `add_many` per second: embedded, Redis.
    add_many: (Option<f64>, Option<f64>),
    /// Redis bytes per timer of ours.
    redis_bytes: Option<f64>,
    /// Embedded adds per second from many threads.
    embedded_add_n: Option<f64>,
    /// The embedded restart.
    pub(super) restart: Option<Restart>,
}

impl Figures {
    pub(super) fn lateness(&mut self, imp: Impl, rate: u64, r: &LatenessRun) {
        if matches!(imp, Impl::Peer { .. }) {
            return;
        }
        let s = &r.summary;
        if imp == (Impl::Redis { nodes: 3 }) {
            self.p99_redis3.push((rate, s.pct(99.0)));
        }
        let f = &mut self.faults;
        *f = (f.0 + s.early, f.1 + r.lost(), f.2 + s.duplicates, f.3 + 1);
        self.behind += r.pending_at_end;
    }

    pub(super) fn throughput(&mut self, imp: Impl, m: &Measured) {
        match imp {
            Impl::Embedded => {
                self.add_many.0 = Some(m.adds.bulk);
                self.embedded_add_n = Some(m.adds.many);
            }
            Impl::Redis { .. } => {
                self.add_many.1 = Some(m.adds.bulk);
                self.redis_bytes = Some(m.adds.bytes);
            }
            Impl::Peer { .. } => {}
        }
    }
}

/// One targets row: what, measured, met.
fn target(t: &mut Table, what: &str, measured: Option<(String, bool)>) {
    let (m, ok) = measured.map_or(("not measured".into(), "-".into()), |(m, ok)| {
        (m, if ok { "yes" } else { "no" }.to_string())
    });
    t.row(vec![what.into(), m, ok]);
}

/// The targets table.
pub(super) fn targets(f: &Figures, p: &DurableParams, redis: bool) -> Table {
    let mut t = Table::new(
        "Durable timers: targets",
        "Our durable timers' targets against this run's figures (measured, never asserted in tests). \
         \"not measured\": the run had no Redis server, or the measurement failed.",
        &["target", "measured", "met"],
    );
    timing_targets(&mut t, f, p, redis);
    capacity_targets(&mut t, f, p);
    t
}

/// Lateness, faults and recovery.
fn timing_targets(t: &mut Table, f: &Figures, p: &DurableParams, redis: bool) {
    for (rate, limit_ms) in [(1_000u64, 5.0), (10_000, 20.0)] {
        let p99 = f
            .p99_redis3
            .iter()
            .find(|(r, _)| *r == rate)
            .and_then(|(_, v)| *v)
            .map(|v| v as f64 / 1e6);
        let m = p99.map(|v| (format!("{v:.2} ms"), v <= limit_ms));
        let rate = fmt_count(rate as usize);
        target(
            t,
            &format!("p99 lateness <= {limit_ms} ms at {rate}/s, Redis, 3 nodes"),
            m,
        );
    }
    let (early, lost, dups, runs) = f.faults;
    let clean = (runs > 0).then(|| {
        let mut m = format!("{early} early, {lost} lost, {dups} duplicates in {runs} runs");
        if f.behind > 0 {
            m.push_str(&format!(" ({} not run yet at the end)", f.behind));
        }
        (m, early + lost == 0 && dups == 0)
    });
    target(t, "0 early, 0 lost, 0 duplicates without faults", clean);
    let lease = p.kill.lease;
    let longest = f.kill.as_ref().and_then(|k| k.taken_over.last());
    let recovery = longest.filter(|_| redis).map(|&ns| {
        let d = Duration::from_nanos(ns.max(0) as u64);
        let m = format!("{:.0} ms (lease {} s)", d.as_secs_f64() * 1e3, secs(lease));
        (m, d <= lease + Duration::from_secs(1))
    });
    target(t, "recovery after a kill <= lease + 1 s", recovery);
}

/// Adds, memory and restart.
fn capacity_targets(t: &mut Table, f: &Figures, p: &DurableParams) {
    let bulk = match f.add_many {
        (Some(e), Some(r)) => Some((
            format!("embedded {e:.0}/s, Redis {r:.0}/s"),
            e >= 1e5 && r >= 1e5,
        )),
        (Some(e), None) => Some((format!("embedded {e:.0}/s"), e >= 1e5)),
        _ => None,
    };
    target(t, "add_many >= 100 000 timers/s", bulk);
    let bytes = f.redis_bytes.map(|b| (format!("{b:.0} bytes"), b <= 250.0));
    target(t, "Redis memory <= 250 bytes per timer", bytes);
    let add_n = f
        .embedded_add_n
        .map(|a| (format!("{a:.0}/s"), a >= 20_000.0));
    let threads = p.throughput.threads;
    target(
        t,
        &format!("embedded add, {threads} threads >= 20 000/s"),
        add_n,
    );
    let restart = f.restart.as_ref().map(|r| {
        let first = r.first.as_secs_f64() * 1e3;
        let m = format!("{first:.0} ms with {} pending", fmt_count(r.pending));
        (m, r.first <= Duration::from_secs(2))
    });
    target(
        t,
        "embedded restart with 1M pending: first handler <= 2 s",
        restart,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::Summary;

    #[test]
    fn targets_say_met_missed_or_not_measured() {
        let mut f = Figures::default();
        f.p99_redis3.push((1_000, Some(4_000_000)));
        f.p99_redis3.push((10_000, Some(25_000_000)));
        f.redis_bytes = Some(300.0);
        let run = LatenessRun {
            summary: Summary {
                lost: 3,
                ..Summary::default()
            },
            adding: Duration::ZERO,
            pending_at_end: 3,
        };
        f.lateness(Impl::Embedded, 1_000, &run);
        let t = targets(&f, &DurableParams::quick(), true);
        let met = |what: &str| {
            let row = t.rows.iter().find(|r| r[0].starts_with(what));
            row.map(|r| (r[1].clone(), r[2].clone()))
        };
        assert_eq!(
            met("p99 lateness <= 5 ms"),
            Some(("4.00 ms".into(), "yes".into()))
        );
        assert_eq!(met("p99 lateness <= 20 ms").unwrap().1, "no");
        assert_eq!(met("Redis memory").unwrap().1, "no");
        let clean = met("0 early").unwrap();
        assert_eq!(
            clean.0,
            "0 early, 0 lost, 0 duplicates in 1 runs (3 not run yet at the end)"
        );
        assert_eq!(clean.1, "yes");
        assert_eq!(
            met("embedded add"),
            Some(("not measured".into(), "-".into()))
        );
    }
}
