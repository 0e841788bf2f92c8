//! What a schedule does with runs it missed ([`CatchUp`]) and with a run
//! that comes due while the one before it is still going ([`Overlap`]).
//!
//! Node state: none (plain values).

use std::time::Duration;

/// The most missed runs one advance of a schedule creates under
/// [`CatchUp::All`]; older ones past it are skipped.
///
/// A bound on what a single store transaction writes: a per-second schedule
/// after a day's outage would otherwise write 86 400 timers at once.
///
/// # Examples
///
/// ```
/// assert_eq!(wheel_durable::schedule::MAX_CATCH_UP_RUNS, 1_000);
/// ```
pub const MAX_CATCH_UP_RUNS: usize = 1_000;

/// A suggested [`CatchUp::All`] window: one hour.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_durable::schedule::{CatchUp, DEFAULT_CATCH_UP_WINDOW};
///
/// assert_eq!(DEFAULT_CATCH_UP_WINDOW, Duration::from_secs(3_600));
/// let billing = CatchUp::All { window: DEFAULT_CATCH_UP_WINDOW };
/// assert_ne!(CatchUp::default(), billing);
/// ```
pub const DEFAULT_CATCH_UP_WINDOW: Duration = Duration::from_secs(60 * 60);

/// What to do with runs whose nominal time passed while no node created
/// them (every node down, the schedule's chain stalled).
///
/// A run is *missed* when its nominal time is before "now" at the moment
/// the schedule is advanced; the slot at "now" or later is the next
/// pending run, whatever the policy.
///
/// The default is [`Latest`](CatchUp::Latest): after an outage the
/// most recent missed slot runs once, as a Kubernetes CronJob, Quartz's
/// default cron misfire rule and anacron do; a long outage never replays
/// a backlog. [`All`](CatchUp::All) within a window is opt-in. The
/// [`Overlap`] policy applies to catch-up runs too: with `All` and
/// [`Overlap::Skip`], a missed run that comes due while an earlier one
/// still runs is skipped; use [`Overlap::Allow`] to run each missed slot.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_durable::schedule::CatchUp;
///
/// let daily_report = CatchUp::Latest; // one report, however long the outage
/// let billing = CatchUp::All { window: Duration::from_secs(24 * 3_600) };
/// assert_ne!(daily_report, billing);
/// assert_eq!(CatchUp::default(), CatchUp::Latest);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CatchUp {
    /// Missed runs are dropped; the schedule resumes at its next slot.
    Skip,
    /// The most recent missed run happens once, now; the others are
    /// dropped. The default.
    #[default]
    Latest,
    /// Each missed run whose nominal time is within `window` before now
    /// happens, now, in nominal order; at most [`MAX_CATCH_UP_RUNS`] of
    /// them (the most recent), the older ones dropped.
    All {
        /// How far back a missed run is still made up (not zero).
        window: Duration,
    },
}

/// What to do with a run that comes due while the schedule's previous run
/// is still running or waiting to retry.
///
/// The store enforces it when a run starts, for every run of the
/// schedule (catch-up and triggered runs included); a skipped run counts
/// as run for the chain and the run limit (its nominal time is used up).
/// A run parked by [`BufferOne`](Overlap::BufferOne) waits as a pending
/// timer due when the running run's lease ends, and is made due at once
/// when that run finishes.
///
/// The default is [`Skip`](Overlap::Skip), as in Temporal: a job slower
/// than its period never piles up, and two runs of one job never run at
/// once unless asked for.
///
/// # Examples
///
/// ```
/// use wheel_durable::schedule::Overlap;
///
/// assert_eq!(Overlap::default(), Overlap::Skip);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Overlap {
    /// The run that comes due during the previous one is dropped.
    #[default]
    Skip,
    /// One such run waits and starts when the previous one ends; any
    /// further ones while it waits are dropped.
    BufferOne,
    /// Runs start when due, whether or not the previous one has ended.
    Allow,
}
