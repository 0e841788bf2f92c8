//! The durable tier's log events, as a subscriber sees them: a handler's
//! panic, a dead letter, the hand-back at shutdown and a run's settled
//! outcome each give one event at its level, with the namespace and the
//! key as fields.

use crate::durable_common;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use durable_common::eventually;
use wheel_durable::{DurableTimers, Outcome, RetryPolicy};

/// Every line logged by this test binary (a subscriber is global: the
/// node's threads log, not the test's).
fn logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = Sink(buf.clone());
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || sink.clone())
            .init();
        buf
    })
}

#[derive(Clone)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The logged lines of namespace `ns` that contain `text`.
fn lines(ns: &str, text: &str) -> Vec<String> {
    let all = String::from_utf8_lossy(&logs().lock().unwrap()).into_owned();
    let tag = format!("namespace={ns} ");
    all.lines()
        .filter(|l| l.contains(&tag) && l.contains(text))
        .map(str::to_owned)
        .collect()
}

fn node(dir: &tempfile::TempDir, ns: &str) -> wheel_durable::DurableTimersBuilder {
    logs();
    DurableTimers::builder()
        .embedded(dir.path().join("t"))
        .namespace(ns)
}

#[test]
fn a_panicking_handler_is_logged_as_an_error_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let retry = RetryPolicy::new()
        .initial(Duration::from_millis(10))
        .jitter(0.0);
    let timers = node(&dir, "logpanic")
        .retry(retry)
        .handler(|t| {
            if t.attempt == 1 {
                panic!("boom on {}", t.key);
            }
            Outcome::Done
        })
        .build()
        .unwrap();
    timers.add_at("p1", SystemTime::now(), b"").unwrap();
    eventually("the second attempt", || timers.stats().fired == 2);
    let found = lines("logpanic", "handler panicked");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("ERROR"), "{}", found[0]);
    assert!(found[0].contains("key=\"p1\""), "{}", found[0]);
    assert!(found[0].contains("panic=\"boom on p1\""), "{}", found[0]);
    timers.shutdown().unwrap();
}

#[test]
fn a_dead_letter_is_logged_as_a_warning_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let timers = node(&dir, "logdead")
        .handler(|_| Outcome::Fail("the order is gone".into()))
        .build()
        .unwrap();
    timers.add_at("d1", SystemTime::now(), b"").unwrap();
    eventually("a dead letter", || timers.stats().dead == Some(1));
    eventually("its log line", || {
        !lines("logdead", "timer became a dead letter").is_empty()
    });
    let found = lines("logdead", "timer became a dead letter");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("WARN"), "{}", found[0]);
    assert!(found[0].contains("key=\"d1\""), "{}", found[0]);
    assert!(
        found[0].contains("reason=\"the order is gone\""),
        "{}",
        found[0]
    );
    timers.shutdown().unwrap();
}

/// A breaker that stays open past `pause_after` pauses its key, and the
/// node that recorded the failed probe logs it once, as a warning naming
/// the key.
#[test]
fn a_breaker_that_pauses_its_key_is_logged_as_a_warning() {
    use wheel_durable::{CircuitBreaker, FlowLimits};
    let dir = tempfile::tempdir().unwrap();
    let timers = node(&dir, "logbreaker")
        .handler(|_| Outcome::Retry)
        .retry(
            RetryPolicy::new()
                .initial(Duration::from_millis(10))
                .max_attempts(50),
        )
        .flow_key(|_, _| Some("down.example".into()))
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new()
        .failures(1)
        .cooldown(Duration::from_millis(50))
        .max_cooldown(Duration::from_millis(50))
        .pause_after(Duration::from_millis(100));
    timers
        .set_flow_limits("down.example", &FlowLimits::new().breaker(breaker))
        .unwrap();
    timers.add_at("b1", SystemTime::now(), b"").unwrap();
    eventually("the key paused by its breaker", || {
        timers.flows().unwrap().keys.iter().any(|k| k.paused)
    });
    eventually("its log line", || {
        !lines("logbreaker", "flow key paused").is_empty()
    });
    let found = lines("logbreaker", "flow key paused");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("WARN"), "{}", found[0]);
    assert!(found[0].contains("flow=\"down.example\""), "{}", found[0]);
    timers.shutdown().unwrap();
}

/// Keys and reasons come from users and from receivers: each is logged as
/// an escaped field, so a line break in one cannot start a line that
/// looks like another event.
#[test]
fn keys_and_reasons_with_line_breaks_stay_on_their_own_line() {
    let dir = tempfile::tempdir().unwrap();
    let key = "k1\n2026-01-01T00:00:00Z ERROR forged-by-key";
    let timers = node(&dir, "loginject")
        .handler(|_| Outcome::Fail("gone\r\n2026-01-01T00:00:00Z ERROR forged-by-reason".into()))
        .build()
        .unwrap();
    timers.add_at(key, SystemTime::now(), b"").unwrap();
    eventually("its log line", || {
        !lines("loginject", "timer became a dead letter").is_empty()
    });
    let found = lines("loginject", "timer became a dead letter");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains(r#"key="k1\n2026-01-01T00:00:00Z ERROR forged-by-key""#),
        "{}",
        found[0]
    );
    assert!(
        found[0].contains(r#"reason="gone\r\n2026-01-01T00:00:00Z ERROR forged-by-reason""#),
        "{}",
        found[0]
    );
    let all = String::from_utf8_lossy(&logs().lock().unwrap()).into_owned();
    for line in all.lines() {
        assert!(
            !line.starts_with("2026-01-01T00:00:00Z"),
            "a forged line: {line}"
        );
    }
    timers.shutdown().unwrap();
}

#[test]
fn claims_handed_back_at_shutdown_are_logged_with_their_count() {
    let dir = tempfile::tempdir().unwrap();
    let timers = node(&dir, "logback")
        .claim_ahead(Duration::from_secs(10))
        .handler(|_| Outcome::Done)
        .build()
        .unwrap();
    let due = SystemTime::now() + Duration::from_secs(8);
    for k in ["h1", "h2", "h3"] {
        timers.add_at(k, due, b"").unwrap();
    }
    eventually("three claims held", || timers.stats().held == 3);
    timers.shutdown().unwrap();
    let found = lines("logback", "claims handed back at shutdown");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("INFO"), "{}", found[0]);
    assert!(found[0].contains("released=3"), "{}", found[0]);
}

/// The store's answer to each run's outcome is a TRACE event naming the
/// run (key and fence): what tells a watcher that a run will not run
/// again.
#[test]
fn a_stored_outcome_is_traced_with_its_key_and_fence() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let fence = Arc::new(AtomicU64::new(0));
    let seen = fence.clone();
    let timers = node(&dir, "logsettled")
        .handler(move |t| {
            seen.store(t.fence, Ordering::SeqCst);
            Outcome::Done
        })
        .build()
        .unwrap();
    timers.add_at("s1", SystemTime::now(), b"").unwrap();
    eventually("its log line", || {
        !lines("logsettled", "outcome settled").is_empty()
    });
    let found = lines("logsettled", "outcome settled");
    assert_eq!(found.len(), 1, "{found:?}");
    let fence = fence.load(Ordering::SeqCst);
    assert!(fence > 0, "the handler ran before its outcome settled");
    assert!(found[0].contains("TRACE"), "{}", found[0]);
    assert!(found[0].contains("key=\"s1\""), "{}", found[0]);
    assert!(
        found[0].contains(&format!("fence={fence} ")),
        "{}",
        found[0]
    );
    assert!(found[0].contains("recorded=true"), "{}", found[0]);
    timers.shutdown().unwrap();
}
