//! HTTP-callback options end to end, on the embedded store against a
//! scripted receiver on loopback: a callback's own retry policy, and the
//! private-target guard.
#![cfg(feature = "http")]

mod durable_common;
mod durable_http_common;

use std::time::{Duration, SystemTime};

use durable_http_common::{eventually, node, policy, Receiver, Reply};
use wheel::durable::http::{HttpCallback, HttpConfig, Method};
use wheel::durable::{RetryPolicy, TimerState};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn a_callbacks_own_policy_gives_up_after_its_attempts_while_the_nodes_allows_more() {
    let rx = Receiver::start(|_, _| Reply::status(500).body("down"));
    let dir = tempfile::tempdir().unwrap();
    let timers = node(&dir, HttpConfig::new(), policy(ms(50), 10));
    let own = RetryPolicy::new()
        .initial(ms(50))
        .jitter(0.0)
        .max_attempts(2);
    let short = HttpCallback::new(Method::Post, rx.url("/short")).retry(own);
    timers
        .add_callback("short", SystemTime::now(), &short)
        .unwrap();
    eventually("the callback is a dead letter", || {
        !timers.dead_letters(10).unwrap().is_empty()
    });
    let dead = timers.dead_letters(10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].key, "short");
    assert_eq!(dead[0].attempts, 2);
    assert_eq!(
        dead[0].reason,
        "gave up after 2 attempts: HTTP 500 Internal Server Error: down"
    );
    let attempts: Vec<u32> = rx.requests().iter().map(|r| r.attempt()).collect();
    assert_eq!(attempts, [1, 2]);
    // The dead letter's payload still carries the policy.
    let read = HttpCallback::from_payload(&dead[0].payload).unwrap();
    assert_eq!(read.retry.map(|p| p.attempts()), Some(2));
}

/// The receiver's URL with `host` for the host (the receiver listens on
/// 127.0.0.1).
fn url_with_host(rx: &Receiver, host: &str, path: &str) -> String {
    rx.url(path).replacen("127.0.0.1", host, 1)
}

#[test]
fn private_targets_are_refused_with_the_guard_on_and_delivered_with_it_off() {
    let rx = Receiver::ok();
    for allow in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let timers = node(
            &dir,
            HttpConfig::new().allow_private_targets(allow),
            policy(ms(50), 3),
        );
        for (key, host) in [("literal", "127.0.0.1"), ("name", "localhost")] {
            let cb = HttpCallback::new(
                Method::Get,
                url_with_host(&rx, host, &format!("/{allow}/{key}")),
            );
            timers.add_callback(key, SystemTime::now(), &cb).unwrap();
        }
        eventually("both callbacks ended", || {
            ["literal", "name"].iter().all(|k| {
                timers
                    .get(k)
                    .unwrap()
                    .map_or(true, |t| t.state == TimerState::Dead)
            })
        });
        let mut dead = timers.dead_letters(10).unwrap();
        dead.sort_by(|a, b| a.key.cmp(&b.key));
        let arrived: Vec<String> = rx
            .requests()
            .iter()
            .filter(|r| r.path.starts_with(&format!("/{allow}/")))
            .map(|r| r.key())
            .collect();
        if allow {
            assert!(dead.is_empty(), "{dead:?}");
            assert_eq!(arrived.len(), 2, "{arrived:?}");
        } else {
            assert!(arrived.is_empty(), "{arrived:?}");
            let keys: Vec<&str> = dead.iter().map(|d| d.key.as_str()).collect();
            assert_eq!(keys, ["literal", "name"]);
            for d in &dead {
                assert_eq!(d.attempts, 1, "refused at once: {d:?}");
                assert!(d.reason.starts_with("refused target: "), "{}", d.reason);
            }
            assert!(
                dead[0].reason.contains("127.0.0.1 is not a public address"),
                "{}",
                dead[0].reason
            );
            assert!(
                dead[1].reason.contains("localhost is at 127.0.0.1"),
                "{}",
                dead[1].reason
            );
        }
    }
}
