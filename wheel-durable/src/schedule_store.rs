//! The node's side of a schedule's chain: reading records, planning each
//! step with [`chain`] on the store's clock, and sending it to the store,
//! which applies it only if the record is still the one planned from
//! (its generation). Used by the starter (the step that goes with a
//! chain run's start), the claimer (re-planning unplanned chains) and the
//! library calls that plan (upsert, resume).
//!
//! A conflict means another caller changed the record in between: the
//! caller reads it again and plans again, a bounded number of times.
//!
//! Node state: none (functions over the store).

use crate::schedule::chain::{self, Advance};
use crate::schedule::{Schedule, SpecError};
use crate::store::schedules::{SchedAnswer, SchedOp, SchedRecord, overlap_byte, owner};
use crate::store::{Store, StoreResult};
use crate::{DurableError, ErrorDetail};

/// How many times a planned change is planned again after a conflict.
const MAX_CONFLICTS: usize = 64;

/// The definition of a stored record, or the store's corruption error.
pub(crate) fn definition(id: &str, r: &SchedRecord) -> Result<Schedule, DurableError> {
    Schedule::decode(&r.definition).map_err(|e| undecodable(id, &e))
}

fn undecodable(id: &str, e: &SpecError) -> DurableError {
    DurableError::Corrupt(ErrorDetail::new(format!(
        "schedule {id:?}: the stored definition does not decode: {e}"
    )))
}

/// The chain step for each claimed key that is its schedule's pending run
/// (planned from the records [`Store::schedules_to_start`] gives)
/// (one entry per key, `None` for the others). A definition that does not
/// decode plans nothing: the run starts and its record is marked
/// unplanned, and the error is logged.
pub(crate) fn advances(store: &dyn Store, keys: &[&str]) -> StoreResult<Vec<Option<Advance>>> {
    let runs: Vec<(&str, &str)> = keys
        .iter()
        .filter_map(|k| owner(k).filter(|o| o.1).map(|o| (*k, o.0)))
        .collect();
    if runs.is_empty() {
        return Ok(Vec::new());
    }
    let (now, records) = store.schedules_to_start(&runs)?;
    let mut records = runs.iter().zip(records);
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let Some((id, true, nominal)) = owner(key) else {
            out.push(None);
            continue;
        };
        let record = records.next().and_then(|(_, r)| r);
        let step = record
            .filter(|r| r.next.as_deref() == Some(*key) && !r.paused)
            .and_then(|r| match definition(id, &r) {
                Ok(s) => Some(chain::advance(
                    id,
                    &s,
                    r.generation,
                    nominal,
                    r.runs_created,
                    now,
                )),
                Err(e) => {
                    tracing::error!(schedule = ?id, error = %e, "schedule not advanced");
                    None
                }
            });
        out.push(step);
    }
    Ok(out)
}

/// Re-plans up to `limit` unplanned chains; how many it re-planned.
pub(crate) fn replan_unplanned(store: &dyn Store, limit: usize) -> StoreResult<usize> {
    let mut done = 0;
    for id in store.unplanned(limit)? {
        let changed = planned(store, &id, |r, now| {
            let s = definition(&id, r)?;
            let a = chain::replan(&id, &s, r.generation, r.last_nominal, r.runs_created, now);
            Ok(SchedOp::Replan(a))
        });
        match changed {
            Ok(SchedAnswer::Changed) => done += 1,
            Ok(_) => {}
            Err(e) => tracing::error!(schedule = ?id, error = %e, "schedule not re-planned"),
        }
    }
    Ok(done)
}

/// Reads the record of `id`, plans `op` from it and the store's clock,
/// and writes it; again on a conflict. `NotFound` when there is no record.
pub(crate) fn planned(
    store: &dyn Store,
    id: &str,
    mut op: impl FnMut(&SchedRecord, u64) -> Result<SchedOp, DurableError>,
) -> Result<SchedAnswer, DurableError> {
    for _ in 0..MAX_CONFLICTS {
        let (now, records) = store.schedules(&[id])?;
        let Some(r) = records.into_iter().next().flatten() else {
            return Ok(SchedAnswer::NotFound);
        };
        let answer = store.schedule_write(id, &op(&r, now)?)?;
        if answer != SchedAnswer::Conflict {
            return Ok(answer);
        }
    }
    Err(conflicts(id))
}

fn conflicts(id: &str) -> DurableError {
    DurableError::Store(ErrorDetail::new(format!(
        "schedule {id:?}: changed by others {MAX_CONFLICTS} times while this change was planned"
    )))
}

/// Creates or updates schedule `id` (see [`SchedOp::Upsert`]).
pub(crate) fn upsert(
    store: &dyn Store,
    id: &str,
    s: &Schedule,
    payload: &[u8],
) -> Result<SchedAnswer, DurableError> {
    let definition = s.encode();
    for _ in 0..MAX_CONFLICTS {
        let (now, records) = store.schedules(&[id])?;
        let current = records.into_iter().next().flatten();
        if let Some(r) = &current
            && r.definition == definition
            && r.payload == payload
        {
            return Ok(SchedAnswer::Unchanged);
        }
        let op = SchedOp::Upsert {
            expect: current.map(|r| r.generation),
            definition: definition.clone(),
            overlap: overlap_byte(s.overlap()),
            payload: payload.to_vec(),
            first: chain::first_run(id, s, now),
        };
        let answer = store.schedule_write(id, &op)?;
        if answer != SchedAnswer::Conflict {
            return Ok(answer);
        }
    }
    Err(conflicts(id))
}

/// Resumes schedule `id` from the store's clock.
pub(crate) fn resume(store: &dyn Store, id: &str) -> Result<SchedAnswer, DurableError> {
    planned(store, id, |r, now| {
        let s = definition(id, r)?;
        let a = chain::resume(id, &s, r.generation, r.last_nominal, r.runs_created, now);
        Ok(SchedOp::Resume(a))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;
    use std::time::Duration;

    use super::*;
    use crate::schedule::Spec;
    use crate::store::model::Model;
    use crate::store::schedules::SchedAnswer as A;
    use crate::store::{StoreClock, StoreResult};

    fn model() -> Model {
        Model::new(StoreClock::Manual(Arc::new(AtomicU64::new(
            1_700_000_000_500,
        ))))
    }

    fn every_second() -> Schedule {
        Schedule::builder(Spec::every(Duration::from_secs(1)).unwrap())
            .build()
            .unwrap()
    }

    #[test]
    fn upserts_create_keep_and_change_and_plan_from_the_store_s_clock() {
        let m = model();
        let s = every_second();
        assert_eq!(upsert(&m, "a", &s, b"p").unwrap(), A::Created);
        assert_eq!(upsert(&m, "a", &s, b"p").unwrap(), A::Unchanged);
        let (_, r) = m.schedules(&["a"]).unwrap();
        let r = r[0].clone().unwrap();
        // The first slot at or after the store's 0.5 s past the second.
        assert_eq!(r.next.as_deref(), Some("sched:a:1700000001000"));
        assert_eq!(upsert(&m, "a", &s, b"q").unwrap(), A::Changed);
        assert_eq!(resume(&m, "a").unwrap(), A::Unchanged, "not paused");
        assert_eq!(resume(&m, "b").unwrap(), A::NotFound);
    }

    #[test]
    fn only_a_schedule_s_pending_run_gets_a_step() {
        let m = model();
        upsert(&m, "a", &every_second(), b"").unwrap();
        let keys = ["sched:a:1700000001000", "sched:a:1700000002000", "order:1"];
        let steps = advances(&m, &keys).unwrap();
        assert_eq!(steps.len(), 3);
        let step = steps[0].as_ref().unwrap();
        assert_eq!(step.pending.as_ref().unwrap().key, "sched:a:1700000002000");
        assert_eq!((&steps[1], &steps[2]), (&None, &None));
        assert_eq!(advances(&m, &["order:1"]).unwrap(), Vec::new());
    }

    /// A store whose every planned write conflicts.
    struct Busy(Model);

    impl Store for Busy {
        fn schedule_write(&self, _: &str, _: &SchedOp) -> StoreResult<SchedAnswer> {
            Ok(SchedAnswer::Conflict)
        }
        fn schedules(
            &self,
            ids: &[&str],
        ) -> StoreResult<(crate::store::Millis, Vec<Option<SchedRecord>>)> {
            self.0.schedules(ids)
        }
        fn add(
            &self,
            t: &[crate::store::NewTimer<'_>],
            m: crate::AddMode,
        ) -> StoreResult<Vec<bool>> {
            self.0.add(t, m)
        }
        fn cancel(&self, k: &str) -> StoreResult<bool> {
            self.0.cancel(k)
        }
        fn reschedule(&self, k: &str, d: crate::store::Due) -> StoreResult<bool> {
            self.0.reschedule(k, d)
        }
        fn get(&self, k: &str) -> StoreResult<Option<crate::TimerInfo>> {
            self.0.get(k)
        }
        fn ended(&self, k: &str) -> StoreResult<Option<crate::store::Memory>> {
            self.0.ended(k)
        }
        fn set_dedup_window(&self, w: crate::store::Millis) {
            self.0.set_dedup_window(w)
        }
        fn claim(&self, r: &crate::store::ClaimRequest) -> StoreResult<crate::store::ClaimBatch> {
            self.0.claim(r)
        }
        fn start_runs(
            &self,
            c: &[crate::store::Fenced<'_>],
            a: &[Option<Advance>],
            f: &[&str],
            l: crate::store::Millis,
        ) -> StoreResult<Vec<crate::store::Start>> {
            self.0.start_runs(c, a, f, l)
        }
        fn set_paused(&self, f: Option<&str>, p: bool) -> StoreResult<bool> {
            self.0.set_paused(f, p)
        }
        fn flows(&self) -> StoreResult<crate::store::FlowsState> {
            self.0.flows()
        }
        fn renew(&self, h: &[crate::store::Fenced<'_>], l: u64) -> StoreResult<Vec<bool>> {
            self.0.renew(h, l)
        }
        fn finish(
            &self,
            r: &[(crate::store::Fenced<'_>, crate::store::Finish)],
            f: &[crate::store::FlowOutcome<'_>],
        ) -> StoreResult<Vec<bool>> {
            self.0.finish(r, f)
        }
        fn defer(&self, c: &[crate::store::Fenced<'_>], f: &[&str]) -> StoreResult<Vec<bool>> {
            self.0.defer(c, f)
        }
        fn set_limits(&self, f: Option<&str>, l: Option<&crate::store::Limits>) -> StoreResult<()> {
            self.0.set_limits(f, l)
        }
        fn release(&self, c: &[crate::store::Fenced<'_>]) -> StoreResult<Vec<bool>> {
            self.0.release(c)
        }
        fn dead_letters(&self, l: usize) -> StoreResult<Vec<crate::DeadLetter>> {
            self.0.dead_letters(l)
        }
        fn retry_dead(&self, k: &str, d: crate::store::Due) -> StoreResult<bool> {
            self.0.retry_dead(k, d)
        }
        fn list(
            &self,
            w: crate::Listing,
            a: Option<(u64, &str)>,
            l: usize,
        ) -> StoreResult<Vec<crate::store::Listed>> {
            self.0.list(w, a, l)
        }
        fn list_schedules(
            &self,
            a: Option<&str>,
            l: usize,
        ) -> StoreResult<Vec<(String, SchedRecord)>> {
            self.0.list_schedules(a, l)
        }
        fn unplanned(&self, l: usize) -> StoreResult<Vec<String>> {
            self.0.unplanned(l)
        }
        fn counts(&self) -> StoreResult<crate::store::Counts> {
            self.0.counts()
        }
        fn watch(&self, w: crate::store::Wake) -> StoreResult<()> {
            self.0.watch(w)
        }
        fn close(&self) -> StoreResult<()> {
            self.0.close()
        }
    }

    #[test]
    fn a_write_that_keeps_conflicting_gives_up_with_a_store_error() {
        let m = model();
        upsert(&m, "a", &every_second(), b"").unwrap();
        let busy = Busy(m);
        let e = upsert(&busy, "a", &every_second(), b"changed").unwrap_err();
        assert!(matches!(e, DurableError::Store(_)), "{e:?}");
        assert!(!e.is_input());
        assert!(matches!(resume(&busy, "a"), Err(DurableError::Store(_))));
    }
}
