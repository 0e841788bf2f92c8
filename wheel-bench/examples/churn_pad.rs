//! Does the floor's churn cost grow faster with the number of pending
//! timers when each step runs more instructions? The floor is run plain and
//! with 10 or 20 rounds of extra work per insert (four independent xorshift
//! chains, no memory access: 187 and 367 more instructions per step by
//! callgrind), beside our wheel, each as a ratio to the plain floor of the
//! same round (`docs/benchmarks.md`, "Thirteenth session").
//!
//! ```text
//! cargo run --release -p wheel-bench --example churn_pad -- [SIZES] [ROUNDS]
//! ```
//!
//! SIZES is a comma-separated list of pending-timer counts (default
//! `1000000,10000000`), ROUNDS the rounds per size (default 2). Each run
//! times 2 000 000 churn steps, as the full comparison does.

use std::hint::black_box;

use wheel_bench::example_args::sizes_and_rounds;
use wheel_bench::peers::floor::Floor;
use wheel_bench::peers::wheel::OurWheel;
use wheel_bench::peers::TimerQueue;
use wheel_bench::workloads::single::{churn, Churn};

/// Churn steps timed per run.
const STEPS: usize = 2_000_000;

/// The floor, with `ROUNDS` rounds of four xorshift chains per insert,
/// which depend on nothing in memory.
struct Padded<const ROUNDS: usize>(Floor);

impl<const ROUNDS: usize> TimerQueue for Padded<ROUNDS> {
    type Handle = (u32, u32);

    #[inline]
    fn insert(&mut self, deadline: u64, id: u64) -> (u32, u32) {
        let mut x = [deadline, id, deadline ^ 7, id ^ 9];
        for _ in 0..ROUNDS {
            for v in &mut x {
                *v ^= *v << 13;
                *v ^= *v >> 7;
                *v ^= *v << 17;
            }
        }
        black_box(x);
        self.0.insert(deadline, id)
    }

    #[inline]
    fn cancel(&mut self, handle: (u32, u32)) -> Option<u64> {
        self.0.cancel(handle)
    }

    fn advance<F: FnMut(u64)>(&mut self, now: u64, fire: F) {
        self.0.advance(now, fire);
    }

    fn is_timer(&self) -> bool {
        false
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (sizes, rounds) = sizes_and_rounds(&args, 2);
    println!("churn, {STEPS} steps timed per run; ns per step (ratio to the plain floor)");
    let mut failed = false;
    for &n in &sizes {
        for round in 0..rounds {
            let p = Churn::new(n, STEPS, 9_002 + round as u64);
            let floor = churn(Floor::with_capacity(n), &p).ns_per_op;
            let pad10 = churn(Padded::<10>(Floor::with_capacity(n)), &p).ns_per_op;
            let pad20 = churn(Padded::<20>(Floor::with_capacity(n)), &p).ns_per_op;
            let ours = churn(OurWheel::with_capacity(n), &p);
            failed |= ours
                .check
                .report_failure(&format!("N={n} round {round}: our wheel"));
            let o = ours.ns_per_op;
            println!(
                "N={n:>9} round {round}: floor {floor:6.1}, +10 rounds {pad10:6.1} ({:.2}x), +20 rounds {pad20:6.1} ({:.2}x), ours {o:6.1} ({:.2}x)",
                pad10 / floor,
                pad20 / floor,
                o / floor,
            );
        }
    }
    if failed {
        std::process::exit(1);
    }
}
