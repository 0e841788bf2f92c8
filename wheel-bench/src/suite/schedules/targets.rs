//! The schedules section's targets table, read from the [`Figures`] the
//! runs leave. Targets are measured, never asserted: a missed one prints
//! "no" and never fails the run (our own check column does, on missing,
//! duplicate or early runs). On a quick run every verdict says "(quick
//! size)": the targets are set for the full sizes.

use super::{Figures, SchedulesParams};
use crate::report::Table;
use crate::suite::fmt_count;

/// The workload of a row: this run's, and on a quick run the full run's
/// beside it.
fn workload(p: &SchedulesParams, size: impl Fn(&SchedulesParams) -> String) -> String {
    if p.quick {
        format!(
            "quick: {} (full: {})",
            size(p),
            size(&SchedulesParams::full())
        )
    } else {
        size(p)
    }
}

/// One row: what, the workload, measured (or "not measured"), met.
fn target(t: &mut Table, what: &str, workload: String, m: Option<(String, bool)>, quick: bool) {
    let (m, met) = match m {
        None => ("not measured".to_string(), "-".to_string()),
        Some((m, ok)) => {
            let met = if ok { "yes" } else { "no" };
            let size = if quick { " (quick size)" } else { "" };
            (m, format!("{met}{size}"))
        }
    };
    t.row(vec![what.into(), workload, m, met]);
}

/// The targets table.
pub(super) fn table(f: &Figures, p: &SchedulesParams) -> Table {
    let title = if p.quick {
        "Schedules: targets, at the quick run's sizes"
    } else {
        "Schedules: targets"
    };
    let mut t = Table::new(
        title,
        "Our durable schedules' targets against this run's figures (measured, never asserted in \
         tests; a missed target never fails the run), each with the workload it was measured on \
         (2 cores). \"not measured\": no Redis server, or the run failed (its row above says why).",
        &["target", "workload", "measured", "met"],
    );
    redis_rows(&mut t, f, p);
    embedded_rows(&mut t, f, p);
    t
}

/// The every-second targets.
fn redis_rows(t: &mut Table, f: &Figures, p: &SchedulesParams) {
    let q = p.quick;
    let every = workload(p, |p| {
        let e = &p.every_second;
        format!(
            "{} schedules every 1 s for {} s, phases spread, Redis, {} nodes",
            fmt_count(e.schedules),
            e.window.as_secs(),
            e.nodes
        )
    });
    let clean = f.redis.as_ref().map(|r| {
        let s = &r.summary;
        let m = format!(
            "{} missing, {} duplicates, {} early",
            s.lost, s.duplicates, s.early
        );
        (m, s.lost == 0 && s.duplicates == 0 && s.early == 0)
    });
    target(
        t,
        "0 missing periods, 0 duplicates",
        every.clone(),
        clean,
        q,
    );
    let p99 = f.redis.as_ref().and_then(|r| {
        let p99 = r.summary.pct(99.0)? as f64 / 1e6;
        let max = r.summary.max()? as f64 / 1e6;
        // Missing periods leave the percentiles: a p99 with any is no pass.
        let ok = p99 <= 20.0 && r.summary.lost == 0;
        Some((format!("{p99:.2} ms (max {max:.2} ms)"), ok))
    });
    target(t, "p99 lateness <= 20 ms", every, p99, q);
}

/// The embedded store's targets.
fn embedded_rows(t: &mut Table, f: &Figures, p: &SchedulesParams) {
    let q = p.quick;
    let embedded = |what: &str| {
        workload(p, move |p| {
            format!(
                "{} schedules every minute, one slot, embedded, {what}",
                fmt_count(p.embedded)
            )
        })
    };
    let rate = f.live.as_ref().map(|r| {
        let m = format!("{:.0} runs/s", r.created_per_sec);
        (m, r.created_per_sec >= 30_000.0 && r.summary.lost == 0)
    });
    target(
        t,
        "next-run creation >= 30 000 runs/s",
        embedded("node running"),
        rate,
        q,
    );
    let bytes = f.live.as_ref().map(|r| {
        let b = r.bytes_per_schedule;
        (format!("{b:.0} bytes"), b <= 300.0)
    });
    target(
        t,
        "<= 300 bytes per schedule on disk",
        embedded("node running"),
        bytes,
        q,
    );
    let restart = f.restart.as_ref().map(|r| {
        let m = format!(
            "first {:.0} ms, all {:.0} ms (build() {:.0} ms)",
            r.first.as_secs_f64() * 1e3,
            r.all.as_secs_f64() * 1e3,
            r.build.as_secs_f64() * 1e3
        );
        (m, r.first.as_secs_f64() <= 1.0)
    });
    let restarted = workload(p, |p| {
        format!(
            "{} schedules overdue, embedded, node restarted",
            fmt_count(p.restart)
        )
    });
    target(
        t,
        "restart: first run within 1 s of build()",
        restarted,
        restart,
        q,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::Summary;
    use crate::schedules::every_second::EverySecondRun;
    use std::time::Duration;

    fn met(t: &Table, what: &str) -> (String, String) {
        let r = t.rows.iter().find(|r| r[0].starts_with(what)).unwrap();
        (r[2].clone(), r[3].clone())
    }

    #[test]
    fn targets_read_the_figures() {
        let mut f = Figures::default();
        let p = SchedulesParams::full();
        let t = table(&f, &p);
        assert_eq!(met(&t, "p99"), ("not measured".into(), "-".into()));
        f.redis = Some(EverySecondRun {
            summary: Summary {
                lateness: vec![5_000_000, 25_000_000],
                lost: 1,
                ..Summary::default()
            },
            unexpected: 0,
            broken: 0,
            creating: Duration::ZERO,
        });
        let t = table(&f, &p);
        let clean = met(&t, "0 missing");
        assert_eq!(clean.0, "1 missing, 0 duplicates, 0 early");
        assert_eq!(clean.1, "no");
        // Under 20 ms at p99 but a period missing: not met.
        let p99 = met(&t, "p99");
        assert_eq!(p99.1, "no");
        let t = table(&f, &SchedulesParams::quick());
        assert_eq!(met(&t, "p99").1, "no (quick size)");
        assert!(
            t.rows[0][1].starts_with("quick: 1K schedules"),
            "{}",
            t.rows[0][1]
        );
        assert!(t.rows[0][1].contains("(full: 10K schedules every 1 s for 30 s, phases spread"));
    }
}
