//! The durable stores' differential harness: one operation type
//! ([`DurableOp`]) and one bench ([`DurableBench`]) that applies each
//! operation to the [`Model`] and to every real store on one manual clock
//! and asserts that every answer is the same. Compiled only for tests and
//! `cfg(fuzzing)`: the proptests in `store/tests.rs` generate operations
//! with their strategies, the `durable_ops` fuzz target decodes them with
//! [`Arbitrary`]; both run them here, so the two cannot drift.
//!
//! Operations name keys by index into a small fixed set (so that they
//! collide), times as offsets from the clock's reading, and fences by
//! "the last one a claim handed out for this key", optionally made stale.
//! Every field is taken modulo its meaningful range, so any decoded value
//! is a valid operation; the stores must agree on edge values too.
//!
//! Under `cfg(fuzzing)` only the embedded store runs beside the model; the
//! tests add the Redis store when `redis-server` is available.
//!
//! Node state: none (a test harness over stores, without a node).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arbitrary::Arbitrary;

use super::flow_state::{BreakerLimits, FlowClass, Rate};
use super::fuzz_schedules::{RunClaims, ScheduleAnswer, ScheduleOp};
use super::fuzz_store::Pooled;
use super::model::Model;
use super::{
    ClaimBatch, ClaimRequest, Counts, Due, Fenced, Finish, FlowOutcome, Limits, Listed, Millis,
    NewTimer, Start, Store, StoreClock, StoreResult,
};
use crate::{AddMode, DeadLetter, Listing, TimerInfo};

/// The store clock's reading when a sequence starts.
pub(crate) const START: Millis = 1_700_000_000_000;

/// The keys operations name (by index, modulo their count): byte order and
/// prefixes matter to listings ("a" < "ab" < "b").
pub const KEYS: [&str; 7] = ["a", "ab", "b", "order:17", "é", "k|x", "z"];

/// Operations a fuzz input runs at most.
pub const MAX_DURABLE_OPS: usize = 300;

/// One store operation. Keys are indexes into [`KEYS`], times offsets in
/// ms from the clock's reading; a `stale` flag makes the fence one less
/// than the last one a claim handed out for the key.
#[derive(Debug, Clone, Arbitrary)]
pub enum DurableOp {
    /// Adds one timer.
    Add {
        /// The key's index.
        key: u8,
        /// The due time (an offset from now).
        at: i16,
        /// Due `|at|` after the store's now instead (`Due::After`).
        after: bool,
        /// The payload: `payload % 5` copies of this byte.
        payload: u8,
        /// `AddMode::IfAbsent` instead of `Replace`.
        if_absent: bool,
    },
    /// Adds a batch in one store operation.
    AddMany {
        /// (key index, due offset) of each timer.
        timers: Vec<(u8, i16)>,
        /// `AddMode::IfAbsent` instead of `Replace`.
        if_absent: bool,
    },
    /// Cancels a key.
    Cancel(u8),
    /// Reschedules a key.
    Reschedule {
        /// The key's index.
        key: u8,
        /// The new due time (an offset from now).
        at: i16,
    },
    /// Reads a key.
    Get(u8),
    /// Claims (and first takes expired leases back).
    Claim {
        /// How far ahead of now, in ms.
        window: u8,
        /// The lease, in ms (at least 1).
        lease: u8,
        /// Timers at most (modulo 8).
        max: u8,
        /// Attempts allowed (modulo 4, at least 1).
        max_attempts: u8,
    },
    /// One batch of starts.
    Start {
        /// (key index, stale fence) of each entry.
        keys: Vec<(u8, bool)>,
        /// The flow key of each entry, an index into [`FLOWS`] (none for
        /// an entry past the end).
        flows: Vec<u8>,
        /// The run's lease, in ms (at least 1).
        lease: u8,
    },
    /// One batch of renewals.
    Renew {
        /// (key index, stale fence) of each entry.
        keys: Vec<(u8, bool)>,
        /// The new lease, in ms (at least 1).
        lease: u8,
    },
    /// One batch of outcomes: (key index, stale fence, how modulo 3 —
    /// done, retry, dead —, retry delay or reason number) each.
    Finish(Vec<(u8, bool, u8, u8)>),
    /// One batch of releases: (key index, stale fence) each.
    Release(Vec<(u8, bool)>),
    /// The first dead letters, up to this many.
    DeadLetters(u8),
    /// Revives a dead letter.
    RetryDead {
        /// The key's index.
        key: u8,
        /// The new due time (an offset from now).
        at: i16,
    },
    /// The counts.
    Counts,
    /// One page of a listing.
    List {
        /// The listing: pending, claimed, dead, parked (modulo 4).
        which: u8,
        /// Resume strictly after (score offset from now, key index).
        after: Option<(i16, u8)>,
        /// Timers at most.
        limit: u8,
    },
    /// A whole listing, page by page, each resuming after the last timer
    /// of the page before.
    ListAll {
        /// The listing: pending, claimed, dead, parked (modulo 4).
        which: u8,
        /// The page size less one (modulo 4).
        page: u8,
    },
    /// Moves the store clock forward by this many ms.
    Advance(u16),
    /// A schedule operation.
    Schedule(ScheduleOp),
    /// Sets the dedup window of the model and every store, in ms (zero:
    /// off).
    DedupWindow(u16),
    /// Reads the dedup window's memory of a key.
    Ended(u8),
    /// Pauses or resumes a flow key (an index into [`FLOWS`]; `""` means
    /// the namespace).
    Pause {
        /// The flow key's index.
        flow: u8,
        /// Pause, or resume.
        paused: bool,
    },
    /// The flow-control state of the namespace and its flow keys.
    Flows,
    /// Sets or removes a flow key's limits (`""`: the defaults), one of
    /// [`limits`]' sets.
    SetLimits {
        /// The flow key's index.
        flow: u8,
        /// Which limits.
        limits: u8,
    },
    /// One batch of outcomes with their flow keys: (key index, stale
    /// fence, how, retry delay or reason number, flow key index, class
    /// modulo 3 — success, failure with a `Retry-After` of 10 times the
    /// delay, neutral —) each.
    FlowFinish(Vec<(u8, bool, u8, u8, u8, u8)>),
    /// Hands claims back to be parked under a flow key (an index into
    /// [`FLOWS`]; the empty one is taken as the next).
    Defer {
        /// (key index, stale fence) of each entry.
        keys: Vec<(u8, bool)>,
        /// The flow key of each entry (the first one's past the end).
        flows: Vec<u8>,
    },
}

/// The limits [`DurableOp::SetLimits`] names by index (modulo their
/// count); `None` removes them. Short periods and cool-downs, so that
/// the operations' few milliseconds reach every state.
pub fn limits(i: u8) -> Option<Limits> {
    let rate = |count, period, burst| Rate {
        count,
        period,
        burst,
    };
    let breaker = |failures, cooldown, max_cooldown, pause_after| BreakerLimits {
        failures,
        cooldown,
        max_cooldown,
        pause_after,
    };
    let l = |rate, parallelism, breaker| Limits {
        rate,
        parallelism,
        breaker,
    };
    Some(match i % 8 {
        0 => return None,
        1 => l(Some(rate(1, 10, 1)), None, None),
        2 => l(Some(rate(3, 100, 2)), None, None),
        3 => l(None, Some(1), None),
        4 => l(None, Some(2), Some(breaker(2, 30, 100, None))),
        5 => l(None, None, Some(breaker(1, 50, 200, Some(150)))),
        6 => l(
            Some(rate(1, 300, 1)),
            Some(2),
            Some(breaker(1, 20, 40, None)),
        ),
        _ => Limits::default(),
    })
}

/// The flow keys operations name (by index, modulo their count); the
/// empty one means none (for a start) or the namespace (for a pause).
pub const FLOWS: [&str; 4] = ["", "https://a.example", "f", "é|g"];

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
    Listed(Vec<Listed>),
    Schedule(ScheduleAnswer),
    Ended(Option<super::Memory>),
    Flows(super::FlowsState),
}

fn how(how: u8, delay: u8) -> Finish {
    match how % 3 {
        0 => Finish::Done,
        1 => Finish::Retry {
            delay: u64::from(delay),
        },
        _ => Finish::Dead {
            reason: format!("failed after {delay}"),
        },
    }
}

fn class(class: u8, delay: u8) -> FlowClass {
    match class % 3 {
        0 => FlowClass::Success,
        1 => FlowClass::Failure {
            retry_after: u64::from(delay) * 10,
        },
        _ => FlowClass::Neutral,
    }
}

fn key(k: u8) -> &'static str {
    KEYS[usize::from(k) % KEYS.len()]
}

fn listing(which: u8) -> Listing {
    match which % 4 {
        0 => Listing::Pending,
        1 => Listing::Claimed,
        2 => Listing::Dead,
        _ => Listing::Parked,
    }
}

fn flow(f: u8) -> &'static str {
    FLOWS[usize::from(f) % FLOWS.len()]
}

fn mode(if_absent: bool) -> AddMode {
    if if_absent {
        AddMode::IfAbsent
    } else {
        AddMode::Replace
    }
}

/// The stores under test and the model, on one manual clock.
pub struct DurableBench {
    clock: Arc<AtomicU64>,
    model: Model,
    /// The embedded store, taken from the pool ([`Pooled`]) and handed
    /// back wiped when the bench is dropped.
    embedded: Option<Pooled>,
    /// The other stores (the tests' Redis stores), each the bench's own.
    others: Vec<(&'static str, Box<dyn Store>)>,
    /// The last fence a claim handed out for each key (by the model).
    fences: [u64; KEYS.len()],
    /// The first fence the last claim of each key answered (by the model).
    #[cfg_attr(not(test), allow(dead_code))]
    first_fences: [u64; KEYS.len()],
    /// The claims of schedules' runs (keys outside [`KEYS`]).
    runs: RunClaims,
    #[cfg(all(test, feature = "redis"))]
    _server: Option<wheel_testkit::RedisServer>,
}

impl DurableBench {
    /// The model and an embedded store that holds nothing (a wiped one
    /// from earlier benches of this process, or a fresh copy of an empty
    /// store) on a clock reading [`START`] (and, in the tests, a Redis
    /// store on a fresh server when one can be started).
    ///
    /// # Panics
    ///
    /// If a store cannot be opened.
    pub fn new() -> DurableBench {
        DurableBench::on(Pooled::take())
    }

    /// The bench around `embedded`, which holds nothing.
    pub(crate) fn on(embedded: Pooled) -> DurableBench {
        let clock = embedded.clock.clone();
        let manual = StoreClock::Manual(clock.clone());
        #[allow(unused_mut)]
        let mut others: Vec<(&'static str, Box<dyn Store>)> = Vec::new();
        #[cfg(all(test, feature = "redis"))]
        let server =
            super::redis::tests::store_for_differential(manual.clone()).map(|(server, redis)| {
                others.extend(redis);
                server
            });
        DurableBench {
            clock,
            model: Model::new(manual),
            embedded: Some(embedded),
            others,
            fences: [0; KEYS.len()],
            first_fences: [0; KEYS.len()],
            runs: RunClaims::default(),
            #[cfg(all(test, feature = "redis"))]
            _server: server,
        }
    }

    /// The embedded store, taken out of the bench (which then hands
    /// nothing back to the pool).
    #[cfg(test)]
    pub(crate) fn into_store(mut self) -> Pooled {
        self.embedded
            .take()
            .expect("a bench holds its store until dropped")
    }

    /// Every store under test, by name.
    fn stores(&self) -> impl Iterator<Item = (&'static str, &dyn Store)> {
        let embedded = self
            .embedded
            .iter()
            .map(|p| ("embedded", &p.store as &dyn Store));
        let others = self.others.iter().map(|(name, s)| (*name, s.as_ref()));
        embedded.chain(others)
    }

    fn now(&self) -> Millis {
        self.clock.load(Ordering::SeqCst)
    }

    /// The (fence, first fence) the last claim of key index `key`
    /// answered; every store agreed with the model on it.
    #[cfg(test)]
    pub(crate) fn last_claim(&self, key: usize) -> (u64, u64) {
        (self.fences[key], self.first_fences[key])
    }

    /// The model, which every store agreed with on the steps so far.
    #[cfg(test)]
    pub(crate) fn model(&self) -> &Model {
        &self.model
    }

    fn due(&self, at: i16) -> Due {
        Due::At(self.now().saturating_add_signed(i64::from(at)))
    }

    /// The keys of a batch with the fences the bench holds for them.
    fn held(&self, keys: &[(u8, bool)]) -> Vec<Fenced<'static>> {
        keys.iter()
            .map(|&(k, stale)| Fenced {
                key: key(k),
                fence: self.fences[usize::from(k) % KEYS.len()].saturating_sub(u64::from(stale)),
            })
            .collect()
    }

    fn add(&self, store: &dyn Store, op: &DurableOp) -> StoreResult<Vec<bool>> {
        match op {
            &DurableOp::Add {
                key: k,
                at,
                after,
                payload,
                if_absent,
            } => {
                let due = if after {
                    Due::After(u64::from(at.unsigned_abs()))
                } else {
                    self.due(at)
                };
                let payload = vec![payload; usize::from(payload % 5)];
                let t = NewTimer {
                    key: key(k),
                    due,
                    payload: &payload,
                };
                store.add(&[t], mode(if_absent))
            }
            DurableOp::AddMany { timers, if_absent } => {
                let batch: Vec<NewTimer<'_>> = timers
                    .iter()
                    .map(|&(k, at)| NewTimer {
                        key: key(k),
                        due: self.due(at),
                        payload: b"m",
                    })
                    .collect();
                store.add(&batch, mode(*if_absent))
            }
            _ => Ok(Vec::new()),
        }
    }

    /// A whole listing in pages of `page` (at least 1).
    fn list_all(&self, store: &dyn Store, which: Listing, page: usize) -> StoreResult<Vec<Listed>> {
        let mut all: Vec<Listed> = Vec::new();
        loop {
            let after = all.last().map(|l| (l.score, l.info.key.as_str()));
            let next = store.list(which, after, page)?;
            let last = next.len() < page;
            all.extend(next);
            if last {
                return Ok(all);
            }
        }
    }

    fn ask(&self, store: &dyn Store, op: &DurableOp) -> StoreResult<Answer> {
        use DurableOp as O;
        Ok(match op {
            O::Add { .. } | O::AddMany { .. } => Answer::Bools(self.add(store, op)?),
            O::Cancel(k) => Answer::Bool(store.cancel(key(*k))?),
            O::Reschedule { key: k, at } => Answer::Bool(store.reschedule(key(*k), self.due(*at))?),
            O::Get(k) => Answer::Info(store.get(key(*k))?),
            O::Claim {
                window,
                lease,
                max,
                max_attempts,
            } => Answer::Claim(store.claim(&ClaimRequest {
                window: u64::from(*window),
                lease: u64::from(*lease).max(1),
                max: usize::from(*max % 8),
                max_attempts: u32::from(*max_attempts % 4).max(1),
            })?),
            O::Start { keys, flows, lease } => {
                let flows: Vec<&str> = (0..keys.len())
                    .map(|i| flows.get(i).map_or("", |&f| flow(f)))
                    .collect();
                let lease = u64::from(*lease).max(1);
                Answer::Starts(store.start_runs(&self.held(keys), &[], &flows, lease)?)
            }
            O::Renew { keys, lease } => {
                Answer::Bools(store.renew(&self.held(keys), u64::from(*lease).max(1))?)
            }
            O::Finish(runs) => {
                let runs: Vec<(Fenced<'_>, Finish)> = runs
                    .iter()
                    .map(|&(k, stale, h, delay)| (self.held(&[(k, stale)])[0], how(h, delay)))
                    .collect();
                Answer::Bools(store.finish(&runs, &[])?)
            }
            O::FlowFinish(runs) => {
                let (runs, flows): (Vec<(Fenced<'_>, Finish)>, Vec<FlowOutcome<'_>>) = runs
                    .iter()
                    .map(|&(k, stale, h, delay, f, c)| {
                        let out = FlowOutcome {
                            flow: flow(f),
                            class: class(c, delay),
                        };
                        ((self.held(&[(k, stale)])[0], how(h, delay)), out)
                    })
                    .unzip();
                Answer::Bools(store.finish(&runs, &flows)?)
            }
            O::Defer { keys, flows } => {
                let flows: Vec<&str> = (0..keys.len())
                    .map(|i| {
                        let f = flows.get(i).copied().unwrap_or(0);
                        // A deferred claim always names a key.
                        Some(flow(f)).filter(|f| !f.is_empty()).unwrap_or(FLOWS[1])
                    })
                    .collect();
                Answer::Bools(store.defer(&self.held(keys), &flows)?)
            }
            O::SetLimits { flow: f, limits: l } => {
                let f = Some(flow(*f)).filter(|f| !f.is_empty());
                store.set_limits(f, limits(*l).as_ref())?;
                Answer::Unit
            }
            O::Release(keys) => Answer::Bools(store.release(&self.held(keys))?),
            O::DeadLetters(limit) => Answer::Dead(store.dead_letters(usize::from(*limit))?),
            O::RetryDead { key: k, at } => Answer::Bool(store.retry_dead(key(*k), self.due(*at))?),
            O::Counts => Answer::Counts(store.counts()?),
            O::List {
                which,
                after,
                limit,
            } => {
                let after =
                    after.map(|(at, k)| (self.now().saturating_add_signed(at.into()), key(k)));
                Answer::Listed(store.list(listing(*which), after, usize::from(*limit))?)
            }
            O::ListAll { which, page } => {
                let page = usize::from(*page % 4) + 1;
                Answer::Listed(self.list_all(store, listing(*which), page)?)
            }
            O::Advance(_) => Answer::Unit,
            O::Schedule(op) => Answer::Schedule(self.runs.ask(store, op)?),
            O::DedupWindow(ms) => {
                store.set_dedup_window(u64::from(*ms));
                Answer::Unit
            }
            O::Ended(k) => Answer::Ended(store.ended(key(*k))?),
            O::Pause { flow: f, paused } => {
                let f = Some(flow(*f)).filter(|f| !f.is_empty());
                Answer::Bool(store.set_paused(f, *paused)?)
            }
            O::Flows => Answer::Flows(store.flows()?),
        })
    }

    /// Applies `op` to the model and to every store.
    ///
    /// # Panics
    ///
    /// If a store fails or answers differently from the model.
    pub fn step(&mut self, op: &DurableOp) {
        if let DurableOp::Advance(ms) = op {
            self.clock.fetch_add(u64::from(*ms), Ordering::SeqCst);
            return;
        }
        let want = self.ask(&self.model, op).expect("the model never fails");
        for (name, store) in self.stores() {
            let got = self
                .ask(store, op)
                .unwrap_or_else(|e| panic!("{name}: {op:?}: {e}"));
            assert_eq!(got, want, "{name} differs from the model on {op:?}");
        }
        if let Answer::Claim(batch) = &want {
            for c in &batch.timers {
                match KEYS.iter().position(|k| *k == c.key) {
                    Some(k) => {
                        self.fences[k] = c.fence;
                        self.first_fences[k] = c.first_fence;
                    }
                    None => {
                        self.runs.0.insert(c.key.clone(), c.fence);
                    }
                }
            }
        }
    }

    /// Compares everything the stores hold: the counts, the dead letters,
    /// every listing and every key's dedup memory.
    pub fn check_all(&mut self) {
        self.step(&DurableOp::Counts);
        for k in 0..KEYS.len() as u8 {
            self.step(&DurableOp::Ended(k));
        }
        self.step(&DurableOp::DeadLetters(u8::MAX));
        for which in 0..4 {
            self.step(&DurableOp::ListAll { which, page: 3 });
        }
        self.step(&DurableOp::Flows);
        self.step(&DurableOp::Schedule(ScheduleOp::Read));
    }
}

impl Drop for DurableBench {
    fn drop(&mut self) {
        // A bench that panicked may have stopped a store half-way through
        // a change: its store is closed, not wiped for the next bench.
        if let Some(pooled) = self.embedded.take()
            && !std::thread::panicking()
        {
            pooled.give_back();
        }
    }
}

impl Default for DurableBench {
    fn default() -> Self {
        DurableBench::new()
    }
}

/// Runs up to [`MAX_DURABLE_OPS`] operations on a fresh bench, comparing
/// the stores with the model after each, then everything they hold.
///
/// # Panics
///
/// On the first difference.
pub fn run_durable_ops(ops: &[DurableOp]) {
    let mut bench = DurableBench::new();
    for op in ops.iter().take(MAX_DURABLE_OPS) {
        bench.step(op);
    }
    bench.check_all();
}

#[cfg(all(test, not(loom)))]
mod tests {
    use arbitrary::Unstructured;

    use super::*;

    /// The committed seeds of the `durable_ops` target, replayed on every
    /// store the tests can open (Redis too, when available).
    #[test]
    fn replay_seed_corpus_durable_ops() {
        for data in wheel_testkit::seed_corpus("durable_ops") {
            let ops: Vec<DurableOp> =
                arbitrary::Arbitrary::arbitrary_take_rest(Unstructured::new(&data))
                    .expect("a seed decodes");
            assert!(!ops.is_empty());
            run_durable_ops(&ops);
        }
    }
}
