//! What the full comparison's churn asks of a timer at each size, counted by
//! `workloads::single::churn_mix` (the churn's steps run untimed over the
//! calendar, which any correct timer matches): timers fired per step,
//! and the share of steps whose connection's timer had already fired, so
//! that they insert without cancelling (`docs/benchmarks.md`, "Eighteenth
//! session").
//!
//! ```text
//! cargo run --release -p wheel-bench --example churn_mix -- [SIZES] [STEPS]
//! ```
//!
//! SIZES is a comma-separated list of pending-timer counts (default
//! `1000000,10000000`), STEPS the steps (default 2 000 000, as the full
//! comparison times). The draws are those of `churn_interleaved`'s first
//! round (seed 9 100); other seeds give the same figures to two digits.

use wheel_bench::example_args::{count, counts, DEFAULT_SIZES};
use wheel_bench::workloads::single::{churn_mix, Churn};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes = counts(&args, 0, &DEFAULT_SIZES, "SIZES");
    let steps = count(&args, 1, 2_000_000, "STEPS");
    println!("churn, {steps} steps: what the steps do (run untimed over the calendar)");
    for &n in &sizes {
        let mix = churn_mix(&Churn::new(n, steps, 9_100));
        println!(
            "N={n:>9}: fired per step {:.3}; steps without a cancel {:.2} %",
            mix.fired as f64 / mix.steps as f64,
            100.0 * mix.without_cancel as f64 / mix.steps as f64,
        );
    }
}
