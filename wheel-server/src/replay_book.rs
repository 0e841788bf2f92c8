//! [`ReplayBook`]: the dead-letter replays this server started, by id.
//!
//! The book is memory only: a replay belongs to the node that started it
//! and does not survive its restart (the letters it revived stay
//! revived; a new replay takes up the rest). It keeps the last
//! [`KEPT`] replays, dropping the oldest finished ones first, and refuses
//! a new one while [`MAX_RUNNING`] run.
//!
//! Invariants: an entry is added only by [`ReplayBook::start`], which
//! holds the book's lock across the library's start, so the running count
//! it checks is the one it adds to; entries are never changed, only
//! dropped (the oldest finished ones, or one a `DELETE` cancels). Nothing here depends on a route: the routes (`replays.rs`)
//! read and add through these methods only.

use std::collections::VecDeque;
use std::future::Future;
use std::time::SystemTime;

use tokio::sync::Mutex;
use wheel_durable::{DeadFilter, DurableError, Replay};

/// Replays the book remembers, running or finished.
pub(crate) const KEPT: usize = 100;

/// Replays that may run at once.
pub(crate) const MAX_RUNNING: usize = 16;

/// One replay and what it was asked for.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) id: String,
    pub(crate) replay: Replay,
    pub(crate) filter: DeadFilter,
    pub(crate) rate: f64,
    pub(crate) limit: Option<u64>,
    pub(crate) started_at: SystemTime,
}

/// Why a replay was not started.
#[derive(Debug)]
pub(crate) enum StartError {
    /// [`MAX_RUNNING`] replays run already.
    Full,
    /// The library refused it, or the store failed.
    Durable(DurableError),
}

/// The replays of this server.
#[derive(Debug, Default)]
pub(crate) struct ReplayBook {
    entries: Mutex<VecDeque<Entry>>,
}

impl ReplayBook {
    /// Starts a replay with `start` unless [`MAX_RUNNING`] run, and keeps
    /// it under `id`.
    pub(crate) async fn start<F>(
        &self,
        id: String,
        filter: DeadFilter,
        rate: f64,
        limit: Option<u64>,
        start: F,
    ) -> Result<Entry, StartError>
    where
        F: Future<Output = Result<Replay, DurableError>>,
    {
        let mut entries = self.entries.lock().await;
        if entries.iter().filter(|e| running(e)).count() >= MAX_RUNNING {
            return Err(StartError::Full);
        }
        let replay = start.await.map_err(StartError::Durable)?;
        let entry = Entry {
            id,
            replay,
            filter,
            rate,
            limit,
            started_at: SystemTime::now(),
        };
        entries.push_back(entry.clone());
        // At most MAX_RUNNING < KEPT run, so a finished one is there to drop.
        while entries.len() > KEPT {
            match entries.iter().position(|e| !running(e)) {
                Some(oldest) => drop(entries.remove(oldest)),
                None => break,
            }
        }
        Ok(entry)
    }

    /// Forgets the replay kept under `id`; it, if there was one.
    pub(crate) async fn remove(&self, id: &str) -> Option<Entry> {
        let mut entries = self.entries.lock().await;
        let at = entries.iter().position(|e| e.id == id)?;
        entries.remove(at)
    }

    /// The replay kept under `id`.
    pub(crate) async fn get(&self, id: &str) -> Option<Entry> {
        let entries = self.entries.lock().await;
        entries.iter().find(|e| e.id == id).cloned()
    }
}

fn running(e: &Entry) -> bool {
    e.replay.progress().state.is_running()
}
