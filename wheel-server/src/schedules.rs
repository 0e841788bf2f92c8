//! The schedule routes: create or update by id, read, list, delete, and
//! the actions `:pause`, `:resume` and `:trigger`; [`router`] mounts them.
//!
//! Each call is one library call (`upsert_callback_schedule` and the
//! calls beside it), so every rule of a schedule is the library's
//! (`docs/durable.md`, "Schedules"); this module reads requests and shapes
//! answers. An action is `POST /v1/schedules/{id}:{action}`: the router
//! cannot match a suffix after a path parameter, so all of these share the
//! route `/v1/schedules/{id}`, and a segment whose text after its last
//! colon is `pause`, `resume` or `trigger` is an action path: `POST` acts
//! on the id before that colon (ids may hold colons: `POST
//! /v1/schedules/a:b:pause` pauses `a:b`), every other method answers 405
//! with `Allow: POST`. So an id that ends in `:pause`, `:resume` or
//! `:trigger` cannot be named over HTTP, and `PUT` refuses to make one.
//! Every 405 carries the `Allow` header of the path it was sent to.

use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use wheel_durable::schedule::MAX_SCHEDULE_ID_LEN;
use wheel_durable::{AsyncTimers, ScheduleInfo, TimerState, Upserted};

use crate::context::ApiContext;
use crate::error::Problem;
use crate::extractor::{Id, JsonBody};
use crate::guard::Guard;
use crate::json::{format_time, is_dot_segment};
use crate::key::{schedule_path, timer_path};
use crate::schedule_json::{LastRun, NewSchedule, RunOutcome, ScheduleOut};

/// The schedule routes, under `/v1/schedules`.
pub(crate) fn router() -> Router<ApiContext> {
    Router::new().route("/v1/schedules", get(list)).route(
        "/v1/schedules/{id}",
        get(read)
            .put(upsert)
            .delete(remove)
            .post(action)
            .fallback(other_method),
    )
}

/// The actions, by the text after a path segment's last colon.
const ACTIONS: [&str; 3] = ["pause", "resume", "trigger"];

/// The id and action of an action path's segment; `None` for a plain id.
fn action_of(segment: &str) -> Option<(&str, &str)> {
    segment
        .rsplit_once(':')
        .filter(|(_, action)| ACTIONS.contains(action))
}

/// 405 with the methods the path takes.
fn not_allowed(allow: &'static str, detail: String) -> Response {
    let problem = Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "Method not allowed",
        detail,
    );
    ([(header::ALLOW, allow)], problem).into_response()
}

/// The 405 of a method an action path does not take.
fn action_only(segment: &str) -> Response {
    not_allowed(
        "POST",
        format!(
            "/v1/schedules/{segment} names an action: it takes POST only (an id ending in :pause, :resume or :trigger cannot be named over HTTP)"
        ),
    )
}

/// Any method the schedule route does not take (OPTIONS, PATCH ...).
async fn other_method(Id(segment): Id, method: axum::http::Method) -> Response {
    if action_of(&segment).is_some() {
        return action_only(&segment);
    }
    not_allowed(
        "GET, PUT, DELETE",
        format!("/v1/schedules/{{id}} does not take {method}"),
    )
}

fn no_schedule(id: &str) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "schedule-not-found",
        "No such schedule",
        format!("there is no schedule with the id {id:?}"),
    )
    .at("id")
}

fn durable(e: wheel_durable::DurableError) -> Problem {
    if matches!(e, wheel_durable::DurableError::InvalidKey) {
        return bad_id();
    }
    Problem::durable(&e, "")
}

fn bad_id() -> Problem {
    Problem::invalid(
        "id",
        format!("a schedule id is 1 to {MAX_SCHEDULE_ID_LEN} bytes"),
    )
}

/// Refuses an id no run key can be made of.
fn check_id(id: &str) -> Result<(), Problem> {
    if id.is_empty() || id.len() > MAX_SCHEDULE_ID_LEN {
        return Err(bad_id());
    }
    Ok(())
}

/// What became of the run that started last: its timer read back (gone:
/// it finished; a dead letter: it gave up).
async fn last_run(timers: &AsyncTimers, info: &ScheduleInfo) -> Result<Option<LastRun>, Problem> {
    let (Some(key), Some(nominal)) = (&info.last_key, info.last_started) else {
        return Ok(None);
    };
    let outcome = match timers.get(key).await.map_err(durable)? {
        None => RunOutcome::Done,
        Some(t) => match t.state {
            TimerState::Running => RunOutcome::Running,
            TimerState::Pending | TimerState::Claimed => RunOutcome::Retrying,
            _ => RunOutcome::Failed,
        },
    };
    Ok(Some(LastRun {
        key: key.clone(),
        nominal_at: format_time(nominal),
        outcome,
    }))
}

/// Schedule `id` as the API shows it, or 404.
async fn shown(timers: &AsyncTimers, id: &str) -> Result<ScheduleOut, Problem> {
    let info = timers
        .schedule(id)
        .await
        .map_err(durable)?
        .ok_or_else(|| no_schedule(id))?;
    let last = last_run(timers, &info).await?;
    Ok(ScheduleOut::of(info, last))
}

/// Creates or updates a schedule.
#[utoipa::path(put, path = "/v1/schedules/{id}", operation_id = "upsertSchedule", tag = "schedules", request_body = NewSchedule,
    params(("id" = String, Path, description = "The schedule's id", min_length = 1, max_length = 512)),
    responses(
        (status = 201, description = "Created, with its first run", body = ScheduleOut,
            headers(("Location" = String, description = "The schedule's path"))),
        (status = 200, description = "Updated (the next run replaced) or unchanged (the same definition and callback); `result` says which", body = ScheduleOut),
        (status = 409, description = "The schedule was deleted while it was written; send the request again", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A field is invalid: a bad cron string (the detail names the cron field and column), an unknown zone, an end not after the start, a run limit of 0 ...", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn upsert(
    State(ctx): State<ApiContext>,
    Id(id): Id,
    request: Request,
) -> Result<Response, Problem> {
    // An action path is refused before its body is read: it takes no PUT
    // whatever the body.
    if action_of(&id).is_some() {
        return Ok(action_only(&id));
    }
    let JsonBody(req) = JsonBody::<NewSchedule>::from_request(request, &ctx).await?;
    check_id(&id)?;
    if is_dot_segment(&id) {
        return Err(Problem::invalid(
            "id",
            format!("the id {id:?} is refused: in a URL path it is a dot segment"),
        ));
    }
    let c = req.check()?;
    Guard::new(ctx.allow_private)
        .check(&c.callback.url, "callback.url")
        .await?;
    let upserted = ctx
        .timers
        .upsert_callback_schedule(&id, &c.schedule, &c.callback)
        .await
        .map_err(durable)?;
    let mut out = shown(&ctx.timers, &id).await.map_err(|p| {
        if p.status == 404 {
            Problem::conflict(format!(
                "the schedule {id:?} was deleted while it was written; send the request again"
            ))
            .at("id")
        } else {
            p
        }
    })?;
    let (status, result) = match upserted {
        Upserted::Created => (StatusCode::CREATED, "created"),
        Upserted::Updated => (StatusCode::OK, "updated"),
        _ => (StatusCode::OK, "unchanged"),
    };
    out.result = Some(result);
    let location = [(header::LOCATION, schedule_path(&id))];
    Ok((status, location, Json(out)).into_response())
}

/// Reads a schedule: its definition, next run, last run and counts.
#[utoipa::path(get, path = "/v1/schedules/{id}", operation_id = "getSchedule", tag = "schedules",
    params(("id" = String, Path, description = "The schedule's id", min_length = 1, max_length = 512)),
    responses(
        (status = 200, description = "The schedule", body = ScheduleOut),
        (status = 404, description = "No schedule with this id", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn read(State(ctx): State<ApiContext>, Id(id): Id) -> Result<Response, Problem> {
    if action_of(&id).is_some() {
        return Ok(action_only(&id));
    }
    check_id(&id)?;
    Ok(Json(shown(&ctx.timers, &id).await?).into_response())
}

/// Deletes a schedule: its next run is cancelled; a run already started
/// finishes.
#[utoipa::path(delete, path = "/v1/schedules/{id}", operation_id = "deleteSchedule", tag = "schedules",
    params(("id" = String, Path, description = "The schedule's id", min_length = 1, max_length = 512)),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No schedule with this id", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn remove(State(ctx): State<ApiContext>, Id(id): Id) -> Result<Response, Problem> {
    if action_of(&id).is_some() {
        return Ok(action_only(&id));
    }
    check_id(&id)?;
    if ctx.timers.delete_schedule(&id).await.map_err(durable)? {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(no_schedule(&id))
    }
}

/// The run a trigger made.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Triggered {
    /// The run's timer key (`sched-trigger:{id}:{ms}`), at `/v1/timers/{key}`
    /// until it has run.
    pub(crate) key: String,
}

/// `POST /v1/schedules/{id}:{action}`: the action is the text after the
/// segment's last colon.
pub(crate) async fn action(
    State(ctx): State<ApiContext>,
    Id(path): Id,
) -> Result<Response, Problem> {
    match action_of(&path) {
        Some((id, "pause")) => pause(&ctx, id).await,
        Some((id, "resume")) => resume(&ctx, id).await,
        Some((id, _)) => trigger(&ctx, id).await,
        None => Ok(not_allowed(
            "GET, PUT, DELETE",
            "POST takes /v1/schedules/{id}:pause, :resume or :trigger; PUT creates or updates a schedule".to_owned(),
        )),
    }
}

/// Pauses a schedule: its next run is cancelled and none runs until it is
/// resumed; a run already started finishes. Pausing a paused schedule
/// changes nothing.
#[utoipa::path(post, path = "/v1/schedules/{id}:pause", operation_id = "pauseSchedule", tag = "schedules",
    params(("id" = String, Path, description = "The schedule's id", min_length = 1, max_length = 512)),
    responses(
        (status = 200, description = "Paused (or it was already)", body = ScheduleOut),
        (status = 404, description = "No schedule with this id", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn pause(ctx: &ApiContext, id: &str) -> Result<Response, Problem> {
    check_id(id)?;
    ctx.timers.pause_schedule(id).await.map_err(durable)?;
    Ok(Json(shown(&ctx.timers, id).await?).into_response())
}

/// Resumes a paused schedule from now: the slots that fell during the
/// pause are skipped (counted), not caught up. Resuming a running
/// schedule changes nothing.
#[utoipa::path(post, path = "/v1/schedules/{id}:resume", operation_id = "resumeSchedule", tag = "schedules",
    params(("id" = String, Path, description = "The schedule's id", min_length = 1, max_length = 512)),
    responses(
        (status = 200, description = "Running (resumed, or it was not paused)", body = ScheduleOut),
        (status = 404, description = "No schedule with this id", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn resume(ctx: &ApiContext, id: &str) -> Result<Response, Problem> {
    check_id(id)?;
    ctx.timers.resume_schedule(id).await.map_err(durable)?;
    Ok(Json(shown(&ctx.timers, id).await?).into_response())
}

/// Adds a run due now, besides the chain: it does not move the next run
/// nor count towards the run limit; the overlap policy applies to it, and
/// it runs even while the schedule is paused.
#[utoipa::path(post, path = "/v1/schedules/{id}:trigger", operation_id = "triggerSchedule", tag = "schedules",
    params(("id" = String, Path, description = "The schedule's id", min_length = 1, max_length = 512)),
    responses(
        (status = 201, description = "The run was added", body = Triggered,
            headers(("Location" = String, description = "The run's timer path"))),
        (status = 404, description = "No schedule with this id", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn trigger(ctx: &ApiContext, id: &str) -> Result<Response, Problem> {
    check_id(id)?;
    let key = ctx
        .timers
        .trigger_schedule(id)
        .await
        .map_err(durable)?
        .ok_or_else(|| no_schedule(id))?;
    let location = [(header::LOCATION, timer_path(&key))];
    Ok((StatusCode::CREATED, location, Json(Triggered { key })).into_response())
}

/// The parameters of `GET /v1/schedules`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ScheduleQuery {
    /// Schedules per page, 1 to 1000 (default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub(crate) limit: Option<String>,
    /// The `next_cursor` of the previous page (the last id listed).
    #[param(min_length = 1, max_length = 512)]
    pub(crate) cursor: Option<String>,
}

/// One page of schedules.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SchedulePageOut {
    /// The schedules, in id order (bytes).
    pub(crate) schedules: Vec<ScheduleOut>,
    /// The cursor of the next page; null after the last.
    pub(crate) next_cursor: Option<String>,
}

/// Lists schedules in id order, a page at a time.
#[utoipa::path(get, path = "/v1/schedules", operation_id = "listSchedules", tag = "schedules", params(ScheduleQuery),
    responses(
        (status = 200, description = "One page", body = SchedulePageOut),
        (status = 400, description = "A parameter is invalid", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub(crate) async fn list(
    State(ctx): State<ApiContext>,
    query: Result<Query<ScheduleQuery>, QueryRejection>,
) -> Result<Json<SchedulePageOut>, Problem> {
    let Query(q) = query.map_err(|e| Problem::query(&e))?;
    let limit = crate::listing::limit(q.limit.as_deref())?;
    let page = match q.cursor.as_deref() {
        Some(after) if after.is_empty() || after.len() > MAX_SCHEDULE_ID_LEN => {
            return Err(Problem::bad_parameter(
                "cursor",
                "a cursor is the id of a schedule: 1 to 512 bytes",
            ));
        }
        Some(after) => ctx.timers.schedules_after(after, limit).await,
        None => ctx.timers.schedules(limit).await,
    }
    .map_err(durable)?;
    let mut schedules = Vec::with_capacity(page.schedules.len());
    for info in page.schedules {
        let last = last_run(&ctx.timers, &info).await?;
        schedules.push(ScheduleOut::of(info, last));
    }
    Ok(Json(SchedulePageOut {
        schedules,
        next_cursor: page.next,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_is_the_text_after_the_last_colon() {
        assert_eq!(action_of("a:b:pause"), Some(("a:b", "pause")));
        assert_eq!(action_of("nightly:trigger"), Some(("nightly", "trigger")));
        assert_eq!(action_of("pause"), None);
        assert_eq!(action_of("a:pauses"), None);
        assert_eq!(action_of("report:daily"), None);
    }
}
