//! HTTP-callback timers on Redis, against a scripted receiver on loopback:
//! with three nodes in one process, exactly one request per callback when
//! nothing fails, and retries, `Retry-After` and dead letters as on one
//! node; with a node process (the `durable_node` example) killed by
//! SIGKILL while its requests are in flight, each of them sent again after
//! the lease, none lost. Each test starts its own `redis-server`.

use crate::durable_common;
use crate::durable_http_common::{self, ByKey, Callback};

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use durable_http_common::{Gate, Received, Receiver, Reply, eventually};
use wheel_durable::http::{HttpCallback, HttpConfig, Method};
use wheel_durable::{DurableTimers, RetryPolicy};
use wheel_testkit::{RedisServer, ServerOptions};

const SECRET: &str = "whsec_dGhyZWUtbm9kZXMtb25lLXNlY3JldA==";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Three firing nodes and a client, all on one namespace.
fn cluster(url: &str, ns: &str, retry: &RetryPolicy) -> (Vec<DurableTimers>, DurableTimers) {
    let builder = || DurableTimers::builder().redis(url).namespace(ns);
    let nodes = (0..3)
        .map(|_| {
            builder()
                .retry(retry.clone())
                .http(HttpConfig::new().signing_secret(SECRET))
                .build()
                .unwrap()
        })
        .collect();
    (nodes, builder().build().unwrap())
}

#[test]
fn three_nodes_send_each_of_300_callbacks_exactly_once_never_early() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let rx = Receiver::ok();
    let (nodes, client) = cluster(&server.url(), "cb3", &RetryPolicy::new());
    let client = Arc::new(client);
    let start = SystemTime::now() + ms(500);
    for i in 0..300u64 {
        let cb = HttpCallback::new(Method::Post, rx.url(&format!("/orders/{i}/close")))
            .header("Content-Type", "application/json")
            .body(format!("{{\"order\":{i}}}").into_bytes());
        client
            .add_callback_at(&format!("order:{i}"), start + ms(i * 5), &cb)
            .unwrap();
    }
    let got = rx.wait_for(300);
    // Longer than a lease would take to pass: a duplicate would show now.
    std::thread::sleep(ms(500));
    assert_eq!(rx.requests().len(), 300, "a callback was sent twice");
    let keys: HashSet<String> = got.iter().map(|r| r.key()).collect();
    assert_eq!(keys.len(), 300);
    for r in &got {
        assert!(r.at >= r.due(), "{} arrived before it was due", r.key());
        assert_eq!(r.attempt(), 1);
        assert!(r.signed_with(SECRET), "{}: bad signature", r.key());
        let i: u64 = r.key()["order:".len()..].parse().unwrap();
        assert_eq!(r.path, format!("/orders/{i}/close"));
        assert_eq!(r.body, format!("{{\"order\":{i}}}").into_bytes());
    }
    eventually("every timer done", || {
        client.stats().pending == Some(0) && client.stats().claimed == Some(0)
    });
    let fired: u64 = nodes.iter().map(|n| n.stats().fired).sum();
    assert_eq!(fired, 300);
    for n in nodes {
        n.shutdown().unwrap();
    }
}

#[test]
fn three_nodes_retry_honour_retry_after_and_dead_letter_like_one() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    // The path names the behaviour; each key has a path of its own.
    let rx = Receiver::start(|r, nth| {
        let kind = r.path.split('/').nth(1).unwrap_or("");
        match (kind, nth) {
            ("flaky", 1) => Reply::status(503),
            ("busy", 1) => Reply::status(429).header("Retry-After", "1"),
            ("gone", _) => Reply::status(410).body("order deleted"),
            _ => Reply::status(200),
        }
    });
    let retry = RetryPolicy::new()
        .initial(ms(300))
        .jitter(0.0)
        .max_attempts(5);
    let (nodes, client) = cluster(&server.url(), "mix", &retry);
    let now = SystemTime::now() + ms(200);
    for kind in ["ok", "flaky", "busy", "gone"] {
        for i in 0..10 {
            let cb = HttpCallback::new(Method::Post, rx.url(&format!("/{kind}/{i}")));
            client
                .add_callback_at(&format!("{kind}:{i}"), now + ms(i * 20), &cb)
                .unwrap();
        }
    }
    // ok 10, flaky 20, busy 20, gone 10.
    rx.wait_for(60);
    eventually("every timer done or dead", || {
        let s = client.stats();
        s.pending == Some(0) && s.claimed == Some(0) && s.dead == Some(10)
    });
    std::thread::sleep(ms(500));
    assert_eq!(rx.requests().len(), 60, "an extra request");
    let ids: HashSet<String> = rx
        .requests()
        .iter()
        .map(|r| r.webhook_id().to_owned())
        .collect();
    assert_eq!(ids.len(), 40, "one webhook-id per timer");
    for (key, runs) in rx.by_key() {
        // Every attempt of a timer, on whichever node, is one delivery.
        assert!(
            runs.iter().all(|r| r.webhook_id() == runs[0].webhook_id()),
            "{key}: {runs:?}"
        );
        let attempts: Vec<u32> = runs.iter().map(|r| r.attempt()).collect();
        let kind = key.split(':').next().unwrap();
        let wait = |min: Duration| {
            let waited = runs[1].at.duration_since(runs[0].at).unwrap();
            assert!(waited >= min, "{key} retried after {waited:?}");
        };
        match kind {
            "ok" | "gone" => assert_eq!(attempts, [1], "{key}"),
            "flaky" => {
                assert_eq!(attempts, [1, 2], "{key}");
                wait(ms(300));
            }
            "busy" => {
                assert_eq!(attempts, [1, 2], "{key}");
                wait(ms(1_000));
            }
            _ => panic!("unexpected key {key}"),
        }
    }
    let dead = client.dead_letters(100).unwrap();
    assert_eq!(dead.len(), 10);
    for d in &dead {
        assert!(d.key.starts_with("gone:"), "{}", d.key);
        assert_eq!(d.reason, "HTTP 410 Gone: order deleted");
        assert_eq!(d.attempts, 1);
    }
    let retried: u64 = nodes.iter().map(|n| n.stats().retried).sum();
    assert_eq!(retried, 20);
    for n in nodes {
        n.shutdown().unwrap();
    }
}

#[test]
fn requests_in_flight_when_their_node_is_killed_are_sent_again_after_the_lease() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let url = server.url();
    const N: usize = 20;
    // Holds every request until released: node A's stay in flight.
    let gate = Gate::default();
    let rx = Receiver::gated(&gate);
    let mut a = Command::new(durable_common::node_binary())
        .args([
            "--redis",
            &url,
            "--namespace",
            "killed",
            "--lease-ms",
            "2000",
        ])
        .args(["--http", "--fire"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start durable_node");
    let mut ready = String::new();
    BufReader::new(a.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready.trim(), "ready");
    let client = DurableTimers::builder()
        .redis(&url)
        .namespace("killed")
        .build()
        .unwrap();
    let due = SystemTime::now() + ms(300);
    for i in 0..N {
        let cb = HttpCallback::new(Method::Post, rx.url(&format!("/held/{i}")));
        client
            .add_callback_at(&format!("held:{i}"), due, &cb)
            .unwrap();
    }
    rx.wait_for(N);
    assert_eq!(rx.max_in_flight(), N, "every request held in flight");
    a.kill().unwrap(); // SIGKILL: no reply seen, the claims left held
    a.wait().unwrap();
    gate.open();
    // Another node takes the claims over when their lease ends.
    let b = DurableTimers::builder()
        .redis(&url)
        .namespace("killed")
        .lease(ms(2_000))
        .http(HttpConfig::new())
        .build()
        .unwrap();
    rx.wait_for(2 * N);
    eventually("every timer done", || {
        let s = client.stats();
        s.pending == Some(0) && s.claimed == Some(0)
    });
    std::thread::sleep(ms(500));
    let got = rx.requests();
    assert_eq!(got.len(), 2 * N, "an extra request");
    assert!(client.dead_letters(10).unwrap().is_empty());
    let mut by_key: HashMap<String, Vec<Received>> = HashMap::new();
    for r in got {
        by_key.entry(r.key()).or_default().push(r);
    }
    assert_eq!(by_key.len(), N, "a callback was lost");
    for (key, runs) in by_key {
        assert_eq!(runs.len(), 2, "{key}: {runs:?}");
        let (a, b) = (&runs[0], &runs[1]);
        assert!(b.fence() > a.fence(), "{key}: {runs:?}, not a new claim");
        assert!(
            b.attempt() > a.attempt() && a.attempt() == 1,
            "{key}: {runs:?}"
        );
        assert_eq!(a.webhook_id(), b.webhook_id(), "{key}: one delivery");
    }
    assert_eq!(b.stats().fired, N as u64);
    b.shutdown().unwrap();
}
