//! The embedded store's tables and the state machine's steps on them, each
//! run inside the writer's current write transaction.
//!
//! Tables: `timers` (key → [`Record`]), `due` ((due, key) → ()) for pending
//! timers, `leases` ((lease_until, key) → ()) for claimed and running ones,
//! `dead` (key → [`DeadRecord`]), `dead_order` ((failed_at, key) → ()), and
//! `meta` (name → u64: the fence counter). A timer's record and its one
//! index entry always change in the same step.

use redb::{ReadableTable, ReadableTableMetadata, Table, TableDefinition, WriteTransaction};

use super::db_err;
use crate::durable::store::record::{DeadRecord, Record};
use crate::durable::store::{
    claim_lease_end, later, lease_lost_reason, ClaimBatch, ClaimRequest, Claimed, Finish, Millis,
    Start, StoreResult,
};
use crate::durable::{DurableError, TimerState};

pub(super) const TIMERS: TableDefinition<&str, &[u8]> = TableDefinition::new("timers");
pub(super) const DUE: TableDefinition<(u64, &str), ()> = TableDefinition::new("due");
pub(super) const LEASES: TableDefinition<(u64, &str), ()> = TableDefinition::new("leases");
pub(super) const DEAD: TableDefinition<&str, &[u8]> = TableDefinition::new("dead");
pub(super) const DEAD_ORDER: TableDefinition<(u64, &str), ()> = TableDefinition::new("dead_order");
pub(super) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// The name of the fence counter in `meta`.
pub(super) const FENCE: &str = "fence";

/// Expired leases handled by one claim at most (the rest wait for the next).
const MAX_EXPIRED_PER_CLAIM: usize = 10_000;

pub(super) fn corrupt(what: &str) -> DurableError {
    DurableError::Corrupt(format!("a {what} record does not parse"))
}

/// The tables of one write transaction, with the batch's clock reading.
pub(super) struct Tables<'t> {
    timers: Table<'t, &'static str, &'static [u8]>,
    due: Table<'t, (u64, &'static str), ()>,
    leases: Table<'t, (u64, &'static str), ()>,
    dead: Table<'t, &'static str, &'static [u8]>,
    dead_order: Table<'t, (u64, &'static str), ()>,
    meta: Table<'t, &'static str, u64>,
    /// The store's clock for every step of this batch.
    pub(super) now: Millis,
    /// The earliest due time that became pending at or before `wake_before`.
    pub(super) wake: Option<Millis>,
    wake_before: Millis,
}

impl<'t> Tables<'t> {
    pub(super) fn open(
        txn: &'t WriteTransaction,
        now: Millis,
        window: Millis,
    ) -> StoreResult<Self> {
        Ok(Tables {
            timers: txn.open_table(TIMERS).map_err(db_err)?,
            due: txn.open_table(DUE).map_err(db_err)?,
            leases: txn.open_table(LEASES).map_err(db_err)?,
            dead: txn.open_table(DEAD).map_err(db_err)?,
            dead_order: txn.open_table(DEAD_ORDER).map_err(db_err)?,
            meta: txn.open_table(META).map_err(db_err)?,
            now,
            wake: None,
            wake_before: now.saturating_add(window),
        })
    }

    fn record(&self, key: &str) -> StoreResult<Option<Record>> {
        match self.timers.get(key).map_err(db_err)? {
            None => Ok(None),
            Some(v) => Record::decode(v.value())
                .map(Some)
                .ok_or_else(|| corrupt("timer")),
        }
    }

    /// Writes `r` and its index entry (the old entry must be gone already).
    fn put(&mut self, key: &str, r: &Record) -> StoreResult<()> {
        self.timers
            .insert(key, r.encode().as_slice())
            .map_err(db_err)?;
        match r.state {
            TimerState::Pending => {
                self.due.insert((r.due, key), ()).map_err(db_err)?;
                if r.due <= self.wake_before {
                    self.wake = Some(self.wake.map_or(r.due, |w| w.min(r.due)));
                }
            }
            _ => {
                self.leases
                    .insert((r.lease_until, key), ())
                    .map_err(db_err)?;
            }
        }
        Ok(())
    }

    /// Removes `r`'s index entry and, with `forget`, the record itself.
    fn unindex(&mut self, key: &str, r: &Record, forget: bool) -> StoreResult<()> {
        match r.state {
            TimerState::Pending => self.due.remove((r.due, key)).map_err(db_err)?,
            _ => self.leases.remove((r.lease_until, key)).map_err(db_err)?,
        };
        if forget {
            self.timers.remove(key).map_err(db_err)?;
        }
        Ok(())
    }

    /// Removes a dead letter; true if there was one.
    fn bury(&mut self, key: &str) -> StoreResult<Option<DeadRecord>> {
        let Some(d) = self.dead.remove(key).map_err(db_err)? else {
            return Ok(None);
        };
        let d = DeadRecord::decode(d.value()).ok_or_else(|| corrupt("dead letter"))?;
        self.dead_order.remove((d.failed_at, key)).map_err(db_err)?;
        Ok(Some(d))
    }

    /// The record held by `fence` in `state`, if it still is.
    fn held(&self, key: &str, fence: u64, state: TimerState) -> StoreResult<Option<Record>> {
        Ok(self
            .record(key)?
            .filter(|r| r.fence == fence && r.state == state))
    }

    pub(super) fn add(&mut self, key: &str, due: Millis, payload: &[u8]) -> StoreResult<()> {
        if let Some(old) = self.record(key)? {
            self.unindex(key, &old, true)?;
        }
        self.bury(key)?;
        let r = Record {
            due,
            lease_until: 0,
            fence: 0,
            attempts: 0,
            state: TimerState::Pending,
            payload: payload.to_vec(),
        };
        self.put(key, &r)
    }

    pub(super) fn cancel(&mut self, key: &str) -> StoreResult<bool> {
        if self.bury(key)?.is_some() {
            return Ok(false);
        }
        let Some(r) = self.record(key)? else {
            return Ok(false);
        };
        self.unindex(key, &r, true)?;
        Ok(r.state != TimerState::Running)
    }

    pub(super) fn reschedule(&mut self, key: &str, due: Millis) -> StoreResult<bool> {
        match self.record(key)? {
            Some(mut r) if r.state != TimerState::Running => {
                self.unindex(key, &r, false)?;
                r.due = due;
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
        let horizon = now.saturating_add(req.window);
        let due = first_keys(&self.due, req.max, horizon)?;
        for (due, key) in due {
            let mut r = self.record(&key)?.ok_or_else(|| corrupt("due index"))?;
            self.unindex(&key, &r, false)?;
            let fence = self
                .meta
                .get(FENCE)
                .map_err(db_err)?
                .map_or(0, |v| v.value())
                + 1;
            self.meta.insert(FENCE, fence).map_err(db_err)?;
            r.fence = fence;
            r.state = TimerState::Claimed;
            r.lease_until = claim_lease_end(due, now, req.lease);
            self.put(&key, &r)?;
            batch.timers.push(Claimed {
                key,
                due,
                payload: r.payload,
                attempts: r.attempts,
                fence,
            });
        }
        batch.next_due = first_keys(&self.due, 1, u64::MAX)?.first().map(|(d, _)| *d);
        batch.next_lease = first_keys(&self.leases, 1, u64::MAX)?
            .first()
            .map(|(d, _)| *d);
        Ok(batch)
    }

    fn expire_leases(&mut self, max_attempts: u32, batch: &mut ClaimBatch) -> StoreResult<()> {
        let expired = first_keys(&self.leases, MAX_EXPIRED_PER_CLAIM, self.now)?;
        for (_, key) in expired {
            let mut r = self.record(&key)?.ok_or_else(|| corrupt("lease index"))?;
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

    fn make_dead(&mut self, key: &str, r: Record, reason: String) -> StoreResult<()> {
        self.unindex(key, &r, true)?;
        let d = DeadRecord {
            failed_at: self.now,
            due: r.due,
            attempts: r.attempts,
            reason,
            payload: r.payload,
        };
        self.dead
            .insert(key, d.encode().as_slice())
            .map_err(db_err)?;
        self.dead_order
            .insert((d.failed_at, key), ())
            .map_err(db_err)?;
        Ok(())
    }

    pub(super) fn start(&mut self, key: &str, fence: u64, lease: Millis) -> StoreResult<Start> {
        let Some(mut r) = self.held(key, fence, TimerState::Claimed)? else {
            return Ok(Start::Stale);
        };
        if r.due > self.now {
            return Ok(Start::NotYet {
                now: self.now,
                due: r.due,
            });
        }
        self.unindex(key, &r, false)?;
        r.state = TimerState::Running;
        r.attempts = r.attempts.saturating_add(1);
        r.lease_until = later(self.now, lease);
        self.put(key, &r)?;
        Ok(Start::Started {
            now: self.now,
            attempt: r.attempts,
        })
    }

    pub(super) fn renew(&mut self, key: &str, fence: u64, lease: Millis) -> StoreResult<bool> {
        match self.record(key)? {
            Some(mut r) if r.fence == fence && r.state != TimerState::Pending => {
                let until = r.lease_until.max(later(self.now, lease));
                self.unindex(key, &r, false)?;
                r.lease_until = until;
                self.put(key, &r)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    pub(super) fn finish(&mut self, key: &str, fence: u64, how: &Finish) -> StoreResult<bool> {
        let Some(mut r) = self.held(key, fence, TimerState::Running)? else {
            return Ok(false);
        };
        match how {
            Finish::Done => self.unindex(key, &r, true)?,
            Finish::Retry { delay } => {
                self.unindex(key, &r, false)?;
                r.state = TimerState::Pending;
                r.due = later(self.now, *delay);
                self.put(key, &r)?;
            }
            Finish::Dead { reason } => self.make_dead(key, r, reason.clone())?,
        }
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

    pub(super) fn retry_dead(&mut self, key: &str, due: Millis) -> StoreResult<bool> {
        let Some(d) = self.bury(key)? else {
            return Ok(false);
        };
        self.add(key, due, &d.payload)?;
        Ok(true)
    }

    /// After a restart nothing is claimed or running (this process holds the
    /// file alone, so every claim belonged to a process that is gone): each
    /// becomes pending at its due time, and fences jump ahead past any that
    /// the previous process handed out in commits that were not yet durable.
    pub(super) fn recover(&mut self) -> StoreResult<u64> {
        let held = first_keys(&self.leases, usize::MAX, u64::MAX)?;
        for (_, key) in &held {
            let mut r = self.record(key)?.ok_or_else(|| corrupt("lease index"))?;
            self.unindex(key, &r, false)?;
            r.state = TimerState::Pending;
            self.put(key, &r)?;
        }
        let fence = self
            .meta
            .get(FENCE)
            .map_err(db_err)?
            .map_or(0, |v| v.value());
        if fence > 0 {
            self.meta
                .insert(FENCE, fence.saturating_add(1 << 32))
                .map_err(db_err)?;
        }
        Ok(held.len() as u64)
    }
}

/// Up to `max` keys of an index, in order, with their time at most `until`.
pub(super) fn first_keys(
    index: &impl ReadableTable<(u64, &'static str), ()>,
    max: usize,
    until: Millis,
) -> StoreResult<Vec<(Millis, String)>> {
    let mut out = Vec::new();
    for entry in index.iter().map_err(db_err)? {
        if out.len() >= max {
            break;
        }
        let (k, _) = entry.map_err(db_err)?;
        let (at, key) = k.value();
        if at > until {
            break;
        }
        out.push((at, key.to_owned()));
    }
    Ok(out)
}

/// The number of entries of a table.
pub(super) fn count(t: &impl ReadableTableMetadata) -> StoreResult<u64> {
    t.len().map_err(db_err)
}
