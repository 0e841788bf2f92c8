//! Fuzzing and property-test support for the cargo-fuzz targets in `fuzz/`
//! (`cfg(fuzzing)`) and the stable tests; not part of the stable API.
//!
//! Only re-exports: the stores' differential harness lives beside the
//! stores (`store/fuzz.rs`), whose module doc says what it checks.
//!
//! Node state: none.

pub use crate::store::fuzz::{
    DurableBench, DurableOp, KEYS as DURABLE_KEYS, MAX_DURABLE_OPS, run_durable_ops,
};
pub use crate::store::fuzz_schedules::{IDS as SCHEDULE_IDS, ScheduleOp};
