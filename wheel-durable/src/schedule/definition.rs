//! [`Schedule`]: a [`Spec`] with its bounds (start, end, run limit),
//! jitter and policies, checked together when built.
//!
//! Bounds are a half-open range of nominal times, `[start, end)`; the run
//! limit counts runs created (a run skipped by the overlap policy counts).
//!
//! Node state: none (plain values, immutable once built).

use std::num::NonZeroU64;
use std::time::{Duration, SystemTime};

use super::instant::{Ms, bound_ms, floor_ms, system_time};
use super::{CatchUp, Overlap, Spec, SpecError};

/// A schedule's definition: when its runs are, within which bounds, and
/// what happens to runs missed or overlapping.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use wheel_durable::schedule::{CatchUp, Schedule, Spec};
///
/// let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
/// let schedule = Schedule::builder(Spec::every(Duration::from_secs(60))?)
///     .start(start)
///     .run_limit(3)
///     .catch_up(CatchUp::Latest)
///     .build()?;
/// assert_eq!(schedule.next_after(UNIX_EPOCH), Some(start));
/// # Ok::<(), wheel_durable::schedule::SpecError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    spec: Spec,
    start: Option<Ms>,
    end: Option<Ms>,
    run_limit: Option<NonZeroU64>,
    jitter: Duration,
    catch_up: CatchUp,
    overlap: Overlap,
}

/// Builds a [`Schedule`]; [`build`](ScheduleBuilder::build) checks it.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use wheel_durable::schedule::{Schedule, Spec, SpecError};
///
/// let t = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
/// let e = Schedule::builder(Spec::every(Duration::from_secs(60))?)
///     .start(t)
///     .end(t)
///     .build()
///     .unwrap_err();
/// assert_eq!(e, SpecError::EndNotAfterStart);
/// # Ok::<(), SpecError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build`"]
pub struct ScheduleBuilder {
    spec: Spec,
    start: Option<SystemTime>,
    end: Option<SystemTime>,
    run_limit: Option<u64>,
    jitter: Duration,
    catch_up: CatchUp,
    overlap: Overlap,
}

impl Schedule {
    /// A builder for a schedule of `spec`: no bounds, no jitter, the
    /// default policies ([`CatchUp::default`], [`Overlap::default`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::schedule::{CatchUp, Overlap, Schedule, Spec};
    ///
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(60))?).build()?;
    /// assert_eq!((s.catch_up(), s.overlap()), (CatchUp::default(), Overlap::Skip));
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn builder(spec: Spec) -> ScheduleBuilder {
        ScheduleBuilder {
            spec,
            start: None,
            end: None,
            run_limit: None,
            jitter: Duration::ZERO,
            catch_up: CatchUp::default(),
            overlap: Overlap::default(),
        }
    }

    /// The first nominal time strictly after `t` within `[start, end)`;
    /// `None` past the end. The run limit is not applied here (it needs
    /// the count of runs created: see [`plan`](Schedule::plan)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use wheel_durable::schedule::{Schedule, Spec};
    ///
    /// let end = UNIX_EPOCH + Duration::from_secs(600);
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(300))?).end(end).build()?;
    /// assert_eq!(s.next_after(UNIX_EPOCH), Some(UNIX_EPOCH + Duration::from_secs(300)));
    /// assert_eq!(s.next_after(UNIX_EPOCH + Duration::from_secs(300)), None); // 600 s is the end
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
        self.next_ms(floor_ms(t)).map(system_time)
    }

    /// The spec.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::schedule::{Schedule, Spec};
    ///
    /// let spec = Spec::every(Duration::from_secs(60))?;
    /// assert_eq!(Schedule::builder(spec.clone()).build()?.spec(), &spec);
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The first nominal time a run may have (inclusive), if bounded.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use wheel_durable::schedule::{Schedule, Spec};
    ///
    /// let t = UNIX_EPOCH + Duration::from_micros(1_500);
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(1))?).start(t).build()?;
    /// assert_eq!(s.start(), Some(UNIX_EPOCH + Duration::from_millis(2))); // rounded up
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn start(&self) -> Option<SystemTime> {
        self.start.map(system_time)
    }

    /// The nominal time from which no run happens (exclusive), if bounded.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::schedule::{Schedule, Spec};
    ///
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(1))?).build()?;
    /// assert_eq!(s.end(), None);
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn end(&self) -> Option<SystemTime> {
        self.end.map(system_time)
    }

    /// How many runs the schedule creates at most, if limited.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::schedule::{Schedule, Spec};
    ///
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(1))?).run_limit(5).build()?;
    /// assert_eq!(s.run_limit().map(|n| n.get()), Some(5));
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn run_limit(&self) -> Option<NonZeroU64> {
        self.run_limit
    }

    /// The jitter: each run is due up to this much after its nominal time
    /// (see [`due_of`](Schedule::due_of)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::schedule::{Schedule, Spec};
    ///
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(60))?).build()?;
    /// assert_eq!(s.jitter(), Duration::ZERO);
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn jitter(&self) -> Duration {
        self.jitter
    }

    /// The catch-up policy.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::schedule::{CatchUp, Schedule, Spec};
    ///
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(60))?)
    ///     .catch_up(CatchUp::Skip)
    ///     .build()?;
    /// assert_eq!(s.catch_up(), CatchUp::Skip);
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn catch_up(&self) -> CatchUp {
        self.catch_up
    }

    /// The overlap policy.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::schedule::{Overlap, Schedule, Spec};
    ///
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(60))?)
    ///     .overlap(Overlap::Allow)
    ///     .build()?;
    /// assert_eq!(s.overlap(), Overlap::Allow);
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn overlap(&self) -> Overlap {
        self.overlap
    }

    /// The first nominal time strictly after `t` within the bounds.
    pub(crate) fn next_ms(&self, t: Ms) -> Option<Ms> {
        // Searching from just before `start` makes `start` itself eligible.
        let from = self.start.map_or(t, |s| t.max(s - 1));
        self.spec.next_ms(from).filter(|n| self.before_end(*n))
    }

    /// The last nominal time strictly before `t` within the bounds.
    pub(crate) fn prev_ms(&self, t: Ms) -> Option<Ms> {
        let before = self.end.map_or(t, |e| t.min(e));
        self.spec
            .prev_ms(before)
            .filter(|p| self.start.is_none_or(|s| *p >= s))
    }

    fn before_end(&self, ms: Ms) -> bool {
        self.end.is_none_or(|e| ms < e)
    }
}

impl ScheduleBuilder {
    /// Runs only from `start` on (inclusive); rounded up to the
    /// millisecond.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use wheel_durable::schedule::{CatchUp, Overlap, Schedule, Spec};
    ///
    /// let spec = Spec::every(Duration::from_secs(60))?;
    /// let t = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    /// let s = Schedule::builder(spec).start(t).build()?;
    /// assert_eq!(s.next_after(UNIX_EPOCH), Some(t));
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn start(mut self, start: SystemTime) -> ScheduleBuilder {
        self.start = Some(start);
        self
    }

    /// No run at or after `end` (exclusive); rounded up to the millisecond.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use wheel_durable::schedule::{CatchUp, Overlap, Schedule, Spec};
    ///
    /// let spec = Spec::every(Duration::from_secs(60))?;
    /// let end = UNIX_EPOCH + Duration::from_secs(120);
    /// let s = Schedule::builder(spec).end(end).build()?;
    /// assert_eq!(s.next_after(UNIX_EPOCH + Duration::from_secs(60)), None);
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn end(mut self, end: SystemTime) -> ScheduleBuilder {
        self.end = Some(end);
        self
    }

    /// At most `limit` runs in all (not zero).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use wheel_durable::schedule::{CatchUp, Overlap, Schedule, Spec};
    ///
    /// let spec = Spec::every(Duration::from_secs(60))?;
    /// let s = Schedule::builder(spec).run_limit(10).build()?;
    /// assert_eq!(s.plan(None, 10, UNIX_EPOCH).pending, None); // all 10 created
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn run_limit(mut self, limit: u64) -> ScheduleBuilder {
        self.run_limit = Some(limit);
        self
    }

    /// Delays each run by up to `jitter` after its nominal time, to spread
    /// schedules that share a nominal time (default zero).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use wheel_durable::schedule::{CatchUp, Overlap, Schedule, Spec};
    ///
    /// let spec = Spec::every(Duration::from_secs(60))?;
    /// let s = Schedule::builder(spec).jitter(Duration::from_secs(5)).build()?;
    /// assert_eq!(s.jitter(), Duration::from_secs(5));
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn jitter(mut self, jitter: Duration) -> ScheduleBuilder {
        self.jitter = jitter;
        self
    }

    /// The catch-up policy (default [`CatchUp::default`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use wheel_durable::schedule::{CatchUp, Overlap, Schedule, Spec};
    ///
    /// let spec = Spec::every(Duration::from_secs(60))?;
    /// let s = Schedule::builder(spec).catch_up(CatchUp::Latest).build()?;
    /// assert_eq!(s.catch_up(), CatchUp::Latest);
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn catch_up(mut self, catch_up: CatchUp) -> ScheduleBuilder {
        self.catch_up = catch_up;
        self
    }

    /// The overlap policy (default [`Overlap::Skip`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use wheel_durable::schedule::{CatchUp, Overlap, Schedule, Spec};
    ///
    /// let spec = Spec::every(Duration::from_secs(60))?;
    /// let s = Schedule::builder(spec).overlap(Overlap::BufferOne).build()?;
    /// assert_eq!(s.overlap(), Overlap::BufferOne);
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn overlap(mut self, overlap: Overlap) -> ScheduleBuilder {
        self.overlap = overlap;
        self
    }

    /// Checks and builds the schedule.
    ///
    /// # Errors
    ///
    /// [`SpecError::TimeOutOfRange`] for a start or end outside the store's
    /// range, [`SpecError::EndNotAfterStart`], [`SpecError::ZeroRunLimit`],
    /// [`SpecError::JitterTooLarge`] (an `every` spec's jitter not under
    /// its period), [`SpecError::ZeroCatchUpWindow`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use wheel_durable::schedule::{CatchUp, Overlap, Schedule, Spec};
    ///
    /// let spec = Spec::every(Duration::from_secs(60))?;
    /// let e = Schedule::builder(spec).run_limit(0).build().unwrap_err();
    /// assert_eq!(e.to_string(), "run limit: 0 (the schedule would never run)");
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn build(self) -> Result<Schedule, SpecError> {
        let start = self.start.map(|t| bound_ms(t, "start")).transpose()?;
        let end = self.end.map(|t| bound_ms(t, "end")).transpose()?;
        if let (Some(s), Some(e)) = (start, end)
            && e <= s
        {
            return Err(SpecError::EndNotAfterStart);
        }
        let run_limit = match self.run_limit {
            Some(n) => Some(NonZeroU64::new(n).ok_or(SpecError::ZeroRunLimit)?),
            None => None,
        };
        // A cron spec has no one period: its jitter is bounded run by run,
        // below the gap to the next run (`due_of`).
        if let Some(period) = self.spec.period()
            && self.jitter >= period
        {
            return Err(SpecError::JitterTooLarge {
                jitter: self.jitter,
                period,
            });
        }
        if self.catch_up
            == (CatchUp::All {
                window: Duration::ZERO,
            })
        {
            return Err(SpecError::ZeroCatchUpWindow);
        }
        Ok(Schedule {
            spec: self.spec,
            start,
            end,
            run_limit,
            jitter: self.jitter,
            catch_up: self.catch_up,
            overlap: self.overlap,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn minutes(m: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(60 * m)
    }

    fn builder() -> ScheduleBuilder {
        Schedule::builder(Spec::every(Duration::from_secs(60)).unwrap())
    }

    #[test]
    fn bad_bounds_and_policies_are_refused_by_name() {
        let e = |b: ScheduleBuilder| b.build().unwrap_err();
        assert_eq!(
            e(builder().start(minutes(5)).end(minutes(5))),
            SpecError::EndNotAfterStart
        );
        assert_eq!(
            e(builder().start(minutes(5)).end(minutes(4))),
            SpecError::EndNotAfterStart
        );
        assert!(
            builder()
                .start(minutes(5))
                .end(minutes(5) + Duration::from_millis(1))
                .build()
                .is_ok()
        );
        assert_eq!(e(builder().run_limit(0)), SpecError::ZeroRunLimit);
        assert!(builder().run_limit(1).build().is_ok());
        let period = Duration::from_secs(60);
        assert_eq!(
            e(builder().jitter(period)),
            SpecError::JitterTooLarge {
                jitter: period,
                period
            }
        );
        assert!(
            builder()
                .jitter(period - Duration::from_millis(1))
                .build()
                .is_ok()
        );
        assert_eq!(
            e(builder().catch_up(CatchUp::All {
                window: Duration::ZERO
            })),
            SpecError::ZeroCatchUpWindow
        );
        let before = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(
            e(builder().start(before)),
            SpecError::TimeOutOfRange { field: "start" }
        );
        assert_eq!(
            e(builder().end(before)),
            SpecError::TimeOutOfRange { field: "end" }
        );
        for error in [SpecError::EndNotAfterStart, SpecError::ZeroRunLimit] {
            let field = error.to_string();
            assert!(
                field.starts_with("end") || field.starts_with("run limit"),
                "{field}"
            );
        }
    }

    #[test]
    fn next_and_previous_stay_within_start_and_end() {
        let s = builder()
            .start(minutes(10))
            .end(minutes(13))
            .build()
            .unwrap();
        assert_eq!(s.next_after(UNIX_EPOCH), Some(minutes(10)));
        assert_eq!(
            s.next_after(minutes(10) - Duration::from_nanos(1)),
            Some(minutes(10))
        );
        assert_eq!(s.next_after(minutes(10)), Some(minutes(11)));
        assert_eq!(s.next_after(minutes(12)), None);
        assert_eq!(
            s.prev_ms(floor_ms(minutes(30))),
            Some(floor_ms(minutes(12)))
        );
        assert_eq!(s.prev_ms(floor_ms(minutes(10))), None);
        assert_eq!(s.start(), Some(minutes(10)));
        assert_eq!(s.end(), Some(minutes(13)));
    }

    #[cfg(feature = "cron")]
    #[test]
    fn a_cron_spec_takes_any_jitter() {
        let spec = Spec::cron("0 * * * *", "UTC").unwrap();
        let jitter = Duration::from_secs(7_200);
        let s = Schedule::builder(spec).jitter(jitter).build().unwrap();
        // Bounded run by run instead: below the hour to the next run.
        let nominal = minutes(60);
        let due = s.due_of("hourly", nominal);
        assert!(due >= nominal && due < minutes(120), "{due:?}");
    }
}
