//! # wheel-bench
//!
//! The side-by-side comparison of `wheel` with the timer implementations a user
//! would otherwise pick, plus the criterion micro-benchmarks' shared code.
//!
//! Layout:
//! - [`peers`]: single-threaded timer queues behind one trait, [`peers::TimerQueue`]
//!   (our `Wheel<u64>`, a `BinaryHeap`, a `BTreeMap`, `hierarchical_hash_wheel_timer`,
//!   tokio-util's `DelayQueue`, and the floor; beside them, outside the tables, the
//!   churn lower bound [`peers::calendar`]);
//! - [`threaded`]: timer services with their own thread(s) behind
//!   [`threaded::ThreadedTimer`];
//! - [`workloads`]: each workload written once, generic over those traits; every run
//!   checks its own output (each timer fired once, none early, none lost);
//! - [`suite`]: the `--quick` and full settings, the runners (medians, skips,
//!   progress) and the tables built from the results;
//! - [`report`] and [`chart`]: tables, `docs/benchmarks.md`, the SVG chart;
//! - [`alloc`]: the counting global allocator used for the memory figures;
//! - [`cpu`]: process CPU time from `/proc/self/stat`;
//! - [`rng`]: the small seeded PRNG every workload draws from;
//! - [`example_args`]: the arguments the churn examples share.
//!
//! Unlike the library, this crate contains one `unsafe` block: the
//! `GlobalAlloc` wrapper in [`alloc`] (documented there).

pub mod alloc;
pub mod chart;
pub mod cpu;
pub mod example_args;
pub mod peers;
pub mod report;
pub mod rng;
pub mod stats;
pub mod suite;
pub mod threaded;
pub mod workloads;
