//! HTTP-callback failures on the embedded store, against a scripted
//! receiver on loopback: a server that stops answering for a while (its
//! requests time out and are retried until it answers again), a redirect
//! (never followed: a failed attempt, and a dead letter once the attempts
//! run out), and `Retry-After` as an HTTP date.

use crate::durable_http_common::{self, ByKey, Callback};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use durable_http_common::{Receiver, Reply, eventually, node, policy};
use wheel_durable::DurableTimers;
use wheel_durable::http::{HttpCallback, HttpConfig, Method};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn gone(timers: &DurableTimers, key: &str) -> bool {
    timers.get(key).unwrap().is_none()
}

#[test]
fn requests_to_a_server_that_stopped_answering_time_out_and_arrive_when_it_answers_again() {
    let down = Arc::new(AtomicBool::new(true));
    let rx = {
        let down = down.clone();
        Receiver::start(move |_, _| {
            if down.load(Ordering::SeqCst) {
                // Far past the node's timeout: the node has given up on
                // this request before the reply goes out.
                Reply::status(200).after(ms(1_500))
            } else {
                Reply::status(200)
            }
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let timers = node(
        &dir,
        HttpConfig::new().timeout(ms(300)),
        policy(ms(100), 50),
    );
    let keys: Vec<String> = (0..5).map(|i| format!("quiet:{i}")).collect();
    for k in &keys {
        let cb = HttpCallback::new(Method::Post, rx.url(&format!("/{k}")));
        timers.add_callback_at(k, SystemTime::now(), &cb).unwrap();
    }
    // Each key tried at least twice while the server is silent.
    eventually("every key retried while the server is silent", || {
        let by_key = rx.by_key();
        keys.iter()
            .all(|k| by_key.get(k).is_some_and(|v| v.len() >= 2))
    });
    down.store(false, Ordering::SeqCst);
    eventually("every timer done", || keys.iter().all(|k| gone(&timers, k)));
    for (key, runs) in rx.by_key() {
        let attempts: Vec<u32> = runs.iter().map(|r| r.attempt()).collect();
        assert!(
            attempts.windows(2).all(|w| w[1] > w[0]),
            "{key}: attempts {attempts:?} do not grow"
        );
        assert!(
            attempts.len() >= 2 && attempts[0] == 1,
            "{key}: {attempts:?}"
        );
        assert!(
            runs.windows(2).all(|w| w[1].fence() > w[0].fence()),
            "{key}: each retry is a new claim"
        );
        let id = runs[0].webhook_id();
        assert!(
            runs.iter().all(|r| r.webhook_id() == id),
            "{key}: one delivery"
        );
    }
    assert!(timers.dead_letters(10).unwrap().is_empty());
    // Longer than the back-off: a done timer is not sent again.
    let seen = rx.requests().len();
    std::thread::sleep(ms(400));
    assert_eq!(rx.requests().len(), seen);
    timers.shutdown().unwrap();
}

#[test]
fn a_redirect_is_not_followed_but_retried_then_a_dead_letter_with_its_status() {
    let rx = Receiver::start(|r, _| {
        if r.path == "/moved" {
            Reply::status(302)
                .header("Location", "/elsewhere")
                .body("see /elsewhere")
        } else {
            Reply::status(200)
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let timers = node(&dir, HttpConfig::new(), policy(ms(50), 3));
    let cb = HttpCallback::new(Method::Post, rx.url("/moved")).body(b"x".to_vec());
    timers
        .add_callback_at("moved", SystemTime::now(), &cb)
        .unwrap();
    eventually("a dead letter", || timers.stats().dead == Some(1));
    let dead = &timers.dead_letters(10).unwrap()[0];
    assert_eq!(dead.key, "moved");
    assert_eq!(dead.attempts, 3);
    assert_eq!(
        dead.reason,
        "gave up after 3 attempts: HTTP 302 Found (redirects are not followed): see /elsewhere"
    );
    assert_eq!(HttpCallback::from_payload(&dead.payload), Some(cb));
    // Longer than the back-off: nothing more, and never the Location.
    std::thread::sleep(ms(300));
    let got = rx.requests();
    assert!(got.iter().all(|r| r.path == "/moved"), "{got:?}");
    let attempts: Vec<u32> = got.iter().map(|r| r.attempt()).collect();
    assert_eq!(attempts, [1, 2, 3]);
    assert_eq!(timers.stats().retried, 2);
    timers.shutdown().unwrap();
}

#[test]
fn a_503_is_retried_no_sooner_than_its_retry_after_date() {
    // The date two whole seconds after the first request's second: the
    // retry may not come before it (the date has whole seconds only).
    let not_before = Arc::new(std::sync::Mutex::new(None));
    let rx = {
        let not_before = not_before.clone();
        Receiver::start(move |r, nth| {
            if nth > 1 {
                return Reply::status(200);
            }
            let secs = r.at.duration_since(UNIX_EPOCH).unwrap().as_secs() + 2;
            let date = UNIX_EPOCH + Duration::from_secs(secs);
            *not_before.lock().unwrap() = Some(date);
            Reply::status(503).header("Retry-After", &httpdate::fmt_http_date(date))
        })
    };
    let dir = tempfile::tempdir().unwrap();
    // A back-off far shorter than the server's wait: the server's wins.
    let timers = node(&dir, HttpConfig::new(), policy(ms(20), 5));
    let cb = HttpCallback::new(Method::Get, rx.url("/later"));
    timers
        .add_callback_at("later", SystemTime::now(), &cb)
        .unwrap();
    let got = rx.wait_for(2);
    eventually("the retry done", || gone(&timers, "later"));
    let date = not_before.lock().unwrap().expect("a date was sent");
    assert!(
        got[1].at >= date,
        "retried at {:?}, before the Retry-After date {date:?}",
        got[1].at
    );
    assert_eq!((got[0].attempt(), got[1].attempt()), (1, 2));
    assert!(timers.dead_letters(10).unwrap().is_empty());
    assert_eq!(rx.requests().len(), 2);
    timers.shutdown().unwrap();
}
