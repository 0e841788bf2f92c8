//! HTTP callbacks under load on the embedded store: thousands of requests
//! in flight at once on a node with two worker threads, against a receiver
//! that answers none until it has seen 1 500 open at once.

use crate::durable_http_common::{self, Callback};

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use durable_http_common::{Gate, Receiver, eventually};
use wheel_durable::http::{HttpCallback, HttpConfig, Method};
use wheel_durable::{DurableTimers, RetryPolicy};

const CALLBACKS: usize = 2_000;
const HELD: usize = 1_500;

#[test]
fn two_thousand_callbacks_due_together_are_in_flight_at_once_on_two_workers() {
    let gate = Gate::opening_at(HELD);
    let rx = Receiver::gated(&gate);
    let dir = tempfile::tempdir().unwrap();
    let timers = DurableTimers::builder()
        .embedded(dir.path().join("timers"))
        .workers(2)
        // One attempt: a request that failed would be a dead letter, and
        // the test would see it.
        .retry(RetryPolicy::new().max_attempts(1))
        .http(
            HttpConfig::new()
                .per_host_limit(CALLBACKS)
                // Thousands of connects at once on a loaded machine: no
                // connect may time out, or its callback would be dead.
                .connect_timeout(Duration::from_secs(60))
                .timeout(Duration::from_secs(120)),
        )
        .build()
        .unwrap();
    let due = SystemTime::now() + Duration::from_secs(2);
    for i in 0..CALLBACKS {
        let cb = HttpCallback::new(Method::Post, rx.url(&format!("/slow/{i}")))
            .body(format!("{i}").into_bytes());
        timers
            .add_callback_at(&format!("slow:{i}"), due, &cb)
            .unwrap();
    }
    // The receiver releases its requests only once 1 500 are open at once.
    rx.wait_for(CALLBACKS);
    eventually("every timer done", || {
        let s = timers.stats();
        s.pending == Some(0) && s.claimed == Some(0)
    });
    assert!(
        rx.max_in_flight() >= HELD,
        "only {} requests were in flight at once",
        rx.max_in_flight()
    );
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in rx.requests() {
        *seen.entry(r.key()).or_default() += 1;
    }
    assert_eq!(seen.len(), CALLBACKS, "a callback did not arrive");
    assert!(seen.values().all(|n| *n == 1), "a callback arrived twice");
    assert!(timers.dead_letters(10).unwrap().is_empty());
    timers.shutdown().unwrap();
}
