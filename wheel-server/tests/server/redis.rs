//! Two server processes on one Redis share one set of timers: a timer
//! added through either is visible through both and fires once, on
//! whichever node claims it.

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{Receiver, Server, eventually};
use serde_json::json;
use wheel_testkit::{RedisServer, ServerOptions};

/// Starts a server on `redis` in namespace `ns`, callbacks to loopback
/// allowed, with `extra` arguments.
fn on_redis(redis: &RedisServer, ns: &str, extra: &[&str]) -> Server {
    let url = redis.url();
    let mut args = vec![
        "--redis",
        url.as_str(),
        "--namespace",
        ns,
        "--allow-private-targets",
    ];
    args.extend_from_slice(extra);
    Server::start(&args)
}

#[test]
fn timers_added_through_one_server_fire_once_across_two() {
    let Some(redis) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let rx = Receiver::start();
    let (a, b) = (on_redis(&redis, "srv2", &[]), on_redis(&redis, "srv2", &[]));
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
    let s = on_redis(&redis, "down", &[]);
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

/// `--redis-replicas 1`: with the replica live an add answers 201; with
/// it frozen (SIGSTOP), 503 `store-not-replicated` once the timeout has
/// passed; thawed, the same add succeeds again.
#[test]
fn redis_replicas_make_an_unconfirmed_add_answer_503() {
    let Some(redis) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let replica = RedisServer::replica_of(&redis).unwrap();
    let flags = ["--redis-replicas", "1", "--redis-replica-timeout", "200ms"];
    let s = on_redis(&redis, "repl", &flags);
    let timer =
        |k: &str| json!({ "key": k, "delay": "1h", "callback": { "url": "http://127.0.0.1:9/x" } });
    let (status, r) = s.post("/v1/timers", timer("live"));
    assert_eq!(status, 201, "{r}");
    replica.pause().unwrap();
    let (status, problem) = s.post("/v1/timers", timer("frozen"));
    replica.resume().unwrap();
    assert_eq!(status, 503, "{problem}");
    let kind = problem["type"].as_str().unwrap();
    assert!(kind.ends_with("store-not-replicated"), "{problem}");
    replica.wait_caught_up(&redis).unwrap();
    let (status, r) = s.post("/v1/timers", timer("frozen"));
    assert!(status == 200 || status == 201, "{status} {r}");
}

/// The value of the unlabelled sample `name` in `/metrics`.
fn metric(s: &Server, name: &str) -> f64 {
    let text = s.metrics();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_owned))
        .unwrap_or_else(|| panic!("no {name} in {text}"));
    line.parse().unwrap()
}

/// A server holding claims is killed (SIGKILL) before they are due: the
/// other server fires every one of them once `--lease` has passed since
/// the kill (a 2 s lease here, so well before the default 5 s would
/// allow), and none before its due time.
#[test]
fn a_killed_server_s_claims_fire_on_the_other_after_its_lease() {
    let Some(redis) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let rx = Receiver::start();
    let lease = ["--lease", "2s"];
    let a = on_redis(&redis, "lease", &lease);
    let due = SystemTime::now() + Duration::from_secs(4);
    let due_ms = due.duration_since(UNIX_EPOCH).unwrap().as_millis();
    let timers: Vec<_> = (0..50)
        .map(|i| json!({ "key": format!("t{i}"), "due_at": rfc3339(due_ms), "callback": { "url": rx.url(&format!("/t/{i}")) } }))
        .collect();
    assert_eq!(
        a.post("/v1/timers:batch", json!({ "timers": timers })).0,
        200
    );
    // The claim window (2 s ahead) takes them into `a`.
    eventually("a to hold all 50", || {
        metric(&a, "wheel_timers_held") == 50.0
    });
    let b = on_redis(&redis, "lease", &lease);
    let killed_at = SystemTime::now();
    a.kill();
    eventually("50 callbacks", || rx.got().len() >= 50);
    let got = rx.got();
    assert_eq!(got.len(), 50, "each once");
    // How soon after the kill they came is a figure of the bench's kill
    // row, not asserted here: only that none came early.
    for g in &got {
        assert!(g.at >= due, "{} came early", g.path);
    }
    let last = got.iter().map(|g| g.at).max().unwrap();
    eprintln!(
        "the last callback came {:?} after the kill (lease 2 s)",
        last.duration_since(killed_at).unwrap_or_default()
    );
    assert_eq!(metric(&b, "wheel_fired_total"), 50.0);
}

/// `ms` since 1970 as RFC 3339 with milliseconds.
fn rfc3339(ms: u128) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000).unwrap();
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// Two servers on a Redis Cluster, one namespace split over its 3
/// masters: every callback added through one is sent once, and a listing
/// pages through every partition; a third server with another partition
/// count does not start.
#[test]
fn two_servers_on_a_cluster_share_a_partitioned_namespace() {
    let Some(cluster) = wheel_testkit::RedisCluster::for_test(3, 0) else {
        return;
    };
    let nodes = cluster.urls().join(",");
    let start = |parts: &str| {
        Server::start(&[
            "--redis-cluster",
            &nodes,
            "--redis-partitions",
            parts,
            "--namespace",
            "clu",
            "--allow-private-targets",
        ])
    };
    let rx = Receiver::start();
    let (a, b) = (start("3"), start("3"));
    let timers: Vec<_> = (0..90)
        .map(|i| json!({ "key": format!("c{i:02}"), "delay": 1000 + i * 5, "callback": { "url": rx.url(&format!("/c/{i}")) } }))
        .collect();
    let (status, r) = a.post("/v1/timers:batch", json!({ "timers": timers }));
    assert_eq!(status, 200, "{r}");
    let (status, page) = b.get("/v1/timers?state=pending&limit=1000");
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["timers"].as_array().map(Vec::len), Some(90), "{page}");
    eventually("90 callbacks", || rx.got().len() >= 90);
    std::thread::sleep(Duration::from_secs(2));
    let mut per_key: HashMap<String, usize> = HashMap::new();
    for g in rx.got() {
        *per_key
            .entry(g.header("Wheel-Timer-Key").unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(per_key.len(), 90);
    assert!(per_key.values().all(|n| *n == 1), "a callback came twice");
    let args: Vec<String> = [
        "--redis-cluster",
        &nodes,
        "--redis-partitions",
        "2",
        "--namespace",
        "clu",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let refused = common::spawn(&args);
    assert!(refused.is_err(), "another partition count must not start");
}
