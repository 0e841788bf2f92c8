//! Flow control on the embedded store: pausing the namespace or a flow
//! key, parking the claims that start while their key is paused, and
//! making them pending again on resume (`store/flow_state.rs` states the
//! rules; this file keeps them on the keyspaces `parked`, `flow_parked`
//! and `flows`, see `spaces.rs`).
//!
//! Invariants:
//! - A parked timer has its record (state `Parked`), exactly one `parked`
//!   entry ((due, key) → its flow key) and exactly one `flow_parked`
//!   entry, written and deleted in the same step; nothing else of it is
//!   indexed.
//! - [`FlowMarks`], kept in the writer's cursor, is what the keyspaces
//!   hold: the namespace's pause (`meta`), the paused and resuming keys
//!   (`flows`), the parked count of each key (its `parked` entries).
//!   It is loaded once at open and written through by every step that
//!   changes it, so that a claim or a start reads nothing more while
//!   nothing is paused; a group that fails drops it with its cursor.
//! - A resuming key has parked timers and is not paused: it stops
//!   resuming when its last parked timer leaves (unparked, cancelled,
//!   rescheduled, replaced) or when it is paused again.
//!
//! Node state: none: the keyspaces belong to the store; only the writer
//! thread changes them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fjall::{Readable, Snapshot};

use super::db_err;
use super::spaces::{Space, Spaces, corrupt, flow_prefix, index_key};
use super::tables::Tables;
use crate::TimerState;
use crate::flow_key::check_flow_key;
use crate::store::record::Record;
use crate::store::{FlowEntry, FlowsState, Millis, Start, StoreResult, UNPARK_BATCH};

/// The name of the namespace's pause in `meta` (present: paused).
const PAUSED_ALL: &[u8] = b"paused";

/// A `flows` value's bit: the key is paused.
const PAUSED: u8 = 1;

/// A `flows` value's bit: the key is resuming.
const RESUMING: u8 = 2;

/// The paused state in memory, as the keyspaces hold it (module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FlowMarks {
    paused_all: bool,
    paused: BTreeSet<String>,
    /// Each resuming key with the `flow_parked` key its next scan starts
    /// at: no timer is parked under a key that is not paused, so the
    /// entries before it are the tombstones of those already unparked.
    resuming: BTreeMap<String, Vec<u8>>,
    /// The parked count of each key that has parked timers.
    parked: BTreeMap<String, u64>,
    total: u64,
}

impl FlowMarks {
    /// Reads the marks from the keyspaces (once, at open).
    pub(super) fn load(snap: &Snapshot, spaces: &Spaces) -> StoreResult<FlowMarks> {
        let text = |b: &[u8]| {
            std::str::from_utf8(b)
                .map(str::to_owned)
                .map_err(|_| corrupt("flow key"))
        };
        let mut marks = FlowMarks {
            paused_all: snap
                .get(spaces.get(Space::Meta), PAUSED_ALL)
                .map_err(db_err)?
                .is_some(),
            ..FlowMarks::default()
        };
        for entry in snap.iter(spaces.get(Space::Flows)) {
            let (k, v) = entry.into_inner().map_err(db_err)?;
            let flow = text(&k)?;
            let bits = *v.first().ok_or_else(|| corrupt("flow"))?;
            if bits & PAUSED != 0 {
                marks.paused.insert(flow.clone());
            }
            if bits & RESUMING != 0 {
                let from = flow_prefix(&flow);
                marks.resuming.insert(flow, from);
            }
        }
        for entry in snap.iter(spaces.get(Space::Parked)) {
            let flow = text(&entry.value().map_err(db_err)?)?;
            *marks.parked.entry(flow).or_default() += 1;
            marks.total += 1;
        }
        Ok(marks)
    }

    /// Whether a start under `flow` (`""`: none) is held back: its
    /// namespace or its key is paused.
    pub(super) fn holds(&self, flow: &str) -> bool {
        self.paused_all || (!self.paused.is_empty() && self.paused.contains(flow))
    }

    pub(super) fn paused_all(&self) -> bool {
        self.paused_all
    }

    /// Parked timers in all.
    pub(super) fn parked(&self) -> u64 {
        self.total
    }

    /// What `flows` answers.
    pub(super) fn state(&self) -> FlowsState {
        let mut keys: BTreeSet<&str> = self.paused.iter().map(String::as_str).collect();
        keys.extend(self.parked.keys().map(String::as_str));
        FlowsState {
            paused: self.paused_all,
            keys: keys
                .into_iter()
                .map(|k| FlowEntry {
                    key: k.to_owned(),
                    paused: self.paused.contains(k),
                    parked: self.parked.get(k).copied().unwrap_or(0),
                })
                .collect(),
        }
    }
}

impl Tables<'_> {
    /// The marks, to change (copied once per group, only by a group that
    /// changes them).
    fn marks(&mut self) -> &mut FlowMarks {
        Arc::make_mut(&mut self.cursor.flows)
    }

    /// Writes `flow`'s `flows` entry as the marks have it.
    fn save_mark(&mut self, flow: &str) {
        let m = &self.cursor.flows;
        let bits = if m.paused.contains(flow) { PAUSED } else { 0 }
            | if m.resuming.contains_key(flow) {
                RESUMING
            } else {
                0
            };
        let value = (bits != 0).then(|| vec![bits]);
        self.write(Space::Flows, flow.as_bytes().to_vec(), value);
    }

    /// A claim held with its fence and due whose start is held back
    /// ([`FlowMarks::holds`]): handed back if the namespace is paused,
    /// else parked under `flow`.
    pub(super) fn hold_back(&mut self, key: &str, mut r: Record, flow: &str) -> StoreResult<Start> {
        self.unindex(key, &r, false)?;
        if self.cursor.flows.paused_all {
            r.state = TimerState::Pending;
            self.put(key, &r)?;
        } else {
            r.state = TimerState::Parked;
            self.write(Space::Timers, key.as_bytes().to_vec(), Some(r.encode()));
            let k = index_key(r.due, key);
            let mut in_flow = flow_prefix(flow);
            in_flow.extend_from_slice(&k);
            self.write(Space::Parked, k, Some(flow.as_bytes().to_vec()));
            self.write(Space::FlowParked, in_flow, Some(Vec::new()));
            let m = self.marks();
            *m.parked.entry(flow.to_owned()).or_default() += 1;
            m.total += 1;
        }
        Ok(Start::Paused { now: self.now })
    }

    /// Removes a parked timer's two index entries (its record stays).
    pub(super) fn unindex_parked(&mut self, key: &str, r: &Record) -> StoreResult<()> {
        let k = index_key(r.due, key);
        let flow = self
            .read(Space::Parked, &k)?
            .ok_or_else(|| corrupt("parked index"))?;
        let flow = String::from_utf8(flow).map_err(|_| corrupt("parked index"))?;
        let mut in_flow = flow_prefix(&flow);
        in_flow.extend_from_slice(&k);
        self.write(Space::Parked, k, None);
        self.write(Space::FlowParked, in_flow, None);
        let m = self.marks();
        m.total = m.total.saturating_sub(1);
        let left = m.parked.get_mut(&flow).map_or(0, |n| {
            *n = n.saturating_sub(1);
            *n
        });
        if left == 0 {
            m.parked.remove(&flow);
            if m.resuming.remove(&flow).is_some() {
                self.save_mark(&flow);
            }
        }
        Ok(())
    }

    /// Makes up to `limit` of `flow`'s parked timers pending, earliest
    /// `(due, key)` first; answers how many.
    fn unpark(&mut self, flow: &str, limit: usize) -> StoreResult<usize> {
        let prefix = flow_prefix(flow);
        let from = match self.cursor.flows.resuming.get(flow) {
            Some(from) => from.clone(),
            None => prefix.clone(),
        };
        let parked = self.scan(Space::FlowParked, &prefix, &from, limit, Millis::MAX)?;
        for (due, key) in &parked {
            let mut r = self.record(key)?.ok_or_else(|| corrupt("parked index"))?;
            if r.state != TimerState::Parked {
                return Err(corrupt("parked index"));
            }
            self.unindex(key, &r, false)?;
            r.state = TimerState::Pending;
            self.put(key, &r)?;
            // Still resuming (timers left): the next scan starts here.
            if let Some(from) = self.marks().resuming.get_mut(flow) {
                from.clone_from(&prefix);
                from.extend_from_slice(&index_key(*due, key));
            }
        }
        Ok(parked.len())
    }

    /// A claim's first step after taking leases back: up to
    /// [`UNPARK_BATCH`] parked timers of resuming keys made pending, keys
    /// in byte order.
    pub(super) fn continue_resumes(&mut self) -> StoreResult<()> {
        if self.cursor.flows.resuming.is_empty() {
            return Ok(());
        }
        let flows: Vec<String> = self.cursor.flows.resuming.keys().cloned().collect();
        let mut budget = UNPARK_BATCH;
        for flow in flows {
            budget = budget.saturating_sub(self.unpark(&flow, budget)?);
            if budget == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Pauses or resumes the namespace (`None`) or a flow key; true if its
    /// state changed.
    pub(super) fn set_paused(&mut self, flow: Option<&str>, paused: bool) -> StoreResult<bool> {
        let Some(flow) = flow else {
            return self.pause_all(paused);
        };
        check_flow_key(flow)?;
        if paused {
            let m = self.marks();
            let stopped = m.resuming.remove(flow).is_some();
            let changed = m.paused.insert(flow.to_owned());
            if changed || stopped {
                self.save_mark(flow);
            }
            return Ok(changed);
        }
        if !self.cursor.flows.paused.contains(flow) {
            return Ok(false);
        }
        let m = self.marks();
        m.paused.remove(flow);
        if m.parked.contains_key(flow) {
            m.resuming.insert(flow.to_owned(), flow_prefix(flow));
        }
        // The last timer unparked ends the resume (`unindex_parked`).
        self.unpark(flow, UNPARK_BATCH)?;
        self.save_mark(flow);
        Ok(true)
    }

    fn pause_all(&mut self, paused: bool) -> StoreResult<bool> {
        if self.cursor.flows.paused_all == paused {
            return Ok(false);
        }
        self.marks().paused_all = paused;
        self.write(Space::Meta, PAUSED_ALL.to_vec(), paused.then(Vec::new));
        // Its pending timers were never announced while it was paused:
        // the nodes hear of the earliest as of an add.
        if !paused && let Some(due) = self.next_due()? {
            self.note_pending(due);
        }
        Ok(true)
    }
}
