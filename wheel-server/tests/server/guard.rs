//! Black-box: the private-target guard reads a callback's host as the
//! client connects to it, at add time and at send time, whatever the
//! spelling (trailing dot, hex, octal, decimal, short IPv4 forms, IPv6
//! forms of a loopback IPv4 address, `localhost` names).

use crate::common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use common::{Receiver, Server, assert_problem, eventually};
use serde_json::json;
use wheel_durable::DurableTimers;
use wheel_durable::http::{HttpCallback, Method};

/// Spellings of a loopback host, each followed by `:port` in the URL.
const LOOPBACK_SPELLINGS: [&str; 16] = [
    "127.0.0.1.",
    "0x7f.1",
    "0x7f.1.",
    "2130706433",
    "2130706433.",
    "0177.0.0.1",
    "127.1",
    "0x7F.0.0.1",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::127.0.0.1]",
    "[64:ff9b::7f00:1]",
    "[::1]",
    "localhost",
    "localhost.",
    "LOCALHOST",
];

/// The problem type a spelling gets at add time: the numeric IPv4 forms
/// do not have the API's URL form (a name's last label starts with a
/// letter, an address is a dotted quad), so they are invalid URLs before
/// the guard looks; the others have the form, and the guard refuses them.
fn refused_as(host: &str) -> &'static str {
    if host.starts_with('[') || host.to_ascii_lowercase().starts_with("localhost") {
        "urn:wheel:problem:forbidden-target"
    } else {
        "urn:wheel:problem:invalid-field"
    }
}

/// `http://{host}:{port}/{path}`.
fn url(host: &str, port: &str, path: &str) -> String {
    format!("http://{host}:{port}/{path}")
}

#[test]
fn every_spelling_of_a_loopback_host_is_refused_when_added() {
    let s = Server::start(&[]);
    for host in LOOPBACK_SPELLINGS {
        let timer = json!({ "delay": "1h", "callback": { "url": url(host, "9", "x") } });
        let got = s.post("/v1/timers", timer);
        assert_problem(&got, 422, Some("callback.url"));
        assert_eq!(got.1["type"], refused_as(host), "{host}: {}", got.1);
        // In a batch, behind a public literal that passes.
        let batch = json!({ "timers": [
            { "delay": "1h", "callback": { "url": "http://93.184.215.14/ok" } },
            { "delay": "1h", "callback": { "url": url(host, "9", "x") } },
        ] });
        let got = s.post("/v1/timers:batch", batch);
        assert_problem(&got, 422, Some("timers[1].callback.url"));
        assert_eq!(got.1["type"], refused_as(host), "{host}: {}", got.1);
    }
    // Nothing of the refused batches was added.
    assert_eq!(s.get("/v1/timers").1["timers"], json!([]));
}

#[test]
fn every_spelling_of_a_loopback_host_is_refused_when_sent() {
    let rx = Receiver::start();
    let port = rx.base.rsplit(':').next().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let data = common::data_dir(&dir);
    // Added where nothing guards (the library, as a node with private
    // targets allowed would, or a server of a version without the URL
    // form)...
    add_through_the_library(&data, &port);
    // ...and sent by one that does not: each a dead letter, refused.
    let guarded = Server::start_on(&data, &[]);
    for (i, host) in LOOPBACK_SPELLINGS.iter().enumerate() {
        let path = format!("/v1/timers/t{i}");
        eventually(&format!("{host}: a dead letter"), || {
            guarded.get(&path).1["state"] == "dead"
        });
        let dead = guarded.get(&path).1;
        let reason = dead["reason"].as_str().unwrap_or_default();
        assert!(reason.starts_with("refused target"), "{host}: {dead}");
    }
    assert!(
        rx.got().is_empty(),
        "delivered to loopback: {:?}",
        rx.got().iter().map(|g| &g.path).collect::<Vec<_>>()
    );
}

/// Adds a callback to every spelling, due in 2 s, to the store in `data`
/// under the server's default namespace, and closes the store.
fn add_through_the_library(data: &Path, port: &str) {
    let timers = DurableTimers::builder()
        .embedded(data)
        .namespace("wheel")
        .build()
        .unwrap();
    let due = SystemTime::now() + Duration::from_secs(2);
    for (i, host) in LOOPBACK_SPELLINGS.iter().enumerate() {
        let cb = HttpCallback::new(Method::Post, url(host, port, &format!("t{i}")));
        timers.add_callback_at(&format!("t{i}"), due, &cb).unwrap();
    }
    timers.shutdown().unwrap();
}
