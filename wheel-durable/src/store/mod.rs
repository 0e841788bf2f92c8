//! The stores: where durable timers live between `add` and their run.
//!
//! A store is the wheel's outermost, coarsest level. It holds every timer
//! with its state, ordered by due time, and answers a small set of
//! operations, each atomic: the embedded store runs each on its one writer
//! thread and commits it with its group as one fjall write batch, the Redis
//! store runs each in one Lua script. Every store implements the same state
//! machine, which the differential tests compare against the plain
//! [`model`]:
//!
//! ```text
//!            add / reschedule / retry_dead / release / finish(Retry)
//!   (none) ───────────────────────────────────────────────▶ PENDING
//!   PENDING ── claim (due ≤ now + window) ─▶ CLAIMED  (new fence, lease = max(due, now) + lease)
//!   CLAIMED ── start (fence matches, due ≤ now) ─▶ RUNNING  (attempts += 1, lease = now + lease)
//!   RUNNING ── finish(Done) ─▶ (none)     finish(Retry) ─▶ PENDING     finish(Dead) ─▶ DEAD
//!   CLAIMED / RUNNING ── lease passed, at the next claim ─▶ PENDING (or DEAD when a run's
//!                                                           lease passed on its last attempt)
//!   CLAIMED ── start, flow key paused ─▶ PARKED   (namespace paused: PENDING)
//!   PARKED  ── resume its flow key / reschedule / add (replace) ─▶ PENDING
//!   PENDING / CLAIMED / PARKED ── cancel ─▶ (none), answers true
//!   RUNNING / DEAD    ── cancel ─▶ (none), answers false (a started run finishes; its
//!                                                         outcome is then ignored)
//! ```
//!
//! Invariants every store keeps:
//! - A timer is in exactly one index: the due index while `Pending` (by
//!   `(due, key)`), the lease index while `Claimed` or `Running` (by
//!   `(lease_until, key)`), the dead index while `Dead`, its flow key's
//!   parked index while `Parked` (by `(due, key)`; `flow_state.rs` has the
//!   rules of pausing).
//! - Fences come from one counter per namespace and only grow, so every
//!   claim of a key carries a fence larger than any earlier one.
//! - `start`, `renew`, `finish` and `release` act only when the fence
//!   matches and the state is the one they expect; otherwise they change
//!   nothing and say so. That is what makes a stale node harmless.
//! - `start`, `renew`, `finish` and `release` take a batch: one store
//!   operation for every timer a node starts (or renews, finishes, hands
//!   back) at once. The batch is applied in order, each entry exactly as it
//!   would be alone, and answered entry by entry; one entry's refusal
//!   changes nothing for the others.
//! - Every timer keeps its first due time beside its due time: `add`,
//!   `reschedule` and `retry_dead` set both; `finish(Retry)` and a lease
//!   that passed move only `due`; a dead letter keeps both.
//! - Every timer keeps the fence of its first started run once a later
//!   claim gives it a new fence (a claim of a timer with `attempts >= 1`
//!   keeps the old fence, unless one is kept already); `add` and
//!   `retry_dead` start without one, `reschedule` keeps it, and `claim`
//!   answers it (or the new fence, when none is kept) with every timer.
//! - Time is the store's own clock (`now` inside the operation), never the
//!   caller's: a node's clock cannot make a timer start early.
//! - `add` in [`AddMode::IfAbsent`] looks for the key, in every state, and
//!   adds in the same atomic operation, so of concurrent adds of one key
//!   exactly one adds; a batch is applied in order, so a key that comes
//!   twice is added by its first entry only.
//! - A timer that leaves the store by `finish(Done)` or `cancel` is
//!   remembered for the dedup window (`dedup.rs` states the rules), and
//!   `add` in [`AddMode::IfAbsent`] treats a remembered key as taken.
//! - A listing is an index read in its own order, (score, key bytes): the
//!   due index for pending timers, the lease index for claimed and running
//!   ones, the dead index by failure time. It resumes strictly after a
//!   (score, key) position, found in O(log n), never at an offset.
//!
//! Node state: none: the store is the level below the node. A node calls it
//! through [`Store`] and learns from it only through the answers and the wake
//! notifications.

use std::sync::Arc;
#[cfg(any(test, fuzzing))]
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) use self::batch_limits::BatchLimits;
pub(crate) use self::flow_state::{FlowOutcome, FlowsState, Limits, UNPARK_BATCH};
use self::schedules::{SchedAnswer, SchedOp, SchedRecord};
pub(crate) use super::dedup::Memory;
use super::time::system_now;
pub(crate) use super::time::{Millis, later};
use super::{AddMode, DeadLetter, DurableError, Listing, TimerInfo};
use crate::schedule::chain::Advance;

pub(crate) mod batch_limits;
#[cfg(feature = "embedded")]
pub(crate) mod embedded;
pub(crate) mod flow_state;
#[cfg(all(test, feature = "embedded"))]
mod flow_tests;
#[cfg(all(feature = "embedded", any(test, fuzzing)))]
pub(crate) mod fuzz;
#[cfg(all(feature = "embedded", any(test, fuzzing)))]
pub(crate) mod fuzz_schedules;
#[cfg(all(feature = "embedded", any(test, fuzzing)))]
pub(crate) mod fuzz_store;
#[cfg(feature = "redis")]
pub(crate) mod health;
#[cfg(any(test, fuzzing))]
pub(crate) mod model;
#[cfg(any(feature = "redis", all(test, feature = "embedded")))]
pub(crate) mod partitioned;
pub(crate) mod record;
#[cfg(feature = "redis")]
pub(crate) mod redis;
#[cfg(feature = "embedded")]
pub(crate) mod sched_codec;
#[cfg(feature = "embedded")]
pub(crate) mod schedule_steps;
pub(crate) mod schedules;
#[cfg(all(test, feature = "embedded"))]
mod tests;

/// The result of a store call.
pub(crate) type StoreResult<T> = Result<T, DurableError>;

/// A due time as the caller gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// At this store time.
    At(Millis),
    /// This many milliseconds after the store's `now`.
    After(Millis),
}

impl Due {
    /// The store time this due time means when the store's clock reads `now`.
    #[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
    pub(crate) fn resolve(self, now: Millis) -> Millis {
        match self {
            Due::At(at) => at,
            Due::After(delay) => later(now, delay),
        }
    }
}

/// One timer to add.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewTimer<'a> {
    pub(crate) key: &'a str,
    pub(crate) due: Due,
    pub(crate) payload: &'a [u8],
}

/// What `claim` is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClaimRequest {
    /// Claim pending timers due up to `now + window`.
    pub(crate) window: Millis,
    /// A claim expires `lease` after `max(due, now)`.
    pub(crate) lease: Millis,
    /// At most this many timers.
    pub(crate) max: usize,
    /// A run whose lease passed on this attempt becomes a dead letter
    /// instead of pending again.
    pub(crate) max_attempts: u32,
}

/// One claimed timer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claimed {
    pub(crate) key: String,
    pub(crate) due: Millis,
    /// The due time before any retry.
    pub(crate) first_due: Millis,
    pub(crate) payload: Vec<u8>,
    /// Runs started before this claim.
    pub(crate) attempts: u32,
    pub(crate) fence: u64,
    /// The fence that names this delivery: of its first started run (this
    /// claim's own fence if none started yet).
    pub(crate) first_fence: u64,
}

/// What `claim` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaimBatch {
    /// The store's clock during the claim.
    pub(crate) now: Millis,
    /// The claimed timers, earliest due first (ties by key).
    pub(crate) timers: Vec<Claimed>,
    /// The earliest due time still pending after the claim.
    pub(crate) next_due: Option<Millis>,
    /// The earliest lease end among claimed and running timers.
    pub(crate) next_lease: Option<Millis>,
    /// Claims and runs whose lease had passed, put back to pending.
    pub(crate) reclaimed: u32,
    /// Runs whose lease passed on their last attempt, made dead letters.
    pub(crate) expired_dead: u32,
    /// The keys of the first [`EXPIRED_KEYS`] timers whose lease had
    /// passed (taken back or made dead), in lease order: for the log.
    pub(crate) expired_keys: Vec<String>,
}

/// Keys of expired leases a claim reports at most (the counts say how many
/// there were in all).
pub(crate) const EXPIRED_KEYS: usize = 10;

impl ClaimBatch {
    /// A batch that claimed nothing yet, at `now`.
    #[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
    pub(crate) fn empty(now: Millis) -> ClaimBatch {
        ClaimBatch {
            now,
            timers: Vec::new(),
            next_due: None,
            next_lease: None,
            reclaimed: 0,
            expired_dead: 0,
            expired_keys: Vec::new(),
        }
    }
}

/// A timer as a node holds it: its key and the fence of the node's claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fenced<'a> {
    pub(crate) key: &'a str,
    pub(crate) fence: u64,
}

impl Claimed {
    /// A claim of a timer that never started (tests of the node's stages).
    #[cfg(test)]
    pub(crate) fn fresh(key: &str, due: Millis, fence: u64) -> Claimed {
        Claimed {
            key: key.into(),
            due,
            first_due: due,
            payload: Vec::new(),
            attempts: 0,
            fence,
            first_fence: fence,
        }
    }

    /// The key and fence of this claim.
    pub(crate) fn fenced(&self) -> Fenced<'_> {
        Fenced {
            key: &self.key,
            fence: self.fence,
        }
    }
}

/// What `start` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// Now running; `attempt` counts this run.
    Started { now: Millis, attempt: u32 },
    /// Still claimed by this fence but not due by the store's clock.
    NotYet { now: Millis, due: Millis },
    /// Cancelled, rescheduled, re-added or claimed again since.
    Stale,
    /// Due, but its namespace or its flow key is paused, or its key's
    /// breaker is open: not started (no attempt counted), handed back or
    /// parked (`flow_state.rs`).
    Paused { now: Millis },
    /// Due, but its flow key's parallelism or rate holds it back until
    /// `until`: not started, still claimed with its fence.
    Wait { now: Millis, until: Millis },
    /// Now running like `Started`, with a rate slot at `at` (later than
    /// `now`): the node sends it then, not before.
    Reserved {
        now: Millis,
        attempt: u32,
        at: Millis,
    },
}

impl Start {
    /// The store's clock when it answered, unless stale.
    pub(crate) fn now(&self) -> Option<Millis> {
        match *self {
            Start::Started { now, .. }
            | Start::NotYet { now, .. }
            | Start::Paused { now }
            | Start::Wait { now, .. }
            | Start::Reserved { now, .. } => Some(now),
            Start::Stale => None,
        }
    }
}

/// How a run ended, as the store records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finish {
    /// Remove the timer.
    Done,
    /// Pending again, due `delay` after the store's `now`.
    Retry { delay: Millis },
    /// A dead letter with this reason.
    Dead { reason: String },
}

/// The store's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) now: Millis,
    pub(crate) pending: u64,
    pub(crate) claimed: u64,
    pub(crate) dead: u64,
    /// Parked while their flow key is paused.
    pub(crate) parked: u64,
    /// The earliest pending due time.
    pub(crate) next_due: Option<Millis>,
}

/// One timer of a listing, with its score: the due time, the lease end or
/// the failure time, as the listing orders by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) score: Millis,
    pub(crate) info: TimerInfo,
}

/// Called when timers became pending and due within the notify window, so
/// that a node claims them without waiting for its next poll. The argument
/// is the earliest such due time (store time), which lets a node that will
/// claim before then anyway skip the notification.
pub(crate) type Wake = Arc<dyn Fn(Millis) + Send + Sync>;

/// The operations every store offers. Each is atomic in the store; see the
/// module docs for the state machine.
pub(crate) trait Store: Send + Sync + 'static {
    /// Adds these timers in order, replacing or keeping a timer with the
    /// same key (whatever its state) as `mode` says; returns once the store
    /// holds them durably. True for each timer added.
    fn add(&self, timers: &[NewTimer<'_>], mode: AddMode) -> StoreResult<Vec<bool>>;
    /// Removes a timer. True iff it was pending or claimed (never started).
    fn cancel(&self, key: &str) -> StoreResult<bool>;
    /// Moves a pending or claimed timer to a new due time (pending again).
    fn reschedule(&self, key: &str, due: Due) -> StoreResult<bool>;
    /// One timer, in any state.
    fn get(&self, key: &str) -> StoreResult<Option<TimerInfo>>;
    /// The dedup window's memory of `key`, unless expired by the store's
    /// clock (`dedup.rs`).
    fn ended(&self, key: &str) -> StoreResult<Option<Memory>>;
    /// From now on, remember each timer that ends for `window` ms (zero:
    /// remember nothing). Set once, when the node is built.
    fn set_dedup_window(&self, window: Millis);
    /// Takes expired leases back, then claims pending timers due soon.
    fn claim(&self, req: &ClaimRequest) -> StoreResult<ClaimBatch>;
    /// Starts each claimed timer still claimed with its fence and due; one
    /// answer per timer, in order.
    #[cfg(all(feature = "embedded", any(test, fuzzing)))]
    fn start(&self, claims: &[Fenced<'_>], lease: Millis) -> StoreResult<Vec<Start>> {
        self.start_runs(claims, &[], &[], lease)
    }
    /// `start`, with the chain step planned for each claim that is a
    /// schedule's pending run (`advances` is empty or one per claim) and
    /// each claim's flow key (`flows` is empty, meaning none, or one per
    /// claim, `""` for none); a schedule's run is started only as the
    /// schedule rules allow ([`schedule_steps`] says which; a refused one
    /// answers `Stale`), a claim of a paused namespace or flow key is
    /// handed back or parked (`flow_state.rs`).
    fn start_runs(
        &self,
        claims: &[Fenced<'_>],
        advances: &[Option<Advance>],
        flows: &[&str],
        lease: Millis,
    ) -> StoreResult<Vec<Start>>;
    /// Pauses (`paused`) or resumes the namespace (`flow` is `None`) or one
    /// flow key (not empty); true if that changed its state. Resuming a
    /// key makes its parked timers pending again (`flow_state.rs`).
    fn set_paused(&self, flow: Option<&str>, paused: bool) -> StoreResult<bool>;
    /// Parks each claim still held with its fence under its flow key (one
    /// per claim, not empty), for the wake-ups to hand out again at the
    /// key's rate (`flow_state.rs`, "Deferring"); true for each one
    /// parked.
    fn defer(&self, claims: &[Fenced<'_>], flows: &[&str]) -> StoreResult<Vec<bool>>;
    /// Sets (`Some`) or removes the limits of a flow key (not empty), or
    /// of every key without its own (`flow` is `None`).
    fn set_limits(&self, flow: Option<&str>, limits: Option<&Limits>) -> StoreResult<()>;
    /// The flow-control state of the namespace and of its flow keys.
    fn flows(&self) -> StoreResult<FlowsState>;
    /// The store's clock, and the record of each schedule id.
    fn schedules(&self, ids: &[&str]) -> StoreResult<(Millis, Vec<Option<SchedRecord>>)>;
    /// The store's clock, and the record of the schedule of each claimed
    /// chain run `(key, schedule id)`, for planning the steps that go with
    /// their start. A store may answer from what its claim read, as long
    /// as a step planned from it is one a fresh read would give or one the
    /// start refuses (see the Redis store's `claimed_schedules.rs`).
    fn schedules_to_start(
        &self,
        runs: &[(&str, &str)],
    ) -> StoreResult<(Millis, Vec<Option<SchedRecord>>)> {
        let ids: Vec<&str> = runs.iter().map(|r| r.1).collect();
        self.schedules(&ids)
    }
    /// One atomic change of schedule `id`.
    fn schedule_write(&self, id: &str, op: &SchedOp) -> StoreResult<SchedAnswer>;
    /// Up to `limit` schedules in id order (bytes), strictly after `after`.
    fn list_schedules(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, SchedRecord)>>;
    /// Up to `limit` ids of schedules marked unplanned.
    fn unplanned(&self, limit: usize) -> StoreResult<Vec<String>>;
    /// Extends the lease of each claimed or running timer held with its
    /// fence; true for each one extended.
    fn renew(&self, held: &[Fenced<'_>], lease: Millis) -> StoreResult<Vec<bool>>;
    /// Records the end of each run held with its fence; true for each one
    /// recorded. `flows` is empty, or one per run: its flow key and how
    /// it went, for the key's breaker (`flow_state.rs`; a refused finish
    /// counts for nothing).
    fn finish(
        &self,
        runs: &[(Fenced<'_>, Finish)],
        flows: &[FlowOutcome<'_>],
    ) -> StoreResult<Vec<bool>>;
    /// Hands claimed, not started timers back (pending again, same due);
    /// true for each one handed back.
    fn release(&self, claims: &[Fenced<'_>]) -> StoreResult<Vec<bool>>;
    /// Up to `limit` dead letters, oldest failure first.
    fn dead_letters(&self, limit: usize) -> StoreResult<Vec<DeadLetter>>;
    /// Makes a dead letter pending again with no attempts counted.
    fn retry_dead(&self, key: &str, due: Due) -> StoreResult<bool>;
    /// Up to `limit` timers of a listing, in its order (score, then key
    /// bytes), strictly after the position `after` if given.
    fn list(
        &self,
        which: Listing,
        after: Option<(Millis, &str)>,
        limit: usize,
    ) -> StoreResult<Vec<Listed>>;
    /// The counts of timers in each state.
    fn counts(&self) -> StoreResult<Counts>;
    /// Calls `wake` (from any thread) whenever a timer becomes pending with
    /// a due time within the notify window.
    fn watch(&self, wake: Wake) -> StoreResult<()>;
    /// Makes everything written so far durable and stops background work.
    fn close(&self) -> StoreResult<()>;
    /// False while the store is known to be unusable: a remote store's
    /// last call failed to reach it and none has succeeded since, or an
    /// embedded store's write failed (it refuses writes until reopened).
    /// Answers at once, without a store call.
    fn reachable(&self) -> bool {
        true
    }
    /// Whether every part of a partitioned namespace announces on the one
    /// channel this store's [`watch`](Store::watch) listens to, so that
    /// one watcher serves them all (`partitioned.rs`).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))] // partitions need Redis
    fn shares_wake_channel(&self) -> bool {
        false
    }
    /// The largest claim, start and finish the node sends this store
    /// (`batch_limits.rs`): by default sized for a store whose each call
    /// costs a disk write; a store that is blocked while a call runs says
    /// less, to bound that time.
    fn batch_limits(&self) -> BatchLimits {
        BatchLimits::DEFAULT
    }
}

/// The clock a store reads: the real one, or (in tests and fuzzing only) a
/// hand-moved one for the differential and skewed-clock tests (the Redis
/// store passes it into its scripts instead of reading `TIME`).
#[derive(Debug, Clone, Default)]
pub(crate) enum StoreClock {
    /// The system clock (the embedded store) or the server's `TIME`.
    #[default]
    Real,
    /// Milliseconds set by a test.
    #[cfg(any(test, fuzzing))]
    Manual(Arc<AtomicU64>),
}

impl StoreClock {
    /// The manual reading, if this clock is manual.
    pub(crate) fn manual(&self) -> Option<Millis> {
        match self {
            StoreClock::Real => None,
            #[cfg(any(test, fuzzing))]
            StoreClock::Manual(ms) => Some(ms.load(Ordering::SeqCst)),
        }
    }

    /// The reading for a store whose real clock is this machine's.
    #[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
    pub(crate) fn local_now(&self) -> Millis {
        self.manual().unwrap_or_else(system_now)
    }
}

/// The lease end of a fresh claim: `lease` after the due time, or after
/// now for a timer already overdue.
#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
pub(crate) fn claim_lease_end(due: Millis, now: Millis, lease: Millis) -> Millis {
    later(due.max(now), lease)
}

/// The reason recorded when a run's lease passed on its last attempt.
#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
pub(crate) fn lease_lost_reason(attempts: u32) -> String {
    format!("lease expired during attempt {attempts}, the last allowed")
}
