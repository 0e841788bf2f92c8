//! # wheel-bench
//!
//! The side-by-side comparison of `wheel` with the timer implementations a user
//! would otherwise pick (the `wheel-bench` binary), and the code the criterion
//! micro-benchmarks (`benches/micro.rs`) share with it.
//!
//! Layout:
//! - [`peers`]: single-threaded timer queues behind one trait,
//!   [`peers::TimerQueue`]: our `Wheel<u64>`, a `BinaryHeap`, a `BTreeMap`,
//!   `hierarchical_hash_wheel_timer`, tokio-util's `DelayQueue`, and the
//!   floor (a slab that only writes and frees timer-sized entries, the bare
//!   cost any timer pays);
//! - [`threaded`]: timer services with their own thread(s) behind
//!   [`threaded::ThreadedTimer`];
//! - [`workloads`]: each workload written once, generic over those traits
//!   (and over [`workloads::delay_queue::DelayQueueLike`] for the
//!   `DelayQueue`s); every run checks its own output (each timer fired once,
//!   none early, none lost);
//! - [`suite`]: the `--quick` and full settings, one runner per section of
//!   the report (memory, single-threaded, threaded, `DelayQueue`, and the
//!   layouts mode), with their medians, skips and progress lines, and the
//!   tables and chart panels built from the results;
//! - [`durable`]: our durable timers against the one-second Redis time
//!   wheel that users build by hand (rebuilt here), with the section's
//!   runs and its own chart;
//! - [`schedules`]: our durable recurring schedules on Redis (three
//!   nodes) and on the embedded store, beside the in-memory
//!   `schedule_repeating`;
//! - [`server`]: the `wheel-server` binary under load from `wrk`, idle,
//!   and two of them on one Redis sending callbacks, one killed;
//! - [`report`] and [`chart`]: text and Markdown tables, the machine's facts,
//!   the generated sections of `docs/benchmarks.md`, the SVG chart;
//! - [`alloc`]: the counting global allocator behind the memory figures;
//! - [`cpu`]: process and thread CPU time from `/proc`;
//! - [`stats`]: medians and percentiles;
//! - [`rng`]: the small seeded PRNG every workload draws from.
//!
//! Unlike the library, this crate contains one `unsafe` block: the
//! `GlobalAlloc` wrapper in [`alloc`] (documented there).

pub mod alloc;
pub mod chart;
pub mod cpu;
pub mod durable;
pub mod peers;
pub mod report;
pub mod rng;
pub mod schedules;
pub mod server;
pub mod stats;
pub mod suite;
pub mod threaded;
pub mod workloads;
