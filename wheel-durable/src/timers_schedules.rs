//! [`DurableTimers`]' schedule calls: create or update, read, list,
//! delete, pause, resume and trigger durable recurring schedules (see
//! [`schedule`](crate::schedule) for the definitions and `docs/durable.md`,
//! "Schedules", for the rules).
//!
//! Node state: none: each call is one store operation, or a read and a
//! planned write retried on a conflict ([`schedule_store`](crate::schedule_store)).

use crate::listing::MAX_PAGE;
use crate::schedule::{MAX_SCHEDULE_ID_LEN, Schedule};
use crate::schedule_store::{self, definition};
use crate::store::schedules::{SchedAnswer, SchedOp};
use crate::{DurableError, DurableTimers, ScheduleInfo, SchedulePage, Upserted};

/// Refuses an id no run key can be made of.
fn check_id(id: &str) -> Result<(), DurableError> {
    if id.is_empty() || id.len() > MAX_SCHEDULE_ID_LEN {
        return Err(DurableError::InvalidKey);
    }
    Ok(())
}

impl DurableTimers {
    /// Creates schedule `id`, or updates it: the same definition and
    /// payload change nothing; a changed one replaces the pending run (not
    /// yet started) with the first run of the new definition, in one
    /// atomic store operation. A new schedule's first run is its first
    /// slot at or after `max(start, now)` (store time): past slots never
    /// run. Each run is a timer keyed `sched:{id}:{ms}` carrying `payload`.
    ///
    /// # Errors
    ///
    /// [`InvalidKey`](DurableError::InvalidKey) for an empty id or one over
    /// [`MAX_SCHEDULE_ID_LEN`] bytes,
    /// [`PayloadTooLarge`](DurableError::PayloadTooLarge), or the store's
    /// error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::schedule::{Schedule, Spec};
    /// use wheel_durable::Upserted;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?;
    /// let hourly = Schedule::builder(Spec::every(Duration::from_secs(3_600))?).build()?;
    /// assert_eq!(timers.upsert_schedule("report", &hourly, b"r")?, Upserted::Created);
    /// assert_eq!(timers.upsert_schedule("report", &hourly, b"r")?, Upserted::Unchanged);
    /// assert_eq!(timers.upsert_schedule("report", &hourly, b"r2")?, Upserted::Updated);
    /// # Ok(()) }
    /// ```
    pub fn upsert_schedule(
        &self,
        id: &str,
        schedule: &Schedule,
        payload: &[u8],
    ) -> Result<Upserted, DurableError> {
        check_id(id)?;
        crate::check_input("s", payload, self.max_payload)?;
        match schedule_store::upsert(&*self.store, id, schedule, payload)? {
            SchedAnswer::Created => Ok(Upserted::Created),
            SchedAnswer::Unchanged => Ok(Upserted::Unchanged),
            _ => Ok(Upserted::Updated),
        }
    }

    /// [`upsert_schedule`](Self::upsert_schedule) whose runs send `cb`
    /// (feature `http`), with the headers `Wheel-Schedule-Id` and
    /// `Wheel-Schedule-Time` besides the usual ones.
    ///
    /// # Errors
    ///
    /// As for [`add_callback_at`](Self::add_callback_at) and
    /// [`upsert_schedule`](Self::upsert_schedule).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::http::{HttpCallback, Method};
    /// use wheel_durable::schedule::{Schedule, Spec};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?;
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(60))?).build()?;
    /// let cb = HttpCallback::new(Method::Post, "http://127.0.0.1:8080/tick");
    /// timers.upsert_callback_schedule("tick", &s, &cb)?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "http")]
    pub fn upsert_callback_schedule(
        &self,
        id: &str,
        schedule: &Schedule,
        cb: &crate::http::HttpCallback,
    ) -> Result<Upserted, DurableError> {
        self.upsert_schedule(id, schedule, &cb.to_payload()?)
    }

    /// Schedule `id`, or `None`.
    ///
    /// # Errors
    ///
    /// [`InvalidKey`](DurableError::InvalidKey), [`Corrupt`](DurableError::Corrupt)
    /// for a stored definition this version cannot decode, or the store's
    /// error.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?;
    /// assert!(timers.schedule("nobody")?.is_none());
    /// # Ok(()) }
    /// ```
    pub fn schedule(&self, id: &str) -> Result<Option<ScheduleInfo>, DurableError> {
        check_id(id)?;
        let (_, records) = self.store.schedules(&[id])?;
        match records.into_iter().next().flatten() {
            Some(r) => Ok(Some(ScheduleInfo::of(
                id.to_owned(),
                definition(id, &r)?,
                r,
            ))),
            None => Ok(None),
        }
    }

    /// The first page of schedules, up to `limit` (clamped to 1..=1000),
    /// in id order (bytes).
    ///
    /// # Errors
    ///
    /// As for [`schedule`](Self::schedule).
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
    /// for id in ["a", "b", "c"] {
    ///     timers.upsert_schedule(id, &s, b"")?;
    /// }
    /// let page = timers.schedules(2)?;
    /// assert_eq!(page.schedules.len(), 2);
    /// let rest = timers.schedules_after(page.next.as_deref().unwrap(), 2)?;
    /// assert_eq!((rest.schedules[0].id.as_str(), rest.next), ("c", None));
    /// # Ok(()) }
    /// ```
    pub fn schedules(&self, limit: usize) -> Result<SchedulePage, DurableError> {
        self.schedule_page(None, limit)
    }

    /// The page of schedules strictly after id `after` (a page's `next`).
    ///
    /// # Errors
    ///
    /// As for [`schedule`](Self::schedule).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?;
    /// assert!(timers.schedules_after("m", 10)?.schedules.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn schedules_after(&self, after: &str, limit: usize) -> Result<SchedulePage, DurableError> {
        self.schedule_page(Some(after), limit)
    }

    fn schedule_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<SchedulePage, DurableError> {
        let limit = limit.clamp(1, MAX_PAGE);
        let mut listed = self.store.list_schedules(after, limit + 1)?;
        let more = listed.len() > limit;
        listed.truncate(limit);
        let next = more
            .then(|| listed.last().map(|(id, _)| id.clone()))
            .flatten();
        let schedules = listed
            .into_iter()
            .map(|(id, r)| Ok(ScheduleInfo::of(id.clone(), definition(&id, &r)?, r)))
            .collect::<Result<_, DurableError>>()?;
        Ok(SchedulePage { schedules, next })
    }

    /// Deletes schedule `id`, cancelling its pending run (a run already
    /// started finishes). True if it existed.
    ///
    /// # Errors
    ///
    /// [`InvalidKey`](DurableError::InvalidKey) or the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?;
    /// assert!(!timers.delete_schedule("nobody")?);
    /// # Ok(()) }
    /// ```
    pub fn delete_schedule(&self, id: &str) -> Result<bool, DurableError> {
        check_id(id)?;
        Ok(self.store.schedule_write(id, &SchedOp::Delete)? == SchedAnswer::Changed)
    }

    /// Pauses schedule `id`: its pending run is cancelled and none runs
    /// until [`resume_schedule`](Self::resume_schedule). True if it was
    /// running and is paused now (false: no such schedule, or paused
    /// already).
    ///
    /// # Errors
    ///
    /// As for [`delete_schedule`](Self::delete_schedule).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?;
    /// assert!(!timers.pause_schedule("nobody")?);
    /// # Ok(()) }
    /// ```
    pub fn pause_schedule(&self, id: &str) -> Result<bool, DurableError> {
        check_id(id)?;
        Ok(self.store.schedule_write(id, &SchedOp::Pause)? == SchedAnswer::Changed)
    }

    /// Resumes paused schedule `id` from now (store time): the slots that
    /// fell during the pause are skipped (counted), not caught up. True if
    /// it was paused.
    ///
    /// # Errors
    ///
    /// As for [`schedule`](Self::schedule).
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
    /// timers.upsert_schedule("sync", &s, b"")?;
    /// assert!(timers.pause_schedule("sync")?);
    /// assert_eq!(timers.schedule("sync")?.unwrap().next_nominal, None);
    /// assert!(timers.resume_schedule("sync")?);
    /// assert!(timers.schedule("sync")?.unwrap().next_nominal.is_some());
    /// # Ok(()) }
    /// ```
    pub fn resume_schedule(&self, id: &str) -> Result<bool, DurableError> {
        check_id(id)?;
        Ok(schedule_store::resume(&*self.store, id)? == SchedAnswer::Changed)
    }

    /// Adds a run of schedule `id` due now, keyed
    /// `sched-trigger:{id}:{ms}` (store time), besides the chain: it does
    /// not move the next run nor count towards the run limit, and the
    /// overlap policy applies to it. It runs even while the schedule is
    /// paused (an explicit request). The run's key, or `None` when there
    /// is no such schedule.
    ///
    /// # Errors
    ///
    /// As for [`delete_schedule`](Self::delete_schedule).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::schedule::{Schedule, Spec};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?;
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(3_600))?).build()?;
    /// timers.upsert_schedule("backup", &s, b"")?;
    /// let key = timers.trigger_schedule("backup")?.unwrap();
    /// assert!(key.starts_with("sched-trigger:backup:"));
    /// assert!(timers.get(&key)?.is_some());
    /// # Ok(()) }
    /// ```
    pub fn trigger_schedule(&self, id: &str) -> Result<Option<String>, DurableError> {
        check_id(id)?;
        match self.store.schedule_write(id, &SchedOp::Trigger)? {
            SchedAnswer::Triggered(key) => Ok(Some(key)),
            _ => Ok(None),
        }
    }
}
