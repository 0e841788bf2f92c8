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
