//! Redis-specific tests of flow control: what the differential tests
//! cannot show with one store handle — several handles (nodes) on one
//! namespace sharing a key's rate and breaker — and permits given back by
//! a lease that passed, read from the Redis keys themselves. The two
//! nodes of a test call differently, one the function library, one the
//! scripts: both forms share the keys.
//!
//! Node state: none.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use super::{Mode, Options, Part, RedisStore, Servers};
use crate::AddMode;
use crate::store::flow_state::{BreakerLimits, FlowClass, Phase, Rate};
use crate::store::{
    ClaimRequest, Claimed, Due, Fenced, Finish, FlowOutcome, Limits, NewTimer, Start, Store,
    StoreClock,
};
use wheel_testkit::{RedisServer, ServerOptions};

/// A store calling as `mode` says.
fn open(server: &RedisServer, clock: StoreClock, mode: Mode) -> RedisStore {
    let options = Options {
        servers: Servers::One(server.url()),
        part: Part::WHOLE,
        namespace: "flows".into(),
        clock,
        window: 10,
        unavailable_after: Duration::from_secs(2),
        replicas: None,
    };
    match mode {
        Mode::Functions => RedisStore::open(options),
        Mode::Scripts => RedisStore::open_scripts(options),
    }
    .expect("open the Redis store")
}

fn add_due(store: &RedisStore, keys: &[&str], at: u64) {
    let timers: Vec<NewTimer<'_>> = keys
        .iter()
        .map(|key| NewTimer {
            key,
            due: Due::At(at),
            payload: b"",
        })
        .collect();
    store.add(&timers, AddMode::Replace).unwrap();
}

fn claim(store: &RedisStore, max: usize) -> Vec<Claimed> {
    let req = ClaimRequest {
        window: 0,
        lease: 60_000,
        max,
        max_attempts: 10,
    };
    store.claim(&req).unwrap().timers
}

/// Starts `claims` under the flow key `flow` with a run lease of `lease`.
fn start(store: &RedisStore, claims: &[Claimed], flow: &str, lease: u64) -> Vec<Start> {
    let held: Vec<Fenced<'_>> = claims.iter().map(Claimed::fenced).collect();
    let flows = vec![flow; claims.len()];
    store.start_runs(&held, &[], &flows, lease).unwrap()
}

fn in_flight(store: &RedisStore, flow: &str) -> u32 {
    let state = store.flows().unwrap();
    let entry = state.keys.iter().find(|e| e.key == flow);
    entry.map_or(0, |e| e.in_flight)
}

/// Runs `test` once with a store of each mode.
fn in_both_modes(test: impl Fn(Mode)) {
    for mode in [Mode::Functions, Mode::Scripts] {
        test(mode);
    }
}

/// A run that took a permit and whose node died (no finish, no renewal)
/// gives the permit back once its lease passes by the store's clock; until
/// then a renewal keeps it, and the next claim of the key waits for it.
#[test]
fn the_permit_of_a_run_whose_lease_passed_comes_back() {
    in_both_modes(|mode| {
        let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
            return;
        };
        let clock = Arc::new(AtomicU64::new(10_000));
        let store = open(&server, StoreClock::Manual(clock.clone()), mode);
        let one = Limits {
            parallelism: Some(1),
            ..Limits::default()
        };
        store.set_limits(Some("f"), Some(&one)).unwrap();
        add_due(&store, &["dies", "waits"], 9_000);
        let claims = claim(&store, 2);
        assert_eq!(claims.len(), 2);
        let (dies, waits) = (&claims[..1], &claims[1..]);
        assert!(matches!(
            start(&store, dies, "f", 100)[..],
            [Start::Started { .. }]
        ));
        assert_eq!(in_flight(&store, "f"), 1);
        let wait = Start::Wait {
            now: 10_000,
            until: 10_100,
        };
        assert_eq!(start(&store, waits, "f", 100), [wait]);

        // A renewal keeps the permit and moves the wait with the lease.
        clock.store(10_050, Ordering::SeqCst);
        assert_eq!(store.renew(&[dies[0].fenced()], 100).unwrap(), [true]);
        let wait = Start::Wait {
            now: 10_050,
            until: 10_150,
        };
        assert_eq!(start(&store, waits, "f", 100), [wait]);

        // Its node is gone: nothing renews it, and at its lease end the permit
        // is back, before any claim takes the lease back.
        clock.store(10_150, Ordering::SeqCst);
        assert_eq!(in_flight(&store, "f"), 0);
        let started = start(&store, waits, "f", 100);
        assert!(matches!(started[..], [Start::Started { now: 10_150, .. }]));
        assert_eq!(in_flight(&store, "f"), 1);
        // The dead run's member left the key's set; the live one stays.
        let mut c = redis::Client::open(server.url())
            .unwrap()
            .get_connection()
            .unwrap();
        let mut members = || -> u64 {
            redis::cmd("ZCARD")
                .arg("{flows}:inflight:f")
                .query(&mut c)
                .unwrap()
        };
        assert_eq!(members(), 1);
        // Its finish gives it back at once, and nothing of it is left.
        let done = [(waits[0].fenced(), Finish::Done)];
        assert_eq!(store.finish(&done, &[]).unwrap(), [true]);
        assert_eq!(members(), 0);
        assert_eq!(in_flight(&store, "f"), 0);
        for key in ["{flows}:inflight", "{flows}:permits"] {
            let n: u64 = redis::cmd("EXISTS").arg(key).query(&mut c).unwrap();
            assert_eq!(n, 0, "{key}");
        }
    });
}

/// Two nodes (two store handles on one namespace, the server's clock)
/// start the timers of one rate-limited key concurrently, each sending a
/// run at its slot: no two slots granted are closer than the interval.
#[test]
fn a_rate_shared_by_two_nodes_never_grants_two_slots_closer_than_its_interval() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    const TIMERS: usize = 60;
    const INTERVAL_MS: u64 = 5; // 200 per second
    let nodes = [
        open(&server, StoreClock::Real, Mode::Functions),
        open(&server, StoreClock::Real, Mode::Scripts),
    ];
    let rate = Limits {
        rate: Some(Rate {
            count: 200,
            period: 1_000,
            burst: 1,
        }),
        ..Limits::default()
    };
    nodes[0].set_limits(Some("f"), Some(&rate)).unwrap();
    let keys: Vec<String> = (0..TIMERS).map(|i| format!("t{i:03}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    add_due(&nodes[0], &keys, 1);
    let granted = AtomicUsize::new(0);
    let slots: Vec<Vec<u64>> = std::thread::scope(|s| {
        let run = |node: &RedisStore| {
            let mut mine = Vec::new();
            let mut held: Vec<Claimed> = Vec::new();
            while granted.load(Ordering::SeqCst) < TIMERS {
                held.extend(claim(node, 3));
                let mut wait_until = None;
                let answers = start(node, &held, "f", 60_000);
                let mut still = Vec::new();
                for (c, a) in held.drain(..).zip(answers) {
                    match a {
                        Start::Started { now, .. } => mine.push(now),
                        Start::Reserved { at, .. } => mine.push(at),
                        Start::Wait { now, until } => {
                            wait_until = Some(until.saturating_sub(now));
                            still.push(c);
                            continue;
                        }
                        other => panic!("{other:?}"),
                    }
                    granted.fetch_add(1, Ordering::SeqCst);
                }
                held = still;
                // As a node does: back when the store said, else soon.
                let ms = wait_until.unwrap_or(1).max(1);
                std::thread::sleep(Duration::from_millis(ms));
            }
            mine
        };
        let handles: Vec<_> = nodes.iter().map(|n| s.spawn(move || run(n))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        slots.iter().all(|s| !s.is_empty()),
        "both nodes sent: {slots:?}"
    );
    let mut all: Vec<u64> = slots.concat();
    assert_eq!(all.len(), TIMERS);
    all.sort_unstable();
    for pair in all.windows(2) {
        assert!(pair[1] - pair[0] >= INTERVAL_MS, "{pair:?} in {all:?}");
    }
}

/// A key's breaker opens on one node's failure; once half-open, the
/// claims both nodes hold start one probe between them, the rest parked;
/// the probe's success closes it for both.
#[test]
fn a_half_open_breaker_lets_one_probe_through_across_two_nodes() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let clock = Arc::new(AtomicU64::new(50_000));
    let a = open(&server, StoreClock::Manual(clock.clone()), Mode::Functions);
    let b = open(&server, StoreClock::Manual(clock.clone()), Mode::Scripts);
    let breaker = Limits {
        breaker: Some(BreakerLimits {
            failures: 1,
            cooldown: 50,
            max_cooldown: 50,
            pause_after: None,
        }),
        ..Limits::default()
    };
    b.set_limits(Some("f"), Some(&breaker)).unwrap();
    add_due(&a, &["first"], 49_000);
    let first = claim(&a, 1);
    assert!(matches!(
        start(&a, &first, "f", 1_000)[..],
        [Start::Started { .. }]
    ));
    let failed = FlowOutcome {
        flow: "f",
        class: FlowClass::Failure { retry_after: 0 },
    };
    let finish = [(first[0].fenced(), Finish::Retry { delay: 60_000 })];
    assert_eq!(a.finish(&finish, &[failed]).unwrap(), [true]);
    let phase = |s: &RedisStore| s.flows().unwrap().keys[0].breaker.phase;
    assert_eq!(phase(&b), Phase::Open);

    // Both nodes hold claims of the key when it turns half-open.
    add_due(&a, &["a1", "a2", "b1", "b2"], 49_500);
    let on_a = claim(&a, 2);
    let on_b = claim(&b, 2);
    assert_eq!((on_a.len(), on_b.len()), (2, 2));
    clock.store(50_050, Ordering::SeqCst);
    assert!(claim(&b, 0).is_empty());
    assert_eq!(phase(&a), Phase::HalfOpen);
    let mut answers = start(&b, &on_b, "f", 1_000);
    answers.extend(start(&a, &on_a, "f", 1_000));
    let probes: Vec<usize> = (0..answers.len())
        .filter(|&i| matches!(answers[i], Start::Started { .. }))
        .collect();
    assert_eq!(probes, [0], "{answers:?}");
    assert!(
        answers[1..]
            .iter()
            .all(|s| matches!(s, Start::Paused { .. }))
    );
    assert_eq!(a.flows().unwrap().keys[0].parked, 3);

    // The probe succeeds on its node: closed, and the parked ones are
    // pending again for either node.
    let ok = FlowOutcome {
        flow: "f",
        class: FlowClass::Success,
    };
    let done = [(on_b[0].fenced(), Finish::Done)];
    assert_eq!(b.finish(&done, &[ok]).unwrap(), [true]);
    assert_eq!(phase(&a), Phase::Closed);
    let again = claim(&a, 10);
    assert_eq!(again.len(), 3);
    let started = start(&a, &again, "f", 1_000);
    assert!(started.iter().all(|s| matches!(s, Start::Started { .. })));
}
