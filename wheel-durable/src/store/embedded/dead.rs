//! Dead letters on the embedded store: a timer whose runs failed for
//! good leaves its record and index entry for a `dead` entry (by key)
//! and a `dead_order` entry (by the time it failed), written and deleted
//! together.
//!
//! Invariant: the cursor's `dead` count is the number of `dead` entries
//! (counted at open, kept by every step here), so that a store without
//! dead letters answers `is_dead` without a read.
//!
//! Node state: none: the keyspaces belong to the store; only the writer
//! thread changes them.

use super::spaces::{Space, corrupt, index_key};
use super::tables::Tables;
use crate::store::record::{DeadRecord, Record};
use crate::store::{Millis, StoreResult};

impl Tables<'_> {
    /// Whether `key` names a dead letter. The count is exact (counted at
    /// open, kept by every step), so a store without dead letters skips
    /// the read: most adds, and every schedule run's creation, ask.
    pub(super) fn is_dead(&self, key: &str) -> StoreResult<bool> {
        Ok(self.cursor.dead > 0 && self.read(Space::Dead, key.as_bytes())?.is_some())
    }

    /// Removes a dead letter; the one there was, if any.
    pub(super) fn bury(&mut self, key: &str) -> StoreResult<Option<DeadRecord>> {
        if self.cursor.dead == 0 {
            return Ok(None);
        }
        let Some(d) = self.read(Space::Dead, key.as_bytes())? else {
            return Ok(None);
        };
        let d = DeadRecord::decode(&d).ok_or_else(|| corrupt("dead letter"))?;
        self.write(Space::Dead, key.as_bytes().to_vec(), None);
        self.write(Space::DeadOrder, index_key(d.failed_at, key), None);
        self.cursor.dead = self.cursor.dead.saturating_sub(1);
        Ok(Some(d))
    }

    /// Turns `key`'s timer `r` into a dead letter failed now.
    pub(super) fn make_dead(&mut self, key: &str, r: Record, reason: String) -> StoreResult<()> {
        self.unindex(key, &r, true)?;
        let d = DeadRecord {
            failed_at: self.now,
            due: r.due,
            first_due: r.first_due,
            attempts: r.attempts,
            reason,
            payload: r.payload,
        };
        self.write(Space::Dead, key.as_bytes().to_vec(), Some(d.encode()));
        self.write(
            Space::DeadOrder,
            index_key(d.failed_at, key),
            Some(Vec::new()),
        );
        self.cursor.dead += 1;
        Ok(())
    }

    /// Adds a dead letter back as a pending timer due at `due`; false if
    /// `key` names none.
    pub(super) fn retry_dead(&mut self, key: &str, due: Millis) -> StoreResult<bool> {
        let Some(d) = self.bury(key)? else {
            return Ok(false);
        };
        self.add(key, due, &d.payload)?;
        Ok(true)
    }
}
