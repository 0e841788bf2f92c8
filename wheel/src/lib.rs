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
// delay_queue / future re-exports (owned by the consumer-API work):

/// Test and fuzzing support: the reference model and the operation decoder.
/// Not part of the stable API; only compiled for tests and `cfg(fuzzing)`.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::core::model::Model;
}
