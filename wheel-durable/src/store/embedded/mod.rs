//! The embedded store: one fjall database (a directory), owned by one
//! process.
//!
//! fjall is a log-structured merge tree: every write batch is appended to a
//! journal, and `persist(SyncData)` makes everything appended before it
//! durable with one `fdatasync`, so one writer thread ([`writer`]) commits
//! the steps of many callers in one group and one fsync. Deletes leave
//! tombstones until compaction; the index keys start with their time, so
//! the tombstones of fired timers gather at the head of the due index, and
//! the claim scan starts after them ([`cursor::Cursor`]). Reads run on the
//! caller's thread, each from one snapshot ([`read`]).
//!
//! The process holds the directory exclusively (fjall locks it against
//! other processes, [`dir`] against a second open in this one, and refuses
//! a path that is not a store of ours), so a claim can only belong to this
//! process: [`Embedded::open`] turns every
//! claimed or running timer back into a pending one, which fires at once
//! if overdue; parked timers stay parked, the paused namespace and keys
//! stay paused and limits stay set, while the rate, permits and breakers
//! start fresh ([`flows`] and [`gates`] keep flow control; [`spaces`]
//! names the keyspaces).
//!
//! Node state: none: the store is below the node and is called through the
//! store trait. It owns the fjall database and the writer thread's queue.

mod cursor;
mod dead;
mod dir;
mod ended;
#[cfg(test)]
mod flow_tests;
mod flows;
mod gates;
mod read;
mod schedules;
mod spaces;
mod tables;
#[cfg(any(test, fuzzing))]
mod wipe;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use fjall::{Database, PersistMode};

use self::cursor::Cursor;
use self::read::first_keys;
use self::spaces::{Space, Spaces};
use self::tables::Tables;
use self::writer::{Job, Reply, Step, Writer, call};
use super::flow_state::{FlowClass, FlowOutcome, Limits};
use super::record::DeadRecord;
use super::schedules::{SchedAnswer, SchedOp, SchedRecord};
use super::{
    ClaimBatch, ClaimRequest, Counts, Due, Fenced, Finish, FlowsState, Listed, Memory, Millis,
    NewTimer, Start, Store, StoreClock, StoreResult, Wake,
};
use crate::schedule::chain::Advance;
use crate::sync::lock;
use crate::time::system_time_of;
use crate::{AddMode, DeadLetter, DurableError, ErrorDetail, Listing, TimerInfo};

/// Maps any fjall error to ours: a held directory, a damaged store, or
/// I/O, keeping fjall's error (or the `std::io::Error` inside it) as the
/// source. The store adds its path ([`DurableError::in_store`]).
pub(super) fn db_err(e: fjall::Error) -> DurableError {
    use fjall::Error as E;
    let detail = |message: &str| ErrorDetail::new(message);
    match e {
        E::Locked => DurableError::Locked(
            detail("another process has the store open").with_source(E::Locked),
        ),
        E::Io(e) | E::Storage(fjall::LsmError::Io(e)) => io_err(e),
        E::Poisoned => DurableError::Io(
            detail("an earlier write failed; reopen the store to recover what was written")
                .with_source(E::Poisoned),
        ),
        E::KeyspaceDeleted => {
            DurableError::Store(detail("a keyspace was deleted").with_source(E::KeyspaceDeleted))
        }
        other => DurableError::Corrupt(detail("fjall cannot read it").with_source(other)),
    }
}

fn io_err(e: std::io::Error) -> DurableError {
    match e.kind() {
        std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => {
            DurableError::Corrupt(e.into())
        }
        _ => DurableError::Io(e.into()),
    }
}

/// The journals' size at most: beyond it the memtables that hold the
/// oldest journal's batches are written out and that journal deleted,
/// which bounds what an open replays (fjall's minimum; its default is
/// 512 MiB).
const MAX_JOURNAL: u64 = 64 << 20;

/// The embedded store.
pub(crate) struct Embedded {
    /// The directory, as the caller named it, for error messages.
    path: PathBuf,
    /// This process's claim on the directory, dropped after the database.
    registered: Mutex<Option<dir::Registered>>,
    /// The database and its keyspaces, until `close`.
    open: Mutex<Option<(Database, Arc<Spaces>)>>,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    writer: Mutex<Option<JoinHandle<Writer>>>,
    /// The writer, when it runs each call on the caller's thread instead
    /// of its own (`Embedded::run_inline`, for the fuzz harness).
    #[cfg(any(test, fuzzing))]
    inline: Mutex<Option<Writer>>,
    wakers: Arc<Mutex<Vec<Wake>>>,
    /// Set by the writer when a write failed (see `reachable`).
    broken: Arc<AtomicBool>,
    /// The store's clock, for reads that answer it.
    clock: StoreClock,
    /// The dedup window, shared with the writer.
    dedup: Arc<AtomicU64>,
}

impl Embedded {
    /// Opens (or creates) the store's directory, and recovers claims left
    /// by an earlier process. `window` is how far ahead a newly pending
    /// timer wakes the watchers.
    pub(crate) fn open(path: &Path, clock: StoreClock, window: Millis) -> StoreResult<Embedded> {
        let registered = dir::claim(path)?;
        let in_store = |e: DurableError| e.in_store(path);
        let db = Database::builder(path)
            .manual_journal_persist(true)
            .max_journaling_size(MAX_JOURNAL)
            .open()
            .map_err(|e| in_store(db_err(e)))?;
        check_ours(&db, path)?;
        let spaces = Arc::new(Spaces::open(&db).map_err(in_store)?);
        let cursor = recover(&db, &spaces, clock.local_now()).map_err(in_store)?;
        let (jobs, queue) = mpsc::channel();
        let wakers = Arc::new(Mutex::new(Vec::new()));
        let broken = Arc::new(AtomicBool::new(false));
        let dedup = Arc::new(AtomicU64::new(0));
        let writer = Writer {
            dedup: dedup.clone(),
            db: db.clone(),
            spaces: spaces.clone(),
            cursor,
            clock: clock.clone(),
            window,
            wakers: wakers.clone(),
            broken: broken.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("wheel-durable-writer".into())
            .spawn(move || writer.run(queue))
            .map_err(|e| {
                DurableError::Io(ErrorDetail::new("cannot start the writer").with_source(e))
            })?;
        Ok(Embedded {
            path: path.to_path_buf(),
            registered: Mutex::new(Some(registered)),
            open: Mutex::new(Some((db, spaces))),
            jobs: Mutex::new(Some(jobs)),
            writer: Mutex::new(Some(thread)),
            #[cfg(any(test, fuzzing))]
            inline: Mutex::new(None),
            wakers,
            broken,
            clock,
            dedup,
        })
    }

    fn call(&self, durable: bool, step: Step) -> StoreResult<Reply> {
        #[cfg(any(test, fuzzing))]
        if let Some(writer) = lock(&self.inline).as_mut() {
            return writer
                .run_one(durable, step)
                .map_err(|e| e.in_store(&self.path));
        }
        call(&self.jobs, durable, step).map_err(|e| e.in_store(&self.path))
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

    /// A consistent view for reads on the caller's thread.
    fn read(&self) -> StoreResult<(fjall::Snapshot, Arc<Spaces>)> {
        match lock(&self.open).as_ref() {
            Some((db, spaces)) => Ok((db.snapshot(), spaces.clone())),
            None => Err(DurableError::Closed),
        }
    }
}

impl Embedded {
    /// One timer, from a snapshot (the store's `get`).
    fn read_timer(&self, key: &str) -> StoreResult<Option<TimerInfo>> {
        let (snap, spaces) = self.read()?;
        read::info(&snap, &spaces, key, false)
    }

    /// The oldest dead letters, from a snapshot (the store's `dead_letters`).
    fn read_dead_letters(&self, limit: usize) -> StoreResult<Vec<DeadLetter>> {
        use fjall::Readable;
        let (snap, spaces) = self.read()?;
        let order = spaces.get(Space::DeadOrder);
        let dead = spaces.get(Space::Dead);
        let mut out = Vec::new();
        for (failed_at, key) in first_keys(&snap, order, limit)? {
            let v = snap
                .get(dead, key.as_str())
                .map_err(db_err)?
                .ok_or_else(|| spaces::corrupt("dead order"))?;
            let d = DeadRecord::decode(&v).ok_or_else(|| spaces::corrupt("dead letter"))?;
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
}

/// The keys and fences of a batch, owned for the writer thread.
fn owned(batch: &[Fenced<'_>]) -> Vec<(String, u64)> {
    batch.iter().map(|f| (f.key.to_owned(), f.fence)).collect()
}

fn unexpected(r: Reply) -> DurableError {
    DurableError::Store(format!("unexpected answer {r:?}").into())
}

/// Refuses a fjall database that holds keyspaces but not ours: another
/// program's database, which opening would write our keyspaces into.
fn check_ours(db: &Database, path: &Path) -> StoreResult<()> {
    if db.list_keyspace_names().is_empty() || db.keyspace_exists(spaces::NAMES[0]) {
        return Ok(());
    }
    let detail = ErrorDetail::new(format!(
        "{} is not a wheel store: a fjall database without a `{}` keyspace",
        path.display(),
        spaces::NAMES[0]
    ));
    Err(DurableError::Corrupt(detail.with_path(path)))
}

/// The recovery at open (durable): what the writer starts from.
fn recover(db: &Database, spaces: &Spaces, now: Millis) -> StoreResult<Cursor> {
    let mut tables = Tables::new(spaces, Cursor::scan(db, spaces, now)?, now, 0);
    tables.recover()?;
    let cursor = tables.cursor.clone();
    tables.into_batch(db).commit().map_err(db_err)?;
    db.persist(PersistMode::SyncData).map_err(db_err)?;
    Ok(cursor)
}

impl Store for Embedded {
    fn add(&self, timers: &[NewTimer<'_>], mode: AddMode) -> StoreResult<Vec<bool>> {
        let owned: Vec<(String, Due, Vec<u8>)> = timers
            .iter()
            .map(|t| (t.key.to_owned(), t.due, t.payload.to_vec()))
            .collect();
        self.bools(true, move |t| {
            owned
                .iter()
                .map(|(key, due, payload)| t.add_as(key, due.resolve(t.now), payload, mode))
                .collect()
        })
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
        self.read_timer(key).map_err(|e| e.in_store(&self.path))
    }

    fn ended(&self, key: &str) -> StoreResult<Option<Memory>> {
        let (snap, spaces) = self.read()?;
        ended::read(&snap, &spaces, key, self.clock.local_now()).map_err(|e| e.in_store(&self.path))
    }

    fn set_dedup_window(&self, window: Millis) {
        self.dedup.store(window, Ordering::Relaxed);
    }

    fn claim(&self, req: &ClaimRequest) -> StoreResult<ClaimBatch> {
        let req = *req;
        match self.call(false, Box::new(move |t| t.claim(&req).map(Reply::Claim)))? {
            Reply::Claim(batch) => Ok(batch),
            other => Err(unexpected(other)),
        }
    }

    fn set_paused(&self, flow: Option<&str>, paused: bool) -> StoreResult<bool> {
        let flow = flow.map(str::to_owned);
        self.bool(
            true,
            Box::new(move |t| t.set_paused(flow.as_deref(), paused).map(Reply::Bool)),
        )
    }

    fn flows(&self) -> StoreResult<FlowsState> {
        match self.call(false, Box::new(|t| t.flows_state().map(Reply::Flows)))? {
            Reply::Flows(f) => Ok(f),
            other => Err(unexpected(other)),
        }
    }

    fn start_runs(
        &self,
        claims: &[Fenced<'_>],
        advances: &[Option<Advance>],
        flows: &[&str],
        lease: Millis,
    ) -> StoreResult<Vec<Start>> {
        let claims = owned(claims);
        let advances = advances.to_vec();
        let flows: Vec<String> = flows.iter().map(|f| (*f).to_owned()).collect();
        let step: Step = Box::new(move |t| {
            let started: StoreResult<Vec<Start>> = claims
                .iter()
                .enumerate()
                .map(|(i, (key, fence))| {
                    let advance = advances.get(i).and_then(Option::as_ref);
                    let flow = flows.get(i).map_or("", String::as_str);
                    t.start(key, *fence, lease, advance, flow)
                })
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

    /// Not made durable at once: a defer lost in a crash leaves its claim
    /// claimed, and the reopened store makes it pending again.
    fn defer(&self, claims: &[Fenced<'_>], flows: &[&str]) -> StoreResult<Vec<bool>> {
        let claims = owned(claims);
        let flows: Vec<String> = flows.iter().map(|f| (*f).to_owned()).collect();
        self.bools(false, move |t| t.defer(&claims, &flows))
    }

    fn set_limits(&self, flow: Option<&str>, limits: Option<&Limits>) -> StoreResult<()> {
        let flow = flow.map(str::to_owned);
        let limits = limits.copied();
        match self.call(
            true,
            Box::new(move |t| {
                t.set_limits(flow.as_deref(), limits)
                    .map(|()| Reply::Bool(true))
            }),
        )? {
            Reply::Bool(_) => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    fn finish(
        &self,
        runs: &[(Fenced<'_>, Finish)],
        flows: &[FlowOutcome<'_>],
    ) -> StoreResult<Vec<bool>> {
        let runs: Vec<(String, u64, Finish)> = runs
            .iter()
            .map(|(r, how)| (r.key.to_owned(), r.fence, how.clone()))
            .collect();
        let flows: Vec<(String, FlowClass)> =
            flows.iter().map(|f| (f.flow.to_owned(), f.class)).collect();
        self.bools(true, move |t| {
            runs.iter()
                .enumerate()
                .map(|(i, (key, fence, how))| {
                    let flow = flows.get(i).map(|(f, c)| (f.as_str(), *c));
                    t.finish(key, *fence, how, flow)
                })
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
        self.read_dead_letters(limit)
            .map_err(|e| e.in_store(&self.path))
    }

    fn retry_dead(&self, key: &str, due: Due) -> StoreResult<bool> {
        let key = key.to_owned();
        self.bool(
            true,
            Box::new(move |t| t.retry_dead(&key, due.resolve(t.now)).map(Reply::Bool)),
        )
    }

    fn list(
        &self,
        which: Listing,
        after: Option<(Millis, &str)>,
        limit: usize,
    ) -> StoreResult<Vec<Listed>> {
        let (snap, spaces) = self.read()?;
        read::list(&snap, &spaces, which, after, limit).map_err(|e| e.in_store(&self.path))
    }

    fn counts(&self) -> StoreResult<Counts> {
        match self.call(false, Box::new(|t| t.counts().map(Reply::Counts)))? {
            Reply::Counts(c) => Ok(c),
            other => Err(unexpected(other)),
        }
    }

    fn schedules(&self, ids: &[&str]) -> StoreResult<(Millis, Vec<Option<SchedRecord>>)> {
        self.read_schedules(ids)
    }

    fn schedule_write(&self, id: &str, op: &SchedOp) -> StoreResult<SchedAnswer> {
        self.write_schedule(id, op)
    }

    fn list_schedules(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, SchedRecord)>> {
        self.list_schedule_records(after, limit)
    }

    fn unplanned(&self, limit: usize) -> StoreResult<Vec<String>> {
        self.unplanned_ids(limit)
    }

    fn watch(&self, wake: Wake) -> StoreResult<()> {
        lock(&self.wakers).push(wake);
        Ok(())
    }

    /// False once a write failed (a full disk): fjall refuses every later
    /// write until the store is opened again, which recovers everything
    /// acknowledged.
    fn reachable(&self) -> bool {
        !self.broken.load(Ordering::SeqCst)
    }

    fn close(&self) -> StoreResult<()> {
        drop(lock(&self.jobs).take());
        if let Some(thread) = lock(&self.writer).take() {
            thread
                .join()
                .map_err(|_| DurableError::Store("the writer thread panicked".into()))?;
        }
        #[cfg(any(test, fuzzing))]
        if let Some(writer) = lock(&self.inline).take() {
            // What the writer thread does when its queue closes.
            writer.flush()?;
        }
        lock(&self.wakers).clear();
        drop(lock(&self.open).take());
        // Only now may this process open the directory again.
        drop(lock(&self.registered).take());
        Ok(())
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
mod tests;
