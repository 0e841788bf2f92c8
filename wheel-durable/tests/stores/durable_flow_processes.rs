//! The acceptance test of pause and resume, across real processes: three
//! `durable_node` processes with HTTP callbacks on one Redis namespace,
//! two loopback receivers (two origins, so two flow keys), one origin
//! paused from this process through the library while its callbacks come
//! due over ten seconds, then resumed.

use crate::durable_common;
use crate::durable_processes::ChildNode;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use durable_common::eventually;
use wheel_durable::DurableTimers;
use wheel_durable::http::{HttpCallback, Method};
use wheel_testkit::{Received, Receiver, RedisServer, ServerOptions};

/// Callbacks of the paused origin: one every 50 ms over 10 s.
const HELD: u64 = 200;
const EVERY_MS: u64 = 50;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A number the node put in a header of `r`.
fn number(r: &Received, header: &str) -> u64 {
    let v = r
        .header(header)
        .unwrap_or_else(|| panic!("{header} missing"));
    v.parse().unwrap_or_else(|e| panic!("{header} {v}: {e}"))
}

fn unix_ms(t: SystemTime) -> u64 {
    u64::try_from(t.duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// Asserts: nothing of the paused origin arrived while it was paused
/// (every one of its callbacks was parked first); after the resume each
/// arrived exactly once, on its first attempt, none before the resume;
/// and the store handed them out in due order.
///
/// The order asserted is the claims' order, across all three nodes: the
/// fences (`Wheel-Fence`), taken in due order from one counter per
/// namespace, strictly grow with the due times (`Wheel-Due`). It holds
/// because the resume makes all 200 parked callbacks pending at once (a
/// resume unparks up to 1000), every claim is one store operation that
/// takes the earliest pending timers first and numbers them in that order,
/// and nothing is handed back after the resume (leases of 5 s, overdue
/// timers started at once). The arrival order at the receiver is not
/// asserted: three processes send concurrently, each over connections of
/// its own, so two requests sent a moment apart may be accepted in either
/// order.
#[test]
fn three_node_processes_park_a_paused_origin_s_callbacks_and_send_each_once_in_due_order() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let url = server.url();
    let held = Receiver::ok();
    let free = Receiver::ok();
    let args = [
        "--redis",
        &url,
        "--namespace",
        "flows",
        "--poll-ms",
        "200",
        "--claim-ahead-ms",
        "1000",
        "--http",
        "--fire",
    ];
    let nodes: Vec<ChildNode> = (0..3).map(|_| ChildNode::spawn(&args)).collect();
    for node in &nodes {
        assert_eq!(node.line(), "ready");
    }
    let client = DurableTimers::builder()
        .redis(&url)
        .namespace("flows")
        .build()
        .unwrap();
    let origin = HttpCallback::new(Method::Post, held.url("/")).flow_key();
    assert!(client.pause_flow(&origin).unwrap());

    // In whole milliseconds, as the store keeps it (`Wheel-Due`).
    let start = UNIX_EPOCH + ms(unix_ms(SystemTime::now()) + 500);
    let mut dues = HashMap::new();
    for i in 0..HELD {
        let due = start + ms(i * EVERY_MS);
        let key = format!("held:{i:03}");
        let cb = HttpCallback::new(Method::Post, held.url(&format!("/held/{i}")));
        client.add_callback_at(&key, due, &cb).unwrap();
        dues.insert(key, unix_ms(due));
        if i % 10 == 0 {
            let cb = HttpCallback::new(Method::Post, free.url(&format!("/free/{i}")));
            client
                .add_callback_at(&format!("free:{i:03}"), due, &cb)
                .unwrap();
        }
    }

    // The other origin is not held up.
    let free_got = free.wait_for(usize::try_from(HELD / 10).unwrap());
    eventually("every callback of the paused origin to be parked", || {
        let flows = client.flows().unwrap();
        flows
            .keys
            .iter()
            .any(|k| k.key == origin && k.parked == HELD)
    });
    assert_eq!(held.count(), 0, "a callback of a paused origin was sent");

    let resumed = SystemTime::now();
    assert!(client.resume_flow(&origin).unwrap());
    held.wait_for(usize::try_from(HELD).unwrap());
    eventually("the store to be empty", || {
        let s = client.stats();
        (s.pending, s.claimed, s.parked) == (Some(0), Some(0), Some(0))
    });
    for node in nodes {
        node.stop();
    }
    check_once_in_due_order(&held.finish(), &dues, resumed);
    let free_all = free.finish();
    let free_keys: HashSet<&str> = free_all
        .iter()
        .map(|r| r.header("wheel-timer-key").unwrap())
        .collect();
    assert_eq!(
        (free_all.len(), free_keys.len()),
        (free_got.len(), free_got.len())
    );
    assert!(client.flows().unwrap().keys.is_empty());
    client.shutdown().unwrap();
}

/// Each of `dues`' keys arrived once, on its first attempt, not before
/// `resumed`; sorted by due time, the fences strictly grow.
fn check_once_in_due_order(got: &[Received], dues: &HashMap<String, u64>, resumed: SystemTime) {
    assert_eq!(got.len(), dues.len(), "one request per callback");
    let mut seen: Vec<(u64, u64, String)> = Vec::new();
    for r in got {
        let key = r.header("wheel-timer-key").unwrap().to_owned();
        assert_eq!(
            number(r, "wheel-attempt"),
            1,
            "{key}: parking spent no attempt"
        );
        assert_eq!(Some(&number(r, "wheel-due")), dues.get(&key), "{key}");
        assert!(r.at >= resumed, "{key} arrived before the resume");
        seen.push((number(r, "wheel-due"), number(r, "wheel-fence"), key));
    }
    seen.sort();
    seen.dedup_by(|a, b| a.2 == b.2);
    assert_eq!(seen.len(), dues.len(), "a callback arrived twice");
    for pair in seen.windows(2) {
        assert!(
            pair[0].1 < pair[1].1,
            "{} (due {}) was claimed after {} (due {})",
            pair[0].2,
            pair[0].0,
            pair[1].2,
            pair[1].0
        );
    }
}
