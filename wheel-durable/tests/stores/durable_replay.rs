//! Bulk replay of dead letters, on the embedded store and on Redis: 1 000
//! dead letters replayed at 200/s (each revived exactly once, the pace
//! never ahead of `rate × elapsed + 1`), the filters, the limit, skipped
//! letters, cancel, and a shutdown in the middle of a replay.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use wheel_durable::http::{HttpCallback, Method};
use wheel_durable::{
    DeadFilter, DurableTimers, DurableTimersBuilder, Fired, Listing, Outcome, Replay, ReplayState,
    TimerInfo,
};
use wheel_testkit::{RedisServer, ServerOptions};

/// Dead letters of the flow the big replay takes.
const FLOW_A: usize = 1_000;
/// Dead letters of another flow, and plain payloads (no flow).
const OTHERS: usize = 20;
const RATE: f64 = 200.0;

/// A handler that fails every run while `fail` is set (its reason names
/// the key's group) and records the others.
#[derive(Default)]
struct Switch {
    fail: AtomicBool,
    fired: Mutex<HashMap<String, u32>>,
}

impl Switch {
    fn handle(&self, f: &Fired) -> Outcome {
        if self.fail.load(Ordering::SeqCst) {
            let group = f.key.split(':').next().unwrap_or("");
            return Outcome::Fail(format!("HTTP 503 from {group}"));
        }
        *self.fired.lock().unwrap().entry(f.key.clone()).or_default() += 1;
        Outcome::Done
    }

    fn fired(&self) -> HashMap<String, u32> {
        self.fired.lock().unwrap().clone()
    }
}

fn node(builder: DurableTimersBuilder, switch: &Arc<Switch>) -> DurableTimers {
    let switch = switch.clone();
    builder.handler(move |f| switch.handle(f)).build().unwrap()
}

fn callback(port: u16, i: usize) -> Vec<u8> {
    let url = format!("http://127.0.0.1:{port}/hook/{i}");
    HttpCallback::new(Method::Post, url).to_payload().unwrap()
}

/// Waits (a hang guard, not a measurement) until `done` holds.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "waited too long for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn dead(timers: &DurableTimers) -> Vec<TimerInfo> {
    let mut all = Vec::new();
    let mut page = timers.list(Listing::Dead, 1_000).unwrap();
    loop {
        all.extend(page.timers);
        match page.next {
            Some(next) => page = timers.list_after(&next, 1_000).unwrap(),
            None => return all,
        }
    }
}

fn with_reason(timers: &DurableTimers, text: &str) -> Vec<String> {
    dead(timers)
        .into_iter()
        .filter(|t| t.reason.as_deref().is_some_and(|r| r.contains(text)))
        .map(|t| t.key)
        .collect()
}

/// Adds the dead letters: `a:` callbacks to port 9001, `b:` to 9002, `c:`
/// plain payloads.
fn make_dead_letters(timers: &DurableTimers, switch: &Switch) {
    switch.fail.store(true, Ordering::SeqCst);
    let at = SystemTime::now();
    let mut batch: Vec<(String, Vec<u8>)> = (0..FLOW_A)
        .map(|i| (format!("a:{i}"), callback(9001, i)))
        .collect();
    batch.extend((0..OTHERS).map(|i| (format!("b:{i}"), callback(9002, i))));
    batch.extend((0..OTHERS).map(|i| (format!("c:{i}"), b"plain".to_vec())));
    let adds: Vec<(&str, SystemTime, &[u8])> = batch
        .iter()
        .map(|(k, p)| (k.as_str(), at, p.as_slice()))
        .collect();
    timers.add_many(&adds).unwrap();
    let total = FLOW_A + 2 * OTHERS;
    wait_for("the dead letters", || dead(timers).len() == total);
    // No pause before the replay: it takes the letters that failed in the
    // millisecond it starts in, too.
    switch.fail.store(false, Ordering::SeqCst);
}

fn bad_settings_are_input_errors(timers: &DurableTimers) {
    let any = DeadFilter::default();
    for rate in [0.0, -1.0, f64::NAN, f64::INFINITY, 2e6] {
        let e = timers.replay_dead(&any, rate, None).unwrap_err();
        assert!(e.is_input(), "{rate}: {e:?}");
    }
    assert!(
        timers
            .replay_dead(&any, 1.0, Some(0))
            .unwrap_err()
            .is_input()
    );
    let t = SystemTime::now();
    let empty = DeadFilter::default().failed_since(t).failed_before(t);
    assert!(
        timers
            .replay_dead(&empty, 1.0, None)
            .unwrap_err()
            .is_input()
    );
}

/// The flow's 1 000 letters at 200/s: never ahead of the pace, each
/// revived once, nothing else touched. The measured duration is printed.
fn the_flow_is_replayed_at_its_rate(timers: &DurableTimers, switch: &Switch) {
    let filter = DeadFilter::default()
        .flow("http://127.0.0.1:9001")
        .reason("HTTP 503");
    let t0 = Instant::now();
    let replay = timers.replay_dead(&filter, RATE, None).unwrap();
    loop {
        let p = replay.progress();
        // Elapsed read after the counts, and measured from before the
        // start: never shorter than the replay's own elapsed time.
        let allowed = (RATE * t0.elapsed().as_secs_f64()).floor() as u64 + 1;
        assert!(
            p.revived <= allowed,
            "{} revived, {allowed} allowed",
            p.revived
        );
        if !p.state.is_running() {
            break;
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    let end = replay.wait();
    eprintln!(
        "replayed {} dead letters at {RATE}/s in {:?}",
        end.revived,
        t0.elapsed()
    );
    assert_eq!(
        (end.matched, end.revived, end.skipped, end.state),
        (FLOW_A as u64, FLOW_A as u64, 0, ReplayState::Done)
    );
    wait_for("the revived runs", || switch.fired().len() == FLOW_A);
    let fired = switch.fired();
    assert!(fired.iter().all(|(k, n)| k.starts_with("a:") && *n == 1));
    assert_eq!(dead(timers).len(), 2 * OTHERS);
}

/// A limit, and time ranges that hold nothing.
fn limits_and_time_ranges_are_honoured(timers: &DurableTimers, switch: &Switch) {
    let b = DeadFilter::default().reason("from b");
    let end = timers.replay_dead(&b, 1_000.0, Some(5)).unwrap().wait();
    assert_eq!(
        (end.matched, end.revived, end.state),
        (5, 5, ReplayState::Done)
    );
    wait_for("the limited runs", || switch.fired().len() == FLOW_A + 5);
    assert_eq!(with_reason(timers, "from b").len(), OTHERS - 5);
    let future = SystemTime::now() + Duration::from_secs(3600);
    let early = SystemTime::UNIX_EPOCH + Duration::from_secs(1);
    for f in [
        DeadFilter::default().failed_since(future),
        DeadFilter::default().failed_before(early),
        DeadFilter::default().flow("http://127.0.0.1:9003"),
    ] {
        let end = timers.replay_dead(&f, 1_000.0, None).unwrap().wait();
        assert_eq!((end.matched, end.state), (0, ReplayState::Done), "{f:?}");
    }
    assert_eq!(dead(timers).len(), 2 * OTHERS - 5);
}

/// Waits until the replay has matched `n` letters.
fn matched(replay: &Replay, n: u64) {
    wait_for("the replay's progress", || replay.progress().matched >= n);
}

/// A letter removed after the walk read it is skipped; cancel stops the
/// replay, and the letters it had not reached stay dead.
fn skipped_and_cancelled(timers: &DurableTimers) {
    let plain = with_reason(timers, "from c");
    assert_eq!(plain.len(), OTHERS);
    let replay = timers
        .replay_dead(&DeadFilter::default().reason("from c"), 1.0, None)
        .unwrap();
    matched(&replay, 1);
    // The first page, read before the first revival, holds it.
    assert!(!timers.cancel(&plain[1]).unwrap());
    matched(&replay, 2);
    replay.cancel();
    let end = replay.wait();
    assert_eq!(end.state, ReplayState::Cancelled);
    assert_eq!(end.skipped, 1);
    assert_eq!(end.revived + end.skipped, end.matched);
    let left = with_reason(timers, "from c").len() as u64;
    assert_eq!(left, OTHERS as u64 - 1 - end.revived);
    assert!(end.revived < OTHERS as u64 - 1, "cancel stopped it early");
}

/// Every check but the shutdown's, on one node.
fn replays(timers: &DurableTimers, switch: &Switch) {
    make_dead_letters(timers, switch);
    bad_settings_are_input_errors(timers);
    the_flow_is_replayed_at_its_rate(timers, switch);
    limits_and_time_ranges_are_honoured(timers, switch);
    skipped_and_cancelled(timers);
}

/// A shutdown stops a replay: the revived letters are not dead, the rest
/// are, as a new handle on the store sees.
fn shutdown_stops_a_replay(timers: DurableTimers, reopen: impl FnOnce() -> DurableTimers) {
    let before = with_reason(&timers, "from b").len() as u64;
    let replay = timers
        .replay_dead(&DeadFilter::default().reason("from b"), 1.0, None)
        .unwrap();
    matched(&replay, 1);
    timers.shutdown().unwrap();
    // Releases the embedded store's directory for the new handle.
    drop(timers);
    let end = replay.wait();
    assert_eq!(end.state, ReplayState::Stopped);
    assert!(end.revived >= 1 && end.revived < before);
    let client = reopen();
    assert_eq!(
        with_reason(&client, "from b").len() as u64,
        before - end.revived
    );
    client.shutdown().unwrap();
}

#[test]
fn embedded_replays_dead_letters_at_a_rate_by_filter() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timers");
    let switch = Arc::new(Switch::default());
    let timers = node(DurableTimers::builder().embedded(&path), &switch);
    replays(&timers, &switch);
    shutdown_stops_a_replay(timers, || {
        DurableTimers::builder().embedded(&path).build().unwrap()
    });
}

#[test]
fn redis_replays_dead_letters_at_a_rate_by_filter() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let url = server.url();
    let builder = || DurableTimers::builder().redis(&url).namespace("replay");
    let switch = Arc::new(Switch::default());
    let timers = node(builder(), &switch);
    replays(&timers, &switch);
    shutdown_stops_a_replay(timers, || builder().build().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_timers_replay_and_await_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let switch = Arc::new(Switch::default());
    let timers = Arc::new(node(
        DurableTimers::builder().embedded(dir.path().join("timers")),
        &switch,
    ));
    let sync = timers.clone();
    let s = switch.clone();
    tokio::task::spawn_blocking(move || make_dead_letters(&sync, &s))
        .await
        .unwrap();
    let timers = wheel_durable::AsyncTimers::new(timers);
    let filter = DeadFilter::default().reason("from c");
    let end = timers
        .replay_dead(&filter, 1_000.0, None)
        .await
        .unwrap()
        .wait_async()
        .await;
    assert_eq!(
        (end.matched, end.revived, end.state),
        (OTHERS as u64, OTHERS as u64, ReplayState::Done)
    );
    let bad = timers.replay_dead(&filter, f64::NAN, None).await;
    assert!(bad.unwrap_err().is_input());
    timers.shutdown().await.unwrap();
}
