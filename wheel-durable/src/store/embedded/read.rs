//! The embedded store's reads, on the caller's thread: each from one
//! snapshot, so an index entry and the record it names always agree.
//!
//! An index scan starts at an index key (time, then timer key), never at
//! an offset: a listing page resumes strictly after the last entry of the
//! page before, and costs the same wherever it starts.
//!
//! Node state: none (reads on the caller's thread from one snapshot).

use std::ops::Bound;

use fjall::{Keyspace, Readable, Snapshot};

use super::db_err;
use super::spaces::{Space, Spaces, corrupt, index_key, parse_index_key};
use crate::store::record::{DeadRecord, Record};
use crate::store::{Listed, Millis, StoreResult};
use crate::{Listing, TimerInfo};

/// The first `max` entries of an index keyspace, in order: what a reader
/// sees, without a group's overlay.
pub(super) fn first_keys(
    snap: &Snapshot,
    index: &Keyspace,
    max: usize,
) -> StoreResult<Vec<(Millis, String)>> {
    keys_after(snap, index, None, max)
}

/// Up to `max` entries of an index keyspace strictly after the entry of
/// `after` (its time and timer key), or from the start: a range scan from
/// that index key, so it costs the same wherever it starts.
pub(super) fn keys_after(
    snap: &Snapshot,
    index: &Keyspace,
    after: Option<(Millis, &str)>,
    max: usize,
) -> StoreResult<Vec<(Millis, String)>> {
    let from = match after {
        Some((at, key)) => Bound::Excluded(index_key(at, key)),
        None => Bound::Unbounded,
    };
    snap.range::<Vec<u8>, _>(index, (from, Bound::Unbounded))
        .take(max)
        .map(|entry| parse_index_key(&entry.key().map_err(db_err)?))
        .collect()
}

/// One timer or dead letter as a reader sees it; `dead_only` skips the
/// timers table (for the dead listing).
pub(super) fn info(
    snap: &Snapshot,
    spaces: &Spaces,
    key: &str,
    dead_only: bool,
) -> StoreResult<Option<TimerInfo>> {
    if !dead_only && let Some(v) = snap.get(spaces.get(Space::Timers), key).map_err(db_err)? {
        let r = Record::decode(&v).ok_or_else(|| corrupt("timer"))?;
        return Ok(Some(r.info(key)));
    }
    let Some(v) = snap.get(spaces.get(Space::Dead), key).map_err(db_err)? else {
        return Ok(None);
    };
    let d = DeadRecord::decode(&v).ok_or_else(|| corrupt("dead letter"))?;
    Ok(Some(d.info(key)))
}

/// Up to `limit` timers of a listing, strictly after `after` if given.
pub(super) fn list(
    snap: &Snapshot,
    spaces: &Spaces,
    which: Listing,
    after: Option<(Millis, &str)>,
    limit: usize,
) -> StoreResult<Vec<Listed>> {
    let index = match which {
        Listing::Pending => Space::Due,
        Listing::Claimed => Space::Leases,
        Listing::Dead => Space::DeadOrder,
        Listing::Parked => Space::Parked,
    };
    let mut out = Vec::new();
    for (score, key) in keys_after(snap, spaces.get(index), after, limit)? {
        let info =
            info(snap, spaces, &key, which == Listing::Dead)?.ok_or_else(|| corrupt("index"))?;
        out.push(Listed { score, info });
    }
    Ok(out)
}
