//! The churn workload on three queues, their runs alternated: the lower bound
//! `peers::calendar::Calendar` (pre-sized, `Calendar::presized`), the floor,
//! and our wheel, each as a ratio to
//! the floor of the same round. It asks whether a flat ratio from 1M to 10M
//! pending timers is within reach of any timer (`docs/benchmarks.md`,
//! "Eighth session").
//!
//! ```text
//! cargo run --release -p wheel-bench --example churn_bound -- [SIZES] [ROUNDS] [STEPS] [ONLY [CLOCK]]
//! ```
//!
//! SIZES is a comma-separated list of pending-timer counts (default
//! `1000000,10000000`), ROUNDS the rounds per size (default 3), STEPS the
//! churn steps timed per run (default 2 000 000, as the full comparison).
//! Every run checks its output (none early, none twice, none lost) for the
//! calendar and our wheel. Under each round, the time of the calendar and of
//! ours is split into firing (inside `advance`, the callbacks included; the
//! floor fires nothing) and the rest (cancels and inserts), with the rest as
//! a ratio to the floor.
//!
//! ONLY (`calendar`, `floor` or `ours`) runs that queue alone and prints its
//! time per step without ratios: one queue per process, for a profiler that
//! counts the timed steps (`workloads::single::churn_steps`) of one queue,
//! as in `docs/benchmarks.md`, "Eleventh session". After ONLY, CLOCK
//! (`moving`, the default, or `frozen`) can wrap that queue in
//! `peers::frozen::Frozen`, which drops every `advance`: nothing fires and
//! every step is one cancel and one insert, so that a profiler can count
//! the same steps without the firing ("Seventeenth session"). A frozen
//! run's output is not checked.

use wheel_bench::example_args::{count, frozen_clock, sizes_and_rounds};
use wheel_bench::peers::calendar::Calendar;
use wheel_bench::peers::floor::Floor;
use wheel_bench::peers::frozen::Frozen;
use wheel_bench::peers::wheel::OurWheel;
use wheel_bench::peers::TimerQueue;
use wheel_bench::workloads::single::{churn, per_op, Churn, Outcome};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (sizes, rounds) = sizes_and_rounds(&args, 3);
    let steps = count(&args, 2, 2_000_000, "STEPS");
    if let Some(only) = args.get(3) {
        run_alone(only, frozen_clock(&args, 4), &sizes, rounds, steps);
        return;
    }
    println!("churn, {steps} steps timed per run; ns per step (ratio to the floor of the round)");
    let mut failed = false;
    for &n in &sizes {
        for round in 0..rounds {
            let [cal, floor, ours] =
                QUEUES.map(|name| run(name, n, steps, round, false, &mut failed));
            let f = floor.ns_per_op;
            println!(
                "N={n:>9} round {round}: calendar {:6.1} ({:.2}x), floor {:6.1}, ours {:6.1} ({:.2}x); fired per step {:.3}",
                cal.ns_per_op,
                cal.ns_per_op / f,
                f,
                ours.ns_per_op,
                ours.ns_per_op / f,
                cal.fired as f64 / steps as f64,
            );
            // The same time split in two: advancing the clock (firing, the
            // callbacks included; the floor fires nothing) and the rest
            // (the cancels and inserts), the rest as a ratio to the floor.
            let split = |o: &Outcome| {
                let fire = per_op(o.firing, steps);
                format!(
                    "firing {fire:5.1} ({:5.1} per fired timer), rest {:6.1} ({:.2}x)",
                    per_op(o.firing, o.fired as usize),
                    o.ns_per_op - fire,
                    (o.ns_per_op - fire) / (f - per_op(floor.firing, steps)),
                )
            };
            println!("    calendar: {}", split(&cal));
            println!("    ours:     {}", split(&ours));
        }
    }
    if failed {
        std::process::exit(1);
    }
}

/// The queues of a round, in the order they run.
const QUEUES: [&str; 3] = ["calendar", "floor", "ours"];

/// One churn run of the queue `name` (one of [`QUEUES`]) with `n` pending
/// timers and round `round`'s seed, wrapped in `Frozen` if `frozen`; a
/// failed check is reported on stderr and sets `failed` (a frozen run's
/// output is not checked).
fn run(
    name: &str,
    n: usize,
    steps: usize,
    round: usize,
    frozen: bool,
    failed: &mut bool,
) -> Outcome {
    let p = Churn::new(n, steps, 9_100 + round as u64);
    let o = match name {
        "calendar" => churn_clocked(Calendar::presized(n), &p, frozen),
        "floor" => churn_clocked(Floor::with_capacity(n), &p, frozen),
        _ => churn_clocked(OurWheel::with_capacity(n), &p, frozen),
    };
    *failed |= o.check.report_failure(&format!("{name} at {n}"));
    o
}

/// [`churn`] over `q`, or over `Frozen(q)` if `frozen`.
fn churn_clocked<Q: TimerQueue>(q: Q, p: &Churn, frozen: bool) -> Outcome {
    if frozen {
        churn(Frozen(q), p)
    } else {
        churn(q, p)
    }
}

/// Runs one queue alone (frozen if `frozen`), `rounds` times per size, and
/// prints its time per step; exits 1 if a check fails or the name is
/// unknown.
fn run_alone(only: &str, frozen: bool, sizes: &[usize], rounds: usize, steps: usize) {
    if !QUEUES.contains(&only) {
        eprintln!("ONLY: one of {} (got {only:?})", QUEUES.join(", "));
        std::process::exit(1);
    }
    let mut failed = false;
    for &n in sizes {
        for round in 0..rounds {
            let o = run(only, n, steps, round, frozen, &mut failed);
            println!(
                "N={n:>9} round {round}: {only} {:6.1} ns per step, firing {:5.1}; fired per step {:.3}",
                o.ns_per_op,
                per_op(o.firing, steps),
                o.fired as f64 / steps as f64,
            );
        }
    }
    if failed {
        std::process::exit(1);
    }
}
