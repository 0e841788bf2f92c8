//! The model's flow control: the rules of `store/flow_state.rs` on plain
//! maps, written out on their own so that the differential tests compare
//! them with each store's.
//!
//! Node state: none (the reference model of a store).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{State, Timer};
use crate::TimerState;
use crate::store::flow_state::{
    BreakerView, FlowClass, FlowEntry, FlowOutcome, FlowsState, Limits, Phase, RATE_HORIZON,
    UNPARK_BATCH, WAKE_SPAN,
};
use crate::store::{Millis, later};

/// The model's flow-control state.
#[derive(Debug, Default)]
pub(super) struct Flows {
    pub(super) paused_all: bool,
    paused: BTreeSet<String>,
    /// When each key's wake-up comes (`flow_state.rs`, "Wake-ups").
    wake: BTreeMap<String, Millis>,
    limits: BTreeMap<String, Limits>,
    defaults: Option<Limits>,
    /// Each rate-limited key's theoretical arrival time, µs.
    tat: HashMap<String, u64>,
    breakers: BTreeMap<String, Breaker>,
}

#[derive(Debug, Clone, Default)]
struct Breaker {
    phase: Phase,
    failures: u32,
    step: u32,
    /// Open: when it turns half-open.
    until: Millis,
    /// When it first opened after it last closed.
    opened_at: Millis,
    /// The probe's run: key and fence.
    probe: Option<(String, u64)>,
}

/// What the gate says of one claim.
pub(super) enum Gate {
    /// Hand it back: the namespace is paused.
    Release,
    /// Park it under its key.
    Park,
    /// Keep it claimed until then.
    Wait(Millis),
    /// Start it; the rate's slot (µs) if the key has a rate; whether it is
    /// the breaker's probe.
    Pass { slot_us: Option<u64>, probe: bool },
}

/// A permit is valid while its run is running with its lease.
fn holds_permit(t: &Timer, flow: &str, now: Millis) -> bool {
    t.state == TimerState::Running && t.permit.as_deref() == Some(flow) && t.lease_until > now
}

impl State {
    fn limits_of(&self, flow: &str) -> Limits {
        let own = self.flows.limits.get(flow).copied();
        own.or(self.flows.defaults).unwrap_or_default()
    }

    fn in_flight(&self, flow: &str, now: Millis) -> impl Iterator<Item = &Timer> {
        let flow = flow.to_owned();
        self.timers
            .values()
            .filter(move |t| holds_permit(t, &flow, now))
    }

    fn probe_valid(&self, flow: &str, now: Millis) -> bool {
        let probe = self.flows.breakers.get(flow).and_then(|b| b.probe.as_ref());
        probe.is_some_and(|(key, fence)| {
            self.timers.get(key).is_some_and(|t| {
                t.state == TimerState::Running && t.fence == *fence && t.lease_until > now
            })
        })
    }

    /// Steps 1 to 5 of the gate for a claim of `flow` (`""`: none).
    pub(super) fn gate(&self, flow: &str, now: Millis) -> Gate {
        if self.flows.paused_all {
            return Gate::Release;
        }
        if flow.is_empty() {
            return Gate::Pass {
                slot_us: None,
                probe: false,
            };
        }
        if self.flows.paused.contains(flow) {
            return Gate::Park;
        }
        let limits = self.limits_of(flow);
        let mut probe = false;
        if limits.breaker.is_some() {
            match self.flows.breakers.get(flow).map(|b| b.phase) {
                Some(Phase::Open) => return Gate::Park,
                Some(Phase::HalfOpen) if self.probe_valid(flow, now) => return Gate::Park,
                Some(Phase::HalfOpen) => probe = true,
                Some(Phase::Closed) | None => {}
            }
        }
        if let Some(p) = limits.parallelism {
            let held: Vec<Millis> = self.in_flight(flow, now).map(|t| t.lease_until).collect();
            if held.len() >= p as usize {
                return Gate::Wait(held.into_iter().min().unwrap_or(now));
            }
        }
        let mut slot_us = None;
        if let Some(r) = limits.rate {
            let now_us = now.saturating_mul(1000);
            let tat = self.flows.tat.get(flow).copied().unwrap_or(0);
            let slot = now_us.max(tat.saturating_sub(r.tolerance_us()));
            let horizon = now_us.saturating_add(RATE_HORIZON * 1000);
            if slot > horizon {
                return Gate::Wait((slot - RATE_HORIZON * 1000).div_ceil(1000));
            }
            slot_us = Some(slot);
        }
        Gate::Pass { slot_us, probe }
    }

    /// Takes what a passed claim of `flow` takes: a permit, the slot, the
    /// probe. Answers the slot in ms if it is later than now.
    pub(super) fn take(
        &mut self,
        key: &str,
        flow: &str,
        slot_us: Option<u64>,
        probe: bool,
        now: Millis,
    ) -> Option<Millis> {
        let limits = self.limits_of(flow);
        let t = self.timers.get_mut(key).expect("a started timer");
        t.permit = limits
            .parallelism
            .filter(|_| !flow.is_empty())
            .map(|_| flow.to_owned());
        if probe {
            let fence = t.fence;
            let b = self.flows.breakers.entry(flow.to_owned()).or_default();
            b.probe = Some((key.to_owned(), fence));
        }
        let (Some(slot), Some(rate)) = (slot_us, limits.rate) else {
            return None;
        };
        let now_us = now.saturating_mul(1000);
        let tat = self.flows.tat.entry(flow.to_owned()).or_insert(0);
        *tat = (*tat).max(now_us).saturating_add(rate.interval_us());
        Some(slot.div_ceil(1000)).filter(|&at| at > now)
    }

    /// A finish the store accepted, of the run `(key, fence)`: its key's
    /// breaker learns how it went.
    pub(super) fn flow_finished(
        &mut self,
        key: &str,
        fence: u64,
        out: &FlowOutcome<'_>,
        now: Millis,
    ) {
        let Some(limits) = self.limits_of(out.flow).breaker else {
            return;
        };
        if out.flow.is_empty() {
            return;
        }
        let b = self.flows.breakers.entry(out.flow.to_owned()).or_default();
        let is_probe = b
            .probe
            .as_ref()
            .is_some_and(|(k, f)| k == key && *f == fence);
        let open_at = match (out.class, b.phase) {
            (FlowClass::Success, Phase::Closed) => {
                b.failures = 0;
                return;
            }
            (FlowClass::Success, Phase::HalfOpen) if is_probe => {
                *b = Breaker::default();
                self.flows.wake.insert(out.flow.to_owned(), now);
                return;
            }
            (FlowClass::Failure { retry_after }, Phase::Closed) => {
                b.failures += 1;
                if b.failures < limits.failures {
                    return;
                }
                b.opened_at = now;
                b.step = 0;
                retry_after
            }
            (FlowClass::Failure { retry_after }, Phase::HalfOpen) if is_probe => {
                b.step += 1;
                retry_after
            }
            _ => return,
        };
        b.phase = Phase::Open;
        b.probe = None;
        b.until = later(now, limits.cooldown_at(b.step, open_at));
        let until = b.until;
        let stuck_for = now - b.opened_at;
        if limits.pause_after.is_some_and(|p| stuck_for >= p) {
            self.flows.paused.insert(out.flow.to_owned());
            self.flows.wake.remove(out.flow);
        } else {
            self.flows.wake.insert(out.flow.to_owned(), until);
        }
    }

    /// Makes up to `limit` of `flow`'s parked timers pending, earliest
    /// `(due, key)` first; answers how many it moved.
    pub(super) fn unpark(&mut self, flow: &str, limit: usize) -> usize {
        let parked: Vec<String> = self
            .by_due(TimerState::Parked)
            .into_iter()
            .filter(|(_, k)| self.timers[*k].parked.as_deref() == Some(flow))
            .take(limit)
            .map(|(_, k)| k.to_owned())
            .collect();
        for key in &parked {
            let t = self.timers.get_mut(key).expect("listed above");
            t.state = TimerState::Pending;
            t.parked = None;
        }
        parked.len()
    }

    fn parked_count(&self, flow: &str) -> u64 {
        let of_flow = |t: &&Timer| t.parked.as_deref() == Some(flow);
        self.timers.values().filter(of_flow).count() as u64
    }

    /// A claim's first step after taking leases back: the wake-ups that
    /// have come, with a budget of [`UNPARK_BATCH`] timers made pending.
    pub(super) fn wake_ups(&mut self, now: Millis) {
        let mut budget = UNPARK_BATCH;
        let due: Vec<String> = self
            .flows
            .wake
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for flow in due {
            if budget == 0 {
                break;
            }
            if self.flows.paused.contains(&flow) {
                self.flows.wake.remove(&flow);
                continue;
            }
            let limits = self.limits_of(&flow);
            let phase = self.flows.breakers.get(&flow).map(|b| b.phase);
            if let (Some(b), Some(Phase::Open | Phase::HalfOpen)) = (limits.breaker, phase) {
                let br = self.flows.breakers.get_mut(&flow).expect("read above");
                br.phase = Phase::HalfOpen;
                let again = later(now, b.cooldown_at(br.step, 0));
                budget -= self.unpark(&flow, 1);
                if self.parked_count(&flow) > 0 {
                    self.flows.wake.insert(flow.clone(), again);
                } else {
                    self.flows.wake.remove(&flow);
                }
                continue;
            }
            let allowance = limits.allowance();
            let most = allowance.map_or(budget, |a| {
                budget.min(usize::try_from(a).unwrap_or(usize::MAX))
            });
            budget -= self.unpark(&flow, most);
            if self.parked_count(&flow) == 0 {
                self.flows.wake.remove(&flow);
            } else if allowance.is_some() {
                self.flows.wake.insert(flow.clone(), later(now, WAKE_SPAN));
            }
        }
    }

    pub(super) fn set_paused(&mut self, flow: Option<&str>, paused: bool, now: Millis) -> bool {
        let Some(flow) = flow else {
            let changed = self.flows.paused_all != paused;
            self.flows.paused_all = paused;
            return changed;
        };
        if paused {
            self.flows.wake.remove(flow);
            return self.flows.paused.insert(flow.to_owned());
        }
        if !self.flows.paused.remove(flow) {
            return false;
        }
        self.flows.breakers.remove(flow);
        self.unpark(flow, UNPARK_BATCH);
        if self.parked_count(flow) > 0 {
            self.flows.wake.insert(flow.to_owned(), now);
        }
        true
    }

    /// Parks a claim of `flow` handed back by its node (`Store::defer`).
    pub(super) fn defer(&mut self, key: &str, fence: u64, flow: &str, now: Millis) -> bool {
        let Some(t) = self
            .timers
            .get_mut(key)
            .filter(|t| t.fence == fence && t.state == TimerState::Claimed)
        else {
            return false;
        };
        t.state = TimerState::Parked;
        t.parked = Some(flow.to_owned());
        let wake = later(now, WAKE_SPAN);
        self.flows.wake.entry(flow.to_owned()).or_insert(wake);
        true
    }

    pub(super) fn set_limits(&mut self, flow: Option<&str>, limits: Option<&Limits>) {
        match (flow, limits) {
            (None, l) => self.flows.defaults = l.copied(),
            (Some(f), Some(l)) => {
                self.flows.limits.insert(f.to_owned(), *l);
            }
            (Some(f), None) => {
                self.flows.limits.remove(f);
            }
        }
    }

    pub(super) fn flows_state(&self, now: Millis) -> FlowsState {
        let mut keys: BTreeSet<&str> = self.flows.paused.iter().map(String::as_str).collect();
        keys.extend(self.timers.values().filter_map(|t| t.parked.as_deref()));
        keys.extend(self.flows.limits.keys().map(String::as_str));
        keys.extend(
            self.timers
                .values()
                .filter(|t| t.permit.as_deref().is_some_and(|f| holds_permit(t, f, now)))
                .filter_map(|t| t.permit.as_deref()),
        );
        keys.extend(
            self.flows
                .breakers
                .iter()
                .filter(|(_, b)| b.phase != Phase::Closed || b.failures > 0)
                .map(|(k, _)| k.as_str()),
        );
        FlowsState {
            paused: self.flows.paused_all,
            defaults: self.flows.defaults,
            keys: keys.into_iter().map(|k| self.entry(k, now)).collect(),
        }
    }

    fn entry(&self, key: &str, now: Millis) -> FlowEntry {
        let b = self.flows.breakers.get(key).cloned().unwrap_or_default();
        let until = match b.phase {
            Phase::Closed => None,
            Phase::Open => Some(b.until),
            Phase::HalfOpen => self.flows.wake.get(key).copied(),
        };
        FlowEntry {
            key: key.to_owned(),
            paused: self.flows.paused.contains(key),
            parked: self.parked_count(key),
            limits: self.flows.limits.get(key).copied(),
            in_flight: self.in_flight(key, now).count() as u32,
            breaker: BreakerView {
                phase: b.phase,
                failures: b.failures,
                step: b.step,
                until,
            },
        }
    }
}
