//! The replay routes: revive dead letters in bulk, by filter, at a rate.
//!
//! `POST /v1/dead-letters:replay` starts a replay on this node (the
//! library's `DurableTimers::replay_dead`: failure order, evenly paced,
//! each letter revived as `POST /v1/dead-letters/{key}/retry` does) and
//! answers 202 with its id and a `Location`;
//! `GET /v1/dead-letters/replays/{id}` shows its progress, `DELETE`
//! cancels it, answers its final progress and forgets it. Replays live in this node's memory ([`ReplayBook`]): they
//! do not survive its restart, and another node behind the same store
//! does not know them. [`router`] mounts them.

use std::sync::LazyLock;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, get, post};
use axum::{Json, Router};
use regex::Regex;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wheel_durable::{DeadFilter, MAX_REPLAY_RATE, ReplayState};

use crate::context::ApiContext;
use crate::error::Problem;
use crate::extractor::{Id, JsonBody};
use crate::json::{format_time, parse_time};
use crate::key::new_key;
use crate::replay_book::{Entry, MAX_RUNNING, StartError};

/// What a flow is: a callback's origin, `scheme://host:port`, the port
/// always written, the host a name or an IPv4 address. An IPv6 origin
/// (`[::1]`) is not taken: the document's readers check a bracketed host
/// as an address, which a pattern cannot promise.
pub(crate) const FLOW_PATTERN: &str = "^https?://[A-Za-z0-9.-]+:[0-9]{1,5}$";

/// The largest limit: the largest integer every JSON reader holds exactly.
const MAX_LIMIT: u64 = (1 << 53) - 1;

static FLOW: LazyLock<Regex> = LazyLock::new(|| Regex::new(FLOW_PATTERN).expect("a valid pattern"));

/// The replay routes.
pub(crate) fn router() -> Router<ApiContext> {
    let one: MethodRouter<ApiContext> = get(progress).delete(cancel);
    Router::new()
        .route("/v1/dead-letters:replay", post(replay))
        .route("/v1/dead-letters/replays/{id}", one)
}

/// Which dead letters a replay takes; every field given must hold.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplayFilter {
    /// Only callbacks to this origin, `scheme://host:port` with the port
    /// always written (`http://127.0.0.1:8080`), exactly. Dead letters
    /// that are not callbacks never match.
    #[schema(max_length = 2048, pattern = "^https?://[A-Za-z0-9.-]+:[0-9]{1,5}$")]
    pub(crate) flow: Option<String>,
    /// Only dead letters whose reason contains this text (case-sensitive).
    #[schema(max_length = 1024)]
    pub(crate) reason: Option<String>,
    /// Only dead letters that failed at or after this time, RFC 3339.
    #[schema(format = DateTime, pattern = "^(?:19[7-9][0-9]|[2-9][0-9]{3})-")]
    pub(crate) failed_since: Option<String>,
    /// Only dead letters that failed before this time, RFC 3339.
    #[schema(format = DateTime, pattern = "^(?:19[7-9][0-9]|[2-9][0-9]{3})-")]
    pub(crate) failed_before: Option<String>,
}

/// A replay to start.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplayRequest {
    /// Which dead letters; none: all of them.
    pub(crate) filter: Option<ReplayFilter>,
    /// Revivals per second, evenly paced: more than 0, at most 1 000 000.
    #[schema(exclusive_minimum = 0.0, maximum = 1_000_000.0)]
    pub(crate) rate: f64,
    /// Revive (or skip) at most this many; none: every match.
    #[schema(minimum = 1, maximum = 9007199254740991_u64)]
    pub(crate) limit: Option<u64>,
}

/// Where a replay is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ReplayStateOut {
    /// Still reviving.
    Running,
    /// Every match (up to the limit) was taken.
    Done,
    /// Cancelled by `DELETE`.
    Cancelled,
    /// The server shut down.
    Stopped,
    /// A store call failed; `error` says which. What was revived stays
    /// revived.
    Failed,
}

/// A replay and its progress.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ReplayOut {
    /// The replay's id, at `/v1/dead-letters/replays/{id}`.
    pub(crate) id: String,
    /// Where it is.
    pub(crate) state: ReplayStateOut,
    /// Dead letters that matched so far.
    pub(crate) matched: u64,
    /// Of those, revived (pending again, due at once).
    pub(crate) revived: u64,
    /// Of those, left alone: revived, removed or failed again by someone
    /// else after the replay read them.
    pub(crate) skipped: u64,
    /// Revivals per second.
    pub(crate) rate: f64,
    /// At most this many matches; null: no limit.
    pub(crate) limit: Option<u64>,
    /// The filter, as given.
    pub(crate) filter: ReplayFilter,
    /// When it started, RFC 3339 (this server's clock).
    pub(crate) started_at: String,
    /// Why it failed; null unless `failed`.
    pub(crate) error: Option<String>,
}

impl ReplayOut {
    fn of(e: &Entry, filter: ReplayFilter) -> ReplayOut {
        let p = e.replay.progress();
        let (state, error) = match p.state {
            ReplayState::Running => (ReplayStateOut::Running, None),
            ReplayState::Done => (ReplayStateOut::Done, None),
            ReplayState::Cancelled => (ReplayStateOut::Cancelled, None),
            ReplayState::Stopped => (ReplayStateOut::Stopped, None),
            ReplayState::Failed(err) => (ReplayStateOut::Failed, Some(err.to_string())),
            // A state of a later library: not running, cause unknown here.
            _ => (ReplayStateOut::Failed, Some("ended".to_owned())),
        };
        ReplayOut {
            id: e.id.clone(),
            state,
            matched: p.matched,
            revived: p.revived,
            skipped: p.skipped,
            rate: e.rate,
            limit: e.limit,
            filter,
            started_at: format_time(e.started_at),
            error,
        }
    }
}

/// The filter given, as the library's; each bad field a 422 naming it.
fn checked(filter: &ReplayFilter) -> Result<DeadFilter, Problem> {
    let mut f = DeadFilter::default();
    if let Some(flow) = &filter.flow {
        if flow.len() > 2048 || !FLOW.is_match(flow) {
            return Err(Problem::invalid(
                "filter.flow",
                format!(
                    "{flow:?} is not an origin `scheme://host:port` (e.g. http://127.0.0.1:8080)"
                ),
            ));
        }
        f = f.flow(flow.clone());
    }
    if let Some(reason) = &filter.reason {
        if reason.chars().count() > 1024 {
            return Err(Problem::invalid("filter.reason", "at most 1024 characters"));
        }
        f = f.reason(reason.clone());
    }
    let time = |text: &Option<String>, field: &str| {
        text.as_deref()
            .map(parse_time)
            .transpose()
            .map_err(|d| Problem::invalid(field, d))
    };
    if let Some(at) = time(&filter.failed_since, "filter.failed_since")? {
        f = f.failed_since(at);
    }
    if let Some(at) = time(&filter.failed_before, "filter.failed_before")? {
        f = f.failed_before(at);
    }
    if let (Some(since), Some(before)) = (f.failed_since, f.failed_before)
        && since >= before
    {
        return Err(Problem::invalid(
            "filter.failed_before",
            "failed_before must be after failed_since: the time range is empty",
        ));
    }
    Ok(f)
}

/// Starts a replay of the dead letters the filter takes, at `rate` per
/// second, evenly paced.
#[utoipa::path(post, path = "/v1/dead-letters:replay", operation_id = "replayDeadLetters", tag = "dead letters", request_body = ReplayRequest,
    responses(
        (status = 202, description = "Started", body = ReplayOut,
            headers(("Location" = String, description = "The replay's path"))),
        (status = 429, description = "Too many replays run on this server already", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn replay(
    State(ctx): State<ApiContext>,
    JsonBody(req): JsonBody<ReplayRequest>,
) -> Result<impl IntoResponse, Problem> {
    if !(req.rate > 0.0 && req.rate <= MAX_REPLAY_RATE) {
        return Err(Problem::invalid(
            "rate",
            format!("the rate must be more than 0 and at most {MAX_REPLAY_RATE} per second"),
        ));
    }
    if req.limit.is_some_and(|n| n == 0 || n > MAX_LIMIT) {
        return Err(Problem::invalid(
            "limit",
            format!("the limit must be from 1 to {MAX_LIMIT} (or null)"),
        ));
    }
    let filter = checked(&req.filter.unwrap_or_default())?;
    let id = new_key(std::time::SystemTime::now())?;
    let timers = ctx.timers.clone();
    let (f, rate, limit) = (filter.clone(), req.rate, req.limit);
    let started = ctx
        .replays
        .start(id, filter, rate, limit, async move {
            timers.replay_dead(&f, rate, limit).await
        })
        .await;
    let entry = match started {
        Ok(entry) => entry,
        Err(StartError::Full) => {
            return Err(Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too-many-replays",
                "Too many replays are running",
                format!(
                    "{MAX_RUNNING} replays run on this server; cancel one or wait for one to end"
                ),
            ));
        }
        Err(StartError::Durable(e)) => return Err(Problem::durable(&e, "")),
    };
    let location = [(header::LOCATION, replay_path(&entry.id))];
    Ok((
        StatusCode::ACCEPTED,
        location,
        Json(ReplayOut::of(&entry, filter_out(&entry.filter))),
    ))
}

fn replay_path(id: &str) -> String {
    // Ids are hex: nothing to encode.
    format!("/v1/dead-letters/replays/{id}")
}

/// The filter an entry was started with, in the API's words.
fn filter_out(f: &DeadFilter) -> ReplayFilter {
    ReplayFilter {
        flow: f.flow.clone(),
        reason: f.reason.clone(),
        failed_since: f.failed_since.map(format_time),
        failed_before: f.failed_before.map(format_time),
    }
}

/// The entry kept under `id`: 422 for an id no replay could have, 404
/// for one this server does not keep.
async fn entry(ctx: &ApiContext, id: &str) -> Result<Entry, Problem> {
    // Counted as the document's `maxLength` counts: in characters.
    if id.chars().count() > 512 {
        return Err(Problem::invalid("id", "an id is at most 512 characters"));
    }
    ctx.replays.get(id).await.ok_or_else(|| no_replay(id))
}

fn no_replay(id: &str) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "no-replay",
        "No such replay",
        format!("this server keeps no replay {id:?} (replays do not survive a restart; the last 100 are kept)"),
    )
    .at("id")
}

/// A replay's progress.
#[utoipa::path(get, path = "/v1/dead-letters/replays/{id}", operation_id = "getReplay", tag = "dead letters",
    params(("id" = String, Path, description = "The replay's id", min_length = 1, max_length = 512)),
    responses(
        (status = 200, description = "The replay", body = ReplayOut),
        (status = 404, description = "No replay with this id on this server", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn progress(
    State(ctx): State<ApiContext>,
    Id(id): Id,
) -> Result<Json<ReplayOut>, Problem> {
    let entry = entry(&ctx, &id).await?;
    Ok(Json(ReplayOut::of(&entry, filter_out(&entry.filter))))
}

/// Cancels a replay, answers its final progress once it has stopped (a
/// revival under way completes; a finished replay is answered as it is),
/// and forgets it: the id answers 404 from then on.
#[utoipa::path(delete, path = "/v1/dead-letters/replays/{id}", operation_id = "cancelReplay", tag = "dead letters",
    params(("id" = String, Path, description = "The replay's id", min_length = 1, max_length = 512)),
    responses(
        (status = 200, description = "Stopped (or already ended), and forgotten", body = ReplayOut),
        (status = 404, description = "No replay with this id on this server", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn cancel(
    State(ctx): State<ApiContext>,
    Id(id): Id,
) -> Result<Json<ReplayOut>, Problem> {
    entry(&ctx, &id).await?;
    // Gone already if another DELETE of it won the race.
    let entry = ctx
        .replays
        .remove(&id)
        .await
        .ok_or_else(|| no_replay(&id))?;
    entry.replay.cancel();
    entry.replay.wait_async().await;
    Ok(Json(ReplayOut::of(&entry, filter_out(&entry.filter))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_are_origins_with_a_port() {
        for ok in ["http://127.0.0.1:8080", "https://api.example:443"] {
            assert!(FLOW.is_match(ok), "{ok}");
        }
        for bad in [
            "http://127.0.0.1",
            "http://h:80/x",
            "ftp://h:21",
            "http://u@h:80",
            "http://h :80",
            "http://[::1]:80",
            "",
        ] {
            assert!(!FLOW.is_match(bad), "{bad}");
        }
    }

    #[test]
    fn an_empty_time_range_names_its_end() {
        let f = ReplayFilter {
            failed_since: Some("2030-01-01T00:00:00Z".into()),
            failed_before: Some("2030-01-01T00:00:00Z".into()),
            ..ReplayFilter::default()
        };
        let p = checked(&f).unwrap_err();
        assert_eq!(p.field.as_deref(), Some("filter.failed_before"));
    }
}
