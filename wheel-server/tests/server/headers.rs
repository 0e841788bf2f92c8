//! A callback's own headers over HTTP: the node's names, the hop-by-hop
//! names and too many or too large headers are refused with 422 naming
//! `callback.headers`; what is allowed is stored as given.

use crate::common;

use common::{Server, assert_problem};
use serde_json::{Map, Value, json};

fn with_headers(headers: Value) -> Value {
    json!({
        "delay": "1h",
        "callback": { "url": "http://127.0.0.1:9/never", "headers": headers },
    })
}

#[test]
fn the_node_s_and_hop_by_hop_headers_are_refused() {
    let s = Server::start(&["--allow-private-targets"]);
    for name in [
        "webhook-version",
        "Webhook-Foo",
        "webhook-id",
        "Wheel-Fence",
        "Host",
        "Content-Length",
        "Connection",
        "Upgrade",
        "Keep-Alive",
        "TE",
        "Trailer",
        "Transfer-Encoding",
        "Proxy-Connection",
        "Expect",
        "Proxy-Authorization",
    ] {
        let got = s.post("/v1/timers", with_headers(json!({ name: "1" })));
        assert_problem(&got, 422, Some("callback.headers"));
        let detail = got.1["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(name), "{name}: {detail}");
    }
    let batch = json!({ "timers": [with_headers(json!({ "X-Ok": "1" })), with_headers(json!({ "Upgrade": "h2c" }))] });
    let got = s.post("/v1/timers:batch", batch);
    assert_problem(&got, 422, Some("timers[1].callback.headers"));
}

#[test]
fn headers_are_capped_in_number_and_size() {
    let s = Server::start(&["--allow-private-targets"]);
    let many = |n: usize, value: &str| -> Value {
        let map: Map<String, Value> = (0..n)
            .map(|i| (format!("X-{i:05}"), Value::from(value)))
            .collect();
        Value::Object(map)
    };
    let (status, t) = s.post("/v1/timers", with_headers(many(64, "v")));
    assert_eq!(status, 201, "{t}");
    assert_eq!(t["callback"]["headers"].as_object().unwrap().len(), 64);
    assert_problem(
        &s.post("/v1/timers", with_headers(many(65, "v"))),
        422,
        Some("callback.headers"),
    );
    assert_problem(
        &s.post("/v1/timers", with_headers(many(20_000, "v"))),
        422,
        Some("callback.headers"),
    );
    // Two headers of 9 000 bytes each: few, but over 16 KiB together.
    assert_problem(
        &s.post("/v1/timers", with_headers(many(2, &"v".repeat(9_000)))),
        422,
        Some("callback.headers"),
    );
}
