//! The reference model of a store: the state machine of the module docs in
//! plain maps, with nothing durable and nothing clever, for the
//! differential tests to compare the real stores against.
//!
//! Node state: none (the reference model of a store).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::Mutex;

use super::record::{DeadRecord, Record};
use super::schedules::{SchedAnswer, SchedOp, SchedRecord};
use super::{
    ClaimBatch, ClaimRequest, Claimed, Counts, Due, EXPIRED_KEYS, Fenced, Finish, FlowOutcome,
    FlowsState, Limits, Listed, Memory, Millis, NewTimer, Start, Store, StoreClock, StoreResult,
    Wake, claim_lease_end, later, lease_lost_reason,
};
use crate::dedup::rememberable;
use crate::schedule::chain::Advance;
use crate::sync::lock;
use crate::time::system_time_of;
use crate::{AddMode, DeadLetter, EndedHow, Listing, TimerInfo, TimerState};

#[path = "model_flows.rs"]
mod flows;
#[path = "model_schedules.rs"]
mod schedules;

use self::flows::{Flows, Gate};

#[derive(Debug, Clone)]
struct Timer {
    due: Millis,
    first_due: Millis,
    payload: Vec<u8>,
    attempts: u32,
    fence: u64,
    state: TimerState,
    lease_until: Millis,
    /// The fence of the first started run, once a later claim replaced it.
    first_fence: Option<u64>,
    /// The flow key it is parked under, while `Parked`.
    parked: Option<String>,
    /// The flow key whose permit its run took at its last start, if any
    /// (valid only while that run is running with its lease).
    permit: Option<String>,
}

impl Timer {
    /// Claimed or running: held by a node, in the lease index.
    fn held_by_node(&self) -> bool {
        matches!(self.state, TimerState::Claimed | TimerState::Running)
    }
}

#[derive(Debug, Clone)]
struct Dead {
    payload: Vec<u8>,
    attempts: u32,
    reason: String,
    failed_at: Millis,
    due: Millis,
    first_due: Millis,
}

#[derive(Debug, Default)]
struct State {
    timers: HashMap<String, Timer>,
    dead: HashMap<String, Dead>,
    fence: u64,
    schedules: BTreeMap<String, SchedRecord>,
    /// The dedup window's memories (expired ones are answered by nothing;
    /// the model never needs to delete them).
    ended: HashMap<String, Memory>,
    /// The dedup window, in ms (zero: remember nothing).
    dedup: Millis,
    /// Pauses, limits, breakers (`model_flows.rs`).
    flows: Flows,
}

/// The model store; its clock is manual.
pub(crate) struct Model {
    clock: StoreClock,
    state: Mutex<State>,
}

impl Model {
    pub(crate) fn new(clock: StoreClock) -> Model {
        Model {
            clock,
            state: Mutex::new(State::default()),
        }
    }

    fn now(&self) -> Millis {
        self.clock.local_now()
    }

    fn with<R>(&self, f: impl FnOnce(&mut State, Millis) -> R) -> R {
        let now = self.now();
        f(&mut lock(&self.state), now)
    }
}

impl State {
    fn pending(&mut self, key: &str, due: Millis, payload: Vec<u8>, attempts: u32) {
        self.dead.remove(key);
        self.ended.remove(key);
        let t = Timer {
            due,
            first_due: due,
            payload,
            attempts,
            fence: 0,
            state: TimerState::Pending,
            lease_until: 0,
            first_fence: None,
            parked: None,
            permit: None,
        };
        self.timers.insert(key.to_owned(), t);
    }

    /// Remembers that `key`'s timer ended `how` at `at`, from `now` on for
    /// the window.
    fn remember(&mut self, key: &str, how: EndedHow, at: Millis, now: Millis) {
        if rememberable(key, self.dedup) {
            let expires = later(now, self.dedup);
            self.ended
                .insert(key.to_owned(), Memory { how, at, expires });
        }
    }

    /// The memory of `key`, unless it expired by `now`.
    fn memory(&self, key: &str, now: Millis) -> Option<Memory> {
        self.ended.get(key).filter(|m| m.expires > now).copied()
    }

    fn held(&mut self, key: &str, fence: u64, state: TimerState) -> Option<&mut Timer> {
        self.timers
            .get_mut(key)
            .filter(|t| t.fence == fence && t.state == state)
    }

    fn make_dead(&mut self, key: &str, reason: String, now: Millis) {
        if let Some(t) = self.timers.remove(key) {
            let d = Dead {
                payload: t.payload,
                attempts: t.attempts,
                reason,
                failed_at: now,
                due: t.due,
                first_due: t.first_due,
            };
            self.dead.insert(key.to_owned(), d);
        }
    }

    fn expire_leases(&mut self, now: Millis, max_attempts: u32, batch: &mut ClaimBatch) {
        // In lease order, as the stores' lease indexes give them.
        let mut expired: Vec<(Millis, String)> = self
            .timers
            .iter()
            .filter(|(_, t)| t.held_by_node() && t.lease_until <= now)
            .map(|(k, t)| (t.lease_until, k.clone()))
            .collect();
        expired.sort();
        for (_, key) in expired {
            if batch.expired_keys.len() < EXPIRED_KEYS {
                batch.expired_keys.push(key.clone());
            }
            let t = self.timers.get_mut(&key).unwrap();
            if t.state == TimerState::Running && t.attempts >= max_attempts {
                let reason = lease_lost_reason(t.attempts);
                self.make_dead(&key, reason, now);
                batch.expired_dead += 1;
            } else {
                t.state = TimerState::Pending;
                batch.reclaimed += 1;
            }
        }
    }

    /// The timer or dead letter with this key, as `get` reports it (built
    /// by the stores' own conversions, so that the model cannot drift).
    fn info(&self, key: &str) -> Option<TimerInfo> {
        if let Some(t) = self.timers.get(key) {
            let r = Record {
                due: t.due,
                first_due: t.first_due,
                lease_until: t.lease_until,
                fence: t.fence,
                attempts: t.attempts,
                state: t.state,
                first_fence: t.first_fence,
                payload: t.payload.clone(),
            };
            return Some(r.info(key));
        }
        self.dead.get(key).map(|d| {
            let d = DeadRecord {
                failed_at: d.failed_at,
                due: d.due,
                first_due: d.first_due,
                attempts: d.attempts,
                reason: d.reason.clone(),
                payload: d.payload.clone(),
            };
            d.info(key)
        })
    }

    /// Every key of a listing with its score, in the listing's order.
    fn listing(&self, which: Listing) -> BTreeSet<(Millis, &str)> {
        match which {
            Listing::Pending => self.by_due(TimerState::Pending),
            Listing::Claimed => self
                .timers
                .iter()
                .filter(|(_, t)| t.held_by_node())
                .map(|(k, t)| (t.lease_until, k.as_str()))
                .collect(),
            Listing::Dead => self
                .dead
                .iter()
                .map(|(k, d)| (d.failed_at, k.as_str()))
                .collect(),
            Listing::Parked => self.by_due(TimerState::Parked),
        }
    }

    fn by_due(&self, state: TimerState) -> BTreeSet<(Millis, &str)> {
        self.timers
            .iter()
            .filter(|(_, t)| t.state == state)
            .map(|(k, t)| (t.due, k.as_str()))
            .collect()
    }
}

impl Store for Model {
    fn add(&self, timers: &[NewTimer<'_>], mode: AddMode) -> StoreResult<Vec<bool>> {
        Ok(self.with(|s, now| {
            let mut add = |t: &NewTimer<'_>| {
                let taken = s.timers.contains_key(t.key)
                    || s.dead.contains_key(t.key)
                    || s.memory(t.key, now).is_some();
                if mode == AddMode::IfAbsent && taken {
                    return false;
                }
                s.pending(t.key, t.due.resolve(now), t.payload.to_vec(), 0);
                true
            };
            timers.iter().map(&mut add).collect()
        }))
    }

    fn cancel(&self, key: &str) -> StoreResult<bool> {
        Ok(self.with(|s, now| {
            if let Some(d) = s.dead.remove(key) {
                s.remember(key, EndedHow::Dead, d.failed_at, now);
                return false;
            }
            let Some(t) = s.timers.remove(key) else {
                return false;
            };
            s.remember(key, EndedHow::Cancelled, now, now);
            s.schedule_cancelled(key);
            t.state != TimerState::Running
        }))
    }

    fn reschedule(&self, key: &str, due: Due) -> StoreResult<bool> {
        Ok(self.with(|s, now| match s.timers.get_mut(key) {
            Some(t) if t.state != TimerState::Running => {
                t.due = due.resolve(now);
                t.first_due = t.due;
                t.state = TimerState::Pending;
                t.parked = None;
                true
            }
            _ => false,
        }))
    }

    fn get(&self, key: &str) -> StoreResult<Option<TimerInfo>> {
        Ok(self.with(|s, _| s.info(key)))
    }

    fn ended(&self, key: &str) -> StoreResult<Option<Memory>> {
        Ok(self.with(|s, now| s.memory(key, now)))
    }

    fn set_dedup_window(&self, window: Millis) {
        lock(&self.state).dedup = window;
    }

    fn claim(&self, req: &ClaimRequest) -> StoreResult<ClaimBatch> {
        Ok(self.with(|s, now| {
            let mut batch = ClaimBatch::empty(now);
            s.expire_leases(now, req.max_attempts, &mut batch);
            s.wake_ups(now);
            batch.next_lease = s
                .timers
                .values()
                .filter(|t| t.held_by_node())
                .map(|t| t.lease_until)
                .min();
            if s.flows.paused_all {
                return batch;
            }
            let horizon = now.saturating_add(req.window);
            let due: Vec<(Millis, String)> = s
                .by_due(TimerState::Pending)
                .into_iter()
                .take_while(|(due, _)| *due <= horizon)
                .take(req.max)
                .map(|(d, k)| (d, k.to_owned()))
                .collect();
            for (due, key) in due {
                s.fence += 1;
                let t = s.timers.get_mut(&key).unwrap();
                // Written out rather than through `Record::claim_with`, so
                // that the model states the rule on its own.
                if t.attempts >= 1 && t.first_fence.is_none() {
                    t.first_fence = Some(t.fence);
                }
                t.fence = s.fence;
                t.state = TimerState::Claimed;
                t.lease_until = claim_lease_end(due, now, req.lease);
                batch.timers.push(Claimed {
                    key,
                    due,
                    first_due: t.first_due,
                    payload: t.payload.clone(),
                    attempts: t.attempts,
                    fence: t.fence,
                    first_fence: t.first_fence.unwrap_or(t.fence),
                });
            }
            batch.next_due = s.by_due(TimerState::Pending).first().map(|(d, _)| *d);
            batch.next_lease = batch
                .next_lease
                .into_iter()
                .chain(
                    batch
                        .timers
                        .iter()
                        .map(|c| claim_lease_end(c.due, now, req.lease)),
                )
                .min();
            batch
        }))
    }

    fn start_runs(
        &self,
        claims: &[Fenced<'_>],
        advances: &[Option<Advance>],
        flows: &[&str],
        lease: Millis,
    ) -> StoreResult<Vec<Start>> {
        self.with(|s, now| {
            let mut answers = Vec::with_capacity(claims.len());
            for (i, c) in claims.iter().enumerate() {
                let due = match s.held(c.key, c.fence, TimerState::Claimed) {
                    None => {
                        answers.push(Start::Stale);
                        continue;
                    }
                    Some(t) => t.due,
                };
                if due > now {
                    answers.push(Start::NotYet { now, due });
                    continue;
                }
                let flow = flows.get(i).copied().unwrap_or("");
                let (slot_us, probe) = match s.gate(flow, now) {
                    Gate::Release | Gate::Park => {
                        let park = !s.flows.paused_all;
                        let t = s.timers.get_mut(c.key).expect("held above");
                        t.state = if park {
                            TimerState::Parked
                        } else {
                            TimerState::Pending
                        };
                        t.parked = park.then(|| flow.to_owned());
                        answers.push(Start::Paused { now });
                        continue;
                    }
                    Gate::Wait(until) => {
                        answers.push(Start::Wait { now, until });
                        continue;
                    }
                    Gate::Pass { slot_us, probe } => (slot_us, probe),
                };
                let advance = advances.get(i).and_then(Option::as_ref);
                if !s.schedule_allows(c.key, advance, now) {
                    answers.push(Start::Stale);
                    continue;
                }
                let t = s.timers.get_mut(c.key).expect("held above");
                t.state = TimerState::Running;
                t.attempts += 1;
                t.lease_until = later(now, lease);
                let attempt = t.attempts;
                answers.push(match s.take(c.key, flow, slot_us, probe, now) {
                    Some(at) => Start::Reserved { now, attempt, at },
                    None => Start::Started { now, attempt },
                });
            }
            Ok(answers)
        })
    }

    fn renew(&self, held: &[Fenced<'_>], lease: Millis) -> StoreResult<Vec<bool>> {
        Ok(self.with(|s, now| {
            let renew = |s: &mut State, h: &Fenced<'_>| match s.timers.get_mut(h.key) {
                Some(t) if t.fence == h.fence && t.held_by_node() => {
                    t.lease_until = t.lease_until.max(later(now, lease));
                    true
                }
                _ => false,
            };
            held.iter().map(|h| renew(s, h)).collect()
        }))
    }

    fn finish(
        &self,
        runs: &[(Fenced<'_>, Finish)],
        flows: &[FlowOutcome<'_>],
    ) -> StoreResult<Vec<bool>> {
        self.with(|s, now| {
            let finish =
                |s: &mut State, r: &Fenced<'_>, how: &Finish, flow: Option<&FlowOutcome<'_>>| {
                    if s.held(r.key, r.fence, TimerState::Running).is_none() {
                        return Ok(false);
                    }
                    if let Some(out) = flow {
                        s.flow_finished(r.key, r.fence, out, now);
                    }
                    let t = s
                        .held(r.key, r.fence, TimerState::Running)
                        .expect("held above");
                    match how {
                        Finish::Done => {
                            s.timers.remove(r.key);
                            s.remember(r.key, EndedHow::Done, now, now);
                        }
                        Finish::Retry { delay } => {
                            t.state = TimerState::Pending;
                            t.due = later(now, *delay);
                        }
                        Finish::Dead { reason } => s.make_dead(r.key, reason.clone(), now),
                    }
                    s.schedule_finished(r.key, how, now);
                    Ok(true)
                };
            runs.iter()
                .enumerate()
                .map(|(i, (r, how))| finish(s, r, how, flows.get(i)))
                .collect()
        })
    }

    fn release(&self, claims: &[Fenced<'_>]) -> StoreResult<Vec<bool>> {
        Ok(self.with(|s, _| {
            let release =
                |s: &mut State, c: &Fenced<'_>| match s.held(c.key, c.fence, TimerState::Claimed) {
                    Some(t) => {
                        t.state = TimerState::Pending;
                        true
                    }
                    None => false,
                };
            claims.iter().map(|c| release(s, c)).collect()
        }))
    }

    fn dead_letters(&self, limit: usize) -> StoreResult<Vec<DeadLetter>> {
        Ok(self.with(|s, _| {
            let order: BTreeMap<(Millis, &str), &Dead> = s
                .dead
                .iter()
                .map(|(k, d)| ((d.failed_at, k.as_str()), d))
                .collect();
            order
                .into_iter()
                .take(limit)
                .map(|((at, key), d)| DeadLetter {
                    key: key.to_owned(),
                    payload: d.payload.clone(),
                    attempts: d.attempts,
                    reason: d.reason.clone(),
                    failed_at: system_time_of(at),
                })
                .collect()
        }))
    }

    fn retry_dead(&self, key: &str, due: Due) -> StoreResult<bool> {
        Ok(self.with(|s, now| match s.dead.remove(key) {
            Some(d) => {
                s.pending(key, due.resolve(now), d.payload, 0);
                true
            }
            None => false,
        }))
    }

    fn list(
        &self,
        which: Listing,
        after: Option<(Millis, &str)>,
        limit: usize,
    ) -> StoreResult<Vec<Listed>> {
        Ok(self.with(|s, _| {
            let all = s.listing(which);
            let from = match after {
                Some(pos) => Bound::Excluded(pos),
                None => Bound::Unbounded,
            };
            all.range((from, Bound::Unbounded))
                .take(limit)
                .map(|&(score, key)| Listed {
                    score,
                    info: s.info(key).expect("a listed key has a timer"),
                })
                .collect()
        }))
    }

    fn counts(&self) -> StoreResult<Counts> {
        Ok(self.with(|s, now| {
            let pending = s.by_due(TimerState::Pending);
            let parked = s.by_due(TimerState::Parked).len();
            Counts {
                now,
                pending: pending.len() as u64,
                claimed: (s.timers.len() - pending.len() - parked) as u64,
                dead: s.dead.len() as u64,
                parked: parked as u64,
                next_due: pending.first().map(|(d, _)| *d),
            }
        }))
    }

    fn schedules(&self, ids: &[&str]) -> StoreResult<(Millis, Vec<Option<SchedRecord>>)> {
        Ok(self.with(|s, now| {
            let found = ids.iter().map(|id| s.schedules.get(*id).cloned());
            (now, found.collect())
        }))
    }

    fn schedule_write(&self, id: &str, op: &SchedOp) -> StoreResult<SchedAnswer> {
        Ok(self.with(|s, now| s.schedule_write(id, op, now)))
    }

    fn list_schedules(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, SchedRecord)>> {
        Ok(self.with(|s, _| {
            let from = after.map_or(Bound::Unbounded, Bound::Excluded);
            s.schedules
                .range::<str, _>((from, Bound::Unbounded))
                .take(limit)
                .map(|(id, r)| (id.clone(), r.clone()))
                .collect()
        }))
    }

    fn unplanned(&self, limit: usize) -> StoreResult<Vec<String>> {
        Ok(self.with(|s, _| {
            s.schedules
                .iter()
                .filter(|(_, r)| r.unplanned)
                .take(limit)
                .map(|(id, _)| id.clone())
                .collect()
        }))
    }

    fn set_paused(&self, flow: Option<&str>, paused: bool) -> StoreResult<bool> {
        Ok(self.with(|s, now| s.set_paused(flow, paused, now)))
    }

    fn defer(&self, claims: &[Fenced<'_>], flows: &[&str]) -> StoreResult<Vec<bool>> {
        Ok(self.with(|s, now| {
            let defer = |(c, flow): (&Fenced<'_>, &&str)| s.defer(c.key, c.fence, flow, now);
            claims.iter().zip(flows).map(defer).collect()
        }))
    }

    fn set_limits(&self, flow: Option<&str>, limits: Option<&Limits>) -> StoreResult<()> {
        self.with(|s, _| s.set_limits(flow, limits));
        Ok(())
    }

    fn flows(&self) -> StoreResult<FlowsState> {
        Ok(self.with(|s, now| s.flows_state(now)))
    }

    fn watch(&self, _wake: Wake) -> StoreResult<()> {
        Ok(())
    }

    fn close(&self) -> StoreResult<()> {
        Ok(())
    }
}
