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
    /// One batch of starts: (key, stale fence) each.
    Start {
        keys: Vec<(usize, bool)>,
        lease: u64,
    },
    Renew {
        keys: Vec<(usize, bool)>,
        lease: u64,
    },
    /// One batch of outcomes: (key, stale fence, how, delay or reason).
    Finish(Vec<(usize, bool, u8, u64)>),
    Release(Vec<(usize, bool)>),
    DeadLetters(usize),
    RetryDead {
        key: usize,
        at: i64,
    },
    Counts,
    Advance(u64),
}

/// A batch of 1 to 4 held timers (the same key may come twice), each with
/// its last fence or, one time in five, a stale one.
fn fenced() -> impl Strategy<Value = Vec<(usize, bool)>> {
    prop::collection::vec((0..KEYS.len(), prop::bool::weighted(0.2)), 1..5)
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
        4 => (fenced(), 1u64..100).prop_map(|(keys, lease)| Op::Start { keys, lease }),
        1 => (fenced(), 1u64..100).prop_map(|(keys, lease)| Op::Renew { keys, lease }),
        4 => prop::collection::vec((key.clone(), prop::bool::weighted(0.2), 0u8..3, 0u64..50), 1..5)
            .prop_map(Op::Finish),
        1 => fenced().prop_map(Op::Release),
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
    Starts(Vec<Start>),
    Bools(Vec<bool>),
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
    _server: Option<wheel_testkit::RedisServer>,
}

impl Bench {
    fn new() -> Bench {
        let clock = Arc::new(AtomicU64::new(START));
        let manual = StoreClock::Manual(clock.clone());
        let dir = tempfile::tempdir().unwrap();
        let embedded = embedded::Embedded::open(&dir.path().join("store"), manual.clone(), 10)
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

    fn add(
        &self,
        store: &dyn Store,
        key: usize,
        at: i64,
        after: bool,
        payload: u8,
    ) -> StoreResult<()> {
        let due = if after {
            Due::After(at.unsigned_abs())
        } else {
            self.due(at)
        };
        let payload = vec![payload; usize::from(payload % 5)];
        store.add(&[NewTimer {
            key: KEYS[key],
            due,
            payload: &payload,
        }])
    }

    fn add_many(&self, store: &dyn Store, list: &[(usize, i64)]) -> StoreResult<()> {
        let batch: Vec<NewTimer<'_>> = list
            .iter()
            .map(|(k, at)| NewTimer {
                key: KEYS[*k],
                due: self.due(*at),
                payload: b"m",
            })
            .collect();
        store.add(&batch)
    }

    /// The keys of a batch with the fences the test holds for them.
    fn held(&self, keys: &[(usize, bool)]) -> Vec<Fenced<'static>> {
        keys.iter()
            .map(|(key, stale)| Fenced {
                key: KEYS[*key],
                fence: self.fence(*key, *stale),
            })
            .collect()
    }

    fn ask(&self, store: &dyn Store, op: &Op) -> StoreResult<Answer> {
        Ok(match op {
            Op::Add {
                key,
                at,
                after,
                payload,
            } => {
                self.add(store, *key, *at, *after, *payload)?;
                Answer::Unit
            }
            Op::AddMany(list) => {
                self.add_many(store, list)?;
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
            Op::Start { keys, lease } => Answer::Starts(store.start(&self.held(keys), *lease)?),
            Op::Renew { keys, lease } => Answer::Bools(store.renew(&self.held(keys), *lease)?),
            Op::Finish(runs) => {
                let runs: Vec<(Fenced<'_>, Finish)> = runs
                    .iter()
                    .map(|(key, stale, how, delay)| {
                        let how = match how {
                            0 => Finish::Done,
                            1 => Finish::Retry { delay: *delay },
                            _ => Finish::Dead {
                                reason: format!("failed after {delay}"),
                            },
                        };
                        (self.held(&[(*key, *stale)])[0], how)
                    })
                    .collect();
                Answer::Bools(store.finish(&runs)?)
            }
            Op::Release(keys) => Answer::Bools(store.release(&self.held(keys))?),
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

fn add(key: usize, at: i64) -> Op {
    Op::Add {
        key,
        at,
        after: false,
        payload: (key as u8).wrapping_add(1),
    }
}

fn start(key: usize, stale: bool, lease: u64) -> Op {
    Op::Start {
        keys: vec![(key, stale)],
        lease,
    }
}

fn finish(key: usize, how: u8, delay: u64) -> Op {
    Op::Finish(vec![(key, false, how, delay)])
}

fn claim(max: usize) -> Op {
    Op::Claim {
        window: 10,
        lease: 20,
        max,
        max_attempts: 2,
    }
}

fn walk(script: &[Op]) {
    let mut bench = Bench::new();
    for op in script {
        bench.step(op);
    }
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
