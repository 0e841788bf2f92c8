//! The churn workload on the floor, the lower bound `peers::calendar::Calendar`
//! (pre-sized, `Calendar::presized`, so that its ring never grows while
//! timed) and our wheel, their steps interleaved: all three queues are filled first,
//! then their steps run in parts, in the order floor, calendar, ours, floor,
//! calendar, ours, ..., floor. Each part of the calendar and of ours is
//! compared with the mean of the floor's parts just before and just after it.
//! This machine's speed drifts by up to 1.5x within minutes; runs of a whole
//! queue one after another (as in `churn_bound`) see different stretches of
//! it, parts a few dozen milliseconds apart see nearly the same.
//!
//! ```text
//! cargo run --release -p wheel-bench --example churn_interleaved -- [SIZES] [ROUNDS] [PARTS] [PART] [CLOCK]
//! ```
//!
//! SIZES is a comma-separated list of pending-timer counts (default
//! `1000000,10000000`), ROUNDS the rounds per size (default 2), PARTS the
//! parts per queue (default 8) and PART the steps per part (default 250 000):
//! by default each queue runs the 2 000 000 steps the full comparison times.
//! CLOCK is `moving` (the default: the benchmark's churn) or `frozen`: each
//! queue is wrapped in `peers::frozen::Frozen`, which drops every `advance`,
//! so nothing fires and every step is one cancel and one insert, in the
//! same loop. The two modes together tell how much of a ratio is the firing
//! and how much the cancels and inserts. (A frozen run's output is not
//! checked: the timers that come due are never fired.)
//!
//! Per round it prints, for the calendar and ours:
//! - `whole`: all their parts' time over the floor's (the mean of the two
//!   floor parts around each part, summed), the figure comparable to the
//!   full comparison's churn ratio, which times the same steps in one go;
//! - `median`: the median of the parts' ratios, which leaves out a cost paid
//!   once (such as a growing arena) and a stretch of drift;
//! - for ours, each part's ratio in order.
//!
//! Every queue's output is checked as in the benchmark (none early, none
//! stale, no cancel missed, nothing due left); a failed check exits 1.

use wheel_bench::example_args::{count, frozen_clock, sizes_and_rounds};
use wheel_bench::peers::calendar::Calendar;
use wheel_bench::peers::floor::Floor;
use wheel_bench::peers::frozen::Frozen;
use wheel_bench::peers::wheel::OurWheel;
use wheel_bench::peers::TimerQueue;
use wheel_bench::workloads::single::{Churn, ChurnRun};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (sizes, rounds) = sizes_and_rounds(&args, 2);
    let parts = count(&args, 2, 8, "PARTS");
    let part = count(&args, 3, 250_000, "PART");
    assert!(parts > 0 && part > 0, "PARTS and PART: at least 1");
    let frozen = frozen_clock(&args, 4);
    let clock = if frozen {
        "clock frozen, nothing fires"
    } else {
        "clock moving"
    };
    println!("churn interleaved ({clock}): {parts} parts of {part} steps per queue; time as a ratio to the floor's");
    let mut failed = false;
    for &n in &sizes {
        for round in 0..rounds {
            let p = Churn::new(n, parts * part, 9_100 + round as u64);
            let (floor, cal, ours) = (
                Floor::with_capacity(n),
                Calendar::presized(n),
                OurWheel::with_capacity(n),
            );
            let line = if frozen {
                interleave(Frozen(floor), Frozen(cal), Frozen(ours), &p, parts, part)
            } else {
                interleave(floor, cal, ours, &p, parts, part)
            };
            let Ok(line) = line else {
                failed = true;
                continue;
            };
            println!("N={n:>9} round {round}: {line}");
        }
    }
    if failed {
        std::process::exit(1);
    }
}

/// Fills the three queues, runs their parts in turn and returns the
/// round's line; `Err` if the calendar's or our check failed (reported on
/// stderr).
fn interleave<F: TimerQueue, C: TimerQueue, O: TimerQueue>(
    floor: F,
    cal: C,
    ours: O,
    p: &Churn,
    parts: usize,
    part: usize,
) -> Result<String, ()> {
    let mut floor = ChurnRun::fill(floor, p);
    let mut cal = ChurnRun::fill(cal, p);
    let mut ours = ChurnRun::fill(ours, p);
    let mut before = floor.steps(part).as_secs_f64();
    let (mut floor_sum, mut cal_ratios, mut our_ratios) = (0.0, Vec::new(), Vec::new());
    let (mut cal_sum, mut our_sum) = (0.0, 0.0);
    for _ in 0..parts {
        let c = cal.steps(part).as_secs_f64();
        let o = ours.steps(part).as_secs_f64();
        let after = floor.steps(part).as_secs_f64();
        let f = (before + after) / 2.0;
        (floor_sum, cal_sum, our_sum) = (floor_sum + f, cal_sum + c, our_sum + o);
        cal_ratios.push(c / f);
        our_ratios.push(o / f);
        before = after;
    }
    let each: Vec<String> = our_ratios.iter().map(|r| format!("{r:.2}")).collect();
    let line = format!(
        "floor {:6.1} ns per step; calendar whole {:.2}x median {:.2}x; ours whole {:.2}x median {:.2}x (parts: {})",
        floor_sum * 1e9 / (parts * part) as f64,
        cal_sum / floor_sum,
        median(&mut cal_ratios),
        our_sum / floor_sum,
        median(&mut our_ratios),
        each.join(" "),
    );
    let n = p.pending;
    let cal_failed = cal.finish().0.report_failure(&format!("calendar at {n}"));
    let our_failed = ours.finish().0.report_failure(&format!("ours at {n}"));
    if cal_failed || our_failed {
        Err(())
    } else {
        Ok(line)
    }
}

/// The median of `v` (the upper one of an even count).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
