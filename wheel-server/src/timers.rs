//! The timer routes: add (one or a batch), read, list, reschedule,
//! cancel; [`router`] mounts them.
//!
//! Adding is idempotent on the key (see [`crate::adder`]).

use std::time::SystemTime;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wheel_durable::{TimerInfo, TimerState};

use crate::adder::{Added, add_group};
use crate::context::ApiContext;
use crate::ended::{CreateAnswer, EndedOut};
use crate::error::Problem;
use crate::extractor::{JsonBody, Key};
use crate::guard::Guard;
use crate::json::{CallbackOut, Checked, Delay, NewTimer, Timer, format_time};
use crate::key::timer_path;
use crate::listing::{self, ListQuery, TimerPage};

/// The most timers in one batch.
pub(crate) const MAX_BATCH: usize = 1_000;

/// The timer routes, under `/v1/timers`.
pub(crate) fn router() -> Router<ApiContext> {
    Router::new()
        .route("/v1/timers", post(create).get(list))
        .route("/v1/timers:batch", post(batch))
        .route(
            "/v1/timers/{key}",
            axum::routing::get(get).delete(cancel).patch(reschedule),
        )
}

/// The timer a successful add made, as the store now holds it.
fn added(c: &Checked) -> Timer {
    Timer::pending(
        c.key.clone(),
        c.due,
        Some(CallbackOut::of(c.callback.clone())),
    )
}

fn churning(key: &str) -> Problem {
    Problem::conflict(format!(
        "timers with the key {key:?} keep being added and ending; send the request again"
    ))
    .at("key")
}

fn conflict(key: &str) -> Problem {
    Problem::conflict(format!(
        "a timer with the key {key:?} exists with a different callback or due time"
    ))
    .at("key")
}

/// Adds a timer.
#[utoipa::path(post, path = "/v1/timers", operation_id = "createTimer", tag = "timers", request_body = NewTimer,
    responses(
        (status = 201, description = "Added", body = Timer,
            headers(("Location" = String, description = "The timer's path"))),
        (status = 200, description = "A timer with this key and the same content exists (a Timer), or one with this key ended within the dedup window (an EndedTimer: nothing was added)", body = CreateAnswer),
        (status = 409, description = "A timer with this key exists with other content", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A field is invalid", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn create(
    State(ctx): State<ApiContext>,
    JsonBody(req): JsonBody<NewTimer>,
) -> Result<Response, Problem> {
    let c = req.check("", SystemTime::now())?;
    Guard::new(ctx.allow_private)
        .check(&c.callback.url, "callback.url")
        .await?;
    let outcome = ctx
        .adder
        .add(c.clone())
        .await
        .ok_or_else(|| Problem::internal("the add was not answered (the server may be stopping)"))?
        .map_err(|e| Problem::durable(&e, ""))?;
    match outcome {
        Added::Created => {
            let location = [(header::LOCATION, timer_path(&c.key))];
            Ok((StatusCode::CREATED, location, Json(added(&c))).into_response())
        }
        Added::Same(info) => {
            let body = CreateAnswer::Existing(Timer::from(&info));
            Ok((StatusCode::OK, Json(body)).into_response())
        }
        Added::Ended(e) => {
            let body = CreateAnswer::Ended(EndedOut::from(&e));
            Ok((StatusCode::OK, Json(body)).into_response())
        }
        Added::Different => Err(conflict(&c.key)),
        Added::Churning => Err(churning(&c.key)),
    }
}

/// A batch of timers to add.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewBatch {
    /// 1 to 1000 timers, each as for `POST /v1/timers`.
    #[schema(min_items = 1, max_items = 1000)]
    #[serde(deserialize_with = "crate::decode::objects")]
    pub(crate) timers: Vec<NewTimer>,
}

/// What became of one timer of a batch: its key and status, and its due
/// time when it exists (the whole timer is one `GET` away; a batch answer
/// that repeated every callback would be most of the request again).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BatchItem {
    /// The key (the generated one for a timer given none).
    pub(crate) key: String,
    /// 201 added, 200 the same timer existed or one with this key ended
    /// within the dedup window (then `ended` says how), 409 another timer
    /// has this key.
    pub(crate) status: u16,
    /// When the timer is due, RFC 3339 (for 201 and 200; for 200 the
    /// existing timer's due time; absent for an ended one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) due_at: Option<String>,
    /// How and when the timer with this key ended, when it ended within
    /// the dedup window (nothing was added).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ended: Option<EndedOut>,
}

/// The answer to a batch: one item per timer, in order.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BatchResult {
    /// One per timer of the request.
    pub(crate) results: Vec<BatchItem>,
}

/// Adds up to 1000 timers; each is idempotent on its key as for one.
#[utoipa::path(post, path = "/v1/timers:batch", operation_id = "addTimers", tag = "timers", request_body = NewBatch,
    responses(
        (status = 200, description = "Every timer checked; each item says what became of it", body = BatchResult),
        (status = 422, description = "A field is invalid (nothing was added)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn batch(
    State(ctx): State<ApiContext>,
    JsonBody(req): JsonBody<NewBatch>,
) -> Result<Json<BatchResult>, Problem> {
    if req.timers.is_empty() || req.timers.len() > MAX_BATCH {
        return Err(Problem::invalid(
            "timers",
            format!("a batch holds 1 to {MAX_BATCH} timers"),
        ));
    }
    let now = SystemTime::now();
    let mut checked = Vec::with_capacity(req.timers.len());
    for (i, timer) in req.timers.into_iter().enumerate() {
        checked.push(timer.check(&format!("timers[{i}]."), now)?);
    }
    // Every timer's fields first, then the targets together: their names
    // are resolved concurrently, within one budget for the request.
    let targets: Vec<(&str, String)> = checked
        .iter()
        .enumerate()
        .map(|(i, c)| (c.callback.url.as_str(), format!("timers[{i}].callback.url")))
        .collect();
    Guard::new(ctx.allow_private).check_all(&targets).await?;
    // Every timer's fields were checked above, each under its own
    // prefix; what the store refuses here is about the batch as stored.
    let outcomes = add_group(&ctx.timers, &checked)
        .await
        .map_err(|e| Problem::durable(&e, ""))?;
    let mut results = Vec::with_capacity(checked.len());
    for (c, outcome) in checked.iter().zip(outcomes) {
        let (status, due_at, ended) = match outcome {
            Added::Created => (201, Some(format_time(c.due)), None),
            Added::Same(info) => (200, Some(format_time(info.due)), None),
            Added::Ended(e) => (200, None, Some(EndedOut::from(&e))),
            Added::Different | Added::Churning => (409, None, None),
        };
        results.push(BatchItem {
            key: c.key.clone(),
            status,
            due_at,
            ended,
        });
    }
    Ok(Json(BatchResult { results }))
}

/// Reads a timer, whatever its state.
#[utoipa::path(get, path = "/v1/timers/{key}", operation_id = "getTimer", tag = "timers",
    params(("key" = String, Path, description = "The timer's key", min_length = 1, max_length = 1024)),
    responses(
        (status = 200, description = "The timer", body = Timer),
        (status = 404, description = "No timer with this key", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn get(
    State(ctx): State<ApiContext>,
    Key(key): Key,
) -> Result<Json<Timer>, Problem> {
    let info = ctx
        .timers
        .get(&key)
        .await
        .map_err(|e| Problem::durable(&e, ""))?;
    info.map(|i| Json(Timer::from(&i)))
        .ok_or_else(|| Problem::no_timer(&key, "timer"))
}

/// Cancels (removes) a timer, whatever its state.
#[utoipa::path(delete, path = "/v1/timers/{key}", operation_id = "cancelTimer", tag = "timers",
    params(("key" = String, Path, description = "The timer's key", min_length = 1, max_length = 1024)),
    responses(
        (status = 204, description = "Cancelled: it will not start (a run already started finishes, its outcome ignored)"),
        (status = 404, description = "No timer with this key", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn cancel(
    State(ctx): State<ApiContext>,
    Key(key): Key,
) -> Result<StatusCode, Problem> {
    let durable = |e| Problem::durable(&e, "");
    // `cancel` answers true only for a timer that had not started; a
    // running timer or a dead letter is removed too, and existed.
    let existed = ctx.timers.get(&key).await.map_err(durable)?.is_some();
    let existed = ctx.timers.cancel(&key).await.map_err(durable)? || existed;
    if existed {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(Problem::no_timer(&key, "timer"))
    }
}

/// A new due time.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Reschedule {
    /// When to call, RFC 3339. Give this or `delay`.
    #[schema(format = DateTime, pattern = "^(?:19[7-9][0-9]|[2-9][0-9]{3})-")]
    pub(crate) due_at: Option<String>,
    /// How long from now, as for adding. Give this or `due_at`.
    pub(crate) delay: Option<Delay>,
}

impl Reschedule {
    /// The due time asked for.
    pub(crate) fn due(&self, now: SystemTime) -> Result<SystemTime, Problem> {
        match (&self.due_at, &self.delay) {
            (Some(_), Some(_)) => Err(Problem::invalid("delay", "give due_at or delay, not both")),
            (None, None) => Err(Problem::invalid("due_at", "give due_at or delay")),
            (Some(at), None) => {
                crate::json::parse_time(at).map_err(|d| Problem::invalid("due_at", d))
            }
            (None, Some(d)) => {
                let d = d.duration().map_err(|why| Problem::invalid("delay", why))?;
                now.checked_add(d)
                    .ok_or_else(|| Problem::invalid("delay", "the delay is too long"))
            }
        }
    }
}

/// Moves a timer that has not started to a new due time.
#[utoipa::path(patch, path = "/v1/timers/{key}", operation_id = "rescheduleTimer", tag = "timers", request_body = Reschedule,
    params(("key" = String, Path, description = "The timer's key", min_length = 1, max_length = 1024)),
    responses(
        (status = 200, description = "Rescheduled", body = Timer),
        (status = 404, description = "No timer with this key", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "It has started, or is a dead letter", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn reschedule(
    State(ctx): State<ApiContext>,
    Key(key): Key,
    JsonBody(req): JsonBody<Reschedule>,
) -> Result<Json<Timer>, Problem> {
    let due = req.due(SystemTime::now())?;
    let durable = |e| Problem::durable(&e, "");
    let moved = if ctx.timers.reset_at(&key, due).await.map_err(durable)? {
        Moved::Done(ctx.timers.get(&key).await.map_err(durable)?)
    } else {
        Moved::Not(
            ctx.timers
                .get(&key)
                .await
                .map_err(durable)?
                .map(|i| i.state),
        )
    };
    match moved {
        Moved::Done(Some(info)) => Ok(Json(Timer::from(&info))),
        // Moved into the past, it fired and finished before the read.
        Moved::Done(None) | Moved::Not(None) => Err(Problem::no_timer(&key, "timer")),
        Moved::Not(Some(TimerState::Dead)) => Err(Problem::conflict(format!(
            "{key:?} is a dead letter: revive it with POST /v1/dead-letters/{{key}}/retry"
        ))
        .at("key")),
        Moved::Not(Some(_)) => Err(Problem::conflict(format!(
            "{key:?} has started; it can no longer be moved"
        ))
        .at("key")),
    }
}

/// What a reschedule came to.
enum Moved {
    /// Moved; the timer as read back (gone if it fired at once).
    Done(Option<TimerInfo>),
    /// Not moved: absent, or in this state.
    Not(Option<TimerState>),
}

/// Lists timers of one state, by due time, a page at a time.
#[utoipa::path(get, path = "/v1/timers", operation_id = "listTimers", tag = "timers", params(ListQuery),
    responses(
        (status = 200, description = "One page", body = TimerPage),
        (status = 400, description = "A parameter is invalid", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn list(
    State(ctx): State<ApiContext>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<TimerPage>, Problem> {
    let Query(query) = query.map_err(|e| Problem::query(&e))?;
    listing::timers(&ctx.timers, query).await.map(Json)
}
