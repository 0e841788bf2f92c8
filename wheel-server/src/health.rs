//! `GET /healthz` (the process answers) and `GET /readyz` (the store
//! answers), open like `/metrics`: probes carry no token.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::context::ApiContext;
use crate::error::Problem;

/// `GET /healthz`: the process answers.
pub(crate) async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

/// `GET /readyz`: the store answers (503 otherwise).
pub(crate) async fn readyz(State(ctx): State<ApiContext>) -> Response {
    if ctx.timers.stats().await.store_available {
        Json(serde_json::json!({ "status": "ready" })).into_response()
    } else {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store-unavailable",
            "The timer store is unavailable",
            "the store did not answer its last read, or a write failed",
        )
        .into_response()
    }
}
