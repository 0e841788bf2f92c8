//! Bulk replay of dead letters over HTTP: start by flow, follow the
//! progress at the `Location`, cancel, and the problem documents of bad
//! rates, limits and filters.

use crate::common;

use common::{Receiver, Server, TOKEN, assert_problem, eventually};
use reqwest::Method;
use serde_json::{Value, json};

/// `n` callbacks to `rx` that answer 400: dead letters after one attempt.
fn dead_letters(s: &Server, rx: &Receiver, prefix: &str, n: usize) {
    for i in 0..n {
        let url = rx.url(&format!("/fail/{prefix}/{i}"));
        let t = json!({ "key": format!("{prefix}:{i}"), "delay": 0, "callback": { "url": url } });
        assert_eq!(s.post("/v1/timers", t).0, 201);
    }
}

fn dead_count(s: &Server) -> usize {
    let (_, page) = s.get("/v1/dead-letters?limit=1000");
    page["dead_letters"].as_array().map_or(0, Vec::len)
}

fn origin(rx: &Receiver) -> String {
    rx.base.trim_end_matches('/').to_owned()
}

/// Starts a replay: its path and its first answer.
fn start(s: &Server, body: Value) -> (String, Value) {
    let r = s
        .req(Method::POST, "/v1/dead-letters:replay")
        .json(&body)
        .send()
        .unwrap();
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let (status, out) = common::read(r);
    assert_eq!(status, 202, "{out}");
    assert_eq!(
        location,
        format!("/v1/dead-letters/replays/{}", out["id"].as_str().unwrap())
    );
    (location, out)
}

#[test]
fn dead_letters_of_one_flow_are_replayed_and_a_replay_is_cancelled() {
    let (rx1, rx2) = (Receiver::start(), Receiver::start());
    let s = Server::start(&["--allow-private-targets"]);
    dead_letters(&s, &rx1, "a", 10);
    dead_letters(&s, &rx2, "b", 5);
    eventually("the dead letters", || dead_count(&s) == 15);
    // Failure times are whole milliseconds; a replay takes those before it.
    std::thread::sleep(std::time::Duration::from_millis(5));

    let body =
        json!({ "filter": { "flow": origin(&rx1), "reason": "400" }, "rate": 1000, "limit": null });
    let (path, first) = start(&s, body);
    assert_eq!(first["rate"], 1000.0);
    assert_eq!(first["filter"]["flow"], origin(&rx1));
    eventually("the replay's end", || s.get(&path).1["state"] == "done");
    let (status, done) = s.get(&path);
    assert_eq!(status, 200);
    assert_eq!(
        (done["matched"].as_u64(), done["revived"].as_u64()),
        (Some(10), Some(10)),
        "{done}"
    );
    assert_eq!(done["skipped"], 0);
    assert!(done["error"].is_null());
    // Each revived letter is called once more, and fails again (400).
    eventually("the revived calls", || rx1.got().len() == 20);
    assert_eq!(rx2.got().len(), 5);

    let slow = json!({ "filter": { "flow": origin(&rx2) }, "rate": 0.5 });
    let (path, _) = start(&s, slow);
    eventually("the first revival", || s.get(&path).1["revived"] == 1);
    let (status, cancelled) = s.send(Method::DELETE, &path, None);
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["state"], "cancelled");
    let revived = cancelled["revived"].as_u64().unwrap();
    assert!(revived < 5, "{cancelled}");
    // Cancelled is forgotten.
    assert_problem(&s.send(Method::DELETE, &path, None), 404, Some("id"));
    assert_problem(&s.get(&path), 404, Some("id"));
    eventually("the revived call", || {
        rx2.got().len() == 5 + revived as usize
    });
}

#[test]
fn bad_replays_get_problem_documents() {
    let s = Server::start(&[]);
    let replay = |body: Value| s.send(Method::POST, "/v1/dead-letters:replay", Some(body));
    for rate in [
        json!(0),
        json!(-1),
        json!(2_000_000),
        json!("fast"),
        json!(null),
    ] {
        let got = replay(json!({ "rate": rate }));
        assert_problem(&got, 422, Some("rate"));
    }
    assert_problem(
        &replay(json!({ "rate": 1, "limit": 0 })),
        422,
        Some("limit"),
    );
    for limit in [json!(-3), json!(9_007_199_254_740_992_u64)] {
        assert_problem(
            &replay(json!({ "rate": 1, "limit": limit })),
            422,
            Some("limit"),
        );
    }
    let filter = |f: Value| replay(json!({ "rate": 1, "filter": f }));
    for flow in ["http://127.0.0.1", "http://h:80/path", "ftp://h:21"] {
        assert_problem(&filter(json!({ "flow": flow })), 422, Some("filter.flow"));
    }
    assert_problem(
        &filter(json!({ "failed_since": "yesterday" })),
        422,
        Some("filter.failed_since"),
    );
    let t = "2030-01-01T00:00:00Z";
    assert_problem(
        &filter(json!({ "failed_since": t, "failed_before": t })),
        422,
        Some("filter.failed_before"),
    );
    assert_problem(
        &filter(json!({ "color": "red" })),
        422,
        Some("filter.color"),
    );
    assert_problem(&s.get("/v1/dead-letters/replays/nothing"), 404, Some("id"));
    assert_problem(
        &s.send(Method::DELETE, "/v1/dead-letters/replays/nothing", None),
        404,
        Some("id"),
    );
    let long = format!("/v1/dead-letters/replays/{}", "x".repeat(513));
    assert_problem(&s.get(&long), 422, Some("id"));
    // Every replay route needs the token.
    for (method, path) in [
        (Method::POST, "/v1/dead-letters:replay"),
        (Method::GET, "/v1/dead-letters/replays/x"),
        (Method::DELETE, "/v1/dead-letters/replays/x"),
    ] {
        let url = format!("{}{path}", s.base);
        let none = s.client.request(method.clone(), &url).send().unwrap();
        assert_problem(&common::read(none), 401, None);
        let wrong = s
            .client
            .request(method, &url)
            .bearer_auth(format!("{TOKEN}x"));
        assert_problem(&common::read(wrong.send().unwrap()), 401, None);
    }
}

#[test]
fn the_dashboard_replays_dead_letters_and_shows_the_progress() {
    let Some(b) = crate::browser::Browser::for_test() else {
        return;
    };
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    dead_letters(&s, &rx, "d", 3);
    eventually("the dead letters", || dead_count(&s) == 3);
    std::thread::sleep(std::time::Duration::from_millis(5));
    b.goto(&format!("{}/", s.base));
    b.type_into(&b.find("#token"), TOKEN);
    b.click(&b.find("#token-save"));
    eventually("the notice to go", || b.text(&b.find("#notice")).is_empty());
    b.script(
        "document.getElementById('replay-rate').value = '1000';
         document.getElementById('replay-flow').value = arguments[0];",
        json!([origin(&rx)]),
    );
    b.click(&b.find("#replay-start"));
    eventually("the replay's end on the page", || {
        b.text(&b.find("#replay-progress"))
            .starts_with("Replay done: 3 revived, 0 skipped, 3 matched")
    });
    assert_eq!(
        b.attribute(&b.find("#replay-cancel"), "disabled")
            .as_deref(),
        Some("true")
    );
    eventually("the revived calls", || rx.got().len() == 6);
}
