//! The durable section's targets table, built from the figures the runs
//! leave in [`Figures`]. Targets are measured, never asserted: a missed
//! one prints "no" and never fails the run.
//!
//! Every row names the workload its figure comes from. On a quick run that
//! workload is smaller than the full run's (both are named), and every
//! verdict says "(quick size)": the targets are set for the full sizes, so
//! a quick run's "no" is a hint, not a miss.

use std::time::Duration;

use super::DurableParams;
use super::tables::{rate_list, secs};
use crate::durable::Impl;
use crate::durable::kill::KillRun;
use crate::durable::lateness::{LatenessParams, LatenessRun};
use crate::durable::nearfar::AddsWhileFiring;
use crate::durable::redis_cpu::RedisCpu;
use crate::durable::throughput::{FireRate, Measured};
use crate::report::Table;
use crate::suite::{HttpFigures, HttpParams, fmt_count};

mod http;

pub(super) use http::http_only;

/// One lateness run of ours as the targets read it.
#[derive(Debug, Clone, Copy)]
struct Step {
    p99_ns: Option<i64>,
    early: usize,
    lost: usize,
    duplicates: u64,
    /// Timers still in the store at the end: the percentiles leave them
    /// out, so a lateness target is not met with any.
    pending: usize,
}

/// What the targets are checked against, gathered as the section runs.
#[derive(Debug, Default)]
pub(super) struct Figures {
    /// Each lateness run of ours: implementation, rate, figures.
    ladder: Vec<(Impl, u64, Step)>,
    /// Timers of ours not run yet when their lateness run ended.
    behind: usize,
    /// The kill run of ours.
    pub(super) kill: Option<KillRun>,
    /// `add_many` per second: embedded, Redis.
    add_many: (Option<f64>, Option<f64>),
    /// Redis bytes per timer of ours.
    redis_bytes: Option<f64>,
    /// Embedded adds per second from `threads` and `most_threads` threads.
    embedded_adds: Option<(f64, f64)>,
    /// Raw group-commit appends per second from `threads` threads.
    disk_many: Option<f64>,
    /// Embedded fire rate, 1 node.
    fire_embedded: Option<f64>,
    /// Redis fire rates (per second, Redis CPU), 1 and 3 nodes.
    fire_redis: [Option<(f64, Option<RedisCpu>)>; 2],
    /// Adds per second while nodes fire: near-due, far-off.
    near_far: (Option<f64>, Option<f64>),
}

impl Figures {
    pub(super) fn lateness(&mut self, imp: Impl, rate: u64, r: &LatenessRun) {
        if matches!(imp, Impl::Peer { .. }) {
            return;
        }
        let s = &r.summary;
        let step = Step {
            p99_ns: s.pct(99.0),
            early: s.early,
            lost: r.lost(),
            duplicates: s.duplicates,
            pending: r.pending_at_end,
        };
        self.ladder.push((imp, rate, step));
        self.behind += r.pending_at_end;
    }

    pub(super) fn throughput(&mut self, imp: Impl, m: &Measured) {
        let fire = |f: &FireRate| (f.per_sec, f.redis_cpu);
        match imp {
            Impl::Embedded => {
                self.add_many.0 = Some(m.adds.bulk);
                self.embedded_adds = Some((m.adds.many, m.adds.most));
                self.disk_many = m.disk.map(|d| d.many.per_sec);
                self.fire_embedded = Some(m.fire1.per_sec);
            }
            Impl::Redis { .. } => {
                self.add_many.1 = Some(m.adds.bulk);
                self.redis_bytes = Some(m.adds.bytes);
                self.fire_redis = [Some(fire(&m.fire1)), m.fire3.as_ref().map(fire)];
            }
            Impl::Peer { .. } => {}
        }
    }

    pub(super) fn near_far(&mut self, near: bool, r: &AddsWhileFiring) {
        if near {
            self.near_far.0 = Some(r.per_sec);
        } else {
            self.near_far.1 = Some(r.per_sec);
        }
    }

    fn step(&self, imp: Impl, rate: u64) -> Option<Step> {
        self.ladder
            .iter()
            .find(|(i, r, _)| *i == imp && *r == rate)
            .map(|(_, _, s)| *s)
    }
}

/// `num / den`, if `den` is positive and both are finite.
pub(super) fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0 && num.is_finite() && den.is_finite()).then(|| num / den)
}

/// "0.62x (8101/s ÷ 13040/s)", or "-" without a ratio.
pub(super) fn ratio_cell(num: f64, den: f64) -> String {
    ratio(num, den).map_or("-".into(), |r| format!("{r:.2}x ({num:.0}/s ÷ {den:.0}/s)"))
}

/// How a target's row reads.
enum Judged {
    /// Measured: the figure, and whether it meets the target.
    Measured(String, bool),
    /// Measured on the quick run's smaller workload: the figure only.
    Smaller(String),
    /// Not measured.
    Missing,
}

/// `Measured` on a full run, `Smaller` on a quick one when `full_only`.
fn judged(m: Option<(String, bool)>, quick: bool, full_only: bool) -> Judged {
    match m {
        None => Judged::Missing,
        Some((m, _)) if quick && full_only => Judged::Smaller(m),
        Some((m, ok)) => Judged::Measured(m, ok),
    }
}

/// One targets row: what, the workload, measured, met.
fn target(t: &mut Table, what: &str, workload: String, j: Judged) {
    let (m, met) = match j {
        Judged::Measured(m, ok) => (m, if ok { "yes" } else { "no" }.to_string()),
        Judged::Smaller(m) => (m, "quick: smaller workload".into()),
        Judged::Missing => ("not measured".into(), "-".into()),
    };
    t.row(vec![what.into(), workload, m, met]);
}

/// The workload of a row, as `size` describes it: this run's, and on a
/// quick run the full run's beside it.
fn workload(p: &DurableParams, size: impl Fn(&DurableParams) -> String) -> String {
    if p.quick {
        format!(
            "quick: {} (full: {})",
            size(p),
            size(&DurableParams::full())
        )
    } else {
        size(p)
    }
}

/// The targets table, with the HTTP section's rows when it ran.
pub(super) fn targets(
    f: &Figures,
    p: &DurableParams,
    redis: bool,
    http: Option<(&HttpFigures, &HttpParams)>,
) -> Table {
    let mut intro = String::from(
        "Our durable timers' targets against this run's figures (measured, never asserted in tests; \
         a missed target never fails the run), each with the workload it was measured on. \
         \"not measured\": the run had no Redis server, or the measurement failed. \
         \"quick: smaller workload\": the quick run's workload is too small to judge the target; \
         its figure is shown.",
    );
    if p.quick {
        intro.insert_str(
            0,
            "QUICK RUN: every figure below comes from the quick sizes (the workload column names \
             them and the full run's), and the targets are set for the full sizes, so a \
             \"no (quick size)\" is not a miss at full size; the run without `--quick` judges them. ",
        );
    }
    let title = if p.quick {
        "Durable timers: targets, at the quick run's sizes"
    } else {
        "Durable timers: targets"
    };
    let mut t = Table::new(title, &intro, &["target", "workload", "measured", "met"]);
    fire_targets(&mut t, f, p);
    lateness_targets(&mut t, f, p);
    add_targets(&mut t, f, p);
    kept_targets(&mut t, f, p, redis);
    if let Some((hf, hp)) = http {
        http::rows(&mut t, hf, hp);
    }
    if p.quick {
        mark_quick(&mut t);
    }
    t
}

/// Adds "(quick size)" to every verdict.
fn mark_quick(t: &mut Table) {
    for row in &mut t.rows {
        if let Some(met) = row.last_mut().filter(|m| *m == "yes" || *m == "no") {
            met.push_str(" (quick size)");
        }
    }
}

/// Fire rates, with Redis's CPU beside the Redis ones.
fn fire_targets(t: &mut Table, f: &Figures, p: &DurableParams) {
    let quick = p.quick;
    let fired = || {
        workload(p, |p| {
            format!("{} timers due at once", fmt_count(p.throughput.fire))
        })
    };
    for (i, nodes, min) in [(1usize, 3, 50_000.0), (0, 1, 40_000.0)] {
        let m = f.fire_redis[i].map(|(r, cpu)| {
            let cpu = cpu.map_or(String::new(), |c| format!(", Redis CPU {}", c.cell()));
            (format!("{r:.0}/s{cpu}"), r >= min)
        });
        let what = format!(
            "Redis fire/s, {nodes} node{} >= {}",
            if nodes == 1 { "" } else { "s" },
            count(min)
        );
        target(t, &what, fired(), judged(m, quick, true));
    }
    let m = f
        .fire_embedded
        .map(|r| (format!("{r:.0}/s"), r >= 30_000.0));
    target(
        t,
        "embedded fire/s, 1 node >= 30 000",
        fired(),
        judged(m, quick, true),
    );
}

/// "50 000".
fn count(n: f64) -> String {
    let n = n as u64;
    if n >= 1_000 {
        format!("{} {:03}", n / 1_000, n % 1_000)
    } else {
        n.to_string()
    }
}

/// Lateness on the ladder.
fn lateness_targets(t: &mut Table, f: &Figures, p: &DurableParams) {
    let redis3 = Impl::Redis { nodes: 3 };
    for (imp, rate, limit_ms, clean) in [
        (redis3, 30_000u64, 10.0, true),
        (Impl::Embedded, 10_000, 5.0, false),
        (redis3, 1_000, 5.0, false),
    ] {
        let m = f.step(imp, rate).and_then(|s| {
            let p99 = s.p99_ns? as f64 / 1e6;
            let faults = s.early + s.lost + s.duplicates as usize;
            let mut m = format!("{p99:.2} ms");
            if clean {
                m.push_str(&format!(
                    ", {} early, {} lost, {} duplicates",
                    s.early, s.lost, s.duplicates
                ));
            }
            if s.pending > 0 {
                m.push_str(&format!(" ({} not run yet at the end)", s.pending));
            }
            let ok = p99 <= limit_ms && s.pending == 0 && (!clean || faults == 0);
            Some((m, ok))
        });
        let store = match imp {
            Impl::Embedded => "embedded".to_string(),
            _ => "Redis, 3 nodes".into(),
        };
        let extra = if clean { ", 0 early/lost/dup" } else { "" };
        let what = format!(
            "{store}: p99 lateness <= {limit_ms} ms at {}/s{extra}",
            fmt_count(rate as usize)
        );
        let ran = workload(p, |p| {
            let at = LatenessParams {
                rate,
                ..p.lateness.clone()
            };
            format!(
                "{} timers over {} s",
                fmt_count(at.timers()),
                secs(p.lateness.window)
            )
        });
        target(t, &what, ran, judged(m, false, false));
    }
}

/// Adds: near-due against far-off, the embedded adds against the disk.
fn add_targets(t: &mut Table, f: &Figures, p: &DurableParams) {
    let nf = &p.near_far;
    let m = match f.near_far {
        (Some(near), Some(far)) => ratio(near, far).map(|r| (ratio_cell(near, far), r >= 0.8)),
        _ => None,
    };
    let what = format!(
        "Redis adds/s, {} threads, due {}-{} s ahead >= 0.8x the same an hour out ({} nodes up)",
        nf.threads,
        secs(nf.near_from),
        secs(nf.near_to),
        nf.nodes
    );
    let adding = workload(p, |p| format!("adds for {} s", secs(p.near_far.add_for)));
    target(t, &what, adding, judged(m, false, false));
    let adding = || workload(p, |p| format!("adds for {} s", secs(p.throughput.add_for)));
    let threads = p.throughput.threads;
    let m = match (f.embedded_adds, f.disk_many) {
        (Some((add, _)), Some(disk)) => ratio(add, disk).map(|r| (ratio_cell(add, disk), r >= 0.6)),
        _ => None,
    };
    let what = format!(
        "embedded add, {threads} threads, fsynced >= 0.6x a raw append with group fdatasync"
    );
    target(t, &what, adding(), judged(m, false, false));
    let most = p.throughput.most_threads;
    let m = f
        .embedded_adds
        .map(|(_, a)| (format!("{a:.0}/s"), a >= 40_000.0));
    let what = format!("embedded add, {most} threads, fsynced >= 40 000/s");
    target(t, &what, adding(), judged(m, false, false));
}

/// The targets kept from before: faults, recovery, `add_many`, memory.
fn kept_targets(t: &mut Table, f: &Figures, p: &DurableParams, redis: bool) {
    let bulk_added = || {
        workload(p, |p| {
            format!("{} timers added", fmt_count(p.throughput.bulk))
        })
    };
    let runs = f.ladder.len();
    let (early, lost, dups) = f.ladder.iter().fold((0, 0, 0), |(e, l, d), (_, _, s)| {
        (e + s.early, l + s.lost, d + s.duplicates)
    });
    let clean = (runs > 0).then(|| {
        let mut m = format!("{early} early, {lost} lost, {dups} duplicates in {runs} runs");
        if f.behind > 0 {
            m.push_str(&format!(" ({} not run yet at the end)", f.behind));
        }
        (m, early + lost == 0 && dups == 0)
    });
    target(
        t,
        "0 early, 0 lost, 0 duplicates without faults",
        workload(p, |p| {
            format!(
                "the lateness runs: {}/s over {} s",
                rate_list(&p.rates),
                secs(p.lateness.window)
            )
        }),
        judged(clean, false, false),
    );
    let lease = p.kill.lease;
    let longest = f.kill.as_ref().and_then(|k| k.taken_over.last());
    let recovery = longest.filter(|_| redis).map(|&ns| {
        let d = Duration::from_nanos(ns.max(0) as u64);
        let m = format!("{:.0} ms (lease {} s)", d.as_secs_f64() * 1e3, secs(lease));
        (m, d <= lease + Duration::from_secs(1))
    });
    target(
        t,
        "recovery after a kill <= lease + 1 s",
        workload(p, |p| {
            format!(
                "{}/s over {} s, lease {} s",
                fmt_count(p.kill.rate as usize),
                secs(p.kill.window),
                secs(p.kill.lease)
            )
        }),
        judged(recovery, false, false),
    );
    let bulk = match f.add_many {
        (Some(e), Some(r)) => Some((
            format!("embedded {e:.0}/s, Redis {r:.0}/s"),
            e >= 1e5 && r >= 1e5,
        )),
        (Some(e), None) => Some((format!("embedded {e:.0}/s"), e >= 1e5)),
        _ => None,
    };
    target(
        t,
        "add_many >= 100 000 timers/s",
        bulk_added(),
        judged(bulk, false, false),
    );
    let bytes = f.redis_bytes.map(|b| (format!("{b:.1} bytes"), b <= 282.0));
    target(
        t,
        "Redis memory <= 282 bytes per timer",
        bulk_added(),
        judged(bytes, false, false),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::Summary;

    fn met(t: &Table, what: &str) -> Option<(String, String)> {
        let row = t.rows.iter().find(|r| r[0].starts_with(what));
        row.map(|r| (r[2].clone(), r[3].clone()))
    }

    fn workload_of(t: &Table, what: &str) -> String {
        let row = t.rows.iter().find(|r| r[0].starts_with(what));
        row.map(|r| r[1].clone()).unwrap_or_default()
    }

    #[test]
    fn ratios_and_counts_read_as_they_should() {
        assert_eq!(ratio(3.0, 4.0), Some(0.75));
        assert_eq!(ratio(3.0, 0.0), None);
        assert_eq!(ratio(f64::NAN, 1.0), None);
        assert_eq!(ratio_cell(8_101.4, 13_040.0), "0.62x (8101/s ÷ 13040/s)");
        assert_eq!(ratio_cell(1.0, 0.0), "-");
        assert_eq!(count(50_000.0), "50 000");
        assert_eq!(count(40_005.0), "40 005");
        assert_eq!(count(282.0), "282");
    }

    #[test]
    fn targets_say_met_missed_smaller_or_not_measured() {
        let mut f = Figures::default();
        let run = |p99_ms: i64, lost: usize, pending_at_end: usize| LatenessRun {
            summary: Summary {
                lateness: vec![p99_ms * 1_000_000],
                lost,
                ..Summary::default()
            },
            adding: Duration::ZERO,
            pending_at_end,
            redis_cpu: None,
        };
        let redis3 = Impl::Redis { nodes: 3 };
        f.lateness(redis3, 1_000, &run(4, 0, 0));
        f.lateness(redis3, 30_000, &run(12, 0, 0));
        f.lateness(Impl::Embedded, 10_000, &run(3, 3, 3));
        f.redis_bytes = Some(300.0);
        f.fire_redis[1] = Some((
            60_000.0,
            Some(RedisCpu {
                cores: 0.95,
                main: None,
            }),
        ));
        f.near_far = (Some(900.0), Some(1_000.0));
        let mut p = DurableParams::quick();
        let t = targets(&f, &p, true, None);
        assert!(t.intro.starts_with("QUICK RUN"), "{}", t.intro);
        assert!(t.title.contains("quick"), "{}", t.title);
        let at_1k = met(&t, "Redis, 3 nodes: p99 lateness <= 5 ms at 1K/s");
        assert_eq!(at_1k, Some(("4.00 ms".into(), "yes (quick size)".into())));
        let at_30k = met(&t, "Redis, 3 nodes: p99 lateness <= 10 ms").unwrap();
        assert_eq!(at_30k.0, "12.00 ms, 0 early, 0 lost, 0 duplicates");
        assert_eq!(at_30k.1, "no (quick size)");
        assert_eq!(
            workload_of(&t, "Redis, 3 nodes: p99 lateness <= 10 ms"),
            "quick: 30K timers over 1 s (full: 300K timers over 10 s)"
        );
        let embedded = met(&t, "embedded: p99").unwrap();
        assert_eq!(embedded.0, "3.00 ms (3 not run yet at the end)");
        assert_eq!(embedded.1, "no (quick size)");
        assert_eq!(met(&t, "Redis memory").unwrap().1, "no (quick size)");
        assert_eq!(
            workload_of(&t, "Redis memory"),
            "quick: 50K timers added (full: 200K timers added)"
        );
        let clean = met(&t, "0 early").unwrap();
        assert_eq!(
            clean.0,
            "0 early, 0 lost, 0 duplicates in 3 runs (3 not run yet at the end)"
        );
        assert_eq!(clean.1, "yes (quick size)");
        let fire = met(&t, "Redis fire/s, 3 nodes").unwrap();
        assert_eq!(fire.0, "60000/s, Redis CPU 0.95 core");
        assert_eq!(fire.1, "quick: smaller workload");
        assert_eq!(
            workload_of(&t, "Redis fire/s, 3 nodes"),
            "quick: 5K timers due at once (full: 100K timers due at once)"
        );
        assert_eq!(met(&t, "Redis adds/s").unwrap().1, "yes (quick size)");
        let none = ("not measured".to_string(), "-".to_string());
        assert_eq!(met(&t, "embedded add, 8 threads"), Some(none.clone()));
        assert_eq!(met(&t, "Redis fire/s, 1 node"), Some(none));
        // The full run: its own sizes only, plain verdicts.
        p = DurableParams::full();
        let t = targets(&f, &p, true, None);
        assert!(!t.intro.contains("QUICK"), "{}", t.intro);
        assert_eq!(t.title, "Durable timers: targets");
        assert_eq!(met(&t, "Redis fire/s, 3 nodes").unwrap().1, "yes");
        assert_eq!(met(&t, "Redis memory").unwrap().1, "no");
        assert_eq!(
            workload_of(&t, "recovery after a kill"),
            "1K/s over 10 s, lease 5 s"
        );
        assert!(t.rows.iter().all(|r| !r[1].contains("quick")));
    }
}
