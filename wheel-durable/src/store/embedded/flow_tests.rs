//! Flow control on the embedded store beyond what the differential
//! harness's short inputs reach: a resume longer than one batch, compared
//! with the model step by step and across a reopen; the paused state
//! surviving a reopen; a store whose directory predates the flow
//! keyspaces; the wake-up a resume gives; limits surviving a reopen while
//! the rate, the permits and the breakers start fresh; deferred claims
//! handed out at their key's allowance over several spans, kept across a
//! reopen, and refused whole for a bad key.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::*;
use crate::store::flow_state::{BreakerLimits, MAX_FLOW_KEY, Phase, Rate};
use crate::store::model::Model;
use crate::store::{Claimed, UNPARK_BATCH};

fn manual(clock: &Arc<AtomicU64>) -> StoreClock {
    StoreClock::Manual(clock.clone())
}

/// Every claim due by now, however many.
fn claim_all() -> ClaimRequest {
    ClaimRequest {
        window: 0,
        lease: 10_000,
        max: usize::MAX,
        max_attempts: 3,
    }
}

/// Adds `n` timers, two per due time, claims them and starts them under
/// flow key `flow`: the store answers each start as the model does.
fn park_all(stores: &[&dyn Store], n: usize, flow: &str) {
    let keys: Vec<String> = (0..n).map(|i| format!("t{i:05}")).collect();
    let timers: Vec<NewTimer<'_>> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| NewTimer {
            key: k,
            due: Due::At(i as u64 / 2),
            payload: b"",
        })
        .collect();
    let answers: Vec<Vec<Start>> = stores
        .iter()
        .map(|s| {
            s.add(&timers, AddMode::Replace).unwrap();
            let claimed = s.claim(&claim_all()).unwrap().timers;
            assert_eq!(claimed.len(), n);
            assert!(s.set_paused(Some(flow), true).unwrap());
            let held: Vec<Fenced<'_>> = claimed.iter().map(Claimed::fenced).collect();
            s.start_runs(&held, &[], &vec![flow; n], 100).unwrap()
        })
        .collect();
    assert!(answers[0].iter().all(|a| matches!(a, Start::Paused { .. })));
    assert!(answers.windows(2).all(|w| w[0] == w[1]));
}

/// What the two stores hold, as far as flow control shows it.
fn same(model: &Model, store: &Embedded) {
    assert_eq!(store.flows().unwrap(), model.flows().unwrap());
    assert_eq!(store.counts().unwrap(), model.counts().unwrap());
    for which in [Listing::Pending, Listing::Parked] {
        let page = |s: &dyn Store| s.list(which, None, 3).unwrap();
        assert_eq!(page(store), page(model), "{which:?}");
    }
}

#[test]
fn a_long_resume_continues_in_the_claims_as_the_model_does_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let clock = Arc::new(AtomicU64::new(5_000));
    let model = Model::new(manual(&clock));
    let mut store = Embedded::open(&path, manual(&clock), 10).unwrap();
    let n = 2 * UNPARK_BATCH + 7;
    park_all(&[&model, &store], n, "f");
    same(&model, &store);
    assert!(store.set_paused(Some("f"), false).unwrap());
    assert!(model.set_paused(Some("f"), false).unwrap());
    same(&model, &store);
    assert_eq!(
        store.flows().unwrap().keys[0].parked,
        (n - UNPARK_BATCH) as u64
    );
    // The resume is durable half-way: the reopened store goes on with it.
    store.close().unwrap();
    store = Embedded::open(&path, manual(&clock), 10).unwrap();
    same(&model, &store);
    let peek = ClaimRequest {
        max: 0,
        ..claim_all()
    };
    for _ in 0..3 {
        assert_eq!(store.claim(&peek).unwrap(), model.claim(&peek).unwrap());
        same(&model, &store);
    }
    assert!(store.flows().unwrap().keys.is_empty());
    assert_eq!(store.counts().unwrap().pending, n as u64);
    // Fences jumped ahead at the reopen: the claims agree but for them.
    let order = |s: &dyn Store| -> Vec<(Millis, String)> {
        let batch = s.claim(&claim_all()).unwrap();
        batch.timers.into_iter().map(|c| (c.due, c.key)).collect()
    };
    let all = order(&store);
    assert!(all == order(&model), "the claims differ from the model's");
    assert_eq!(all.len(), n);
    assert!(all.is_sorted(), "due order, as they were added");
    store.close().unwrap();
}

/// Pausing a key again stops its resume; resuming it once more starts
/// over from its earliest parked timer.
#[test]
fn a_pause_during_a_resume_stops_it_as_the_model_does() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicU64::new(5_000));
    let model = Model::new(manual(&clock));
    let store = Embedded::open(&dir.path().join("store"), manual(&clock), 10).unwrap();
    park_all(&[&model, &store], UNPARK_BATCH + 3, "f");
    let peek = ClaimRequest {
        max: 0,
        ..claim_all()
    };
    for s in [&model as &dyn Store, &store] {
        assert!(s.set_paused(Some("f"), false).unwrap());
        assert!(s.set_paused(Some("f"), true).unwrap());
        s.claim(&peek).unwrap();
    }
    same(&model, &store);
    assert_eq!(store.flows().unwrap().keys[0].parked, 3, "still parked");
    // A cancel and a reschedule take parked timers out of the count.
    let last = format!("t{:05}", UNPARK_BATCH + 2);
    for s in [&model as &dyn Store, &store] {
        assert!(s.cancel(&last).unwrap());
        assert!(
            s.reschedule(&format!("t{:05}", UNPARK_BATCH), Due::At(1))
                .unwrap()
        );
        assert!(s.set_paused(Some("f"), false).unwrap());
    }
    same(&model, &store);
    assert!(store.flows().unwrap().keys.is_empty());
}

#[test]
fn the_paused_state_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let clock = Arc::new(AtomicU64::new(5_000));
    let model = Model::new(manual(&clock));
    let store = Embedded::open(&path, manual(&clock), 10).unwrap();
    park_all(&[&model, &store], 4, "g");
    for s in [&model as &dyn Store, &store] {
        assert!(s.set_paused(Some("h"), true).unwrap());
        assert!(s.set_paused(None, true).unwrap());
    }
    store.close().unwrap();
    let store = Embedded::open(&path, manual(&clock), 10).unwrap();
    same(&model, &store);
    let flows = store.flows().unwrap();
    assert!(flows.paused);
    let keys: Vec<(&str, bool, u64)> = flows
        .keys
        .iter()
        .map(|k| (k.key.as_str(), k.paused, k.parked))
        .collect();
    assert_eq!(keys, [("g", true, 4), ("h", true, 0)]);
    let info = store.get("t00000").unwrap().unwrap();
    assert_eq!(info.state, crate::TimerState::Parked);
    // Still paused: a claim takes nothing and names no next due time.
    let batch = store.claim(&claim_all()).unwrap();
    assert_eq!(batch, model.claim(&claim_all()).unwrap());
    assert_eq!((batch.timers.len(), batch.next_due), (0, None));
    store.close().unwrap();
}

/// A directory written before the flow keyspaces existed (only the
/// keyspaces it had then) opens, and pausing works on it.
#[test]
fn a_store_from_before_flow_control_opens_and_pauses() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let db = Database::builder(&path).open().unwrap();
    for name in &spaces::NAMES[..10] {
        db.keyspace(name, fjall::KeyspaceCreateOptions::default)
            .unwrap();
    }
    drop(db);
    let store = Embedded::open(&path, StoreClock::Real, 10).unwrap();
    assert_eq!(store.flows().unwrap(), FlowsState::default());
    assert!(store.set_paused(Some("f"), true).unwrap());
    assert_eq!(store.flows().unwrap().keys[0].key, "f");
    assert_eq!(store.counts().unwrap().parked, 0);
    store.close().unwrap();
}

/// Resuming a key whose parked timers come due, or the namespace, wakes
/// the watchers as an add of a due timer does; a pause wakes nobody.
#[test]
fn resumes_wake_the_watchers() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicU64::new(5_000));
    let store = Embedded::open(&dir.path().join("store"), manual(&clock), 10).unwrap();
    park_all(&[&store], 2, "f");
    let woken = Arc::new(AtomicUsize::new(0));
    let w = woken.clone();
    store
        .watch(Arc::new(move |_| {
            w.fetch_add(1, Ordering::SeqCst);
        }))
        .unwrap();
    // The writer wakes the watchers of a group before it runs the next
    // one, so a later call's answer means the earlier wakes happened.
    let after = |paused: Option<&str>, pause: bool| {
        store.set_paused(paused, pause).unwrap();
        store.counts().unwrap();
        woken.load(Ordering::SeqCst)
    };
    assert_eq!(after(None, true), 0);
    assert_eq!(after(Some("f"), false), 1, "two parked timers made pending");
    assert_eq!(after(None, false), 2, "the namespace's due timers");
    store.close().unwrap();
}

/// A parked timer has no fence: renew, finish and release refuse it, a
/// paused key must be a valid flow key.
#[test]
fn a_parked_timer_is_held_by_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicU64::new(5_000));
    let store = Embedded::open(&dir.path().join("store"), manual(&clock), 10).unwrap();
    let t = NewTimer {
        key: "k",
        due: Due::At(1),
        payload: b"",
    };
    store.add(&[t], AddMode::Replace).unwrap();
    let claimed = store.claim(&claim_all()).unwrap().timers;
    let held = [claimed[0].fenced()];
    store.set_paused(Some("f"), true).unwrap();
    let started = store.start_runs(&held, &[], &["f"], 100).unwrap();
    assert!(matches!(started[..], [Start::Paused { now: 5_000 }]));
    assert_eq!(store.renew(&held, 100).unwrap(), [false]);
    assert_eq!(
        store.finish(&[(held[0], Finish::Done)], &[]).unwrap(),
        [false]
    );
    assert_eq!(store.release(&held).unwrap(), [false]);
    assert_eq!(store.counts().unwrap().claimed, 0);
    let e = store.set_paused(Some(""), true).unwrap_err();
    assert!(matches!(e, DurableError::InvalidFlow(_)), "{e:?}");
    store.close().unwrap();
}

/// Limits, own and default, are durable, their removal too; what the
/// gates hold (the rate's slot, the permits, the breaker) starts fresh at
/// open, and a timer the breaker parked is made pending by the first
/// claim.
#[test]
fn limits_survive_a_reopen_and_the_gates_start_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let clock = Arc::new(AtomicU64::new(5_000));
    let store = Embedded::open(&path, manual(&clock), 10).unwrap();
    let own = Limits {
        rate: Some(Rate {
            count: 1,
            period: 10_000,
            burst: 1,
        }),
        parallelism: Some(1),
        breaker: Some(BreakerLimits {
            failures: 1,
            cooldown: 60_000,
            max_cooldown: 60_000,
            pause_after: None,
        }),
    };
    let defaults = Limits {
        parallelism: Some(3),
        ..Limits::default()
    };
    store.set_limits(Some("f"), Some(&own)).unwrap();
    store.set_limits(None, Some(&defaults)).unwrap();
    store.set_limits(Some("g"), Some(&defaults)).unwrap();
    store.set_limits(Some("g"), None).unwrap();
    let timers: Vec<NewTimer<'_>> = ["a", "b"]
        .into_iter()
        .map(|key| NewTimer {
            key,
            due: Due::At(1),
            payload: b"",
        })
        .collect();
    store.add(&timers, AddMode::Replace).unwrap();
    let claimed = store.claim(&claim_all()).unwrap().timers;
    let held: Vec<Fenced<'_>> = claimed.iter().map(Claimed::fenced).collect();
    let started = store.start_runs(&held, &[], &["f", "f"], 100).unwrap();
    assert_eq!(
        started,
        [
            Start::Started {
                now: 5_000,
                attempt: 1
            },
            Start::Wait {
                now: 5_000,
                until: 5_100
            }
        ],
        "one permit"
    );
    let failed = FlowOutcome {
        flow: "f",
        class: FlowClass::Failure { retry_after: 0 },
    };
    let retry = Finish::Retry { delay: 100_000 };
    assert_eq!(
        store.finish(&[(held[0], retry)], &[failed]).unwrap(),
        [true]
    );
    let again = store.start_runs(&held[1..], &[], &["f"], 100).unwrap();
    assert_eq!(again, [Start::Paused { now: 5_000 }], "the breaker is open");
    let f = store.flows().unwrap().keys.remove(0);
    assert_eq!((f.parked, f.breaker.phase), (1, Phase::Open));
    store.close().unwrap();

    let store = Embedded::open(&path, manual(&clock), 10).unwrap();
    let flows = store.flows().unwrap();
    assert_eq!(flows.defaults, Some(defaults));
    let keys: Vec<(&str, Option<Limits>, u64, Phase)> = flows
        .keys
        .iter()
        .map(|k| (k.key.as_str(), k.limits, k.parked, k.breaker.phase))
        .collect();
    assert_eq!(keys, [("f", Some(own), 1, Phase::Closed)]);
    let claimed = store.claim(&claim_all()).unwrap().timers;
    assert_eq!(claimed.len(), 1, "b made pending and claimed");
    assert_eq!(claimed[0].key, "b");
    // Neither the permit nor the slot `a` took is remembered.
    let started = store.start_runs(&[claimed[0].fenced()], &[], &["f"], 100);
    assert_eq!(
        started.unwrap(),
        [Start::Started {
            now: 5_000,
            attempt: 1
        }]
    );
    let f = store.flows().unwrap().keys.remove(0);
    assert_eq!((f.in_flight, f.parked), (1, 0));
    store.close().unwrap();
}

/// Permits as the model counts them: a lease that passed frees one
/// before any claim takes it back, a renewal of that run holds it again,
/// a finish gives it back; `Wait` names the earliest lease end.
#[test]
fn permits_are_valid_while_their_run_holds_its_lease_as_in_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicU64::new(5_000));
    let model = Model::new(manual(&clock));
    let store = Embedded::open(&dir.path().join("store"), manual(&clock), 10).unwrap();
    let stores = [&model as &dyn Store, &store];
    let two = Limits {
        parallelism: Some(2),
        ..Limits::default()
    };
    let keys = ["a", "b", "c", "d"];
    let mut claimed = Vec::new();
    for s in stores {
        s.set_limits(Some("f"), Some(&two)).unwrap();
        let timers: Vec<NewTimer<'_>> = keys
            .iter()
            .map(|key| NewTimer {
                key,
                due: Due::At(1),
                payload: b"",
            })
            .collect();
        s.add(&timers, AddMode::Replace).unwrap();
        claimed = s.claim(&claim_all()).unwrap().timers;
    }
    let run = |i: usize| claimed.iter().find(|c| c.key == keys[i]).unwrap().fenced();
    let start = |i: usize| -> Start {
        let answers: Vec<Start> = stores
            .iter()
            .map(|s| s.start_runs(&[run(i)], &[], &["f"], 100).unwrap()[0])
            .collect();
        assert_eq!(answers[0], answers[1], "start of {}", keys[i]);
        answers[0]
    };
    let in_flight = || {
        let flows = store.flows().unwrap();
        assert_eq!(flows, model.flows().unwrap());
        flows.keys.first().map_or(0, |k| k.in_flight)
    };
    assert!(matches!(start(0), Start::Started { .. }));
    clock.fetch_add(50, Ordering::SeqCst);
    assert!(matches!(start(1), Start::Started { .. }));
    assert_eq!(
        start(2),
        Start::Wait {
            now: 5_050,
            until: 5_100
        }
    );
    clock.fetch_add(70, Ordering::SeqCst);
    assert_eq!(in_flight(), 1, "a's lease passed");
    assert!(matches!(start(2), Start::Started { .. }));
    for s in stores {
        assert_eq!(s.renew(&[run(0)], 100).unwrap(), [true]);
    }
    assert_eq!(in_flight(), 3, "the renewal holds a's permit again");
    assert_eq!(
        start(3),
        Start::Wait {
            now: 5_120,
            until: 5_150
        }
    );
    for s in stores {
        assert_eq!(s.finish(&[(run(1), Finish::Done)], &[]).unwrap(), [true]);
    }
    assert_eq!(in_flight(), 2);
    assert_eq!(
        start(3),
        Start::Wait {
            now: 5_120,
            until: 5_220
        }
    );
    store.close().unwrap();
}

/// Adds `n` timers named `prefix` and a number, due 1 ms apart from 0,
/// and claims them all; answers the claims.
fn claim_new(s: &dyn Store, prefix: &str, n: usize) -> Vec<Claimed> {
    let keys: Vec<String> = (0..n).map(|i| format!("{prefix}{i:05}")).collect();
    let timers: Vec<NewTimer<'_>> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| NewTimer {
            key: k,
            due: Due::At(i as u64),
            payload: b"",
        })
        .collect();
    s.add(&timers, AddMode::Replace).unwrap();
    let claimed = s.claim(&claim_all()).unwrap().timers;
    assert_eq!(claimed.len(), n);
    claimed
}

/// 300 starts a second: an allowance of 300 a wake-up.
fn rate_300() -> Limits {
    Limits {
        rate: Some(Rate {
            count: 300,
            period: 1_000,
            burst: 1,
        }),
        ..Limits::default()
    }
}

/// Deferred claims of a rate-limited key come back its allowance per
/// span; a key without limits within the claims' budget, continued by
/// the next claim. Both stores hand out the same timers at each step.
#[test]
fn deferred_claims_come_back_at_the_allowance_as_the_model_does() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicU64::new(5_000));
    let model = Model::new(manual(&clock));
    let store = Embedded::open(&dir.path().join("store"), manual(&clock), 10).unwrap();
    let (rated, open) = (700, UNPARK_BATCH + 200);
    for s in [&model as &dyn Store, &store] {
        s.set_limits(Some("r"), Some(&rate_300())).unwrap();
        for (flow, n) in [("r", rated), ("u", open)] {
            let claimed = claim_new(s, flow, n);
            let held: Vec<Fenced<'_>> = claimed.iter().map(Claimed::fenced).collect();
            let parked = s.defer(&held, &vec![flow; n]).unwrap();
            assert!(parked.iter().all(|&p| p));
        }
    }
    same(&model, &store);
    let peek = ClaimRequest {
        max: 0,
        ..claim_all()
    };
    let parked = |s: &Embedded| -> Vec<(String, u64)> {
        let keys = s.flows().unwrap().keys;
        let with_parked = keys.into_iter().filter(|k| k.parked > 0);
        with_parked.map(|k| (k.key, k.parked)).collect()
    };
    let r_u = |r: u64, u: u64| vec![("r".to_owned(), r), ("u".to_owned(), u)];
    // Each step: the clock's move, then what is left parked after a claim.
    let steps = [
        (0, r_u(700, 1200)),
        (1_000, r_u(400, 500)),
        (0, vec![("r".to_owned(), 400)]),
        (999, vec![("r".to_owned(), 400)]),
        (1, vec![("r".to_owned(), 100)]),
        (1_000, vec![]),
    ];
    for (i, (tick, left)) in steps.into_iter().enumerate() {
        clock.fetch_add(tick, Ordering::SeqCst);
        assert_eq!(store.claim(&peek).unwrap(), model.claim(&peek).unwrap());
        same(&model, &store);
        assert_eq!(parked(&store), left, "step {i}");
    }
    assert_eq!(store.counts().unwrap().pending, (rated + open) as u64);
    store.close().unwrap();
}

/// A deferral is kept like a parking at a start: the reopened store
/// holds the timers parked and wakes their keys at once, each within its
/// allowance (the rate starts fresh).
#[test]
fn deferred_claims_stay_parked_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let clock = Arc::new(AtomicU64::new(5_000));
    let mut store = Embedded::open(&path, manual(&clock), 10).unwrap();
    store.set_limits(Some("r"), Some(&rate_300())).unwrap();
    let claimed = claim_new(&store, "r", 400);
    let held: Vec<Fenced<'_>> = claimed.iter().map(Claimed::fenced).collect();
    assert!(store.defer(&held, &["r"; 400]).unwrap().iter().all(|&p| p));
    // A deferred claim is no longer held: its fence is stale.
    assert_eq!(store.defer(&held[..1], &["r"]).unwrap(), [false]);
    assert_eq!(store.release(&held[..1]).unwrap(), [false]);
    store.close().unwrap();
    store = Embedded::open(&path, manual(&clock), 10).unwrap();
    let counts = store.counts().unwrap();
    assert_eq!((counts.parked, counts.pending, counts.claimed), (400, 0, 0));
    let peek = ClaimRequest {
        max: 0,
        ..claim_all()
    };
    store.claim(&peek).unwrap();
    let counts = store.counts().unwrap();
    assert_eq!((counts.parked, counts.pending), (100, 300));
    let first = store.list(Listing::Pending, None, 1).unwrap();
    assert_eq!(first[0].info.key, "r00000", "earliest first");
    store.close().unwrap();
}

/// A bad flow key, or a count of keys other than the claims', fails the
/// whole call with `InvalidFlow`; every claim stays held.
#[test]
fn a_deferral_with_a_bad_key_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicU64::new(5_000));
    let store = Embedded::open(&dir.path().join("store"), manual(&clock), 10).unwrap();
    let claimed = claim_new(&store, "t", 2);
    let held: Vec<Fenced<'_>> = claimed.iter().map(Claimed::fenced).collect();
    let long = "k".repeat(MAX_FLOW_KEY + 1);
    let bad: [&[&str]; 4] = [&["f", ""], &["f", "a\nb"], &["f", long.as_str()], &["f"]];
    for flows in bad {
        let e = store.defer(&held, flows).unwrap_err();
        assert!(matches!(e, DurableError::InvalidFlow(_)), "{flows:?}: {e}");
    }
    let counts = store.counts().unwrap();
    assert_eq!((counts.parked, counts.claimed), (0, 2));
    assert!(store.flows().unwrap().keys.is_empty());
    assert_eq!(store.release(&held).unwrap(), [true, true]);
    store.close().unwrap();
}
