//! The memory section: live heap bytes per pending timer, right after the
//! timers were inserted and after a long churn.

use super::{Progress, Results, Settings, fmt_count};
use crate::peers::Peer;
use crate::report::{Table, ratio};
use crate::workloads::Check;
use crate::workloads::single::{self, CHURN_MAX, Churn, Inputs, STEPS_PER_TICK};

/// Churn steps before the full run's figures after a long churn: 40 000
/// ticks, longer than the 30 000-tick horizon of a re-armed timer, so
/// that every timer armed by the fill has come due or been cancelled and
/// the queues hold what a steady churn leaves in them.
pub const FULL_CHURN_MEMORY_STEPS: usize = 40_000_000;

/// The `--quick` run's count: a tenth of the full run's, as for its timed
/// churn, so that the section stays a few seconds. Its 4 000 ticks are short
/// of the horizon: a queue whose leftovers build up over the whole horizon
/// shows less than in the full run.
pub const QUICK_CHURN_MEMORY_STEPS: usize = FULL_CHURN_MEMORY_STEPS / 10;

/// The implementations also counted after a long churn: ours, and the floor
/// as the reference. The peers are left out: their churn steps at 1M timers
/// cost several times ours, the more so for the lazy heap as its tombstones
/// pile up, so tens of millions of them would add minutes to every run.
const AFTER_CHURN: [Peer; 2] = [Peer::Wheel, Peer::Floor];

/// Seed of the draws of the churn before the figures after a long churn.
const CHURN_SEED: u64 = 9_300;

/// Measures every implementation's bytes per pending timer right after
/// filling, then ours and the floor's after a long churn, into one
/// table. "vs ours" compares with our wheel in the same state.
pub fn run_memory(s: &Settings, progress: &Progress, results: &mut Results) {
    let n = s.memory_n;
    let mut table = Table::new(
        &format!(
            "Memory: live heap bytes per pending timer ({} timers, u64 payload)",
            fmt_count(n)
        ),
        &intro(s),
        &["implementation", "bytes/timer", "vs ours", "check"],
    );
    let inputs = Inputs::new(n, 4_000_037);
    let mut ours = f64::NAN;
    for peer in Peer::ALL {
        progress.say(format!("memory {}: {}", fmt_count(n), peer.name()));
        let (bytes, check) = crate::with_peer_maker!(peer, n, |make| single::memory(make, &inputs));
        ours = if peer == Peer::Wheel { bytes } else { ours };
        table.row(row(peer.name(), bytes, ours, &check));
        results.memory.insert(peer, (bytes, check));
    }
    let p = Churn::new(n, s.churn_memory_steps, CHURN_SEED);
    let mut ours = f64::NAN;
    for peer in AFTER_CHURN {
        let name = format!("{}, after a long churn", peer.name());
        let steps = fmt_count(p.steps);
        progress.say(format!("memory {}: {name} ({steps} steps)", fmt_count(n)));
        let (bytes, check) =
            crate::with_peer_maker!(peer, n, |make| single::churn_memory(make, &p));
        ours = if peer == Peer::Wheel { bytes } else { ours };
        table.row(row(&name, bytes, ours, &check));
    }
    results.tables.push(table);
}

/// One row of the memory table.
fn row(name: &str, bytes: f64, ours: f64, check: &Check) -> Vec<String> {
    vec![
        name.to_string(),
        format!("{bytes:.1}"),
        ratio(bytes, ours),
        check.label(),
    ]
}

/// What the memory table's figures are.
fn intro(s: &Settings) -> String {
    format!(
        "Bytes allocated minus bytes freed while the structure was built and filled, divided by the \
         number of timers (counting global allocator). Caller-side handles are not counted. Structures \
         that can be pre-sized were (`with_capacity`); `BTreeMap` and hhwt cannot be. \"After a long \
         churn\": the same count over building, filling and then {} steps of the churn workload (below) \
         with as many connections, {} ticks of its clock against the {CHURN_MAX} ticks a re-armed timer \
         may wait; the workload's own connection records are left out, and the bytes are divided by the \
         timers pending at the end. Cancelled timers a structure has not cleared yet show there. Only \
         ours and the floor are counted after the churn: the peers' churn steps are too slow for that \
         many. \"vs ours\" compares with our wheel in the same state.",
        fmt_count(s.churn_memory_steps),
        s.churn_memory_steps / STEPS_PER_TICK as usize,
    )
}
