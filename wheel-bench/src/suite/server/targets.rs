//! The server section's targets against the figures its runs leave in
//! [`ServerFigures`]. Measured, never asserted: a missed target says "no"
//! and never fails the run (a failed check of ours does, in its table).
//! Each row names its workload; on a quick run the full run's is named
//! beside it and every verdict says "(quick size)".

use super::tables::fleet_workload;
use super::{ServerParams, SingleServer};
use crate::report::Table;
use crate::server::SERVER_LEASE;
use crate::server::fleet::FleetRun;
use crate::server::load::{LibraryAdds, Loaded};
use crate::server::procfs::Idle;
use crate::workloads::Check;

/// What the targets read, gathered as the section runs.
#[derive(Debug, Default)]
pub struct ServerFigures {
    adds: Option<Loaded>,
    batches: Option<Loaded>,
    idle: Option<Idle>,
    lateness: Option<FleetRun>,
    kill: Option<FleetRun>,
    /// The server's one-timer adds and the library's adds of the run with
    /// the median ratio.
    pub(super) ratio: Option<(Loaded, LibraryAdds)>,
}

impl ServerFigures {
    /// The single server's figures that were measured.
    pub(super) fn single(&mut self, s: &Result<SingleServer, String>) {
        let Ok(s) = s else { return };
        self.adds = s.adds.clone().ok().flatten();
        self.batches = s.batches.clone().ok().flatten();
        self.idle = s.idle_fresh.clone().ok();
    }

    /// A fleet run: with the kill or without.
    pub(super) fn fleet(&mut self, kill: bool, r: &FleetRun) {
        if kill {
            self.kill = Some(r.clone());
        } else {
            self.lateness = Some(r.clone());
        }
    }
}

/// " (check failed)" when a run of ours did not pass its check.
fn failed(c: &Check) -> &'static str {
    if *c == Check::Passed {
        ""
    } else {
        " (check failed)"
    }
}

/// One row: what, the workload (with the full run's beside a quick one),
/// and the figure with its verdict, if measured.
fn target(
    t: &mut Table,
    p: &ServerParams,
    what: &str,
    workload: impl Fn(&ServerParams) -> String,
    m: Option<(String, bool)>,
) {
    let w = if p.quick {
        format!(
            "quick: {} (full: {})",
            workload(p),
            workload(&ServerParams::full())
        )
    } else {
        workload(p)
    };
    let (m, met) = match m {
        Some((m, ok)) => {
            let met = if ok { "yes" } else { "no" };
            let met = if p.quick {
                format!("{met} (quick size)")
            } else {
                met.into()
            };
            (m, met)
        }
        None => ("not measured".into(), "-".into()),
    };
    t.row(vec![what.into(), w, m, met]);
}

/// The one-timer load's rows.
fn add_rows(t: &mut Table, f: &ServerFigures, p: &ServerParams) {
    let load = |p: &ServerParams| {
        format!(
            "{} connections, {} s, embedded store",
            p.load.connections,
            p.load.load_for.as_secs()
        )
    };
    let adds = f.adds.as_ref().map(|a| (a, a.check()));
    let m = adds.as_ref().map(|(a, c)| {
        let rate = a.wrk.per_sec();
        (
            format!("{rate:.0}/s{}", failed(c)),
            rate >= 10_000.0 && *c == Check::Passed,
        )
    });
    target(t, p, "POST /v1/timers >= 10 000 requests/s", load, m);
    let m = match &f.ratio {
        Some((a, lib)) => {
            let c = &a.check();
            let (ours, theirs) = (a.timers_per_sec(), lib.per_sec);
            let r = ours / theirs;
            let m = format!("{r:.2}x ({ours:.0}/s ÷ {theirs:.0}/s){}", failed(c));
            Some((m, r >= 0.5 && *c == Check::Passed))
        }
        None => None,
    };
    target(
        t,
        p,
        "POST /v1/timers >= 0.5x the library's add_callback_at from 64 threads",
        |p| format!("{}; the library: as many timers", load(p)),
        m,
    );
    let m = adds.map(|(a, c)| {
        let p99 = a.wrk.p99_us as f64 / 1e3;
        (
            format!("{p99:.1} ms{}", failed(&c)),
            p99 <= 20.0 && c == Check::Passed,
        )
    });
    target(t, p, "POST /v1/timers latency p99 <= 20 ms", load, m);
    let m = f.batches.as_ref().map(|b| {
        let c = b.check();
        let rate = b.timers_per_sec();
        (
            format!("{rate:.0} timers/s{}", failed(&c)),
            rate >= 100_000.0 && c == Check::Passed,
        )
    });
    target(
        t,
        p,
        "POST /v1/timers:batch of 1 000 >= 100 000 timers/s",
        |p| {
            format!(
                "{} connections, {} s, embedded store",
                p.load.batch_connections,
                p.load.load_for.as_secs()
            )
        },
        m,
    );
}

/// The idle and callback rows.
fn other_rows(t: &mut Table, f: &ServerFigures, p: &ServerParams) {
    let idle = |p: &ServerParams| {
        format!(
            "fresh, idle {} s, watched {} s",
            p.load.settle.as_secs(),
            p.load.idle_for.as_secs()
        )
    };
    let m = f.idle.map(|i| {
        let mib = i.rss as f64 / (1u64 << 20) as f64;
        (format!("{mib:.1} MiB"), mib <= 30.0)
    });
    target(t, p, "idle server RSS <= 30 MiB", idle, m);
    let m = f
        .idle
        .map(|i| (format!("{:.2} % of a core", i.cpu * 100.0), i.cpu <= 0.005));
    target(t, p, "idle server CPU ~0 % (<= 0.5 % of a core)", idle, m);
    let m = f.lateness.as_ref().and_then(|r| {
        let x = &r.tally;
        let p99 = x.lateness_ms(99.0)?;
        let c = r.check();
        let m = format!(
            "{p99:.2} ms, {} early, {} lost, {} duplicates",
            x.early,
            x.lost_cell(),
            x.duplicates_cell()
        );
        Some((
            m,
            p99 <= 5.0 && c == Check::Passed && x.duplicates == 0 && x.not_sent == 0,
        ))
    });
    target(
        t,
        p,
        "callback lateness p99 at 1 000/s, 2 servers on one Redis <= 5 ms, 0 early/lost/dup",
        |p| fleet_workload(&p.lateness),
        m,
    );
    let m = f.kill.as_ref().and_then(|r| {
        let x = &r.tally;
        let max = r.max_late_ms()?;
        let within = max <= (SERVER_LEASE.as_secs_f64() + 1.0) * 1e3;
        let m = format!(
            "latest {:.2} s late ({} taken over), {} lost, {} early, lease {} s",
            max / 1e3,
            r.taken_over(),
            x.lost_cell(),
            x.early,
            SERVER_LEASE.as_secs()
        );
        Some((m, within && r.check() == Check::Passed && x.not_sent == 0))
    });
    target(
        t,
        p,
        "1 of 2 servers SIGKILLed: 0 lost, 0 early, its timers back within lease + 1 s",
        |p| fleet_workload(&p.kill),
        m,
    );
}

/// The section's targets table.
pub(super) fn table(f: &ServerFigures, p: &ServerParams) -> Table {
    let mut intro = String::from(
        "wheel-server's targets against this run's figures (measured, never asserted; a missed \
         target never fails the run), each with the workload it was measured on. \"not \
         measured\": wrk or redis-server was missing, or the run failed (its table says why).",
    );
    if p.quick {
        intro.insert_str(
            0,
            "QUICK RUN: the figures come from the quick sizes (the workload column names them and \
             the full run's); the targets are set for the full sizes. ",
        );
    }
    let title = if p.quick {
        "Server: targets, at the quick run's sizes"
    } else {
        "Server: targets"
    };
    let mut t = Table::new(title, &intro, &["target", "workload", "measured", "met"]);
    add_rows(&mut t, f, p);
    other_rows(&mut t, f, p);
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::http::tally::Tally;
    use crate::server::wrk::WrkResult;
    use std::time::Duration;

    fn loaded(per_request: usize, rate: u64, p99_us: u64) -> Loaded {
        let requests = rate * 5;
        Loaded {
            wrk: WrkResult {
                requests,
                expected: requests,
                duration_us: 5_000_000,
                p99_us,
                ..WrkResult::default()
            },
            per_request,
            stored: Some(requests * per_request as u64),
        }
    }

    fn fleet(lateness_ms: &[i64], lost: usize) -> FleetRun {
        FleetRun {
            tally: Tally {
                expected: lateness_ms.len() + lost,
                received: lateness_ms.len(),
                lost,
                lateness: lateness_ms.iter().map(|ms| ms * 1_000_000).collect(),
                ..Tally::default()
            },
            adding: Duration::ZERO,
            killed_at: None,
        }
    }

    fn figures() -> ServerFigures {
        ServerFigures {
            adds: Some(loaded(1, 12_000, 15_000)),
            ratio: Some((
                loaded(1, 12_000, 15_000),
                LibraryAdds {
                    timers: 60_000,
                    threads: 64,
                    per_sec: 30_000.0,
                },
            )),
            batches: Some(loaded(1_000, 90, 400_000)),
            idle: Some(Idle {
                rss: 20 << 20,
                cpu: 0.001,
                window: Duration::from_secs(5),
            }),
            lateness: Some(fleet(&[1, 2, 3, 4], 0)),
            kill: Some(fleet(&[1, 2, 5_600, 6_300], 0)),
        }
    }

    fn verdicts(t: &Table) -> Vec<&str> {
        t.rows.iter().map(|r| r[3].as_str()).collect()
    }

    #[test]
    fn targets_judge_the_figures() {
        let t = table(&figures(), &ServerParams::full());
        assert_eq!(t.title, "Server: targets");
        assert_eq!(
            verdicts(&t),
            ["yes", "no", "yes", "no", "yes", "yes", "yes", "no"]
        );
        assert_eq!(t.rows[0][2], "12000/s");
        assert_eq!(t.rows[1][2], "0.40x (12000/s ÷ 30000/s)");
        assert_eq!(t.rows[3][2], "90000 timers/s");
        assert_eq!(t.rows[5][2], "0.10 % of a core");
        assert!(
            t.rows[7][2].starts_with("latest 6.30 s late (2 taken over)"),
            "{}",
            t.rows[7][2]
        );
        assert_eq!(t.rows[0][1], "64 connections, 15 s, embedded store");
    }

    #[test]
    fn a_lost_callback_or_a_failed_check_misses_the_target() {
        let mut f = figures();
        f.lateness = Some(fleet(&[1, 2], 1));
        f.kill = Some(fleet(&[1, 2, 5_000], 1));
        if let Some(a) = f.adds.as_mut() {
            a.wrk.errors[1] = 1;
        }
        let t = table(&f, &ServerParams::full());
        assert_eq!(t.rows[0][3], "no");
        assert_eq!(t.rows[0][2], "12000/s (check failed)");
        assert_eq!((t.rows[6][3].as_str(), t.rows[7][3].as_str()), ("no", "no"));
    }

    #[test]
    fn a_quick_run_names_both_sizes_and_missing_figures_are_not_measured() {
        let t = table(&ServerFigures::default(), &ServerParams::quick());
        assert!(t.intro.starts_with("QUICK RUN") && t.title.contains("quick"));
        assert!(t.rows.iter().all(|r| r[2] == "not measured" && r[3] == "-"));
        assert_eq!(
            t.rows[0][1],
            "quick: 64 connections, 5 s, embedded store (full: 64 connections, 15 s, embedded store)"
        );
        let t = table(&figures(), &ServerParams::quick());
        assert_eq!(t.rows[0][3], "yes (quick size)");
        assert_eq!(t.rows[1][3], "no (quick size)");
    }
}
