//! Flow control on the embedded store: pausing the namespace or a flow
//! key, each key's limits, parking the claims that start while their key
//! is paused or its breaker is open and those a node defers, and making
//! them pending again on a resume or a wake-up (`store/flow_state.rs` states the rules; this file
//! keeps them on the keyspaces `parked`, `flow_parked` and `flows`, see
//! `spaces.rs`; `gates.rs` holds the rate, the permits and the breakers).
//!
//! Invariants:
//! - A parked timer has its record (state `Parked`), exactly one `parked`
//!   entry ((due, key) → its flow key) and exactly one `flow_parked`
//!   entry, written and deleted in the same step; nothing else of it is
//!   indexed.
//! - [`FlowMarks`], kept in the writer's cursor, holds what the keyspaces
//!   hold: the namespace's pause and default limits (`meta`), the paused
//!   keys and each key's own limits (`flows`), the parked count of each
//!   key (its `parked` entries). It is loaded once at open and written
//!   through by every step that changes it, so that a claim or a start
//!   reads nothing more while no key is paused or limited; a group that
//!   fails drops it with its cursor.
//! - Held in memory only, never written: the wake times, each key's scan
//!   start in `flow_parked` (no entry of the key lies before it), and the
//!   gates (`gates.rs`: the rate's next slot, the permits, the breakers).
//!   At open
//!   the gates start fresh (every run was taken back, so no permit or
//!   probe is valid) and every key with parked timers that is not paused
//!   wakes at once, so that timers parked by a breaker that is now
//!   forgotten are made pending by the next claims.
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
use crate::flow_key::{check_deferral, check_flow_key};
use crate::store::flow_state::{LIMITS_LEN, Limits, Phase, WAKE_SPAN};
use crate::store::record::Record;
use crate::store::{FlowsState, Millis, Start, StoreResult, UNPARK_BATCH, later};

/// The name of the namespace's pause in `meta` (present: paused).
const PAUSED_ALL: &[u8] = b"paused";

/// The name of the default limits in `meta` (encoded [`Limits`]).
const DEFAULTS: &[u8] = b"limits";

/// A `flows` value's first byte's bit: the key is paused. The encoded
/// limits follow it when the key has its own.
const PAUSED: u8 = 1;

/// The flow-control state in memory (module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FlowMarks {
    paused_all: bool,
    pub(super) paused: BTreeSet<String>,
    /// Each key's own limits.
    pub(super) limits: BTreeMap<String, Limits>,
    pub(super) defaults: Option<Limits>,
    /// When each key's wake-up comes (`flow_state.rs`, "Wake-ups").
    pub(super) wake: BTreeMap<String, Millis>,
    /// Where the scan of a key's `flow_parked` entries starts: the entries
    /// before it are the tombstones of timers already unparked.
    from: BTreeMap<String, Vec<u8>>,
    /// The parked count of each key that has parked timers.
    parked: BTreeMap<String, u64>,
    total: u64,
}

impl FlowMarks {
    /// Reads the marks from the keyspaces (once, at open, `now` by the
    /// store's clock).
    pub(super) fn load(snap: &Snapshot, spaces: &Spaces, now: Millis) -> StoreResult<FlowMarks> {
        let text = |b: &[u8]| {
            std::str::from_utf8(b)
                .map(str::to_owned)
                .map_err(|_| corrupt("flow key"))
        };
        let meta = spaces.get(Space::Meta);
        let defaults = match snap.get(meta, DEFAULTS).map_err(db_err)? {
            Some(b) => Some(Limits::decode(&b).ok_or_else(|| corrupt("limits"))?),
            None => None,
        };
        let mut marks = FlowMarks {
            paused_all: snap.get(meta, PAUSED_ALL).map_err(db_err)?.is_some(),
            defaults,
            ..FlowMarks::default()
        };
        for entry in snap.iter(spaces.get(Space::Flows)) {
            let (k, v) = entry.into_inner().map_err(db_err)?;
            let flow = text(&k)?;
            let (bits, limits) = v.split_first().ok_or_else(|| corrupt("flow"))?;
            if bits & !PAUSED != 0 {
                return Err(corrupt("flow"));
            }
            if bits & PAUSED != 0 {
                marks.paused.insert(flow.clone());
            }
            if !limits.is_empty() {
                let limits = Limits::decode(limits).ok_or_else(|| corrupt("limits"))?;
                marks.limits.insert(flow, limits);
            }
        }
        for entry in snap.iter(spaces.get(Space::Parked)) {
            let flow = text(&entry.value().map_err(db_err)?)?;
            *marks.parked.entry(flow).or_default() += 1;
            marks.total += 1;
        }
        for flow in marks.parked.keys() {
            if !marks.paused.contains(flow) {
                marks.wake.insert(flow.clone(), now);
            }
        }
        Ok(marks)
    }

    pub(super) fn paused_all(&self) -> bool {
        self.paused_all
    }

    /// Parked timers in all.
    pub(super) fn parked(&self) -> u64 {
        self.total
    }

    /// `flow`'s parked timers.
    pub(super) fn parked_of(&self, flow: &str) -> u64 {
        self.parked.get(flow).copied().unwrap_or(0)
    }

    /// The keys with parked timers.
    pub(super) fn parked_keys(&self) -> impl Iterator<Item = &str> {
        self.parked.keys().map(String::as_str)
    }

    /// `flow`'s limits: its own, else the defaults, else none.
    pub(super) fn limits_of(&self, flow: &str) -> Limits {
        let own = self.limits.get(flow).copied();
        own.or(self.defaults).unwrap_or_default()
    }

    /// Whether no start can be held back but by a pause of the namespace:
    /// no key is paused or limited.
    pub(super) fn is_open(&self) -> bool {
        self.paused.is_empty() && self.limits.is_empty() && self.defaults.is_none()
    }
}

impl Tables<'_> {
    /// The marks, to change (copied once per group, only by a group that
    /// changes them).
    pub(super) fn marks(&mut self) -> &mut FlowMarks {
        Arc::make_mut(&mut self.cursor.flows)
    }

    /// Writes `flow`'s `flows` entry as the marks have it.
    pub(super) fn save_mark(&mut self, flow: &str) {
        let m = &self.cursor.flows;
        let paused = m.paused.contains(flow);
        let value = match m.limits.get(flow) {
            Some(l) => {
                let mut v = Vec::with_capacity(1 + LIMITS_LEN);
                v.push(if paused { PAUSED } else { 0 });
                v.extend_from_slice(&l.encode());
                Some(v)
            }
            None => paused.then(|| vec![PAUSED]),
        };
        self.write(Space::Flows, flow.as_bytes().to_vec(), value);
    }

    /// A claim held with its fence and due whose start the gate holds
    /// back: handed back if the namespace is paused, else parked under
    /// `flow`.
    pub(super) fn hold_back(&mut self, key: &str, mut r: Record, flow: &str) -> StoreResult<Start> {
        if self.cursor.flows.paused_all {
            self.unindex(key, &r, false)?;
            r.state = TimerState::Pending;
            self.put(key, &r)?;
        } else {
            self.park(key, r, flow)?;
        }
        Ok(Start::Paused { now: self.now })
    }

    /// Parks the claim `r` of `key` under `flow`: its lease entry goes,
    /// its record and its two parked entries are written.
    fn park(&mut self, key: &str, mut r: Record, flow: &str) -> StoreResult<()> {
        self.unindex(key, &r, false)?;
        r.state = TimerState::Parked;
        self.write(Space::Timers, key.as_bytes().to_vec(), Some(r.encode()));
        let k = index_key(r.due, key);
        let mut in_flow = flow_prefix(flow);
        in_flow.extend_from_slice(&k);
        self.write(Space::Parked, k, Some(flow.as_bytes().to_vec()));
        let m = self.marks();
        // No entry of the key before its scan start.
        if let Some(from) = m.from.get_mut(flow)
            && in_flow < *from
        {
            from.clone_from(&in_flow);
        }
        *m.parked.entry(flow.to_owned()).or_default() += 1;
        m.total += 1;
        self.write(Space::FlowParked, in_flow, Some(Vec::new()));
        Ok(())
    }

    /// Parks each claim still held with its fence under its flow key (one
    /// per claim) for the wake-ups to hand out at the key's rate
    /// (`flow_state.rs`, "Deferring"); true for each one parked. Every key
    /// is checked before anything changes, so a bad key or a count of
    /// keys other than the claims' fails the whole call.
    pub(super) fn defer(
        &mut self,
        claims: &[(String, u64)],
        flows: &[String],
    ) -> StoreResult<Vec<bool>> {
        check_deferral(claims.len(), flows)?;
        let wake = later(self.now, WAKE_SPAN);
        let mut out = Vec::with_capacity(claims.len());
        for ((key, fence), flow) in claims.iter().zip(flows) {
            let Some(r) = self.held(key, *fence, TimerState::Claimed)? else {
                out.push(false);
                continue;
            };
            self.park(key, r, flow)?;
            // A key with a wake time keeps it: that wake-up hands these
            // out with the rest, as its breaker or rate allows.
            self.marks().wake.entry(flow.clone()).or_insert(wake);
            out.push(true);
        }
        Ok(out)
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
            m.from.remove(&flow);
        }
        Ok(())
    }

    /// Makes up to `limit` of `flow`'s parked timers pending, earliest
    /// `(due, key)` first; answers how many.
    pub(super) fn unpark(&mut self, flow: &str, limit: usize) -> StoreResult<usize> {
        if limit == 0 || self.cursor.flows.parked_of(flow) == 0 {
            return Ok(0);
        }
        let prefix = flow_prefix(flow);
        let from = match self.cursor.flows.from.get(flow) {
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
            // Timers left: the next scan starts at this one's tombstone.
            if self.cursor.flows.parked_of(flow) > 0 {
                let mut at = prefix.clone();
                at.extend_from_slice(&index_key(*due, key));
                self.marks().from.insert(flow.to_owned(), at);
            }
        }
        Ok(parked.len())
    }

    /// A claim's first step after taking leases back: the wake-ups that
    /// have come, keys in byte order, with a budget of [`UNPARK_BATCH`]
    /// timers made pending (`flow_state.rs`, "Wake-ups").
    pub(super) fn wake_ups(&mut self) -> StoreResult<()> {
        let now = self.now;
        let m = &self.cursor.flows;
        if m.wake.is_empty() || !m.wake.values().any(|at| *at <= now) {
            return Ok(());
        }
        let due: Vec<String> = m
            .wake
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        let mut budget = UNPARK_BATCH;
        for flow in due {
            if budget == 0 {
                break;
            }
            if self.cursor.flows.paused.contains(&flow) {
                self.marks().wake.remove(&flow);
                continue;
            }
            let breaker = self.cursor.flows.limits_of(&flow).breaker;
            let phase = self.cursor.gates.phase(&flow);
            if let (Some(b), Some(Phase::Open | Phase::HalfOpen)) = (breaker, phase) {
                let step = self.gates().half_open(&flow);
                budget -= self.unpark(&flow, 1)?;
                // Nothing left parked: a timer coming due is the probe, so
                // there is no other candidate to hand out later.
                if self.cursor.flows.parked_of(&flow) > 0 {
                    let again = later(now, b.cooldown_at(step, 0));
                    self.marks().wake.insert(flow.clone(), again);
                } else {
                    self.marks().wake.remove(&flow);
                }
                continue;
            }
            let allowance = self.cursor.flows.limits_of(&flow).allowance();
            let most = allowance.map_or(budget, |a| {
                budget.min(usize::try_from(a).unwrap_or(usize::MAX))
            });
            budget -= self.unpark(&flow, most)?;
            if self.cursor.flows.parked_of(&flow) == 0 {
                self.marks().wake.remove(&flow);
            } else if allowance.is_some() {
                // Its allowance is spent: the rest wait for the next span.
                // A key held back by the budget alone keeps its wake time
                // and is visited again by the next claim.
                self.marks()
                    .wake
                    .insert(flow.clone(), later(now, WAKE_SPAN));
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
            m.wake.remove(flow);
            let changed = m.paused.insert(flow.to_owned());
            if changed {
                self.save_mark(flow);
            }
            return Ok(changed);
        }
        if !self.cursor.flows.paused.contains(flow) {
            return Ok(false);
        }
        self.marks().paused.remove(flow);
        if self.cursor.gates.phase(flow).is_some() {
            self.gates().reset(flow);
        }
        self.unpark(flow, UNPARK_BATCH)?;
        if self.cursor.flows.parked_of(flow) > 0 {
            let now = self.now;
            self.marks().wake.insert(flow.to_owned(), now);
        }
        self.save_mark(flow);
        Ok(true)
    }

    /// Sets or removes `flow`'s own limits, or the defaults (`None`).
    pub(super) fn set_limits(
        &mut self,
        flow: Option<&str>,
        limits: Option<Limits>,
    ) -> StoreResult<()> {
        let Some(flow) = flow else {
            self.marks().defaults = limits;
            self.write(Space::Meta, DEFAULTS.to_vec(), limits.map(|l| l.encode()));
            return Ok(());
        };
        check_flow_key(flow)?;
        let m = self.marks();
        match limits {
            Some(l) => m.limits.insert(flow.to_owned(), l),
            None => m.limits.remove(flow),
        };
        self.save_mark(flow);
        Ok(())
    }

    /// What `flows` answers: the marks, and each key's gates read against
    /// the records.
    pub(super) fn flows_state(&mut self) -> StoreResult<FlowsState> {
        let m = &self.cursor.flows;
        let mut keys: BTreeSet<String> = m.paused.iter().cloned().collect();
        keys.extend(m.parked_keys().map(str::to_owned));
        keys.extend(m.limits.keys().cloned());
        keys.extend(self.cursor.gates.listed_breakers().map(str::to_owned));
        let holders: Vec<String> = self.cursor.gates.permit_keys().map(str::to_owned).collect();
        let mut in_flight = BTreeMap::new();
        for flow in holders {
            let n = self.valid_permits(&flow)?.len();
            if n > 0 {
                in_flight.insert(flow.clone(), n as u32);
                keys.insert(flow);
            }
        }
        let m = &self.cursor.flows;
        Ok(FlowsState {
            paused: m.paused_all,
            defaults: m.defaults,
            keys: keys
                .into_iter()
                .map(|k| {
                    m.entry(
                        &self.cursor.gates,
                        &k,
                        in_flight.get(&k).copied().unwrap_or(0),
                    )
                })
                .collect(),
        })
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
