//! The threaded section: schedule+cancel, its scaling with the producer
//! count, lateness (under load and sparse) and idle cost, for every
//! threaded implementation on the real clock.

use super::{Progress, Results, Settings, fmt_count};
use crate::report::{Table, ms, ns, ratio};
use crate::stats::median;
use crate::threaded::ThreadedPeer;
use crate::threaded::scaling::producer_levels;
use crate::workloads::Check;
use crate::workloads::threaded::{self, CANCEL_LAG, IdleParams, LatenessParams};

/// Run the threaded workloads for every threaded peer.
pub fn run_threaded(s: &Settings, progress: &Progress, results: &mut Results) {
    results.tables.push(sched_cancel_table(s, progress));
    results.tables.push(scaling_table(s, progress));
    for (params, title) in [
        (&s.load, "Lateness under load"),
        (&s.sparse, "Lateness, sparse"),
    ] {
        results.tables.push(lateness_table(params, title, progress));
    }
    results.tables.push(idle_table(&s.idle, progress));
}

/// Schedule+cancel with one and with two producers.
fn sched_cancel_table(s: &Settings, progress: &Progress) -> Table {
    let mut sc = Table::new(
        "Threaded schedule+cancel (real clock)",
        &format!(
            "Each producer thread schedules {} timers due 10-20 s out and cancels each one after \
             scheduling the next {CANCEL_LAG}. Producer: wall time per pair seen by the producer (mean \
             over producers). CPU: whole-process CPU per pair from the start until the service went \
             quiet (per-thread time on CPU from /proc, ns resolution; producers report their own). \
             Median of {} run(s).",
            fmt_count(s.sc_pairs),
            s.sc_runs
        ),
        &[
            "implementation",
            "1 producer ns/pair",
            "vs ours",
            "CPU ns/pair",
            "2 producers ns/pair",
            "vs ours",
            "CPU ns/pair",
            "check",
        ],
    );
    let mut ours_sc = [f64::NAN; 2];
    for peer in ThreadedPeer::ALL {
        let mut row = vec![peer.name().to_string()];
        let mut check = Check::Passed;
        for (i, producers) in [1usize, 2].into_iter().enumerate() {
            let mut prod = Vec::new();
            let mut cpu = Vec::new();
            for r in 0..s.sc_runs {
                let o = crate::with_threaded!(peer, |T| threaded::sched_cancel::<T>(
                    producers,
                    s.sc_pairs,
                    61 + r as u64
                ));
                progress.say(format!(
                    "schedule+cancel {producers}p {}: run {}/{}: {} ns/pair, CPU {} ns/pair",
                    peer.name(),
                    r + 1,
                    s.sc_runs,
                    ns(o.producer_ns_per_pair),
                    ns(o.cpu_ns_per_pair)
                ));
                prod.push(o.producer_ns_per_pair);
                cpu.push(o.cpu_ns_per_pair);
                check = check.merge(o.check);
            }
            let (p, c) = (median(&prod), median(&cpu));
            if peer == ThreadedPeer::Scheduler {
                ours_sc[i] = p;
            }
            row.push(ns(p));
            row.push(ratio(p, ours_sc[i]));
            row.push(ns(c));
        }
        row.push(check.label());
        sc.row(row);
    }
    sc
}

/// Aggregate schedule+cancel throughput from 1 producer up to one per core.
fn scaling_table(s: &Settings, progress: &Progress) -> Table {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut t = Table::new(
        "Threaded schedule+cancel, scaling with producers (real clock)",
        &format!(
            "P producer threads (1, 2, 4, ... up to the {cores} available cores) each schedule {} timers \
             due 10-20 s out and cancel each one after scheduling the next {CANCEL_LAG}; every closure \
             captures an Arc counter. Pairs/s: all pairs over the span from the first producer's start \
             to the last one's end; vs ours: that over ours at the same P (below 1: fewer pairs/s). CPU: whole-process CPU per pair until the service went quiet, as in \
             the table above. Wake-ups: our tick thread's returns from parking per 1 000 pairs over \
             the same span (Stats::wakeups; \"-\" for services that do not count them). Median of {} \
             run(s) per cell{}.",
            fmt_count(s.sc_pairs),
            s.sc_runs,
            if s.quick { " (--quick)" } else { "" }
        ),
        &[
            "producers",
            "implementation",
            "Mpairs/s",
            "vs ours",
            "CPU ns/pair",
            "wake-ups/1K pairs",
            "check",
        ],
    );
    for producers in producer_levels(cores) {
        let mut ours = f64::NAN;
        for peer in ThreadedPeer::ALL {
            let cell = scaling_cell(s, peer, producers, progress);
            if peer == ThreadedPeer::Scheduler {
                ours = cell.0;
            }
            t.row(vec![
                producers.to_string(),
                peer.name().into(),
                format!("{:.2}", cell.0 / 1e6),
                ratio(cell.0, ours),
                ns(cell.1),
                cell.2.map_or("-".into(), |w| format!("{w:.2}")),
                cell.3.label(),
            ]);
        }
    }
    t
}

/// Medians of pairs/s, CPU ns per pair and wake-ups per 1 000 pairs over
/// `s.sc_runs` runs, and the merged check.
fn scaling_cell(
    s: &Settings,
    peer: ThreadedPeer,
    producers: usize,
    progress: &Progress,
) -> (f64, f64, Option<f64>, Check) {
    let (mut rate, mut cpu, mut wakeups) = (Vec::new(), Vec::new(), Vec::new());
    let mut check = Check::Passed;
    for r in 0..s.sc_runs {
        let o = crate::with_threaded!(peer, |T| crate::threaded::scaling::scaling::<T>(
            producers,
            s.sc_pairs,
            81 + r as u64
        ));
        progress.say(format!(
            "scaling {producers}p {}: run {}/{}: {:.2} Mpairs/s, CPU {} ns/pair",
            peer.name(),
            r + 1,
            s.sc_runs,
            o.pairs_per_sec / 1e6,
            ns(o.cpu_ns_per_pair)
        ));
        rate.push(o.pairs_per_sec);
        cpu.push(o.cpu_ns_per_pair);
        wakeups.extend(o.wakeups_per_1k);
        check = check.merge(o.check);
    }
    let wakeups = (!wakeups.is_empty()).then(|| median(&wakeups));
    (median(&rate), median(&cpu), wakeups, check)
}

/// Lateness of every peer's callbacks with the timers of `params`.
fn lateness_table(params: &LatenessParams, title: &str, progress: &Progress) -> Table {
    let mut t = Table::new(
        &format!(
            "{title}: {} timers due evenly over {} ms from {} producers",
            fmt_count(params.timers),
            params.window.as_millis(),
            params.producers
        ),
        &format!(
            "Lateness = callback start minus the requested instant, in ms (negative: early). The window starts {} ms after \
             the producers start (\"scheduling\" is how long the slowest producer took; past that, timers \
             came due while still being scheduled). Early: callbacks that started before their instant \
             (the largest earliness in brackets). Lost: never ran within {} s after the window.",
            params.lead.as_millis(),
            params.grace.as_secs()
        ),
        &[
            "implementation",
            "p50",
            "p99",
            "p99.9",
            "max",
            "early",
            "lost",
            "scheduling ms",
            "check",
        ],
    );
    for peer in ThreadedPeer::ALL {
        progress.say(format!("{title} {}", peer.name()));
        let l = crate::with_threaded!(peer, |T| threaded::lateness::<T>(params));
        let early = if l.early > 0 {
            format!("{} ({} ms)", l.early, ms(l.max_early))
        } else {
            "0".into()
        };
        t.row(vec![
            peer.name().into(),
            signed_ms(l.p50),
            signed_ms(l.p99),
            signed_ms(l.p999),
            signed_ms(l.max),
            early,
            l.lost.to_string(),
            format!("{:.0}", l.scheduling.as_secs_f64() * 1e3),
            l.check.label(),
        ]);
    }
    t
}

/// Idle CPU and bytes per timer with far timers pending.
fn idle_table(p: &IdleParams, progress: &Progress) -> Table {
    let mut t = Table::new(
        &format!("Idle: {} timers an hour out", fmt_count(p.far)),
        &format!(
            "Bytes: live heap per pending timer, the boxed closure (8 bytes captured) and any per-timer \
             handle allocation included. Idle CPU: whole-process CPU over {} ms with only those timers \
             pending, as % of one core. Near: the same while {} timers come due within {} ms (no \
             spinning expected).",
            p.idle_window.as_millis(),
            p.near,
            p.near_window.as_millis()
        ),
        &[
            "implementation",
            "bytes/timer",
            "vs ours",
            "idle CPU %",
            "near CPU %",
            "check",
        ],
    );
    let mut ours_bytes = f64::NAN;
    for peer in ThreadedPeer::ALL {
        progress.say(format!("idle {}", peer.name()));
        let i = crate::with_threaded!(peer, |T| threaded::idle::<T>(p, 71));
        if peer == ThreadedPeer::Scheduler {
            ours_bytes = i.bytes_per_timer;
        }
        t.row(vec![
            peer.name().into(),
            format!("{:.1}", i.bytes_per_timer),
            ratio(i.bytes_per_timer, ours_bytes),
            format!("{:.2}", i.idle_cpu_pct),
            format!("{:.2}", i.near_cpu_pct),
            i.check.label(),
        ]);
    }
    t
}

/// Signed nanoseconds as milliseconds with three decimals.
fn signed_ms(v: i64) -> String {
    format!("{:.3}", v as f64 / 1e6)
}
