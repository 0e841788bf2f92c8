//! `GET /v1/openapi.json`: the API's OpenAPI 3.1 document, generated from
//! the handlers' annotations and the JSON types, so that it cannot drift
//! from the code (a test also checks that every operation it lists is
//! routed, and every `/v1` route is listed).
//!
//! What the annotations cannot say is added to the generated document
//! here ([`contract`]): the statuses every operation shares (401 from the
//! token check, 400/408/413/415/422 from reading a JSON body, 400/422 for a
//! path key, 503 from the store), the either-or of `due_at` and `delay`,
//! and the patterns computed from the server's own limits (delays,
//! back-offs, cursors, header names). CI runs `schemathesis` against the
//! served document (`.ci/run`, stage `api`), so a constraint the server
//! does not keep, or a status it answers undocumented, fails there.

use std::sync::LazyLock;

use axum::Json;
use serde_json::{Value, json};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};
use wheel_durable::http::MAX_HEADERS;

use crate::openapi_patterns::{cursor_pattern, delay_pattern, ms, reserved_headers};
use crate::{
    dead, ended, error, flow_limits_json, flows, json, listing, replays, schedule_json, schedules,
    timers,
};

/// The document, as the annotations give it.
#[derive(OpenApi)]
#[openapi(
    info(title = "wheel-server", description = "Durable timers that call a URL: the durable tier of wheel over HTTP."),
    paths(
        timers::create, timers::batch, timers::get, timers::cancel, timers::reschedule, timers::list,
        dead::list, dead::retry, dead::remove,
        replays::replay, replays::progress, replays::cancel,
        schedules::upsert, schedules::read, schedules::list, schedules::remove,
        schedules::pause, schedules::resume, schedules::trigger,
        flows::list, flows::pause, flows::resume, flows::set_limits, flows::unlimit, document,
    ),
    components(schemas(
        json::NewTimer, json::CallbackIn, json::RetryIn, json::Delay, json::Timer, json::State, json::CallbackOut,
        json::DeadOut, ended::EndedOut, ended::EndedState, ended::CreateAnswer, timers::NewBatch, timers::BatchItem, timers::BatchResult, timers::Reschedule,
        listing::TimerPage, listing::DeadPage, error::Problem,
        replays::ReplayRequest, replays::ReplayFilter, replays::ReplayOut, replays::ReplayStateOut,
        schedule_json::NewSchedule, schedule_json::CatchUpIn, schedule_json::CatchUpPolicy, schedule_json::OverlapIn,
        schedule_json::ScheduleOut, schedule_json::CatchUpOut, schedule_json::SkippedOut, schedule_json::LastRun,
        schedule_json::RunOutcome, schedules::Triggered, schedules::SchedulePageOut,
        flows::FlowTarget, flows::FlowChange, flows::FlowsOut, flows::FlowOut,
        flows::LimitsTarget, flows::LimitsChange, flows::BreakerStatusOut, flows::BreakerStateOut,
        flow_limits_json::LimitsIn, flow_limits_json::RateIn, flow_limits_json::BreakerIn,
        flow_limits_json::LimitsOut, flow_limits_json::RateOut, flow_limits_json::BreakerOut,
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

/// The served document: the generated one with [`contract`] applied,
/// built once.
static DOCUMENT: LazyLock<Value> = LazyLock::new(|| {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_default();
    contract(&mut doc);
    doc
});

/// This document.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "meta", operation_id = "getOpenApi",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", content_type = "application/json")),
    security(("bearer" = [])))]
pub(crate) async fn document() -> Json<Value> {
    Json(DOCUMENT.clone())
}

/// Adds to `doc` what the annotations cannot express.
fn contract(doc: &mut Value) {
    shared_statuses(doc);
    links(doc);
    let schemas = &mut doc["components"]["schemas"];
    let delay = delay_pattern(&json::MAX_DELAY, false);
    schemas["Delay"] = json!({
        "description": "A delay: an integer of milliseconds or a whole number with a unit (`ms`, `s`, `m`, `h`, `d`; none: milliseconds), at most 100 years.",
        "oneOf": [
            { "type": "integer", "minimum": 0, "maximum": ms(&json::MAX_DELAY) },
            { "type": "string", "pattern": delay },
        ],
    });
    schemas["Backoff"] = json!({
        "description": "A back-off, written as a delay: 1 ms to 1 day.",
        "oneOf": [
            { "type": "integer", "minimum": 1, "maximum": ms(&json::MAX_BACKOFF) },
            { "type": "string", "pattern": delay_pattern(&json::MAX_BACKOFF, true) },
        ],
    });
    schemas["RetryIn"]["properties"]["backoff"]["oneOf"][1]["$ref"] =
        json!("#/components/schemas/Backoff");
    schedule_contract(schemas);
    flow_contract(schemas);
    for name in ["NewTimer", "Reschedule"] {
        // Exactly one of the two, non-null (null stands for absent).
        schemas[name]["oneOf"] = json!([
            { "required": ["due_at"], "properties": { "due_at": { "type": "string" } } },
            { "required": ["delay"], "properties": { "delay": { "$ref": "#/components/schemas/Delay" } } },
        ]);
    }
    // A dot segment is no key: no URL path could name its timer. Keys of
    // schedule runs are the library's to make. The pattern is kept to
    // strings: on null (no key) it would hold, and `not` would refuse it.
    schemas["NewTimer"]["properties"]["key"]["not"] = json!({
        "anyOf": [{ "enum": [".", ".."] }, { "type": "string", "pattern": "^sched(-trigger)?:" }],
    });
    let callback = &mut schemas["CallbackIn"];
    callback["properties"]["url"]["pattern"] = json!(*crate::decode::URL_PATTERN);
    // `body` and `json` are not both given (null stands for absent).
    callback["not"] = json!({
        "required": ["body", "json"],
        "properties": { "body": { "type": "string" }, "json": { "not": { "type": "null" } } },
    });
    callback["properties"]["json"] = json!({
        "description": callback["properties"]["json"]["description"].clone(),
    });
    let headers = &mut callback["properties"]["headers"];
    headers["propertyNames"] = json!({
        "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
        "not": { "pattern": reserved_headers() },
    });
    // The total size (`MAX_HEADER_BYTES`) has no JSON Schema keyword; the
    // description says it.
    headers["maxProperties"] = json!(MAX_HEADERS);
    // A value is any text without control characters but tab.
    headers["additionalProperties"] =
        json!({ "type": "string", "pattern": "^[^\\u0000-\\u0008\\u000a-\\u001f\\u007f]*$" });
    for (path, listings) in [("/v1/timers", "[pck]"), ("/v1/dead-letters", "d")] {
        let params = doc["paths"][path]["get"]["parameters"].as_array_mut();
        for p in params.into_iter().flatten() {
            if p["name"] == "cursor" {
                p["schema"]["pattern"] = json!(cursor_pattern(listings));
            }
            if p["name"] == "state" {
                p["schema"] = json!({
                    "type": "string",
                    "enum": ["pending", "claimed", "running", "parked"],
                });
            }
        }
    }
}

/// A flow target's either-or, and what a flow key may hold.
fn flow_contract(schemas: &mut Value) {
    for (schema, field) in [
        ("FlowTarget", "flow"),
        ("LimitsTarget", "flow"),
        ("CallbackIn", "flow"),
    ] {
        schemas[schema]["properties"][field]["pattern"] = json!(flows::FLOW_KEY_PATTERN);
    }
    // Exactly one of the two, non-null (null stands for absent); `all`
    // is `true` when given.
    for schema in ["FlowTarget", "LimitsTarget"] {
        schemas[schema]["oneOf"] = json!([
            { "required": ["flow"], "properties": { "flow": { "type": "string" }, "all": { "type": "null" } } },
            { "required": ["all"], "properties": { "all": { "const": true }, "flow": { "type": "null" } } },
        ]);
    }
    limits_contract(schemas);
}

/// The ranges of a flow key's limits, from the library's constants. The
/// rules across fields (a burst up to the count, the longest cool-down at
/// least the first) have no JSON Schema keyword: they are 422s naming the
/// field.
fn limits_contract(schemas: &mut Value) {
    use wheel_durable::{MAX_FLOW_PARALLELISM, MAX_FLOW_RATE};
    let period = flow_limits_json::max_period_ms();
    let fields: [(&str, &str, u64); 8] = [
        ("RateIn", "count", MAX_FLOW_RATE.into()),
        ("RateIn", "period_ms", period),
        ("RateIn", "burst", MAX_FLOW_RATE.into()),
        ("LimitsIn", "parallelism", MAX_FLOW_PARALLELISM.into()),
        (
            "BreakerIn",
            "failures",
            flow_limits_json::MAX_BREAKER_FAILURES.into(),
        ),
        ("BreakerIn", "cooldown_ms", period),
        ("BreakerIn", "max_cooldown_ms", period),
        ("BreakerIn", "pause_after_ms", period),
    ];
    for (schema, field, max) in fields {
        let f = &mut schemas[schema]["properties"][field];
        f["minimum"] = json!(1);
        f["maximum"] = json!(max);
    }
}

/// A schedule's either-ors and its delays, which the annotations cannot
/// say.
fn schedule_contract(schemas: &mut Value) {
    let s = &mut schemas["NewSchedule"];
    // Exactly one of `cron` and `every` (null stands for absent); `zone`
    // goes with `cron` and `anchor` with `every`.
    s["oneOf"] = json!([
        {
            "required": ["cron"],
            "properties": { "cron": { "type": "string" }, "every": { "type": "null" }, "anchor": { "type": "null" } },
        },
        {
            "required": ["every"],
            "properties": { "every": { "$ref": "#/components/schemas/Period" }, "cron": { "type": "null" }, "zone": { "type": "null" } },
        },
    ]);
    schemas["Period"] = json!({
        "description": "A period written as a delay: 1 s to 100 years, a whole number of milliseconds.",
        "oneOf": [
            { "type": "integer", "minimum": 1_000, "maximum": ms(&json::MAX_DELAY) },
            { "type": "string", "pattern": delay_pattern(&json::MAX_DELAY, false) },
        ],
    });
    schemas["Window"] = json!({
        "description": "A catch-up window written as a delay: 1 ms to 100 years.",
        "oneOf": [
            { "type": "integer", "minimum": 1, "maximum": ms(&json::MAX_DELAY) },
            { "type": "string", "pattern": delay_pattern(&json::MAX_DELAY, true) },
        ],
    });
    // `window` is required with `all` and refused with the others.
    schemas["CatchUpIn"]["oneOf"] = json!([
        { "required": ["window"], "properties": { "policy": { "const": "all" }, "window": { "$ref": "#/components/schemas/Window" } } },
        { "properties": { "policy": { "enum": ["skip", "latest"] }, "window": { "type": "null" } } },
    ]);
}

/// The statuses every operation of a kind can answer, each with a
/// problem document: added to each operation that does not list it.
fn shared_statuses(doc: &mut Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for op in item.values_mut() {
            let has_body = op.get("requestBody").is_some();
            let has_key = path.contains("{key}");
            let has_id = path.contains("{id}");
            let responses = &mut op["responses"];
            let mut add = |status: &str, description: &str| {
                if responses.get(status).is_none() {
                    responses[status] = problem_response(description);
                }
            };
            add("401", "Missing or wrong bearer token");
            if has_body {
                add("400", "The body is not JSON, or could not be read");
                add(
                    "413",
                    "The body is larger than the server's limit (--max-body), or the callback too large to store",
                );
                add(
                    "415",
                    "The body is not sent as JSON (`Content-Type: application/json`)",
                );
                add("422", "A field is invalid");
                add(
                    "408",
                    "The body did not arrive within the server's body timeout (--body-timeout); the connection is closed",
                );
            }
            if has_id {
                add("400", "The id in the path does not decode");
                add("422", "The id is longer than 512 bytes");
            }
            if path == "/v1/schedules/{id}" {
                add(
                    "405",
                    "The id ends in `:pause`, `:resume` or `:trigger`: the path names an action, which takes POST only",
                );
            }
            if has_key {
                add("400", "The key in the path does not decode");
                add("422", "The key is longer than 1024 bytes");
            }
            if path != "/v1/openapi.json" {
                add(
                    "503",
                    "The store is unavailable; retry (adds are idempotent on their key)",
                );
            }
            responses["401"]["headers"] = json!({
                "WWW-Authenticate": { "schema": { "type": "string" }, "description": "`Bearer`" },
            });
        }
    }
}

fn problem_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {
            "application/problem+json": { "schema": { "$ref": "#/components/schemas/Problem" } },
        },
    })
}

/// The timer a `201` answers is the one the keyed operations act on. A
/// `200` has no links: its key may be one the dedup window remembers,
/// which names no timer (`GET` answers 404), and a link cannot depend on
/// which of its two bodies came.
fn links(doc: &mut Value) {
    let key = json!({ "key": "$response.body#/key" });
    let created = &mut doc["paths"]["/v1/timers"]["post"]["responses"];
    created["201"]["links"] = json!({
        "GetTimer": { "operationId": "getTimer", "parameters": key },
        "RescheduleTimer": { "operationId": "rescheduleTimer", "parameters": key },
        "CancelTimer": { "operationId": "cancelTimer", "parameters": key },
    });
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use regex::Regex;

    use super::*;

    fn doc() -> Value {
        DOCUMENT.clone()
    }

    fn statuses(doc: &Value, path: &str, method: &str) -> Vec<String> {
        let responses = doc["paths"][path][method]["responses"].as_object();
        let mut s: Vec<String> = responses.unwrap().keys().cloned().collect();
        s.sort();
        s
    }

    #[test]
    fn the_document_is_openapi_3_1_with_every_operation() {
        let doc = doc();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        let paths = doc["paths"].as_object().unwrap();
        for p in [
            "/v1/timers",
            "/v1/timers:batch",
            "/v1/timers/{key}",
            "/v1/dead-letters",
            "/v1/dead-letters/{key}",
            "/v1/dead-letters/{key}/retry",
            "/v1/dead-letters:replay",
            "/v1/dead-letters/replays/{id}",
            "/v1/flows",
            "/v1/flows:pause",
            "/v1/flows:resume",
            "/v1/flows:limits",
            "/v1/flows:unlimit",
            "/v1/openapi.json",
        ] {
            assert!(paths.contains_key(p), "{p} is missing");
        }
        assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    }

    #[test]
    fn every_operation_documents_every_status_it_answers() {
        let doc = doc();
        let expect = [
            (
                "/v1/timers",
                "post",
                "200 201 400 401 408 409 413 415 422 503",
            ),
            ("/v1/timers", "get", "200 400 401 503"),
            (
                "/v1/timers:batch",
                "post",
                "200 400 401 408 413 415 422 503",
            ),
            ("/v1/timers/{key}", "get", "200 400 401 404 422 503"),
            ("/v1/timers/{key}", "delete", "204 400 401 404 422 503"),
            (
                "/v1/timers/{key}",
                "patch",
                "200 400 401 404 408 409 413 415 422 503",
            ),
            ("/v1/dead-letters", "get", "200 400 401 503"),
            (
                "/v1/dead-letters/{key}",
                "delete",
                "204 400 401 404 422 503",
            ),
            (
                "/v1/dead-letters/{key}/retry",
                "post",
                "200 400 401 404 422 503",
            ),
            (
                "/v1/dead-letters:replay",
                "post",
                "202 400 401 408 413 415 422 429 503",
            ),
            (
                "/v1/dead-letters/replays/{id}",
                "get",
                "200 400 401 404 422 503",
            ),
            (
                "/v1/dead-letters/replays/{id}",
                "delete",
                "200 400 401 404 422 503",
            ),
            ("/v1/flows", "get", "200 401 503"),
            ("/v1/flows:limits", "put", "200 400 401 408 413 415 422 503"),
            (
                "/v1/flows:unlimit",
                "post",
                "200 400 401 408 413 415 422 503",
            ),
            ("/v1/flows:pause", "post", "200 400 401 408 413 415 422 503"),
            (
                "/v1/flows:resume",
                "post",
                "200 400 401 408 413 415 422 503",
            ),
            ("/v1/openapi.json", "get", "200 401"),
        ];
        for (path, method, want) in expect {
            assert_eq!(
                statuses(&doc, path, method).join(" "),
                want,
                "{method} {path}"
            );
            for (status, response) in doc["paths"][path][method]["responses"].as_object().unwrap() {
                if status.starts_with('4') || status.starts_with('5') {
                    assert_eq!(
                        response["content"]["application/problem+json"]["schema"]["$ref"],
                        "#/components/schemas/Problem",
                        "{status} of {method} {path}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_request_constraints_are_stated() {
        let doc = doc();
        let s = &doc["components"]["schemas"];
        assert_eq!(s["NewTimer"]["properties"]["key"]["minLength"], 1);
        assert_eq!(s["NewTimer"]["properties"]["key"]["maxLength"], 1024);
        assert_eq!(
            s["NewTimer"]["properties"]["key"]["not"],
            json!({ "anyOf": [
                { "enum": [".", ".."] },
                { "type": "string", "pattern": "^sched(-trigger)?:" },
            ] })
        );
        assert_eq!(s["NewTimer"]["properties"]["due_at"]["format"], "date-time");
        let one_of = s["NewTimer"]["oneOf"].as_array().unwrap();
        assert_eq!(one_of[0]["required"], json!(["due_at"]));
        assert_eq!(one_of[1]["required"], json!(["delay"]));
        assert!(s["Reschedule"]["oneOf"].is_array());
        assert_eq!(s["RetryIn"]["properties"]["max_attempts"]["minimum"], 1);
        assert_eq!(s["RetryIn"]["properties"]["max_attempts"]["maximum"], 25);
        assert_eq!(s["NewBatch"]["properties"]["timers"]["minItems"], 1);
        assert_eq!(s["NewBatch"]["properties"]["timers"]["maxItems"], 1000);
        assert_eq!(s["CallbackIn"]["required"], json!(["url"]));
        assert!(s["CallbackIn"]["not"]["required"].is_array());
        let method = Regex::new(
            s["CallbackIn"]["properties"]["method"]["pattern"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        for m in ["GET", "post", "Put", "PATCH", "delete"] {
            assert!(method.is_match(m), "{m}");
        }
        for m in ["", "HEAD", "GETX", " GET"] {
            assert!(!method.is_match(m), "{m}");
        }
        let params = doc["paths"]["/v1/timers"]["get"]["parameters"]
            .as_array()
            .unwrap();
        let param =
            |name: &str| params.iter().find(|p| p["name"] == name).unwrap()["schema"].clone();
        assert_eq!(param("limit")["minimum"], 1);
        assert_eq!(param("limit")["maximum"], 1000);
        assert_eq!(
            param("state")["enum"],
            json!(["pending", "claimed", "running", "parked"])
        );
        assert_eq!(param("due_before")["format"], "date-time");
        let key = &doc["paths"]["/v1/timers/{key}"]["get"]["parameters"][0]["schema"];
        assert_eq!(
            (key["minLength"].clone(), key["maxLength"].clone()),
            (json!(1), json!(1024))
        );
    }

    #[test]
    fn a_flow_target_is_one_of_a_key_and_all() {
        let doc = doc();
        let s = &doc["components"]["schemas"];
        let one_of = s["FlowTarget"]["oneOf"].as_array().unwrap();
        assert_eq!(one_of[0]["required"], json!(["flow"]));
        assert_eq!(one_of[1]["properties"]["all"], json!({ "const": true }));
        for schema in ["FlowTarget", "CallbackIn"] {
            let flow = &s[schema]["properties"]["flow"];
            assert_eq!(
                (flow["minLength"].clone(), flow["maxLength"].clone()),
                (json!(1), json!(512))
            );
            assert_eq!(flow["pattern"], flows::FLOW_KEY_PATTERN, "{schema}");
        }
        assert!(
            s["State"]["enum"]
                .as_array()
                .unwrap()
                .contains(&json!("parked"))
        );
    }

    #[test]
    fn only_a_created_timer_links_to_the_keyed_operations() {
        let doc = doc();
        let responses = &doc["paths"]["/v1/timers"]["post"]["responses"];
        assert_eq!(
            responses["201"]["links"]["GetTimer"]["operationId"],
            "getTimer"
        );
        assert!(
            responses["200"].get("links").is_none(),
            "{}",
            responses["200"]
        );
    }

    #[test]
    fn delay_schemas_agree_with_the_parser() {
        let doc = doc();
        let s = &doc["components"]["schemas"];
        for (schema, max, nonzero) in [
            ("Delay", json::MAX_DELAY, false),
            ("Backoff", json::MAX_BACKOFF, true),
            ("Period", json::MAX_DELAY, false),
            ("Window", json::MAX_DELAY, true),
        ] {
            let re = Regex::new(s[schema]["oneOf"][1]["pattern"].as_str().unwrap()).unwrap();
            let top = ms(&max);
            assert_eq!(s[schema]["oneOf"][0]["maximum"], top);
            let accepted = |text: &str| {
                json::parse_delay(text).is_ok_and(|d| d <= max && !(nonzero && d.is_zero()))
            };
            for unit in ["", "ms", "s", "m", "h", "d", "x", "sm"] {
                for n in [
                    0,
                    1,
                    2,
                    24,
                    25,
                    1440,
                    1441,
                    36_500,
                    36_501,
                    86_400,
                    86_401,
                    top,
                    top + 1,
                ] {
                    let text = format!("{n}{unit}");
                    assert_eq!(re.is_match(&text), accepted(&text), "{schema}: {text}");
                }
            }
            // An integer delay is capped as its text form is.
            assert!(
                json::Delay::Millis(crate::decode::Whole(top))
                    .duration()
                    .is_ok_and(|d| d == max)
            );
        }
        assert!(
            json::Delay::Millis(crate::decode::Whole(ms(&json::MAX_DELAY) + 1))
                .duration()
                .is_err()
        );
        assert_eq!(json::MAX_BACKOFF, Duration::from_secs(86_400));
    }

    #[test]
    fn cursor_patterns_match_the_cursors_of_their_listing() {
        let doc = doc();
        let pattern = |path: &str| {
            let p = &doc["paths"][path]["get"]["parameters"];
            let cursor = p
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == "cursor")
                .unwrap();
            Regex::new(cursor["schema"]["pattern"].as_str().unwrap()).unwrap()
        };
        let (timers, dead) = (pattern("/v1/timers"), pattern("/v1/dead-letters"));
        for key in ["k", "order:17", "é", "€uro", "𝄞", "\u{7f}"] {
            let hex: String = key.bytes().map(|b| format!("{b:02x}")).collect();
            for (tag, listing) in [
                ("p", Listing::Pending),
                ("c", Listing::Claimed),
                ("k", Listing::Parked),
                ("d", Listing::Dead),
            ] {
                let text = format!("{tag}.1700000000000.{hex}");
                let c: wheel_durable::Cursor = text.parse().unwrap();
                assert_eq!(c.listing(), listing);
                assert_eq!(timers.is_match(&text), tag != "d", "{text}");
                assert_eq!(dead.is_match(&text), tag == "d", "{text}");
            }
        }
        // Bytes that are not UTF-8, an odd length, no key, a sign.
        for bad in [
            "p.1.ff",
            "p.1.c3",
            "p.1.edA080",
            "p.1.6",
            "p.1.",
            "p.+1.6b",
            "p.1.+6b",
            "x.1.6b",
        ] {
            assert!(bad.parse::<wheel_durable::Cursor>().is_err(), "{bad}");
            assert!(!timers.is_match(bad), "{bad}");
        }
    }

    use wheel_durable::Listing;
}
