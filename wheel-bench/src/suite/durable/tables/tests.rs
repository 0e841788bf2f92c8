//! The kill table's check and rows.

use super::*;
use crate::durable::kill::Again;

fn run(duplicates: u64, again: Again) -> KillRun {
    let mut r = KillRun {
        again,
        ..KillRun::default()
    };
    r.summary.duplicates = duplicates;
    r
}

#[test]
fn runs_again_after_unrecorded_outcomes_pass_the_kill_check() {
    let again = Again {
        after_cut_short: 5,
        after_unacked: 1,
        ..Again::default()
    };
    let r = run(6, again);
    assert_eq!(kill_check(&r), Check::Passed);
    let row = kill_row("ours", &r);
    assert_eq!(row.len(), kill(&DurableParams::quick().kill).header.len());
    assert_eq!(
        row[8],
        "6 (5 cut short, 1 not acknowledged, 0 lease ran out)"
    );
    assert_eq!(row[9], "0");
}

#[test]
fn a_run_after_a_stored_outcome_fails_the_kill_check_naming_its_key() {
    let again = Again {
        after_cut_short: 5,
        after_stored: vec![7],
        ..Again::default()
    };
    let r = run(6, again);
    let Check::Failed(why) = kill_check(&r) else {
        panic!("passed: {r:?}");
    };
    assert!(why.contains("1 runs after a stored outcome"), "{why}");
    assert!(why.contains(&key(7)), "{why}");
    assert_eq!(kill_row("ours", &r)[9], "1");
}
