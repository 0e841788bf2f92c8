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
//! A body names exactly one target, `{"flow": KEY}` or `{"all": true}`
//! (null stands for absent); anything else is a 422 naming the field.

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wheel_durable::{DurableError, Flows};

use crate::context::ApiContext;
use crate::error::Problem;
use crate::extractor::JsonBody;

/// What a flow key may hold: no control character (Unicode's `Cc`, as
/// the library checks). The length is `minLength`/`maxLength`.
pub(crate) const FLOW_KEY_PATTERN: &str = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$";

/// The flow routes, under `/v1/flows`.
pub(crate) fn router() -> Router<ApiContext> {
    Router::new()
        .route("/v1/flows", get(list))
        .route("/v1/flows:pause", post(pause))
        .route("/v1/flows:resume", post(resume))
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

/// The paused state of the namespace and its flow keys.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FlowsOut {
    /// Whether the whole namespace is paused: no server claims its timers.
    pub(crate) paused: bool,
    /// Every flow key that is paused or still has parked timers, in byte
    /// order.
    pub(crate) flows: Vec<FlowOut>,
}

/// One flow key.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FlowOut {
    /// The flow key.
    pub(crate) key: String,
    /// Whether it is paused.
    pub(crate) paused: bool,
    /// Its timers parked in the store: came due while it was paused, or
    /// not yet made pending again since it resumed.
    pub(crate) parked: u64,
}

impl From<Flows> for FlowsOut {
    fn from(f: Flows) -> FlowsOut {
        FlowsOut {
            paused: f.paused,
            flows: f
                .keys
                .into_iter()
                .map(|k| FlowOut {
                    key: k.key,
                    paused: k.paused,
                    parked: k.parked,
                })
                .collect(),
        }
    }
}

/// The one target a body names: `Some(key)` for a flow key, `None` for
/// the namespace.
fn target(body: FlowTarget) -> Result<Option<String>, Problem> {
    match (body.flow, body.all) {
        (Some(_), Some(_)) => Err(Problem::invalid("all", "give flow or all, not both")),
        (Some(flow), None) => Ok(Some(flow)),
        (None, Some(true)) => Ok(None),
        (None, Some(false)) => Err(Problem::invalid(
            "all",
            "all is true or absent: to resume the namespace, POST /v1/flows:resume",
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
