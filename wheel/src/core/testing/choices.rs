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
    /// Every `max(MIN_OPS_PER_CHECK, slots / SLOTS_PER_CHECK)`
    /// operations, and always after a drain and at the end: the fuzz
    /// targets' default, which keeps them at thousands of executions a
    /// second. The checks every operation still makes (the model's
    /// answers: every entry out of `poll` with its key, value and deadline,
    /// none early, none twice, none lost; `len`, `now`, `next_expiration`)
    /// catch a wrong answer at the operation that gave it; a broken
    /// internal invariant that has not yet changed an answer is caught at
    /// the next full check, at most that many operations later.
    Budget,
}

/// See [`Checks::Budget`]: a full check walks every slot, so one every
/// this many slots' worth of operations costs each operation about as
/// much as walking this many slots.
pub const SLOTS_PER_CHECK: u64 = 64;

/// See [`Checks::Budget`]: the fewest operations between two full checks
/// on small layouts (the default one has 384 slots, so a check every
/// `slots / SLOTS_PER_CHECK` = 6 operations would cost far more than the
/// operations themselves).
pub const MIN_OPS_PER_CHECK: usize = 64;

/// How many full-check periods must separate two `shrink_to_fit` calls.
pub const CHECKS_PER_SHRINK: usize = 4;

/// How many operations must separate two `shrink_to_fit` calls:
/// [`CHECKS_PER_SHRINK`] times as many as separate two full checks under
/// [`Checks::Budget`], in every mode. A shrink rebuilds every bucket of
/// the layout (O(slots), with an allocation per occupied one), several
/// times the cost of a full check, so an input that asks for one every
/// few operations would spend nearly all its time there. A shrink asked
/// for sooner is skipped, in every mode alike (the input alone decides
/// which run), so a crash replays the same operations under
/// `WHEEL_FUZZ_STRICT`, and the stable tests run the same.
pub(crate) fn shrink_period(bits: &[u32]) -> usize {
    Checks::Budget
        .period(bits)
        .saturating_mul(CHECKS_PER_SHRINK)
}

impl Checks {
    /// `Budget`, unless the environment sets `WHEEL_FUZZ_STRICT` (not "0").
    pub fn from_env() -> Checks {
        if std::env::var_os("WHEEL_FUZZ_STRICT").is_some_and(|v| v != "0") {
            Checks::EveryOp
        } else {
            Checks::Budget
        }
    }

    /// Operations between two full checks of a wheel with slot `bits`.
    pub(crate) fn period(self, bits: &[u32]) -> usize {
        match self {
            Checks::EveryOp => 1,
            Checks::Budget => {
                let slots: u64 = bits.iter().map(|&b| 1u64 << b.min(63)).sum();
                usize::try_from(slots / SLOTS_PER_CHECK)
                    .unwrap_or(usize::MAX)
                    .max(MIN_OPS_PER_CHECK)
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
