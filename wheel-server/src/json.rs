//! The JSON the API reads and writes, and the checks that turn a request
//! into what the library stores.
//!
//! A request is read in two steps: serde takes the shape (unknown fields
//! are refused, so a misspelt `dealy` is an error rather than a timer due
//! at once), then [`NewTimer::check`] reads the values (a date, a delay, a
//! method) and names the field at fault. Every object of a request is
//! read from a JSON object only ([`object`](crate::decode::object)). Times go out as RFC 3339 in
//! UTC with exactly three fraction digits (milliseconds, the store's
//! precision); due times coming in are rounded up to the millisecond, as
//! the store does, so that a timer read back compares equal to the request
//! that made it.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use time::OffsetDateTime;
use time::format_description::BorrowedFormatItem;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use utoipa::ToSchema;
use wheel_durable::http::{HttpCallback, Method};
use wheel_durable::{DeadLetter, RetryPolicy, TimerInfo, TimerState};

use crate::decode::{Whole, object, optional_object};
use crate::error::Problem;

/// A timer to add: `POST /v1/timers`, and each entry of a batch.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewTimer {
    /// The key (1 to 1024 bytes; not `.` or `..`, which no URL path can
    /// name); when absent, a new UUIDv7 in 32 hex digits (time-ordered).
    #[schema(min_length = 1, max_length = 1024)]
    pub(crate) key: Option<String>,
    /// When to call, RFC 3339 (e.g. `2030-01-01T09:00:00Z`). Give this or `delay`.
    #[schema(format = DateTime, pattern = "^(?:19[7-9][0-9]|[2-9][0-9]{3})-")]
    pub(crate) due_at: Option<String>,
    /// How long from now: `"90s"`, `"15m"`, `"2h"`, `"7d"`, `"250ms"`, or
    /// an integer of milliseconds. Give this or `due_at`.
    pub(crate) delay: Option<Delay>,
    /// The request to send when the timer is due.
    #[serde(deserialize_with = "object")]
    pub(crate) callback: CallbackIn,
    /// How to retry a failed call.
    #[serde(default, deserialize_with = "optional_object")]
    pub(crate) retry: Option<RetryIn>,
}

/// A delay: an integer of milliseconds or a number with a unit.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum Delay {
    /// Milliseconds (a whole number; `90.0` too).
    #[schema(value_type = u64)]
    Millis(Whole),
    /// A number followed by `ms`, `s`, `m`, `h` or `d`.
    Text(String),
}

/// The request a timer sends.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CallbackIn {
    /// An absolute `http://` or `https://` URL: a host name, an IPv4
    /// address or a bracketed IPv6 address, an optional port, a path and a
    /// query of URL characters (others percent-encoded), no fragment (the
    /// document's pattern is the exact rule).
    pub(crate) url: String,
    /// GET, POST (the default), PUT, PATCH or DELETE, in any case.
    #[schema(
        pattern = "^(?:[gG][eE][tT]|[pP][oO][sS][tT]|[pP][uU][tT]|[pP][aA][tT][cC][hH]|[dD][eE][lL][eE][tT][eE])$"
    )]
    pub(crate) method: Option<String>,
    /// Extra request headers.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// The body, as text. Give this or `json`, or neither.
    pub(crate) body: Option<String>,
    /// The body, as JSON, sent exactly as written (with `Content-Type:
    /// application/json` unless `headers` sets one).
    #[schema(value_type = Option<Value>)]
    pub(crate) json: Option<Box<RawValue>>,
    /// The flow key this callback counts against, for pausing and
    /// resuming (`POST /v1/flows:pause`): 1 to 512 bytes, no control
    /// character. Absent: the URL's origin.
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) flow: Option<String>,
}

/// How a callback that fails is retried.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RetryIn {
    /// Attempts in all, the first one included (1 to 25; default 10).
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 25)]
    pub(crate) max_attempts: Option<Whole>,
    /// The first back-off (doubling after each failure, up to an hour, with
    /// 20 % jitter), as `delay`; default 1 s.
    pub(crate) backoff: Option<Delay>,
}

/// A checked [`NewTimer`]: what the store is given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Checked {
    pub(crate) key: String,
    pub(crate) due: SystemTime,
    /// Whether `due` was given absolutely (and so takes part in the
    /// idempotency comparison).
    pub(crate) absolute: bool,
    /// The callback, with its retry policy.
    pub(crate) callback: HttpCallback,
}

impl NewTimer {
    /// Reads the values; `prefix` goes before every field name.
    pub(crate) fn check(self, prefix: &str, now: SystemTime) -> Result<Checked, Problem> {
        let f = |name: &str| format!("{prefix}{name}");
        let (due, absolute) = match (&self.due_at, &self.delay) {
            (Some(_), Some(_)) => {
                return Err(Problem::invalid(
                    f("delay"),
                    "give due_at or delay, not both",
                ));
            }
            (None, None) => return Err(Problem::invalid(f("due_at"), "give due_at or delay")),
            (Some(at), None) => (
                parse_time(at).map_err(|d| Problem::invalid(f("due_at"), d))?,
                true,
            ),
            (None, Some(d)) => {
                let d = d
                    .duration()
                    .map_err(|why| Problem::invalid(f("delay"), why))?;
                let due = now
                    .checked_add(d)
                    .ok_or_else(|| Problem::invalid(f("delay"), "the delay is too long"))?;
                (ceil_ms(due), false)
            }
        };
        let key = match self.key {
            Some(k) if k.is_empty() || k.len() > wheel_durable::MAX_KEY_LEN => {
                return Err(Problem::invalid(f("key"), "a key is 1 to 1024 bytes"));
            }
            // A URL path takes these as dot segments, even percent-encoded
            // (`%2e`, `.%2E`: the WHATWG URL standard that browsers and most
            // clients follow), so `/v1/timers/..` would reach `/v1/`: no
            // client could name such a timer.
            Some(k) if is_dot_segment(&k) => {
                return Err(Problem::invalid(
                    f("key"),
                    format!(
                        "the key {k:?} is refused: in a URL path it is a dot segment, so the timer could not be named in one"
                    ),
                ));
            }
            Some(k) if wheel_durable::schedule::is_reserved_key(&k) => {
                return Err(Problem::invalid(
                    f("key"),
                    format!(
                        "the key {k:?} is refused: `sched:` and `sched-trigger:` keys are those of schedule runs"
                    ),
                ));
            }
            Some(k) => k,
            None => crate::key::new_key(now)?,
        };
        let retry = match self.retry {
            Some(r) => r.check(&f("retry."))?,
            None => RetryPolicy::new(),
        };
        // Every callback carries its policy, so that each is sent as it
        // was added whatever the node's own policy.
        let callback = self.callback.check(prefix)?.retry(retry);
        Ok(Checked {
            key,
            due,
            absolute,
            callback,
        })
    }
}

/// Whether `key` is `.` or `..`, which no URL path can hold as a segment.
pub(crate) fn is_dot_segment(key: &str) -> bool {
    key == "." || key == ".."
}

impl CallbackIn {
    /// Reads the callback of the timer whose fields start at `prefix`.
    pub(crate) fn check(self, prefix: &str) -> Result<HttpCallback, Problem> {
        let f = |name: &str| format!("{prefix}callback.{name}");
        let method = match self.method.as_deref() {
            None => Method::Post,
            Some(m) => m.parse().map_err(|_| {
                Problem::invalid(
                    f("method"),
                    format!("{m:?} is not one of GET, POST, PUT, PATCH and DELETE"),
                )
            })?,
        };
        if !crate::decode::url_has_form(&self.url) {
            return Err(Problem::invalid(
                f("url"),
                format!(
                    "{:?} is not an http:// or https:// URL of the form host[:port][/path][?query], in ASCII (percent-encode the rest), without a fragment",
                    self.url
                ),
            ));
        }
        let mut cb = HttpCallback::new(method, self.url);
        if let Some(flow) = self.flow {
            // Checked with the rest by `to_payload` below.
            cb = cb.flow(flow);
        }
        let has_type = self
            .headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("content-type"));
        for (name, value) in self.headers {
            cb = cb.header(name, value);
        }
        match (self.body, self.json) {
            (Some(_), Some(_)) => {
                return Err(Problem::invalid(f("json"), "give body or json, not both"));
            }
            (Some(text), None) => cb = cb.body(text.into_bytes()),
            (None, Some(value)) => {
                if !has_type {
                    cb = cb.header("Content-Type", "application/json");
                }
                // The value's text as the caller wrote it, byte for byte
                // (whitespace and key order kept): a receiver that signs or
                // hashes the body sees what the caller sent.
                cb = cb.body(value.get().as_bytes().to_vec());
            }
            (None, None) => {}
        }
        // The library's own checks (URL, header names and values), so that
        // each failure names its field here rather than at the store.
        cb.to_payload().map_err(|e| Problem::durable(&e, prefix))?;
        Ok(cb)
    }
}

/// The most attempts a callback may ask for; the node's own policy allows
/// as many (it is the ceiling of every callback's attempts).
pub(crate) const MAX_ATTEMPTS: u32 = 25;

impl RetryIn {
    /// The policy asked for, from the library's defaults.
    pub(crate) fn check(self, prefix: &str) -> Result<RetryPolicy, Problem> {
        let mut policy = RetryPolicy::new();
        if let Some(Whole(n)) = self.max_attempts {
            let n = u32::try_from(n)
                .ok()
                .filter(|n| (1..=MAX_ATTEMPTS).contains(n))
                .ok_or_else(|| {
                    Problem::invalid(
                        format!("{prefix}max_attempts"),
                        format!("{n} is not 1 to {MAX_ATTEMPTS}"),
                    )
                })?;
            policy = policy.max_attempts(n);
        }
        if let Some(backoff) = &self.backoff {
            let field = format!("{prefix}backoff");
            let d = backoff
                .duration()
                .map_err(|why| Problem::invalid(field.clone(), why))?;
            if d.is_zero() || d > MAX_BACKOFF {
                return Err(Problem::invalid(field, "the back-off is 1 ms to 1 day"));
            }
            policy = policy
                .initial(d)
                .max_delay(d.max(Duration::from_secs(3600)));
        }
        Ok(policy)
    }
}

/// The longest first back-off.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(24 * 3600);

impl Delay {
    /// The duration this delay stands for: at most 100 years, in either
    /// form.
    pub(crate) fn duration(&self) -> Result<Duration, String> {
        match self {
            Delay::Millis(Whole(ms)) => {
                let d = Duration::from_millis(*ms);
                // The same ceiling as a delay with a unit.
                if d > MAX_DELAY {
                    return Err(format!("{ms} ms is longer than 100 years"));
                }
                Ok(d)
            }
            Delay::Text(text) => parse_delay(text),
        }
    }
}

/// The longest delay accepted: 100 years.
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Reads `"90s"`, `"15m"`, `"2h"`, `"7d"`, `"250ms"` or a bare number of
/// milliseconds.
pub(crate) fn parse_delay(text: &str) -> Result<Duration, String> {
    let bad = || {
        format!(
            "{text:?} is not a delay: a whole number followed by ms, s, m, h or d (\"90s\"), or milliseconds"
        )
    };
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let n: u64 = number.parse().map_err(|_| bad())?;
    let unit_ms: u64 = match unit {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    let ms = n.checked_mul(unit_ms).ok_or_else(bad)?;
    let d = Duration::from_millis(ms);
    if d > MAX_DELAY {
        return Err(format!("{text:?} is longer than 100 years"));
    }
    Ok(d)
}

/// Reads an RFC 3339 date-time, rounded up to the millisecond.
pub(crate) fn parse_time(text: &str) -> Result<SystemTime, String> {
    let at = OffsetDateTime::parse(text, &Rfc3339).map_err(|e| {
        format!("{text:?} is not an RFC 3339 date-time (e.g. 2030-01-01T09:00:00Z): {e}")
    })?;
    let nanos = at.unix_timestamp_nanos();
    let nanos = u128::try_from(nanos).map_err(|_| format!("{text:?} is before 1970"))?;
    let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| format!("{text:?} is too late"))?;
    let at = UNIX_EPOCH + Duration::new(secs, (nanos % 1_000_000_000) as u32);
    Ok(ceil_ms(at))
}

/// `at` rounded up to the next whole millisecond, as the store rounds.
pub(crate) fn ceil_ms(at: SystemTime) -> SystemTime {
    let Ok(since) = at.duration_since(UNIX_EPOCH) else {
        return at;
    };
    let ms = since.as_nanos().div_ceil(1_000_000);
    let ms = u64::try_from(ms).unwrap_or(u64::MAX);
    UNIX_EPOCH
        .checked_add(Duration::from_millis(ms))
        .unwrap_or(at)
}

/// How times go out: RFC 3339 in UTC with exactly three fraction digits,
/// so that every time has one text (clients may compare them as strings).
const TIME_FORMAT: &[BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// A time as RFC 3339 in UTC, with milliseconds (always three digits; a
/// finer time is cut to the millisecond, the store's precision).
pub(crate) fn format_time(at: SystemTime) -> String {
    let nanos = match at.duration_since(UNIX_EPOCH) {
        Ok(d) => i128::try_from(d.as_nanos()).unwrap_or(i128::MAX),
        Err(e) => -i128::try_from(e.duration().as_nanos()).unwrap_or(i128::MAX),
    };
    let Ok(at) = OffsetDateTime::from_unix_timestamp_nanos(nanos) else {
        return String::new();
    };
    at.format(TIME_FORMAT).unwrap_or_default()
}

/// A timer as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct Timer {
    /// The key.
    pub(crate) key: String,
    /// Where it is in its life.
    pub(crate) state: State,
    /// When it is (or was) due, RFC 3339.
    pub(crate) due_at: String,
    /// When it was first due (a retry moves `due_at` but not this).
    pub(crate) first_due_at: String,
    /// Runs started so far.
    pub(crate) attempts: u32,
    /// The request it sends; null when the timer is not a callback (added
    /// through the library with another payload).
    pub(crate) callback: Option<CallbackOut>,
    /// When it gave up (dead letters only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) failed_at: Option<String>,
    /// Why it gave up (dead letters only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
}

/// A stored callback as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct CallbackOut {
    /// The method.
    pub(crate) method: &'static str,
    /// The URL.
    pub(crate) url: String,
    /// The extra request headers.
    pub(crate) headers: BTreeMap<String, String>,
    /// The body as text (bytes that are not UTF-8 are replaced).
    pub(crate) body: String,
    /// Attempts in all this callback gets (absent: the node's policy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_attempts: Option<u32>,
    /// The flow key it counts against: the `flow` it was added with, else
    /// its URL's origin.
    pub(crate) flow: String,
}

/// Where a timer is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum State {
    /// Waiting in the store; no node holds it.
    Pending,
    /// A node holds it until it is due; not started.
    Claimed,
    /// Its callback is being sent.
    Running,
    /// It gave up: a dead letter.
    Dead,
    /// It came due while its flow key was paused: kept in the store, not
    /// claimed, no attempt spent, until the flow key is resumed.
    Parked,
}

impl From<TimerState> for State {
    fn from(state: TimerState) -> State {
        match state {
            TimerState::Pending => State::Pending,
            TimerState::Claimed => State::Claimed,
            TimerState::Running => State::Running,
            TimerState::Parked => State::Parked,
            _ => State::Dead,
        }
    }
}

impl Timer {
    /// A timer as an add or a revival makes it: pending, due at `due`
    /// (first due then too), no attempts yet.
    pub(crate) fn pending(key: String, due: SystemTime, callback: Option<CallbackOut>) -> Timer {
        Timer {
            key,
            state: State::Pending,
            due_at: format_time(due),
            first_due_at: format_time(due),
            attempts: 0,
            callback,
            failed_at: None,
            reason: None,
        }
    }
}

impl CallbackOut {
    /// How the API shows `cb`.
    pub(crate) fn of(cb: HttpCallback) -> CallbackOut {
        CallbackOut {
            flow: cb.flow_key(),
            method: cb.method.as_str(),
            url: cb.url,
            headers: cb.headers.into_iter().collect(),
            body: String::from_utf8_lossy(&cb.body).into_owned(),
            max_attempts: cb.retry.as_ref().map(RetryPolicy::attempts),
        }
    }
}

impl From<&TimerInfo> for Timer {
    fn from(t: &TimerInfo) -> Timer {
        Timer {
            key: t.key.clone(),
            state: t.state.into(),
            due_at: format_time(t.due),
            first_due_at: format_time(t.first_due),
            attempts: t.attempts,
            callback: t.callback().map(CallbackOut::of),
            failed_at: t.failed_at.map(format_time),
            reason: t.reason.clone(),
        }
    }
}

/// A dead letter as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct DeadOut {
    /// The key.
    pub(crate) key: String,
    /// Runs started.
    pub(crate) attempts: u32,
    /// Why it gave up.
    pub(crate) reason: String,
    /// When it gave up, RFC 3339.
    pub(crate) failed_at: String,
    /// The request it sent; null when it is not a callback.
    pub(crate) callback: Option<CallbackOut>,
}

impl From<&DeadLetter> for DeadOut {
    fn from(d: &DeadLetter) -> DeadOut {
        DeadOut {
            key: d.key.clone(),
            attempts: d.attempts,
            reason: d.reason.clone(),
            failed_at: format_time(d.failed_at),
            callback: d.callback().map(CallbackOut::of),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_take_each_unit_and_refuse_the_rest() {
        assert_eq!(parse_delay("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_delay("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_delay("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_delay("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_delay("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_delay("250"), Ok(Duration::from_millis(250)));
        for bad in [
            "",
            "s",
            "1.5s",
            "-3s",
            "10y",
            "5 s",
            "99999999999999999999d",
            "40000d",
        ] {
            assert!(parse_delay(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn times_round_trip_at_millisecond_precision() {
        let at = parse_time("2030-01-01T09:00:00.1234Z").unwrap();
        assert_eq!(format_time(at), "2030-01-01T09:00:00.124Z");
        let offset = parse_time("2030-01-01T10:00:00+01:00").unwrap();
        assert_eq!(format_time(offset), "2030-01-01T09:00:00.000Z");
        let tenth = parse_time("2030-01-01T09:00:00.1Z").unwrap();
        assert_eq!(format_time(tenth), "2030-01-01T09:00:00.100Z");
        assert_eq!(format_time(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert!(parse_time("1969-12-31T23:59:59Z").is_err());
        assert!(parse_time("tomorrow").is_err());
        assert!(parse_time("2030-13-01T00:00:00Z").is_err());
    }
}
