//! How the API reads a request and writes its answer, over HTTP against
//! the built binary: limits on delays, objects only, repeated fields and
//! parameters named, whole numbers with a zero fraction, the callback URL's
//! form, a `json` body sent as written, times with milliseconds, the keys
//! no URL can name, and what a revival answers.

use crate::common;

use common::{Receiver, Server, assert_problem, eventually};
use reqwest::Method;
use serde_json::{Value, json};

fn callback(url: &str) -> Value {
    json!({ "url": url, "method": "POST", "json": { "order": 17 } })
}

/// A timer due in an hour to a receiver that is never called.
fn later(key: &str) -> Value {
    json!({ "key": key, "delay": "1h", "callback": { "url": "http://127.0.0.1:9/never" } })
}

/// Sends `body` as it is, with a JSON content type.
fn send_raw(s: &Server, method: Method, path: &str, body: &str) -> (u16, Value) {
    let r = s
        .req(method, path)
        .header("content-type", "application/json")
        .body(body.to_owned());
    common::read(r.send().unwrap())
}

#[test]
fn delays_are_capped_at_100_years_in_either_form() {
    let s = Server::start(&["--allow-private-targets"]);
    let url = "http://127.0.0.1:9/x";
    // 100 years of 365 days, in milliseconds: the longest delay.
    let longest = 3_153_600_000_000u64;
    let timer = |delay: Value| json!({ "delay": delay, "callback": { "url": url } });
    assert_eq!(s.post("/v1/timers", timer(json!(longest))).0, 201);
    for delay in [json!(longest + 1), json!(u64::MAX), json!("36501d")] {
        assert_problem(&s.post("/v1/timers", timer(delay)), 422, Some("delay"));
    }
    for backoff in [json!(longest + 1), json!(u64::MAX)] {
        let mut t = timer(json!("1h"));
        t["retry"] = json!({ "backoff": backoff });
        assert_problem(&s.post("/v1/timers", t), 422, Some("retry.backoff"));
    }
    assert_eq!(s.post("/v1/timers", later("moved")).0, 201);
    for delay in [json!(longest + 1), json!(u64::MAX)] {
        let got = s.send(
            Method::PATCH,
            "/v1/timers/moved",
            Some(json!({ "delay": delay })),
        );
        assert_problem(&got, 422, Some("delay"));
    }
    let got = s.send(
        Method::PATCH,
        "/v1/timers/moved",
        Some(json!({ "delay": longest })),
    );
    assert_eq!(got.0, 200, "{}", got.1);
}

#[test]
fn arrays_are_refused_where_objects_are_expected() {
    let s = Server::start(&["--allow-private-targets"]);
    let cb = r#"{"url":"http://127.0.0.1:9/x"}"#;
    // (route, method, body, the field named): each array is the fields of
    // the object expected there, in order.
    let cases = [
        (
            "/v1/timers",
            Method::POST,
            format!(r#"[null,null,"1h",{cb},null]"#),
            ".",
        ),
        (
            "/v1/timers",
            Method::POST,
            r#"{"delay":"1h","callback":["http://127.0.0.1:9/x"]}"#.to_owned(),
            "callback",
        ),
        (
            "/v1/timers",
            Method::POST,
            format!(r#"{{"delay":"1h","callback":{cb},"retry":[3,"1s"]}}"#),
            "retry",
        ),
        (
            "/v1/timers:batch",
            Method::POST,
            format!(r#"[[{{"delay":"1h","callback":{cb}}}]]"#),
            ".",
        ),
        (
            "/v1/timers:batch",
            Method::POST,
            format!(
                r#"{{"timers":[{{"delay":"1h","callback":{cb}}},[null,null,"1h",{cb},null]]}}"#
            ),
            "timers[1]",
        ),
        (
            "/v1/timers/k",
            Method::PATCH,
            r#"[null,"2h"]"#.to_owned(),
            ".",
        ),
    ];
    assert_eq!(s.post("/v1/timers", later("k")).0, 201);
    for (path, method, body, field) in cases {
        let got = send_raw(&s, method, path, &body);
        assert_problem(&got, 422, Some(field));
    }
    // Nothing was added but "k".
    assert_eq!(s.get("/v1/timers").1["timers"].as_array().unwrap().len(), 1);
    // An object of the same fields still goes through.
    let ok = send_raw(&s, Method::PATCH, "/v1/timers/k", r#"{"delay":"2h"}"#);
    assert_eq!(ok.0, 200, "{}", ok.1);
}

#[test]
fn a_repeated_field_or_parameter_is_named() {
    let s = Server::start(&["--allow-private-targets"]);
    let cases = [
        (
            "/v1/timers",
            r#"{"key":"a","key":"b","delay":1,"callback":{"url":"http://127.0.0.1:9/x"}}"#,
            "key",
        ),
        (
            "/v1/timers",
            r#"{"delay":1,"callback":{"url":"http://127.0.0.1:9/x","url":"http://127.0.0.1:9/y"}}"#,
            "callback.url",
        ),
        (
            "/v1/timers",
            r#"{"delay":1,"callback":{"url":"http://127.0.0.1:9/x"},"retry":{"backoff":"1s","backoff":"2s"}}"#,
            "retry.backoff",
        ),
        (
            "/v1/timers:batch",
            r#"{"timers":[{"delay":1,"delay":2,"callback":{"url":"http://127.0.0.1:9/x"}}]}"#,
            "timers[0].delay",
        ),
        ("/v1/timers:batch", r#"{"timers":[],"timers":[]}"#, "timers"),
    ];
    for (path, body, field) in cases {
        assert_problem(&send_raw(&s, Method::POST, path, body), 422, Some(field));
    }
    for (query, field) in [
        ("/v1/timers?limit=1&limit=2", "limit"),
        ("/v1/timers?state=pending&state=running", "state"),
        ("/v1/dead-letters?limit=1&limit=2", "limit"),
        ("/v1/dead-letters?cursor=a&cursor=b", "cursor"),
    ] {
        assert_problem(&s.get(query), 400, Some(field));
    }
}

#[test]
fn a_json_callback_body_is_sent_as_written() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    // Keys out of alphabetical order, and spaces: kept byte for byte.
    let written = r#"{"zeta": 1,  "alpha" : [1, 2.50, "é"],"mid":{"b":null, "a":"x"}}"#;
    let body = format!(
        r#"{{"key":"raw","delay":0,"callback":{{"url":"{}","json": {written} }}}}"#,
        rx.url("/raw")
    );
    let (status, t) = send_raw(&s, Method::POST, "/v1/timers", &body);
    assert_eq!(status, 201, "{t}");
    assert_eq!(t["callback"]["body"], written);
    eventually("the callback", || !rx.got().is_empty());
    let got = &rx.got()[0];
    assert_eq!(String::from_utf8_lossy(&got.body), written);
    assert_eq!(got.header("content-type"), Some("application/json"));
}

#[test]
fn times_go_out_with_three_fraction_digits() {
    let s = Server::start(&["--allow-private-targets"]);
    for (i, (at, out)) in [
        ("2030-01-01T09:00:00Z", "2030-01-01T09:00:00.000Z"),
        ("2030-01-01T09:00:00.1Z", "2030-01-01T09:00:00.100Z"),
        ("2030-01-01T10:00:00.12+01:00", "2030-01-01T09:00:00.120Z"),
    ]
    .into_iter()
    .enumerate()
    {
        let t = json!({ "key": format!("t{i}"), "due_at": at, "callback": callback("http://127.0.0.1:9/x") });
        let (status, made) = s.post("/v1/timers", t);
        assert_eq!(status, 201, "{made}");
        assert_eq!(made["due_at"], out);
        assert_eq!(made["first_due_at"], out);
        assert_eq!(s.get(&format!("/v1/timers/t{i}")).1["due_at"], out);
    }
    let (_, made) = s.post("/v1/timers", later("rel"));
    let due = made["due_at"].as_str().unwrap();
    assert_eq!(due.len(), "2030-01-01T09:00:00.000Z".len(), "{due}");
}

#[test]
fn the_keys_dot_and_dot_dot_are_refused() {
    let s = Server::start(&["--allow-private-targets"]);
    for key in [".", ".."] {
        assert_problem(&s.post("/v1/timers", later(key)), 422, Some("key"));
        let batch = json!({ "timers": [later("fine"), later(key)] });
        assert_problem(
            &s.post("/v1/timers:batch", batch),
            422,
            Some("timers[1].key"),
        );
    }
    // Other keys with dots are one segment, and reachable at their path.
    for key in ["...", ".a", "a.."] {
        let made = s
            .req(Method::POST, "/v1/timers")
            .json(&later(key))
            .send()
            .unwrap();
        assert_eq!(made.status().as_u16(), 201, "{key}");
        let location = made.headers()["location"].to_str().unwrap().to_owned();
        assert_eq!(location, format!("/v1/timers/{key}"));
        assert_eq!(s.get(&location).1["key"], key);
    }
}

#[test]
fn keys_of_schedule_runs_are_refused() {
    let s = Server::start(&["--allow-private-targets"]);
    for key in ["sched:daily:1700000000000", "sched-trigger:daily:1"] {
        assert_problem(&s.post("/v1/timers", later(key)), 422, Some("key"));
        let batch = json!({ "timers": [later("fine"), later(key)] });
        assert_problem(
            &s.post("/v1/timers:batch", batch),
            422,
            Some("timers[1].key"),
        );
    }
    // A key that only resembles one is a key like any other.
    let made = s
        .req(Method::POST, "/v1/timers")
        .json(&later("sched"))
        .send()
        .unwrap();
    assert_eq!(made.status().as_u16(), 201);
}

/// Why the keys `.` and `..` cannot be served: clients resolve them as dot
/// segments even percent-encoded (the WHATWG URL standard), so no path
/// reaches such a timer.
#[test]
fn percent_encoding_does_not_hide_dot_segments() {
    for segment in ["..", "%2e%2e", ".%2E", "%2E."] {
        let url = reqwest::Url::parse(&format!("http://h/v1/timers/{segment}")).unwrap();
        assert_eq!(url.path(), "/v1/", "{segment}");
    }
    for segment in [".", "%2e", "%2E"] {
        let url = reqwest::Url::parse(&format!("http://h/v1/timers/{segment}")).unwrap();
        assert_eq!(url.path(), "/v1/timers/", "{segment}");
    }
}

/// A revival answers what it made, even when the node starts the timer
/// (due at once) before the answer is sent: many at once, since that race
/// is what a read after the revival lost.
#[test]
fn a_revived_dead_letter_is_answered_as_pending() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    let keys: Vec<String> = (0..40).map(|i| format!("again{i}")).collect();
    let timers: Vec<Value> = keys
        .iter()
        .map(|k| json!({ "key": k, "delay": 0, "callback": { "url": rx.url("/fail/again") } }))
        .collect();
    assert_eq!(
        s.post("/v1/timers:batch", json!({ "timers": timers })).0,
        200
    );
    for round in 1..=3 {
        eventually("dead letters", || {
            s.get("/v1/dead-letters?limit=1000").1["dead_letters"]
                .as_array()
                .is_some_and(|d| d.len() == keys.len())
        });
        std::thread::scope(|scope| {
            for chunk in keys.chunks(5) {
                let s = &s;
                scope.spawn(move || {
                    for k in chunk {
                        let path = format!("/v1/dead-letters/{k}/retry");
                        let (status, revived) = s.send(Method::POST, &path, None);
                        assert_eq!(status, 200, "round {round}: {revived}");
                        assert_eq!(revived["state"], "pending", "round {round}: {revived}");
                        assert_eq!(revived["attempts"], 0, "round {round}: {revived}");
                    }
                });
            }
        });
        eventually("the calls", || rx.got().len() >= keys.len() * (round + 1));
    }
}

/// JSON Schema counts `48.0` as an integer, and so does the API: a delay,
/// a back-off and a number of attempts may come with a zero fraction.
#[test]
fn whole_numbers_may_come_with_a_zero_fraction() {
    let s = Server::start(&["--allow-private-targets"]);
    let url = "http://127.0.0.1:9/x";
    let body = r#"{"key":"w","delay":3600000.0,"callback":{"url":"URL"},"retry":{"max_attempts":3.0,"backoff":250.0}}"#
        .replace("URL", url);
    let (status, t) = send_raw(&s, Method::POST, "/v1/timers", &body);
    assert_eq!(status, 201, "{t}");
    assert_eq!(t["callback"]["max_attempts"], 3);
    let (status, moved) = send_raw(&s, Method::PATCH, "/v1/timers/w", r#"{"delay":7200000.0}"#);
    assert_eq!(status, 200, "{moved}");
    for (body, field) in [
        (r#"{"delay":1.5,"callback":{"url":"URL"}}"#, "delay"),
        (r#"{"delay":-1.0,"callback":{"url":"URL"}}"#, "delay"),
        (
            r#"{"delay":5,"callback":{"url":"URL"},"retry":{"max_attempts":2.5}}"#,
            "retry.max_attempts",
        ),
        (
            r#"{"delay":5,"callback":{"url":"URL"},"retry":{"max_attempts":1e10}}"#,
            "retry.max_attempts",
        ),
    ] {
        let got = send_raw(&s, Method::POST, "/v1/timers", &body.replace("URL", url));
        assert_problem(&got, 422, Some(field));
    }
}

/// A callback URL has the form the OpenAPI document states (which is also
/// what the client reads as written): other spellings are refused at
/// `callback.url`, in one timer and in a batch entry.
#[test]
fn callback_urls_must_have_the_documented_form() {
    let s = Server::start(&["--allow-private-targets"]);
    for good in [
        "http://127.0.0.1:9/a%20b?x=1&y=%2F",
        "https://user:pw@hooks.example:8443/in",
        "http://[::1]:9/x",
    ] {
        let t = json!({ "delay": "1h", "callback": { "url": good } });
        let (status, got) = s.post("/v1/timers", t);
        assert_eq!(status, 201, "{good}: {got}");
        assert_eq!(got["callback"]["url"], good);
    }
    for bad in [
        "HTTP://0*",
        "http://a.example/#fragment",
        "http://a.example/ü",
        "http://a b.example/",
        "http://0x7f.1/",
    ] {
        let t = json!({ "delay": "1h", "callback": { "url": bad } });
        assert_problem(&s.post("/v1/timers", t), 422, Some("callback.url"));
    }
    let batch =
        json!({ "timers": [later("ok"), { "delay": "1h", "callback": { "url": "HTTP://0*" } }] });
    assert_problem(
        &s.post("/v1/timers:batch", batch),
        422,
        Some("timers[1].callback.url"),
    );
}
