//! The flow routes: pause and resume the whole namespace or one flow key,
//! and read which are paused; [`router`] mounts them.
//!
//! Each call is one library call (`DurableTimers::{pause_flow,
//! resume_flow, pause_all, resume_all, flows}`), so every rule is the
//! library's: a pause is kept in the store, holds on every server of the
//! namespace and across restarts; a timer of a paused flow key that comes
//! due is parked without spending an attempt; on resume it is pending
//! again and fires in due order. A callback's flow key is the `flow` it
//! was added with, else its URL's origin. This module reads requests and
//! shapes answers.
//!
//! The limits routes set a flow key's limits (`PUT /v1/flows:limits`),
//! remove them (`POST /v1/flows:unlimit`), or set and clear the defaults
//! of the keys without their own (the same routes with `{"all": true}`),
//! with `DurableTimers::{set_flow_limits, remove_flow_limits,
//! set_default_flow_limits}`. Flow keys travel in bodies, never in paths:
//! an origin holds `/` and `:`.
//!
//! A body names exactly one target, `{"flow": KEY}` or `{"all": true}`
//! (null stands for absent); anything else is a 422 naming the field.

use axum::extract::State;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wheel_durable::{BreakerState, DurableError, DurableTimers, FlowLimits, FlowStatus, Flows};

use crate::context::ApiContext;
use crate::error::Problem;
use crate::extractor::JsonBody;
use crate::flow_limits_json::{LimitsIn, LimitsOut};
use crate::json::format_time;

/// What a flow key may hold: no control character (Unicode's `Cc`, as
/// the library checks). The length is `minLength`/`maxLength`.
pub(crate) const FLOW_KEY_PATTERN: &str = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$";

/// The flow routes, under `/v1/flows`.
pub(crate) fn router() -> Router<ApiContext> {
    Router::new()
        .route("/v1/flows", get(list))
        .route("/v1/flows:pause", post(pause))
        .route("/v1/flows:resume", post(resume))
        .route("/v1/flows:limits", put(set_limits))
        .route("/v1/flows:unlimit", post(unlimit))
}

/// What to pause or resume: one flow key, or the whole namespace.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlowTarget {
    /// A flow key: a callback's `flow`, or its URL's origin
    /// (`https://shop.example`, the port written when it is not the
    /// scheme's default). 1 to 512 bytes, no control character. Give this
    /// or `all`.
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) flow: Option<String>,
    /// `true`: the whole namespace. Give this or `flow`.
    pub(crate) all: Option<bool>,
}

/// What a pause or resume did.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FlowChange {
    /// The flow key acted on (absent when the namespace was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) flow: Option<String>,
    /// `true` when the namespace was acted on (absent for a flow key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) all: Option<bool>,
    /// Whether it is paused now.
    pub(crate) paused: bool,
    /// Whether this call changed it (false: it was so already).
    pub(crate) changed: bool,
}

/// The limits to set: of one flow key, or the defaults.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsTarget {
    /// A flow key, as in [`FlowTarget`]. Give this or `all`.
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) flow: Option<String>,
    /// `true`: the defaults, the limits of every key without its own
    /// (each key counts on its own). Give this or `flow`.
    pub(crate) all: Option<bool>,
    /// The limits. For a flow key, `{}` sets none: the key then has no
    /// limits, not even the defaults. For the defaults, `{}` clears them.
    pub(crate) limits: LimitsIn,
}

/// The limits a call left in place.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LimitsChange {
    /// The flow key acted on (absent when the defaults were).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) flow: Option<String>,
    /// `true` when the defaults were acted on (absent for a flow key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) all: Option<bool>,
    /// The limits now set (null: none of its own for a flow key, so the
    /// defaults apply to it; no defaults for `all`).
    pub(crate) limits: Option<LimitsOut>,
}

/// The paused state and the limits of the namespace and its flow keys.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FlowsOut {
    /// Whether the whole namespace is paused: no server claims its timers.
    pub(crate) paused: bool,
    /// The limits of every key without its own (null: none).
    pub(crate) defaults: Option<LimitsOut>,
    /// Every flow key that is paused, has parked timers, has its own
    /// limits, has runs in flight under a parallelism, or whose breaker
    /// is open or counting failures, and every key this server holds
    /// timers of for its limits or ran, in byte order.
    pub(crate) flows: Vec<FlowOut>,
}

/// One flow key.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FlowOut {
    /// The flow key.
    pub(crate) key: String,
    /// Whether it is paused.
    pub(crate) paused: bool,
    /// Its timers parked in the store: came due while it was paused or
    /// its breaker open, and not made pending again yet.
    pub(crate) parked: u64,
    /// Its own limits (null: the defaults apply).
    pub(crate) limits: Option<LimitsOut>,
    /// Its runs in flight that hold a permit of its parallelism, on all
    /// servers.
    pub(crate) in_flight: u32,
    /// Its timers this server has claimed and holds back for its rate or
    /// parallelism (parked ones wait in the store instead).
    pub(crate) waiting: u64,
    /// The median lateness (start minus due) of its runs on this server,
    /// in milliseconds: what its limits cost (null: none ran here).
    pub(crate) lateness_p50_ms: Option<f64>,
    /// The 99th percentile of the same.
    pub(crate) lateness_p99_ms: Option<f64>,
    /// Its circuit breaker.
    pub(crate) breaker: BreakerStatusOut,
}

/// Where a flow key's circuit breaker is.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BreakerStatusOut {
    /// `closed`: runs start; `open`: nothing starts until `next_probe`,
    /// timers coming due are parked; `half-open`: one probe run is let
    /// through.
    pub(crate) state: BreakerStateOut,
    /// Consecutive failures counted while closed.
    pub(crate) failures: u32,
    /// Open: when it lets a probe through; half-open: when another probe
    /// is let through if the probe has not answered (RFC 3339, UTC; null
    /// when closed).
    pub(crate) next_probe: Option<String>,
}

/// A circuit breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum BreakerStateOut {
    /// Runs start as the other limits allow.
    Closed,
    /// Nothing starts until the cool-down ends.
    Open,
    /// One probe run is let through.
    HalfOpen,
}

impl From<BreakerState> for BreakerStateOut {
    fn from(s: BreakerState) -> BreakerStateOut {
        match s {
            BreakerState::Open => BreakerStateOut::Open,
            BreakerState::HalfOpen => BreakerStateOut::HalfOpen,
            // Closed, and any state a later library adds: it lets runs
            // start, as far as this server can tell.
            _ => BreakerStateOut::Closed,
        }
    }
}

/// Milliseconds, with their fraction.
fn ms_f64(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl From<FlowStatus> for FlowOut {
    fn from(k: FlowStatus) -> FlowOut {
        FlowOut {
            limits: k.limits.as_ref().map(LimitsOut::of),
            in_flight: k.in_flight,
            waiting: k.waiting,
            lateness_p50_ms: k.lateness_p50.map(ms_f64),
            lateness_p99_ms: k.lateness_p99.map(ms_f64),
            breaker: BreakerStatusOut {
                state: k.breaker.state.into(),
                failures: k.breaker.failures,
                next_probe: k.breaker.next_probe.map(format_time),
            },
            key: k.key,
            paused: k.paused,
            parked: k.parked,
        }
    }
}

impl From<Flows> for FlowsOut {
    fn from(f: Flows) -> FlowsOut {
        FlowsOut {
            paused: f.paused,
            defaults: f.defaults.as_ref().map(LimitsOut::of),
            flows: f.keys.into_iter().map(FlowOut::from).collect(),
        }
    }
}

/// The one target a body names: `Some(key)` for a flow key, `None` for
/// the namespace.
fn target(body: FlowTarget) -> Result<Option<String>, Problem> {
    either(
        body.flow,
        body.all,
        "to resume the namespace, POST /v1/flows:resume",
    )
}

/// `Some(key)` for a flow key, `None` for `all`; `if_false` says what to
/// do instead of giving `all: false`.
fn either(
    flow: Option<String>,
    all: Option<bool>,
    if_false: &str,
) -> Result<Option<String>, Problem> {
    match (flow, all) {
        (Some(_), Some(_)) => Err(Problem::invalid("all", "give flow or all, not both")),
        (Some(flow), None) => Ok(Some(flow)),
        (None, Some(true)) => Ok(None),
        (None, Some(false)) => Err(Problem::invalid(
            "all",
            format!("all is true or absent: {if_false}"),
        )),
        (None, None) => Err(Problem::invalid(
            "flow",
            "give flow (a flow key) or all (true, the whole namespace)",
        )),
    }
}

/// A library error of a flow call: a bad key names `flow`.
fn durable(err: &DurableError) -> Problem {
    match err {
        DurableError::InvalidFlow(_) => Problem::invalid("flow", err.to_string()),
        other => Problem::durable(other, ""),
    }
}

/// A library error of a limits call. The key was checked here first, so
/// a refusal the library still makes is of the limits (the ranges checked
/// here name their own field before the call).
fn durable_limits(err: &DurableError) -> Problem {
    match err {
        DurableError::InvalidFlow(_) => Problem::invalid("limits", err.to_string()),
        other => Problem::durable(other, ""),
    }
}

/// The library's rule for a flow key (1 to 512 bytes, no control
/// character), checked here so that its refusal names `flow`.
fn check_key(key: &str) -> Result<(), Problem> {
    if key.is_empty() || key.len() > MAX_FLOW_KEY_BYTES {
        return Err(Problem::invalid("flow", "a flow key is 1 to 512 bytes"));
    }
    if key.chars().any(char::is_control) {
        return Err(Problem::invalid(
            "flow",
            "a flow key holds no control character",
        ));
    }
    Ok(())
}

/// The longest flow key, in bytes.
const MAX_FLOW_KEY_BYTES: usize = 512;

/// Runs a sync library call on the blocking pool (the limits calls have
/// no async mirror).
async fn blocking<T: Send + 'static>(
    ctx: &ApiContext,
    f: impl FnOnce(&DurableTimers) -> Result<T, DurableError> + Send + 'static,
) -> Result<T, DurableError> {
    let timers = ctx.timers.timers().clone();
    match tokio::task::spawn_blocking(move || f(&timers)).await {
        Ok(answer) => answer,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Only a runtime shutting down drops a blocking task before
            // it runs.
            Err(_) => Err(DurableError::Closed),
        },
    }
}

/// Sets (or, with `None`, removes) the limits of `flow`, or the
/// defaults; the answer reads them back as the library keeps them.
async fn apply_limits(
    ctx: &ApiContext,
    flow: Option<String>,
    limits: Option<FlowLimits>,
) -> Result<Json<LimitsChange>, Problem> {
    if let Some(key) = &flow {
        check_key(key)?;
    }
    let key = flow.clone();
    blocking(ctx, move |t| match (&key, &limits) {
        (Some(k), Some(l)) => t.set_flow_limits(k, l),
        (Some(k), None) => t.remove_flow_limits(k),
        (None, l) => t.set_default_flow_limits(&l.unwrap_or_default()),
    })
    .await
    .map_err(|e| durable_limits(&e))?;
    // What the store keeps: for the defaults, no limit at all is none.
    let kept = match flow {
        None => limits.filter(|l| *l != FlowLimits::new()),
        Some(_) => limits,
    };
    let all = flow.is_none().then_some(true);
    Ok(Json(LimitsChange {
        flow,
        all,
        limits: kept.as_ref().map(LimitsOut::of),
    }))
}

/// Pauses or resumes the target of `body`.
async fn set(
    ctx: &ApiContext,
    body: FlowTarget,
    paused: bool,
) -> Result<Json<FlowChange>, Problem> {
    let flow = target(body)?;
    let t = &ctx.timers;
    let changed = match (&flow, paused) {
        (Some(key), true) => t.pause_flow(key).await,
        (Some(key), false) => t.resume_flow(key).await,
        (None, true) => t.pause_all().await,
        (None, false) => t.resume_all().await,
    }
    .map_err(|e| durable(&e))?;
    let all = flow.is_none().then_some(true);
    Ok(Json(FlowChange {
        flow,
        all,
        paused,
        changed,
    }))
}

/// Whether the namespace is paused, and each flow key that is paused or
/// still has parked timers.
#[utoipa::path(get, path = "/v1/flows", operation_id = "listFlows", tag = "flows",
    responses((status = 200, description = "The paused state", body = FlowsOut)),
    security(("bearer" = [])))]
pub(crate) async fn list(State(ctx): State<ApiContext>) -> Result<Json<FlowsOut>, Problem> {
    let flows = ctx.timers.flows().await.map_err(|e| durable(&e))?;
    Ok(Json(flows.into()))
}

/// Pauses one flow key, or the whole namespace, on every server of the
/// namespace. A flow key's timers that come due are parked (not
/// claimed, no attempt spent); while the namespace is paused no timer
/// is claimed. Runs already started finish. Pausing what is paused
/// changes nothing (`changed: false`).
#[utoipa::path(post, path = "/v1/flows:pause", operation_id = "pauseFlow", tag = "flows", request_body = FlowTarget,
    responses((status = 200, description = "Paused (now, or already)", body = FlowChange)),
    security(("bearer" = [])))]
pub(crate) async fn pause(
    State(ctx): State<ApiContext>,
    JsonBody(body): JsonBody<FlowTarget>,
) -> Result<Json<FlowChange>, Problem> {
    set(&ctx, body, true).await
}

/// Resumes one flow key, or the whole namespace: parked timers become
/// pending again and fire in due order. Resuming what is not paused
/// changes nothing (`changed: false`). A flow key and the namespace are
/// paused apart: resuming the namespace leaves a paused key paused.
#[utoipa::path(post, path = "/v1/flows:resume", operation_id = "resumeFlow", tag = "flows", request_body = FlowTarget,
    responses((status = 200, description = "Not paused (now, or already)", body = FlowChange)),
    security(("bearer" = [])))]
pub(crate) async fn resume(
    State(ctx): State<ApiContext>,
    JsonBody(body): JsonBody<FlowTarget>,
) -> Result<Json<FlowChange>, Problem> {
    set(&ctx, body, false).await
}

/// Sets a flow key's limits (`flow`), or the defaults of the keys
/// without their own (`all`), for every server of the namespace. Timers
/// over a limit wait, without spending attempts, and start in due order
/// once it allows. `{}` as a key's limits sets none (not even the
/// defaults apply); `{}` as the defaults clears them.
#[utoipa::path(put, path = "/v1/flows:limits", operation_id = "setFlowLimits", tag = "flows", request_body = LimitsTarget,
    responses((status = 200, description = "The limits now set", body = LimitsChange)),
    security(("bearer" = [])))]
pub(crate) async fn set_limits(
    State(ctx): State<ApiContext>,
    JsonBody(body): JsonBody<LimitsTarget>,
) -> Result<Json<LimitsChange>, Problem> {
    let flow = either(body.flow, body.all, "to set a key's limits, give flow")?;
    let limits = body.limits.check("limits.")?;
    apply_limits(&ctx, flow, Some(limits)).await
}

/// Removes a flow key's own limits (`flow`): the defaults apply to it
/// again; or clears the defaults (`all`). Removing what is not set
/// changes nothing.
#[utoipa::path(post, path = "/v1/flows:unlimit", operation_id = "removeFlowLimits", tag = "flows", request_body = FlowTarget,
    responses((status = 200, description = "No limits of its own (a key), or no defaults (all)", body = LimitsChange)),
    security(("bearer" = [])))]
pub(crate) async fn unlimit(
    State(ctx): State<ApiContext>,
    JsonBody(body): JsonBody<FlowTarget>,
) -> Result<Json<LimitsChange>, Problem> {
    let flow = either(body.flow, body.all, "to remove a key's limits, give flow")?;
    apply_limits(&ctx, flow, None).await
}

#[cfg(test)]
mod tests {
    use regex::Regex;

    use super::*;

    fn body(flow: Option<&str>, all: Option<bool>) -> FlowTarget {
        FlowTarget {
            flow: flow.map(str::to_owned),
            all,
        }
    }

    #[test]
    fn a_body_names_exactly_one_target() {
        assert_eq!(target(body(Some("k"), None)).unwrap().as_deref(), Some("k"));
        assert_eq!(target(body(None, Some(true))).unwrap(), None);
        for (b, field) in [
            (body(Some("k"), Some(true)), "all"),
            (body(Some("k"), Some(false)), "all"),
            (body(None, Some(false)), "all"),
            (body(None, None), "flow"),
        ] {
            let p = target(b).unwrap_err();
            assert_eq!((p.status, p.field.as_deref()), (422, Some(field)));
        }
    }

    #[test]
    fn the_pattern_refuses_what_the_library_refuses() {
        let re = Regex::new(FLOW_KEY_PATTERN).unwrap();
        for ok in ["https://shop.example", "reports", "é", "a b"] {
            assert!(re.is_match(ok), "{ok:?}");
        }
        for bad in ["a\nb", "\u{7f}", "\u{85}", "\u{0}"] {
            assert!(!re.is_match(bad), "{bad:?}");
            assert!(bad.chars().any(char::is_control), "{bad:?}");
        }
        let p = durable(&DurableError::InvalidFlow("it is empty".into()));
        assert_eq!((p.status, p.field.as_deref()), (422, Some("flow")));
    }
}
