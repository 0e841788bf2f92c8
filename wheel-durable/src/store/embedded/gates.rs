//! The gate's limits on the embedded store (`store/flow_state.rs`, "The
//! gate of a start"): each key's rate (its GCRA theoretical arrival
//! time), its permits and its breaker, and the steps that read and take
//! them.
//!
//! Invariants:
//! - [`Gates`] lives in the writer's memory only, in its cursor apart
//!   from the [`FlowMarks`] (so that a start that takes a slot or a
//!   permit copies only the gates, and a group that fails drops its
//!   changes with its cursor); a reopened store starts it fresh.
//! - A permit is kept as its run's `(timer key, fence)` under its flow
//!   key, and a timer key holds at most one (a new start drops its old
//!   one). An entry is valid while the timer's record is `Running` with
//!   that fence and a lease end later than now; it is read against the
//!   record only when the key's entries reach its parallelism, and in
//!   `flows`: those no longer running with their fence are dropped then,
//!   and a finish or a lease taken back drops its entry at once.
//! - A breaker's probe is valid by the same rule, read only while the
//!   breaker is half-open.
//!
//! Node state: none: the writer thread owns it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::flows::FlowMarks;
use super::tables::Tables;
use crate::TimerState;
use crate::store::flow_state::{BreakerView, FlowClass, FlowEntry, Phase, RATE_HORIZON};
use crate::store::{Millis, StoreResult, later};

/// The rate's next slots, the permits and the breakers (module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Gates {
    /// Each rate-limited key's theoretical arrival time, µs.
    tat: HashMap<String, u64>,
    /// Each key's permits: timer key → the fence of the run that took it.
    permits: BTreeMap<String, BTreeMap<String, u64>>,
    /// The key each timer's permit is under.
    holders: HashMap<String, String>,
    breakers: BTreeMap<String, Breaker>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Breaker {
    phase: Phase,
    failures: u32,
    step: u32,
    /// Open: when it turns half-open.
    until: Millis,
    /// When it first opened after it last closed.
    opened_at: Millis,
    /// The probe's run: timer key and fence.
    probe: Option<(String, u64)>,
}

/// What the gate says of one claim.
pub(super) enum FlowGate {
    /// Hand it back (the namespace is paused) or park it under its key.
    HoldBack,
    /// Keep it claimed until then.
    Wait(Millis),
    /// Start it; the rate's slot (µs) if the key has a rate; whether it is
    /// the breaker's probe.
    Pass { slot_us: Option<u64>, probe: bool },
}

impl Gates {
    pub(super) fn phase(&self, flow: &str) -> Option<Phase> {
        self.breakers.get(flow).map(|b| b.phase)
    }

    /// Turns `flow`'s breaker half-open; answers its step.
    pub(super) fn half_open(&mut self, flow: &str) -> u32 {
        let b = self.breakers.entry(flow.to_owned()).or_default();
        b.phase = Phase::HalfOpen;
        b.step
    }

    /// Forgets `flow`'s breaker (closed, count 0, step 0).
    pub(super) fn reset(&mut self, flow: &str) {
        self.breakers.remove(flow);
    }

    /// The keys whose breaker is not closed with a count of 0.
    pub(super) fn listed_breakers(&self) -> impl Iterator<Item = &str> {
        let listed = |b: &&Breaker| b.phase != Phase::Closed || b.failures > 0;
        self.breakers
            .iter()
            .filter(move |(_, b)| listed(b))
            .map(|(k, _)| k.as_str())
    }

    /// The keys with permit entries (valid or not yet found invalid).
    pub(super) fn permit_keys(&self) -> impl Iterator<Item = &str> {
        self.permits.keys().map(String::as_str)
    }

    /// Drops the permit entry of `key`, if any.
    fn drop_permit(&mut self, key: &str) {
        let Some(flow) = self.holders.remove(key) else {
            return;
        };
        if let Some(held) = self.permits.get_mut(&flow) {
            held.remove(key);
            if held.is_empty() {
                self.permits.remove(&flow);
            }
        }
    }
}

impl FlowMarks {
    /// `key`'s entry in `flows`, with `in_flight` valid permits.
    pub(super) fn entry(&self, gates: &Gates, key: &str, in_flight: u32) -> FlowEntry {
        let b = gates.breakers.get(key).cloned().unwrap_or_default();
        let until = match b.phase {
            Phase::Closed => None,
            Phase::Open => Some(b.until),
            Phase::HalfOpen => self.wake.get(key).copied(),
        };
        FlowEntry {
            key: key.to_owned(),
            paused: self.paused.contains(key),
            parked: self.parked_of(key),
            limits: self.limits.get(key).copied(),
            in_flight,
            breaker: BreakerView {
                phase: b.phase,
                failures: b.failures,
                step: b.step,
                until,
            },
        }
    }
}

impl Tables<'_> {
    /// The gates, to change (copied once per group, only by a group that
    /// changes them).
    pub(super) fn gates(&mut self) -> &mut Gates {
        Arc::make_mut(&mut self.cursor.gates)
    }

    /// Whether `key`'s run with `fence` is running with its lease.
    fn runs(&self, key: &str, fence: u64) -> StoreResult<bool> {
        let r = self.held(key, fence, TimerState::Running)?;
        Ok(r.is_some_and(|r| r.lease_until > self.now))
    }

    /// The lease ends of `flow`'s valid permits; drops the entries whose
    /// run is no longer running with its fence.
    pub(super) fn valid_permits(&mut self, flow: &str) -> StoreResult<Vec<Millis>> {
        let Some(held) = self.cursor.gates.permits.get(flow) else {
            return Ok(Vec::new());
        };
        let held: Vec<(String, u64)> = held.iter().map(|(k, f)| (k.clone(), *f)).collect();
        let mut valid = Vec::with_capacity(held.len());
        for (key, fence) in held {
            match self.held(&key, fence, TimerState::Running)? {
                Some(r) if r.lease_until > self.now => valid.push(r.lease_until),
                // A renewal may still keep it: its run holds the fence.
                Some(_) => {}
                None => self.gates().drop_permit(&key),
            }
        }
        Ok(valid)
    }

    /// Steps 1 to 5 of the gate for a claim of `flow` (`""`: none).
    pub(super) fn flow_gate(&mut self, flow: &str) -> StoreResult<FlowGate> {
        let m = &self.cursor.flows;
        let pass = FlowGate::Pass {
            slot_us: None,
            probe: false,
        };
        let gates = &self.cursor.gates;
        if m.paused_all() {
            return Ok(FlowGate::HoldBack);
        }
        if flow.is_empty() || m.is_open() {
            return Ok(pass);
        }
        if m.paused.contains(flow) {
            return Ok(FlowGate::HoldBack);
        }
        let limits = m.limits_of(flow);
        let mut probe = false;
        if limits.breaker.is_some() {
            let b = gates.breakers.get(flow);
            match b.map(|b| (b.phase, b.probe.clone())) {
                Some((Phase::Open, _)) => return Ok(FlowGate::HoldBack),
                Some((Phase::HalfOpen, Some((key, fence)))) if self.runs(&key, fence)? => {
                    return Ok(FlowGate::HoldBack);
                }
                Some((Phase::HalfOpen, _)) => probe = true,
                Some((Phase::Closed, _)) | None => {}
            }
        }
        if let Some(p) = limits.parallelism {
            let entries = self.cursor.gates.permits.get(flow).map_or(0, BTreeMap::len);
            if entries >= p as usize {
                let held = self.valid_permits(flow)?;
                if held.len() >= p as usize {
                    return Ok(FlowGate::Wait(held.into_iter().min().unwrap_or(self.now)));
                }
            }
        }
        let mut slot_us = None;
        if let Some(r) = limits.rate {
            let now_us = self.now.saturating_mul(1000);
            let tat = self.cursor.gates.tat.get(flow).copied().unwrap_or(0);
            let slot = now_us.max(tat.saturating_sub(r.tolerance_us()));
            let horizon = now_us.saturating_add(RATE_HORIZON * 1000);
            if slot > horizon {
                return Ok(FlowGate::Wait((slot - RATE_HORIZON * 1000).div_ceil(1000)));
            }
            slot_us = Some(slot);
        }
        Ok(FlowGate::Pass { slot_us, probe })
    }

    /// Takes what a passed claim of `flow` takes, for the run `(key,
    /// fence)` just started: a permit, the slot, the probe. Answers the
    /// slot in ms if it is later than now.
    pub(super) fn take(
        &mut self,
        key: &str,
        fence: u64,
        flow: &str,
        slot_us: Option<u64>,
        probe: bool,
    ) -> Option<Millis> {
        let now = self.now;
        let limits = self.cursor.flows.limits_of(flow);
        let permit = limits.parallelism.is_some() && !flow.is_empty();
        let had = self.cursor.gates.holders.contains_key(key);
        if !(permit || had || probe || slot_us.is_some()) {
            return None;
        }
        let g = self.gates();
        g.drop_permit(key);
        if permit {
            g.holders.insert(key.to_owned(), flow.to_owned());
            let held = g.permits.entry(flow.to_owned()).or_default();
            held.insert(key.to_owned(), fence);
        }
        if probe {
            let b = g.breakers.entry(flow.to_owned()).or_default();
            b.probe = Some((key.to_owned(), fence));
        }
        let (Some(slot), Some(rate)) = (slot_us, limits.rate) else {
            return None;
        };
        let tat = g.tat.entry(flow.to_owned()).or_insert(0);
        *tat = (*tat)
            .max(now.saturating_mul(1000))
            .saturating_add(rate.interval_us());
        Some(slot.div_ceil(1000)).filter(|&at| at > now)
    }

    /// A lease taken back or a finish of `key`'s run: its permit, if it
    /// held one, is back.
    pub(super) fn run_ended(&mut self, key: &str) {
        if self.cursor.gates.holders.contains_key(key) {
            self.gates().drop_permit(key);
        }
    }

    /// A finish the store accepts, of the run `(key, fence)` under `flow`:
    /// the key's breaker learns how it went.
    pub(super) fn flow_finished(&mut self, key: &str, fence: u64, flow: &str, class: FlowClass) {
        let Some(limits) = self.cursor.flows.limits_of(flow).breaker else {
            return;
        };
        if flow.is_empty() {
            return;
        }
        let now = self.now;
        let b = self.gates().breakers.entry(flow.to_owned()).or_default();
        let is_probe = b
            .probe
            .as_ref()
            .is_some_and(|(k, f)| k == key && *f == fence);
        let retry_after = match (class, b.phase) {
            (FlowClass::Success, Phase::Closed) => {
                b.failures = 0;
                return;
            }
            (FlowClass::Success, Phase::HalfOpen) if is_probe => {
                *b = Breaker::default();
                self.marks().wake.insert(flow.to_owned(), now);
                return;
            }
            (FlowClass::Failure { retry_after }, Phase::Closed) => {
                b.failures = b.failures.saturating_add(1);
                if b.failures < limits.failures {
                    return;
                }
                b.opened_at = now;
                b.step = 0;
                retry_after
            }
            (FlowClass::Failure { retry_after }, Phase::HalfOpen) if is_probe => {
                b.step = b.step.saturating_add(1);
                retry_after
            }
            _ => return,
        };
        b.phase = Phase::Open;
        b.probe = None;
        b.until = later(now, limits.cooldown_at(b.step, retry_after));
        let until = b.until;
        let stuck_for = now.saturating_sub(b.opened_at);
        let m = self.marks();
        if limits.pause_after.is_some_and(|p| stuck_for >= p) {
            m.paused.insert(flow.to_owned());
            m.wake.remove(flow);
            self.save_mark(flow);
        } else {
            m.wake.insert(flow.to_owned(), until);
        }
    }
}
