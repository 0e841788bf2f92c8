//! The wheel's differential test harness, for the stable property tests
//! (`cfg(test)`) and the cargo-fuzz targets (`cfg(fuzzing)`), which feed it
//! through the SAME decoders and the SAME checks. `crate::fuzzing`
//! re-exports what the fuzz targets use; the `DelayQueue` harness takes the
//! model, the key book and the op-count helpers from here.
//!
//! - [`model`]: the reference model, a `BTreeMap` that is obviously right;
//! - [`ops`]: the decoders from bytes to a layout and [`WheelOp`]s;
//! - [`harness`]: [`WheelHarness`], a wheel and the model in lock step;
//! - [`keys`]: the book of live and stale keys a harness aims at;
//! - [`choices`]: the choices a run makes ([`Checks`], [`TuningPreset`]);
//! - [`run`]: running a whole input.
//!
//! # What the harness checks
//!
//! [`run_wheel`] drives a [`Wheel<u64>`](crate::Wheel) and the reference
//! [`Model`] with one decoded operation sequence and panics on the first
//! divergence: a different entry, effective deadline or key out of `poll`,
//! an early fire, a double fire, a lost entry, a different `len`, `now`,
//! `deadline`, `get` or `get_mut` answer, a stale key that still acts, a
//! reused key, a broken `next_expiration` contract (`None` iff empty, never
//! after the earliest deadline, exact when that deadline is on the lowest
//! level, never at or before `now` after a poll that found nothing), a
//! `drain` that misses or repeats an entry, a layout accepted or rejected
//! against the rules, or an internal invariant violation
//! (`Wheel::check_invariants`: after every operation in the stable
//! proptests, on a budget in the fuzz targets, see [`Checks`]).
//! [`run_config`] does the same on arbitrary, mostly invalid, layouts and
//! extreme ticks. Each run uses one of the wheel's two tunings (see
//! [`TuningPreset`]): the stable tests run every input under both. A panic
//! is what libFuzzer reports as a crash.
//!
//! # Invariants of the harness itself
//!
//! - Model ids are dense (0, 1, 2, ...) and index `WheelHarness::timers`;
//!   a timer's value in the wheel is `id | mutations << ID_BITS`, so any
//!   value coming out of the wheel names the timer it belongs to.
//! - A timer is live in the key book exactly while the model holds it; its
//!   key goes stale when it fires, is cancelled or drained, and from then
//!   on every operation on that key must be refused.
//! - Every decision the harness takes (which key, which tick) depends only
//!   on the input bytes and on model state, never on the wheel's answers,
//!   so a divergence is reproducible from the input alone.

pub mod choices;
pub mod harness;
pub(crate) mod keys;
pub mod model;
pub mod ops;
pub mod run;

pub(crate) use self::choices::shrink_period;
pub use self::choices::{Checks, SLOTS_PER_CHECK, TuningPreset};
pub(crate) use self::harness::clamp;
pub use self::harness::{WheelHarness, checked_config};
pub(crate) use self::keys::KeyBook;
pub use self::model::Model;
pub(crate) use self::ops::ops_until_empty;
pub use self::ops::{
    ConfigInput, Extreme, ExtremeOp, LayoutSpec, LevelBits, MAX_OPS, Pick, PollTo, WheelInput,
    WheelOp, When, layout_is_valid,
};
pub use self::run::{
    run_config, run_config_ops, run_config_with, run_ops, run_wheel, run_wheel_ops, run_wheel_with,
};
