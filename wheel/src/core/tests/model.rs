//! The differential tests against the reference model, all through the one
//! harness of `core/testing/` (every answer compared, the invariants
//! checked after every operation), under both tunings:
//!
//! - `wheel_matches_model`: operations drawn by proptest strategies, on
//!   layouts up to four 16-bit levels;
//! - the fuzz targets' inputs: random bytes through the fuzz decoders, the
//!   committed seed corpus, and a hand-written run.

use proptest::prelude::*;

use crate::core::testing::ops::valid_layout;
use crate::core::testing::{
    Checks, LayoutSpec, LevelBits, Pick, PollTo, TuningPreset, WheelInput, WheelOp, When,
    layout_is_valid, run_config_ops, run_ops, run_wheel_ops, run_wheel_with,
};
#[cfg(not(loom))]
use wheel_testkit::seed_corpus;

/// A deadline: mostly near, some far, some absolute, past or at the end of
/// time.
fn when() -> impl Strategy<Value = When> {
    let after = |mantissa, exponent| When::Far { mantissa, exponent };
    prop_oneof![
        4 => (0u16..300).prop_map(move |m| after(m, 0)),
        2 => (any::<u16>(), 0u8..=1).prop_map(move |(m, e)| after(m, e)),
        1 => (any::<u16>(), 0u8..=24).prop_map(move |(m, e)| after(m, e)),
        1 => any::<u64>().prop_map(When::Abs),
        1 => (0u16..1000).prop_map(When::Past),
        1 => Just(When::Max),
    ]
}

/// A live or a stale key.
fn pick() -> impl Strategy<Value = Pick> {
    prop_oneof![
        any::<u16>().prop_map(Pick::Live),
        any::<u16>().prop_map(Pick::Stale),
    ]
}

/// One operation: mostly inserts and small steps of the clock.
fn op() -> impl Strategy<Value = WheelOp> {
    let step = |t: u16| {
        PollTo::At(When::Far {
            mantissa: t,
            exponent: 0,
        })
    };
    prop_oneof![
        8 => when().prop_map(WheelOp::Insert),
        3 => pick().prop_map(WheelOp::Cancel),
        3 => (pick(), when()).prop_map(|(p, w)| WheelOp::Reset(p, w)),
        5 => (0u8..64).prop_map(|n| WheelOp::Poll(PollTo::Step(n))),
        1 => (any::<u16>(), 0u8..=20)
            .prop_map(|(mantissa, exponent)| WheelOp::Poll(PollTo::Jump { mantissa, exponent })),
        1 => Just(WheelOp::Poll(PollTo::At(When::Max))),
        1 => (0u16..100).prop_map(|n| WheelOp::Poll(PollTo::At(When::Past(n)))),
        2 => (0u16..5000).prop_map(move |t| WheelOp::PollAll(step(t))),
        1 => Just(WheelOp::NextExpiration),
        1 => pick().prop_map(WheelOp::GetMut),
        1 => Just(WheelOp::Drain),
        1 => Just(WheelOp::ShrinkToFit),
    ]
}

/// A valid layout. Wide levels make the invariant walk slow in debug
/// builds, so 16-bit levels appear in a few fixed layouts only.
fn layout() -> impl Strategy<Value = LayoutSpec> {
    prop_oneof![
        3 => Just(vec![8; 8]),
        2 => Just(vec![6; 6]),
        1 => Just(vec![16]),
        1 => Just(vec![16, 16, 16, 16]),
        6 => prop::collection::vec(1u32..=8, 1..=6),
        3 => prop::collection::vec(1u32..=12, 1..=4),
    ]
    .prop_filter("fits in 64 bits", |b| b.iter().sum::<u32>() <= 64)
    .prop_map(|bits| LayoutSpec::Raw(bits.into_iter().map(LevelBits::Wide).collect()))
}

fn preset() -> impl Strategy<Value = TuningPreset> {
    prop::sample::select(&TuningPreset::ALL[..])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The wheel agrees with the model after every operation, and
    /// everything left fires exactly once, in order, by the end of time.
    #[test]
    fn wheel_matches_model(
        layout in layout(),
        ops in prop::collection::vec(op(), 1..300),
        preset in preset(),
    ) {
        // `run_ops` ends with every check there is (`WheelHarness::finish`).
        let end = [WheelOp::PollAll(PollTo::At(When::Max))];
        run_ops(&layout, ops.into_iter().chain(end), Checks::EveryOp, preset);
    }
}

#[test]
fn layout_rules() {
    assert!(layout_is_valid(&[6; 6]));
    assert!(layout_is_valid(&[16; 4]));
    assert!(layout_is_valid(&[1; 64]));
    assert!(!layout_is_valid(&[]));
    assert!(!layout_is_valid(&[0]));
    assert!(!layout_is_valid(&[17]));
    assert!(!layout_is_valid(&[1; 65]));
    assert!(!layout_is_valid(&[16, 16, 16, 16, 1]));
    assert!(!layout_is_valid(&[u32::MAX, 2]));
    for bytes in [&[][..], &[255; 100][..], &[0, 15, 7][..]] {
        assert!(layout_is_valid(&valid_layout(bytes)));
    }
}

#[test]
fn hand_written_run_agrees_with_model() {
    use Pick::*;
    use When::*;
    let input = WheelInput {
        layout: LayoutSpec::Valid(vec![1, 3]),
        ops: vec![
            WheelOp::Insert(Near(5)),
            WheelOp::Insert(Max),
            WheelOp::Insert(Near(5)),
            WheelOp::Insert(Past(3)),
            WheelOp::Reset(
                Live(0),
                Far {
                    mantissa: 3,
                    exponent: 40,
                },
            ),
            WheelOp::PollAll(PollTo::Step(5)),
            WheelOp::Cancel(Stale(0)),
            WheelOp::GetMut(Live(1)),
            WheelOp::NextExpiration,
            WheelOp::Poll(PollTo::At(Max)),
            WheelOp::Insert(Abs(3)),
            WheelOp::Drain,
            WheelOp::CheckAll,
        ],
    };
    for preset in TuningPreset::ALL {
        run_wheel_with(&input, Checks::EveryOp, preset);
    }
}

/// Runs every committed seed of the fuzz target `target` through `run`,
/// under both tunings.
#[cfg(not(loom))]
fn replay(target: &str, run: fn(&[u8], Checks, TuningPreset)) {
    for data in seed_corpus(target) {
        for preset in TuningPreset::ALL {
            run(&data, Checks::EveryOp, preset);
        }
    }
}

#[cfg(not(loom))]
#[test]
fn replay_seed_corpus_wheel_ops() {
    replay("wheel_ops", run_wheel_ops);
}

#[cfg(not(loom))]
#[test]
fn replay_seed_corpus_config() {
    replay("config", run_config_ops);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn wheel_ops_from_random_bytes(
        data in proptest::collection::vec(any::<u8>(), 0..4096),
        preset in preset(),
    ) {
        run_wheel_ops(&data, Checks::EveryOp, preset);
    }

    #[test]
    fn config_from_random_bytes(
        data in proptest::collection::vec(any::<u8>(), 0..4096),
        preset in preset(),
    ) {
        run_config_ops(&data, Checks::EveryOp, preset);
    }
}
