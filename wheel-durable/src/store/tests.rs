//! Differential tests: random sequences of store operations on a manual
//! clock, run on every real store and on the [`Model`](super::model::Model);
//! every answer must be the same. The operations and the bench are the
//! fuzz harness's ([`super::fuzz`]): these tests only generate them.
//!
//! Node state: none.

use proptest::prelude::*;

use super::Store;
use super::fuzz::{DurableBench, DurableOp as Op, FLOWS, KEYS};
use super::fuzz_schedules::{IDS, ScheduleOp};

/// A key index.
fn key() -> impl Strategy<Value = u8> {
    0..KEYS.len() as u8
}

/// A due time, as an offset from now.
fn at() -> impl Strategy<Value = i16> {
    -50i16..200
}

/// A batch of 1 to 4 held timers (the same key may come twice), each with
/// its last fence or, one time in five, a stale one.
fn fenced() -> impl Strategy<Value = Vec<(u8, bool)>> {
    prop::collection::vec((key(), prop::bool::weighted(0.2)), 1..5)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (key(), at(), any::<bool>(), any::<u8>(), prop::bool::weighted(0.3))
            .prop_map(|(key, at, after, payload, if_absent)| Op::Add { key, at, after, payload, if_absent }),
        1 => (prop::collection::vec((key(), at()), 0..4), any::<bool>())
            .prop_map(|(timers, if_absent)| Op::AddMany { timers, if_absent }),
        2 => key().prop_map(Op::Cancel),
        2 => (key(), at()).prop_map(|(key, at)| Op::Reschedule { key, at }),
        1 => key().prop_map(Op::Get),
        4 => (0u8..100, 1u8..100, 0u8..5, 1u8..4).prop_map(|(window, lease, max, max_attempts)| {
            Op::Claim { window, lease, max, max_attempts }
        }),
        4 => (fenced(), flows(), 1u8..100)
            .prop_map(|(keys, flows, lease)| Op::Start { keys, flows, lease }),
        1 => (fenced(), 1u8..100).prop_map(|(keys, lease)| Op::Renew { keys, lease }),
        4 => prop::collection::vec((key(), prop::bool::weighted(0.2), 0u8..3, 0u8..50), 1..5)
            .prop_map(Op::Finish),
        1 => fenced().prop_map(Op::Release),
        1 => (0u8..4).prop_map(Op::DeadLetters),
        1 => (key(), at()).prop_map(|(key, at)| Op::RetryDead { key, at }),
        1 => Just(Op::Counts),
        2 => (0u8..4, prop::option::of((-60i16..200, key())), 0u8..4)
            .prop_map(|(which, after, limit)| Op::List { which, after, limit }),
        1 => (0u8..4, 0u8..3).prop_map(|(which, page)| Op::ListAll { which, page }),
        3 => (0u16..60).prop_map(Op::Advance),
        1 => (500u16..8_000).prop_map(Op::Advance),
        6 => schedule_op().prop_map(Op::Schedule),
        1 => (0u16..300).prop_map(Op::DedupWindow),
        1 => key().prop_map(Op::Ended),
        2 => (0..FLOWS.len() as u8, prop::bool::weighted(0.6))
            .prop_map(|(flow, paused)| Op::Pause { flow, paused }),
        1 => Just(Op::Flows),
        2 => (0..FLOWS.len() as u8, 0u8..8).prop_map(|(flow, limits)| Op::SetLimits { flow, limits }),
        4 => prop::collection::vec(
            (key(), prop::bool::weighted(0.2), 0u8..3, 0u8..50, 0..FLOWS.len() as u8, 0u8..3),
            1..5,
        )
        .prop_map(Op::FlowFinish),
        1 => (fenced(), flows()).prop_map(|(keys, flows)| Op::Defer { keys, flows }),
    ]
}

/// The flow keys of a start's entries: mostly a key, sometimes none (an
/// entry past the end of the list has none too).
fn flows() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0..FLOWS.len() as u8, 0..5)
}

/// A schedule operation: the runs' starts and finishes most often, so
/// that chains advance.
fn schedule_op() -> impl Strategy<Value = ScheduleOp> {
    let id = 0..IDS.len() as u8;
    prop_oneof![
        2 => (id.clone(), any::<u8>(), 0u8..3)
            .prop_map(|(id, def, payload)| ScheduleOp::Upsert { id, def, payload }),
        1 => id.clone().prop_map(ScheduleOp::Pause),
        1 => id.clone().prop_map(ScheduleOp::Resume),
        1 => id.clone().prop_map(ScheduleOp::Delete),
        1 => id.prop_map(ScheduleOp::Trigger),
        1 => Just(ScheduleOp::Replan),
        4 => (1u8..100, prop::bool::weighted(0.1))
            .prop_map(|(lease, stale)| ScheduleOp::StartRuns { lease, stale }),
        3 => (0u8..3, 0u8..50).prop_map(|(how, delay)| ScheduleOp::FinishRuns { how, delay }),
        1 => Just(ScheduleOp::Read),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn stores_agree_with_the_model(ops in prop::collection::vec(op(), 1..120)) {
        super::fuzz::run_durable_ops(&ops);
    }
}

fn add(key: u8, at: i16) -> Op {
    Op::Add {
        key,
        at,
        after: false,
        payload: key.wrapping_add(1),
        if_absent: false,
    }
}

fn add_if_absent(key: u8, at: i16, payload: u8) -> Op {
    Op::Add {
        key,
        at,
        after: false,
        payload,
        if_absent: true,
    }
}

fn start(key: u8, stale: bool, lease: u8) -> Op {
    Op::Start {
        keys: vec![(key, stale)],
        flows: Vec::new(),
        lease,
    }
}

fn finish(key: u8, how: u8, delay: u8) -> Op {
    Op::Finish(vec![(key, false, how, delay)])
}

fn claim(max: u8) -> Op {
    Op::Claim {
        window: 10,
        lease: 20,
        max,
        max_attempts: 2,
    }
}

fn walk(script: &[Op]) {
    let mut bench = DurableBench::new();
    for op in script {
        bench.step(op);
    }
    bench.check_all();
}

/// Hand-written walks through every transition, so that a store that
/// differs fails on a named step even if random sequences miss it.
#[test]
fn claims_starts_and_outcomes_agree_with_the_model() {
    use Op::*;
    walk(&[
        add(0, 5),
        Add {
            key: 1,
            at: 5,
            after: true,
            payload: 2,
            if_absent: false,
        },
        add(2, 500),
        claim(10),
        start(0, false, 30), // not yet due
        Advance(5),
        start(0, true, 30), // a stale fence
        start(0, false, 30),
        finish(0, 1, 3), // retry in 3
        Cancel(1),       // claimed: true
        Advance(3),
        claim(10),
        start(0, false, 30),
        Cancel(0),       // running: false, and removed
        finish(0, 0, 0), // its outcome is ignored
        Counts,
    ]);
}

#[test]
fn leases_dead_letters_and_releases_agree_with_the_model() {
    use Op::*;
    walk(&[
        add(3, 0),
        claim(1),
        start(3, false, 5),
        Advance(6), // the run's lease passes
        claim(1),   // pending again, and claimed again
        start(3, false, 5),
        Advance(6), // passes again, on the last attempt: dead
        claim(1),
        DeadLetters(10),
        Get(3),
        RetryDead { key: 3, at: 0 },
        claim(1),
        Release(vec![(3, false)]),
        Renew {
            keys: vec![(3, false)],
            lease: 9,
        },
        Reschedule { key: 3, at: 100 },
        finish(3, 2, 0), // not running: refused
        Counts,
    ]);
}

/// A batch of starts where, since the claim, one timer was cancelled, one
/// rescheduled, one claimed again by another node (a new fence), and one
/// comes twice: only the ones still held with their fence start, and the
/// outcomes of one batch land entry by entry.
#[test]
fn a_batch_starts_only_the_timers_still_held_with_their_fence() {
    use Op::*;
    walk(&[
        add(0, 0),
        add(1, 0),
        add(2, 0),
        add(3, 0),
        add(4, 0),
        claim(10),
        Cancel(1),
        Reschedule { key: 2, at: 50 },
        Advance(30), // every lease has passed: the next claim takes them again
        claim(10),   // keys 0, 3, 4 again, with new fences; 2 is not due
        Start {
            keys: vec![
                (0, false),
                (1, false),
                (2, false),
                (3, true),
                (4, false),
                (4, false),
            ],
            flows: Vec::new(),
            lease: 20,
        },
        Finish(vec![
            (0, false, 1, 5),
            (4, false, 2, 0),
            (0, false, 0, 0),
            (3, false, 0, 0),
        ]),
        Renew {
            keys: vec![(0, false), (4, false), (3, false)],
            lease: 40,
        },
        Release(vec![(3, false), (3, false), (2, false)]),
        DeadLetters(10),
        Counts,
    ]);
}

/// The timer's (first due, due) in the model, as offsets from [`START`];
/// every store agreed with the model on the steps before.
fn first_and_due(bench: &DurableBench, key: usize) -> (u64, u64) {
    use super::Store;
    let info = bench.model().get(KEYS[key]).unwrap().expect("a timer");
    let at = |t: std::time::SystemTime| {
        let ms = t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
        u64::try_from(ms).unwrap() - super::fuzz::START
    };
    (at(info.first_due), at(info.due))
}

/// Retries and lost leases move the due time but keep the first one, a
/// dead letter keeps both, and the user's own moves (`retry_dead`,
/// `reschedule`, `add`) set both.
#[test]
fn the_first_due_time_survives_retries_and_only_the_user_moves_it() {
    use Op::*;
    let mut bench = DurableBench::new();
    let run = |bench: &mut DurableBench, ops: &[Op]| ops.iter().for_each(|op| bench.step(op));
    run(
        &mut bench,
        &[add(0, 5), Advance(5), claim(1), start(0, false, 30)],
    );
    assert_eq!(first_and_due(&bench, 0), (5, 5));
    run(&mut bench, &[finish(0, 1, 3), Get(0)]);
    assert_eq!(first_and_due(&bench, 0), (5, 8));
    // The second attempt's lease passes on the last attempt: dead.
    run(
        &mut bench,
        &[Advance(3), claim(1), start(0, false, 5), Advance(6)],
    );
    run(&mut bench, &[claim(1), Get(0), DeadLetters(1)]);
    assert_eq!(first_and_due(&bench, 0), (5, 8));
    run(&mut bench, &[RetryDead { key: 0, at: 10 }]);
    assert_eq!(first_and_due(&bench, 0), (24, 24));
    run(&mut bench, &[Advance(10), claim(1), start(0, false, 30)]);
    run(&mut bench, &[finish(0, 1, 4), claim(1)]); // claimed, not due yet
    assert_eq!(first_and_due(&bench, 0), (24, 28));
    run(&mut bench, &[Reschedule { key: 0, at: 50 }, Get(0)]);
    assert_eq!(first_and_due(&bench, 0), (74, 74));
}

/// A claim answers the fence of the timer's first started run: its own
/// fence until a run started, then the same through retries, lost leases,
/// releases and reschedules; a new add or a revived dead letter starts
/// over.
#[test]
fn the_first_fence_names_a_delivery_until_it_is_added_again() {
    use Op::*;
    let mut bench = DurableBench::new();
    let mut run = |ops: &[Op]| {
        ops.iter().for_each(|op| bench.step(op));
        bench.last_claim(0)
    };
    // Claimed and released before any start: each claim is its own.
    let (f1, first) = run(&[add(0, 5), Advance(5), claim(1)]);
    assert_eq!(first, f1);
    let (f2, first) = run(&[Release(vec![(0, false)]), claim(1)]);
    assert!(f2 > f1);
    assert_eq!(first, f2, "no run started under {f1}");
    // Started with f2, retried, then its lease lost: f2 names them all.
    let (f3, first) = run(&[start(0, false, 30), finish(0, 1, 3), Advance(3), claim(1)]);
    assert_eq!((f3 > f2, first), (true, f2));
    let (f4, first) = run(&[
        Release(vec![(0, false)]),
        Reschedule { key: 0, at: 1 },
        Advance(1),
        claim(1),
    ]);
    assert_eq!((f4 > f3, first), (true, f2), "released and rescheduled");
    let patient = Claim {
        window: 10,
        lease: 20,
        max: 1,
        max_attempts: 3,
    };
    let (f5, first) = run(&[start(0, false, 5), Advance(30), patient]);
    assert_eq!((f5 > f4, first), (true, f2), "after a lost lease");
    // The same key added again: a new delivery.
    let (f6, first) = run(&[add(0, 0), claim(1)]);
    assert_eq!(first, f6);
    // Dead on its last attempt, then revived: a new delivery too.
    let (f7, first) = run(&[
        start(0, false, 30),
        finish(0, 1, 0),
        claim(1),
        start(0, false, 30),
        finish(0, 2, 0),
        RetryDead { key: 0, at: 0 },
        claim(1),
    ]);
    assert_eq!(first, f7);
    assert!(f7 > f6);
    bench.check_all();
}

/// `IfAbsent` keeps a timer in every state (pending, claimed, running,
/// dead) and adds once its key is free; `Replace` takes any of them over.
#[test]
fn adds_if_absent_keep_a_timer_in_every_state() {
    use Op::*;
    walk(&[
        add_if_absent(0, 5, 1), // added
        add_if_absent(0, 9, 2), // pending: kept
        Get(0),
        claim(10),
        add_if_absent(0, 9, 3), // claimed: kept
        Advance(5),
        start(0, false, 30),
        add_if_absent(0, 9, 4), // running: kept
        finish(0, 2, 0),        // dead
        add_if_absent(0, 9, 5), // dead: kept
        Get(0),
        AddMany {
            timers: vec![(0, 1), (1, 1), (1, 2)], // 0 dead, 1 added once
            if_absent: true,
        },
        Get(1),
        Cancel(0),
        add_if_absent(0, 9, 6), // free again: added
        Get(0),
        AddMany {
            timers: vec![(0, 3), (0, 4)],
            if_absent: false,
        },
        Get(0),
    ]);
}

/// The dedup window: a key whose timer finished done, was cancelled
/// (pending or running) or whose dead letter was cancelled keeps an
/// add-if-absent out until the window passed by the store clock; a
/// replacing add still adds and forgets; a zero window remembers nothing.
#[test]
fn the_dedup_window_remembers_ended_keys_until_it_passes() {
    use Op::*;
    walk(&[
        add(0, 0),
        Cancel(0),
        Ended(0),               // off: nothing remembered
        add_if_absent(0, 0, 1), // added
        DedupWindow(100),
        claim(10),
        start(0, false, 30),
        finish(0, 0, 0), // done
        Ended(0),
        add_if_absent(0, 5, 2), // remembered: kept out
        AddMany {
            timers: vec![(0, 1), (1, 1)],
            if_absent: true,
        },
        Get(0),
        Advance(99),
        add_if_absent(0, 5, 3), // one ms left: kept out
        Advance(1),
        Ended(0),
        add_if_absent(0, 5, 4), // the window passed: added
        Ended(0),
        Cancel(0), // pending: cancelled
        Ended(0),
        add(0, 5), // replace: added, forgotten
        Ended(0),
        claim(10),
        Advance(5),
        start(0, false, 30),
        Cancel(0), // running: cancelled, the run's outcome ignored
        finish(0, 0, 0),
        Ended(0),
        add_if_absent(0, 5, 5),
        add(2, 0),
        claim(10),
        start(2, false, 30),
        finish(2, 2, 0), // dead: a dead letter, not a memory
        Ended(2),
        add_if_absent(2, 5, 6),
        Advance(30),
        Cancel(2), // the dead letter cancelled: remembered as dead
        Ended(2),
        add_if_absent(2, 5, 7),
        RetryDead { key: 2, at: 0 },
        DedupWindow(0),
        add(3, 0),
        Cancel(3),
        Ended(3), // the window is off again: nothing new remembered
        Ended(2), // older memories stay until they expire
        Advance(200),
        Ended(2),
        add_if_absent(2, 5, 8),
    ]);
}

/// Listings of every state with many timers sharing a score, resumed from
/// positions before, at and between them.
#[test]
fn listings_page_by_position_and_agree_with_the_model() {
    use Op::*;
    let mut script = vec![AddMany {
        timers: (0..KEYS.len() as u8).map(|k| (k, 10)).collect(),
        if_absent: false,
    }];
    script.extend([add(3, 5), claim(3), Advance(10)]);
    script.extend((0..3).map(|k| start(k, false, 20)));
    script.extend([finish(0, 2, 0), finish(1, 2, 0), finish(2, 2, 0)]);
    for which in 0..3 {
        for page in 0..3 {
            script.push(ListAll { which, page });
        }
        for k in 0..KEYS.len() as u8 {
            for at in [-20, 0, 10, 30] {
                script.push(List {
                    which,
                    after: Some((at, k)),
                    limit: 2,
                });
            }
        }
    }
    walk(&script);
}

/// A chain on time, then late after a clock jump (the catch-up policy
/// decides about the late run), then paused, resumed, triggered, with
/// overlapping runs parked, and deleted: every store agrees with the
/// model, and the model's record says what the rules say.
#[test]
fn schedule_chains_agree_with_the_model() {
    use Op::*;
    use ScheduleOp as S;
    let claim = Claim {
        window: 0,
        lease: 100,
        max: 7,
        max_attempts: 3,
    };
    let start = Schedule(S::StartRuns {
        lease: 90,
        stale: false,
    });
    let done = Schedule(S::FinishRuns { how: 0, delay: 0 });
    // Every second, catch-up Latest (2), overlap BufferOne (8).
    let upsert = Schedule(S::Upsert {
        id: 0,
        def: 2 | 8,
        payload: 1,
    });
    let mut bench = DurableBench::new();
    let record = |bench: &DurableBench| {
        let (_, r) = bench.model().schedules(&[IDS[0]]).unwrap();
        r.into_iter().next().flatten()
    };
    for op in [
        &upsert,
        &upsert,
        &claim,
        &start,
        &done,
        &Advance(1_000),
        &claim,
        &start,
    ] {
        bench.step(op);
    }
    let r = record(&bench).unwrap();
    assert_eq!((r.generation, r.runs_created), (1, 3));
    assert_eq!(r.next.as_deref(), Some("sched:s:1700000002000"));
    // A trigger while the run at 1 s runs is parked behind it.
    for op in [&Schedule(S::Trigger(0)), &claim, &start] {
        bench.step(op);
    }
    assert_eq!(
        record(&bench).unwrap().buffered.as_deref(),
        Some("sched-trigger:s:1700000001000")
    );
    // Its finish makes the parked run due: it starts next.
    for op in [&done, &claim, &start, &done] {
        bench.step(op);
    }
    assert_eq!(record(&bench).unwrap().buffered, None);
    // At 5.5 s the pending run at 2 s is late: dropped with 3 and 4, the
    // latest slot (5) runs, 6 is pending.
    for op in [
        &Advance(4_500),
        &claim,
        &start,
        &done,
        &claim,
        &start,
        &done,
    ] {
        bench.step(op);
    }
    let r = record(&bench).unwrap();
    assert_eq!(r.next.as_deref(), Some("sched:s:1700000006000"));
    assert_eq!((r.skipped_missed, r.runs_created), (3, 4));
    pause_resume_and_delete(bench, &claim, &start);
}

/// The rest of [`schedule_chains_agree_with_the_model`], at 5.5 s with the
/// run at 6 s pending.
fn pause_resume_and_delete(mut bench: DurableBench, claim: &Op, start: &Op) {
    use Op::*;
    use ScheduleOp as S;
    let record = |bench: &DurableBench| {
        let (_, r) = bench.model().schedules(&[IDS[0]]).unwrap();
        r.into_iter().next().flatten()
    };
    // Paused at 5.5 s (6 cancelled), resumed at 8.5 s: 7 and 8 skipped.
    for op in [
        &Schedule(S::Pause(0)),
        &Advance(3_000),
        claim,
        start,
        &Schedule(S::Resume(0)),
        &Schedule(S::Read),
    ] {
        bench.step(op);
    }
    let r = record(&bench).unwrap();
    assert!(!r.paused);
    assert_eq!(r.next.as_deref(), Some("sched:s:1700000009000"));
    assert_eq!(r.skipped_paused, 3);
    bench.step(&Schedule(S::Delete(0)));
    assert_eq!(record(&bench), None);
    bench.check_all();
}

fn start_in(key: u8, flow: u8) -> Op {
    Op::Start {
        keys: vec![(key, false)],
        flows: vec![flow],
        lease: 30,
    }
}

fn pause(flow: u8, paused: bool) -> Op {
    Op::Pause { flow, paused }
}

/// Parking and resuming, step by step: a claim of a paused flow key is
/// parked at its start (no attempt), claimed by nobody, cancelled,
/// rescheduled or replaced out of the parked index; a resume makes the
/// rest pending in due order; a paused namespace claims nothing and hands
/// claims back at their start.
#[test]
fn pauses_park_and_resumes_unpark_as_the_model_does() {
    use Op::*;
    walk(&[
        add(0, 0),
        add(1, 3),
        add(2, 0),
        add(3, 0),
        claim(10),
        pause(1, true),
        pause(1, true), // already paused: false
        Advance(3),
        start_in(0, 1), // parked
        start_in(1, 1), // parked
        start_in(2, 2), // another key: started
        start_in(3, 1), // parked, then cancelled below
        Get(0),
        Flows,
        ListAll { which: 3, page: 0 },
        claim(10), // nothing parked is claimed
        Cancel(3),
        Renew {
            keys: vec![(0, false)],
            lease: 9,
        },
        Release(vec![(1, false)]),
        Counts,
        pause(1, false),
        Flows,
        claim(10),      // 0 and 1, earliest due first
        pause(0, true), // the namespace
        start_in(0, 1), // handed back, pending
        claim(10),      // nothing while paused
        Counts,
        pause(0, false),
        claim(10),
        start_in(0, 1),
        // Parked, then moved out by a reschedule and by a replace.
        pause(2, true),
        start_in(1, 2),
        Reschedule { key: 1, at: 50 },
        add(4, 0),
        claim(10),
        start_in(4, 2),
        add(4, 7),
        Flows,
        Counts,
    ]);
}

/// A resume makes at most `UNPARK_BATCH` parked timers pending at once;
/// the claims that follow make the rest pending, earliest first.
#[test]
fn a_long_resume_continues_in_the_claims() {
    use super::model::Model;
    use super::{ClaimRequest, Due, Fenced, NewTimer, StoreClock, UNPARK_BATCH};
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;

    let clock = Arc::new(AtomicU64::new(1_000));
    let model = Model::new(StoreClock::Manual(clock));
    let keys: Vec<String> = (0..UNPARK_BATCH + 5).map(|i| format!("t{i:05}")).collect();
    let timers: Vec<NewTimer<'_>> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| NewTimer {
            key: k,
            due: Due::At(i as u64 / 2),
            payload: b"",
        })
        .collect();
    model.add(&timers, crate::AddMode::Replace).unwrap();
    let req = ClaimRequest {
        window: 0,
        lease: 10_000,
        max: usize::MAX,
        max_attempts: 3,
    };
    let claimed = model.claim(&req).unwrap().timers;
    model.set_paused(Some("f"), true).unwrap();
    let held: Vec<Fenced<'_>> = claimed.iter().map(|c| c.fenced()).collect();
    let flows = vec!["f"; held.len()];
    model.start_runs(&held, &[], &flows, 100).unwrap();
    assert_eq!(model.flows().unwrap().keys[0].parked, keys.len() as u64);
    assert!(model.set_paused(Some("f"), false).unwrap());
    assert_eq!(model.flows().unwrap().keys[0].parked, 5, "the rest waits");
    assert_eq!(model.counts().unwrap().pending, UNPARK_BATCH as u64);
    let next = model.claim(&ClaimRequest { max: 0, ..req }).unwrap();
    assert_eq!(
        next.next_due,
        Some(0),
        "the earliest were made pending first"
    );
    assert!(model.flows().unwrap().keys.is_empty());
    assert_eq!(model.counts().unwrap().pending, keys.len() as u64);
}
