//! The dead-letter routes: list, revive, remove.
//!
//! A dead letter is a timer that gave up (its callback answered a status
//! that is not retried, or it ran out of attempts). Reviving makes it
//! pending again, due now, with its attempts reset; removing deletes it.
//! Both act only on a timer that is a dead letter: a key that holds a
//! live timer answers 404 here, so a client cannot cancel a pending timer
//! through this route by mistake.

use std::time::SystemTime;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use wheel_durable::{DurableError, TimerInfo, TimerState};

use crate::app::AppState;
use crate::json::{self, CallbackOut, Timer};
use crate::listing::{self, DeadPage, DeadQuery};
use crate::problem::Problem;

/// Lists dead letters, oldest failure first, a page at a time.
#[utoipa::path(get, path = "/v1/dead-letters", operation_id = "listDeadLetters", tag = "dead letters", params(DeadQuery),
    responses(
        (status = 200, description = "One page", body = DeadPage),
        (status = 400, description = "A parameter is invalid", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn list(
    State(state): State<AppState>,
    query: Result<Query<DeadQuery>, QueryRejection>,
) -> Result<Json<DeadPage>, Problem> {
    let Query(query) = query.map_err(|e| Problem::query(&e))?;
    listing::dead(&state, query).await.map(Json)
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
    State(state): State<AppState>,
    key: Result<Path<String>, PathRejection>,
) -> Result<Json<Timer>, Problem> {
    let Path(key) = key.map_err(|e| Problem::path(&e))?;
    let k = key.clone();
    // The store's due times are whole milliseconds, rounded up.
    let due = json::ceil_ms(SystemTime::now());
    let revived = state
        .run(move |t| -> Result<Option<TimerInfo>, DurableError> {
            // The dead letter as it was: a read after the revival could
            // find it already started (it is due now), or gone.
            let Some(dead) = t.get(&k)?.filter(|i| i.state == TimerState::Dead) else {
                return Ok(None);
            };
            Ok(t.retry_dead(&k, due)?.then_some(dead))
        })
        .await?
        .map_err(|e| Problem::durable(&e, ""))?;
    let dead = revived.ok_or_else(|| Problem::no_timer(&key, "dead letter"))?;
    // What the revival made: pending, due now (first due now too, as for a
    // timer added then), no attempts yet.
    Ok(Json(Timer::pending(
        key,
        due,
        CallbackOut::of_payload(&dead.payload),
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
    State(state): State<AppState>,
    key: Result<Path<String>, PathRejection>,
) -> Result<StatusCode, Problem> {
    let Path(key) = key.map_err(|e| Problem::path(&e))?;
    let k = key.clone();
    let removed = state
        .run(move |t| -> Result<bool, DurableError> {
            // A dead letter stays one until revived or replaced: the read
            // and the removal race only with those, from other clients.
            match t.get(&k)? {
                Some(info) if info.state == TimerState::Dead => t.cancel(&k).map(|_| true),
                _ => Ok(false),
            }
        })
        .await?
        .map_err(|e| Problem::durable(&e, ""))?;
    if removed {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(Problem::no_timer(&key, "dead letter"))
    }
}
