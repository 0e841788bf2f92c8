//! The embedded store's schedules: the `schedules` keyspace (id → record)
//! and the `unplanned` index (id → empty, exactly the records marked
//! unplanned), written only by the writer thread inside a group's
//! [`Tables`], through [`RunTable`]; read from snapshots on the caller's
//! thread. A record and its index entry always change in the same step.
//!
//! Node state: none: the keyspaces belong to the store.

use fjall::Readable;

use super::spaces::{Space, Spaces, corrupt};
use super::tables::Tables;
use super::writer::{Reply, Step};
use super::{Embedded, db_err, unexpected};
use crate::TimerState;
use crate::store::record::Record;
use crate::store::schedule_steps::{self, RunTable};
use crate::store::schedules::{SchedAnswer, SchedOp, SchedRecord};
use crate::store::{Millis, StoreResult};

impl RunTable for Tables<'_> {
    fn clock(&self) -> Millis {
        self.now
    }

    fn schedule(&self, id: &str) -> StoreResult<Option<SchedRecord>> {
        match self.read(Space::Schedules, id.as_bytes())? {
            None => Ok(None),
            Some(v) => SchedRecord::unpack(id, &v)
                .map(Some)
                .ok_or_else(|| corrupt("schedule")),
        }
    }

    fn put_schedule(&mut self, id: &str, r: &SchedRecord) -> StoreResult<()> {
        let k = id.as_bytes().to_vec();
        self.write(Space::Schedules, k.clone(), Some(r.pack(id)));
        // Most writes (every run's start) leave the flag as it was: a
        // delete written for each would leave a tombstone per run.
        if self.read(Space::Unplanned, &k)?.is_some() != r.unplanned {
            self.write(Space::Unplanned, k, r.unplanned.then(Vec::new));
        }
        Ok(())
    }

    fn drop_schedule(&mut self, id: &str) -> StoreResult<()> {
        let k = id.as_bytes().to_vec();
        self.write(Space::Schedules, k.clone(), None);
        if self.read(Space::Unplanned, &k)?.is_some() {
            self.write(Space::Unplanned, k, None);
        }
        Ok(())
    }

    fn run_state(&self, key: &str) -> StoreResult<Option<(TimerState, Millis, Millis)>> {
        Ok(self.record(key)?.map(|r| (r.state, r.due, r.lease_until)))
    }

    fn add_run(&mut self, key: &str, due: Millis, payload: &[u8]) -> StoreResult<bool> {
        if self.record(key)?.is_some() || self.is_dead(key)? {
            return Ok(false);
        }
        self.put(key, &Record::new(due, payload))?;
        Ok(true)
    }

    fn remove_run(&mut self, key: &str) -> StoreResult<()> {
        if let Some(r) = self.record(key)? {
            self.unindex(key, &r, true)?;
        }
        Ok(())
    }

    fn set_due(&mut self, key: &str, due: Millis) -> StoreResult<()> {
        if let Some(mut r) = self.record(key)? {
            self.unindex(key, &r, false)?;
            r.state = TimerState::Pending;
            r.due = due;
            self.put(key, &r)?;
        }
        Ok(())
    }
}

impl Embedded {
    pub(super) fn read_schedules(
        &self,
        ids: &[&str],
    ) -> StoreResult<(Millis, Vec<Option<SchedRecord>>)> {
        let (snap, spaces) = self.read()?;
        let now = self.clock.local_now();
        let found = read(&snap, &spaces, ids).map_err(|e| e.in_store(&self.path))?;
        Ok((now, found))
    }

    pub(super) fn write_schedule(&self, id: &str, op: &SchedOp) -> StoreResult<SchedAnswer> {
        let (id, op) = (id.to_owned(), op.clone());
        let step: Step = Box::new(move |t| schedule_steps::write(t, &id, &op).map(Reply::Schedule));
        match self.call(true, step)? {
            Reply::Schedule(a) => Ok(a),
            other => Err(unexpected(other)),
        }
    }

    pub(super) fn list_schedule_records(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, SchedRecord)>> {
        let (snap, spaces) = self.read()?;
        list(&snap, &spaces, after, limit).map_err(|e| e.in_store(&self.path))
    }

    pub(super) fn unplanned_ids(&self, limit: usize) -> StoreResult<Vec<String>> {
        let (snap, spaces) = self.read()?;
        unplanned(&snap, &spaces, limit).map_err(|e| e.in_store(&self.path))
    }
}

/// The records of `ids`, from a snapshot.
fn read(
    snap: &fjall::Snapshot,
    spaces: &Spaces,
    ids: &[&str],
) -> StoreResult<Vec<Option<SchedRecord>>> {
    let space = spaces.get(Space::Schedules);
    ids.iter()
        .map(|id| match snap.get(space, id.as_bytes()).map_err(db_err)? {
            None => Ok(None),
            Some(v) => SchedRecord::unpack(id, &v)
                .map(Some)
                .ok_or_else(|| corrupt("schedule")),
        })
        .collect()
}

/// Up to `limit` records in id order, strictly after `after`.
fn list(
    snap: &fjall::Snapshot,
    spaces: &Spaces,
    after: Option<&str>,
    limit: usize,
) -> StoreResult<Vec<(String, SchedRecord)>> {
    let space = spaces.get(Space::Schedules);
    let from: Vec<u8> = after.map(|a| a.as_bytes().to_vec()).unwrap_or_default();
    let mut out = Vec::new();
    for entry in snap.range(space, from.clone()..) {
        if out.len() >= limit {
            break;
        }
        let (k, v) = entry.into_inner().map_err(db_err)?;
        if after.is_some() && *k == *from {
            continue;
        }
        let id = String::from_utf8(k.to_vec()).map_err(|_| corrupt("schedule id"))?;
        let r = SchedRecord::unpack(&id, &v).ok_or_else(|| corrupt("schedule"))?;
        out.push((id, r));
    }
    Ok(out)
}

/// Up to `limit` ids of the unplanned index.
fn unplanned(snap: &fjall::Snapshot, spaces: &Spaces, limit: usize) -> StoreResult<Vec<String>> {
    let mut out = Vec::new();
    for entry in snap.iter(spaces.get(Space::Unplanned)).take(limit) {
        let k = entry.key().map_err(db_err)?;
        out.push(String::from_utf8(k.to_vec()).map_err(|_| corrupt("schedule id"))?);
    }
    Ok(out)
}
