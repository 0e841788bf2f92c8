//! Pausing and resuming through the API: a paused flow key's callbacks
//! are parked, not sent, and sent once on resume; a paused namespace
//! sends nothing until resumed; bad bodies are problem documents naming
//! the field; every flow route needs the token.

use crate::common;

use std::time::Duration;

use crate::dashboard::row;
use common::{Receiver, Server, TOKEN, assert_problem, eventually};
use reqwest::Method;
use serde_json::{Value, json};

/// A callback due at once to `rx`, under the named flow key if given.
fn due_now(key: &str, rx: &Receiver, flow: Option<&str>) -> Value {
    let mut callback = json!({ "url": rx.url(&format!("/{key}")) });
    if let Some(flow) = flow {
        callback["flow"] = json!(flow);
    }
    json!({ "key": key, "delay": 0, "callback": callback })
}

/// The keys of the timers `GET /v1/timers?state=STATE` lists.
fn listed(s: &Server, state: &str) -> Vec<String> {
    let (status, page) = s.get(&format!("/v1/timers?state={state}"));
    assert_eq!(status, 200, "{page}");
    page["timers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap().to_owned())
        .collect()
}

/// The pause part of `GET /v1/flows`: the namespace's, and each key
/// that is paused or has parked timers (the listing also holds the keys
/// this server ran, for their lateness).
pub fn pauses(flows: &Value) -> Value {
    let keys: Vec<Value> = flows["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["paused"] == true || k["parked"] != 0)
        .map(|k| json!({ "key": k["key"], "paused": k["paused"], "parked": k["parked"] }))
        .collect();
    json!({ "paused": flows["paused"], "flows": keys })
}

fn delivered(rx: &Receiver, key: &str) -> usize {
    let path = format!("/{key}");
    rx.got().iter().filter(|g| g.path == path).count()
}

#[test]
fn a_paused_flow_key_parks_its_callbacks_and_its_resume_sends_them_once() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    let paused = s.post("/v1/flows:pause", json!({ "flow": "shop" }));
    assert_eq!(
        paused,
        (
            200,
            json!({ "flow": "shop", "paused": true, "changed": true })
        )
    );
    let again = s.post("/v1/flows:pause", json!({ "flow": "shop" }));
    assert_eq!(again.1["changed"], false, "{}", again.1);
    let (status, t) = s.post("/v1/timers", due_now("held", &rx, Some("shop")));
    assert_eq!(status, 201, "{t}");
    assert_eq!(t["callback"]["flow"], "shop", "{t}");
    // Another flow key runs on: the pause is the key's alone.
    assert_eq!(s.post("/v1/timers", due_now("free", &rx, None)).0, 201);
    eventually("the other key's callback", || delivered(&rx, "free") == 1);
    eventually("the timer to be parked", || {
        listed(&s, "parked") == ["held"]
    });
    // Parked: the node saw it due and set it aside, without sending it.
    assert_eq!(delivered(&rx, "held"), 0);
    let (_, t) = s.get("/v1/timers/held");
    assert_eq!(
        (t["state"].clone(), t["attempts"].clone()),
        (json!("parked"), json!(0))
    );
    let (status, flows) = s.get("/v1/flows");
    assert_eq!(status, 200, "{flows}");
    assert_eq!(
        pauses(&flows),
        json!({ "paused": false, "flows": [{ "key": "shop", "paused": true, "parked": 1 }] })
    );
    let resumed = s.post("/v1/flows:resume", json!({ "flow": "shop" }));
    assert_eq!(
        resumed,
        (
            200,
            json!({ "flow": "shop", "paused": false, "changed": true })
        )
    );
    eventually("the parked callback", || delivered(&rx, "held") == 1);
    eventually("the timer to be done", || s.get("/v1/timers/held").0 == 404);
    assert_eq!(delivered(&rx, "held"), 1, "sent once");
    assert_eq!(
        pauses(&s.get("/v1/flows").1),
        json!({ "paused": false, "flows": [] })
    );
    let again = s.post("/v1/flows:resume", json!({ "flow": "shop" }));
    assert_eq!(again.1["changed"], false, "{}", again.1);
}

#[test]
fn a_callback_s_flow_key_is_its_url_s_origin_unless_named() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    let origin = rx.url("").trim_end_matches('/').to_owned();
    let (status, t) = s.post("/v1/timers", due_now("named", &rx, Some("other")));
    assert_eq!(status, 201, "{t}");
    assert_eq!(t["callback"]["flow"], "other", "{t}");
    eventually("the named key's callback", || delivered(&rx, "named") == 1);
    // Pausing the origin parks the callbacks that name no flow key.
    assert_eq!(s.post("/v1/flows:pause", json!({ "flow": origin })).0, 200);
    let (status, t) = s.post("/v1/timers", due_now("by-origin", &rx, None));
    assert_eq!(status, 201, "{t}");
    assert_eq!(t["callback"]["flow"].as_str(), Some(origin.as_str()), "{t}");
    eventually("the timer to be parked", || {
        listed(&s, "parked") == ["by-origin"]
    });
    assert_eq!(delivered(&rx, "by-origin"), 0);
    let bad = |flow: Value| {
        s.post(
            "/v1/timers",
            json!({ "delay": "1h", "callback": { "url": rx.url("/x"), "flow": flow } }),
        )
    };
    for flow in [json!(""), json!("a\nb"), json!("x".repeat(513)), json!(7)] {
        assert_problem(&bad(flow), 422, Some("callback.flow"));
    }
}

#[test]
fn a_paused_namespace_sends_nothing_until_resumed() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    let paused = s.post("/v1/flows:pause", json!({ "all": true }));
    assert_eq!(
        paused,
        (200, json!({ "all": true, "paused": true, "changed": true }))
    );
    assert_eq!(
        pauses(&s.get("/v1/flows").1),
        json!({ "paused": true, "flows": [] })
    );
    assert_eq!(s.post("/v1/timers", due_now("waits", &rx, None)).0, 201);
    // No node claims while the namespace is paused: the timer stays
    // pending (not parked) however long it waits.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(delivered(&rx, "waits"), 0);
    assert_eq!(listed(&s, "pending"), ["waits"]);
    assert!(listed(&s, "parked").is_empty());
    let resumed = s.post("/v1/flows:resume", json!({ "all": true }));
    assert_eq!(
        resumed,
        (
            200,
            json!({ "all": true, "paused": false, "changed": true })
        )
    );
    eventually("the callback", || delivered(&rx, "waits") == 1);
    eventually("the timer to be done", || {
        s.get("/v1/timers/waits").0 == 404
    });
    assert_eq!(delivered(&rx, "waits"), 1, "sent once");
    let again = s.post("/v1/flows:resume", json!({ "all": true }));
    assert_eq!(again.1["changed"], false, "{}", again.1);
}

#[test]
fn bad_flow_bodies_are_problem_documents_naming_the_field() {
    let s = Server::start(&[]);
    for path in ["/v1/flows:pause", "/v1/flows:resume"] {
        for (body, field) in [
            (json!({}), "flow"),
            (json!({ "flow": null, "all": null }), "flow"),
            (json!({ "all": false }), "all"),
            (json!({ "flow": "k", "all": true }), "all"),
            (json!({ "flow": "" }), "flow"),
            (json!({ "flow": "a\u{7}b" }), "flow"),
            (json!({ "flow": "é".repeat(257) }), "flow"),
            (json!({ "flow": 3 }), "flow"),
            (json!({ "all": "yes" }), "all"),
        ] {
            assert_problem(&s.post(path, body.clone()), 422, Some(field));
        }
        let unknown = s.post(path, json!({ "flows": "k" }));
        assert_eq!(unknown.0, 422, "{}", unknown.1);
        assert_problem(&s.post(path, json!([])), 422, Some("."));
        let text = s.req(Method::POST, path).body("{}").send().unwrap();
        assert_problem(&common::read(text), 415, None);
    }
    // Nothing was paused by any of them.
    assert_eq!(
        pauses(&s.get("/v1/flows").1),
        json!({ "paused": false, "flows": [] })
    );
    assert_problem(&s.get("/v1/timers?state=sleeping"), 400, Some("state"));
}

#[test]
fn every_flow_route_needs_the_token() {
    let s = Server::start(&[]);
    for (method, path) in [
        (Method::GET, "/v1/flows"),
        (Method::POST, "/v1/flows:pause"),
        (Method::POST, "/v1/flows:resume"),
    ] {
        let url = format!("{}{path}", s.base);
        let body = json!({ "all": true });
        let none = s.client.request(method.clone(), &url).json(&body);
        assert_problem(&common::read(none.send().unwrap()), 401, None);
        let wrong = s
            .client
            .request(method, &url)
            .json(&body)
            .bearer_auth(format!("{TOKEN}x"));
        assert_problem(&common::read(wrong.send().unwrap()), 401, None);
    }
    assert_eq!(s.get("/v1/flows").1["paused"], false, "nothing was paused");
}

/// A flow key with markup, shown as text.
const MARKUP_KEY: &str = "shop <b>eu</b>";

#[test]
fn the_dashboard_pauses_and_resumes_flow_keys_and_the_namespace() {
    let Some(b) = crate::browser::Browser::for_test() else {
        return;
    };
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    b.goto(&format!("{}/", s.base));
    b.type_into(&b.find("#token"), TOKEN);
    b.click(&b.find("#token-save"));
    eventually("the notice to go", || b.text(&b.find("#notice")).is_empty());
    // A key paused by name with the form.
    b.type_into(&b.find("#flow-key"), MARKUP_KEY);
    b.click(&b.find("#flow-pause"));
    eventually("the key paused", || {
        s.get("/v1/flows").1["flows"][0]["key"] == MARKUP_KEY
    });
    let (status, t) = s.post("/v1/timers", due_now("held", &rx, Some(MARKUP_KEY)));
    assert_eq!(status, 201, "{t}");
    let shown = |what: &str| {
        let tr = row(&b, "flows-rows", MARKUP_KEY)?;
        Some(b.text(&b.find_in(&tr, what)))
    };
    eventually("the row with its parked timer", || {
        shown("td.parked").as_deref() == Some("1")
    });
    assert_eq!(shown("td.key").as_deref(), Some(MARKUP_KEY));
    assert_eq!(shown("td.paused").as_deref(), Some("paused"));
    assert_eq!(
        b.script("return document.querySelectorAll('b').length", json!([])),
        0,
        "markup from the API became elements"
    );
    assert_eq!(delivered(&rx, "held"), 0);
    // The row's button resumes it: the parked callback is sent, and the
    // key runs again.
    let tr = row(&b, "flows-rows", MARKUP_KEY).unwrap();
    let button = b.find_in(&tr, "button.toggle");
    assert_eq!(b.text(&button), "Resume");
    b.click(&button);
    eventually("the parked callback", || delivered(&rx, "held") == 1);
    // The row stays while the server keeps the key's lateness.
    eventually("the row to show it running", || {
        row(&b, "flows-rows", MARKUP_KEY).is_none()
            || shown("td.state").as_deref() == Some("running")
    });
    // The namespace, with its button.
    let all = b.find("#flows-all");
    assert_eq!(b.text(&all), "Pause all");
    b.click(&all);
    eventually("the namespace paused", || {
        s.get("/v1/flows").1["paused"] == true
    });
    eventually("the button to offer resume", || {
        b.text(&all) == "Resume all"
    });
    assert!(b.text(&b.find("#flows-state")).contains("paused"));
    b.click(&all);
    eventually("the namespace running", || {
        s.get("/v1/flows").1["paused"] == false
    });
    eventually("the button to offer pause", || b.text(&all) == "Pause all");
}
