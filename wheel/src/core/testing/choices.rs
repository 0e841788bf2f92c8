//! The choices a harness run makes, apart from the input: how often to
//! check the wheel's invariants ([`Checks`]) and which tuning the wheel
//! under test runs ([`TuningPreset`]).
//!
//! Both the harness (`harness.rs`), which acts on them, and the runners
//! (`run.rs`), which pick them, take them from here; neither depends on the
//! other for them.

use crate::core::Tuning;

/// How often the harness runs `Wheel::check_invariants`, which walks every
/// bucket and cell and grows with the layout's slots, so it costs far more
/// than the operation it follows (`fuzz/README.md` has the figures).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    /// After every operation (the stable proptests; `WHEEL_FUZZ_STRICT=1`
    /// forces it for the fuzz targets, to pinpoint a reproduced crash).
    EveryOp,
    /// Every `max(1, slots / SLOTS_PER_CHECK)` operations, and always
    /// after a drain and at the end: the fuzz targets' default, which keeps
    /// them at several thousand executions a second. An invariant broken
    /// in between is still caught at the next check or by the model.
    Budget,
}

/// See [`Checks::Budget`].
pub const SLOTS_PER_CHECK: u64 = 64;

impl Checks {
    /// `Budget`, unless the environment sets `WHEEL_FUZZ_STRICT` (not "0").
    pub fn from_env() -> Checks {
        if std::env::var_os("WHEEL_FUZZ_STRICT").is_some_and(|v| v != "0") {
            Checks::EveryOp
        } else {
            Checks::Budget
        }
    }

    pub(super) fn period(self, bits: &[u32]) -> usize {
        match self {
            Checks::EveryOp => 1,
            Checks::Budget => {
                let slots: u64 = bits.iter().map(|&b| 1u64 << b.min(63)).sum();
                usize::try_from(slots / SLOTS_PER_CHECK)
                    .unwrap_or(usize::MAX)
                    .max(1)
            }
        }
    }
}

/// Which [`Tuning`] the wheel under test runs: the sizes a production
/// wheel uses, or the small ones whose thresholds a wheel of a few dozen
/// timers crosses all the time (so that lanes of fresh indices, new chunks
/// and sweeps run constantly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TuningPreset {
    /// [`Tuning::DEFAULT`], what every wheel outside the tests runs.
    Default,
    /// [`Tuning::SMALL`].
    Small,
}

impl TuningPreset {
    /// Both presets, for the tests that run every input under each.
    pub const ALL: [TuningPreset; 2] = [TuningPreset::Default, TuningPreset::Small];

    /// The preset a fuzz input runs: `Default` for one operation count in
    /// four, else `Small`. Taken from the count rather than from a byte of
    /// the input, so that every byte keeps its meaning (the committed seed
    /// corpus decodes as it always did), and a fuzzer reaches either preset
    /// by adding or dropping an operation.
    pub fn for_ops(ops: usize) -> TuningPreset {
        if ops % 4 == 3 {
            TuningPreset::Default
        } else {
            TuningPreset::Small
        }
    }

    /// The tuning this preset names.
    pub(crate) const fn tuning(self) -> Tuning {
        match self {
            TuningPreset::Default => Tuning::DEFAULT,
            TuningPreset::Small => Tuning::SMALL,
        }
    }
}
