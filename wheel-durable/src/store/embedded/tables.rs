//! The state machine's steps on the embedded store's keyspaces
//! ([`spaces`](super::spaces) names them), run by the writer thread over
//! the current group's [`Tables`]. A timer's record and its one index
//! entry always change in the same step.
//!
//! A group's writes go into an overlay first, which every later read of
//! the group sees; the writer then commits the overlay as one atomic write
//! batch, or drops it when a step failed.
//!
//! Node state: none: the keyspaces belong to the store; only the writer
//! thread changes them.

use std::collections::BTreeMap;
use std::ops::Bound;

use fjall::Database;

use super::cursor::{Cursor, end};
use super::db_err;
use super::gates::FlowGate;
use super::spaces::{SPACES, Space, Spaces, corrupt, index_key, parse_index_key};
use crate::schedule::chain::Advance;
use crate::store::flow_state::FlowClass;
use crate::store::record::Record;
use crate::store::schedule_steps::{self, Gate};
use crate::store::{
    ClaimBatch, ClaimRequest, Claimed, Counts, EXPIRED_KEYS, Finish, Millis, Start, StoreResult,
    claim_lease_end, later, lease_lost_reason,
};
use crate::{AddMode, DurableError, EndedHow, TimerState};

/// The name of the fence counter in `meta`.
const FENCE: &[u8] = b"fence";

/// Expired leases handled by one claim at most (the rest wait for the next).
const MAX_EXPIRED_PER_CLAIM: usize = 10_000;

/// One group's view of the store: the keyspaces under the group's own
/// writes, with the group's clock reading.
pub(super) struct Tables<'s> {
    spaces: &'s Spaces,
    /// The group's writes per keyspace: a value, or `None` for a delete.
    writes: [BTreeMap<Vec<u8>, Option<Vec<u8>>>; SPACES],
    pub(super) cursor: Cursor,
    /// The store's clock for every step of this group.
    pub(super) now: Millis,
    /// The earliest due time that became pending at or before `wake_before`.
    pub(super) wake: Option<Millis>,
    wake_before: Millis,
    /// How long a timer that ends now is remembered (zero: not at all).
    pub(super) dedup: Millis,
}

impl<'s> Tables<'s> {
    pub(super) fn new(spaces: &'s Spaces, cursor: Cursor, now: Millis, window: Millis) -> Self {
        Tables {
            spaces,
            writes: Default::default(),
            cursor,
            now,
            wake: None,
            wake_before: now.saturating_add(window),
            dedup: 0,
        }
    }

    /// True if the group wrote nothing.
    pub(super) fn is_clean(&self) -> bool {
        self.writes.iter().all(BTreeMap::is_empty)
    }

    /// The group's writes as one atomic batch.
    pub(super) fn into_batch(self, db: &Database) -> fjall::OwnedWriteBatch {
        let n = self.writes.iter().map(BTreeMap::len).sum();
        let mut batch = fjall::OwnedWriteBatch::with_capacity(db.clone(), n);
        for (space, writes) in self.spaces.all().iter().zip(self.writes) {
            for (k, v) in writes {
                match v {
                    Some(v) => batch.insert(space, k, v),
                    None => batch.remove(space, k),
                }
            }
        }
        batch
    }

    pub(super) fn read(&self, space: Space, key: &[u8]) -> StoreResult<Option<Vec<u8>>> {
        if let Some(v) = self.writes[space as usize].get(key) {
            return Ok(v.clone());
        }
        Ok(self
            .spaces
            .get(space)
            .get(key)
            .map_err(db_err)?
            .map(|v| v.to_vec()))
    }

    pub(super) fn write(&mut self, space: Space, key: Vec<u8>, value: Option<Vec<u8>>) {
        self.writes[space as usize].insert(key, value);
    }

    /// Up to `max` entries of an index, from index key `from` on, with
    /// their time at most `until`: the keyspace merged with the group's
    /// writes.
    pub(super) fn first(
        &self,
        space: Space,
        from: &[u8],
        max: usize,
        until: Millis,
    ) -> StoreResult<Vec<(Millis, String)>> {
        self.scan(space, &[], from, max, until)
    }

    /// [`first`](Self::first) over the entries whose key starts with
    /// `prefix` (an index key follows it), from key `from` on (which
    /// starts with `prefix`).
    pub(super) fn scan(
        &self,
        space: Space,
        prefix: &[u8],
        from: &[u8],
        max: usize,
        until: Millis,
    ) -> StoreResult<Vec<(Millis, String)>> {
        let mut out = Vec::new();
        if max == 0 {
            return Ok(out);
        }
        let start = from.to_vec();
        let mut stored = self.spaces.get(space).range(start.clone()..);
        let mut ours = self.writes[space as usize]
            .range::<Vec<u8>, _>((Bound::Included(start), Bound::Unbounded))
            .peekable();
        let mut next_stored: Option<Vec<u8>> = None;
        loop {
            if next_stored.is_none()
                && let Some(entry) = stored.next()
            {
                next_stored = Some(entry.key().map_err(db_err)?.to_vec());
            }
            // The smaller key of the two; the group's write wins a tie.
            let take_ours = match (&next_stored, ours.peek()) {
                (None, None) => break,
                (Some(s), Some((o, _))) => o.as_slice() <= s.as_slice(),
                (None, Some(_)) => true,
                (Some(_), None) => false,
            };
            let key = if take_ours {
                let Some((o, v)) = ours.next() else { break };
                if next_stored.as_deref() == Some(o.as_slice()) {
                    next_stored = None;
                }
                match v {
                    Some(_) => o.clone(),
                    None => continue,
                }
            } else {
                match next_stored.take() {
                    Some(s) => s,
                    None => break,
                }
            };
            let Some(entry) = key.strip_prefix(prefix) else {
                break;
            };
            let (at, key) = parse_index_key(entry)?;
            if at > until {
                break;
            }
            out.push((at, key));
            if out.len() >= max {
                break;
            }
        }
        Ok(out)
    }

    pub(super) fn record(&self, key: &str) -> StoreResult<Option<Record>> {
        match self.read(Space::Timers, key.as_bytes())? {
            None => Ok(None),
            Some(v) => Record::decode(&v).map(Some).ok_or_else(|| corrupt("timer")),
        }
    }

    fn fence(&self) -> StoreResult<u64> {
        match self.read(Space::Meta, FENCE)? {
            None => Ok(0),
            Some(v) => Ok(u64::from_le_bytes(
                v.as_slice().try_into().map_err(|_| corrupt("fence"))?,
            )),
        }
    }

    fn set_fence(&mut self, fence: u64) {
        self.write(
            Space::Meta,
            FENCE.to_vec(),
            Some(fence.to_le_bytes().to_vec()),
        );
    }

    /// Writes `r` and its index entry (the old entry must be gone already).
    pub(super) fn put(&mut self, key: &str, r: &Record) -> StoreResult<()> {
        self.write(Space::Timers, key.as_bytes().to_vec(), Some(r.encode()));
        match r.state {
            TimerState::Pending => {
                let k = index_key(r.due, key);
                if k < self.cursor.due_from {
                    self.cursor.due_from.clone_from(&k);
                }
                self.write(Space::Due, k, Some(Vec::new()));
                self.cursor.pending += 1;
                self.note_pending(r.due);
            }
            // Parking needs the flow key (`hold_back`).
            TimerState::Parked => {
                return Err(DurableError::Store(
                    "a parked timer is written with its flow key".into(),
                ));
            }
            _ => {
                let k = index_key(r.lease_until, key);
                if k < self.cursor.lease_from {
                    self.cursor.lease_from.clone_from(&k);
                }
                self.write(Space::Leases, k, Some(Vec::new()));
                self.cursor.claimed += 1;
            }
        }
        Ok(())
    }

    /// Wakes the watchers (after the group) for a timer made pending at
    /// `due`, if that is within the notify window.
    pub(super) fn note_pending(&mut self, due: Millis) {
        if due <= self.wake_before {
            self.wake = Some(self.wake.map_or(due, |w| w.min(due)));
        }
    }

    /// Removes `r`'s index entry and, with `forget`, the record itself.
    pub(super) fn unindex(&mut self, key: &str, r: &Record, forget: bool) -> StoreResult<()> {
        match r.state {
            TimerState::Pending => {
                self.write(Space::Due, index_key(r.due, key), None);
                self.cursor.pending = self.cursor.pending.saturating_sub(1);
            }
            TimerState::Parked => self.unindex_parked(key, r)?,
            _ => {
                self.write(Space::Leases, index_key(r.lease_until, key), None);
                self.cursor.claimed = self.cursor.claimed.saturating_sub(1);
            }
        }
        if forget {
            self.write(Space::Timers, key.as_bytes().to_vec(), None);
        }
        Ok(())
    }

    /// The record held by `fence` in `state`, if it still is.
    pub(super) fn held(
        &self,
        key: &str,
        fence: u64,
        state: TimerState,
    ) -> StoreResult<Option<Record>> {
        Ok(self
            .record(key)?
            .filter(|r| r.fence == fence && r.state == state))
    }

    /// Adds a timer as `mode` says; true if it did.
    pub(super) fn add_as(
        &mut self,
        key: &str,
        due: Millis,
        payload: &[u8],
        mode: AddMode,
    ) -> StoreResult<bool> {
        if mode == AddMode::IfAbsent {
            if self.record(key)?.is_some() || self.is_dead(key)? || self.memory(key)?.is_some() {
                return Ok(false);
            }
            // Neither a timer nor a dead letter to replace: the two reads
            // of `add` would find nothing again.
            self.forget(key)?;
            self.put(key, &Record::new(due, payload))?;
        } else {
            self.add(key, due, payload)?;
        }
        Ok(true)
    }

    pub(super) fn add(&mut self, key: &str, due: Millis, payload: &[u8]) -> StoreResult<()> {
        if let Some(old) = self.record(key)? {
            self.unindex(key, &old, true)?;
        }
        self.bury(key)?;
        self.forget(key)?;
        self.put(key, &Record::new(due, payload))
    }

    pub(super) fn cancel(&mut self, key: &str) -> StoreResult<bool> {
        if let Some(d) = self.bury(key)? {
            self.remember(key, EndedHow::Dead, d.failed_at)?;
            return Ok(false);
        }
        let Some(r) = self.record(key)? else {
            return Ok(false);
        };
        self.unindex(key, &r, true)?;
        self.remember(key, EndedHow::Cancelled, self.now)?;
        schedule_steps::on_cancel(self, key)?;
        Ok(r.state != TimerState::Running)
    }

    pub(super) fn reschedule(&mut self, key: &str, due: Millis) -> StoreResult<bool> {
        match self.record(key)? {
            Some(mut r) if r.state != TimerState::Running => {
                self.unindex(key, &r, false)?;
                r.due = due;
                r.first_due = due;
                r.state = TimerState::Pending;
                self.put(key, &r)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    pub(super) fn claim(&mut self, req: &ClaimRequest) -> StoreResult<ClaimBatch> {
        let now = self.now;
        let mut batch = ClaimBatch::empty(now);
        self.expire_leases(req.max_attempts, &mut batch)?;
        self.wake_ups()?;
        if self.cursor.flows.paused_all() {
            batch.next_lease = self.next_lease()?;
            return Ok(batch);
        }
        let horizon = now.saturating_add(req.window);
        let due = self.first(Space::Due, &self.cursor.due_from, req.max, horizon)?;
        let mut fence = self.fence()?;
        for (due, key) in due {
            let mut r = self.record(&key)?.ok_or_else(|| corrupt("due index"))?;
            self.unindex(&key, &r, false)?;
            fence += 1;
            r.claim_with(fence);
            r.state = TimerState::Claimed;
            r.lease_until = claim_lease_end(due, now, req.lease);
            self.put(&key, &r)?;
            batch.timers.push(Claimed {
                key,
                due,
                first_due: r.first_due,
                first_fence: r.identity_fence(),
                payload: r.payload,
                attempts: r.attempts,
                fence,
            });
        }
        if !batch.timers.is_empty() {
            self.set_fence(fence);
        }
        batch.next_due = self.next_due()?;
        batch.next_lease = self.next_lease()?;
        Ok(batch)
    }

    /// The earliest pending due time; moves the due scans' start up to its
    /// entry.
    pub(super) fn next_due(&mut self) -> StoreResult<Option<Millis>> {
        let next = self.first(Space::Due, &self.cursor.due_from, 1, u64::MAX)?;
        let next = next.first();
        self.cursor.due_from = next.map_or_else(end, |(at, key)| index_key(*at, key));
        Ok(next.map(|(at, _)| *at))
    }

    /// The earliest lease end; moves the lease scans' start up to its entry.
    fn next_lease(&mut self) -> StoreResult<Option<Millis>> {
        let next = self.first(Space::Leases, &self.cursor.lease_from, 1, u64::MAX)?;
        let next = next.first();
        self.cursor.lease_from = next.map_or_else(end, |(at, key)| index_key(*at, key));
        Ok(next.map(|(at, _)| *at))
    }

    fn expire_leases(&mut self, max_attempts: u32, batch: &mut ClaimBatch) -> StoreResult<()> {
        let expired = self.first(
            Space::Leases,
            &self.cursor.lease_from,
            MAX_EXPIRED_PER_CLAIM,
            self.now,
        )?;
        for (_, key) in expired {
            if batch.expired_keys.len() < EXPIRED_KEYS {
                batch.expired_keys.push(key.clone());
            }
            let mut r = self.record(&key)?.ok_or_else(|| corrupt("lease index"))?;
            self.run_ended(&key);
            if r.state == TimerState::Running && r.attempts >= max_attempts {
                let reason = lease_lost_reason(r.attempts);
                self.make_dead(&key, r, reason)?;
                batch.expired_dead += 1;
            } else {
                self.unindex(&key, &r, false)?;
                r.state = TimerState::Pending;
                self.put(&key, &r)?;
                batch.reclaimed += 1;
            }
        }
        Ok(())
    }

    pub(super) fn start(
        &mut self,
        key: &str,
        fence: u64,
        lease: Millis,
        advance: Option<&Advance>,
        flow: &str,
    ) -> StoreResult<Start> {
        let Some(r) = self.held(key, fence, TimerState::Claimed)? else {
            return Ok(Start::Stale);
        };
        if r.due > self.now {
            return Ok(Start::NotYet {
                now: self.now,
                due: r.due,
            });
        }
        let (slot_us, probe) = match self.flow_gate(flow)? {
            FlowGate::HoldBack => return self.hold_back(key, r, flow),
            FlowGate::Wait(until) => {
                return Ok(Start::Wait {
                    now: self.now,
                    until,
                });
            }
            FlowGate::Pass { slot_us, probe } => (slot_us, probe),
        };
        if schedule_steps::start_gate(self, key, advance)? == Gate::Refused {
            return Ok(Start::Stale);
        }
        // The rules may have written the timer's schedule, never the timer
        // (they touch it only when they refuse the start): `r` is current.
        let mut r = r;
        self.unindex(key, &r, false)?;
        r.state = TimerState::Running;
        r.attempts = r.attempts.saturating_add(1);
        r.lease_until = later(self.now, lease);
        self.put(key, &r)?;
        Ok(match self.take(key, fence, flow, slot_us, probe) {
            Some(at) => Start::Reserved {
                now: self.now,
                attempt: r.attempts,
                at,
            },
            None => Start::Started {
                now: self.now,
                attempt: r.attempts,
            },
        })
    }

    pub(super) fn renew(&mut self, key: &str, fence: u64, lease: Millis) -> StoreResult<bool> {
        match self.record(key)? {
            Some(mut r)
                if r.fence == fence
                    && matches!(r.state, TimerState::Claimed | TimerState::Running) =>
            {
                let until = r.lease_until.max(later(self.now, lease));
                self.unindex(key, &r, false)?;
                r.lease_until = until;
                self.put(key, &r)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Records the end of `key`'s run held with `fence`; with `flow`, its
    /// flow key and class, for the key's breaker.
    pub(super) fn finish(
        &mut self,
        key: &str,
        fence: u64,
        how: &Finish,
        flow: Option<(&str, FlowClass)>,
    ) -> StoreResult<bool> {
        let Some(mut r) = self.held(key, fence, TimerState::Running)? else {
            return Ok(false);
        };
        if let Some((flow, class)) = flow {
            self.flow_finished(key, fence, flow, class);
        }
        self.run_ended(key);
        match how {
            Finish::Done => {
                self.unindex(key, &r, true)?;
                self.remember(key, EndedHow::Done, self.now)?;
            }
            Finish::Retry { delay } => {
                self.unindex(key, &r, false)?;
                r.state = TimerState::Pending;
                r.due = later(self.now, *delay);
                self.put(key, &r)?;
            }
            Finish::Dead { reason } => self.make_dead(key, r, reason.clone())?,
        }
        schedule_steps::on_finish(self, key, how)?;
        Ok(true)
    }

    pub(super) fn release(&mut self, key: &str, fence: u64) -> StoreResult<bool> {
        let Some(mut r) = self.held(key, fence, TimerState::Claimed)? else {
            return Ok(false);
        };
        self.unindex(key, &r, false)?;
        r.state = TimerState::Pending;
        self.put(key, &r)?;
        Ok(true)
    }

    /// The counts of timers in each state.
    pub(super) fn counts(&mut self) -> StoreResult<Counts> {
        Ok(Counts {
            parked: self.cursor.flows.parked(),
            now: self.now,
            pending: self.cursor.pending,
            claimed: self.cursor.claimed,
            dead: self.cursor.dead,
            next_due: self.next_due()?,
        })
    }

    /// After a restart nothing is claimed or running (this process holds the
    /// store alone, so every claim belonged to a process that is gone): each
    /// becomes pending at its due time, and fences jump ahead past any that
    /// the previous process handed out in commits that were not yet durable.
    pub(super) fn recover(&mut self) -> StoreResult<u64> {
        let held = self.first(Space::Leases, &[], usize::MAX, u64::MAX)?;
        for (_, key) in &held {
            let mut r = self.record(key)?.ok_or_else(|| corrupt("lease index"))?;
            self.unindex(key, &r, false)?;
            r.state = TimerState::Pending;
            self.put(key, &r)?;
        }
        let fence = self.fence()?;
        if fence > 0 {
            self.set_fence(fence.saturating_add(1 << 32));
        }
        self.cursor.lease_from = end();
        Ok(held.len() as u64)
    }
}
