//! Emptying an open embedded store in place, for the differential
//! harness (`store/fuzz.rs`) only: opening a store costs several times
//! what a whole fuzz input's operations do, so the harness keeps one open
//! and wipes it between inputs.
//!
//! Invariants, once [`Embedded::wipe`] returned `Ok`:
//! - every keyspace is empty (checked, not assumed), so every answer the
//!   store gives is that of a store that was just created;
//! - the writer's state (counts, scan starts, flow marks, the in-memory
//!   gates) is the one an open of the empty store computes, by the same
//!   code ([`Cursor::scan`]); the dedup window is off and no watcher is
//!   registered, as after an open.
//!
//! A wipe clears each keyspace that was written to (fjall's O(1)
//! `clear`: a new memtable and an empty version) rather than deleting
//! its entries: deletes would leave tombstones that every later scan
//! walks, so that each input would run slower than the one before. Each
//! clear persists a new version of the keyspace and keeps the old one in
//! fjall's version history (with the memtable it held) until a flush or
//! a compaction collects it, which a wiped store never triggers: the
//! harness closes a store after a fixed number of wipes (`fuzz_store.rs`).
//!
//! Node state: none (test and fuzzing support below the store trait).

use std::sync::atomic::Ordering;

use super::cursor::Cursor;
use super::spaces::NAMES;
use super::writer::Reply;
use super::{Embedded, db_err};
use crate::DurableError;
use crate::store::StoreResult;
use crate::sync::lock;

impl Embedded {
    /// Deletes everything the store holds and resets the writer's state
    /// to that of a freshly opened empty store (module docs).
    ///
    /// # Errors
    ///
    /// A store error from a clear or the rescan, or
    /// [`DurableError::Store`] if a keyspace still holds an entry after.
    pub(crate) fn wipe(&self) -> StoreResult<()> {
        let (db, keyspaces) = match lock(&self.open).as_ref() {
            Some((db, spaces)) => (db.clone(), spaces.clone()),
            None => return Err(DurableError::Closed),
        };
        // On the writer thread, between two groups: no step sees a store
        // half wiped, and the group hands the new cursor to the writer.
        self.call(
            true,
            Box::new(move |t| {
                for (name, keyspace) in NAMES.iter().zip(keyspaces.all()) {
                    // Counts deletes too: a keyspace written and emptied
                    // again still holds their tombstones.
                    if keyspace.approximate_len() > 0 {
                        keyspace.clear().map_err(db_err)?;
                    }
                    if keyspace.first_key_value().is_some() {
                        return Err(DurableError::Store(
                            format!("keyspace {name} not empty after a wipe").into(),
                        ));
                    }
                }
                t.cursor = Cursor::scan(&db, &keyspaces, t.now)?;
                Ok(Reply::Bool(true))
            }),
        )?;
        self.dedup.store(0, Ordering::Relaxed);
        lock(&self.wakers).clear();
        Ok(())
    }
}
