//! HTTP-callback timers on the embedded store, against a scripted receiver
//! on loopback: the request as sent (method, body, headers, the Standard
//! Webhooks id and signature, checked by the reference verifier too),
//! exactly one request per timer when nothing fails, retries with back-off
//! and `Retry-After`, dead letters and their reasons, timeouts, a closed
//! port, the per-host limit, and the checks of `add_callback`.

use crate::durable_http_common::{self, ByKey, Callback};

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use durable_http_common::{Gate, Receiver, Reply, closed_port, eventually, node, policy};
use wheel_durable::http::{HttpCallback, HttpConfig, Method};
use wheel_durable::{DurableError, DurableTimers, Outcome, RetryPolicy};

/// Signing secrets, `whsec_` and base64 as Standard Webhooks makes them.
const SECRET: &str = "whsec_d2hlZWwtdGVzdC1zaWduaW5nLWtleS1vbmU=";
const SECRET_2: &str = "whsec_d2hlZWwtdGVzdC1zaWduaW5nLWtleS10d28=";

const METHODS: [Method; 5] = [
    Method::Get,
    Method::Post,
    Method::Put,
    Method::Patch,
    Method::Delete,
];

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn unix_ms(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).unwrap().as_millis()
}

fn gone(timers: &DurableTimers, key: &str) -> bool {
    timers.get(key).unwrap().is_none()
}

#[test]
fn each_callback_is_sent_once_with_its_request_our_headers_and_a_signature() {
    let rx = Receiver::ok();
    let dir = tempfile::tempdir().unwrap();
    let config = HttpConfig::new().signing_secret(SECRET);
    let timers = node(&dir, config, RetryPolicy::new());
    let start = SystemTime::now() + ms(300);
    let mut sent = Vec::new();
    for i in 0..30u64 {
        let method = METHODS[i as usize % 5];
        let body = if i % 5 == 0 {
            Vec::new()
        } else {
            format!("body {i}").into_bytes()
        };
        let cb = HttpCallback::new(method, rx.url(&format!("/cb/{i}")))
            .header("X-Order", i.to_string())
            .body(body);
        // One key needs percent-encoding in its header.
        let key = if i == 7 {
            "order 7/ü%".to_owned()
        } else {
            format!("order:{i}")
        };
        let due = start + ms(i * 10);
        timers.add_callback_at(&key, due, &cb).unwrap();
        sent.push((key, due, cb));
    }
    rx.wait_for(30);
    eventually("every timer done", || {
        sent.iter().all(|(k, ..)| gone(&timers, k))
    });
    let by_key = rx.by_key();
    assert_eq!(rx.requests().len(), 30, "one request per timer");
    for (i, (key, due, cb)) in sent.iter().enumerate() {
        let r = &by_key[key][0];
        assert_eq!(r.method, cb.method.as_str());
        assert_eq!(r.path, format!("/cb/{i}"));
        assert_eq!(r.header("X-Order"), Some(i.to_string().as_str()));
        assert_eq!(r.body, cb.body);
        assert_eq!(r.attempt(), 1);
        assert!(r.fence() > 0);
        assert_eq!(
            unix_ms(r.due()),
            unix_ms(*due) + u128::from(due_has_fraction(*due))
        );
        assert!(r.at >= *due, "{key} arrived before it was due");
        assert_eq!(
            attempt_due(r),
            r.due(),
            "a first attempt is due when the timer is"
        );
        assert!(r.signed_with(SECRET), "{key}: bad signature");
        assert!(!r.signed_with(SECRET_2));
        if cb.body.is_empty() && cb.method == Method::Get {
            assert_eq!(r.header("Content-Length"), None, "a bodiless GET");
        }
        assert!(r.header("User-Agent").unwrap().starts_with("wheel/"));
    }
    let fences: HashSet<u64> = rx.requests().iter().map(|r| r.fence()).collect();
    assert_eq!(fences.len(), 30, "every claim has its own fence");
    assert_eq!(timers.stats().fired, 30);
    timers.shutdown().unwrap();
}

/// `Wheel-Attempt-Due` as a time.
fn attempt_due(r: &durable_http_common::Received) -> SystemTime {
    let header = r.header("Wheel-Attempt-Due").expect("Wheel-Attempt-Due");
    UNIX_EPOCH + ms(header.parse().unwrap())
}

/// Whether a due time has a fraction of a millisecond (the store rounds it up).
fn due_has_fraction(due: SystemTime) -> bool {
    !due.duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
        .is_multiple_of(1_000_000)
}

#[test]
fn a_500_is_retried_after_the_back_off_then_done() {
    let rx = Receiver::start(|_, nth| {
        if nth == 1 {
            Reply::status(500).body("down")
        } else {
            Reply::status(200)
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let timers = node(&dir, HttpConfig::new(), policy(ms(300), 5));
    let cb = HttpCallback::new(Method::Post, rx.url("/flaky")).body(b"x".to_vec());
    let due = UNIX_EPOCH + ms(unix_ms(SystemTime::now() + ms(100)) as u64);
    timers.add_callback_at("flaky", due, &cb).unwrap();
    let got = rx.wait_for(2);
    eventually("the retry done", || gone(&timers, "flaky"));
    assert_eq!((got[0].attempt(), got[1].attempt()), (1, 2));
    assert!(got[1].fence() > got[0].fence());
    // `Wheel-Due` stays the original due time; the retry's own is later.
    assert_eq!((got[0].due(), got[1].due()), (due, due));
    assert_eq!(attempt_due(&got[0]), due);
    assert!(attempt_due(&got[1]) >= due + ms(300), "{got:?}");
    let waited = got[1].at.duration_since(got[0].at).unwrap();
    assert!(
        waited >= ms(300),
        "retried after {waited:?}, before the back-off"
    );
    assert!(timers.dead_letters(10).unwrap().is_empty());
    assert_eq!(timers.stats().retried, 1);
    assert_eq!(rx.requests().len(), 2);
    timers.shutdown().unwrap();
}

#[test]
fn every_attempt_of_a_timer_has_one_webhook_id_and_a_new_add_a_new_one() {
    // The first request to /again fails; the rest succeed.
    let rx = Receiver::start(|_, nth| Reply::status(if nth == 1 { 503 } else { 200 }));
    let dir = tempfile::tempdir().unwrap();
    let config = HttpConfig::new()
        .signing_secret(SECRET)
        .signing_secret(SECRET_2);
    let timers = node(&dir, config, policy(ms(100), 5));
    let cb = HttpCallback::new(Method::Post, rx.url("/again")).body(br#"{"n":1}"#.to_vec());
    let due = SystemTime::now();
    timers.add_callback_at("again", due, &cb).unwrap();
    rx.wait_for(2);
    eventually("the retry done", || gone(&timers, "again"));
    // The same key, due time and body again: a new delivery.
    timers.add_callback_at("again", due, &cb).unwrap();
    let got = rx.wait_for(3);
    eventually("the new timer done", || gone(&timers, "again"));
    assert_eq!(
        got.iter().map(|r| r.attempt()).collect::<Vec<_>>(),
        [1, 2, 1]
    );
    assert!(got[1].fence() > got[0].fence(), "the retry has a new claim");
    assert_eq!(got[0].webhook_id(), got[1].webhook_id(), "one delivery");
    assert_ne!(got[1].webhook_id(), got[2].webhook_id(), "added again");
    for r in &got {
        let id = r.webhook_id();
        assert!(id.starts_with("msg_") && id.len() == 36, "{id}");
        // Two secrets: two entries, each verifying under its own secret.
        let entries: Vec<&str> = r.header("webhook-signature").unwrap().split(' ').collect();
        assert_eq!(entries.len(), 2, "{entries:?}");
        assert!(entries.iter().all(|e| e.starts_with("v1,")));
        assert!(r.signed_with(SECRET) && r.signed_with(SECRET_2));
        assert!(!r.signed_with("whsec_b3RoZXI="));
        let ts: u64 = r.header("webhook-timestamp").unwrap().parse().unwrap();
        // Stamped when sent: not before the timer was due, not after the
        // request arrived.
        let arrived = r.at.duration_since(UNIX_EPOCH).unwrap().as_secs();
        let due_secs = due.duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert!(
            due_secs <= ts && ts <= arrived,
            "due at {due_secs}, sent at {ts}, arrived at {arrived}"
        );
    }
    let t = |r: &durable_http_common::Received| r.header("webhook-timestamp").unwrap().to_owned();
    assert!(
        t(&got[0]) <= t(&got[1]),
        "each attempt is stamped when sent"
    );
    timers.shutdown().unwrap();
}

#[test]
fn the_reference_standard_webhooks_verifier_accepts_what_a_node_sends() {
    let rx = Receiver::ok();
    let dir = tempfile::tempdir().unwrap();
    let config = HttpConfig::new()
        .signing_secret(SECRET)
        .signing_secret(SECRET_2);
    let timers = node(&dir, config, RetryPolicy::new());
    let body = br#"{"order":17,"note":"caf\u00e9 \"x\""}"#.to_vec();
    let cb = HttpCallback::new(Method::Post, rx.url("/verify"))
        .header("Content-Type", "application/json")
        .body(body.clone());
    timers
        .add_callback_at("order:17 ü", SystemTime::now(), &cb)
        .unwrap();
    let got = rx.wait_for(1);
    assert_eq!(got[0].body, body);
    let verdicts = |secret| durable_http_common::reference_verdicts(&got[0], secret);
    // As sent: accepted; another body: refused; 10 minutes later: too old.
    if let Some(v) = verdicts(SECRET) {
        assert_eq!(v, [true, false, false]);
        assert_eq!(verdicts(SECRET_2), Some([true, false, false]));
        // Under a secret the node does not have, it refuses everything.
        assert_eq!(verdicts("whsec_b3RoZXI="), Some([false, false, false]));
    }
    timers.shutdown().unwrap();
}

#[test]
fn a_secret_that_is_not_whsec_and_base64_is_refused_at_build() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["d2hlZWw=", "whsec_", "whsec_not base64!", "whsec_d2hl-Wl="] {
        let built = DurableTimers::builder()
            .embedded(dir.path().join("timers"))
            .http(HttpConfig::new().signing_secret(SECRET).signing_secret(bad))
            .build();
        match built {
            Err(DurableError::Config(why)) => {
                assert!(why.contains("signing secret"), "{why}");
                assert!(
                    !why.contains(bad) || bad == "whsec_",
                    "{why} shows the secret"
                );
            }
            other => panic!("{bad:?}: {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn a_429_is_retried_after_its_retry_after() {
    let rx = Receiver::start(|_, nth| {
        if nth == 1 {
            Reply::status(429).header("Retry-After", "1")
        } else {
            Reply::status(200)
        }
    });
    let dir = tempfile::tempdir().unwrap();
    // A back-off far shorter than the server's wait: the server's wins.
    let timers = node(&dir, HttpConfig::new(), policy(ms(20), 5));
    let cb = HttpCallback::new(Method::Get, rx.url("/busy"));
    timers
        .add_callback_at("busy", SystemTime::now(), &cb)
        .unwrap();
    let got = rx.wait_for(2);
    eventually("the retry done", || gone(&timers, "busy"));
    let waited = got[1].at.duration_since(got[0].at).unwrap();
    assert!(
        waited >= ms(1_000),
        "retried after {waited:?}, before Retry-After"
    );
    assert_eq!(got[1].attempt(), 2);
    timers.shutdown().unwrap();
}

#[test]
fn a_404_is_a_dead_letter_at_once_with_the_status_and_the_start_of_the_body() {
    let long = format!("no such order {}", "x".repeat(3_000));
    let rx = {
        let long = long.clone();
        Receiver::start(move |_, _| Reply::status(404).body(long.clone()))
    };
    let dir = tempfile::tempdir().unwrap();
    let timers = node(&dir, HttpConfig::new(), policy(ms(50), 5));
    let cb = HttpCallback::new(Method::Delete, rx.url("/orders/9"));
    timers
        .add_callback_at("order:9", SystemTime::now(), &cb)
        .unwrap();
    eventually("a dead letter", || timers.stats().dead == Some(1));
    let dead = timers.dead_letters(10).unwrap();
    let expected = format!("HTTP 404 Not Found: {}", &long[..1024]);
    assert_eq!(dead[0].reason, expected);
    assert_eq!(dead[0].attempts, 1);
    assert_eq!(HttpCallback::from_payload(&dead[0].payload), Some(cb));
    // Longer than the back-off: a dead letter is never sent again.
    std::thread::sleep(ms(300));
    assert_eq!(rx.requests().len(), 1);
    timers.shutdown().unwrap();
}

#[test]
fn a_reply_slower_than_the_timeout_is_retried() {
    let rx = Receiver::start(|_, nth| {
        if nth == 1 {
            Reply::status(200).after(ms(2_000))
        } else {
            Reply::status(200)
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let config = HttpConfig::new().timeout(ms(300));
    let timers = node(&dir, config, policy(ms(100), 5));
    let cb = HttpCallback::new(Method::Put, rx.url("/slow")).body(b"on".to_vec());
    timers
        .add_callback_at("slow", SystemTime::now(), &cb)
        .unwrap();
    let got = rx.wait_for(2);
    eventually("the retry done", || gone(&timers, "slow"));
    assert_eq!((got[0].attempt(), got[1].attempt()), (1, 2));
    // On the node's clock: the first attempt started at or after its due
    // time, ran into its 300 ms timeout, and the retry was made due 100 ms
    // after that run ended (the store keeps whole milliseconds, so up to
    // one sooner). Arrival times would also count how late a starved
    // client connected, which shortens the gap the receiver sees.
    let waited = attempt_due(&got[1])
        .duration_since(attempt_due(&got[0]))
        .unwrap();
    assert!(
        waited >= ms(399),
        "retry due {waited:?} after the first attempt's: timeout plus back-off"
    );
    assert!(got[1].at >= attempt_due(&got[1]), "the retry arrived early");
    assert!(timers.dead_letters(10).unwrap().is_empty());
    timers.shutdown().unwrap();
}

#[test]
fn a_closed_port_is_retried_until_the_attempts_run_out() {
    let dir = tempfile::tempdir().unwrap();
    let timers = node(&dir, HttpConfig::new(), policy(ms(50), 3));
    let url = format!("http://127.0.0.1:{}/nobody", closed_port());
    let cb = HttpCallback::new(Method::Post, url);
    timers
        .add_callback_at("nobody", SystemTime::now(), &cb)
        .unwrap();
    eventually("a dead letter", || timers.stats().dead == Some(1));
    let dead = &timers.dead_letters(10).unwrap()[0];
    assert_eq!(dead.attempts, 3);
    assert!(
        dead.reason
            .starts_with("gave up after 3 attempts: no reply: "),
        "{}",
        dead.reason
    );
    assert_eq!(timers.stats().retried, 2);
    timers.shutdown().unwrap();
}

#[test]
fn callbacks_go_by_http_and_other_timers_to_the_handler_or_die_without_one() {
    let rx = Receiver::ok();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let dir = tempfile::tempdir().unwrap();
    let timers = {
        let seen = seen.clone();
        DurableTimers::builder()
            .embedded(dir.path().join("timers"))
            .handler(move |t| {
                seen.lock().unwrap().push(t.key.clone());
                Outcome::Done
            })
            .http(HttpConfig::new())
            .build()
            .unwrap()
    };
    let cb = HttpCallback::new(Method::Post, rx.url("/cb"));
    timers
        .add_callback_at("cb", SystemTime::now(), &cb)
        .unwrap();
    timers.add_at("plain", SystemTime::now(), b"close").unwrap();
    eventually("both done", || {
        gone(&timers, "cb") && gone(&timers, "plain")
    });
    assert_eq!(*seen.lock().unwrap(), ["plain"]);
    assert_eq!(rx.requests().len(), 1);
    assert_eq!(rx.requests()[0].key(), "cb");
    timers.shutdown().unwrap();

    // Without a handler: a plain timer is a dead letter; a damaged
    // callback too, and neither is sent.
    let dir = tempfile::tempdir().unwrap();
    let timers = node(&dir, HttpConfig::new(), RetryPolicy::new());
    timers.add_at("plain", SystemTime::now(), b"close").unwrap();
    timers
        .add_at("damaged", SystemTime::now(), b"\0wheel:http\x01\x09")
        .unwrap();
    eventually("two dead letters", || timers.stats().dead == Some(2));
    let mut reasons: Vec<String> = timers
        .dead_letters(10)
        .unwrap()
        .into_iter()
        .map(|d| format!("{}: {}", d.key, d.reason))
        .collect();
    reasons.sort();
    assert!(
        reasons[0].starts_with("damaged: a damaged HTTP callback"),
        "{reasons:?}"
    );
    assert!(reasons[1].starts_with("plain: no handler"), "{reasons:?}");
    assert_eq!(rx.requests().len(), 1);
    timers.shutdown().unwrap();
}

#[test]
fn add_callback_refuses_bad_input_with_typed_errors_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let timers = DurableTimers::builder()
        .embedded(dir.path().join("timers"))
        .max_payload(256)
        .build()
        .unwrap();
    let at = SystemTime::now() + Duration::from_secs(3600);
    let add = |url: &str, headers: &[(&str, &str)], body: usize| {
        let mut cb = HttpCallback::new(Method::Post, url).body(vec![b'x'; body]);
        for (n, v) in headers {
            cb = cb.header(*n, *v);
        }
        timers.add_callback_at("k", at, &cb)
    };
    let ok = "http://127.0.0.1:9/x";
    for url in [
        "ftp://a.example/",
        "a.example/x",
        "http://",
        "https://exa mple/",
        "",
    ] {
        assert!(
            matches!(add(url, &[], 0), Err(DurableError::InvalidUrl(_))),
            "{url:?}"
        );
    }
    for h in [
        ("Bad Name", "v"),
        ("X-A", "a\r\nb"),
        ("Wheel-Fence", "1"),
        ("Host", "h"),
    ] {
        assert!(
            matches!(add(ok, &[h], 0), Err(DurableError::InvalidHeader(_))),
            "{h:?}"
        );
    }
    assert!(matches!(
        add(ok, &[], 300),
        Err(DurableError::PayloadTooLarge { max: 256, .. })
    ));
    let cb = HttpCallback::new(Method::Get, ok);
    assert_eq!(
        timers.add_callback_at("", at, &cb),
        Err(DurableError::InvalidKey)
    );
    assert_eq!(
        "TRACE".parse::<Method>(),
        Err(DurableError::InvalidMethod("TRACE".into()))
    );
    assert_eq!(timers.stats().pending, Some(0));
    let bad_config = DurableTimers::builder()
        .embedded(dir.path().join("other"))
        .http(HttpConfig::new().per_host_limit(0))
        .build();
    assert!(matches!(bad_config, Err(DurableError::Config(_))));
    // The same checks pass a good callback, stored like any timer.
    add(ok, &[("Content-Type", "text/plain")], 100).unwrap();
    assert_eq!(timers.stats().pending, Some(1));
    timers.shutdown().unwrap();
}

#[test]
fn a_slow_host_at_its_limit_does_not_hold_up_another_host() {
    let gate = Gate::default();
    let slow = Receiver::gated(&gate);
    let fast = Receiver::ok();
    let dir = tempfile::tempdir().unwrap();
    let timers = DurableTimers::builder()
        .embedded(dir.path().join("timers"))
        .workers(1)
        // A busy host's retries count as attempts: leave room for them.
        .retry(policy(ms(50), 1_000))
        .http(
            HttpConfig::new()
                .per_host_limit(2)
                .timeout(Duration::from_secs(120)),
        )
        .build()
        .unwrap();
    let now = SystemTime::now();
    for i in 0..6 {
        let cb = HttpCallback::new(Method::Post, slow.url(&format!("/slow/{i}")));
        timers
            .add_callback_at(&format!("slow:{i}"), now + ms(100), &cb)
            .unwrap();
    }
    for i in 0..6 {
        let cb = HttpCallback::new(Method::Post, fast.url(&format!("/fast/{i}")));
        timers
            .add_callback_at(&format!("fast:{i}"), now + ms(300), &cb)
            .unwrap();
    }
    // Every fast callback arrives while the slow host holds its requests,
    // and the slow host never gets more than its limit.
    fast.wait_for(6);
    eventually("the slow host at its limit", || slow.max_in_flight() == 2);
    assert_eq!(slow.requests().len(), 2);
    gate.open();
    eventually("every slow callback done", || {
        (0..6).all(|i| gone(&timers, &format!("slow:{i}")))
    });
    let keys: HashSet<String> = slow.requests().iter().map(|r| r.key()).collect();
    assert_eq!(keys.len(), 6);
    assert_eq!(slow.requests().len(), 6, "a busy host's timer is not sent");
    assert_eq!(fast.requests().len(), 6);
    assert!(slow.max_in_flight() <= 2);
    timers.shutdown().unwrap();
}

/// A schedule's callback runs carry the schedule id and the nominal time
/// of their slot, besides the usual headers; a plain callback does not.
#[test]
fn a_schedule_s_callbacks_carry_its_id_and_nominal_time() {
    use wheel_durable::schedule::{Schedule, Spec, run_key};
    let rx = Receiver::ok();
    let dir = tempfile::tempdir().unwrap();
    let timers = node(&dir, HttpConfig::new(), RetryPolicy::new());
    let every = Schedule::builder(Spec::every(Duration::from_secs(1)).unwrap())
        .build()
        .unwrap();
    let cb = HttpCallback::new(Method::Post, rx.url("/tick"));
    timers
        .upsert_callback_schedule("tick tock", &every, &cb)
        .unwrap();
    timers
        .add_callback_at("plain", SystemTime::now(), &cb)
        .unwrap();
    eventually("two runs and the plain callback", || {
        rx.requests().len() >= 3
    });
    let requests = rx.requests();
    let plain = requests.iter().find(|r| r.key() == "plain").unwrap();
    assert_eq!(plain.header("Wheel-Schedule-Id"), None);
    let runs: Vec<_> = requests.iter().filter(|r| r.key() != "plain").collect();
    for r in &runs {
        assert_eq!(r.header("Wheel-Schedule-Id"), Some("tick%20tock"));
        let at: u64 = r.header("Wheel-Schedule-Time").unwrap().parse().unwrap();
        let nominal = UNIX_EPOCH + ms(at);
        assert_eq!(r.key(), run_key("tick tock", nominal).unwrap());
        assert_eq!(at % 1_000, 0, "on the second");
    }
    timers.shutdown().unwrap();
}
