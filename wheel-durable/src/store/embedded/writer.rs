//! The embedded store's one writer thread, which commits callers' changes
//! in groups.
//!
//! Callers hand their step to the writer and wait for its answer. The
//! writer takes every step that is waiting and runs them in order over one
//! [`Tables`], so that each step sees the writes of the steps before it;
//! then it commits the group's writes as one atomic write batch into the
//! journal and the memtables, and, if the group holds a change callers were
//! promised as durable (`add`, `cancel`, `reschedule`, `release`,
//! `retry_dead`, `finish`, a schedule's change, a pause or resume, a
//! change of limits), makes the journal durable with one
//! `fdatasync` before answering: concurrent callers share one fsync. A
//! group of claims, starts, renewals and deferrals alone is answered
//! without an fsync, and is made durable by the next durable group or,
//! when none comes, by a flush after [`FLUSH_AFTER`]. Losing such a group
//! in a crash is harmless: claims revert to pending on restart anyway.
//!
//! Only the writer writes; readers read the keyspaces from their own
//! threads and see every committed group, durable or not.
//!
//! Node state: none: it owns the store's write queue and its one writer
//! thread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fjall::{Database, PersistMode};

use super::cursor::Cursor;
use super::db_err;
use super::spaces::Spaces;
use super::tables::Tables;
use crate::DurableError;
use crate::store::schedules::SchedAnswer;
use crate::store::{ClaimBatch, Counts, FlowsState, Millis, Start, StoreClock, StoreResult, Wake};
use crate::sync::lock;

/// How long a non-durable commit may stay the last one.
const FLUSH_AFTER: Duration = Duration::from_millis(100);

/// Steps taken into one group at most.
const MAX_BATCH: usize = 4_096;

/// A step's answer.
#[derive(Debug)]
pub(super) enum Reply {
    Bool(bool),
    Bools(Vec<bool>),
    Starts(Vec<Start>),
    Claim(ClaimBatch),
    Counts(Counts),
    Flows(FlowsState),
    Schedule(SchedAnswer),
}

/// One step: runs on the writer thread over the group's tables.
pub(super) type Step = Box<dyn for<'t> FnOnce(&mut Tables<'t>) -> StoreResult<Reply> + Send>;

pub(super) struct Job {
    pub(super) step: Step,
    pub(super) durable: bool,
    pub(super) reply: SyncSender<StoreResult<Reply>>,
}

/// The answers of a group, each with the caller waiting for it.
type Answers = Vec<(SyncSender<StoreResult<Reply>>, StoreResult<Reply>)>;

/// What the writer needs besides its queue.
pub(super) struct Writer {
    pub(super) db: Database,
    pub(super) spaces: Arc<Spaces>,
    pub(super) cursor: Cursor,
    pub(super) clock: StoreClock,
    pub(super) window: Millis,
    /// The dedup window, set by the store (`set_dedup_window`).
    pub(super) dedup: Arc<AtomicU64>,
    pub(super) wakers: Arc<Mutex<Vec<Wake>>>,
    /// Set when a write or an fsync failed: fjall then refuses every later
    /// write until the store is opened again.
    pub(super) broken: Arc<AtomicBool>,
}

impl Writer {
    /// Runs until every sender is gone, then makes the last commit
    /// durable; hands itself back (`Embedded::run_inline`).
    pub(super) fn run(mut self, jobs: Receiver<Job>) -> Writer {
        let mut dirty = false;
        loop {
            let first = if dirty {
                jobs.recv_timeout(FLUSH_AFTER)
            } else {
                jobs.recv().map_err(|_| RecvTimeoutError::Disconnected)
            };
            let batch = match first {
                Ok(job) => gather(job, &jobs),
                Err(RecvTimeoutError::Timeout) => {
                    dirty = self.flush().is_err();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let durable = batch.iter().any(|j| j.durable);
            if let Some(wrote) = self.commit(batch, durable) {
                dirty = if durable { false } else { dirty || wrote };
            }
        }
        if dirty {
            let _ = self.flush();
        }
        self
    }

    /// Runs one step as a group of its own on the caller's thread: what
    /// the writer thread does with a step that finds no other waiting.
    #[cfg(any(test, fuzzing))]
    pub(super) fn run_one(&mut self, durable: bool, step: Step) -> StoreResult<Reply> {
        // Room for the one answer, so that the commit never waits.
        let (reply, answer) = mpsc::sync_channel(1);
        let job = Job {
            step,
            durable,
            reply,
        };
        self.commit(vec![job], durable);
        answer.recv().map_err(|_| DurableError::Closed)?
    }

    /// Makes every commit so far durable.
    pub(super) fn flush(&self) -> StoreResult<()> {
        self.db
            .persist(PersistMode::SyncData)
            .map_err(|e| self.broke(e))
    }

    /// Marks the store unable to write, and the error for its callers.
    fn broke(&self, e: fjall::Error) -> DurableError {
        self.broken.store(true, Ordering::SeqCst);
        db_err(e)
    }

    /// Runs the group and commits it; whether it wrote anything if it
    /// committed.
    fn commit(&mut self, batch: Vec<Job>, durable: bool) -> Option<bool> {
        let mut answers = Vec::with_capacity(batch.len());
        match self.transact(batch, durable, &mut answers) {
            Ok((wrote, wake)) => {
                for (reply, answer) in answers {
                    let _ = reply.send(answer);
                }
                if let Some(due) = wake {
                    for w in lock(&self.wakers).iter() {
                        w(due);
                    }
                }
                Some(wrote)
            }
            Err(e) => {
                tracing::error!(error = %e, calls = answers.len(), "embedded store write failed");
                for (reply, _) in answers {
                    let _ = reply.send(Err(e.clone()));
                }
                None
            }
        }
    }

    /// One group: its steps, its write batch and, when `durable`, the
    /// fsync. Any step's store error aborts the whole group. Answers
    /// whether the group wrote anything and the earliest due time to wake
    /// the watchers for.
    fn transact(
        &mut self,
        batch: Vec<Job>,
        durable: bool,
        answers: &mut Answers,
    ) -> StoreResult<(bool, Option<Millis>)> {
        let mut tables = Tables::new(
            &self.spaces,
            self.cursor.clone(),
            self.clock.local_now(),
            self.window,
        );
        tables.dedup = self.dedup.load(Ordering::Relaxed);
        let mut failed = None;
        for job in batch {
            let answer = if failed.is_some() {
                Err(DurableError::Store("aborted with its batch".into()))
            } else {
                (job.step)(&mut tables)
            };
            if let Err(e) = &answer {
                failed.get_or_insert_with(|| e.clone());
            }
            answers.push((job.reply, answer));
        }
        if let Some(e) = failed {
            return Err(e);
        }
        tables.prune_ended()?;
        let (cursor, wake, wrote) = (tables.cursor.clone(), tables.wake, !tables.is_clean());
        if wrote {
            tables
                .into_batch(&self.db)
                .commit()
                .map_err(|e| self.broke(e))?;
        }
        // Reads alone may move the scans' start up too.
        self.cursor = cursor;
        if durable {
            self.flush()?;
        }
        Ok((wrote, wake))
    }
}

/// The first job and every job waiting behind it, up to [`MAX_BATCH`].
fn gather(first: Job, jobs: &Receiver<Job>) -> Vec<Job> {
    let mut batch = vec![first];
    while batch.len() < MAX_BATCH {
        match jobs.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
    batch
}

/// Sends a step to the writer and waits for its answer.
pub(super) fn call(
    jobs: &Mutex<Option<mpsc::Sender<Job>>>,
    durable: bool,
    step: Step,
) -> StoreResult<Reply> {
    let (reply, answer) = mpsc::sync_channel(1);
    let sender = lock(jobs).clone().ok_or(DurableError::Closed)?;
    sender
        .send(Job {
            step,
            durable,
            reply,
        })
        .map_err(|_| DurableError::Closed)?;
    answer.recv().map_err(|_| DurableError::Closed)?
}

#[cfg(any(test, fuzzing))]
impl super::Embedded {
    /// Stops the writer thread and runs the writer on the callers' threads
    /// from now on, one call at a time, each call a group of its own (as
    /// the thread runs a lone caller's steps): the fuzz harness calls one
    /// step at a time, and a hand-over to a thread per step costs it more
    /// than the step. No commit is left to a later flush: each one that is
    /// not durable stays so until the next durable one or `close`.
    ///
    /// # Errors
    ///
    /// [`DurableError::Closed`] after `close` (or a second call), or
    /// [`DurableError::Store`] if the writer thread panicked.
    pub(crate) fn run_inline(&self) -> StoreResult<()> {
        drop(lock(&self.jobs).take());
        let thread = lock(&self.writer).take().ok_or(DurableError::Closed)?;
        let writer = thread
            .join()
            .map_err(|_| DurableError::Store("the writer thread panicked".into()))?;
        *lock(&self.inline) = Some(writer);
        Ok(())
    }
}
