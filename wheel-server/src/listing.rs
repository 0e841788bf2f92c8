//! Paging through timers and dead letters with the library's cursors.
//!
//! A page holds up to `limit` timers (1 to 1000, default 100) and
//! `next_cursor`, the library's cursor in its text form, to pass back as
//! `cursor` for the next page; it is null after the last. Pages resume by
//! position, not offset, so timers added or removed between pages shift
//! nothing (see `Cursor` in the library).
//!
//! `state=pending` pages through pending timers by due time, and
//! `due_before` ends the listing at the first timer due at or after it;
//! `state=parked` (timers of a paused flow key that came due) likewise.
//! `claimed` and `running` share the store's one index of claimed timers
//! (ordered by the end of their lease): the page is filtered to the state
//! asked for, so a page may hold fewer than `limit` timers, even none,
//! while `next_cursor` is still set; `due_before` filters there too.
//!
//! `schedule=ID` keeps the runs of one schedule (timers whose key is
//! `sched:{ID}:{ms}` or `sched-trigger:{ID}:{ms}`), filtering the pages
//! as above: a page may be short, or empty, while `next_cursor` is set.
//!
//! The routes that serve these pages are their resources' (`timers.rs`,
//! `dead.rs`); this module reads the store and makes the pages only.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use wheel_durable::{AsyncTimers, Cursor, Listing, Page, TimerState};

use crate::error::Problem;
use crate::json::{CallbackOut, DeadOut, Timer, format_time, parse_time};

/// The default page size.
const DEFAULT_LIMIT: usize = 100;

/// The parameters of `GET /v1/timers`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// `pending` (the default), `claimed`, `running` or `parked`.
    pub(crate) state: Option<String>,
    /// Only timers due before this time, RFC 3339.
    #[param(format = DateTime, pattern = "^(?:19[7-9][0-9]|[2-9][0-9]{3})-")]
    pub(crate) due_before: Option<String>,
    /// Timers per page, 1 to 1000 (default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub(crate) limit: Option<String>,
    /// The `next_cursor` of the previous page.
    pub(crate) cursor: Option<String>,
    /// Only the runs of the schedule with this id (its chain's runs and
    /// its triggered runs).
    #[param(min_length = 1, max_length = 512)]
    pub(crate) schedule: Option<String>,
}

/// The parameters of `GET /v1/dead-letters`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DeadQuery {
    /// Dead letters per page, 1 to 1000 (default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub(crate) limit: Option<String>,
    /// The `next_cursor` of the previous page.
    pub(crate) cursor: Option<String>,
}

/// One page of timers.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TimerPage {
    /// The timers, by due time (pending) or lease end (claimed, running).
    pub(crate) timers: Vec<Timer>,
    /// The cursor of the next page; null after the last.
    pub(crate) next_cursor: Option<String>,
}

/// One page of dead letters.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DeadPage {
    /// The dead letters, oldest failure first.
    pub(crate) dead_letters: Vec<DeadOut>,
    /// The cursor of the next page; null after the last.
    pub(crate) next_cursor: Option<String>,
}

pub(crate) fn limit(text: Option<&str>) -> Result<usize, Problem> {
    let Some(text) = text else {
        return Ok(DEFAULT_LIMIT);
    };
    match text.parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(Problem::bad_parameter(
            "limit",
            format!("{text:?} is not a whole number from 1 to 1000"),
        )),
    }
}

fn cursor(text: Option<&str>, listing: Listing) -> Result<Option<Cursor>, Problem> {
    let Some(text) = text else {
        return Ok(None);
    };
    let c: Cursor = text
        .parse()
        .map_err(|e| Problem::bad_parameter("cursor", format!("{e}")))?;
    if c.listing() != listing {
        return Err(Problem::bad_parameter(
            "cursor",
            "this cursor belongs to another listing",
        ));
    }
    Ok(Some(c))
}

/// Reads one page of `listing`, from its start or after `cursor`.
async fn page(
    timers: &AsyncTimers,
    listing: Listing,
    cursor: Option<Cursor>,
    limit: usize,
) -> Result<Page, Problem> {
    let page = match &cursor {
        Some(c) => timers.list_after(c, limit).await,
        None => timers.list(listing, limit).await,
    };
    page.map_err(|e| Problem::durable(&e, ""))
}

/// `GET /v1/timers`.
pub(crate) async fn timers(t: &AsyncTimers, q: ListQuery) -> Result<TimerPage, Problem> {
    let wanted = match q.state.as_deref().unwrap_or("pending") {
        "pending" => TimerState::Pending,
        "claimed" => TimerState::Claimed,
        "running" => TimerState::Running,
        "parked" => TimerState::Parked,
        other => {
            return Err(Problem::bad_parameter(
                "state",
                format!(
                    "{other:?} is not pending, claimed, running or parked (dead letters are at /v1/dead-letters)"
                ),
            ));
        }
    };
    let before: Option<SystemTime> = match q.due_before.as_deref() {
        Some(text) => Some(parse_time(text).map_err(|d| Problem::bad_parameter("due_before", d))?),
        None => None,
    };
    if let Some(id) = q.schedule.as_deref()
        && (id.is_empty() || id.len() > wheel_durable::schedule::MAX_SCHEDULE_ID_LEN)
    {
        return Err(Problem::bad_parameter(
            "schedule",
            "a schedule id is 1 to 512 bytes",
        ));
    }
    let listing = match wanted {
        TimerState::Pending => Listing::Pending,
        TimerState::Parked => Listing::Parked,
        _ => Listing::Claimed,
    };
    // Pending and parked timers come by due time: after the first one not
    // due before `due_before`, none is.
    let by_due = matches!(listing, Listing::Pending | Listing::Parked);
    let limit = limit(q.limit.as_deref())?;
    let cursor = cursor(q.cursor.as_deref(), listing)?;
    let page = page(t, listing, cursor, limit).await?;
    let mut next = page.next.map(|c| c.to_string());
    let mut timers = Vec::with_capacity(page.timers.len());
    for t in &page.timers {
        let early = before.is_none_or(|b| t.due < b);
        if by_due && !early {
            next = None;
            break;
        }
        let owned = q.schedule.as_deref().is_none_or(|id| is_run_of(&t.key, id));
        if t.state == wanted && early && owned {
            timers.push(Timer::from(t));
        }
    }
    Ok(TimerPage {
        timers,
        next_cursor: next,
    })
}

/// Whether `key` is the key of a run of schedule `id`: `sched:{id}:{ms}`
/// or `sched-trigger:{id}:{ms}`, the time after the last colon.
fn is_run_of(key: &str, id: &str) -> bool {
    if let Some((owner, _)) = wheel_durable::schedule::parse_run_key(key) {
        return owner == id;
    }
    key.strip_prefix("sched-trigger:")
        .and_then(|rest| rest.rsplit_once(':'))
        .is_some_and(|(owner, ms)| owner == id && ms.bytes().all(|b| b.is_ascii_digit()))
}

/// `GET /v1/dead-letters`.
pub(crate) async fn dead(t: &AsyncTimers, q: DeadQuery) -> Result<DeadPage, Problem> {
    let limit = limit(q.limit.as_deref())?;
    let cursor = cursor(q.cursor.as_deref(), Listing::Dead)?;
    let page = page(t, Listing::Dead, cursor, limit).await?;
    let dead_letters = page
        .timers
        .iter()
        .map(|t| DeadOut {
            key: t.key.clone(),
            attempts: t.attempts,
            reason: t.reason.clone().unwrap_or_default(),
            failed_at: t.failed_at.map(format_time).unwrap_or_default(),
            callback: t.callback().map(CallbackOut::of),
        })
        .collect();
    Ok(DeadPage {
        dead_letters,
        next_cursor: page.next.map(|c| c.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_cursors_are_checked() {
        assert_eq!(limit(None).unwrap(), 100);
        assert_eq!(limit(Some("1000")).unwrap(), 1000);
        for bad in ["0", "1001", "-1", "ten", ""] {
            assert_eq!(
                limit(Some(bad)).unwrap_err().field.as_deref(),
                Some("limit")
            );
        }
        assert!(cursor(Some("p.17.6b"), Listing::Pending).unwrap().is_some());
        assert!(cursor(Some("p.17.6b"), Listing::Dead).is_err());
        assert!(cursor(Some("garbage"), Listing::Pending).is_err());
    }

    #[test]
    fn a_run_belongs_to_the_schedule_its_key_names_exactly() {
        assert!(is_run_of("sched:a:b:1800000000000", "a:b"));
        assert!(!is_run_of("sched:a:b:1800000000000", "a"));
        assert!(is_run_of("sched-trigger:a:17", "a"));
        assert!(!is_run_of("sched-trigger:ab:17", "a"));
        assert!(!is_run_of("a:17", "a"));
    }
}
