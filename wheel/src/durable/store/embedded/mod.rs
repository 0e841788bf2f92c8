//! The embedded store: one redb file, owned by one process.
//!
//! redb is a copy-on-write B-tree: the due index is an ordered range that
//! stays cheap to scan however many fired timers were deleted before it
//! (an LSM store would wade through their tombstones). One writer thread
//! commits in groups ([`writer`]); reads run on the caller's thread.
//!
//! The process holds the file exclusively (redb locks it), so a claim can
//! only belong to this process: [`Embedded::open`] turns every claimed or
//! running timer back into a pending one, which fires at once if overdue.

mod tables;
mod writer;

use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use redb::{Database, ReadTransaction, ReadableDatabase};

use self::tables::{count, first_keys, Tables, DEAD, DEAD_ORDER, DUE, LEASES, TIMERS};
use self::writer::{call, Job, Reply, Step, Writer};
use super::record::{DeadRecord, Record};
use super::{
    ClaimBatch, ClaimRequest, Counts, Due, Fenced, Finish, Millis, NewTimer, Start, Store,
    StoreClock, StoreResult, Wake,
};
use crate::durable::time::system_time_of;
use crate::durable::{DeadLetter, DurableError, TimerInfo, TimerState};
use crate::sync::lock;

/// Maps any redb error to ours: a held file, a damaged file, or I/O.
pub(super) fn db_err(e: impl Into<redb::Error>) -> DurableError {
    match e.into() {
        redb::Error::DatabaseAlreadyOpen | redb::Error::LockProtocolMismatch => {
            DurableError::Locked("another process has the file open".into())
        }
        redb::Error::Corrupted(why) => DurableError::Corrupt(why),
        redb::Error::UpgradeRequired(v) => {
            DurableError::Corrupt(format!("file format {v} needs an upgrade"))
        }
        redb::Error::Io(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            DurableError::Corrupt(e.to_string())
        }
        redb::Error::Io(e) => DurableError::Io(e.to_string()),
        redb::Error::ValueTooLarge(n) => DurableError::Store(format!("value of {n} bytes")),
        other => DurableError::Store(other.to_string()),
    }
}

/// The embedded store.
pub(crate) struct Embedded {
    db: Arc<Database>,
    clock: StoreClock,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    wakers: Arc<Mutex<Vec<Wake>>>,
}

impl Embedded {
    /// Opens (or creates) the file, checks it, and recovers claims left by
    /// an earlier process. `window` is how far ahead a newly pending timer
    /// wakes the watchers.
    pub(crate) fn open(path: &Path, clock: StoreClock, window: Millis) -> StoreResult<Embedded> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                return Err(DurableError::Io(format!(
                    "directory {} does not exist",
                    dir.display()
                )));
            }
        }
        let db = redb::Builder::new()
            .set_check_integrity_on_open(true)
            .create(path)
            .map_err(db_err)?;
        let db = Arc::new(db);
        recover(&db, clock.local_now())?;
        let (jobs, queue) = mpsc::channel();
        let wakers = Arc::new(Mutex::new(Vec::new()));
        let writer = Writer {
            db: db.clone(),
            clock: clock.clone(),
            window,
            wakers: wakers.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("wheel-durable-writer".into())
            .spawn(move || writer.run(queue))
            .map_err(|e| DurableError::Io(e.to_string()))?;
        Ok(Embedded {
            db,
            clock,
            jobs: Mutex::new(Some(jobs)),
            writer: Mutex::new(Some(thread)),
            wakers,
        })
    }

    fn call(&self, durable: bool, step: Step) -> StoreResult<Reply> {
        call(&self.jobs, durable, step)
    }

    fn bool(&self, durable: bool, step: Step) -> StoreResult<bool> {
        match self.call(durable, step)? {
            Reply::Bool(b) => Ok(b),
            other => Err(unexpected(other)),
        }
    }

    /// Runs a batch step that answers each entry with a bool.
    fn bools(
        &self,
        durable: bool,
        f: impl for<'t> FnOnce(&mut Tables<'t>) -> StoreResult<Vec<bool>> + Send + 'static,
    ) -> StoreResult<Vec<bool>> {
        match self.call(durable, Box::new(move |t| f(t).map(Reply::Bools)))? {
            Reply::Bools(b) => Ok(b),
            other => Err(unexpected(other)),
        }
    }

    fn read(&self) -> StoreResult<ReadTransaction> {
        if lock(&self.jobs).is_none() {
            return Err(DurableError::Closed);
        }
        self.db.begin_read().map_err(db_err)
    }
}

/// The keys and fences of a batch, owned for the writer thread.
fn owned(batch: &[Fenced<'_>]) -> Vec<(String, u64)> {
    batch.iter().map(|f| (f.key.to_owned(), f.fence)).collect()
}

fn unexpected(r: Reply) -> DurableError {
    DurableError::Store(format!("unexpected answer {r:?}"))
}

/// The recovery transaction at open (durable).
fn recover(db: &Database, now: Millis) -> StoreResult<u64> {
    let txn = db.begin_write().map_err(db_err)?;
    let n = Tables::open(&txn, now, 0)?.recover()?;
    txn.commit().map_err(db_err)?;
    Ok(n)
}

impl Store for Embedded {
    fn add(&self, timers: &[NewTimer<'_>]) -> StoreResult<()> {
        let owned: Vec<(String, Due, Vec<u8>)> = timers
            .iter()
            .map(|t| (t.key.to_owned(), t.due, t.payload.to_vec()))
            .collect();
        let step: Step = Box::new(move |t| {
            for (key, due, payload) in &owned {
                t.add(key, due.resolve(t.now), payload)?;
            }
            Ok(Reply::Unit)
        });
        self.call(true, step).map(|_| ())
    }

    fn cancel(&self, key: &str) -> StoreResult<bool> {
        let key = key.to_owned();
        self.bool(true, Box::new(move |t| t.cancel(&key).map(Reply::Bool)))
    }

    fn reschedule(&self, key: &str, due: Due) -> StoreResult<bool> {
        let key = key.to_owned();
        self.bool(
            true,
            Box::new(move |t| t.reschedule(&key, due.resolve(t.now)).map(Reply::Bool)),
        )
    }

    fn get(&self, key: &str) -> StoreResult<Option<TimerInfo>> {
        let txn = self.read()?;
        let timers = txn.open_table(TIMERS).map_err(db_err)?;
        if let Some(v) = timers.get(key).map_err(db_err)? {
            let r = Record::decode(v.value()).ok_or_else(|| tables::corrupt("timer"))?;
            return Ok(Some(TimerInfo {
                key: key.to_owned(),
                due: system_time_of(r.due),
                attempts: r.attempts,
                state: r.state,
                payload: r.payload,
            }));
        }
        let dead = txn.open_table(DEAD).map_err(db_err)?;
        let Some(v) = dead.get(key).map_err(db_err)? else {
            return Ok(None);
        };
        let d = DeadRecord::decode(v.value()).ok_or_else(|| tables::corrupt("dead letter"))?;
        Ok(Some(TimerInfo {
            key: key.to_owned(),
            due: system_time_of(d.due),
            attempts: d.attempts,
            state: TimerState::Dead,
            payload: d.payload,
        }))
    }

    fn claim(&self, req: &ClaimRequest) -> StoreResult<ClaimBatch> {
        let req = *req;
        match self.call(false, Box::new(move |t| t.claim(&req).map(Reply::Claim)))? {
            Reply::Claim(batch) => Ok(batch),
            other => Err(unexpected(other)),
        }
    }

    fn start(&self, claims: &[Fenced<'_>], lease: Millis) -> StoreResult<Vec<Start>> {
        let claims = owned(claims);
        let step: Step = Box::new(move |t| {
            let started: StoreResult<Vec<Start>> = claims
                .iter()
                .map(|(key, fence)| t.start(key, *fence, lease))
                .collect();
            started.map(Reply::Starts)
        });
        match self.call(false, step)? {
            Reply::Starts(s) => Ok(s),
            other => Err(unexpected(other)),
        }
    }

    fn renew(&self, held: &[Fenced<'_>], lease: Millis) -> StoreResult<Vec<bool>> {
        let held = owned(held);
        self.bools(false, move |t| {
            held.iter()
                .map(|(key, fence)| t.renew(key, *fence, lease))
                .collect()
        })
    }

    fn finish(&self, runs: &[(Fenced<'_>, Finish)]) -> StoreResult<Vec<bool>> {
        let runs: Vec<(String, u64, Finish)> = runs
            .iter()
            .map(|(r, how)| (r.key.to_owned(), r.fence, how.clone()))
            .collect();
        self.bools(true, move |t| {
            runs.iter()
                .map(|(key, fence, how)| t.finish(key, *fence, how))
                .collect()
        })
    }

    fn release(&self, claims: &[Fenced<'_>]) -> StoreResult<Vec<bool>> {
        let claims = owned(claims);
        self.bools(true, move |t| {
            claims
                .iter()
                .map(|(key, fence)| t.release(key, *fence))
                .collect()
        })
    }

    fn dead_letters(&self, limit: usize) -> StoreResult<Vec<DeadLetter>> {
        let txn = self.read()?;
        let order = txn.open_table(DEAD_ORDER).map_err(db_err)?;
        let dead = txn.open_table(DEAD).map_err(db_err)?;
        let mut out = Vec::new();
        for (failed_at, key) in first_keys(&order, limit, u64::MAX)? {
            let v = dead
                .get(key.as_str())
                .map_err(db_err)?
                .ok_or_else(|| tables::corrupt("dead order"))?;
            let d = DeadRecord::decode(v.value()).ok_or_else(|| tables::corrupt("dead letter"))?;
            out.push(DeadLetter {
                key,
                payload: d.payload,
                attempts: d.attempts,
                reason: d.reason,
                failed_at: system_time_of(failed_at),
            });
        }
        Ok(out)
    }

    fn retry_dead(&self, key: &str, due: Due) -> StoreResult<bool> {
        let key = key.to_owned();
        self.bool(
            true,
            Box::new(move |t| t.retry_dead(&key, due.resolve(t.now)).map(Reply::Bool)),
        )
    }

    fn counts(&self) -> StoreResult<Counts> {
        let txn = self.read()?;
        let due = txn.open_table(DUE).map_err(db_err)?;
        let leases = txn.open_table(LEASES).map_err(db_err)?;
        let dead = txn.open_table(DEAD).map_err(db_err)?;
        Ok(Counts {
            now: self.clock.local_now(),
            pending: count(&due)?,
            claimed: count(&leases)?,
            dead: count(&dead)?,
            next_due: first_keys(&due, 1, u64::MAX)?.first().map(|(d, _)| *d),
        })
    }

    fn watch(&self, wake: Wake) -> StoreResult<()> {
        lock(&self.wakers).push(wake);
        Ok(())
    }

    fn close(&self) -> StoreResult<()> {
        drop(lock(&self.jobs).take());
        if let Some(thread) = lock(&self.writer).take() {
            thread
                .join()
                .map_err(|_| DurableError::Store("the writer thread panicked".into()))?;
        }
        lock(&self.wakers).clear();
        Ok(())
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
