//! The model's schedule rules, stated once more on its plain maps rather
//! than through the stores' shared [`RunTable`](super::schedule_steps::RunTable)
//! code, so that the differential tests compare two statements of the
//! rules (and a third, Redis's Lua). The rules are the module docs of
//! `store/schedule_steps.rs`.
//!
//! Node state: none (the reference model of a store).

use super::{SchedRecord, State, Timer};
use crate::TimerState;
use crate::schedule::Overlap;
use crate::schedule::chain::Advance;
use crate::store::schedules::{SchedAnswer, SchedOp, overlap_of, owner, trigger_key};
use crate::store::{Finish, Millis};

impl State {
    /// Adds a pending run unless its key holds a timer or a dead letter.
    fn add_run(&mut self, key: &str, due: Millis, payload: &[u8]) -> bool {
        if self.timers.contains_key(key) || self.dead.contains_key(key) {
            return false;
        }
        self.pending(key, due, payload.to_vec(), 0);
        true
    }

    /// Removes a run that has not started; true if it did.
    fn cancel_unstarted(&mut self, key: Option<&str>) -> bool {
        let Some(key) = key else { return false };
        match self.timers.get(key) {
            Some(t) if t.state != TimerState::Running => {
                self.timers.remove(key);
                true
            }
            _ => false,
        }
    }

    fn apply(&mut self, r: &mut SchedRecord, a: &Advance) {
        for run in a.create.iter().chain(&a.pending) {
            self.add_run(&run.key, run.due, &r.payload);
        }
        r.next = a.pending.as_ref().map(|p| p.key.clone());
        r.last_nominal = a.last_nominal;
        r.runs_created = a.runs_created;
        r.skipped_missed += a.skipped;
        r.unplanned = false;
    }

    /// Whether the claimed, due run `key` starts (the rules may remove it,
    /// park it, or advance its schedule's chain).
    pub(super) fn schedule_allows(
        &mut self,
        key: &str,
        advance: Option<&Advance>,
        now: Millis,
    ) -> bool {
        let Some((id, chain, _)) = owner(key) else {
            return true;
        };
        let Some(mut r) = self.schedules.get(id).cloned() else {
            self.timers.remove(key);
            return false;
        };
        let mut allowed = true;
        if chain && r.paused {
            self.timers.remove(key);
            r.skipped_paused += 1;
            allowed = false;
        } else if chain && r.next.as_deref() == Some(key) {
            match advance {
                Some(a) if a.generation == r.generation => {
                    self.apply(&mut r, a);
                    if !a.run_this {
                        self.timers.remove(key);
                        allowed = false;
                    }
                }
                _ => {
                    r.next = None;
                    r.unplanned = true;
                }
            }
        }
        if allowed {
            allowed = self.overlap_allows(&mut r, key, now);
        }
        self.schedules.insert(id.to_owned(), r);
        allowed
    }

    fn overlap_allows(&mut self, r: &mut SchedRecord, key: &str, now: Millis) -> bool {
        let other = |k: &Option<String>| k.clone().filter(|k| k != key);
        let busy: Option<Timer> = other(&r.running).and_then(|k| self.timers.get(&k).cloned());
        let parked = other(&r.buffered).is_some_and(|b| self.timers.contains_key(&b));
        if let Some(busy) = busy {
            match overlap_of(r.overlap) {
                Overlap::Allow => {}
                Overlap::BufferOne if !parked => {
                    let until = match busy.state {
                        TimerState::Pending => busy.due,
                        _ => busy.lease_until,
                    };
                    let t = self.timers.get_mut(key).expect("the run being started");
                    t.state = TimerState::Pending;
                    t.due = until.max(now + 1);
                    r.buffered = Some(key.to_owned());
                    return false;
                }
                Overlap::Skip | Overlap::BufferOne => {
                    self.timers.remove(key);
                    r.skipped_overlap += 1;
                    return false;
                }
            }
        }
        r.running = Some(key.to_owned());
        if r.buffered.as_deref() == Some(key) {
            r.buffered = None;
        }
        true
    }

    /// After `key` finished as `how`: a parked run comes due when the run
    /// it waited for is done or dead.
    pub(super) fn schedule_finished(&mut self, key: &str, how: &Finish, now: Millis) {
        if matches!(how, Finish::Retry { .. }) {
            return;
        }
        let Some((id, _, _)) = owner(key) else { return };
        let Some(r) = self.schedules.get(id) else {
            return;
        };
        // The finished run stays the record's last run.
        if r.running.as_deref() != Some(key) {
            return;
        }
        if let Some(b) = &r.buffered
            && let Some(t) = self.timers.get_mut(b)
            && t.state == TimerState::Pending
        {
            t.due = now;
        }
    }

    /// After a cancel removed `key`: a chain whose pending run it was is
    /// unplanned.
    pub(super) fn schedule_cancelled(&mut self, key: &str) {
        if let Some((id, true, _)) = owner(key)
            && let Some(r) = self.schedules.get_mut(id)
            && r.next.as_deref() == Some(key)
        {
            r.next = None;
            r.unplanned = true;
        }
    }

    /// One schedule change.
    pub(super) fn schedule_write(&mut self, id: &str, op: &SchedOp, now: Millis) -> SchedAnswer {
        let Some(mut r) = self.schedules.get(id).cloned() else {
            return match op {
                SchedOp::Upsert { expect: None, .. } => self.upsert(id, SchedRecord::default(), op),
                SchedOp::Upsert { .. } => SchedAnswer::Conflict,
                _ => SchedAnswer::NotFound,
            };
        };
        let answer = match op {
            SchedOp::Upsert { expect, .. } if *expect != Some(r.generation) => {
                SchedAnswer::Conflict
            }
            SchedOp::Upsert { .. } => return self.upsert(id, r, op),
            SchedOp::Pause if r.paused => SchedAnswer::Unchanged,
            SchedOp::Pause => {
                if self.cancel_unstarted(r.next.as_deref()) {
                    r.skipped_paused += 1;
                }
                (r.next, r.paused, r.unplanned) = (None, true, false);
                r.generation += 1;
                SchedAnswer::Changed
            }
            SchedOp::Resume(_) if !r.paused => SchedAnswer::Unchanged,
            SchedOp::Replan(_) if r.paused || !r.unplanned => SchedAnswer::Unchanged,
            SchedOp::Resume(a) | SchedOp::Replan(a) if a.generation != r.generation => {
                SchedAnswer::Conflict
            }
            SchedOp::Resume(a) => {
                let missed = r.skipped_missed;
                self.apply(&mut r, a);
                r.skipped_paused += r.skipped_missed - missed;
                r.skipped_missed = missed;
                r.paused = false;
                r.generation += 1;
                SchedAnswer::Changed
            }
            SchedOp::Replan(a) => {
                self.apply(&mut r, a);
                r.generation += 1;
                SchedAnswer::Changed
            }
            SchedOp::Delete => {
                self.cancel_unstarted(r.next.as_deref());
                self.cancel_unstarted(r.buffered.as_deref());
                self.schedules.remove(id);
                return SchedAnswer::Changed;
            }
            SchedOp::Trigger => {
                let key = trigger_key(id, now);
                self.add_run(&key, now, &r.payload);
                return SchedAnswer::Triggered(key);
            }
        };
        self.schedules.insert(id.to_owned(), r);
        answer
    }

    fn upsert(&mut self, id: &str, mut r: SchedRecord, op: &SchedOp) -> SchedAnswer {
        let SchedOp::Upsert {
            definition,
            overlap,
            payload,
            first,
            ..
        } = op
        else {
            return SchedAnswer::Unchanged;
        };
        let created = r.generation == 0;
        if !created && r.definition == *definition && r.payload == *payload {
            return SchedAnswer::Unchanged;
        }
        self.cancel_unstarted(r.next.as_deref());
        r.generation += 1;
        (r.definition, r.overlap, r.payload) = (definition.clone(), *overlap, payload.clone());
        (r.runs_created, r.last_nominal, r.next, r.unplanned) = (0, None, None, false);
        if let Some(f) = first.as_ref().filter(|_| !r.paused) {
            r.runs_created = 1;
            r.last_nominal = Some(f.nominal);
            if self.add_run(&f.key, f.due, payload) {
                r.next = Some(f.key.clone());
            } else {
                r.unplanned = true;
            }
        }
        self.schedules.insert(id.to_owned(), r);
        if created {
            SchedAnswer::Created
        } else {
            SchedAnswer::Changed
        }
    }
}
