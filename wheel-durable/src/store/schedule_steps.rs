//! The schedule rules of the store state machine, written over
//! [`RunTable`]: what a store does to a schedule record and its runs in
//! `start`, `finish`, `cancel` and each [`SchedOp`], inside that
//! operation's atomic step. The embedded store implements [`RunTable`]
//! over its tables; the Redis store's scripts state the same rules in Lua,
//! and the model states them once more on its plain maps
//! (`model_schedules.rs`), so that the differential tests compare three
//! statements of them.
//!
//! Rules:
//! - A run whose schedule is gone does not start: its timer is removed
//!   (finished as stale). A chain run of a paused schedule likewise,
//!   counted as skipped (paused).
//! - The chain run (`key == next`) advances the chain in the same step as
//!   its start, with the node's [`Advance`], only if that was planned from
//!   the record's generation; then the runs it lists are added if absent
//!   and the record moves on. Without a matching plan the run still starts
//!   and the record is marked unplanned, for a node to re-plan.
//! - Overlap, for every run of the schedule: while the run that last
//!   started still has a timer (running, or pending a retry), `Skip`
//!   removes the new run (counted), `BufferOne` parks it (pending, due
//!   when that run's lease ends) unless one is parked already (then it is
//!   skipped), `Allow` starts it.
//! - When the running run finishes (done or dead), the parked run becomes
//!   due now; the record keeps the finished run's key as its last run.
//! - Cancelling the chain's pending run marks the record unplanned.
//!
//! Node state: none (the store's own step, on its writer or in its script).

use super::schedules::{SchedAnswer, SchedOp, SchedRecord, overlap_of, owner, trigger_key};
use super::{Finish, Millis, StoreResult};
use crate::TimerState;
use crate::schedule::Overlap;
use crate::schedule::chain::Advance;

/// What the schedule rules need of a store's tables, inside one atomic
/// step.
pub(crate) trait RunTable {
    /// The store's clock for this step.
    fn clock(&self) -> Millis;
    fn schedule(&self, id: &str) -> StoreResult<Option<SchedRecord>>;
    /// Writes the record (and its entry in the unplanned index).
    fn put_schedule(&mut self, id: &str, r: &SchedRecord) -> StoreResult<()>;
    fn drop_schedule(&mut self, id: &str) -> StoreResult<()>;
    /// A timer's state with its due time and lease end, if it exists.
    fn run_state(&self, key: &str) -> StoreResult<Option<(TimerState, Millis, Millis)>>;
    /// Adds a pending run unless the key is taken (by a timer or a dead
    /// letter); true if added.
    fn add_run(&mut self, key: &str, due: Millis, payload: &[u8]) -> StoreResult<bool>;
    /// Removes a timer whatever its state.
    fn remove_run(&mut self, key: &str) -> StoreResult<()>;
    /// Makes a claimed or pending timer pending at `due` (its fence and
    /// attempts kept).
    fn set_due(&mut self, key: &str, due: Millis) -> StoreResult<()>;
}

/// Removes a run unless it started; true if it removed one.
fn cancel_unstarted(t: &mut impl RunTable, key: Option<&str>) -> StoreResult<bool> {
    if let Some(k) = key
        && let Some((state, _, _)) = t.run_state(k)?
        && state != TimerState::Running
    {
        t.remove_run(k)?;
        return Ok(true);
    }
    Ok(false)
}

/// Applies a planned step to the record: its runs added if absent.
fn apply(t: &mut impl RunTable, r: &mut SchedRecord, a: &Advance) -> StoreResult<()> {
    for run in &a.create {
        t.add_run(&run.key, run.due, &r.payload)?;
    }
    if let Some(p) = &a.pending {
        t.add_run(&p.key, p.due, &r.payload)?;
    }
    r.next = a.pending.as_ref().map(|p| p.key.clone());
    r.last_nominal = a.last_nominal;
    r.runs_created = a.runs_created;
    r.skipped_missed = r.skipped_missed.saturating_add(a.skipped);
    r.unplanned = false;
    Ok(())
}

/// How `start` proceeds with a schedule's run that is claimed with the
/// right fence and due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Start it.
    Run,
    /// Not started: removed or parked by the rules (answered as stale).
    Refused,
}

/// The schedule rules of `start` for `key` (any key: one that is not a
/// run's passes).
pub(crate) fn start_gate(
    t: &mut impl RunTable,
    key: &str,
    advance: Option<&Advance>,
) -> StoreResult<Gate> {
    let Some((id, chain_key, _)) = owner(key) else {
        return Ok(Gate::Run);
    };
    let Some(mut r) = t.schedule(id)? else {
        t.remove_run(key)?;
        return Ok(Gate::Refused);
    };
    if chain_key && r.paused {
        t.remove_run(key)?;
        r.skipped_paused = r.skipped_paused.saturating_add(1);
        t.put_schedule(id, &r)?;
        return Ok(Gate::Refused);
    }
    if chain_key && r.next.as_deref() == Some(key) {
        match advance.filter(|a| a.generation == r.generation) {
            Some(a) => {
                apply(t, &mut r, a)?;
                if !a.run_this {
                    t.remove_run(key)?;
                    t.put_schedule(id, &r)?;
                    return Ok(Gate::Refused);
                }
            }
            None => {
                r.next = None;
                r.unplanned = true;
            }
        }
    }
    let gate = overlap_gate(t, &mut r, key)?;
    t.put_schedule(id, &r)?;
    Ok(gate)
}

/// The overlap rule for `key` about to start.
fn overlap_gate(t: &mut impl RunTable, r: &mut SchedRecord, key: &str) -> StoreResult<Gate> {
    let busy = match r.running.as_deref().filter(|k| *k != key) {
        Some(k) => t.run_state(k)?,
        None => None,
    };
    if let Some((state, due, lease_until)) = busy {
        let parked = match r.buffered.as_deref().filter(|b| *b != key) {
            Some(b) => t.run_state(b)?.is_some(),
            None => false,
        };
        match overlap_of(r.overlap) {
            Overlap::Allow => {}
            Overlap::BufferOne if !parked => {
                let until = if state == TimerState::Pending {
                    due
                } else {
                    lease_until
                };
                t.set_due(key, until.max(t.clock().saturating_add(1)))?;
                r.buffered = Some(key.to_owned());
                return Ok(Gate::Refused);
            }
            Overlap::Skip | Overlap::BufferOne => {
                t.remove_run(key)?;
                r.skipped_overlap = r.skipped_overlap.saturating_add(1);
                return Ok(Gate::Refused);
            }
        }
    }
    r.running = Some(key.to_owned());
    if r.buffered.as_deref() == Some(key) {
        r.buffered = None;
    }
    Ok(Gate::Run)
}

/// The schedule rules of a recorded finish of `key`.
pub(crate) fn on_finish(t: &mut impl RunTable, key: &str, how: &Finish) -> StoreResult<()> {
    if matches!(how, Finish::Retry { .. }) {
        return Ok(());
    }
    let Some((id, _, _)) = owner(key) else {
        return Ok(());
    };
    let Some(r) = t.schedule(id)? else {
        return Ok(());
    };
    // The record keeps the finished run's key: it is the schedule's last
    // run (its outcome is its timer's, or its dead letter's), and a key
    // without a timer makes no run busy.
    if r.running.as_deref() != Some(key) {
        return Ok(());
    }
    if let Some(b) = r.buffered.as_deref()
        && let Some((TimerState::Pending, _, _)) = t.run_state(b)?
    {
        t.set_due(b, t.clock())?;
    }
    Ok(())
}

/// The schedule rules of a cancel that removed `key`.
pub(crate) fn on_cancel(t: &mut impl RunTable, key: &str) -> StoreResult<()> {
    let Some((id, true, _)) = owner(key) else {
        return Ok(());
    };
    let Some(mut r) = t.schedule(id)? else {
        return Ok(());
    };
    if r.next.as_deref() == Some(key) {
        r.next = None;
        r.unplanned = true;
        t.put_schedule(id, &r)?;
    }
    Ok(())
}

/// One [`SchedOp`] on schedule `id`.
pub(crate) fn write(t: &mut impl RunTable, id: &str, op: &SchedOp) -> StoreResult<SchedAnswer> {
    let current = t.schedule(id)?;
    let Some(mut r) = current else {
        return match op {
            SchedOp::Upsert { expect: None, .. } => upsert(t, id, None, op),
            SchedOp::Upsert { .. } => Ok(SchedAnswer::Conflict),
            _ => Ok(SchedAnswer::NotFound),
        };
    };
    match op {
        SchedOp::Upsert { expect, .. } if *expect != Some(r.generation) => {
            Ok(SchedAnswer::Conflict)
        }
        SchedOp::Upsert { .. } => upsert(t, id, Some(r), op),
        SchedOp::Pause if r.paused => Ok(SchedAnswer::Unchanged),
        SchedOp::Pause => {
            // The cancelled pending run is the first slot the pause skips.
            if cancel_unstarted(t, r.next.as_deref())? {
                r.skipped_paused = r.skipped_paused.saturating_add(1);
            }
            r.next = None;
            r.paused = true;
            r.unplanned = false;
            r.generation += 1;
            t.put_schedule(id, &r)?;
            Ok(SchedAnswer::Changed)
        }
        SchedOp::Resume(_) if !r.paused => Ok(SchedAnswer::Unchanged),
        SchedOp::Replan(_) if r.paused || !r.unplanned => Ok(SchedAnswer::Unchanged),
        SchedOp::Resume(a) | SchedOp::Replan(a) if a.generation != r.generation => {
            Ok(SchedAnswer::Conflict)
        }
        SchedOp::Resume(a) | SchedOp::Replan(a) => {
            let skipped = r.skipped_missed;
            apply(t, &mut r, a)?;
            if matches!(op, SchedOp::Resume(_)) {
                // A resume's skipped slots were missed for the pause.
                r.skipped_paused = r.skipped_paused.saturating_add(r.skipped_missed - skipped);
                r.skipped_missed = skipped;
                r.paused = false;
            }
            r.generation += 1;
            t.put_schedule(id, &r)?;
            Ok(SchedAnswer::Changed)
        }
        SchedOp::Delete => {
            cancel_unstarted(t, r.next.as_deref())?;
            cancel_unstarted(t, r.buffered.as_deref())?;
            t.drop_schedule(id)?;
            Ok(SchedAnswer::Changed)
        }
        SchedOp::Trigger => {
            let now = t.clock();
            let key = trigger_key(id, now);
            t.add_run(&key, now, &r.payload)?;
            Ok(SchedAnswer::Triggered(key))
        }
    }
}

fn upsert(
    t: &mut impl RunTable,
    id: &str,
    current: Option<SchedRecord>,
    op: &SchedOp,
) -> StoreResult<SchedAnswer> {
    let SchedOp::Upsert {
        definition,
        overlap,
        payload,
        first,
        ..
    } = op
    else {
        return Ok(SchedAnswer::Unchanged);
    };
    let created = current.is_none();
    let mut r = current.unwrap_or_default();
    if !created && r.definition == *definition && r.payload == *payload {
        return Ok(SchedAnswer::Unchanged);
    }
    cancel_unstarted(t, r.next.as_deref())?;
    r.generation += 1;
    r.definition.clone_from(definition);
    r.overlap = *overlap;
    r.payload.clone_from(payload);
    r.runs_created = 0;
    r.last_nominal = None;
    r.next = None;
    r.unplanned = false;
    if !r.paused
        && let Some(f) = first
    {
        r.runs_created = 1;
        r.last_nominal = Some(f.nominal);
        if t.add_run(&f.key, f.due, payload)? {
            r.next = Some(f.key.clone());
        } else {
            // The slot's run exists and started already: the chain goes on
            // after it, planned by a node.
            r.unplanned = true;
        }
    }
    t.put_schedule(id, &r)?;
    Ok(if created {
        SchedAnswer::Created
    } else {
        SchedAnswer::Changed
    })
}
