//! Error types shared by the scheduler and the consumer APIs.

use std::fmt;

/// Why a timer could not be scheduled.
///
/// # Examples
///
/// ```
/// use wheel::ScheduleError;
/// let e = ScheduleError::Shutdown;
/// assert_eq!(e.to_string(), "the scheduler has been shut down");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The scheduler was shut down; nothing was scheduled.
    Shutdown,
    /// `max_pending` timers are already pending; nothing was scheduled.
    Full,
    /// A repeating timer was given a zero period.
    ZeroPeriod,
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScheduleError::Shutdown => "the scheduler has been shut down",
            ScheduleError::Full => "the scheduler already holds max_pending timers",
            ScheduleError::ZeroPeriod => "a repeating timer needs a non-zero period",
        })
    }
}

impl std::error::Error for ScheduleError {}

/// Why a [`Scheduler`](crate::Scheduler) or [`DelayQueue`](crate::DelayQueue)
/// could not be built.
///
/// # Examples
///
/// ```
/// use wheel::BuildError;
/// assert_eq!(BuildError::ZeroTick.to_string(), "the tick must be longer than zero");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// The tick was zero.
    ZeroTick,
    /// The tick was longer than `u64::MAX` nanoseconds.
    TickTooLong,
    /// Zero worker threads were requested.
    ZeroWorkers,
    /// `max_pending(0)` was requested: nothing could ever be scheduled.
    ZeroMaxPending,
    /// The operating system refused to start a thread.
    Spawn(std::io::Error),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ZeroTick => f.write_str("the tick must be longer than zero"),
            BuildError::TickTooLong => f.write_str("the tick must be at most u64::MAX nanoseconds"),
            BuildError::ZeroWorkers => f.write_str("at least one worker thread is needed"),
            BuildError::ZeroMaxPending => f.write_str("max_pending must be at least 1"),
            BuildError::Spawn(e) => write!(f, "could not start a thread: {e}"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Spawn(e) => Some(e),
            _ => None,
        }
    }
}
