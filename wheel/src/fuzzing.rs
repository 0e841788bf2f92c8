//! Fuzzing and property-test support, for the cargo-fuzz targets in `fuzz/`
//! (`cfg(fuzzing)`) and the stable tests (`cfg(test)`); not part of the
//! stable API.
//!
//! Only re-exports: the wheel's harness and decoders live beside the wheel
//! (`core/testing/`), the `DelayQueue`'s beside the queue
//! (`delay_queue/fuzz.rs`); their module docs say what each checks. The
//! durable stores' harness lives in the `wheel-durable` crate.

pub use crate::core::testing::{
    Checks, ConfigInput, Extreme, ExtremeOp, LayoutSpec, LevelBits, MAX_OPS, Model, Pick, PollTo,
    SLOTS_PER_CHECK, TuningPreset, WheelHarness, WheelInput, WheelOp, When, checked_config,
    layout_is_valid, run_config, run_config_ops, run_config_with, run_ops, run_wheel,
    run_wheel_ops, run_wheel_with,
};
pub use crate::delay_queue::fuzz::{
    Delay, DqHarness, DqInput, DqOp, TickSpec, run_delay_queue, run_delay_queue_ops,
    run_delay_queue_with,
};
