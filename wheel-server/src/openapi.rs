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
use wheel_durable::http::{MAX_HEADERS, RESERVED_HEADER_PREFIXES, RESERVED_HEADERS};

use crate::{dead, error, json, listing, schedule_json, schedules, timers};

/// The document, as the annotations give it.
#[derive(OpenApi)]
#[openapi(
    info(title = "wheel-server", description = "Durable timers that call a URL: the durable tier of wheel over HTTP."),
    paths(
        timers::create, timers::batch, timers::get, timers::cancel, timers::reschedule, timers::list,
        dead::list, dead::retry, dead::remove,
        schedules::upsert, schedules::read, schedules::list, schedules::remove,
        schedules::pause, schedules::resume, schedules::trigger, document,
    ),
    components(schemas(
        json::NewTimer, json::CallbackIn, json::RetryIn, json::Delay, json::Timer, json::State, json::CallbackOut,
        json::DeadOut, timers::NewBatch, timers::BatchItem, timers::BatchResult, timers::Reschedule,
        listing::TimerPage, listing::DeadPage, error::Problem,
        schedule_json::NewSchedule, schedule_json::CatchUpIn, schedule_json::CatchUpPolicy, schedule_json::OverlapIn,
        schedule_json::ScheduleOut, schedule_json::CatchUpOut, schedule_json::SkippedOut, schedule_json::LastRun,
        schedule_json::RunOutcome, schedules::Triggered, schedules::SchedulePageOut,
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
    for (path, listings) in [("/v1/timers", "[pc]"), ("/v1/dead-letters", "d")] {
        let params = doc["paths"][path]["get"]["parameters"].as_array_mut();
        for p in params.into_iter().flatten() {
            if p["name"] == "cursor" {
                p["schema"]["pattern"] = json!(cursor_pattern(listings));
            }
            if p["name"] == "state" {
                p["schema"] =
                    json!({ "type": "string", "enum": ["pending", "claimed", "running"] });
            }
        }
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

/// Milliseconds, as a JSON number.
fn ms(d: &std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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

/// The timer an add answers is the one the keyed operations act on.
fn links(doc: &mut Value) {
    let key = json!({ "key": "$response.body#/key" });
    let created = &mut doc["paths"]["/v1/timers"]["post"]["responses"];
    for status in ["200", "201"] {
        created[status]["links"] = json!({
            "GetTimer": { "operationId": "getTimer", "parameters": key },
            "RescheduleTimer": { "operationId": "rescheduleTimer", "parameters": key },
            "CancelTimer": { "operationId": "cancelTimer", "parameters": key },
        });
    }
}

/// A regular expression for the whole numbers `min..=n` (`min` 0 or 1),
/// leading zeros allowed.
fn numbers_up_to(n: u64, nonzero: bool) -> String {
    let digits: Vec<u32> = n.to_string().bytes().map(|b| u32::from(b - b'0')).collect();
    let k = digits.len();
    let rest = |r: usize| match r {
        0 => String::new(),
        1 => "[0-9]".to_owned(),
        r => format!("[0-9]{{{r}}}"),
    };
    let class = |a: u32, b: u32| {
        if a == b {
            a.to_string()
        } else {
            format!("[{a}-{b}]")
        }
    };
    let mut alts = Vec::new();
    // Fewer digits than `n`: any such number without a leading zero.
    if k > 1 {
        alts.push(if nonzero { "[1-9]" } else { "[0-9]" }.to_owned());
        alts.extend((2..k).map(|m| format!("[1-9]{}", rest(m - 1))));
    }
    // As many digits: below `n` at the first digit that differs.
    let prefix: String = n.to_string();
    for (i, &d) in digits.iter().enumerate() {
        let low = u32::from(i == 0 && (k > 1 || nonzero));
        if d > low {
            alts.push(format!(
                "{}{}{}",
                &prefix[..i],
                class(low, d - 1),
                rest(k - i - 1)
            ));
        }
    }
    alts.push(prefix);
    format!("0*(?:{})", alts.join("|"))
}

/// The delays `parse_delay` reads, up to `max` (and from 1 ms when
/// `nonzero`): a whole number with a unit, none meaning milliseconds.
fn delay_pattern(max: &std::time::Duration, nonzero: bool) -> String {
    let max = ms(max);
    let units = [
        ("(?:ms)?", 1),
        ("s", 1_000),
        ("m", 60_000),
        ("h", 3_600_000),
        ("d", 86_400_000),
    ];
    let alts: Vec<String> = units
        .iter()
        .filter(|(_, unit)| max / unit > 0)
        .map(|(suffix, unit)| format!("{}{suffix}", numbers_up_to(max / unit, nonzero)))
        .collect();
    format!("^(?:{})$", alts.join("|"))
}

/// The cursors of the listings `listings` (a character class of their
/// tags): `TAG.POSITION.KEY`, the key's UTF-8 bytes in hex.
fn cursor_pattern(listings: &str) -> String {
    // One UTF-8 character as hex pairs (the well-formed sequences of
    // Unicode's table 3-7).
    let h = "[0-9a-fA-F]";
    let c = "[89abAB][0-9a-fA-F]";
    let utf8 = [
        format!("[0-7]{h}"),
        format!("[cC][2-9a-fA-F]{c}|[dD]{h}{c}"),
        format!("[eE]0[abAB]{h}{c}"),
        format!("[eE][1-9a-cA-C]{c}{c}|[eE][efEF]{c}{c}"),
        format!("[eE][dD][89]{h}{c}"),
        format!("[fF]0[9abAB]{h}{c}{c}"),
        format!("[fF][1-3]{c}{c}{c}"),
        format!("[fF]4[8]{h}{c}{c}"),
    ]
    .join("|");
    format!(
        "^{listings}\\.{}\\.(?:{utf8})+$",
        numbers_up_to(u64::MAX, false)
    )
}

/// The header names a callback may not set (the library's names and
/// prefixes), in any case.
fn reserved_headers() -> String {
    let any_case = |name: &str| -> String {
        name.chars()
            .map(|c| {
                if c.is_ascii_alphabetic() {
                    format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                } else {
                    regex_escape(c)
                }
            })
            .collect()
    };
    let mut alts: Vec<String> = RESERVED_HEADERS.iter().map(|n| any_case(n)).collect();
    alts.extend(
        RESERVED_HEADER_PREFIXES
            .iter()
            .map(|p| format!("{}.*", any_case(p))),
    );
    format!("^(?:{})$", alts.join("|"))
}

fn regex_escape(c: char) -> String {
    if "\\^$.|?*+()[]{}".contains(c) {
        format!("\\{c}")
    } else {
        c.to_string()
    }
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
            json!({ "anyOf": [{ "enum": [".", ".."] }, { "pattern": "^sched(-trigger)?:" }] })
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
            json!(["pending", "claimed", "running"])
        );
        assert_eq!(param("due_before")["format"], "date-time");
        let key = &doc["paths"]["/v1/timers/{key}"]["get"]["parameters"][0]["schema"];
        assert_eq!(
            (key["minLength"].clone(), key["maxLength"].clone()),
            (json!(1), json!(1024))
        );
    }

    #[test]
    fn number_patterns_match_exactly_the_numbers_up_to_their_bound() {
        for n in [
            0,
            1,
            7,
            9,
            10,
            24,
            99,
            100,
            1440,
            36_500,
            86_400,
            3_153_600_000,
        ] {
            for nonzero in [false, true].into_iter().filter(|z| n > 0 || !z) {
                let re = Regex::new(&format!("^{}$", numbers_up_to(n, nonzero))).unwrap();
                let low = u64::from(nonzero);
                for v in (0..=n.min(3000)).chain(n.saturating_sub(3000)..n + 3000) {
                    let inside = (low..=n).contains(&v);
                    assert_eq!(
                        re.is_match(&v.to_string()),
                        inside,
                        "{v} in 0..={n} ({nonzero})"
                    );
                    assert_eq!(re.is_match(&format!("00{v}")), inside, "00{v}");
                }
                assert!(!re.is_match("") && !re.is_match("+1") && !re.is_match("1a"));
            }
        }
        let max = Regex::new(&format!("^{}$", numbers_up_to(u64::MAX, false))).unwrap();
        assert!(max.is_match(&u64::MAX.to_string()));
        assert!(!max.is_match("18446744073709551616"));
    }

    #[test]
    fn delay_schemas_agree_with_the_parser() {
        let doc = doc();
        let s = &doc["components"]["schemas"];
        for (schema, max, nonzero) in [
            ("Delay", json::MAX_DELAY, false),
            ("Backoff", json::MAX_BACKOFF, true),
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
