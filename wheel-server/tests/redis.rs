//! Two server processes on one Redis share one set of timers: a timer
//! added through either is visible through both and fires once, on
//! whichever node claims it.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{eventually, Receiver, Server};
use serde_json::json;
use wheel_testkit::{RedisServer, ServerOptions};

#[test]
fn timers_added_through_one_server_fire_once_across_two() {
    let Some(redis) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let rx = Receiver::start();
    let url = redis.url();
    let args = [
        "--redis",
        url.as_str(),
        "--namespace",
        "srv2",
        "--allow-private-targets",
    ];
    let (a, b) = (Server::start(&args), Server::start(&args));
    let timers: Vec<_> = (0..200)
        .map(|i| json!({ "key": format!("t{i}"), "delay": 1000 + i * 5, "callback": { "url": rx.url(&format!("/t/{i}")) } }))
        .collect();
    let (status, r) = a.post("/v1/timers:batch", json!({ "timers": timers }));
    assert_eq!(status, 200, "{r}");
    assert_eq!(b.get("/v1/timers/t7").1["key"], "t7", "b sees what a added");
    assert_eq!(
        b.post(
            "/v1/timers",
            json!({ "key": "t7", "delay": "1h", "callback": { "url": rx.url("/other") } })
        )
        .0,
        409
    );
    eventually("200 callbacks", || rx.got().len() >= 200);
    // Longer than a lease: a duplicate would show by now.
    std::thread::sleep(Duration::from_secs(6));
    let mut per_key: HashMap<String, usize> = HashMap::new();
    for g in rx.got() {
        *per_key
            .entry(g.header("Wheel-Timer-Key").unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(per_key.len(), 200);
    assert!(per_key.values().all(|n| *n == 1), "a callback came twice");
    let fired = |s: &Server| -> u64 {
        let text = s.metrics();
        text.lines()
            .find_map(|l| l.strip_prefix("wheel_fired_total "))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(fired(&a) + fired(&b), 200);
}

/// Redis stops under a server: adds (grouped or not) answer 503 with a
/// problem document, `/readyz` says not ready, nothing hangs; once Redis
/// is back, adds succeed again and nothing answered 201 is missing.
#[test]
fn adds_answer_503_while_redis_is_down_and_succeed_after() {
    let Some(mut redis) = RedisServer::for_test(ServerOptions { aof: true }) else {
        return;
    };
    let url = redis.url();
    let s = Server::start(&[
        "--redis",
        url.as_str(),
        "--namespace",
        "down",
        "--allow-private-targets",
    ]);
    let timer =
        |k: &str| json!({ "key": k, "delay": "1h", "callback": { "url": "http://127.0.0.1:9/x" } });
    assert_eq!(s.post("/v1/timers", timer("before")).0, 201);
    redis.kill();
    // Concurrent requests, so that some share one store call.
    let answers: Vec<(u16, serde_json::Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let (s, timer) = (&s, &timer);
                scope.spawn(move || s.post("/v1/timers", timer(&format!("during{i}"))))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (status, problem) in &answers {
        assert_eq!(*status, 503, "{problem}");
        assert!(
            problem["type"]
                .as_str()
                .unwrap()
                .ends_with("store-unavailable"),
            "{problem}"
        );
    }
    eventually("not ready", || s.get("/readyz").0 == 503);
    redis.restart().unwrap();
    eventually("ready again", || s.get("/readyz").0 == 200);
    let (status, r) = s.post("/v1/timers", timer("after"));
    assert_eq!(status, 201, "{r}");
    assert_eq!(
        s.get("/v1/timers/before").0,
        200,
        "an acknowledged add survives"
    );
}
