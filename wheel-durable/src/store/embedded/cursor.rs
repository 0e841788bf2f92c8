//! What the writer keeps between groups ([`Cursor`]): the counts of each
//! index, where the due, lease and expiry scans start, and the
//! flow-control state. Each group works on a copy and hands it back only when it
//! commits, so a group that fails leaves it as it was.
//!
//! Node state: none: the writer thread owns it.

use std::sync::Arc;

use fjall::{Database, Readable};

use super::db_err;
use super::flows::FlowMarks;
use super::gates::Gates;
use super::spaces::{Space, Spaces, index_key, parse_index_key};
use crate::store::{Millis, StoreResult};

/// What the writer keeps between groups: the counts of each index, the
/// flow-control state (`flows.rs`, `gates.rs`), and a
/// lower bound of the entries of the due and lease indexes (an index key:
/// time and timer key), where their scans start, so that the tombstones
/// of entries deleted before it are never read again, however many timers
/// share one due time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cursor {
    pub(super) pending: u64,
    pub(super) claimed: u64,
    pub(super) dead: u64,
    /// The dedup window's memories, expired ones included until pruned.
    pub(super) ended: u64,
    pub(super) due_from: Vec<u8>,
    pub(super) lease_from: Vec<u8>,
    /// A lower bound of the expiry index's entries (`ended.rs`).
    pub(super) ended_from: Vec<u8>,
    /// Shared with the writer's copy until a step changes it.
    pub(super) flows: Arc<FlowMarks>,
    /// The rate, the permits and the breakers, in memory only; shared
    /// with the writer's copy until a step changes them.
    pub(super) gates: Arc<Gates>,
}

/// Past every index key (a time of `u64::MAX` is never stored).
pub(super) fn end() -> Vec<u8> {
    u64::MAX.to_be_bytes().to_vec()
}

impl Cursor {
    /// Counts every index of the store as it is on disk (once, at open).
    pub(super) fn scan(db: &Database, spaces: &Spaces, now: Millis) -> StoreResult<Cursor> {
        let snap = db.snapshot();
        let len = |s: Space| snap.len(spaces.get(s)).map(|n| n as u64).map_err(db_err);
        // The first entry is parsed, not copied, so that a corrupt index
        // fails the open instead of a later scan.
        let first = |s: Space| -> StoreResult<Vec<u8>> {
            let Some(entry) = snap.first_key_value(spaces.get(s)) else {
                return Ok(end());
            };
            let (at, key) = parse_index_key(&entry.key().map_err(db_err)?)?;
            Ok(index_key(at, &key))
        };
        Ok(Cursor {
            pending: len(Space::Due)?,
            claimed: len(Space::Leases)?,
            dead: len(Space::Dead)?,
            ended: len(Space::Ended)?,
            due_from: first(Space::Due)?,
            lease_from: first(Space::Leases)?,
            ended_from: first(Space::EndedOrder)?,
            flows: Arc::new(FlowMarks::load(&snap, spaces, now)?),
            gates: Arc::default(),
        })
    }
}
