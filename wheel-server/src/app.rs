//! The router: every route, the layers around them, and the state they
//! share.
//!
//! Layers, outermost first: a panic anywhere below answers 500 with a
//! problem document (the connection stays usable, the server runs on);
//! every request is counted for `/metrics`; bodies are capped at
//! `--max-body`; `/v1` routes require the bearer token. Requests that
//! match no route, or no method of a route, get problem documents too.
//!
//! The library's calls block (the embedded store syncs to disk before it
//! answers), so handlers make them on tokio's blocking threads
//! ([`AppState::run`]); the async runtime's threads stay free for I/O and
//! for the callbacks the node sends. Adds of one timer go through the
//! [`Adder`], which groups concurrent ones into one call.

use std::any::Any;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use tower_http::catch_panic::CatchPanicLayer;
use wheel_durable::{DurableStats, DurableTimers};

use crate::adder::Adder;
use crate::auth::Token;
use crate::metrics::Requests;
use crate::problem::Problem;
use crate::{auth, dashboard, dead, metrics, openapi, timers};

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState(Arc<Shared>);

struct Shared {
    timers: Arc<DurableTimers>,
    token: Option<Token>,
    allow_private: bool,
    requests: Requests,
    adder: Adder,
}

impl AppState {
    /// The state of a server over `timers`; on a tokio runtime (the
    /// adder's task starts on it).
    pub(crate) fn new(
        timers: Arc<DurableTimers>,
        token: Option<String>,
        allow_private: bool,
    ) -> AppState {
        AppState(Arc::new(Shared {
            adder: Adder::start(timers.clone()),
            timers,
            token: token.as_deref().map(Token::new),
            allow_private,
            requests: Requests::default(),
        }))
    }

    /// The bearer token, when one is required.
    pub(crate) fn token(&self) -> Option<&Token> {
        self.0.token.as_ref()
    }

    /// Whether callbacks may target non-public addresses.
    pub(crate) fn allow_private(&self) -> bool {
        self.0.allow_private
    }

    /// Adds timers one per request, in groups.
    pub(crate) fn adder(&self) -> &Adder {
        &self.0.adder
    }

    /// The request counters.
    pub(crate) fn requests(&self) -> &Requests {
        &self.0.requests
    }

    /// Runs a (blocking) library call on a blocking thread.
    pub(crate) async fn run<T, F>(&self, f: F) -> Result<T, Problem>
    where
        F: FnOnce(&DurableTimers) -> T + Send + 'static,
        T: Send + 'static,
    {
        let timers = self.0.timers.clone();
        tokio::task::spawn_blocking(move || f(&timers))
            .await
            .map_err(|e| Problem::internal(&format!("a store call failed: {e}")))
    }

    /// The node's stats (waits at most 25 ms for the store).
    pub(crate) async fn stats(&self) -> DurableStats {
        self.run(DurableTimers::stats).await.unwrap_or_default()
    }
}

/// The whole application.
pub(crate) fn router(state: AppState, max_body: usize) -> Router {
    let v1 = Router::new()
        .route("/v1/timers", post(timers::create).get(timers::list))
        .route("/v1/timers:batch", post(timers::batch))
        .route(
            "/v1/timers/{key}",
            get(timers::get)
                .delete(timers::cancel)
                .patch(timers::reschedule),
        )
        .route("/v1/dead-letters", get(dead::list))
        .route("/v1/dead-letters/{key}", delete(dead::remove))
        .route("/v1/dead-letters/{key}/retry", post(dead::retry))
        .route("/v1/openapi.json", get(openapi::document))
        .route_layer(from_fn_with_state(state.clone(), auth::require_token));
    Router::new()
        .route("/", get(dashboard::page))
        .route("/metrics", get(metrics::metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(v1)
        .fallback(no_route)
        .method_not_allowed_fallback(no_method)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(from_fn_with_state(state.clone(), metrics::count_requests))
        .layer(CatchPanicLayer::custom(panicked))
        .with_state(state)
}

/// `GET /healthz`: the process answers.
async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

/// `GET /readyz`: the store answers (503 otherwise).
async fn readyz(State(state): State<AppState>) -> Response {
    if state.stats().await.store_available {
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

async fn no_route(method: Method, uri: axum::http::Uri) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "no-route",
        "No such route",
        format!(
            "{method} {} is not a route of this server; /v1/openapi.json lists them",
            uri.path()
        ),
    )
}

async fn no_method(method: Method, uri: axum::http::Uri) -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "Method not allowed",
        format!("{} does not take {method}", uri.path()),
    )
}

fn panicked(_: Box<dyn Any + Send + 'static>) -> Response {
    Problem::internal("a handler panicked").into_response()
}

/// A JSON body, read with the problems this API promises: 415 without a
/// JSON content type, 413 over the limit, 400 for malformed JSON, 422 for
/// well-formed JSON of the wrong shape, each naming the field at fault.
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Problem> {
        let json_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase())
            .is_some_and(|v| v == "application/json" || v.ends_with("+json"));
        if !json_type {
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                "The body must be JSON",
                "send the body with `Content-Type: application/json`",
            ));
        }
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e: BytesRejection| Problem::body(&e))?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// Reads `bytes` as a `T` from a JSON object (an array is refused, see
/// [`object`](crate::decode::object)), naming the JSON path of the first error: `.` for the
/// body as a whole.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let err = match serde_path_to_error::deserialize::<_, crate::decode::Object<T>>(&mut de) {
        Ok(v) => return de.end().map(|()| v.0).map_err(|e| malformed(&e)),
        Err(err) => err,
    };
    let path = err.path().to_string();
    let inner = err.into_inner();
    if inner.is_syntax() || inner.is_eof() || inner.is_io() {
        return Err(malformed(&inner));
    }
    let message = inner.to_string();
    // A missing or repeated field is reported at its parent: name the
    // field itself.
    let field = match crate::problem::serde_field(&message) {
        Some(name) if path == "." => name.to_owned(),
        Some(name) => format!("{path}.{name}"),
        None => path,
    };
    let detail = if message.contains("untagged enum Delay") {
        "a delay is an integer of milliseconds or a string like \"90s\", \"15m\", \"2h\" or \"7d\""
            .to_owned()
    } else {
        message
    };
    Err(Problem::invalid(field, detail))
}

fn malformed(e: &serde_json::Error) -> Problem {
    Problem::new(
        StatusCode::BAD_REQUEST,
        "malformed-json",
        "The body is not valid JSON",
        e.to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::NewTimer;
    use tower::ServiceExt;

    #[tokio::test]
    async fn a_panic_answers_500_with_a_problem_document() {
        let app: Router = Router::new()
            .route("/boom", get(|| async { panic!("a bug") as &'static str }))
            .layer(CatchPanicLayer::custom(panicked));
        let request = Request::get("/boom")
            .body(axum::body::Body::empty())
            .unwrap();
        let response = app.oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            crate::problem::PROBLEM_JSON
        );
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(doc["type"], "urn:wheel:problem:internal");
        assert!(
            !doc["detail"].as_str().unwrap().contains("a bug"),
            "the panic stays in the log"
        );
    }

    fn field_of(body: &str) -> (u16, Option<String>) {
        let p = parse_json::<NewTimer>(body.as_bytes()).unwrap_err();
        (p.status, p.field)
    }

    #[test]
    fn shape_errors_name_their_json_path() {
        assert_eq!(field_of("{\"delay\": 5}"), (422, Some("callback".into())));
        assert_eq!(
            field_of("{\"delay\": 5, \"callback\": {\"url\": 7}}"),
            (422, Some("callback.url".into()))
        );
        assert_eq!(
            field_of("{\"delay\": -5, \"callback\": {\"url\": \"http://a.example/\"}}"),
            (422, Some("delay".into()))
        );
        assert_eq!(field_of("{\"delay\": 5,"), (400, None));
        let trailing = "{\"delay\": 5, \"callback\": {\"url\": \"http://a.example/\"}} {}";
        assert_eq!(field_of(trailing), (400, None));
    }
}
