//! The single-threaded section: insert+cancel, insert+expire and churn for
//! every implementation and size, one table and one chart panel each.
//!
//! Our wheel and the floor are measured together, their runs alternated
//! (ours, floor, ours, floor, ...): the targets are ratios of the two, and a
//! machine's speed can drift within minutes, so two medians taken seconds
//! apart could each catch a different state.

use super::{GIB, Progress, Results, Settings, fmt_count};
use crate::chart::{Panel, Series};
use crate::peers::Peer;
use crate::report::{Table, ns, ratio};
use crate::stats::median;
use crate::workloads::Check;
use crate::workloads::single::{self, CHURN_MAX, CHURN_MIN, Churn, Inputs, SPAN, STEPS_PER_TICK};
use std::collections::HashMap;

/// The single-threaded workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// insert+cancel.
    InsertCancel,
    /// insert+expire.
    InsertExpire,
    /// churn.
    Churn,
}

impl Workload {
    /// All three, in table order.
    pub const ALL: [Workload; 3] = [
        Workload::InsertCancel,
        Workload::InsertExpire,
        Workload::Churn,
    ];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::InsertCancel => "insert+cancel",
            Workload::InsertExpire => "insert+expire",
            Workload::Churn => "churn",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Workload::InsertCancel => "ns per insert+cancel pair",
            Workload::InsertExpire => "ns per timer (insert, then fired)",
            Workload::Churn => "ns per churn step (one cancel + one insert)",
        }
    }

    fn seed(self, n: usize) -> u64 {
        ((self as u64 + 1) * 1_000_003) ^ n as u64
    }

    /// One run of this workload on `peer` with `n` timers.
    pub fn run_once(
        self,
        peer: Peer,
        n: usize,
        settings: &Settings,
        inputs: Option<&Inputs>,
    ) -> single::Outcome {
        match self {
            Workload::InsertCancel => {
                let inputs = inputs.expect("inputs drawn");
                crate::with_peer!(peer, n, |q| single::insert_cancel(q, inputs))
            }
            Workload::InsertExpire => {
                let inputs = inputs.expect("inputs drawn");
                crate::with_peer!(peer, n, |q| single::insert_expire(q, inputs))
            }
            Workload::Churn => {
                let p = Churn::new(n, settings.churn_steps, self.seed(n));
                crate::with_peer!(peer, n, |q| single::churn(q, &p))
            }
        }
    }
}

/// One table cell of a single-threaded workload.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Median ns per op, if run.
    pub ns: Option<f64>,
    /// Why it was skipped.
    pub skipped: Option<String>,
    /// Merged check of the runs.
    pub check: Check,
}

/// Up to this many timers each measurement starts with one untimed run.
const WARM_UP_MAX_N: usize = 1_000_000;

/// For each implementation, the size last run and the wall time of its
/// longest run there, to estimate the next size's.
type LastRuns = HashMap<Peer, (usize, f64)>;

/// One workload at one size, with its inputs drawn.
struct Point<'a> {
    w: Workload,
    n: usize,
    inputs: Option<&'a Inputs>,
}

impl Point<'_> {
    /// "churn N=1M wheel::Wheel (ours)" for the progress lines.
    fn label(&self, peer: Peer) -> String {
        format!("{} N={} {}", self.w.name(), fmt_count(self.n), peer.name())
    }
}

/// Run insert+cancel, insert+expire and churn for every peer and size.
pub fn run_single(s: &Settings, progress: &Progress, results: &mut Results) {
    // Peers measured together, in table order (the floor goes with ours).
    let groups: Vec<Vec<Peer>> = Peer::ALL
        .iter()
        .filter(|&&p| p != Peer::Floor)
        .map(|&p| {
            if p == Peer::Wheel {
                vec![Peer::Wheel, Peer::Floor]
            } else {
                vec![p]
            }
        })
        .collect();
    for w in Workload::ALL {
        let mut last = LastRuns::new();
        for &n in &s.sizes {
            let inputs = match w {
                Workload::Churn => None,
                _ => Some(Inputs::new(n, w.seed(n))),
            };
            let point = Point {
                w,
                n,
                inputs: inputs.as_ref(),
            };
            for group in &groups {
                let peers = not_skipped(s, progress, results, &point, group, &last);
                let cells = measure(s, progress, &point, &peers);
                for (&peer, (cell, wall)) in peers.iter().zip(cells) {
                    last.insert(peer, (n, wall));
                    results.single.insert((w, peer, n), cell);
                }
            }
        }
        results.tables.push(single_table(s, results, w));
        results.panels.push(single_panel(s, results, w));
    }
}

/// The peers of `group` to run at `point`; the others get a skipped cell.
fn not_skipped(
    s: &Settings,
    progress: &Progress,
    results: &mut Results,
    point: &Point,
    group: &[Peer],
    last: &LastRuns,
) -> Vec<Peer> {
    let mut peers = Vec::new();
    for &peer in group {
        let Some(why) = skip_reason(s, results, peer, point.n, last.get(&peer).copied()) else {
            peers.push(peer);
            continue;
        };
        progress.say(format!("{}: skipped ({why})", point.label(peer)));
        results.single.insert(
            (point.w, peer, point.n),
            Cell {
                ns: None,
                skipped: Some(why),
                check: Check::NotApplicable,
            },
        );
    }
    peers
}

/// Runs `peers` at `point`, their runs alternated, and returns each one's
/// cell and the wall time of its longest run.
fn measure(s: &Settings, progress: &Progress, point: &Point, peers: &[Peer]) -> Vec<(Cell, f64)> {
    let (w, n) = (point.w, point.n);
    let runs = if n > 1_000_000 { s.runs_large } else { s.runs };
    if n <= WARM_UP_MAX_N {
        // Untimed: whoever runs first would otherwise pay for the
        // allocator's first touch of fresh pages.
        for &peer in peers {
            let o = w.run_once(peer, n, s, point.inputs);
            let label = point.label(peer);
            progress.say(format!("{label}: warm-up: {} ns/op", ns(o.ns_per_op)));
        }
    }
    let mut samples = vec![Vec::with_capacity(runs); peers.len()];
    let mut checks: Vec<Option<Check>> = vec![None; peers.len()];
    let mut walls = vec![0.0f64; peers.len()];
    for r in 0..runs {
        for (i, &peer) in peers.iter().enumerate() {
            let o = w.run_once(peer, n, s, point.inputs);
            samples[i].push(o.ns_per_op);
            walls[i] = walls[i].max(o.wall.as_secs_f64());
            checks[i] = Some(match checks[i].take() {
                None => o.check,
                Some(c) => c.merge(o.check),
            });
            let label = point.label(peer);
            progress.say(format!(
                "{label}: run {}/{runs}: {} ns/op",
                r + 1,
                ns(o.ns_per_op)
            ));
        }
    }
    samples
        .iter()
        .zip(checks)
        .zip(walls)
        .map(|((samples, check), wall)| {
            let cell = Cell {
                ns: Some(median(samples)),
                skipped: None,
                check: check.unwrap_or(Check::NotApplicable),
            };
            (cell, wall)
        })
        .collect()
}

/// Why a run of `peer` at `n` timers should be skipped, if it should.
fn skip_reason(
    s: &Settings,
    results: &Results,
    peer: Peer,
    n: usize,
    last: Option<(usize, f64)>,
) -> Option<String> {
    if let Some((bytes, _)) = results.memory.get(&peer) {
        let need = bytes * n as f64;
        if need > s.max_bytes {
            return Some(format!(
                "est. {:.1} GiB > {:.0} GiB",
                need / GIB,
                s.max_bytes / GIB
            ));
        }
    }
    if let Some((prev_n, prev_wall)) = last {
        // Scale the previous size's run time, with a margin for cache effects.
        let est = prev_wall * n as f64 / prev_n as f64 * 1.3;
        if est > s.max_run_secs {
            return Some(format!("est. {est:.0} s per run > {:.0} s", s.max_run_secs));
        }
    }
    None
}

/// The table of workload `w`: a row per implementation, a column pair
/// (figure, ratio to ours) per size, and our ratio to the floor under it.
fn single_table(s: &Settings, results: &Results, w: Workload) -> Table {
    let mut header: Vec<String> = vec!["implementation".into()];
    for &n in &s.sizes {
        header.push(format!("N={}", fmt_count(n)));
        header.push("vs ours".into());
    }
    header.push("check".into());
    let mut t = Table {
        title: format!("{} ({})", w.name(), w.unit()),
        intro: single_intro(s, w),
        header,
        rows: Vec::new(),
        notes: Vec::new(),
    };
    for peer in Peer::ALL {
        t.row(single_row(s, results, w, peer));
    }
    let floors: Vec<String> = s
        .sizes
        .iter()
        .filter_map(|&n| {
            let ours = results.single.get(&(w, Peer::Wheel, n))?.ns?;
            let floor = results.single.get(&(w, Peer::Floor, n))?.ns?;
            Some(format!("{:.2}x at {}", ours / floor, fmt_count(n)))
        })
        .collect();
    if !floors.is_empty() {
        t.notes.push(format!("ours / floor: {}", floors.join(", ")));
    }
    t.notes
        .push("\"vs ours\" is the implementation's cost divided by ours: above 1.00x means slower than ours.".into());
    t
}

/// What workload `w` does, for its table.
fn single_intro(s: &Settings, w: Workload) -> String {
    match w {
        Workload::InsertCancel => format!(
            "N timers due uniformly over 1..={SPAN} ticks (1 tick = 1 ms), all cancelled in a random order, \
             then the clock moved past the last deadline (nothing may fire; lazy designs pay for their \
             tombstones there). Median of {}; {}.",
            runs_text(s),
            w.unit()
        ),
        Workload::InsertExpire => format!(
            "N timers due uniformly over 1..={SPAN} ticks, then one advance to {SPAN} firing all; checked: \
             each fired once, in deadline order. Median of {}; {}.",
            runs_text(s),
            w.unit()
        ),
        Workload::Churn => format!(
            "N pending connection timeouts; each step cancels a random connection's timer and re-arms it \
             {CHURN_MIN}..={CHURN_MAX} ticks ahead; the clock moves one tick every {STEPS_PER_TICK} steps, \
             firing what is due (checked: not early, not stale, nothing due left). {} steps timed per run, \
             median of {}; {}.",
            fmt_count(s.churn_steps),
            runs_text(s),
            w.unit()
        ),
    }
}

/// `peer`'s row in the table of workload `w`.
fn single_row(s: &Settings, results: &Results, w: Workload, peer: Peer) -> Vec<String> {
    let mut row = vec![peer.name().to_string()];
    let mut check = Check::Passed;
    let mut any = false;
    for &n in &s.sizes {
        let ours = results
            .single
            .get(&(w, Peer::Wheel, n))
            .and_then(|c| c.ns)
            .unwrap_or(f64::NAN);
        match results.single.get(&(w, peer, n)) {
            Some(Cell {
                ns: Some(v),
                check: c,
                ..
            }) => {
                row.push(ns(*v));
                row.push(ratio(*v, ours));
                check = check.merge(c.clone());
                any = true;
            }
            Some(Cell {
                skipped: Some(why), ..
            }) => {
                row.push(format!("skipped: {why}"));
                row.push("-".into());
            }
            _ => {
                row.push("-".into());
                row.push("-".into());
            }
        }
    }
    if !any {
        check = Check::NotApplicable;
    }
    row.push(check.label());
    row
}

fn single_panel(s: &Settings, results: &Results, w: Workload) -> Panel {
    Panel {
        title: format!("{} (ns/op)", w.name()),
        series: Peer::ALL
            .iter()
            .map(|&peer| Series {
                name: peer.name().to_string(),
                points: s
                    .sizes
                    .iter()
                    .filter_map(|&n| Some((n as f64, results.single.get(&(w, peer, n))?.ns?)))
                    .collect(),
            })
            .collect(),
    }
}

/// "5 runs after an untimed warm-up run, ..." for the table intros.
fn runs_text(s: &Settings) -> String {
    let big = s.sizes.iter().any(|&n| n > WARM_UP_MAX_N);
    let runs = if big {
        format!(
            "{} runs after an untimed warm-up run ({} runs, no warm-up, above 1M timers)",
            s.runs, s.runs_large
        )
    } else {
        format!("{} runs after an untimed warm-up run", s.runs)
    };
    format!("{runs}, ours and the floor's runs alternated")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_by_memory_and_by_time() {
        let s = Settings::quick();
        let mut r = Results::default();
        r.memory.insert(Peer::Hhwt, (1000.0, Check::Passed));
        assert!(
            skip_reason(&s, &r, Peer::Hhwt, 10_000_000, None)
                .unwrap()
                .contains("GiB")
        );
        assert!(skip_reason(&s, &r, Peer::Wheel, 10_000_000, None).is_none());
        let why = skip_reason(&s, &r, Peer::Wheel, 10_000_000, Some((1_000_000, 10.0)));
        assert!(why.unwrap().contains("> 60 s"));
        assert!(skip_reason(&s, &r, Peer::Wheel, 10_000_000, Some((1_000_000, 1.0))).is_none());
    }
}
