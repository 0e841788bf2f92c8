//! What the library answers about schedules: [`ScheduleInfo`],
//! [`SchedulePage`], [`Upserted`], and the schedule fields of a run
//! ([`ScheduleRun`], in [`Fired::schedule`](crate::Fired::schedule)).
//!
//! Node state: none (plain values, copies of store records).

use std::time::SystemTime;

use crate::schedule::Schedule;
use crate::store::schedules::{SchedRecord, owner};
use crate::time::system_time_of;

/// What [`upsert_schedule`](crate::DurableTimers::upsert_schedule) did.
///
/// # Examples
///
/// ```
/// use wheel_durable::Upserted;
///
/// assert_ne!(Upserted::Created, Upserted::Unchanged);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Upserted {
    /// No schedule had this id: it exists now, with its first run.
    Created,
    /// The definition or payload changed: the pending run was replaced.
    Updated,
    /// The same definition and payload: nothing changed.
    Unchanged,
}

/// The schedule a run belongs to, for runs of schedules.
///
/// # Examples
///
/// ```
/// use std::time::UNIX_EPOCH;
/// use wheel_durable::ScheduleRun;
///
/// let run = ScheduleRun { id: "reports".into(), nominal: UNIX_EPOCH, triggered: false };
/// assert!(!run.triggered);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScheduleRun {
    /// The schedule's id.
    pub id: String,
    /// The slot this run is for (before jitter); for a triggered run, the
    /// store time of the trigger.
    pub nominal: SystemTime,
    /// True for a run made by
    /// [`trigger_schedule`](crate::DurableTimers::trigger_schedule).
    pub triggered: bool,
}

impl ScheduleRun {
    /// The schedule fields of a run's timer key; `None` for a timer that is
    /// no schedule's run.
    pub(crate) fn of_key(key: &str) -> Option<ScheduleRun> {
        let (id, chain, ms) = owner(key)?;
        Some(ScheduleRun {
            id: id.to_owned(),
            nominal: system_time_of(ms),
            triggered: !chain,
        })
    }
}

/// Slots a schedule did not run, by reason.
///
/// # Examples
///
/// ```
/// let none = wheel_durable::SkippedRuns::default();
/// assert_eq!(none.missed + none.overlap + none.paused, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SkippedRuns {
    /// Missed while no node advanced the schedule, and dropped by its
    /// catch-up policy.
    pub missed: u64,
    /// Came due while an earlier run still ran, dropped by the overlap
    /// policy.
    pub overlap: u64,
    /// Fell while the schedule was paused.
    pub paused: u64,
}

/// One schedule, as [`schedule`](crate::DurableTimers::schedule) reads it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_durable::schedule::{Schedule, Spec};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?;
/// let s = Schedule::builder(Spec::every(Duration::from_secs(60))?).build()?;
/// timers.upsert_schedule("cleanup", &s, b"")?;
/// let info = timers.schedule("cleanup")?.unwrap();
/// assert_eq!(info.schedule, s);
/// assert!(!info.paused && info.next_nominal.is_some());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleInfo {
    /// The schedule's id.
    pub id: String,
    /// Its definition.
    pub schedule: Schedule,
    /// The payload each run carries.
    pub payload: Vec<u8>,
    /// Whether it is paused.
    pub paused: bool,
    /// The nominal time of the pending run, if any.
    pub next_nominal: Option<SystemTime>,
    /// The due time of the pending run (its nominal time plus jitter).
    pub next_due: Option<SystemTime>,
    /// The nominal time of the run that started last (a triggered run's
    /// trigger time), whether or not it has finished.
    pub last_started: Option<SystemTime>,
    /// The timer key of the same run: what became of it is its timer's
    /// state ([`get`](crate::DurableTimers::get)), or nothing when it
    /// finished (or was cancelled), or its dead letter when it gave up.
    pub last_key: Option<String>,
    /// Runs created since the definition last changed (for the run
    /// limit).
    pub runs_created: u64,
    /// Slots not run, by reason.
    pub skipped: SkippedRuns,
}

impl ScheduleInfo {
    pub(crate) fn of(id: String, schedule: Schedule, r: SchedRecord) -> ScheduleInfo {
        let next = r.next.as_deref().and_then(ScheduleRun::of_key);
        let next_due = next.as_ref().map(|n| schedule.due_of(&id, n.nominal));
        ScheduleInfo {
            next_nominal: next.map(|n| n.nominal),
            next_due,
            last_started: r
                .running
                .as_deref()
                .and_then(ScheduleRun::of_key)
                .map(|n| n.nominal),
            last_key: r.running.clone(),
            id,
            schedule,
            payload: r.payload,
            paused: r.paused,
            runs_created: r.runs_created,
            skipped: SkippedRuns {
                missed: r.skipped_missed,
                overlap: r.skipped_overlap,
                paused: r.skipped_paused,
            },
        }
    }
}

/// A page of schedules in id order (bytes), and the id to resume after.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?;
/// let page = timers.schedules(100)?;
/// assert!(page.schedules.is_empty() && page.next.is_none());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulePage {
    /// The schedules of this page.
    pub schedules: Vec<ScheduleInfo>,
    /// Pass it to [`schedules_after`](crate::DurableTimers::schedules_after)
    /// for the next page; `None` on the last.
    pub next: Option<String>,
}
