//! Differential tests: random sequences of store operations on a manual
//! clock, run on every real store and on the [`Model`]; every answer must
//! be the same.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;

use super::model::Model;
use super::*;

/// The store clock's reading when a sequence starts.
const START: Millis = 1_700_000_000_000;

const KEYS: [&str; 6] = ["a", "b", "order:17", "é", "k|x", "z"];

#[derive(Debug, Clone)]
enum Op {
    Add {
        key: usize,
        at: i64,
        after: bool,
        payload: u8,
    },
    AddMany(Vec<(usize, i64)>),
    Cancel(usize),
    Reschedule {
        key: usize,
        at: i64,
    },
    Get(usize),
    Claim {
        window: u64,
        lease: u64,
        max: usize,
        max_attempts: u32,
    },
    Start {
        key: usize,
        stale: bool,
        lease: u64,
    },
    Renew {
        key: usize,
        stale: bool,
        lease: u64,
    },
    Finish {
        key: usize,
        stale: bool,
        how: u8,
        delay: u64,
    },
    Release {
        key: usize,
        stale: bool,
    },
    DeadLetters(usize),
    RetryDead {
        key: usize,
        at: i64,
    },
    Counts,
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    let at = -50i64..200;
    prop_oneof![
        4 => (key.clone(), at.clone(), any::<bool>(), any::<u8>())
            .prop_map(|(key, at, after, payload)| Op::Add { key, at, after, payload }),
        1 => prop::collection::vec((key.clone(), at.clone()), 0..4).prop_map(Op::AddMany),
        2 => key.clone().prop_map(Op::Cancel),
        2 => (key.clone(), at.clone()).prop_map(|(key, at)| Op::Reschedule { key, at }),
        1 => key.clone().prop_map(Op::Get),
        4 => (0u64..100, 1u64..100, 0usize..5, 1u32..4).prop_map(|(window, lease, max, max_attempts)| {
            Op::Claim { window, lease, max, max_attempts }
        }),
        4 => (key.clone(), prop::bool::weighted(0.2), 1u64..100)
            .prop_map(|(key, stale, lease)| Op::Start { key, stale, lease }),
        1 => (key.clone(), prop::bool::weighted(0.2), 1u64..100)
            .prop_map(|(key, stale, lease)| Op::Renew { key, stale, lease }),
        4 => (key.clone(), prop::bool::weighted(0.2), 0u8..3, 0u64..50)
            .prop_map(|(key, stale, how, delay)| Op::Finish { key, stale, how, delay }),
        1 => (key.clone(), prop::bool::weighted(0.2)).prop_map(|(key, stale)| Op::Release { key, stale }),
        1 => (0usize..4).prop_map(Op::DeadLetters),
        1 => (key.clone(), at.clone()).prop_map(|(key, at)| Op::RetryDead { key, at }),
        1 => Just(Op::Counts),
        3 => (0u64..60).prop_map(Op::Advance),
    ]
}

/// Every answer a store gives, in one comparable form.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Unit,
    Bool(bool),
    Info(Option<TimerInfo>),
    Claim(ClaimBatch),
    Start(Start),
    Dead(Vec<DeadLetter>),
    Counts(Counts),
}

/// The stores under test and the model, on one manual clock.
struct Bench {
    clock: Arc<AtomicU64>,
    model: Model,
    stores: Vec<(&'static str, Box<dyn Store>)>,
    /// The last fence a claim handed out for each key (by the model).
    fences: Vec<u64>,
    _dir: tempfile::TempDir,
    #[cfg(feature = "redis")]
    _server: Option<crate::durable::redis_server::RedisServer>,
}

impl Bench {
    fn new() -> Bench {
        let clock = Arc::new(AtomicU64::new(START));
        let manual = StoreClock::Manual(clock.clone());
        let dir = tempfile::tempdir().unwrap();
        let embedded = embedded::Embedded::open(&dir.path().join("t.redb"), manual.clone(), 10)
            .expect("open the embedded store");
        #[allow(unused_mut)]
        let mut stores: Vec<(&'static str, Box<dyn Store>)> =
            vec![("embedded", Box::new(embedded))];
        #[cfg(feature = "redis")]
        let server =
            super::redis::tests::store_for_differential(manual.clone()).map(|(server, store)| {
                stores.push(("redis", store));
                server
            });
        Bench {
            clock,
            model: Model::new(manual),
            stores,
            fences: vec![0; KEYS.len()],
            _dir: dir,
            #[cfg(feature = "redis")]
            _server: server,
        }
    }

    fn due(&self, at: i64) -> Due {
        let now = self.clock.load(Ordering::SeqCst);
        Due::At(now.saturating_add_signed(at))
    }

    fn fence(&self, key: usize, stale: bool) -> u64 {
        self.fences[key].saturating_sub(u64::from(stale))
    }

    fn ask(&self, store: &dyn Store, op: &Op) -> StoreResult<Answer> {
        Ok(match op {
            Op::Add {
                key,
                at,
                after,
                payload,
            } => {
                let due = if *after {
                    Due::After(at.unsigned_abs())
                } else {
                    self.due(*at)
                };
                let payload = vec![*payload; usize::from(*payload % 5)];
                store.add(&[NewTimer {
                    key: KEYS[*key],
                    due,
                    payload: &payload,
                }])?;
                Answer::Unit
            }
            Op::AddMany(list) => {
                let batch: Vec<NewTimer<'_>> = list
                    .iter()
                    .map(|(k, at)| NewTimer {
                        key: KEYS[*k],
                        due: self.due(*at),
                        payload: b"m",
                    })
                    .collect();
                store.add(&batch)?;
                Answer::Unit
            }
            Op::Cancel(k) => Answer::Bool(store.cancel(KEYS[*k])?),
            Op::Reschedule { key, at } => {
                Answer::Bool(store.reschedule(KEYS[*key], self.due(*at))?)
            }
            Op::Get(k) => Answer::Info(store.get(KEYS[*k])?),
            Op::Claim {
                window,
                lease,
                max,
                max_attempts,
            } => {
                let req = ClaimRequest {
                    window: *window,
                    lease: *lease,
                    max: *max,
                    max_attempts: *max_attempts,
                };
                Answer::Claim(store.claim(&req)?)
            }
            Op::Start { key, stale, lease } => {
                Answer::Start(store.start(KEYS[*key], self.fence(*key, *stale), *lease)?)
            }
            Op::Renew { key, stale, lease } => {
                Answer::Bool(store.renew(KEYS[*key], self.fence(*key, *stale), *lease)?)
            }
            Op::Finish {
                key,
                stale,
                how,
                delay,
            } => {
                let how = match how {
                    0 => Finish::Done,
                    1 => Finish::Retry { delay: *delay },
                    _ => Finish::Dead {
                        reason: format!("failed after {delay}"),
                    },
                };
                Answer::Bool(store.finish(KEYS[*key], self.fence(*key, *stale), &how)?)
            }
            Op::Release { key, stale } => {
                Answer::Bool(store.release(KEYS[*key], self.fence(*key, *stale))?)
            }
            Op::DeadLetters(limit) => Answer::Dead(store.dead_letters(*limit)?),
            Op::RetryDead { key, at } => Answer::Bool(store.retry_dead(KEYS[*key], self.due(*at))?),
            Op::Counts => Answer::Counts(store.counts()?),
            Op::Advance(_) => Answer::Unit,
        })
    }

    fn step(&mut self, op: &Op) {
        if let Op::Advance(ms) = op {
            self.clock.fetch_add(*ms, Ordering::SeqCst);
            return;
        }
        let want = self.ask(&self.model, op).expect("the model never fails");
        for (name, store) in &self.stores {
            let got = self
                .ask(store.as_ref(), op)
                .unwrap_or_else(|e| panic!("{name}: {op:?}: {e}"));
            assert_eq!(got, want, "{name} differs from the model on {op:?}");
        }
        if let Answer::Claim(batch) = &want {
            for c in &batch.timers {
                let k = KEYS.iter().position(|k| *k == c.key).unwrap();
                self.fences[k] = c.fence;
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn stores_agree_with_the_model(ops in prop::collection::vec(op(), 1..120)) {
        let mut bench = Bench::new();
        for op in &ops {
            bench.step(op);
        }
        bench.step(&Op::Counts);
        bench.step(&Op::DeadLetters(usize::MAX));
    }
}

/// A hand-written walk through every transition, so that a store that
/// differs fails on a named step even if random sequences miss it.
#[test]
fn every_transition_agrees_with_the_model() {
    use Op::*;
    let claim = |max| Claim {
        window: 10,
        lease: 20,
        max,
        max_attempts: 2,
    };
    let script = [
        Add {
            key: 0,
            at: 5,
            after: false,
            payload: 1,
        },
        Add {
            key: 1,
            at: 5,
            after: true,
            payload: 2,
        },
        Add {
            key: 2,
            at: 500,
            after: false,
            payload: 3,
        },
        claim(10),
        Start {
            key: 0,
            stale: false,
            lease: 30,
        }, // not yet due
        Advance(5),
        Start {
            key: 0,
            stale: true,
            lease: 30,
        }, // stale fence
        Start {
            key: 0,
            stale: false,
            lease: 30,
        },
        Finish {
            key: 0,
            stale: false,
            how: 1,
            delay: 3,
        }, // retry
        Cancel(1), // claimed: true
        Advance(3),
        claim(10),
        Start {
            key: 0,
            stale: false,
            lease: 30,
        },
        Cancel(0), // running: false, and removed
        Finish {
            key: 0,
            stale: false,
            how: 0,
            delay: 0,
        },
        Add {
            key: 3,
            at: 0,
            after: false,
            payload: 4,
        },
        claim(1),
        Start {
            key: 3,
            stale: false,
            lease: 5,
        },
        Advance(6), // the run's lease passes
        claim(1),   // reclaimed: pending again, then claimed again
        Start {
            key: 3,
            stale: false,
            lease: 5,
        },
        Advance(6), // passes again, on the last attempt: dead
        claim(1),
        DeadLetters(10),
        Get(3),
        RetryDead { key: 3, at: 0 },
        claim(1),
        Release {
            key: 3,
            stale: false,
        },
        Renew {
            key: 3,
            stale: false,
            lease: 9,
        },
        Reschedule { key: 3, at: 100 },
        Counts,
    ];
    let mut bench = Bench::new();
    for op in &script {
        bench.step(op);
    }
}
