//! The whole application: each resource's router, the open routes, and
//! the layers around them. Nothing in the crate imports this module but
//! `serve.rs`: it is the top of the import graph.
//!
//! Layers, outermost first: a panic anywhere below answers 500 with a
//! problem document (the connection stays usable, the server runs on);
//! every request is counted for `/metrics`; bodies are capped at
//! `--max-body`; `/v1` routes require the bearer token. Requests that
//! match no route, or no method of a route, get problem documents too.

use std::any::Any;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, StatusCode, Uri};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower_http::catch_panic::CatchPanicLayer;

use crate::auth::{self, Token};
use crate::context::ApiContext;
use crate::error::Problem;
use crate::{dashboard, dead, flows, health, metrics, openapi, requests, schedules, timers};

/// The application over `ctx`: `token`, when given, is required on every
/// `/v1` route.
pub(crate) fn router(ctx: ApiContext, token: Option<Token>, max_body: usize) -> Router {
    let v1 = Router::new()
        .merge(timers::router())
        .merge(dead::router())
        .merge(schedules::router())
        .merge(flows::router())
        .route("/v1/openapi.json", get(openapi::document))
        .route_layer(from_fn_with_state(token, auth::require_token));
    Router::new()
        .route("/", get(dashboard::page))
        .route("/metrics", get(metrics::metrics))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .merge(v1)
        .fallback(no_route)
        .method_not_allowed_fallback(no_method)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(from_fn_with_state(
            ctx.requests.clone(),
            requests::count_requests,
        ))
        .layer(CatchPanicLayer::custom(panicked))
        .with_state(ctx)
}

async fn no_route(method: Method, uri: Uri) -> Problem {
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

async fn no_method(method: Method, uri: Uri) -> Problem {
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

#[cfg(test)]
mod tests {
    use axum::extract::Request;
    use axum::http::header;
    use tower::ServiceExt;

    use super::*;

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
            crate::error::PROBLEM_JSON
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
}
