//! The API over HTTP against the built binary: every route, idempotency,
//! the bearer token, problem documents for every kind of bad request, and
//! the OpenAPI document against the router.

use crate::common;

use common::{Receiver, Server, TOKEN, assert_problem, eventually};
use reqwest::Method;
use serde_json::{Value, json};

fn callback(url: &str) -> Value {
    json!({ "url": url, "method": "POST", "json": { "order": 17 } })
}

/// A timer due in an hour to a receiver that is never called.
fn later(key: &str) -> Value {
    json!({ "key": key, "delay": "1h", "callback": callback("http://127.0.0.1:9/never") })
}

#[test]
fn timers_are_added_read_moved_listed_and_cancelled() {
    let s = Server::start(&["--allow-private-targets"]);
    let (status, t) = s.post(
        "/v1/timers",
        json!({ "delay": 3_600_000, "callback": callback("http://127.0.0.1:9/x") }),
    );
    assert_eq!(status, 201, "{t}");
    let key = t["key"].as_str().unwrap().to_owned();
    assert_eq!(key.len(), 32);
    assert!(key.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(t["state"], "pending");
    assert_eq!(t["callback"]["headers"]["Content-Type"], "application/json");
    assert_eq!(t["callback"]["body"], "{\"order\":17}");

    let (status, got) = s.get(&format!("/v1/timers/{key}"));
    assert_eq!(status, 200);
    assert_eq!(got["due_at"], t["due_at"]);

    let (status, moved) = s.send(
        Method::PATCH,
        &format!("/v1/timers/{key}"),
        Some(json!({ "due_at": "2031-05-01T10:00:00Z" })),
    );
    assert_eq!(status, 200, "{moved}");
    assert_eq!(moved["due_at"], "2031-05-01T10:00:00.000Z");

    for k in ["b", "c"] {
        assert_eq!(s.post("/v1/timers", later(k)).0, 201);
    }
    let (status, page) = s.get("/v1/timers?state=pending&limit=2");
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["timers"].as_array().unwrap().len(), 2);
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let (_, rest) = s.get(&format!("/v1/timers?state=pending&limit=2&cursor={cursor}"));
    assert_eq!(
        rest["timers"][0]["key"],
        key.as_str(),
        "the 2031 timer comes last"
    );
    assert!(rest["next_cursor"].is_null());
    let (_, before) = s.get("/v1/timers?due_before=2030-01-01T00:00:00Z");
    let keys: Vec<&str> = before["timers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 2);
    assert!(!keys.contains(&key.as_str()));
    assert_eq!(s.get("/v1/timers?state=claimed").1["timers"], json!([]));

    assert_eq!(
        s.send(Method::DELETE, &format!("/v1/timers/{key}"), None).0,
        204
    );
    assert_problem(
        &s.send(Method::DELETE, &format!("/v1/timers/{key}"), None),
        404,
        Some("key"),
    );
    assert_problem(&s.get(&format!("/v1/timers/{key}")), 404, Some("key"));
    // A key with a slash travels percent-encoded.
    let made = s
        .req(Method::POST, "/v1/timers")
        .json(&later("shop/17"))
        .send()
        .unwrap();
    assert_eq!(made.status().as_u16(), 201);
    assert_eq!(made.headers()["location"], "/v1/timers/shop%2F17");
    assert_eq!(s.get("/v1/timers/shop%2F17").1["key"], "shop/17");
    assert_eq!(s.send(Method::DELETE, "/v1/timers/shop%2F17", None).0, 204);
    assert_problem(
        &s.send(
            Method::PATCH,
            "/v1/timers/nothing",
            Some(json!({ "delay": "1m" })),
        ),
        404,
        Some("key"),
    );
}

#[test]
fn adding_is_idempotent_on_the_key() {
    let s = Server::start(&["--allow-private-targets"]);
    let at = json!({ "key": "order:17", "due_at": "2030-01-01T09:00:00Z", "callback": callback("http://127.0.0.1:9/a") });
    let (status, first) = s.post("/v1/timers", at.clone());
    assert_eq!(status, 201, "{first}");
    let (status, again) = s.post("/v1/timers", at.clone());
    assert_eq!(status, 200);
    assert_eq!(again, first);
    let mut other_url = at.clone();
    other_url["callback"]["url"] = json!("http://127.0.0.1:9/b");
    assert_problem(&s.post("/v1/timers", other_url), 409, Some("key"));
    let mut other_time = at.clone();
    other_time["due_at"] = json!("2030-01-01T09:00:01Z");
    assert_problem(&s.post("/v1/timers", other_time), 409, Some("key"));
    let mut other_retry = at.clone();
    other_retry["retry"] = json!({ "max_attempts": 3 });
    assert_problem(&s.post("/v1/timers", other_retry), 409, Some("key"));
    // A relative delay is not compared: the same callback is the same timer.
    let mut by_delay = at;
    by_delay.as_object_mut().unwrap().remove("due_at");
    by_delay["delay"] = json!("5m");
    assert_eq!(s.post("/v1/timers", by_delay).0, 200);
}

#[test]
fn within_the_dedup_window_a_create_of_an_ended_key_answers_how_it_ended() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets", "--dedup-window", "10m"]);
    let now = json!({ "key": "paid:17", "delay": 0, "callback": callback(&rx.url("/paid/17")) });
    assert_eq!(s.post("/v1/timers", now.clone()).0, 201);
    eventually("the callback to succeed", || {
        s.get("/v1/timers/paid:17").0 == 404 && rx.got().len() == 1
    });
    let (status, done) = s.post("/v1/timers", now);
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        (&done["key"], &done["outcome"]),
        (&json!("paid:17"), &json!("done"))
    );
    assert!(done["ended_at"].as_str().unwrap().ends_with('Z'), "{done}");
    assert_problem(&s.get("/v1/timers/paid:17"), 404, Some("key"));

    assert_eq!(s.post("/v1/timers", later("gone")).0, 201);
    assert_eq!(s.send(Method::DELETE, "/v1/timers/gone", None).0, 204);
    // Whatever the content: only how the timer ended is remembered.
    let mut other = later("gone");
    other["callback"]["url"] = json!("http://127.0.0.1:9/other");
    let (status, gone) = s.post("/v1/timers", other);
    assert_eq!(
        (status, &gone["outcome"]),
        (200, &json!("cancelled")),
        "{gone}"
    );
    let (status, r) = s.post(
        "/v1/timers:batch",
        json!({ "timers": [later("gone"), later("new")] }),
    );
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["results"][0]["status"], 200);
    assert_eq!(r["results"][0]["ended"]["outcome"], "cancelled");
    assert_eq!(r["results"][0].get("due_at"), None);
    assert_eq!(r["results"][1]["status"], 201);
    assert_eq!(rx.got().len(), 1);
}

#[test]
fn without_a_dedup_window_an_ended_key_is_added_again() {
    let s = Server::start(&["--allow-private-targets"]);
    assert_eq!(s.post("/v1/timers", later("gone")).0, 201);
    assert_eq!(s.send(Method::DELETE, "/v1/timers/gone", None).0, 204);
    assert_eq!(s.post("/v1/timers", later("gone")).0, 201);
}

#[test]
fn a_batch_adds_each_timer_and_reports_each() {
    let s = Server::start(&["--allow-private-targets"]);
    assert_eq!(s.post("/v1/timers", later("old")).0, 201);
    let mut changed = later("old");
    changed["callback"]["url"] = json!("http://127.0.0.1:9/other");
    let (status, r) = s.post(
        "/v1/timers:batch",
        json!({ "timers": [later("new"), later("old"), changed, later("new")] }),
    );
    assert_eq!(status, 200, "{r}");
    let statuses: Vec<u64> = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [201, 200, 409, 200]);
    assert_eq!(r["results"][0]["key"], "new");
    let old = s.get("/v1/timers/old").1;
    assert_eq!(r["results"][1]["due_at"], old["due_at"]);
    assert_eq!(r["results"][2].get("due_at"), None);

    let many: Vec<Value> = (0..1000).map(|i| later(&format!("t{i}"))).collect();
    let (status, r) = s.post("/v1/timers:batch", json!({ "timers": many }));
    assert_eq!(status, 200);
    assert_eq!(r["results"].as_array().unwrap().len(), 1000);
    assert_eq!(
        s.get("/v1/timers?limit=1000").1["timers"]
            .as_array()
            .unwrap()
            .len(),
        1000
    );

    let too_many: Vec<Value> = (0..1001).map(|i| later(&format!("u{i}"))).collect();
    assert_problem(
        &s.post("/v1/timers:batch", json!({ "timers": too_many })),
        422,
        Some("timers"),
    );
    let mut bad = later("x");
    bad["delay"] = json!("soon");
    assert_problem(
        &s.post("/v1/timers:batch", json!({ "timers": [later("y"), bad] })),
        422,
        Some("timers[1].delay"),
    );
    assert_problem(&s.get("/v1/timers/y"), 404, Some("key"));
}

#[test]
fn every_v1_route_needs_the_token() {
    let s = Server::start(&[]);
    let routes = [
        (Method::POST, "/v1/timers"),
        (Method::GET, "/v1/timers"),
        (Method::POST, "/v1/timers:batch"),
        (Method::GET, "/v1/timers/k"),
        (Method::PATCH, "/v1/timers/k"),
        (Method::DELETE, "/v1/timers/k"),
        (Method::GET, "/v1/dead-letters"),
        (Method::POST, "/v1/dead-letters/k/retry"),
        (Method::DELETE, "/v1/dead-letters/k"),
        (Method::GET, "/v1/openapi.json"),
    ];
    for (method, path) in routes {
        let url = format!("{}{path}", s.base);
        let none = s.client.request(method.clone(), &url).send().unwrap();
        assert_eq!(none.headers()["www-authenticate"], "Bearer");
        assert_problem(&common::read(none), 401, None);
        let wrong = s
            .client
            .request(method.clone(), &url)
            .bearer_auth(format!("{TOKEN}x"))
            .send()
            .unwrap();
        assert_problem(&common::read(wrong), 401, None);
        let short = s
            .client
            .request(method, &url)
            .bearer_auth(&TOKEN[1..])
            .send()
            .unwrap();
        assert_eq!(short.status().as_u16(), 401);
    }
    for open in ["/healthz", "/readyz", "/metrics", "/"] {
        let r = s.client.get(format!("{}{open}", s.base)).send().unwrap();
        assert_eq!(r.status().as_u16(), 200, "{open}");
    }
}

#[test]
fn bad_requests_get_problem_documents_naming_the_field() {
    let s = Server::start(&["--max-body", "4096"]);
    let post_raw = |body: &str, content_type: &str| {
        let r = s
            .req(Method::POST, "/v1/timers")
            .header("content-type", content_type)
            .body(body.to_owned());
        common::read(r.send().unwrap())
    };
    assert_problem(&post_raw("{\"delay\": ", "application/json"), 400, None);
    assert_problem(&post_raw("{}", "text/plain"), 415, None);
    let with = |field: &str, value: Value| {
        let mut t = later("k");
        t["callback"]["url"] = json!("https://example.com/hook");
        let (obj, name) = match field.split_once('.') {
            Some((outer, inner)) => (&mut t[outer], inner),
            None => (&mut t, field),
        };
        obj[name] = value;
        if field == "due_at" {
            t.as_object_mut().unwrap().remove("delay");
        }
        s.post("/v1/timers", t)
    };
    // (field set, its value, the field the problem names)
    let cases = [
        ("due_at", json!("2030-02-30T00:00:00Z"), "due_at"),
        ("due_at", json!("tomorrow"), "due_at"),
        ("due_at", json!("1969-01-01T00:00:00Z"), "due_at"),
        ("delay", json!("5 minutes"), "delay"),
        ("delay", json!(-5), "delay"),
        ("delay", json!(true), "delay"),
        (
            "callback.url",
            json!("ftp://files.example/x"),
            "callback.url",
        ),
        ("callback.url", json!("not a url"), "callback.url"),
        ("callback.method", json!("TRACE"), "callback.method"),
        (
            "callback.headers",
            json!({ "webhook-id": "x" }),
            "callback.headers",
        ),
        ("callback.body", json!("text"), "callback.json"),
        ("key", json!(""), "key"),
        ("retry", json!({ "max_attempts": 26 }), "retry.max_attempts"),
        ("retry", json!({ "backoff": "0s" }), "retry.backoff"),
        ("retry", json!({ "backof": "1s" }), "retry.backof"),
        ("dealy", json!("5m"), "dealy"),
    ];
    for (field, value, named) in cases {
        assert_problem(&with(field, value), 422, Some(named));
    }
    assert_problem(
        &s.post("/v1/timers", json!({ "delay": "1m" })),
        422,
        Some("callback"),
    );
    assert_problem(
        &s.post(
            "/v1/timers",
            json!({ "callback": callback("https://example.com/") }),
        ),
        422,
        Some("due_at"),
    );
    let big = json!({ "delay": "1m", "callback": { "url": "https://example.com/", "body": "x".repeat(5000) } });
    assert_problem(&s.post("/v1/timers", big), 413, None);
    // Not one of these took the server down.
    assert_eq!(s.get("/healthz").0, 200);
}

#[test]
fn bad_parameters_and_routes_get_problem_documents() {
    let s = Server::start(&[]);
    assert_problem(&s.get("/v1/timers?limit=0"), 400, Some("limit"));
    assert_problem(&s.get("/v1/timers?state=dead"), 400, Some("state"));
    assert_problem(&s.get("/v1/timers?cursor=zzz"), 400, Some("cursor"));
    assert_problem(
        &s.get("/v1/timers?due_before=yesterday"),
        400,
        Some("due_before"),
    );
    assert_problem(&s.get("/v1/nothing"), 404, None);
    assert_problem(&s.send(Method::PUT, "/v1/timers", None), 405, None);
    assert_problem(
        &s.send(Method::PATCH, "/v1/timers/k", Some(json!({}))),
        422,
        Some("due_at"),
    );
    // Not one of these took the server down.
    assert_eq!(s.get("/healthz").0, 200);
}

#[test]
fn private_targets_are_refused_unless_allowed() {
    let s = Server::start(&[]);
    for url in [
        "http://127.0.0.1:8080/x",
        "http://10.0.0.1/x",
        "http://192.168.1.1/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:8080/x",
        "http://[fd00:ec2::254]/x",
        "http://localhost:8080/x",
        "http://100.64.0.1/x",
        "http://0.0.0.0/x",
    ] {
        let got = s.post(
            "/v1/timers",
            json!({ "delay": "1h", "callback": { "url": url } }),
        );
        assert_problem(&got, 422, Some("callback.url"));
        assert_eq!(got.1["type"], "urn:wheel:problem:forbidden-target", "{url}");
    }
    let batch = json!({ "timers": [later("ok-shape"), { "delay": "1h", "callback": { "url": "http://127.0.0.1/" } }] });
    assert_problem(
        &s.post("/v1/timers:batch", batch),
        422,
        Some("timers[0].callback.url"),
    );
    assert_eq!(s.get("/v1/timers").1["timers"], json!([]));

    let open = Server::start(&["--allow-private-targets"]);
    for (i, url) in [
        "http://127.0.0.1:9/x",
        "http://[::1]:9/x",
        "http://localhost:9/x",
    ]
    .iter()
    .enumerate()
    {
        let (status, t) = open.post(
            "/v1/timers",
            json!({ "key": format!("p{i}"), "delay": "1h", "callback": { "url": url } }),
        );
        assert_eq!(status, 201, "{url}: {t}");
    }
}

#[test]
fn dead_letters_are_listed_revived_and_removed() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    let t = json!({ "key": "hook:3", "delay": 0, "callback": { "url": rx.url("/fail/3") } });
    assert_eq!(s.post("/v1/timers", t).0, 201);
    eventually("a dead letter", || {
        s.get("/v1/dead-letters").1["dead_letters"]
            .as_array()
            .is_some_and(|d| d.len() == 1)
    });
    let (_, page) = s.get("/v1/dead-letters?limit=10");
    let dead = &page["dead_letters"][0];
    assert_eq!(dead["key"], "hook:3");
    assert!(dead["reason"].as_str().unwrap().contains("400"), "{dead}");
    assert_eq!(dead["callback"]["url"], rx.url("/fail/3"));
    assert_eq!(s.get("/v1/timers/hook:3").1["state"], "dead");
    assert_problem(
        &s.send(
            Method::PATCH,
            "/v1/timers/hook:3",
            Some(json!({ "delay": "1m" })),
        ),
        409,
        Some("key"),
    );

    let (status, revived) = s.send(Method::POST, "/v1/dead-letters/hook:3/retry", None);
    // What the revival made, whatever the node did with it since.
    assert_eq!(status, 200, "{revived}");
    assert_eq!(revived["key"], "hook:3");
    assert_eq!(revived["state"], "pending", "{revived}");
    assert_eq!(revived["attempts"], 0);
    assert_eq!(revived["callback"]["url"], rx.url("/fail/3"));
    assert_eq!(revived["first_due_at"], revived["due_at"]);
    // Due now: not before it failed (times compare as text: one format).
    let due = revived["due_at"].as_str().unwrap();
    assert!(
        due >= dead["failed_at"].as_str().unwrap(),
        "{revived} {dead}"
    );
    assert!(revived.get("failed_at").is_none() && revived.get("reason").is_none());
    eventually("a second request", || rx.got().len() == 2);
    eventually("dead again", || {
        s.get("/v1/timers/hook:3").1["state"] == "dead"
    });
    assert_eq!(
        s.send(Method::DELETE, "/v1/dead-letters/hook:3", None).0,
        204
    );
    assert_problem(
        &s.send(Method::DELETE, "/v1/dead-letters/hook:3", None),
        404,
        Some("key"),
    );
    assert_problem(
        &s.send(Method::POST, "/v1/dead-letters/hook:3/retry", None),
        404,
        Some("key"),
    );
    // A live timer is not a dead letter: this route leaves it alone.
    assert_eq!(s.post("/v1/timers", later("live")).0, 201);
    assert_problem(
        &s.send(Method::DELETE, "/v1/dead-letters/live", None),
        404,
        Some("key"),
    );
    assert_eq!(s.get("/v1/timers/live").0, 200);
    assert_problem(
        &s.get("/v1/dead-letters?cursor=p.1.61"),
        400,
        Some("cursor"),
    );
}

#[test]
fn a_started_timer_cannot_be_moved() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    let t = json!({ "key": "slow", "delay": 0, "callback": { "url": rx.url("/slow") } });
    assert_eq!(s.post("/v1/timers", t).0, 201);
    eventually("the run to start", || {
        s.get("/v1/timers/slow").1["state"] == "running"
    });
    let (_, running) = s.get("/v1/timers?state=running");
    assert_eq!(running["timers"][0]["key"], "slow");
    assert_eq!(s.get("/v1/timers?state=claimed").1["timers"], json!([]));
    assert_problem(
        &s.send(
            Method::PATCH,
            "/v1/timers/slow",
            Some(json!({ "delay": "1h" })),
        ),
        409,
        Some("key"),
    );
    eventually("the run to end", || s.get("/v1/timers/slow").0 == 404);
}

#[test]
fn the_openapi_document_lists_exactly_the_routed_operations() {
    let s = Server::start(&[]);
    let (status, doc) = s.get("/v1/openapi.json");
    assert_eq!(status, 200);
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let paths = doc["paths"].as_object().unwrap();
    for p in [
        "/v1/timers",
        "/v1/timers:batch",
        "/v1/timers/{key}",
        "/v1/dead-letters",
        "/v1/dead-letters/{key}",
        "/v1/dead-letters/{key}/retry",
        "/v1/schedules",
        "/v1/schedules/{id}",
        "/v1/schedules/{id}:pause",
        "/v1/schedules/{id}:resume",
        "/v1/schedules/{id}:trigger",
        "/v1/openapi.json",
    ] {
        assert!(paths.contains_key(p), "{p} is routed but not documented");
    }
    for (path, ops) in paths {
        let url = path.replace("{key}", "probe").replace("{id}", "probe");
        for method in ["get", "post", "put", "patch", "delete"] {
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let (status, body) = s.send(m, &url, None);
            let unrouted = body["type"] == "urn:wheel:problem:no-route" || status == 405;
            assert_eq!(
                ops.get(method).is_none(),
                unrouted,
                "{method} {path}: {status} {body}"
            );
        }
    }
}

#[test]
fn metrics_health_readiness_and_the_page() {
    let s = Server::start(&["--allow-private-targets"]);
    assert_eq!(s.post("/v1/timers", later("m")).0, 201);
    assert_eq!(s.get("/healthz"), (200, json!({ "status": "ok" })));
    assert_eq!(s.get("/readyz"), (200, json!({ "status": "ready" })));
    let text = s.metrics();
    for line in [
        "wheel_store_available 1",
        "wheel_timers_dead 0",
        "wheel_fired_total 0",
        "wheel_http_requests_total{route=\"/v1/timers\",method=\"POST\",status=\"201\"} 1",
        "wheel_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
    eventually("the pending count", || {
        let text = s.metrics();
        text.lines().any(|l| l == "wheel_timers_pending 1")
    });
    let page = s.client.get(format!("{}/", s.base)).send().unwrap();
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(page.text().unwrap().contains("dashboard"));
}

#[test]
fn sigterm_stops_the_server_cleanly_and_keeps_the_timers() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::data_dir(&dir);
    let s = Server::start_on(&data, &["--allow-private-targets"]);
    assert_eq!(s.post("/v1/timers", later("kept")).0, 201);
    assert!(s.terminate().success());
    let s = Server::start_on(&data, &[]);
    assert_eq!(s.get("/v1/timers/kept").1["key"], "kept");
}

#[test]
fn without_a_token_only_loopback_is_served() {
    let args: Vec<String> = [
        "--listen",
        "0.0.0.0:0",
        "--data",
        "/nonexistent/never-opened",
    ]
    .map(String::from)
    .to_vec();
    let err = common::spawn(&args).expect_err("refused to start");
    assert!(err.contains("without --token"), "{err}");
    let s = Server::start(&["--no-token"]);
    assert_eq!(s.get("/v1/timers").0, 200);
}
