//! `GET /v1/openapi.json`: the API's OpenAPI 3.1 document, generated from
//! the handlers' annotations and the JSON types, so that it cannot drift
//! from the code (a test also checks that every operation it lists is
//! routed, and every `/v1` route is listed).

use axum::Json;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::{dead, json, listing, problem, timers};

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(title = "wheel-server", description = "Durable timers that call a URL: the durable tier of wheel over HTTP."),
    paths(
        timers::create, timers::batch, timers::get, timers::cancel, timers::reschedule, timers::list,
        dead::list, dead::retry, dead::remove, document,
    ),
    components(schemas(
        json::NewTimer, json::CallbackIn, json::RetryIn, json::Delay, json::Timer, json::State, json::CallbackOut,
        json::DeadOut, timers::NewBatch, timers::BatchItem, timers::BatchResult, timers::Reschedule,
        listing::TimerPage, listing::DeadPage, problem::Problem,
    )),
    modifiers(&Bearer),
)]
pub(crate) struct ApiDoc;

/// Adds the bearer scheme the operations name.
struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// This document.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", content_type = "application/json")),
    security(("bearer" = [])))]
pub(crate) async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi_3_1_with_every_operation() {
        let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        let paths = doc["paths"].as_object().unwrap();
        for p in [
            "/v1/timers",
            "/v1/timers:batch",
            "/v1/timers/{key}",
            "/v1/dead-letters",
            "/v1/dead-letters/{key}",
            "/v1/dead-letters/{key}/retry",
            "/v1/openapi.json",
        ] {
            assert!(paths.contains_key(p), "{p} is missing");
        }
        assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    }
}
