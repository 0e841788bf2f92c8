//! The dead-letter routes: list, revive, remove.
//!
//! A dead letter is a timer that gave up (its callback answered a status
//! that is not retried, or it ran out of attempts). Reviving makes it
//! pending again, due now, with its attempts reset; removing deletes it.
//! Both act only on a timer that is a dead letter: a key that holds a
//! live timer answers 404 here, so a client cannot cancel a pending timer
//! through this route by mistake. [`router`] mounts them, and the bulk
//! replay routes of `replays.rs`.

use std::time::SystemTime;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use wheel_durable::TimerState;

use crate::context::ApiContext;
use crate::error::Problem;
use crate::extractor::Key;
use crate::json::{self, CallbackOut, Timer};
use crate::listing::{self, DeadPage, DeadQuery};

/// The dead-letter routes, under `/v1/dead-letters`.
pub(crate) fn router() -> Router<ApiContext> {
    Router::new()
        .route("/v1/dead-letters", get(list))
        .route("/v1/dead-letters/{key}", delete(remove))
        .route("/v1/dead-letters/{key}/retry", post(retry))
        .merge(crate::replays::router())
}

/// Lists dead letters, oldest failure first, a page at a time.
#[utoipa::path(get, path = "/v1/dead-letters", operation_id = "listDeadLetters", tag = "dead letters", params(DeadQuery),
    responses(
        (status = 200, description = "One page", body = DeadPage),
        (status = 400, description = "A parameter is invalid", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn list(
    State(ctx): State<ApiContext>,
    query: Result<Query<DeadQuery>, QueryRejection>,
) -> Result<Json<DeadPage>, Problem> {
    let Query(query) = query.map_err(|e| Problem::query(&e))?;
    listing::dead(&ctx.timers, query).await.map(Json)
}

/// Revives a dead letter: pending again, due now, attempts reset.
#[utoipa::path(post, path = "/v1/dead-letters/{key}/retry", operation_id = "retryDeadLetter", tag = "dead letters",
    params(("key" = String, Path, description = "The dead letter's key", min_length = 1, max_length = 1024)),
    responses(
        (status = 200, description = "Revived", body = Timer),
        (status = 404, description = "No dead letter with this key", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn retry(
    State(ctx): State<ApiContext>,
    Key(key): Key,
) -> Result<Json<Timer>, Problem> {
    // The store's due times are whole milliseconds, rounded up.
    let due = json::ceil_ms(SystemTime::now());
    let durable = |e| Problem::durable(&e, "");
    // The dead letter as it was: a read after the revival could find it
    // already started (it is due now), or gone.
    let dead = ctx.timers.get(&key).await.map_err(durable)?;
    let dead = match dead.filter(|i| i.state == TimerState::Dead) {
        Some(dead) if ctx.timers.retry_dead(&key, due).await.map_err(durable)? => dead,
        _ => return Err(Problem::no_timer(&key, "dead letter")),
    };
    // What the revival made: pending, due now (first due now too, as for a
    // timer added then), no attempts yet.
    Ok(Json(Timer::pending(
        key,
        due,
        dead.callback().map(CallbackOut::of),
    )))
}

/// Removes a dead letter.
#[utoipa::path(delete, path = "/v1/dead-letters/{key}", operation_id = "removeDeadLetter", tag = "dead letters",
    params(("key" = String, Path, description = "The dead letter's key", min_length = 1, max_length = 1024)),
    responses(
        (status = 204, description = "Removed"),
        (status = 404, description = "No dead letter with this key", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn remove(
    State(ctx): State<ApiContext>,
    Key(key): Key,
) -> Result<StatusCode, Problem> {
    let durable = |e| Problem::durable(&e, "");
    // A dead letter stays one until revived or replaced: the read and the
    // removal race only with those, from other clients.
    let removed = match ctx.timers.get(&key).await.map_err(durable)? {
        Some(info) if info.state == TimerState::Dead => {
            ctx.timers.cancel(&key).await.map_err(durable)?;
            true
        }
        _ => false,
    };
    if removed {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(Problem::no_timer(&key, "dead letter"))
    }
}
