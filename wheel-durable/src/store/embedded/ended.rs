//! The dedup window on the embedded store: the `ended` keyspace (key →
//! [`Memory`]) and its expiry index `ended_order` ((expires, key) →
//! empty), changed only by the writer thread's steps ([`Tables`]).
//!
//! A memory and its index entry always change in the same step. Expired
//! memories are deleted by the writer, at most [`PRUNE_PER_GROUP`] per
//! group, oldest expiry first, before the group commits; a read answers an
//! expired memory as none, so pruning late changes no answer. The pruning
//! scan starts at the cursor's `ended_from`, a lower bound of the index's
//! entries (lowered by any earlier insert, raised past what each prune
//! deleted), so it never reads the tombstones earlier prunes left.
//!
//! Node state: none: the keyspaces belong to the store; only the writer
//! thread changes them.

use fjall::Readable;

use super::db_err;
use super::spaces::{Space, Spaces, corrupt, index_key};
use super::tables::Tables;
use crate::EndedHow;
use crate::dedup::rememberable;
use crate::store::{Memory, Millis, StoreResult, later};

/// Expired memories deleted by one group at most. A group records at most
/// one memory per step, and groups come whenever anything is written
/// (every node's claim polls write when leases move), so this keeps pace
/// with any rate of endings while bounding a group's extra work.
pub(super) const PRUNE_PER_GROUP: usize = 1_000;

impl Tables<'_> {
    /// The memory of `key`, unless expired by the group's clock.
    pub(super) fn memory(&self, key: &str) -> StoreResult<Option<Memory>> {
        if self.cursor.ended == 0 {
            return Ok(None);
        }
        let Some(v) = self.read(Space::Ended, key.as_bytes())? else {
            return Ok(None);
        };
        let m = Memory::decode(&v).ok_or_else(|| corrupt("dedup memory"))?;
        Ok(Some(m).filter(|m| m.expires > self.now))
    }

    /// Remembers that `key`'s timer ended `how` at `at`, for the window
    /// from now on (nothing when the window is zero).
    pub(super) fn remember(&mut self, key: &str, how: EndedHow, at: Millis) -> StoreResult<()> {
        if !rememberable(key, self.dedup) {
            return Ok(());
        }
        // A key is remembered once at most: the old entry's index goes.
        self.forget(key)?;
        let m = Memory {
            how,
            at,
            expires: later(self.now, self.dedup),
        };
        let k = key.as_bytes().to_vec();
        self.write(Space::Ended, k, Some(m.encode()));
        let k = index_key(m.expires, key);
        if k < self.cursor.ended_from {
            self.cursor.ended_from.clone_from(&k);
        }
        self.write(Space::EndedOrder, k, Some(Vec::new()));
        self.cursor.ended += 1;
        Ok(())
    }

    /// Deletes the memory of `key`, expired or not.
    pub(super) fn forget(&mut self, key: &str) -> StoreResult<()> {
        if self.cursor.ended == 0 {
            return Ok(());
        }
        let Some(v) = self.read(Space::Ended, key.as_bytes())? else {
            return Ok(());
        };
        let m = Memory::decode(&v).ok_or_else(|| corrupt("dedup memory"))?;
        self.write(Space::Ended, key.as_bytes().to_vec(), None);
        self.write(Space::EndedOrder, index_key(m.expires, key), None);
        self.cursor.ended = self.cursor.ended.saturating_sub(1);
        Ok(())
    }

    /// Deletes up to [`PRUNE_PER_GROUP`] expired memories.
    pub(super) fn prune_ended(&mut self) -> StoreResult<()> {
        if self.cursor.ended == 0 {
            return Ok(());
        }
        let from = self.cursor.ended_from.clone();
        let expired = self.first(Space::EndedOrder, &from, PRUNE_PER_GROUP, self.now)?;
        for (_, key) in &expired {
            self.forget(key)?;
        }
        // Every entry up to the last one deleted is gone.
        if let Some((at, key)) = expired.last() {
            self.cursor.ended_from = index_key(*at, key);
        }
        Ok(())
    }
}

/// The memory of `key` in a snapshot, unless expired at `now` (the
/// store's `ended`).
pub(super) fn read(
    snap: &fjall::Snapshot,
    spaces: &Spaces,
    key: &str,
    now: Millis,
) -> StoreResult<Option<Memory>> {
    let Some(v) = snap.get(spaces.get(Space::Ended), key).map_err(db_err)? else {
        return Ok(None);
    };
    let m = Memory::decode(&v).ok_or_else(|| corrupt("dedup memory"))?;
    Ok(Some(m).filter(|m| m.expires > now))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use fjall::Readable;

    use super::super::Embedded;
    use super::Space;
    use crate::AddMode;
    use crate::store::{Due, NewTimer, Store, StoreClock};

    /// Memories on disk, expired or not.
    fn stored(store: &Embedded) -> (usize, usize) {
        let (snap, spaces) = store.read().unwrap();
        let len = |s: Space| snap.len(spaces.get(s)).unwrap();
        (len(Space::Ended), len(Space::EndedOrder))
    }

    #[test]
    fn expired_memories_are_deleted_by_the_next_write_and_answer_nothing_before() {
        let dir = tempfile::tempdir().unwrap();
        let ms = Arc::new(AtomicU64::new(1_000_000));
        let clock = StoreClock::Manual(ms.clone());
        let store = Embedded::open(&dir.path().join("s"), clock, 10).unwrap();
        store.set_dedup_window(100);
        let add = |key: &str| {
            let t = NewTimer {
                key,
                due: Due::After(50),
                payload: b"",
            };
            store.add(&[t], AddMode::Replace).unwrap();
        };
        for key in ["a", "b", "c"] {
            add(key);
            assert!(store.cancel(key).unwrap());
        }
        assert_eq!(stored(&store), (3, 3));
        ms.fetch_add(100, Ordering::SeqCst);
        // Expired: answered as none before any write deleted it.
        assert_eq!(store.ended("a").unwrap(), None);
        assert_eq!(stored(&store), (3, 3));
        add("d");
        assert_eq!(stored(&store), (0, 0));
        // Memories written after a prune (the scan's start moved past the
        // deleted ones) are each deleted once expired, and not before.
        add("e");
        assert!(store.cancel("e").unwrap());
        store.set_dedup_window(1);
        add("f");
        assert!(store.cancel("f").unwrap());
        assert_eq!(stored(&store), (2, 2));
        ms.fetch_add(1, Ordering::SeqCst);
        add("g");
        assert_eq!(stored(&store), (1, 1));
        assert!(store.ended("e").unwrap().is_some());
        ms.fetch_add(100, Ordering::SeqCst);
        add("h");
        assert_eq!(stored(&store), (0, 0));
        store.close().unwrap();
    }
}
