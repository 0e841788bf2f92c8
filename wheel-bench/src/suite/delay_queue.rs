//! The `DelayQueue` section: insert+take and insert+remove for our queue and
//! tokio-util's, each used by one owner and shared.

use super::{Progress, Results, Settings, fmt_count};
use crate::report::{Table, ns, ratio};
use crate::stats::median;
use crate::workloads::Check;
use crate::workloads::delay_queue::{DqPeer, TAKE_SPAN_MS};
use crate::workloads::single::SPAN;
use std::collections::HashMap;

/// Items a `DelayQueue` measurement covers at least, per queue: small
/// sizes get more runs (a 10K run lasts well under a millisecond, so five of
/// them are at the mercy of one interrupt or one slow stretch of the
/// machine; a hundred alternated runs are not).
pub const DQ_MIN_ITEMS: usize = 1_000_000;

/// Runs of a `DelayQueue` measurement at `n` items: at least `runs`, and
/// enough to cover [`DQ_MIN_ITEMS`].
pub fn dq_runs_for(n: usize, runs: usize) -> usize {
    match n {
        0 => runs,
        n => runs.max(DQ_MIN_ITEMS.div_ceil(n)),
    }
}

/// (queue, items, workload: 0 insert+take, 1 insert+remove) -> median ns per item.
type Medians = HashMap<(DqPeer, usize, usize), f64>;

/// The two workloads' names, by their index in [`Medians`].
const WORKLOADS: [&str; 2] = ["insert+take", "insert+remove"];

/// Run the `DelayQueue` comparison.
pub fn run_delay_queue(s: &Settings, progress: &Progress, results: &mut Results) {
    let mut header: Vec<String> = vec!["implementation".into()];
    for &n in &s.dq_sizes {
        for what in WORKLOADS {
            header.push(format!("{what} N={}", fmt_count(n)));
            header.push("vs ours".into());
        }
    }
    header.push("check".into());
    let mut t = Table {
        title: "DelayQueue (ns per item)".into(),
        intro: format!(
            "insert+take: insert N items with delays rising evenly from 1 to {TAKE_SPAN_MS} ms, move the \
             clock past the last (not timed), take all without blocking (checked: each once, in deadline \
             order, none before due). insert+remove: insert N items due over 1..={SPAN} ms, remove all in a \
             random order. Both queues run on a clock moved by hand: ours on `wheel::ManualClock`, \
             tokio-util's on a paused tokio clock. Each queue is used two ways: by one owner (`&mut`: \
             ours through `DelayQueue::exclusive`, without its lock; tokio-util's as it always is) and \
             shared (`&self`: ours through its own methods, each taking its lock; tokio-util's inside a \
             `std::sync::Mutex`). \"vs ours\" compares with our queue used the same way. Median of the \
             runs ({}) after an untimed warm-up run, the four runs alternated.",
            dq_runs_text(s)
        ),
        header,
        rows: Vec::new(),
        notes: Vec::new(),
    };
    let mut medians = Medians::new();
    let mut checks: HashMap<DqPeer, Check> = HashMap::new();
    for &n in &s.dq_sizes {
        for what in 0..WORKLOADS.len() {
            measure(s, progress, n, what, &mut medians, &mut checks);
        }
    }
    for peer in DqPeer::ALL {
        let mut row = vec![peer.name().to_string()];
        for &n in &s.dq_sizes {
            for what in 0..WORKLOADS.len() {
                let m = medians[&(peer, n, what)];
                let ours = medians[&(peer.compared_with(), n, what)];
                row.push(ns(m));
                row.push(ratio(m, ours));
            }
        }
        row.push(checks.remove(&peer).unwrap_or(Check::NotApplicable).label());
        t.row(row);
    }
    results.tables.push(t);
}

/// Runs workload `what` at `n` items on every queue into `medians`,
/// folding the runs' checks into `checks`. The queues' runs are
/// alternated, so that each ratio compares the same stretch of the
/// machine's (drifting) speed.
fn measure(
    s: &Settings,
    progress: &Progress,
    n: usize,
    what: usize,
    medians: &mut Medians,
    checks: &mut HashMap<DqPeer, Check>,
) {
    let run = |peer: DqPeer, seed: u64| {
        if what == 0 {
            peer.insert_take(n)
        } else {
            peer.insert_remove(n, seed)
        }
    };
    let mut samples: HashMap<DqPeer, Vec<f64>> = HashMap::new();
    // One untimed warm-up run first, as for the single-threaded
    // workloads: a 10K run lasts under a millisecond, so a cold
    // allocator (fresh pages) would otherwise weigh on it.
    for peer in DqPeer::ALL {
        fold_check(checks, peer, run(peer, 80).check);
    }
    let runs = dq_runs_for(n, s.dq_runs);
    for r in 0..runs {
        for peer in DqPeer::ALL {
            let o = run(peer, 81 + r as u64);
            samples.entry(peer).or_default().push(o.ns_per_item);
            fold_check(checks, peer, o.check);
        }
    }
    for (peer, v) in samples {
        let m = median(&v);
        progress.say(format!(
            "DelayQueue {} N={} {}: median of {runs} runs: {} ns/item",
            WORKLOADS[what],
            fmt_count(n),
            peer.name(),
            ns(m)
        ));
        medians.insert((peer, n, what), m);
    }
}

/// How many runs each `DelayQueue` median takes, for the table's intro.
fn dq_runs_text(s: &Settings) -> String {
    let parts: Vec<String> = s
        .dq_sizes
        .iter()
        .map(|&n| format!("{} at N={}", dq_runs_for(n, s.dq_runs), fmt_count(n)))
        .collect();
    format!(
        "{}: at least {}, and enough to cover {} items",
        parts.join(", "),
        s.dq_runs,
        fmt_count(DQ_MIN_ITEMS)
    )
}

/// Merges `check` into `peer`'s check so far (none yet counts as passed).
fn fold_check(checks: &mut HashMap<DqPeer, Check>, peer: DqPeer, check: Check) {
    let so_far = checks.remove(&peer).unwrap_or(Check::Passed);
    checks.insert(peer, so_far.merge(check));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_delay_queue_sizes_get_more_runs() {
        assert_eq!(dq_runs_for(10_000, 5), 100);
        assert_eq!(dq_runs_for(1_000_000, 5), 5);
        assert_eq!(dq_runs_for(3_000_000, 5), 5);
        assert_eq!(dq_runs_for(300_000, 3), 4);
        assert_eq!(dq_runs_for(0, 3), 3);
        let mut s = Settings::quick();
        s.dq_sizes = vec![10_000, 1_000_000];
        s.dq_runs = 5;
        assert_eq!(
            dq_runs_text(&s),
            "100 at N=10K, 5 at N=1M: at least 5, and enough to cover 1M items"
        );
    }
}
