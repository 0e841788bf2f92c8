//! The HTTP callbacks' targets: due → last request for a burst to a slow
//! endpoint, the sustained rate on Redis, bytes per callback in flight,
//! and the lateness at 1 000/s. Rows of the durable targets table, or a
//! table of their own when the durable section did not run.

use super::{Table, judged, mark_quick, target};
use crate::suite::{HttpFigures, HttpParams, fmt_count};

/// The workload of a row, as `size` describes it: this run's, and on a
/// quick run the full run's beside it.
fn workload(p: &HttpParams, size: impl Fn(&HttpParams) -> String) -> String {
    if p.quick {
        format!("quick: {} (full: {})", size(p), size(&HttpParams::full()))
    } else {
        size(p)
    }
}

/// " (check failed)" when a run of ours did not pass its check.
fn failed(ok: bool) -> &'static str {
    if ok { "" } else { " (check failed)" }
}

/// The four rows.
pub(crate) fn rows(t: &mut Table, f: &HttpFigures, p: &HttpParams) {
    let m = f
        .burst
        .map(|(s, ok)| (format!("{:.0} ms{}", s * 1e3, failed(ok)), ok && s <= 2.0));
    target(
        t,
        "10 000 callbacks due at once, endpoint answers in 100 ms, 1 node, defaults: \
         due → last request <= 2 s",
        workload(p, |p| {
            format!("{} callbacks, embedded store", fmt_count(p.target_burst()))
        }),
        judged(m, false, false),
    );
    let m = f.sustained.map(|(rate, p99, lag, ok)| {
        let m = format!(
            "{rate:.0}/s, p99 {p99:.1} ms, {:.0} ms behind at the end{}",
            lag * 1e3,
            failed(ok)
        );
        // Offered more than it can send, a node ends behind by the
        // excess; what it sustained is the rate it delivered.
        (m, ok && rate >= 20_000.0)
    });
    target(
        t,
        "callbacks/s to a 0 ms endpoint, 1 node on Redis, sustained 10 s >= 20 000",
        workload(p, |p| {
            format!(
                "{}/s offered over {} s",
                fmt_count(p.sustained_rate as usize),
                p.window.as_secs()
            )
        }),
        // Two seconds are mostly the ramp (connections, the first claims):
        // too short to judge a sustained rate.
        judged(m, p.quick, true),
    );
    let m = f
        .in_flight
        .map(|b| (format!("{:.1} KiB", b / 1024.0), b <= 16.0 * 1024.0));
    target(
        t,
        "memory per callback in flight <= 16 KiB",
        workload(p, |p| {
            format!(
                "{} requests held {} s",
                fmt_count(p.in_flight),
                p.hold.as_secs()
            )
        }),
        judged(m, false, false),
    );
    let m = f.at_1k.map(|(p99, store, ok)| {
        (
            format!("{p99:.2} ms ({store}){}", failed(ok)),
            ok && p99 <= 5.0,
        )
    });
    target(
        t,
        "arrival lateness p99 at 1 000 callbacks/s <= 5 ms",
        workload(p, |p| format!("1K/s over {} s, 1 node", p.window.as_secs())),
        judged(m, false, false),
    );
}

/// The HTTP targets as a table of their own.
pub(crate) fn http_only(f: &HttpFigures, p: &HttpParams) -> Table {
    let mut intro = String::from(
        "The HTTP callbacks' targets against this run's figures (measured, never asserted; a \
         missed target never fails the run). The durable section, when it runs, shows these \
         rows in its targets table instead.",
    );
    if p.quick {
        intro.insert_str(
            0,
            "QUICK RUN: the figures come from the quick sizes; the targets are set for the full \
             sizes. ",
        );
    }
    let mut t = Table::new(
        "HTTP callbacks: targets",
        &intro,
        &["target", "workload", "measured", "met"],
    );
    rows(&mut t, f, p);
    if p.quick {
        mark_quick(&mut t);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_judge_the_figures_and_name_the_sizes() {
        let f = HttpFigures {
            burst: Some((1.5, true)),
            sustained: Some((18_000.0, 3.0, 0.02, true)),
            in_flight: Some(9_000.0),
            at_1k: Some((2.0, "Redis", false)),
        };
        let t = http_only(&f, &HttpParams::full());
        let verdicts: Vec<&str> = t.rows.iter().map(|r| r[3].as_str()).collect();
        assert_eq!(verdicts, ["yes", "no", "yes", "no"]);
        assert_eq!(t.rows[0][1], "10K callbacks, embedded store");
        assert_eq!(t.rows[3][2], "2.00 ms (Redis) (check failed)");
        // Behind at the end is shown; the delivered rate decides.
        let behind = HttpFigures {
            sustained: Some((21_000.0, 900.0, 1.6, true)),
            ..f
        };
        let t = http_only(&behind, &HttpParams::full());
        assert_eq!(t.rows[1][3], "yes");
        assert!(t.rows[1][2].contains("1600 ms behind"), "{}", t.rows[1][2]);
        let quick = http_only(&HttpFigures::default(), &HttpParams::quick());
        assert!(quick.intro.starts_with("QUICK RUN"));
        assert_eq!(
            quick.rows[0][1],
            "quick: 5K callbacks, embedded store (full: 10K callbacks, embedded store)"
        );
        assert!(quick.rows.iter().all(|r| r[2] == "not measured"));
        // A quick run's two seconds do not judge the sustained rate.
        let quick = http_only(&behind, &HttpParams::quick());
        assert_eq!(quick.rows[1][3], "quick: smaller workload");
        assert_eq!(quick.rows[2][3], "yes (quick size)");
    }

    #[test]
    fn the_durable_targets_table_carries_the_rows() {
        let f = HttpFigures {
            in_flight: Some(9_000.0),
            ..HttpFigures::default()
        };
        let p = crate::suite::DurableParams::quick();
        let plain = super::super::targets(&super::super::Figures::default(), &p, true, None);
        let hp = HttpParams::quick();
        let with =
            super::super::targets(&super::super::Figures::default(), &p, true, Some((&f, &hp)));
        assert_eq!(with.rows.len(), plain.rows.len() + 4);
        let memory = with
            .rows
            .iter()
            .find(|r| r[0].starts_with("memory per callback"));
        let memory = memory.unwrap();
        assert_eq!(
            (memory[2].as_str(), memory[3].as_str()),
            ("8.8 KiB", "yes (quick size)")
        );
    }
}
