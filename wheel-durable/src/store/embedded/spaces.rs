//! The embedded store's keyspaces and the layout of their index keys.
//!
//! Keyspaces: `timers` (key → [`Record`](crate::store::record::Record)),
//! `due` ((due, key) → empty) for pending timers, `leases` ((lease_until,
//! key) → empty) for claimed and running ones, `dead` (key →
//! [`DeadRecord`](crate::store::record::DeadRecord)), `dead_order`
//! ((failed_at, key) → empty), `meta` (name → u64 little-endian: the fence
//! counter), `schedules` (id →
//! [`SchedRecord`](crate::store::schedules::SchedRecord)) and `unplanned`
//! (id → empty, for the records marked unplanned; see `schedules.rs`),
//! `ended` (key → [`Memory`](crate::store::Memory): the dedup window's
//! memories) and `ended_order` ((expires, key) → empty), and for flow
//! control (`flows.rs`): `parked` ((due, key) → the flow key it is parked
//! under) for every parked timer, `flow_parked` ((flow key, due, key) →
//! empty: each flow key's parked timers, the flow key prefixed by its
//! length as a big-endian u32 so that no key's entries run into
//! another's) and `flows` (flow key → one byte, 1 if paused, then the
//! key's own encoded [`Limits`](crate::store::Limits) if it has them; a
//! key with neither has no entry), with the namespace's pause (`paused`)
//! and default limits (`limits`) in `meta`. A store created before these keyspaces existed gets them,
//! empty, when it is opened. An
//! index key is the time as a big-endian u64 followed by the timer's key,
//! so an index is ordered by time, then by key, and the tombstones that
//! deletes leave behind cluster at its head.
//!
//! Node state: none: the keyspaces belong to the store; only the writer
//! thread changes them (`tables.rs`).

use fjall::config::CompressionPolicy;
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions};

use super::db_err;
use crate::DurableError;
use crate::store::{Millis, StoreResult};

pub(super) fn corrupt(what: &str) -> DurableError {
    DurableError::Corrupt(format!("a {what} record does not parse").into())
}

/// The keyspaces, in the order of [`Space`].
pub(super) struct Spaces {
    all: [Keyspace; SPACES],
}

/// One keyspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Space {
    Timers = 0,
    Due = 1,
    Leases = 2,
    Dead = 3,
    DeadOrder = 4,
    Meta = 5,
    Schedules = 6,
    Unplanned = 7,
    Ended = 8,
    EndedOrder = 9,
    Parked = 10,
    FlowParked = 11,
    Flows = 12,
}

/// How many keyspaces there are.
pub(super) const SPACES: usize = 13;

pub(super) const NAMES: [&str; SPACES] = [
    "timers",
    "due",
    "leases",
    "dead",
    "dead_order",
    "meta",
    "schedules",
    "unplanned",
    "ended",
    "ended_order",
    "parked",
    "flow_parked",
    "flows",
];

impl Spaces {
    /// Opens (or creates) every keyspace.
    pub(super) fn open(db: &Database) -> StoreResult<Spaces> {
        let open = |name: &&str| {
            db.keyspace(name, || {
                KeyspaceCreateOptions::default()
                    .data_block_compression_policy(CompressionPolicy::all(CompressionType::Lz4))
            })
            .map_err(db_err)
        };
        let all: Vec<Keyspace> = NAMES.iter().map(open).collect::<StoreResult<_>>()?;
        let all = all.try_into().map_err(|_| corrupt("keyspace list"))?;
        Ok(Spaces { all })
    }

    pub(super) fn get(&self, space: Space) -> &Keyspace {
        &self.all[space as usize]
    }

    /// Every keyspace, in the order of [`Space`].
    pub(super) fn all(&self) -> &[Keyspace; SPACES] {
        &self.all
    }
}

/// The key of an index entry: `at` big-endian, then the timer's key.
pub(super) fn index_key(at: Millis, key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + key.len());
    k.extend_from_slice(&at.to_be_bytes());
    k.extend_from_slice(key.as_bytes());
    k
}

/// The prefix of a flow key's entries in `flow_parked`: its length (a
/// big-endian u32), then its bytes.
pub(super) fn flow_prefix(flow: &str) -> Vec<u8> {
    // Only a paused key parks timers, and `set_paused` refuses one over
    // `MAX_FLOW_KEY` bytes, so the length always fits.
    let len = u32::try_from(flow.len()).unwrap_or(u32::MAX);
    let mut k = Vec::with_capacity(4 + flow.len());
    k.extend_from_slice(&len.to_be_bytes());
    k.extend_from_slice(flow.as_bytes());
    k
}

/// The time and the timer's key of an index entry.
pub(super) fn parse_index_key(k: &[u8]) -> StoreResult<(Millis, String)> {
    let (at, key) = k.split_at_checked(8).ok_or_else(|| corrupt("index"))?;
    let at = u64::from_be_bytes(at.try_into().map_err(|_| corrupt("index"))?);
    let key = std::str::from_utf8(key).map_err(|_| corrupt("index"))?;
    Ok((at, key.to_owned()))
}
