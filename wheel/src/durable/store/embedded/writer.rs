//! The embedded store's one writer thread, which commits callers' changes
//! in groups.
//!
//! Callers hand their step to the writer and wait for its answer. The
//! writer takes every step that is waiting, runs them in order in one write
//! transaction and commits once, so concurrent callers share one fsync.
//! A batch that holds a change callers were promised as durable (`add`,
//! `cancel`, `reschedule`, `release`, `retry_dead`, `finish`) commits with
//! `Durability::Immediate`; a batch of claims, starts and renewals alone
//! commits without an fsync, and is made durable by the next durable commit
//! or, when none comes, by an empty one after [`FLUSH_AFTER`]. Losing such
//! a commit in a crash is harmless: claims revert to pending on restart
//! anyway.
//!
//! Only the writer opens write transactions; readers use read
//! transactions from their own threads and see every commit, durable or not.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redb::{Database, Durability};

use super::db_err;
use super::tables::Tables;
use crate::durable::store::{ClaimBatch, Millis, Start, StoreClock, StoreResult, Wake};
use crate::durable::DurableError;

/// How long a non-durable commit may stay the last one.
const FLUSH_AFTER: Duration = Duration::from_millis(100);

/// Steps taken into one transaction at most.
const MAX_BATCH: usize = 4_096;

/// A step's answer.
#[derive(Debug)]
pub(super) enum Reply {
    Unit,
    Bool(bool),
    Start(Start),
    Claim(ClaimBatch),
}

/// One step: runs on the writer thread inside the batch's transaction.
pub(super) type Step = Box<dyn for<'t> FnOnce(&mut Tables<'t>) -> StoreResult<Reply> + Send>;

pub(super) struct Job {
    pub(super) step: Step,
    pub(super) durable: bool,
    pub(super) reply: SyncSender<StoreResult<Reply>>,
}

/// What the writer needs besides its queue.
pub(super) struct Writer {
    pub(super) db: Arc<Database>,
    pub(super) clock: StoreClock,
    pub(super) window: Millis,
    pub(super) wakers: Arc<Mutex<Vec<Wake>>>,
}

impl Writer {
    /// Runs until every sender is gone, then makes the last commit durable.
    pub(super) fn run(self, jobs: Receiver<Job>) {
        let mut dirty = false;
        loop {
            let first = if dirty {
                jobs.recv_timeout(FLUSH_AFTER)
            } else {
                jobs.recv().map_err(|_| RecvTimeoutError::Disconnected)
            };
            let batch = match first {
                Ok(job) => self.gather(job, &jobs),
                Err(RecvTimeoutError::Timeout) => {
                    dirty = self.flush().is_err();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let durable = batch.iter().any(|j| j.durable);
            if self.commit(batch, durable) {
                dirty = !durable;
            }
        }
        if dirty {
            let _ = self.flush();
        }
    }

    fn gather(&self, first: Job, jobs: &Receiver<Job>) -> Vec<Job> {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        batch
    }

    /// An empty durable commit: makes earlier non-durable ones durable.
    fn flush(&self) -> StoreResult<()> {
        let txn = self.db.begin_write().map_err(db_err)?;
        txn.commit().map_err(db_err)
    }

    /// Runs the batch in one transaction; true if it committed.
    fn commit(&self, batch: Vec<Job>, durable: bool) -> bool {
        let mut answers = Vec::with_capacity(batch.len());
        let outcome = self.transact(batch, durable, &mut answers);
        match outcome {
            Ok(wake) => {
                for (reply, answer) in answers {
                    let _ = reply.send(answer);
                }
                if let Some(due) = wake {
                    for w in self.wakers.lock().unwrap().iter() {
                        w(due);
                    }
                }
                true
            }
            Err(e) => {
                for (reply, _) in answers {
                    let _ = reply.send(Err(e.clone()));
                }
                false
            }
        }
    }

    /// The transaction of one batch; any step's store error aborts all.
    #[allow(clippy::type_complexity)]
    fn transact(
        &self,
        batch: Vec<Job>,
        durable: bool,
        answers: &mut Vec<(SyncSender<StoreResult<Reply>>, StoreResult<Reply>)>,
    ) -> StoreResult<Option<Millis>> {
        let mut txn = self.db.begin_write().map_err(db_err)?;
        let level = if durable {
            Durability::Immediate
        } else {
            Durability::None
        };
        txn.set_durability(level)
            .map_err(|e| DurableError::Store(e.to_string()))?;
        let mut failed = None;
        let wake = {
            let mut tables = Tables::open(&txn, self.clock.local_now(), self.window)?;
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
            tables.wake
        };
        if let Some(e) = failed {
            return Err(e);
        }
        txn.commit().map_err(db_err)?;
        Ok(wake)
    }
}

/// Sends a step to the writer and waits for its answer.
pub(super) fn call(
    jobs: &Mutex<Option<mpsc::Sender<Job>>>,
    durable: bool,
    step: Step,
) -> StoreResult<Reply> {
    let (reply, answer) = mpsc::sync_channel(1);
    let sender = jobs.lock().unwrap().clone().ok_or(DurableError::Closed)?;
    sender
        .send(Job {
            step,
            durable,
            reply,
        })
        .map_err(|_| DurableError::Closed)?;
    answer.recv().map_err(|_| DurableError::Closed)?
}
