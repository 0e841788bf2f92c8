//! Recurring schedules, the pure part: when a schedule's runs are
//! ([`Spec`], [`Schedule`]), which runs to create when its chain advances
//! ([`Schedule::plan`]), and each run's timer key ([`run_key`]).
//!
//! Each run of a schedule is a durable timer whose key is derived from the
//! schedule id and the run's nominal time, so creating a run twice creates
//! one timer and no period runs twice. Nothing here touches a store.
//!
//! # Specs
//!
//! - [`Spec::cron`]: a cron expression (five fields, or six with seconds
//!   first) in an IANA time zone, from the tz database bundled into the
//!   binary, so results never depend on the host (feature `cron`, on by
//!   default; without it, [`Spec::cron`] returns
//!   [`SpecError::CronFeatureOff`] and every other item still builds).
//! - [`Spec::every`] / [`Spec::every_from`]: a fixed period of real time
//!   (at least one second, whole milliseconds) on slots aligned to an
//!   anchor, by default the Unix epoch: every five minutes runs at :00,
//!   :05 ... UTC.
//!
//! Nominal times are whole Unix milliseconds in the store's range (cron
//! runs are on whole seconds); [`Spec::next_after`] is strictly after its
//! argument. A [`Schedule`] adds bounds — a start (inclusive), an end
//! (exclusive), a run limit — plus jitter, a [`CatchUp`] and an
//! [`Overlap`] policy. Every check happens when a value is built, so a
//! `Spec` or `Schedule` that exists is valid.
//!
//! # Daylight saving time
//!
//! A cron spec is *fixed-time* when its second, minute and hour fields have
//! no `*` and no step (single values, lists and ranges), and
//! *interval-like* otherwise. The rule, Vixie cron's:
//!
//! - A fixed-time spec's wall time in a **spring-forward gap** runs once, at
//!   the first instant after the gap. In a **fall-back overlap** it runs
//!   once, in the first pass.
//! - An interval-like spec runs at every wall time it names that exists:
//!   none in a gap, both passes of an overlap. So `*/15 * * * *` stays 15
//!   real minutes apart through a 60- or 30-minute shift, with no double and
//!   no hole. When a shift is not a whole number of steps (an hourly spec
//!   across Lord Howe's 30-minute shift), the spacing around it is one
//!   step plus or minus the shift.
//!
//! Worked example, America/New_York, 2026-03-08 (02:00 EST becomes 03:00
//! EDT): `0 30 2 * * *` runs on the 7th at 07:30 UTC (02:30 EST), on the 8th
//! at 07:00 UTC (03:00 EDT, right after the gap) and on the 9th at 06:30 UTC
//! (02:30 EDT); `*/15 * * * *` runs at 06:45 UTC (01:45 EST) then 07:00 UTC
//! (03:00 EDT). On 2026-11-01 (02:00 EDT becomes 01:00 EST), `0 30 1 * * *`
//! runs once, at 05:30 UTC (01:30 EDT), and `*/15 * * * *` runs at 05:45
//! (01:45 EDT), 06:00 (01:00 EST), 06:15 (01:15 EST) UTC ...
//!
//! # Catch-up and overlap
//!
//! A schedule's chain holds one pending run. When it starts, the node
//! plans the next step with it as the last run; slots between it and now
//! were *missed* (and so is the pending run itself when the slot after it
//! has passed too) and go through the [`CatchUp`] policy ([`Skip`] drops
//! them, [`Latest`] — the default — runs the most recent once, [`All`]
//! runs each within a window, at most [`MAX_CATCH_UP_RUNS`]); the first
//! slot at or after now becomes the next pending run. A new schedule
//! starts at its first slot at or after `max(start, now)`. The
//! [`Overlap`] policy ([`Skip`](Overlap::Skip) by default) says what a run
//! that comes due while the previous one still runs does; the store
//! enforces it, for every run of the schedule. The stores keep the chain
//! (`docs/durable.md`, "Schedules").
//!
//! [`Skip`]: CatchUp::Skip
//! [`Latest`]: CatchUp::Latest
//! [`All`]: CatchUp::All
//!
//! # Examples
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use wheel_durable::schedule::{run_key, Schedule, Spec};
//!
//! let schedule = Schedule::builder(Spec::every(Duration::from_secs(300))?).build()?;
//! let now = UNIX_EPOCH + Duration::from_secs(1_800_000_100);
//! let plan = schedule.plan(None, 0, now);
//! let first = plan.pending.unwrap();
//! assert_eq!(first, UNIX_EPOCH + Duration::from_secs(1_800_000_300));
//! assert_eq!(run_key("cleanup", first)?, "sched:cleanup:1800000300000");
//! # Ok::<(), wheel_durable::schedule::SpecError>(())
//! ```
//!
//! Node state: none (pure values and functions; the store side keeps each
//! schedule's last run and count).

pub(crate) mod chain;
mod codec;
#[cfg(feature = "cron")]
mod cron;
#[cfg(feature = "cron")]
mod cron_parse;
mod definition;
mod error;
mod every;
mod instant;
mod jitter;
pub(crate) mod key;
mod plan;
mod policy;
mod spec;

#[cfg(all(test, feature = "cron"))]
mod dst_tests;
#[cfg(test)]
mod prop_tests;

pub use self::definition::{Schedule, ScheduleBuilder};
pub use self::error::{CronField, CronSyntaxError, SpecError};
pub use self::key::{MAX_SCHEDULE_ID_LEN, is_reserved_key, parse_run_key, run_key};
pub use self::plan::{Plan, Skipped};
pub use self::policy::{CatchUp, DEFAULT_CATCH_UP_WINDOW, MAX_CATCH_UP_RUNS, Overlap};
pub use self::spec::Spec;
