//! Properties of `next_after` and `plan` over random specs and instants:
//! runs strictly increase, a search from any point between two runs finds
//! the same sequence, the backward search lands on forward runs, and (for
//! cron) the DST rule's spacing holds in zones with real transitions.

use std::time::{Duration, UNIX_EPOCH};

use proptest::prelude::*;

use super::instant::Ms;
use super::{CatchUp, Schedule, Spec};

/// 2040-01-01, in Unix ms: the end of the instants drawn.
const TO: Ms = 2_208_988_800_000;

/// `n` runs of `spec` strictly after `t`.
fn walk(spec: &Spec, mut t: Ms, n: usize) -> Vec<Ms> {
    let mut out = Vec::new();
    while out.len() < n {
        match spec.next_ms(t) {
            Some(next) => {
                assert!(next > t, "{spec:?}: {next} after {t}");
                out.push(next);
                t = next;
            }
            None => break,
        }
    }
    out
}

/// The shared properties: strictly increasing, the same sequence from any
/// point in between, `prev_ms` the inverse of `next_ms`.
fn check_sequence(spec: &Spec, start: Ms, pick: usize, offset: Ms) {
    let runs = walk(spec, start, 24);
    assert!(runs.windows(2).all(|w| w[0] < w[1]), "{spec:?}");
    if runs.len() < 2 {
        return;
    }
    // A point between two runs (or on one): the rest of the sequence.
    let i = pick % (runs.len() - 1);
    let between = runs[i] + offset % (runs[i + 1] - runs[i]);
    let rest: Vec<Ms> = runs.iter().copied().filter(|r| *r > between).collect();
    assert_eq!(
        walk(spec, between, rest.len()),
        rest,
        "{spec:?} from {between}"
    );
    // The last run before a run is the one before it in the sequence.
    for w in runs.windows(2) {
        assert_eq!(spec.prev_ms(w[1]), Some(w[0]), "{spec:?}");
        assert_eq!(
            spec.prev_ms(w[1] - 1).max(Some(w[0])),
            Some(w[0]),
            "{spec:?}"
        );
    }
}

#[cfg(feature = "cron")]
mod cron {
    use super::*;

    /// 2000-01-01, in Unix ms: the start of the instants drawn.
    const FROM: Ms = 946_684_800_000;

    /// Zones with whole-hour, half-hour, 45-minute-offset and at-midnight
    /// transitions, and two without DST.
    const ZONES: [&str; 8] = [
        "America/New_York",
        "Europe/Berlin",
        "Australia/Lord_Howe",
        "America/Santiago",
        "Pacific/Chatham",
        "America/St_Johns",
        "Asia/Kolkata",
        "UTC",
    ];

    fn zone() -> impl Strategy<Value = &'static str> {
        prop::sample::select(&ZONES[..])
    }

    fn expression() -> impl Strategy<Value = String> {
        prop_oneof![
            (0..60u8, 0..60u8, 0..24u8).prop_map(|(s, m, h)| format!("{s} {m} {h} * * *")),
            prop::sample::select(&[1u8, 5, 10, 15, 30][..]).prop_map(|n| format!("*/{n} * * * *")),
            (0..60u8, 0..24u8, 0..24u8).prop_map(|(m, a, b)| format!("{m} {a},{b} * * *")),
            (0..60u8, 1..6u8).prop_map(|(m, k)| format!("{m} */{k} * * *")),
            (0..60u8, 0..24u8, 0..7u8).prop_map(|(m, h, d)| format!("{m} {h} * * {d}")),
            (0..60u8, 0..24u8, 1..29u8).prop_map(|(m, h, d)| format!("{m} {h} {d} * *")),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn cron_sequences_are_consistent(
            expression in expression(),
            zone in zone(),
            start in FROM..TO,
            pick in any::<usize>(),
            offset in 0..i64::MAX,
        ) {
            let spec = Spec::cron(&expression, zone).unwrap();
            check_sequence(&spec, start, pick, offset);
        }

        /// A daily fixed time (one value, or a list of two twelve hours
        /// apart) runs once a day through each transition: never twice in
        /// an overlap, never lost in a gap. The hour is drawn near the
        /// transition's own wall hour, so the gap or overlap is hit often.
        #[test]
        fn a_daily_fixed_time_runs_once_a_day_through_transitions(
            (s, m, near) in (0..60u8, 0..60u8, -1..=1i8),
            list in any::<bool>(),
            zone in zone(),
            (year, which) in (2000..2040i64, 0..2usize),
        ) {
            let tz = jiff::tz::TimeZone::get(zone).unwrap();
            let jan = jiff::Timestamp::from_second((year - 1970) * 31_556_952).unwrap();
            let Some(t) = tz.following(jan).nth(which) else { return Ok(()) };
            let before = tz.to_offset(t.timestamp() - jiff::SignedDuration::from_secs(1));
            let wall = before.to_datetime(t.timestamp()).hour();
            let h = (wall + near).rem_euclid(24);
            let (expression, apart) = if list {
                (format!("{s} {m} {h},{} * * *", (h + 12) % 24), 12.0)
            } else {
                (format!("{s} {m} {h} * * *"), 24.0)
            };
            let spec = Spec::cron(&expression, zone).unwrap();
            let from = t.timestamp().as_millisecond() - 3 * 86_400_000;
            for w in walk(&spec, from, 12).windows(2) {
                let hours = (w[1] - w[0]) as f64 / 3_600_000.0;
                prop_assert!(
                    (apart - 2.0..=apart + 2.0).contains(&hours),
                    "{expression} in {zone}: {hours} h between {w:?}"
                );
            }
        }

        /// Every N minutes (N dividing the half-hour) is N real minutes,
        /// across the transitions of the year around `start`.
        #[test]
        fn every_n_minutes_is_n_real_minutes(
            n in prop::sample::select(&[5i64, 10, 15, 30][..]),
            zone in zone(),
            year in 2000..2040i64,
        ) {
            let spec = Spec::cron(&format!("*/{n} * * * *"), zone).unwrap();
            let tz = jiff::tz::TimeZone::get(zone).unwrap();
            let jan = jiff::Timestamp::from_second((year - 1970) * 31_556_952).unwrap();
            // Around each transition of that year.
            for t in tz.following(jan).take(2) {
                let at = t.timestamp().as_millisecond();
                let runs = walk(&spec, at - 3 * 3_600_000, 6 * 60 / n as usize);
                prop_assert!(runs.windows(2).all(|w| w[1] - w[0] == n * 60_000), "{runs:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_sequences_are_consistent(
        period_s in 1..200_000u64,
        anchor in 0..TO,
        start in -1..TO,
        pick in any::<usize>(),
        offset in 0..i64::MAX,
    ) {
        let anchor = UNIX_EPOCH + Duration::from_millis(anchor as u64);
        let spec = Spec::every_from(Duration::from_secs(period_s), anchor).unwrap();
        check_sequence(&spec, start, pick, offset);
        let runs = walk(&spec, start, 5);
        let period = period_s as Ms * 1_000;
        prop_assert!(runs.windows(2).all(|w| w[1] - w[0] == period));
        prop_assert!(runs.iter().all(|r| (r - anchor_ms(anchor)).rem_euclid(period) == 0));
    }

    /// Planning never creates a run twice: advancing a chain from any
    /// sequence of "now"s yields each slot at most once, in order, and the
    /// created runs plus pending are slots of the schedule.
    #[test]
    fn plans_never_repeat_a_run(
        period_s in 1..600u64,
        nows in prop::collection::vec(0..7_200_000i64, 1..8),
        policy in 0..4u8,
    ) {
        let catch_up = match policy {
            0 => CatchUp::Skip,
            1 => CatchUp::Latest,
            2 => CatchUp::All { window: Duration::from_secs(600) },
            _ => CatchUp::All { window: crate::schedule::DEFAULT_CATCH_UP_WINDOW },
        };
        let spec = Spec::every(Duration::from_secs(period_s)).unwrap();
        let schedule = Schedule::builder(spec.clone()).catch_up(catch_up).build().unwrap();
        let mut nows = nows;
        nows.sort_unstable();
        // The chain: the pending run held as a timer; when it comes due it
        // is claimed, and the schedule is planned with it as the last run.
        let mut pending: Option<std::time::SystemTime> = None;
        let mut created = 0u64;
        let mut seen: Vec<Ms> = Vec::new();
        for now in nows {
            let now = UNIX_EPOCH + Duration::from_millis(now as u64);
            if pending.is_some_and(|p| p > now) {
                continue;
            }
            let plan = schedule.plan(pending, created, now);
            for run in plan.create.iter().chain(plan.pending.iter()) {
                let ms = super::instant::floor_ms(*run);
                prop_assert!(seen.last().is_none_or(|l| *l < ms), "{seen:?} then {ms}");
                prop_assert_eq!(spec.next_ms(ms - 1), Some(ms));
                prop_assert!(*run < now || Some(*run) == plan.pending);
                seen.push(ms);
                created += 1;
            }
            pending = plan.pending;
        }
    }
}

fn anchor_ms(anchor: std::time::SystemTime) -> Ms {
    super::instant::floor_ms(anchor)
}
