//! The JSON of schedules: the definition a `PUT /v1/schedules/{id}` sends
//! ([`NewSchedule`]), its checks into the library's
//! [`Schedule`](wheel_durable::schedule::Schedule) (each refusal naming its
//! field, a bad cron string naming the cron field and column in the
//! detail), and a schedule as the API shows it ([`ScheduleOut`]).
//!
//! Read in two steps, as timers are (`json.rs`): serde takes the shape
//! (unknown fields refused), then [`NewSchedule::check`] reads the values.
//! Durations go out as integers of milliseconds and times as RFC 3339, both
//! forms the request accepts. Nothing here calls the store.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wheel_durable::ScheduleInfo;
use wheel_durable::http::HttpCallback;
use wheel_durable::schedule::{CatchUp, Overlap, Schedule, Spec, SpecError};

use crate::decode::{Whole, object, optional_object};
use crate::error::Problem;
use crate::json::{CallbackIn, CallbackOut, Delay, RetryIn, format_time, parse_time};

/// A schedule to create or update: `PUT /v1/schedules/{id}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewSchedule {
    /// A cron expression: five fields (minute hour day-of-month month
    /// day-of-week), or six with seconds first. Give this or `every`.
    pub(crate) cron: Option<String>,
    /// The IANA time zone the cron expression runs in (default `UTC`);
    /// only with `cron`.
    pub(crate) zone: Option<String>,
    /// A fixed period, at least 1 s, written as a delay (`"5m"`, or
    /// milliseconds). Give this or `cron`.
    pub(crate) every: Option<Delay>,
    /// The instant the `every` slots are aligned to, RFC 3339 (default the
    /// Unix epoch: every five minutes runs at :00, :05 ... UTC); only with
    /// `every`.
    #[schema(format = DateTime, pattern = "^(?:19[7-9][0-9]|[2-9][0-9]{3})-")]
    pub(crate) anchor: Option<String>,
    /// No run before this time, RFC 3339.
    #[schema(format = DateTime, pattern = "^(?:19[7-9][0-9]|[2-9][0-9]{3})-")]
    pub(crate) start: Option<String>,
    /// No run at or after this time, RFC 3339; after `start`.
    #[schema(format = DateTime, pattern = "^(?:19[7-9][0-9]|[2-9][0-9]{3})-")]
    pub(crate) end: Option<String>,
    /// At most this many runs (at least 1).
    #[schema(value_type = Option<u64>, minimum = 1)]
    pub(crate) run_limit: Option<Whole>,
    /// Delay each run by up to this much after its slot (a delay; shorter
    /// than an `every` period).
    pub(crate) jitter: Option<Delay>,
    /// What runs after slots were missed (default `latest`).
    #[serde(default, deserialize_with = "optional_object")]
    pub(crate) catch_up: Option<CatchUpIn>,
    /// What a run that comes due while the previous one runs does
    /// (default `skip`).
    pub(crate) overlap: Option<OverlapIn>,
    /// The request each run sends, as for `POST /v1/timers`.
    #[serde(deserialize_with = "object")]
    pub(crate) callback: CallbackIn,
    /// How to retry a failed call of a run, as for `POST /v1/timers`.
    #[serde(default, deserialize_with = "optional_object")]
    pub(crate) retry: Option<RetryIn>,
}

/// A catch-up policy.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CatchUpIn {
    /// `skip`: missed slots are dropped; `latest`: the most recent missed
    /// slot runs once, now; `all`: each missed slot within `window` runs,
    /// now (at most 1000).
    pub(crate) policy: CatchUpPolicy,
    /// How far back `all` makes missed slots up (a delay, not zero); only
    /// with `all`, and required there.
    pub(crate) window: Option<Delay>,
}

/// The catch-up policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CatchUpPolicy {
    /// Missed slots are dropped.
    Skip,
    /// The most recent missed slot runs once.
    Latest,
    /// Each missed slot within the window runs.
    All,
}

/// The overlap policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OverlapIn {
    /// The run is dropped (counted).
    Skip,
    /// One run waits for the previous one to end; further ones are dropped.
    BufferOne,
    /// The run starts anyway.
    Allow,
}

/// A checked [`NewSchedule`]: what the library is given.
#[derive(Debug)]
pub(crate) struct CheckedSchedule {
    pub(crate) schedule: Schedule,
    pub(crate) callback: HttpCallback,
}

/// The field a library refusal is about, and the refusal as a problem.
pub(crate) fn spec_problem(e: &SpecError) -> Problem {
    let field = match e {
        SpecError::Cron(_) | SpecError::CronNeverMatches { .. } | SpecError::CronFeatureOff => {
            "cron"
        }
        SpecError::UnknownZone { .. } => "zone",
        SpecError::PeriodTooShort { .. } | SpecError::PeriodNotWholeMillis { .. } => "every",
        SpecError::TimeOutOfRange { field } => field,
        SpecError::EndNotAfterStart => "end",
        SpecError::ZeroRunLimit => "run_limit",
        SpecError::JitterTooLarge { .. } => "jitter",
        SpecError::ZeroCatchUpWindow => "catch_up.window",
        SpecError::InvalidId => "id",
        // A refusal this server does not place: still the client's.
        _ => "",
    };
    let problem = Problem::invalid(field, e.to_string());
    if field.is_empty() {
        Problem {
            field: None,
            ..problem
        }
    } else {
        problem
    }
}

fn time(text: &str, field: &str) -> Result<SystemTime, Problem> {
    parse_time(text).map_err(|d| Problem::invalid(field, d))
}

fn delay(d: &Delay, field: &str) -> Result<Duration, Problem> {
    d.duration().map_err(|why| Problem::invalid(field, why))
}

impl NewSchedule {
    /// Reads the values into the library's schedule and callback.
    pub(crate) fn check(self) -> Result<CheckedSchedule, Problem> {
        let spec = self.spec()?;
        let mut b = Schedule::builder(spec);
        if let Some(at) = &self.start {
            b = b.start(time(at, "start")?);
        }
        if let Some(at) = &self.end {
            b = b.end(time(at, "end")?);
        }
        if let Some(Whole(n)) = self.run_limit {
            b = b.run_limit(n);
        }
        if let Some(j) = &self.jitter {
            b = b.jitter(delay(j, "jitter")?);
        }
        if let Some(c) = &self.catch_up {
            b = b.catch_up(c.check()?);
        }
        if let Some(o) = self.overlap {
            b = b.overlap(match o {
                OverlapIn::Skip => Overlap::Skip,
                OverlapIn::BufferOne => Overlap::BufferOne,
                OverlapIn::Allow => Overlap::Allow,
            });
        }
        let schedule = b.build().map_err(|e| spec_problem(&e))?;
        let retry = match self.retry {
            Some(r) => r.check("retry.")?,
            None => wheel_durable::RetryPolicy::new(),
        };
        let callback = self.callback.check("")?.retry(retry);
        Ok(CheckedSchedule { schedule, callback })
    }

    /// The spec: cron in a zone, or a period on an anchor.
    fn spec(&self) -> Result<Spec, Problem> {
        match (&self.cron, &self.every) {
            (Some(_), Some(_)) => Err(Problem::invalid("every", "give cron or every, not both")),
            (None, None) => Err(Problem::invalid(
                "cron",
                "give cron (with zone) or every (with anchor)",
            )),
            (Some(expr), None) => {
                if self.anchor.is_some() {
                    return Err(Problem::invalid(
                        "anchor",
                        "anchor goes with every, not cron",
                    ));
                }
                let zone = self.zone.as_deref().unwrap_or("UTC");
                Spec::cron(expr, zone).map_err(|e| spec_problem(&e))
            }
            (None, Some(period)) => {
                if self.zone.is_some() {
                    return Err(Problem::invalid("zone", "zone goes with cron, not every"));
                }
                let period = delay(period, "every")?;
                let spec = match &self.anchor {
                    Some(at) => Spec::every_from(period, time(at, "anchor")?),
                    None => Spec::every(period),
                };
                spec.map_err(|e| spec_problem(&e))
            }
        }
    }
}

impl CatchUpIn {
    fn check(&self) -> Result<CatchUp, Problem> {
        match (self.policy, &self.window) {
            (CatchUpPolicy::All, Some(w)) => Ok(CatchUp::All {
                window: delay(w, "catch_up.window")?,
            }),
            (CatchUpPolicy::All, None) => Err(Problem::invalid(
                "catch_up.window",
                "the policy all needs a window (e.g. \"1h\")",
            )),
            (_, Some(_)) => Err(Problem::invalid(
                "catch_up.window",
                "a window goes with the policy all only",
            )),
            (CatchUpPolicy::Skip, None) => Ok(CatchUp::Skip),
            (CatchUpPolicy::Latest, None) => Ok(CatchUp::Latest),
        }
    }
}

/// A catch-up policy as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct CatchUpOut {
    /// The policy.
    pub(crate) policy: CatchUpPolicy,
    /// The window of `all`, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) window: Option<u64>,
}

/// Slots a schedule did not run, by reason.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct SkippedOut {
    /// Missed while no node ran the schedule, and dropped by the catch-up
    /// policy.
    pub(crate) missed: u64,
    /// Came due while an earlier run still ran, dropped by the overlap
    /// policy.
    pub(crate) overlap: u64,
    /// Fell while the schedule was paused.
    pub(crate) paused: u64,
}

/// What became of the run that started last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunOutcome {
    /// Its callback is being sent.
    Running,
    /// Its callback failed and waits for a retry.
    Retrying,
    /// It gave up: a dead letter (at `/v1/dead-letters/{key}`).
    Failed,
    /// Its timer is gone: the callback succeeded, or the run was
    /// cancelled.
    Done,
}

/// The run of a schedule that started last.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct LastRun {
    /// Its timer's key.
    pub(crate) key: String,
    /// Its slot (a triggered run's trigger time), RFC 3339.
    pub(crate) nominal_at: String,
    /// What became of it.
    pub(crate) outcome: RunOutcome,
}

/// A schedule as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct ScheduleOut {
    /// The id.
    pub(crate) id: String,
    /// What the `PUT` that answers this did: `created`, `updated` or
    /// `unchanged` (only in answers to `PUT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<&'static str>,
    /// The cron expression (cron schedules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cron: Option<String>,
    /// Its time zone (cron schedules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) zone: Option<String>,
    /// The period in milliseconds (`every` schedules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) every: Option<u64>,
    /// The anchor of the period, RFC 3339 (`every` schedules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) anchor: Option<String>,
    /// No run before this time, RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) start: Option<String>,
    /// No run at or after this time, RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) end: Option<String>,
    /// At most this many runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) run_limit: Option<u64>,
    /// The jitter in milliseconds.
    pub(crate) jitter: u64,
    /// The catch-up policy.
    pub(crate) catch_up: CatchUpOut,
    /// The overlap policy.
    pub(crate) overlap: OverlapIn,
    /// The request each run sends; null when the schedule was made
    /// through the library with another payload.
    pub(crate) callback: Option<CallbackOut>,
    /// Whether it is paused.
    pub(crate) paused: bool,
    /// The slot of the next run, RFC 3339; null while paused or after
    /// the last run.
    pub(crate) next_run_at: Option<String>,
    /// When the next run is due (its slot plus jitter), RFC 3339.
    pub(crate) next_due_at: Option<String>,
    /// The run that started last; null before the first.
    pub(crate) last_run: Option<LastRun>,
    /// Runs created since the definition last changed.
    pub(crate) runs_created: u64,
    /// Slots not run, by reason.
    pub(crate) skipped: SkippedOut,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl ScheduleOut {
    /// How the API shows `info`, with the last run's outcome as read.
    pub(crate) fn of(info: ScheduleInfo, last_run: Option<LastRun>) -> ScheduleOut {
        let s = &info.schedule;
        let spec = s.spec();
        let catch_up = match s.catch_up() {
            CatchUp::Skip => (CatchUpPolicy::Skip, None),
            CatchUp::All { window } => (CatchUpPolicy::All, Some(ms(window))),
            // `Latest`, and any policy a newer library adds, shows as the
            // default.
            _ => (CatchUpPolicy::Latest, None),
        };
        let overlap = match s.overlap() {
            Overlap::BufferOne => OverlapIn::BufferOne,
            Overlap::Allow => OverlapIn::Allow,
            _ => OverlapIn::Skip,
        };
        ScheduleOut {
            result: None,
            cron: spec.expression().map(str::to_owned),
            zone: spec.zone().map(str::to_owned),
            every: spec.period().map(ms),
            anchor: spec.anchor().map(format_time),
            start: s.start().map(format_time),
            end: s.end().map(format_time),
            run_limit: s.run_limit().map(std::num::NonZeroU64::get),
            jitter: ms(s.jitter()),
            catch_up: CatchUpOut {
                policy: catch_up.0,
                window: catch_up.1,
            },
            overlap,
            callback: HttpCallback::from_payload(&info.payload).map(CallbackOut::of),
            paused: info.paused,
            next_run_at: info.next_nominal.map(format_time),
            next_due_at: info.next_due.map(format_time),
            last_run,
            runs_created: info.runs_created,
            skipped: SkippedOut {
                missed: info.skipped.missed,
                overlap: info.skipped.overlap,
                paused: info.skipped.paused,
            },
            id: info.id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extractor::parse_json;

    fn refused(body: &str) -> Problem {
        parse_json::<NewSchedule>(body.as_bytes())
            .and_then(NewSchedule::check)
            .unwrap_err()
    }

    const CB: &str = r#""callback": {"url": "http://a.example/r"}"#;

    #[test]
    fn each_bad_value_names_its_field() {
        for (body, field) in [
            (r#""cron": "0 9 32 * *""#, "cron"),
            (r#""cron": "0 9 * * *", "zone": "Mars/Olympus""#, "zone"),
            (r#""every": "500ms""#, "every"),
            (r#""every": "1m", "cron": "* * * * *""#, "every"),
            (r#""every": "1m", "zone": "UTC""#, "zone"),
            (
                r#""cron": "* * * * *", "anchor": "2030-01-01T00:00:00Z""#,
                "anchor",
            ),
            (r#""run_limit": 0, "every": "1m""#, "run_limit"),
            (
                r#""every": "1m", "start": "2030-01-02T00:00:00Z", "end": "2030-01-01T00:00:00Z""#,
                "end",
            ),
            (r#""every": "1m", "jitter": "2m""#, "jitter"),
            (
                r#""every": "1m", "catch_up": {"policy": "all"}"#,
                "catch_up.window",
            ),
            (
                r#""every": "1m", "catch_up": {"policy": "skip", "window": "1h"}"#,
                "catch_up.window",
            ),
            (
                r#""every": "1m", "catch_up": {"policy": "all", "window": 0}"#,
                "catch_up.window",
            ),
            (r#""every": "1m", "overlap": "sometimes""#, "overlap"),
        ] {
            let p = refused(&format!("{{{body}, {CB}}}"));
            assert_eq!(
                (p.status, p.field.as_deref()),
                (422, Some(field)),
                "{body}: {p:?}"
            );
        }
    }

    #[test]
    fn a_bad_cron_string_names_the_cron_field_and_column() {
        let p = refused(&format!("{{\"cron\": \"0 9 32 * *\", {CB}}}"));
        assert!(
            p.detail.contains("day-of-month field `32` at column 5"),
            "{}",
            p.detail
        );
    }

    #[test]
    fn a_full_definition_reads_and_shows_back() {
        let body = format!(
            r#"{{"cron": "0 30 2 * * *", "zone": "America/New_York", "start": "2030-01-01T00:00:00Z",
               "run_limit": 3, "catch_up": {{"policy": "all", "window": "1h"}},
               "overlap": "buffer_one", {CB}}}"#
        );
        let c = parse_json::<NewSchedule>(body.as_bytes())
            .unwrap()
            .check()
            .unwrap();
        assert_eq!(c.schedule.overlap(), Overlap::BufferOne);
        assert_eq!(
            c.schedule.catch_up(),
            CatchUp::All {
                window: Duration::from_secs(3_600)
            }
        );
        assert_eq!(c.schedule.spec().zone(), Some("America/New_York"));
    }
}
