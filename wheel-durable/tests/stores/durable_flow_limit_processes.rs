//! The acceptance tests of flow limits, across real processes: three
//! `durable_node` processes sending HTTP callbacks of one origin (one flow
//! key) from one Redis namespace to a loopback receiver, with the limits
//! set from this process through the library.
//!
//! - A rate of 500/s on 10 000 callbacks due at once: every full second
//!   from the first arrival carries 500 ± 5 %, none early, none lost,
//!   none twice.
//! - A parallelism of 20 against a receiver that answers after 100 ms: it
//!   never holds more than 20; a node killed with SIGKILL while it holds
//!   permits keeps them until its runs' leases end, then the others take
//!   them back and every callback arrives.
//! - The default breaker against a receiver that answers 503 for 30 s
//!   while 1 000 callbacks come due: a handful of requests during the
//!   outage, then each callback once, and no attempt spent while it was
//!   open.
//!
//! They run one at a time (`durable_common::heavy`): each keeps three node processes and
//! a Redis server busy, and the rate test reads arrival times.

use crate::durable_processes::ChildNode;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wheel_durable::http::{HttpCallback, Method};
use wheel_durable::{BreakerState, CircuitBreaker, DurableTimers, FlowLimits};
use wheel_testkit::{
    LIVENESS, Received, Receiver, ReceiverOptions, RedisServer, Reply, ServerOptions, eventually,
    eventually_within,
};

const HEADERS: [&str; 3] = ["wheel-timer-key", "wheel-due", "wheel-attempt"];

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn unix_ms(t: SystemTime) -> u64 {
    u64::try_from(t.duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// `n` ms from now, in whole milliseconds (as the store keeps due times).
fn in_ms(n: u64) -> SystemTime {
    UNIX_EPOCH + ms(unix_ms(SystemTime::now()) + n)
}

/// A number the node put in a header of `r`.
fn number(r: &Received, header: &str) -> u64 {
    let v = r
        .header(header)
        .unwrap_or_else(|| panic!("{header} missing"));
    v.parse().unwrap_or_else(|e| panic!("{header} {v}: {e}"))
}

fn key_of(r: &Received) -> String {
    r.header("wheel-timer-key").unwrap().to_owned()
}

/// Three `--fire --http` nodes on namespace `ns` of `url`, ready, with
/// `extra` arguments, and a client of the same namespace.
fn cluster(url: &str, ns: &str, extra: &[&str]) -> (Vec<ChildNode>, DurableTimers) {
    let mut args = vec![
        "--redis",
        url,
        "--namespace",
        ns,
        "--poll-ms",
        "200",
        "--claim-ahead-ms",
        "1000",
        "--http",
        "--fire",
    ];
    args.extend_from_slice(extra);
    let nodes: Vec<ChildNode> = (0..3).map(|_| ChildNode::spawn(&args)).collect();
    for node in &nodes {
        assert_eq!(node.line(), "ready");
    }
    let client = DurableTimers::builder()
        .redis(url)
        .namespace(ns)
        .build()
        .unwrap();
    (nodes, client)
}

/// Adds `n` callbacks `{prefix}:{i}` to `rx`, due at `due(i)`; returns
/// each key's due time in Unix ms.
fn add_callbacks(
    client: &DurableTimers,
    rx: &Receiver,
    prefix: &str,
    n: u64,
    due: impl Fn(u64) -> SystemTime,
) -> HashMap<String, u64> {
    let cb = HttpCallback::new(Method::Post, rx.url("/hook"));
    let timers: Vec<(String, SystemTime)> = (0..n)
        .map(|i| (format!("{prefix}:{i:05}"), due(i)))
        .collect();
    for chunk in timers.chunks(1000) {
        let batch: Vec<(&str, SystemTime, &HttpCallback)> =
            chunk.iter().map(|(k, d)| (k.as_str(), *d, &cb)).collect();
        let answers = client.add_callbacks_or_get(&batch).unwrap();
        assert!(answers.iter().all(|a| a.is_added()));
    }
    timers.into_iter().map(|(k, d)| (k, unix_ms(d))).collect()
}

/// Each request arrived at or after its due time (`Wheel-Due`, which the
/// store keeps to the ms).
fn assert_none_early(got: &[Received]) {
    for r in got {
        let due = UNIX_EPOCH + ms(number(r, "wheel-due"));
        assert!(r.at >= due, "{} arrived before its due time", key_of(r));
    }
}

/// Waits until `store` holds no timer of the namespace.
fn wait_empty(client: &DurableTimers) {
    eventually("the store to be empty", || {
        let s = client.stats();
        (s.pending, s.claimed, s.parked) == (Some(0), Some(0), Some(0))
    });
}

#[test]
fn three_nodes_send_one_origin_at_its_rate_every_second() {
    let _heavy = crate::durable_common::heavy();
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    const N: u64 = 10_000;
    const RATE: usize = 500;
    let rx = Receiver::start_with(ReceiverOptions::new().only_headers(&HEADERS), |_, _| {
        Reply::status(200)
    });
    let (nodes, client) = cluster(&server.url(), "rate", &[]);
    let origin = HttpCallback::new(Method::Post, rx.url("/")).flow_key();
    let limits = FlowLimits::new().rate(500, Duration::from_secs(1));
    client.set_flow_limits(&origin, &limits).unwrap();
    let due = in_ms(2_000);
    let dues = add_callbacks(&client, &rx, "rate", N, |_| due);
    // The rate makes this take 20 s at the least.
    let deadline = SystemTime::now() + Duration::from_secs(20) + LIVENESS;
    assert!(
        rx.wait_until(usize::try_from(N).unwrap(), deadline),
        "only {} of {N} arrived",
        rx.count()
    );
    wait_empty(&client);
    for node in nodes {
        node.stop();
    }
    let got = rx.finish();
    assert_eq!(got.len(), dues.len(), "none lost, none twice");
    let keys: HashSet<String> = got.iter().map(key_of).collect();
    assert_eq!(keys.len(), dues.len(), "a callback arrived twice");
    for r in &got {
        assert_eq!(number(r, "wheel-attempt"), 1, "{}", key_of(r));
    }
    assert_none_early(&got);

    let mut at: Vec<SystemTime> = got.iter().map(|r| r.at).collect();
    at.sort();
    let (first, last) = (at[0], at[at.len() - 1]);
    let full = last.duration_since(first).unwrap().as_secs();
    let mut windows = vec![0usize; usize::try_from(full).unwrap()];
    for t in &at {
        let i = usize::try_from(t.duration_since(first).unwrap().as_secs()).unwrap();
        if let Some(w) = windows.get_mut(i) {
            *w += 1;
        }
    }
    eprintln!("rate: arrivals per second from the first: {windows:?}");
    assert!(windows.len() >= 18, "{} full seconds", windows.len());
    for (i, &n) in windows.iter().enumerate() {
        assert!(
            (RATE * 95 / 100..=RATE * 105 / 100).contains(&n),
            "second {i} carried {n}: {windows:?}"
        );
    }
    client.shutdown().unwrap();
}

/// The receiver's in-flight count, sampled every 2 ms until `stop`.
fn sample(rx: &Receiver, stop: &AtomicBool) -> Vec<(SystemTime, usize)> {
    let mut out = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        out.push((SystemTime::now(), rx.in_flight()));
        std::thread::sleep(ms(2));
    }
    out
}

#[test]
fn three_nodes_hold_one_origin_to_its_parallelism_and_a_killed_node_s_permits_come_back() {
    let _heavy = crate::durable_common::heavy();
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    const N: u64 = 1_500;
    const P: usize = 20;
    let lease = ms(3_000);
    let rx = Receiver::start_with(ReceiverOptions::new().only_headers(&HEADERS), |_, _| {
        Reply::status(200).after(ms(100))
    });
    let (mut nodes, client) = cluster(&server.url(), "parallel", &["--lease-ms", "3000"]);
    let origin = HttpCallback::new(Method::Post, rx.url("/")).flow_key();
    let limits = FlowLimits::new().parallelism(u32::try_from(P).unwrap());
    client.set_flow_limits(&origin, &limits).unwrap();
    let dues = add_callbacks(&client, &rx, "par", N, |_| in_ms(1_500));

    let stop = AtomicBool::new(false);
    let (samples, killed_at) = std::thread::scope(|s| {
        let sampler = s.spawn(|| sample(&rx, &stop));
        // About 2 s into the sending (200 a second): every node is busy.
        assert!(rx.wait_until(400, SystemTime::now() + LIVENESS));
        let killed_at = SystemTime::now();
        nodes.remove(0).kill();
        eventually_within(LIVENESS * 2, "every callback to arrive", || {
            let got: HashSet<String> = rx.requests().iter().map(key_of).collect();
            got.len() == dues.len()
        });
        wait_empty(&client);
        stop.store(true, Ordering::SeqCst);
        (sampler.join().unwrap(), killed_at)
    });
    for node in nodes {
        node.stop();
    }
    assert!(rx.max_in_flight() <= P, "{} at once", rx.max_in_flight());
    let got = rx.finish();
    assert_none_early(&got);
    let mut by_key: HashMap<String, Vec<u64>> = HashMap::new();
    for r in &got {
        by_key
            .entry(key_of(r))
            .or_default()
            .push(number(r, "wheel-attempt"));
    }
    assert_eq!(by_key.len(), dues.len(), "none lost");
    // The killed node's runs in flight were sent again, once each, by
    // another node once their leases ended; nothing else was.
    let resent = by_key.values().filter(|a| a.contains(&2)).count();
    for (key, attempts) in &by_key {
        assert!(attempts.iter().all(|&a| a <= 2), "{key}: {attempts:?}");
        assert!(
            attempts.contains(&2) || attempts == &[1],
            "{key}: {attempts:?}"
        );
    }
    assert!(
        (1..=P).contains(&resent),
        "the killed node held {resent} permits"
    );
    // Its permits stay taken while its runs' leases last (renewed every
    // lease / 3, so they last 2 s at the least after the kill): the
    // others hold at most the rest.
    let held = |from: Duration, to: Duration| {
        samples
            .iter()
            .filter(move |(t, _)| *t >= killed_at + from && *t < killed_at + to)
    };
    for (t, n) in held(ms(200), ms(1_000)) {
        assert!(
            *n <= P - resent,
            "{n} in flight {:?} after the kill",
            t.duration_since(killed_at).unwrap()
        );
    }
    let back = held(ms(200), Duration::from_secs(3600)).find(|(_, n)| *n == P);
    let (t, _) = back.expect("the in-flight count came back to the parallelism");
    eprintln!(
        "parallelism: the killed node held {resent} permits; {P} in flight again {:?} after the \
         kill (lease {lease:?})",
        t.duration_since(killed_at).unwrap()
    );
    client.shutdown().unwrap();
}

/// What the receiver answered, in order: each request's key, attempt and
/// status, and when it was answered.
type Answers = Arc<Mutex<Vec<(String, u64, u16, Instant)>>>;

#[test]
fn three_nodes_stop_sending_to_an_origin_in_an_outage_and_send_each_once_after_it() {
    let _heavy = crate::durable_common::heavy();
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    const N: u64 = 1_000;
    let outage = Duration::from_secs(30);
    let up_at = Instant::now() + outage;
    let answers: Answers = Arc::default();
    let log = answers.clone();
    let rx = Receiver::start_with(
        ReceiverOptions::new().only_headers(&HEADERS),
        move |r, _| {
            let now = Instant::now();
            let status = if now < up_at { 503 } else { 200 };
            let attempt = number(r, "wheel-attempt");
            log.lock().unwrap().push((key_of(r), attempt, status, now));
            Reply::status(status)
        },
    );
    let (nodes, client) = cluster(&server.url(), "breaker", &[]);
    let origin = HttpCallback::new(Method::Post, rx.url("/")).flow_key();
    let defaults = FlowLimits::new().breaker(CircuitBreaker::new());
    client.set_default_flow_limits(&defaults).unwrap();
    // One every 25 ms from 1 s on: all due within the outage.
    let start = in_ms(1_000);
    let dues = add_callbacks(&client, &rx, "brk", N, |i| start + ms(i * 25));

    eventually("the breaker to open and park callbacks", || {
        client
            .flows()
            .unwrap()
            .keys
            .iter()
            .any(|k| k.key == origin && k.breaker.state != BreakerState::Closed && k.parked > 0)
    });
    // The third probe comes 35 s after the opening at the earliest.
    eventually_within(
        outage + Duration::from_secs(10) + LIVENESS,
        "all to succeed",
        || {
            let a = answers.lock().unwrap();
            a.iter().filter(|x| x.2 == 200).count() >= dues.len()
        },
    );
    wait_empty(&client);
    for node in nodes {
        node.stop();
    }
    let got = rx.finish();
    assert_none_early(&got);
    let answers = answers.lock().unwrap().clone();
    check_outage(&answers, dues.len());
    let s = client.flows().unwrap();
    let k = s.keys.iter().find(|k| k.key == origin);
    assert!(
        k.is_none_or(|k| k.breaker.state == BreakerState::Closed && k.parked == 0),
        "{k:?}"
    );
    client.shutdown().unwrap();
}

/// The outage's requests: the five failures that opened the breaker and
/// the runs that had already passed the gate when the fifth was recorded,
/// then one probe per cool-down; after it, each callback once; and each
/// callback's attempts are exactly its requests.
fn check_outage(answers: &[(String, u64, u16, Instant)], n: usize) {
    let failed: Vec<Instant> = answers.iter().filter(|a| a.2 == 503).map(|a| a.3).collect();
    // The opening burst ends at the first gap of a cool-down (5 s); each
    // later request is a probe.
    let burst = 1 + failed
        .windows(2)
        .take_while(|w| w[1] - w[0] < Duration::from_secs(4))
        .count();
    let probes = &failed[burst.min(failed.len())..];
    eprintln!(
        "breaker: {} requests during the outage: {burst} before it opened, then probes at {:?} \
         after the first",
        failed.len(),
        probes.iter().map(|p| *p - failed[0]).collect::<Vec<_>>()
    );
    // Five failures open it; runs that passed the gate before the fifth
    // was recorded still send (one due every 25 ms, a 503 recorded within
    // a few ms: 3 is 75 ms of slack).
    assert!(
        (5..=8).contains(&burst),
        "{burst} requests before it opened"
    );
    // Cool-downs of 5 and 10 s fit in a 30 s outage; the third probe comes
    // 35 s after the opening at the earliest, when the target is back.
    assert!(
        probes.len() <= 2,
        "{} probes in a 30 s outage",
        probes.len()
    );
    for w in probes.windows(2) {
        assert!(w[1] - w[0] >= Duration::from_secs(10), "probes too close");
    }
    let mut by_key: HashMap<&str, Vec<(u64, u16)>> = HashMap::new();
    for (key, attempt, status, _) in answers {
        by_key.entry(key).or_default().push((*attempt, *status));
    }
    assert_eq!(by_key.len(), n, "none lost");
    for (key, reqs) in &by_key {
        let attempts: Vec<u64> = reqs.iter().map(|r| r.0).collect();
        let expected: Vec<u64> = (1..=u64::try_from(reqs.len()).unwrap()).collect();
        assert_eq!(
            attempts, expected,
            "{key}: an attempt spent without a request"
        );
        let ok = reqs.iter().filter(|r| r.1 == 200).count();
        assert_eq!(ok, 1, "{key}: {reqs:?}");
        assert_eq!(reqs.last().unwrap().1, 200, "{key}: sent after its success");
    }
    let retried = by_key.values().filter(|r| r.len() > 1).count();
    assert!(
        retried <= failed.len(),
        "{retried} callbacks took more than one attempt"
    );
}
