//! The DST rule on real transitions: the exact UTC instants of fixed-time
//! and every-15-minutes specs around each change, in zones that shift by an
//! hour (America/New_York, Europe/Berlin) and by half an hour
//! (Australia/Lord_Howe).

use jiff::Timestamp;

use super::cron::CronSpec;
use super::instant::Ms;

/// The first `n` runs of `expression` in `zone` strictly after `from`, as
/// UTC strings.
fn runs(expression: &str, zone: &str, from: &str, n: usize) -> Vec<String> {
    let spec = CronSpec::new(expression, zone).unwrap();
    let mut at: Ms = from.parse::<Timestamp>().unwrap().as_millisecond();
    let mut out = Vec::new();
    for _ in 0..n {
        at = spec.next_after(at).unwrap();
        out.push(Timestamp::from_millisecond(at).unwrap().to_string());
    }
    out
}

#[test]
fn new_york_spring_forward() {
    // 2026-03-08 02:00 EST (07:00Z) becomes 03:00 EDT.
    let z = "America/New_York";
    assert_eq!(
        runs("0 30 2 * * *", z, "2026-03-07T00:00:00Z", 3),
        [
            "2026-03-07T07:30:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-09T06:30:00Z"
        ]
    );
    assert_eq!(
        runs("*/15 * * * *", z, "2026-03-08T06:20:00Z", 5),
        [
            "2026-03-08T06:30:00Z",
            "2026-03-08T06:45:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-08T07:15:00Z",
            "2026-03-08T07:30:00Z",
        ]
    );
    // A list is fixed-time too: 02:30 runs right after the gap, once.
    assert_eq!(
        runs("30 2,14 * * *", z, "2026-03-08T00:00:00Z", 3),
        [
            "2026-03-08T07:00:00Z",
            "2026-03-08T18:30:00Z",
            "2026-03-09T06:30:00Z"
        ]
    );
    // So is a range: the whole of it in the gap is one run.
    assert_eq!(
        runs("0-30 2 * * *", z, "2026-03-08T00:00:00Z", 2),
        ["2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"]
    );
}

#[test]
fn new_york_fall_back() {
    // 2026-11-01 02:00 EDT (06:00Z) becomes 01:00 EST: 01:00-02:00 twice.
    let z = "America/New_York";
    assert_eq!(
        runs("0 30 2 * * *", z, "2026-10-31T00:00:00Z", 3),
        [
            "2026-10-31T06:30:00Z",
            "2026-11-01T07:30:00Z",
            "2026-11-02T07:30:00Z"
        ]
    );
    assert_eq!(
        runs("0 30 1 * * *", z, "2026-10-31T00:00:00Z", 3),
        [
            "2026-10-31T05:30:00Z",
            "2026-11-01T05:30:00Z",
            "2026-11-02T06:30:00Z"
        ]
    );
    assert_eq!(
        runs("30 1,13 * * *", z, "2026-11-01T00:00:00Z", 2),
        ["2026-11-01T05:30:00Z", "2026-11-01T18:30:00Z"]
    );
    assert_eq!(
        runs("*/15 * * * *", z, "2026-11-01T05:20:00Z", 8),
        [
            "2026-11-01T05:30:00Z",
            "2026-11-01T05:45:00Z",
            "2026-11-01T06:00:00Z",
            "2026-11-01T06:15:00Z",
            "2026-11-01T06:30:00Z",
            "2026-11-01T06:45:00Z",
            "2026-11-01T07:00:00Z",
            "2026-11-01T07:15:00Z",
        ]
    );
    // From inside the second pass, after the first 01:30 ran: tomorrow.
    assert_eq!(
        runs("0 30 1 * * *", z, "2026-11-01T06:10:00Z", 1),
        ["2026-11-02T06:30:00Z"]
    );
    assert_eq!(
        runs("30 1,13 * * *", z, "2026-11-01T05:40:00Z", 1),
        ["2026-11-01T18:30:00Z"]
    );
}

#[test]
fn berlin_spring_forward() {
    // 2026-03-29 02:00 CET (01:00Z) becomes 03:00 CEST.
    let z = "Europe/Berlin";
    assert_eq!(
        runs("0 30 2 * * *", z, "2026-03-28T00:00:00Z", 3),
        [
            "2026-03-28T01:30:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-30T00:30:00Z"
        ]
    );
    assert_eq!(
        runs("*/15 * * * *", z, "2026-03-29T00:20:00Z", 4),
        [
            "2026-03-29T00:30:00Z",
            "2026-03-29T00:45:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-29T01:15:00Z",
        ]
    );
}

#[test]
fn berlin_fall_back() {
    // 2026-10-25 03:00 CEST (01:00Z) becomes 02:00 CET: 02:00-03:00 twice.
    let z = "Europe/Berlin";
    assert_eq!(
        runs("0 30 2 * * *", z, "2026-10-24T00:00:00Z", 3),
        [
            "2026-10-24T00:30:00Z",
            "2026-10-25T00:30:00Z",
            "2026-10-26T01:30:00Z"
        ]
    );
    assert_eq!(
        runs("*/15 * * * *", z, "2026-10-25T00:20:00Z", 7),
        [
            "2026-10-25T00:30:00Z",
            "2026-10-25T00:45:00Z",
            "2026-10-25T01:00:00Z",
            "2026-10-25T01:15:00Z",
            "2026-10-25T01:30:00Z",
            "2026-10-25T01:45:00Z",
            "2026-10-25T02:00:00Z",
        ]
    );
}

#[test]
fn lord_howe_half_hour_fall_back() {
    // 2026-04-05 02:00 (+11, 15:00Z the day before) becomes 01:30
    // (+10:30): 01:30-02:00 happens twice.
    let z = "Australia/Lord_Howe";
    assert_eq!(
        runs("0 30 2 * * *", z, "2026-04-03T00:00:00Z", 3),
        [
            "2026-04-03T15:30:00Z",
            "2026-04-04T16:00:00Z",
            "2026-04-05T16:00:00Z"
        ]
    );
    assert_eq!(
        runs("0 45 1 * * *", z, "2026-04-03T00:00:00Z", 3),
        [
            "2026-04-03T14:45:00Z",
            "2026-04-04T14:45:00Z",
            "2026-04-05T15:15:00Z"
        ]
    );
    assert_eq!(
        runs("*/15 * * * *", z, "2026-04-04T14:20:00Z", 6),
        [
            "2026-04-04T14:30:00Z",
            "2026-04-04T14:45:00Z",
            "2026-04-04T15:00:00Z",
            "2026-04-04T15:15:00Z",
            "2026-04-04T15:30:00Z",
            "2026-04-04T15:45:00Z",
        ]
    );
    // Hourly across a half-hour shift: 01:00 (+11), then 02:00 (+10:30),
    // 90 real minutes later, as documented.
    assert_eq!(
        runs("0 * * * *", z, "2026-04-04T13:30:00Z", 2),
        ["2026-04-04T14:00:00Z", "2026-04-04T15:30:00Z"]
    );
}

#[test]
fn lord_howe_half_hour_spring_forward() {
    // 2026-10-04 02:00 (+10:30, 15:30Z the day before) becomes 02:30 (+11).
    let z = "Australia/Lord_Howe";
    assert_eq!(
        runs("0 30 2 * * *", z, "2026-10-02T00:00:00Z", 3),
        [
            "2026-10-02T16:00:00Z",
            "2026-10-03T15:30:00Z",
            "2026-10-04T15:30:00Z"
        ]
    );
    assert_eq!(
        runs("0 15 2 * * *", z, "2026-10-02T00:00:00Z", 3),
        [
            "2026-10-02T15:45:00Z",
            "2026-10-03T15:30:00Z",
            "2026-10-04T15:15:00Z"
        ]
    );
    assert_eq!(
        runs("*/15 * * * *", z, "2026-10-03T14:50:00Z", 4),
        [
            "2026-10-03T15:00:00Z",
            "2026-10-03T15:15:00Z",
            "2026-10-03T15:30:00Z",
            "2026-10-03T15:45:00Z",
        ]
    );
    assert_eq!(
        runs("0 * * * *", z, "2026-10-03T14:00:00Z", 2),
        ["2026-10-03T14:30:00Z", "2026-10-03T16:00:00Z"]
    );
}

#[test]
fn the_rule_classifies_by_the_time_fields() {
    for (expression, fixed) in [
        ("0 30 2 * * *", true),
        ("30 1,13 * * *", true),
        ("0-30 2 * * *", true),
        ("@daily", true),
        ("0 9 * * MON-FRI", true),
        ("*/15 * * * *", false),
        ("0-59/15 * * * *", false),
        ("0 */2 * * *", false),
        ("*/10 30 2 * * *", false),
        ("@hourly", false),
    ] {
        let spec = CronSpec::new(expression, "UTC").unwrap();
        assert_eq!(spec.is_fixed(), fixed, "{expression}");
    }
}

#[test]
fn previous_runs_are_runs_of_the_forward_sequence() {
    // Backwards across both New York changes, for both kinds of spec.
    for expression in [
        "0 30 2 * * *",
        "30 1,13 * * *",
        "*/15 * * * *",
        "0-30 2 * * *",
    ] {
        let spec = CronSpec::new(expression, "America/New_York").unwrap();
        for (from, to) in [
            ("2026-03-06T00:00:00Z", "2026-03-10T00:00:00Z"),
            ("2026-10-30T00:00:00Z", "2026-11-03T00:00:00Z"),
        ] {
            let from = from.parse::<Timestamp>().unwrap().as_millisecond();
            let to = to.parse::<Timestamp>().unwrap().as_millisecond();
            let mut forward = Vec::new();
            let mut at = from;
            while let Some(next) = spec.next_after(at).filter(|n| *n < to) {
                forward.push(next);
                at = next;
            }
            let mut backward = Vec::new();
            let mut at = to;
            while let Some(prev) = spec.prev_before(at).filter(|p| *p > from) {
                backward.push(prev);
                at = prev;
            }
            backward.reverse();
            assert_eq!(forward, backward, "{expression}");
        }
    }
}

#[test]
fn zones_and_never_matching_expressions_are_refused() {
    use super::SpecError;
    for zone in ["", "Mars/Olympus", "america/new_york_x", "+05:00x"] {
        assert_eq!(
            CronSpec::new("* * * * *", zone),
            Err(SpecError::UnknownZone {
                zone: zone.to_owned()
            })
        );
    }
    assert_eq!(
        CronSpec::new("0 0 30 2 *", "UTC"),
        Err(SpecError::CronNeverMatches {
            expression: "0 0 30 2 *".to_owned()
        })
    );
    // A leap day is rare, not never.
    assert!(CronSpec::new("0 0 29 2 *", "UTC").is_ok());
    assert!(CronSpec::new("0 0 * * *", "Etc/UTC").is_ok());
}
