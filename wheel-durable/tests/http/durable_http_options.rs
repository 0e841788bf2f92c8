//! HTTP-callback options end to end, on the embedded store against a
//! scripted receiver on loopback: a callback's own retry policy, the
//! private-target guard, and the counts `stats` gives of attempts by result
//! and of lateness.

use crate::durable_http_common::{self, Callback};

use std::time::{Duration, SystemTime};

use durable_http_common::{Receiver, Reply, closed_port, eventually, node, policy};
use wheel_durable::http::{HttpCallback, HttpConfig, Method};
use wheel_durable::{DurableTimers, HttpCounts, RetryPolicy, TimerState};

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
        .add_callback_at("short", SystemTime::now(), &short)
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

/// Whether every one of `keys` is done or a dead letter.
fn all_ended(timers: &DurableTimers, keys: &[&str]) -> bool {
    keys.iter().all(|k| {
        timers
            .get(k)
            .unwrap()
            .is_none_or(|t| t.state == TimerState::Dead)
    })
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
            timers.add_callback_at(key, SystemTime::now(), &cb).unwrap();
        }
        eventually("both callbacks ended", || {
            all_ended(&timers, &["literal", "name"])
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
                dead[1].reason.contains("localhost is a name for loopback"),
                "{}",
                dead[1].reason
            );
        }
        let counted = timers.stats().http;
        let (sent, refused) = if allow { (2, 0) } else { (0, 2) };
        assert_eq!(counted.status_2xx, sent, "{counted:?}");
        assert_eq!(counted.refused_target, refused, "{counted:?}");
        assert_eq!(counted.connection_error, 0, "{counted:?}");
    }
}

#[test]
fn attempts_are_counted_by_result_and_every_run_by_lateness() {
    let rx = Receiver::start(|r, _| match r.path.as_str() {
        "/200" => Reply::status(200),
        "/302" => Reply::status(302).header("Location", "/200"),
        "/404" => Reply::status(404),
        // Far past the node's timeout.
        "/slow" => Reply::status(200).after(ms(1_500)),
        _ => Reply::status(503),
    });
    let dir = tempfile::tempdir().unwrap();
    // One attempt each: every callback is sent once, whatever its reply.
    let timers = node(&dir, HttpConfig::new().timeout(ms(300)), policy(ms(50), 1));
    let refused = format!("http://127.0.0.1:{}/", closed_port());
    let targets = [
        ("200", rx.url("/200")),
        ("302", rx.url("/302")),
        ("404", rx.url("/404")),
        ("503", rx.url("/503")),
        ("slow", rx.url("/slow")),
        ("closed", refused),
    ];
    for (key, url) in &targets {
        let cb = HttpCallback::new(Method::Get, url.as_str());
        timers.add_callback_at(key, SystemTime::now(), &cb).unwrap();
    }
    let keys: Vec<&str> = targets.iter().map(|(k, _)| *k).collect();
    eventually("every callback ended", || all_ended(&timers, &keys));
    let s = timers.stats();
    let c: HttpCounts = s.http;
    assert_eq!(
        [c.status_2xx, c.status_3xx, c.status_4xx, c.status_5xx],
        [1, 1, 1, 1],
        "{c:?}"
    );
    assert_eq!(
        [
            c.timeout,
            c.connection_error,
            c.other_status,
            c.refused_target
        ],
        [1, 1, 0, 0],
        "{c:?}"
    );
    assert_eq!(s.fired, 6);
    assert_eq!(s.lateness_buckets.count, s.fired);
    let (last_bound, under_last) = *s.lateness_buckets.cumulative.last().unwrap();
    assert_eq!(last_bound, Duration::from_secs(10));
    assert!(under_last <= s.lateness_buckets.count);
    assert!(
        s.lateness_buckets
            .cumulative
            .windows(2)
            .all(|w| w[0].1 <= w[1].1)
    );
}
