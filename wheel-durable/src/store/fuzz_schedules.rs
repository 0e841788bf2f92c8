//! The schedule operations of the differential harness ([`super::fuzz`]):
//! create or update, pause, resume, delete, trigger and re-plan
//! schedules, start and finish the schedules' runs the bench holds claims
//! of (with the chain steps a node would send), and read the records back.
//! Each store plans from its own record and its own clock reading (the
//! shared manual clock), so stores that agree plan the same steps.
//!
//! Schedules are named by index into [`IDS`]; definitions by a byte whose
//! bits choose the spec (every second, or every two seconds off the
//! second), the catch-up and overlap policies, a run limit and jitter.
//!
//! Node state: none (a test harness over stores, without a node).

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use arbitrary::Arbitrary;

use super::schedules::{SchedAnswer, SchedOp, SchedRecord};
use super::{Fenced, Finish, Start, Store, StoreResult};
use crate::schedule::{CatchUp, Overlap, Schedule, Spec};
use crate::schedule_store;

/// The schedule ids operations name (by index, modulo their count).
pub const IDS: [&str; 2] = ["s", "t:u"];

/// One schedule operation.
#[derive(Debug, Clone, Arbitrary)]
pub enum ScheduleOp {
    /// Creates or updates schedule `id` with definition `def`.
    Upsert {
        /// The schedule id's index.
        id: u8,
        /// The definition byte.
        def: u8,
        /// The payload's one byte.
        payload: u8,
    },
    /// Pauses it.
    Pause(u8),
    /// Resumes it.
    Resume(u8),
    /// Deletes it.
    Delete(u8),
    /// Triggers a run of it.
    Trigger(u8),
    /// Re-plans unplanned chains.
    Replan,
    /// Starts every run the bench holds a claim of (a stale fence for
    /// `stale`), with the chain steps.
    StartRuns {
        /// The lease of the runs started, ms.
        lease: u8,
        /// Whether the fences are stale.
        stale: bool,
    },
    /// Finishes every run the bench holds: done, retry or dead.
    FinishRuns {
        /// Done, retry or dead (modulo 3).
        how: u8,
        /// A retry's delay, ms.
        delay: u8,
    },
    /// Reads every schedule's record.
    Read,
}

/// What a schedule operation answers, in one comparable form.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ScheduleAnswer {
    Write(SchedAnswer),
    Starts(Vec<Start>),
    Bools(Vec<bool>),
    Replanned(usize),
    Records(Vec<(String, SchedRecord)>, Vec<String>),
}

/// The definition byte `def` stands for.
fn definition(def: u8) -> Schedule {
    let spec = if def & 1 == 0 {
        Spec::every(Duration::from_secs(1))
    } else {
        Spec::every_from(
            Duration::from_secs(2),
            UNIX_EPOCH + Duration::from_millis(500),
        )
    };
    let catch_up = match (def >> 1) & 3 {
        0 => CatchUp::Skip,
        1 => CatchUp::Latest,
        _ => CatchUp::All {
            window: Duration::from_secs(5),
        },
    };
    let overlap = match (def >> 3) & 3 {
        0 => Overlap::Skip,
        1 => Overlap::BufferOne,
        _ => Overlap::Allow,
    };
    let mut b = Schedule::builder(spec.expect("a valid period"))
        .catch_up(catch_up)
        .overlap(overlap);
    if def & 0x40 != 0 {
        b = b.run_limit(4);
    }
    if def & 0x80 != 0 {
        b = b.jitter(Duration::from_millis(300));
    }
    b.build().expect("a valid schedule")
}

fn id(i: u8) -> &'static str {
    IDS[usize::from(i) % IDS.len()]
}

/// The claims of schedules' runs the bench holds: key → the last fence a
/// claim handed out (by the model).
#[derive(Debug, Default)]
pub(crate) struct RunClaims(pub(crate) BTreeMap<String, u64>);

impl RunClaims {
    fn held(&self, stale: bool) -> Vec<Fenced<'_>> {
        self.0
            .iter()
            .map(|(key, fence)| Fenced {
                key,
                fence: fence.saturating_sub(u64::from(stale)),
            })
            .collect()
    }

    /// Asks `store` for `op`.
    pub(crate) fn ask(&self, store: &dyn Store, op: &ScheduleOp) -> StoreResult<ScheduleAnswer> {
        use ScheduleOp as O;
        let write =
            |i: u8, op: SchedOp| store.schedule_write(id(i), &op).map(ScheduleAnswer::Write);
        Ok(match op {
            &O::Upsert {
                id: i,
                def,
                payload,
            } => ScheduleAnswer::Write(schedule_store::upsert(
                store,
                id(i),
                &definition(def),
                &[payload],
            )?),
            O::Pause(i) => write(*i, SchedOp::Pause)?,
            O::Resume(i) => ScheduleAnswer::Write(schedule_store::resume(store, id(*i))?),
            O::Delete(i) => write(*i, SchedOp::Delete)?,
            O::Trigger(i) => write(*i, SchedOp::Trigger)?,
            O::Replan => ScheduleAnswer::Replanned(schedule_store::replan_unplanned(store, 8)?),
            &O::StartRuns { lease, stale } => {
                let held = self.held(stale);
                let keys: Vec<&str> = held.iter().map(|f| f.key).collect();
                let plans = schedule_store::advances(store, &keys)?;
                ScheduleAnswer::Starts(store.start_runs(
                    &held,
                    &plans,
                    &[],
                    u64::from(lease).max(1),
                )?)
            }
            &O::FinishRuns { how, delay } => {
                let how = match how % 3 {
                    0 => Finish::Done,
                    1 => Finish::Retry {
                        delay: u64::from(delay),
                    },
                    _ => Finish::Dead {
                        reason: "run failed".into(),
                    },
                };
                let runs: Vec<(Fenced<'_>, Finish)> = self
                    .held(false)
                    .into_iter()
                    .map(|f| (f, how.clone()))
                    .collect();
                ScheduleAnswer::Bools(store.finish(&runs)?)
            }
            O::Read => {
                ScheduleAnswer::Records(store.list_schedules(None, 10)?, store.unplanned(10)?)
            }
        })
    }
}
