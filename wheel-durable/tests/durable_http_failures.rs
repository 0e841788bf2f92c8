//! HTTP-callback failures on the embedded store, against a scripted
//! receiver on loopback: a server that stops answering for a while (its
//! requests time out and are retried until it answers again), a redirect
//! (never followed: a failed attempt, and a dead letter once the attempts
//! run out), and `Retry-After` as an HTTP date.

mod durable_common;
mod durable_http_common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use durable_http_common::{eventually, node, policy, Receiver, Reply};
use wheel_durable::http::{HttpCallback, HttpConfig, Method};
use wheel_durable::DurableTimers;

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
                std::thread::sleep(ms(1_500));
            }
            Reply::status(200)
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

/// `t` as an HTTP date (IMF-fixdate, always GMT): `Sun, 06 Nov 1994
/// 08:49:37 GMT`.
fn http_date(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = t.duration_since(UNIX_EPOCH).unwrap().as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since the epoch to a civil date, counting in 400-year eras
    // that start on 1 March so that the leap day ends a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        rem / 3_600,
        rem / 60 % 60,
        rem % 60
    )
}

#[test]
fn the_test_s_http_dates_are_right() {
    let at = |s| UNIX_EPOCH + Duration::from_secs(s);
    assert_eq!(http_date(at(784_111_777)), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(http_date(at(951_782_400)), "Tue, 29 Feb 2000 00:00:00 GMT");
    assert_eq!(http_date(at(0)), "Thu, 01 Jan 1970 00:00:00 GMT");
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
            Reply::status(503).header("Retry-After", &http_date(date))
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
