//! # wheel
//!
//! A timer engine built on a hierarchical hashed timing wheel.
//!
//! (Crate docs are rewritten as an index of the types once the layers land.)
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod clock;
mod core;
mod delay_queue;
mod error;
mod future;
mod scheduler;
mod sync;

pub use crate::clock::ManualClock;
pub use crate::core::{ConfigError, Expired, TimerKey, Wheel, WheelConfig};
pub use crate::error::{BuildError, ScheduleError};
// scheduler re-exports (owned by the scheduler work):
pub use crate::scheduler::{Scheduler, SchedulerBuilder, Stats, TimerHandle};
// delay_queue / future re-exports (owned by the consumer-API work):
pub use crate::delay_queue::{Closed, DelayKey, DelayQueue, DelayQueueBuilder, TakeFuture};
pub use crate::future::{Elapsed, Interval, Sleep, Timeout};

/// Test and fuzzing support: the reference model and the operation decoder.
/// Not part of the stable API; only compiled for tests and `cfg(fuzzing)`.
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzzing;
