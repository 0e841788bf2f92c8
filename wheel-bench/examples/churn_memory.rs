//! Heap bytes per pending timer while the benchmark's churn runs, for the
//! floor, the lower bound `peers::calendar::Calendar` and our wheel.
//!
//! The memory workload of the full comparison counts a queue's bytes right
//! after inserting its timers. Under churn a queue may hold more: cells or
//! pairs of cancelled timers that have not been cleared yet. This tool
//! counts the queue's live heap bytes (the connection records of the
//! workload left out) at a few step counts of one long churn, and divides
//! them by the timers pending at that moment.
//!
//! ```text
//! cargo run --release -p wheel-bench --example churn_memory -- [SIZES] [STEPS]
//! ```
//!
//! SIZES is a comma-separated list of pending-timer counts (default
//! `1000000,10000000`); STEPS a comma-separated, increasing list of the step
//! counts at which to count (default `2000000,10000000,40000000`: the
//! benchmark's 2M steps, then 40 000 ticks, longer than the 30 000-tick
//! horizon of a re-armed timer, so that the queues reach their steady
//! state). Nothing is timed. Every queue's output is checked as in the
//! benchmark; a failed check exits 1.

use wheel_bench::alloc::Counting;
use wheel_bench::example_args::{counts, DEFAULT_SIZES};
use wheel_bench::peers::calendar::Calendar;
use wheel_bench::peers::floor::Floor;
use wheel_bench::peers::wheel::OurWheel;
use wheel_bench::peers::TimerQueue;
use wheel_bench::workloads::single::{Churn, ChurnRun};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes = counts(&args, 0, &DEFAULT_SIZES, "SIZES");
    let checkpoints = counts(&args, 1, &[2_000_000, 10_000_000, 40_000_000], "STEPS");
    assert!(
        checkpoints.windows(2).all(|w| w[0] < w[1]),
        "STEPS: increasing counts"
    );
    println!(
        "churn memory: heap bytes per pending timer (the workload's connection records left out)"
    );
    let mut failed = false;
    for &n in &sizes {
        failed |= count("floor", n, &checkpoints, || Floor::with_capacity(n));
        failed |= count("calendar", n, &checkpoints, || Calendar::with_capacity(n));
        failed |= count("ours", n, &checkpoints, || OurWheel::with_capacity(n));
    }
    if failed {
        std::process::exit(1);
    }
}

/// Runs one queue's churn, printing bytes per pending timer after the fill
/// and at each checkpoint; `true` if its check failed.
fn count<Q: TimerQueue>(
    name: &str,
    n: usize,
    checkpoints: &[usize],
    make: impl FnOnce() -> Q,
) -> bool {
    let counting = Counting::start();
    let p = Churn::new(n, 0, 9_300);
    let mut run = ChurnRun::fill(make(), &p);
    let per_timer = |run: &ChurnRun<Q>| {
        let bytes = counting.live_bytes() - run.bookkeeping_bytes() as i64;
        bytes as f64 / run.pending().max(1) as f64
    };
    let mut line = format!("N={n:>9} {name:>8}: after the fill {:6.1}", per_timer(&run));
    let mut done = 0;
    for &at in checkpoints {
        run.steps(at - done);
        done = at;
        line += &format!(", after {at} steps {:6.1}", per_timer(&run));
    }
    println!("{line}");
    drop(counting);
    run.finish().0.report_failure(&format!("{name} at {n}"))
}
