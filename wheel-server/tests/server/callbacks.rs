//! Callbacks reach a receiver on loopback, signed in the Standard Webhooks
//! scheme with every secret the server was given (key rotation).

use crate::common;

use std::time::SystemTime;

use common::{Receiver, Server, eventually};
use serde_json::json;
use wheel_durable::http::verify_signature;

const OLD: &str = "whsec_c2VydmVyLXRlc3RzLW9sZC1zZWNyZXQ=";
const NEW: &str = "whsec_c2VydmVyLXRlc3RzLW5ldy1zZWNyZXQ=";

#[test]
fn a_callback_arrives_signed_with_each_secret() {
    let rx = Receiver::start();
    let s = Server::start(&[
        "--allow-private-targets",
        "--signing-secret",
        OLD,
        "--signing-secret",
        NEW,
    ]);
    let timer = json!({
        "key": "order:17:close",
        "delay": "200ms",
        "callback": {
            "url": rx.url("/orders/17/close"),
            "method": "PUT",
            "headers": { "X-Order": "17" },
            "json": { "reason": "unpaid" }
        }
    });
    let (status, t) = s.post("/v1/timers", timer);
    assert_eq!(status, 201, "{t}");
    eventually("the callback", || rx.got().len() == 1);
    let got = &rx.got()[0];
    assert_eq!(got.method, "PUT");
    assert_eq!(got.path, "/orders/17/close");
    assert_eq!(got.body, br#"{"reason":"unpaid"}"#);
    assert_eq!(got.header("X-Order"), Some("17"));
    assert_eq!(got.header("Content-Type"), Some("application/json"));
    assert_eq!(got.header("Wheel-Timer-Key"), Some("order:17:close"));
    let h = |name| got.header(name).unwrap_or_else(|| panic!("no {name}"));
    let (id, ts, sig) = (
        h("webhook-id"),
        h("webhook-timestamp"),
        h("webhook-signature"),
    );
    assert_eq!(sig.split(' ').count(), 2, "one signature per secret: {sig}");
    for secret in [OLD, NEW] {
        assert_eq!(
            verify_signature(secret, id, ts, sig, &got.body, SystemTime::now()),
            Ok(())
        );
    }
    let other = "whsec_bm90LXRoZS1zZXJ2ZXJzLXNlY3JldA==";
    assert!(verify_signature(other, id, ts, sig, &got.body, SystemTime::now()).is_err());
    eventually("the timer to be done", || {
        s.get("/v1/timers/order:17:close").0 == 404
    });
    let metrics = s.metrics();
    for line in [
        "wheel_callback_attempts_total{result=\"2xx\"} 1",
        "wheel_lateness_seconds_count 1",
        "wheel_fired_total 1",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line:?} in\n{metrics}"
        );
    }
}

#[test]
fn a_callback_is_retried_as_its_own_policy_says() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    let timer = json!({
        "key": "flaky",
        "delay": 0,
        "callback": { "url": rx.url("/error/1") },
        "retry": { "max_attempts": 3, "backoff": "50ms" }
    });
    let (status, t) = s.post("/v1/timers", timer);
    assert_eq!(status, 201, "{t}");
    assert_eq!(t["callback"]["max_attempts"], 3);
    eventually("a dead letter", || {
        s.get("/v1/timers/flaky").1["state"] == "dead"
    });
    assert_eq!(rx.got().len(), 3, "three attempts, then a dead letter");
    assert_eq!(s.get("/v1/timers/flaky").1["attempts"], 3);
}

#[test]
fn a_secret_that_does_not_parse_stops_the_start() {
    let args: Vec<String> = [
        "--listen",
        "127.0.0.1:0",
        "--signing-secret",
        "hunter2",
        "--data",
    ]
    .into_iter()
    .map(String::from)
    .chain([tempfile::tempdir()
        .unwrap()
        .path()
        .join("d")
        .display()
        .to_string()])
    .collect();
    let err = common::spawn(&args).expect_err("refused to start");
    assert!(
        err.contains("cannot open the store") || err.contains("secret"),
        "{err}"
    );
}

#[test]
fn a_node_without_the_permission_refuses_a_private_target_at_send_time() {
    let rx = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let data = common::data_dir(&dir);
    // Added by a server that allows private targets...
    let open = Server::start_on(&data, &["--allow-private-targets"]);
    let timer = json!({ "key": "inward", "delay": "1500ms", "callback": { "url": rx.url("/in") } });
    assert_eq!(open.post("/v1/timers", timer).0, 201);
    assert!(open.terminate().success());
    // ...and sent by one that does not: refused, a dead letter at once.
    let guarded = Server::start_on(&data, &[]);
    eventually("a dead letter", || {
        guarded.get("/v1/timers/inward").1["state"] == "dead"
    });
    let dead = guarded.get("/v1/timers/inward").1;
    let reason = dead["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("refused target"), "{dead}");
    assert!(rx.got().is_empty(), "nothing was sent");
    let metrics = guarded
        .client
        .get(format!("{}/metrics", guarded.base))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let line = "wheel_callback_attempts_total{result=\"refused_target\"} 1";
    assert!(
        metrics.lines().any(|l| l == line),
        "no {line:?} in\n{metrics}"
    );
}
