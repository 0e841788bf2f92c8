//! HTTP-callback options end to end, on the embedded store against a
//! scripted receiver on loopback: a callback's own retry policy.
#![cfg(feature = "http")]

mod durable_common;
mod durable_http_common;

use std::time::{Duration, SystemTime};

use durable_http_common::{eventually, node, policy, Receiver, Reply};
use wheel::durable::http::{HttpCallback, HttpConfig, Method};
use wheel::durable::RetryPolicy;

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
