//! # wheel
//!
//! A timer engine built on a hierarchical hashed timing wheel: O(1) insert,
//! cancel and reset, scheduling and cancelling from any thread without
//! waiting for the tick thread, never early, and no CPU while idle.
//!
//! The crate has three layers, each usable without the ones above it, and
//! a clock for tests:
//!
//! | layer | types | for |
//! | --- | --- | --- |
//! | core | [`Wheel`], [`WheelConfig`], [`TimerKey`], [`Expired`], [`ConfigError`] | a single-threaded wheel over integer ticks, to embed in your own event loop |
//! | scheduler | [`Scheduler`], [`SchedulerBuilder`], [`TimerHandle`], [`Stats`], [`ScheduleError`], [`BuildError`] | "run this closure in 30 s" / "every 5 s" / "cancel it", from any thread |
//! | consumers | [`DelayQueue`], [`DelayQueueBuilder`], [`DelayKey`], [`DelayExpired`], [`Closed`], [`TakeFuture`], [`TakeExpiredFuture`], [`DelayQueueMut`] (on the core) | delayed values to take from, blocking or async |
//! | | [`Sleep`], [`Timeout`], [`Elapsed`], [`Interval`] (on the scheduler: [`Scheduler::sleep`], [`Scheduler::timeout`], [`Scheduler::interval`]) | `.await` on any executor |
//! | clocks | [`ManualClock`] (for the scheduler and the delay queue; the system clock otherwise) | "48 hours later" in microseconds |
//!
//! The cargo feature `stream` (off by default) implements
//! `futures_core::Stream` for [`DelayQueue`] (see
//! [`DelayQueue::poll_expired`]).
//!
//! Durable timers (kept through crashes, shared by several processes, HTTP
//! callbacks) are the crate `wheel-durable`, built on this crate.
//!
//! Naming follows tokio: a method that takes a relative duration has the
//! plain name ([`Scheduler::schedule`], [`TimerHandle::reset`],
//! [`DelayQueue::insert`], [`DelayQueue::reset`], [`Scheduler::timeout`]),
//! its twin that takes an absolute deadline the `_at` name
//! ([`Scheduler::schedule_at`], [`TimerHandle::reset_at`],
//! [`DelayQueue::insert_at`], [`DelayQueue::reset_at`],
//! [`Scheduler::timeout_at`]); [`Scheduler::sleep`] and
//! [`Scheduler::sleep_until`] keep tokio's names.
//!
//! In the scheduler, data flows one way: callers → lane outboxes and
//! command queues → tick thread → wheel → worker threads. The core knows nothing of threads or
//! clocks.
//!
//! `docs/design.md` explains the wheel, `docs/scheduler.md` the scheduler's
//! protocols, `docs/consumer-apis.md` the delay queue and futures, and
//! `docs/guarantees.md` lists every guarantee with the test that checks it.
//!
//! # Examples
//!
//! The core wheel, driven by hand:
//!
//! ```
//! use wheel::Wheel;
//!
//! let mut wheel = Wheel::new();
//! let order = wheel.insert(30 * 60_000, "close order 17"); // ticks of 1 ms
//! wheel.insert(5_000, "retry job 4");
//! wheel.cancel(order); // the customer paid
//! assert_eq!(wheel.poll(5_000).map(|e| e.value), Some("retry job 4"));
//! assert!(wheel.is_empty());
//! ```
//!
//! The scheduler, on a manual clock:
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use wheel::{ManualClock, Scheduler};
//!
//! let clock = ManualClock::new();
//! let scheduler = Scheduler::builder().clock(clock.clone()).build().unwrap();
//! let rated = Arc::new(AtomicUsize::new(0));
//! let r = rated.clone();
//! scheduler
//!     .schedule(Duration::from_secs(48 * 3600), move || {
//!         r.fetch_add(1, Ordering::SeqCst);
//!     })
//!     .unwrap();
//! clock.advance(Duration::from_secs(48 * 3600));
//! while rated.load(Ordering::SeqCst) == 0 {
//!     std::thread::yield_now(); // the worker runs the callback
//! }
//! assert_eq!(scheduler.shutdown(), 0);
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod clock;
mod core;
mod delay_queue;
mod error;
mod future;
mod scheduler;
mod sync;

// The core: a single-threaded wheel over integer ticks.
pub use crate::core::{ConfigError, Expired, TimerKey, Wheel, WheelConfig};
// The engine: the scheduler and its handles.
pub use crate::scheduler::{Scheduler, SchedulerBuilder, Stats, TimerHandle};
// The errors of `schedule*` and of the scheduler's and the delay queue's
// builders.
pub use crate::error::{BuildError, ScheduleError};
// The consumers: the delay queue, and the futures built on the scheduler.
pub use crate::delay_queue::{
    Closed, DelayExpired, DelayKey, DelayQueue, DelayQueueBuilder, DelayQueueMut,
    TakeExpiredFuture, TakeFuture,
};
pub use crate::future::{Elapsed, Interval, Sleep, Timeout};
// Testing: time that moves only when told to.
pub use crate::clock::ManualClock;

/// Test and fuzzing support: re-exports of the wheel's and the `DelayQueue`'s
/// differential harnesses (`core/testing/`, `delay_queue/fuzz.rs`).
/// Not part of the stable API; only compiled for tests and `cfg(fuzzing)`.
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzzing;
