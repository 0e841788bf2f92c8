//! Why a schedule was refused: [`SpecError`], and the cron parser's detail,
//! [`CronSyntaxError`], which names the field and the column at fault.
//!
//! Node state: none (plain values).

use std::error::Error;
use std::fmt;
use std::time::Duration;

/// A field of a cron expression, named as an error names it.
///
/// # Examples
///
/// ```
/// use wheel_durable::schedule::CronField;
///
/// assert_eq!(CronField::DayOfMonth.to_string(), "day-of-month");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CronField {
    /// Seconds, 0–59 (only in a six-field expression, where it comes first).
    Second,
    /// Minutes, 0–59.
    Minute,
    /// Hours, 0–23.
    Hour,
    /// Day of the month, 1–31, `L`, `W`.
    DayOfMonth,
    /// Month, 1–12 or `JAN`–`DEC`.
    Month,
    /// Day of the week, 0–7 (0 and 7 are Sunday) or `SUN`–`SAT`, `L`, `#`.
    DayOfWeek,
}

impl fmt::Display for CronField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CronField::Second => "second",
            CronField::Minute => "minute",
            CronField::Hour => "hour",
            CronField::DayOfMonth => "day-of-month",
            CronField::Month => "month",
            CronField::DayOfWeek => "day-of-week",
        })
    }
}

/// A cron expression that does not parse: which field, where, and why.
///
/// `field` and `token` are `None` when the fault is the expression as a
/// whole (the number of fields, a nickname); `column` is then 1.
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "cron")] {
/// use wheel_durable::schedule::{CronField, Spec, SpecError};
///
/// let Err(SpecError::Cron(e)) = Spec::cron("0 9 32 * *", "UTC") else { panic!() };
/// assert_eq!(e.field, Some(CronField::DayOfMonth));
/// assert_eq!(e.column, 5);
/// assert_eq!(e.token.as_deref(), Some("32"));
/// assert!(e.to_string().contains("day-of-month field `32` at column 5"), "{e}");
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSyntaxError {
    /// The expression as given.
    pub expression: String,
    /// The field at fault, when one is.
    pub field: Option<CronField>,
    /// The 1-based character column where the faulty token starts.
    pub column: usize,
    /// The faulty token, when one is.
    pub token: Option<String>,
    /// The parser's reason.
    pub reason: String,
}

impl fmt::Display for CronSyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad cron expression `{}`: ", self.expression)?;
        if let (Some(field), Some(token)) = (self.field, &self.token) {
            write!(f, "{field} field `{token}` at column {}: ", self.column)?;
        }
        f.write_str(&self.reason)
    }
}

impl Error for CronSyntaxError {}

/// Why a schedule's spec, bounds or policies were refused.
///
/// Every check runs when the value is built, so a [`Spec`](super::Spec) or
/// [`Schedule`](super::Schedule) that exists is valid.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_durable::schedule::{Spec, SpecError};
///
/// let e = Spec::every(Duration::from_millis(500)).unwrap_err();
/// assert_eq!(e, SpecError::PeriodTooShort { period: Duration::from_millis(500) });
/// assert_eq!(e.to_string(), "period: 500ms is under the 1 s floor");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpecError {
    /// The cron expression does not parse.
    Cron(CronSyntaxError),
    /// The cron expression parses but no instant from the Unix epoch to the
    /// store's last millisecond matches it (`0 0 30 2 *`).
    CronNeverMatches {
        /// The expression as given.
        expression: String,
    },
    /// The time zone is not in the bundled IANA database.
    UnknownZone {
        /// The name as given.
        zone: String,
    },
    /// A cron spec was asked of a build without the `cron` feature.
    CronFeatureOff,
    /// The period is under one second.
    PeriodTooShort {
        /// The period as given.
        period: Duration,
    },
    /// The period is not a whole number of milliseconds (store times are).
    PeriodNotWholeMillis {
        /// The period as given.
        period: Duration,
    },
    /// A time (`anchor`, `start` or `end`) is before the Unix epoch or past
    /// the store's last millisecond.
    TimeOutOfRange {
        /// Which time: `"anchor"`, `"start"` or `"end"`.
        field: &'static str,
    },
    /// The end is not after the start (the range `[start, end)` is empty).
    EndNotAfterStart,
    /// The run limit is zero: the schedule could never run.
    ZeroRunLimit,
    /// The jitter is not shorter than an `every` spec's period, so runs
    /// could swap order.
    JitterTooLarge {
        /// The jitter as given.
        jitter: Duration,
        /// The spec's period.
        period: Duration,
    },
    /// The catch-up window is zero (use [`CatchUp::Skip`](super::CatchUp::Skip)).
    ZeroCatchUpWindow,
    /// A schedule id is empty or longer than
    /// [`MAX_SCHEDULE_ID_LEN`](super::MAX_SCHEDULE_ID_LEN) bytes.
    InvalidId,
    /// A stored definition does not decode: written by a newer version of
    /// this crate, or damaged.
    Undecodable,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::Cron(e) => e.fmt(f),
            SpecError::CronNeverMatches { expression } => {
                write!(f, "cron expression `{expression}` never matches")
            }
            SpecError::UnknownZone { zone } => {
                write!(f, "zone: `{zone}` is not an IANA time zone")
            }
            SpecError::CronFeatureOff => {
                f.write_str("cron specs need wheel-durable's feature `cron`")
            }
            SpecError::PeriodTooShort { period } => {
                write!(f, "period: {period:?} is under the 1 s floor")
            }
            SpecError::PeriodNotWholeMillis { period } => {
                write!(
                    f,
                    "period: {period:?} is not a whole number of milliseconds"
                )
            }
            SpecError::TimeOutOfRange { field } => write!(
                f,
                "{field}: out of range (the Unix epoch to 2^53 - 1 ms after it)"
            ),
            SpecError::EndNotAfterStart => f.write_str("end: not after start"),
            SpecError::ZeroRunLimit => f.write_str("run limit: 0 (the schedule would never run)"),
            SpecError::JitterTooLarge { jitter, period } => write!(
                f,
                "jitter: {jitter:?} is not shorter than the period {period:?}"
            ),
            SpecError::ZeroCatchUpWindow => f.write_str("catch-up window: zero"),
            SpecError::InvalidId => write!(
                f,
                "schedule id: must be 1 to {} bytes long",
                super::MAX_SCHEDULE_ID_LEN
            ),
            SpecError::Undecodable => f.write_str("stored definition: does not decode"),
        }
    }
}

impl Error for SpecError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            SpecError::Cron(e) => Some(e),
            _ => None,
        }
    }
}
