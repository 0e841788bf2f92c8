//! Flow control's rules, step by step: first on the model with the answers
//! written out (so that the reference itself is checked), then the same
//! steps through the differential bench, where every store must answer as
//! the model does.
//!
//! Node state: none.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::flow_state::{BreakerLimits, FlowClass, Phase, Rate};
use super::fuzz::{DurableBench, DurableOp as Op};
use super::model::Model;
use super::{
    ClaimRequest, Claimed, Due, Fenced, Finish, FlowOutcome, Limits, NewTimer, Start, Store,
    StoreClock,
};
use crate::{AddMode, TimerState};

const T0: u64 = 1_000_000;

struct Walk {
    clock: Arc<AtomicU64>,
    model: Model,
}

impl Walk {
    fn new(limits: Limits) -> Walk {
        let clock = Arc::new(AtomicU64::new(T0));
        let model = Model::new(StoreClock::Manual(clock.clone()));
        model.set_limits(Some("f"), Some(&limits)).unwrap();
        Walk { clock, model }
    }

    fn now(&self) -> u64 {
        self.clock.load(Ordering::SeqCst)
    }

    fn advance(&self, ms: u64) {
        self.clock.fetch_add(ms, Ordering::SeqCst);
    }

    /// Adds `n` timers due now and claims them.
    fn claimed(&self, n: usize) -> Vec<Claimed> {
        let keys: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
        let timers: Vec<NewTimer<'_>> = keys
            .iter()
            .map(|k| NewTimer {
                key: k,
                due: Due::At(self.now()),
                payload: b"",
            })
            .collect();
        self.model.add(&timers, AddMode::Replace).unwrap();
        self.claim()
    }

    fn claim(&self) -> Vec<Claimed> {
        let req = ClaimRequest {
            window: 0,
            lease: 5_000,
            max: 100,
            max_attempts: 9,
        };
        self.model.claim(&req).unwrap().timers
    }

    fn start(&self, claims: &[&Claimed]) -> Vec<Start> {
        let held: Vec<Fenced<'_>> = claims.iter().map(|c| c.fenced()).collect();
        let flows = vec!["f"; held.len()];
        self.model.start_runs(&held, &[], &flows, 1_000).unwrap()
    }

    fn finish(&self, c: &Claimed, class: FlowClass) -> bool {
        let out = FlowOutcome { flow: "f", class };
        let how = match class {
            FlowClass::Success => Finish::Done,
            _ => Finish::Retry { delay: 0 },
        };
        self.model.finish(&[(c.fenced(), how)], &[out]).unwrap()[0]
    }

    fn phase(&self) -> (Phase, Option<u64>) {
        let flows = self.model.flows().unwrap();
        let f = flows
            .keys
            .iter()
            .find(|k| k.key == "f")
            .expect("f is listed");
        (f.breaker.phase, f.breaker.until)
    }
}

fn rate(count: u32, period: u64, burst: u32) -> Limits {
    Limits {
        rate: Some(Rate {
            count,
            period,
            burst,
        }),
        ..Limits::default()
    }
}

fn breaker(failures: u32, cooldown: u64, max: u64, pause_after: Option<u64>) -> Limits {
    Limits {
        breaker: Some(BreakerLimits {
            failures,
            cooldown,
            max_cooldown: max,
            pause_after,
        }),
        ..Limits::default()
    }
}

#[test]
fn a_rate_reserves_the_slots_of_its_horizon_and_holds_back_the_rest() {
    let w = Walk::new(rate(10, 1_000, 1)); // a slot every 100 ms
    let c = w.claimed(5);
    let now = w.now();
    let got = w.start(&c.iter().collect::<Vec<_>>());
    assert!(
        matches!(got[0], Start::Started { attempt: 1, .. }),
        "{got:?}"
    );
    assert_eq!(
        got[1],
        Start::Reserved {
            now,
            attempt: 1,
            at: now + 100
        }
    );
    assert_eq!(
        got[2],
        Start::Reserved {
            now,
            attempt: 1,
            at: now + 200
        }
    );
    // The next slot, +300, is past the 250 ms horizon: until +50.
    assert_eq!(
        got[3],
        Start::Wait {
            now,
            until: now + 50
        }
    );
    assert_eq!(
        got[4],
        Start::Wait {
            now,
            until: now + 50
        }
    );
    w.advance(50);
    let got = w.start(&[&c[3], &c[4]]);
    assert_eq!(
        got[0],
        Start::Reserved {
            now: now + 50,
            attempt: 1,
            at: now + 300
        }
    );
    assert_eq!(
        got[1],
        Start::Wait {
            now: now + 50,
            until: now + 150
        }
    );
}

#[test]
fn a_burst_starts_at_once_then_the_rate_holds() {
    let w = Walk::new(rate(1, 1_000, 3));
    let c = w.claimed(4);
    let now = w.now();
    let got = w.start(&c.iter().collect::<Vec<_>>());
    for s in &got[..3] {
        assert!(matches!(s, Start::Started { .. }), "{got:?}");
    }
    assert_eq!(
        got[3],
        Start::Wait {
            now,
            until: now + 750
        }
    );
}

#[test]
fn parallelism_counts_valid_permits_only() {
    let w = Walk::new(Limits {
        parallelism: Some(2),
        ..Limits::default()
    });
    let c = w.claimed(3);
    let now = w.now();
    let got = w.start(&c.iter().collect::<Vec<_>>());
    assert!(matches!(got[1], Start::Started { .. }));
    // The earliest lease end among the permits: when one comes back at
    // the latest.
    assert_eq!(
        got[2],
        Start::Wait {
            now,
            until: now + 1_000
        }
    );
    assert_eq!(w.model.flows().unwrap().keys[0].in_flight, 2);
    assert!(w.finish(&c[0], FlowClass::Success));
    assert!(matches!(w.start(&[&c[2]])[0], Start::Started { .. }));
    // A run whose lease passed (its node died) holds no permit.
    let d = w.claimed(1);
    assert!(matches!(w.start(&[&d[0]])[0], Start::Wait { .. }));
    w.advance(1_000);
    assert_eq!(w.model.flows().unwrap().keys[0].in_flight, 0);
}

#[test]
fn a_breaker_opens_parks_probes_once_per_cooldown_and_closes() {
    let w = Walk::new(breaker(2, 100, 400, None));
    let c = w.claimed(6);
    let all: Vec<&Claimed> = c.iter().collect();
    let got = w.start(&all[..2]);
    assert!(got.iter().all(|s| matches!(s, Start::Started { .. })));
    assert!(w.finish(&c[0], FlowClass::Failure { retry_after: 0 }));
    assert_eq!(w.phase().0, Phase::Closed);
    assert!(w.finish(&c[1], FlowClass::Failure { retry_after: 0 }));
    let opened = w.now();
    assert_eq!(w.phase(), (Phase::Open, Some(opened + 100)));
    // Open: the other claims are parked, with no attempt spent.
    let got = w.start(&all[2..]);
    assert!(
        got.iter().all(|s| matches!(s, Start::Paused { .. })),
        "{got:?}"
    );
    let parked = w.model.get("t2").unwrap().unwrap();
    assert_eq!((parked.state, parked.attempts), (TimerState::Parked, 0));
    assert!(
        w.claim()
            .iter()
            .all(|c| c.key.starts_with("t0") || c.key.starts_with("t1"))
    );
    // After the cool-down one candidate (the earliest parked) comes back.
    w.advance(100);
    let candidates = w.claim();
    let keys: Vec<&str> = candidates.iter().map(|c| c.key.as_str()).collect();
    assert!(keys.contains(&"t2") && !keys.contains(&"t3"), "{keys:?}");
    assert_eq!(w.phase().0, Phase::HalfOpen);
    let probe = candidates.iter().find(|c| c.key == "t2").unwrap();
    assert!(matches!(w.start(&[probe])[0], Start::Started { .. }));
    // The probe fails: open again, for twice as long.
    assert!(w.finish(probe, FlowClass::Failure { retry_after: 0 }));
    assert_eq!(w.phase(), (Phase::Open, Some(w.now() + 200)));
    w.advance(200);
    // The next candidate, and the failed probe's retry (due since it
    // failed).
    let again = w.claim();
    let keys: Vec<&str> = again.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["t3", "t2"]);
    let got = w.start(&[&again[0], &again[1]]);
    assert!(matches!(got[0], Start::Started { .. }), "{got:?}");
    assert!(
        matches!(got[1], Start::Paused { .. }),
        "one probe at a time"
    );
    assert!(w.finish(&again[0], FlowClass::Success));
    assert_eq!(w.phase().0, Phase::Closed);
    // Closed: the rest are made pending again by the next claim.
    let keys: Vec<String> = w.claim().into_iter().map(|c| c.key).collect();
    assert_eq!(keys, ["t4", "t5", "t2"]);
}

#[test]
fn retry_after_lengthens_a_cooldown_and_pause_after_pauses_the_key() {
    let w = Walk::new(breaker(1, 100, 400, Some(250)));
    let c = w.claimed(1);
    w.start(&[&c[0]]);
    assert!(w.finish(&c[0], FlowClass::Failure { retry_after: 300 }));
    assert_eq!(w.phase(), (Phase::Open, Some(w.now() + 300)));
    w.advance(300);
    let probe = w.claim();
    w.start(&[&probe[0]]);
    // Open since 300 ms, past `pause_after`: the key is paused.
    assert!(w.finish(&probe[0], FlowClass::Failure { retry_after: 0 }));
    let f = w.model.flows().unwrap().keys.remove(0);
    assert!(f.paused);
    assert!(w.model.set_paused(Some("f"), false).unwrap());
    assert_eq!(w.phase().0, Phase::Closed, "a resume closes the breaker");
}

#[test]
fn a_refused_finish_and_a_neutral_one_count_for_nothing() {
    let w = Walk::new(breaker(1, 100, 400, None));
    let c = w.claimed(1);
    w.start(&[&c[0]]);
    let stale = Claimed {
        fence: c[0].fence - 1,
        ..c[0].clone()
    };
    assert!(!w.finish(&stale, FlowClass::Failure { retry_after: 0 }));
    assert!(w.finish(&c[0], FlowClass::Neutral));
    assert!(
        w.model
            .flows()
            .unwrap()
            .keys
            .iter()
            .all(|k| k.breaker.failures == 0)
    );
}

#[test]
fn deferred_claims_are_handed_out_again_at_the_key_s_rate() {
    let w = Walk::new(rate(10, 1_000, 1)); // allowance: 10 per wake
    let c = w.claimed(30);
    let late: Vec<Fenced<'_>> = c[5..].iter().map(Claimed::fenced).collect();
    let flows = vec!["f"; late.len()];
    assert!(w.model.defer(&late, &flows).unwrap().iter().all(|&d| d));
    let stale = Fenced {
        key: &c[0].key,
        fence: c[0].fence - 1,
    };
    assert_eq!(w.model.defer(&[stale], &["f"]).unwrap(), [false]);
    let parked = |w: &Walk| w.model.flows().unwrap().keys[0].parked;
    assert_eq!(parked(&w), 25);
    assert!(w.claim().is_empty(), "nothing before the wake-up");
    for (handed, left) in [(10, 15), (10, 5), (5, 0)] {
        assert!(w.claim().is_empty(), "nothing between wake-ups");
        w.advance(1_000);
        assert_eq!(w.claim().len(), handed);
        assert_eq!(parked(&w), left);
    }
    // Earliest first: the first wake-up handed out t5 to t14.
    let w2 = Walk::new(rate(10, 1_000, 1));
    let c = w2.claimed(12);
    let all: Vec<Fenced<'_>> = c.iter().map(Claimed::fenced).collect();
    w2.model.defer(&all, &["f"; 12]).unwrap();
    w2.advance(1_000);
    let keys: Vec<String> = w2.claim().into_iter().map(|c| c.key).collect();
    let want: Vec<String> = ["t0", "t1", "t10", "t11", "t2", "t3", "t4", "t5", "t6", "t7"]
        .map(String::from)
        .to_vec();
    assert_eq!(
        keys, want,
        "by (due, key): all due at once, so by key bytes"
    );
}

/// The same rules through the differential bench: every store answers as
/// the model.
#[test]
fn stores_hold_back_open_and_close_as_the_model_does() {
    use Op::*;
    let start = |keys: &[u8]| Start {
        keys: keys.iter().map(|&k| (k, false)).collect(),
        flows: vec![1; keys.len()],
        lease: 80,
    };
    let fail = |k: u8| FlowFinish(vec![(k, false, 1, 0, 1, 1)]);
    let claim = Claim {
        window: 0,
        lease: 90,
        max: 7,
        max_attempts: 3,
    };
    let mut bench = DurableBench::new();
    let mut script = vec![SetLimits { flow: 1, limits: 6 }];
    for k in 0..7 {
        script.push(Add {
            key: k,
            at: 0,
            after: false,
            payload: k,
            if_absent: false,
        });
    }
    script.extend([
        claim.clone(),
        start(&[0, 1, 2, 3]), // parallelism 2, rate 1 per 300 ms
        Flows,
        fail(0),
        Flows,
        start(&[4, 5, 6]), // open: parked
        Advance(20),
        claim.clone(),
        start(&[2]),
        Flows,
        FlowFinish(vec![(2, false, 0, 0, 1, 0)]),
        Advance(40),
        claim.clone(),
        Flows,
        Advance(300),
        claim.clone(),
        start(&[0, 1, 2, 3, 4, 5, 6]),
        Defer {
            keys: vec![(4, false), (5, false), (6, true)],
            flows: vec![1, 1, 1],
        },
        Advance(1_000),
        claim.clone(),
        Flows,
        SetLimits { flow: 0, limits: 3 },
        SetLimits { flow: 1, limits: 0 },
        start(&[3]),
        Flows,
        Counts,
    ]);
    for op in &script {
        bench.step(op);
    }
    bench.check_all();
}
