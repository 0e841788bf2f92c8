//! Running a decoded input through the harness: [`run_wheel`] for the
//! `wheel_ops` target, [`run_config`] for the `config` target, each with
//! the choices of `choices.rs` ([`Checks`], [`TuningPreset`]).

use arbitrary::{Arbitrary, Unstructured};

use super::choices::{Checks, TuningPreset};
use super::harness::WheelHarness;
use super::ops::{ConfigInput, LayoutSpec, MAX_OPS, WheelInput, WheelOp};

/// Runs a decoded wheel input against the model with [`Checks::from_env`]
/// and the tuning [`TuningPreset::for_ops`] picks. Panics on divergence.
pub fn run_wheel(input: &WheelInput) {
    let preset = TuningPreset::for_ops(input.ops.len());
    run_wheel_with(input, Checks::from_env(), preset);
}

/// Runs a decoded wheel input against the model. Panics on divergence.
pub fn run_wheel_with(input: &WheelInput, checks: Checks, preset: TuningPreset) {
    run_ops(&input.layout, input.ops.iter().copied(), checks, preset);
}

/// Decodes `data` (the same way libFuzzer's `fuzz_target!` does for a typed
/// input) and runs it. Undecodable input is ignored.
pub fn run_wheel_ops(data: &[u8], checks: Checks, preset: TuningPreset) {
    if let Ok(input) = WheelInput::arbitrary_take_rest(Unstructured::new(data)) {
        run_wheel_with(&input, checks, preset);
    }
}

/// Runs a `config` input with [`Checks::from_env`] and the tuning
/// [`TuningPreset::for_ops`] picks: the layout verdict, then (if accepted)
/// the extreme operations against the model. Panics on divergence.
pub fn run_config(input: &ConfigInput) {
    let preset = TuningPreset::for_ops(input.ops.len());
    run_config_with(input, Checks::from_env(), preset);
}

/// Runs a `config` input. Panics on divergence.
pub fn run_config_with(input: &ConfigInput, checks: Checks, preset: TuningPreset) {
    let layout = LayoutSpec::Raw(input.layout.clone());
    run_ops(&layout, input.ops.iter().map(|op| op.op()), checks, preset);
}

/// Decodes and runs a `config` input. Undecodable input is ignored.
pub fn run_config_ops(data: &[u8], checks: Checks, preset: TuningPreset) {
    if let Ok(input) = ConfigInput::arbitrary_take_rest(Unstructured::new(data)) {
        run_config_with(&input, checks, preset);
    }
}

/// Runs up to [`MAX_OPS`] operations on the wheel `layout` describes, then
/// the final checks. Panics on divergence.
pub fn run_ops(
    layout: &LayoutSpec,
    ops: impl IntoIterator<Item = WheelOp>,
    checks: Checks,
    preset: TuningPreset,
) {
    let mut harness = WheelHarness::new(layout, checks, preset);
    for op in ops.into_iter().take(MAX_OPS) {
        harness.apply(op);
    }
    harness.finish();
}
