//! Durable timers on Redis with several nodes in one process: exactly once
//! without faults, cancel and reschedule across nodes, a Redis restart,
//! long handlers. A skewed store clock is tested inside the crate
//! (`store::redis::tests`), where the store's clock can be set.
//! Each test starts its own `redis-server` (see
//! `wheel_testkit::RedisServer`).

use crate::durable_common;
use crate::durable_listing;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use durable_common::{Recorder, assert_none_early, eventually};
use wheel_durable::{
    DurableError, DurableStats, DurableTimers, DurableTimersBuilder, Outcome, TimerState,
};
use wheel_testkit::{RedisServer, ServerOptions};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn node(url: &str, ns: &str) -> DurableTimersBuilder {
    DurableTimers::builder().redis(url).namespace(ns)
}

#[test]
fn three_nodes_fire_each_of_20_000_timers_exactly_once_never_early() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let rec = Recorder::new();
    let nodes: Vec<DurableTimers> = (0..3)
        .map(|i| {
            node(&server.url(), "x3")
                .handler(rec.handler(i, |_| Outcome::Done))
                .build()
                .unwrap()
        })
        .collect();
    let client = Arc::new(node(&server.url(), "x3").build().unwrap());
    let start = SystemTime::now() + ms(1_000);
    let adders: Vec<_> = (0..4u64)
        .map(|t| {
            let client = client.clone();
            std::thread::spawn(move || {
                for i in (t..20_000).step_by(4) {
                    let due = start + Duration::from_micros(i * 150); // over 3 s
                    client.add_at(&format!("t{i}"), due, b"x").unwrap();
                }
            })
        })
        .collect();
    for a in adders {
        a.join().unwrap();
    }
    let runs = rec.wait_for(20_000);
    assert_none_early(&runs);
    let keys: HashSet<&str> = runs.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys.len(), 20_000, "a timer ran twice");
    let per_node: Vec<usize> = (0..3)
        .map(|n| runs.iter().filter(|r| r.node == n).count())
        .collect();
    eprintln!("runs per node: {per_node:?}");
    std::thread::sleep(ms(300));
    assert_eq!(rec.runs().len(), 20_000, "a timer ran twice");
    let fired: u64 = nodes.iter().map(|n| n.stats().fired).sum();
    assert_eq!(fired, 20_000);
    for n in nodes {
        n.shutdown().unwrap();
    }
}

/// Adds of timers due soon while three nodes run: every node hears of the
/// ones due within its poll, yet claims stay few (a node folds the
/// notifications into its plan), and every timer fires once, none early.
#[test]
fn a_burst_of_near_due_adds_costs_each_node_few_claims() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let rec = Recorder::new();
    let nodes: Vec<DurableTimers> = (0..3)
        .map(|i| {
            node(&server.url(), "burst")
                .handler(rec.handler(i, |_| Outcome::Done))
                .build()
                .unwrap()
        })
        .collect();
    let client = Arc::new(node(&server.url(), "burst").build().unwrap());
    let adders: Vec<_> = (0..4u64)
        .map(|t| {
            let client = client.clone();
            std::thread::spawn(move || {
                for i in (t..3_000).step_by(4) {
                    // Due 100 to 1 300 ms after its add.
                    let due = SystemTime::now() + ms(100 + (i * 7) % 1_200);
                    client.add_at(&format!("b{i}"), due, b"x").unwrap();
                }
            })
        })
        .collect();
    for a in adders {
        a.join().unwrap();
    }
    let runs = rec.wait_for(3_000);
    assert_none_early(&runs);
    let keys: HashSet<&str> = runs.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys.len(), 3_000, "a timer ran twice");
    for n in nodes {
        let claims = n.stats().claims;
        eprintln!("claims of a node: {claims}");
        // One claim per add on every node would be 3 000 each.
        assert!(claims < 600, "{claims} claims for 3 000 adds");
        n.shutdown().unwrap();
    }
}

/// On Redis a claim outlives its node until the lease ends, so only the
/// hand-back at shutdown makes the other node fire these on time: 200
/// claimed timers, one `release` batch, all pending again at once.
#[test]
fn shutdown_hands_every_claim_back_at_once() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let rec = Recorder::new();
    let a = node(&server.url(), "back")
        .claim_ahead(ms(5_000))
        .lease(ms(60_000))
        .handler(rec.handler(0, |_| Outcome::Done))
        .build()
        .unwrap();
    let client = node(&server.url(), "back").build().unwrap();
    let due = SystemTime::now() + ms(2_500);
    let keys: Vec<String> = (0..200).map(|i| format!("h{i}")).collect();
    let items: Vec<(&str, SystemTime, &[u8])> =
        keys.iter().map(|k| (k.as_str(), due, &b"x"[..])).collect();
    client.add_many(&items).unwrap();
    eventually("every claim", || a.stats().held == 200);
    a.shutdown().unwrap();
    assert!(rec.runs().is_empty());
    for k in &keys {
        assert_eq!(client.get(k).unwrap().unwrap().state, TimerState::Pending);
    }
    let b = node(&server.url(), "back")
        .handler(rec.handler(1, |_| Outcome::Done))
        .build()
        .unwrap();
    let runs = rec.wait_for(200);
    assert!(runs.iter().all(|r| r.node == 1));
    assert_none_early(&runs);
    // On time: well within the 60 s lease the claims would have waited.
    let last = runs.iter().map(|r| r.at).max().unwrap();
    assert!(last < due + ms(2_000), "handed back, not left to the lease");
    b.shutdown().unwrap();
    client.shutdown().unwrap();
}

#[test]
fn a_claimed_timer_is_cancelled_or_moved_from_another_node() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let rec = Recorder::new();
    let a = node(&server.url(), "ab")
        .claim_ahead(ms(5_000))
        .handler(rec.handler(0, |_| Outcome::Done))
        .build()
        .unwrap();
    let b = node(&server.url(), "ab").build().unwrap();
    b.add("cancel-me", ms(800), b"").unwrap();
    b.add("move-me", ms(800), b"").unwrap();
    b.add("keep-me", ms(1_000), b"").unwrap();
    eventually("node A to hold all three", || a.stats().held == 3);
    assert_eq!(
        b.get("cancel-me").unwrap().unwrap().state,
        TimerState::Claimed
    );
    assert!(b.cancel("cancel-me").unwrap());
    let later = SystemTime::now() + ms(1_500);
    assert!(b.reset_at("move-me", later).unwrap());
    let runs = rec.wait_for(2);
    assert_eq!(runs[0].key, "keep-me");
    assert_eq!(runs[1].key, "move-me");
    assert!(runs[1].at >= later);
    std::thread::sleep(ms(200));
    assert_eq!(rec.runs().len(), 2, "the cancelled timer ran");
    a.shutdown().unwrap();
}

#[test]
fn nodes_reconnect_after_a_redis_restart_and_nothing_acked_is_lost() {
    let Some(mut server) = RedisServer::for_test(ServerOptions { aof: true }) else {
        return;
    };
    let rec = Recorder::new();
    let nodes: Vec<DurableTimers> = (0..2)
        .map(|i| {
            node(&server.url(), "rs")
                .unavailable_after(ms(10_000))
                .handler(rec.handler(i, |_| Outcome::Done))
                .build()
                .unwrap()
        })
        .collect();
    let client = node(&server.url(), "rs")
        .unavailable_after(ms(10_000))
        .build()
        .unwrap();
    let start = SystemTime::now();
    for i in 0..500u64 {
        client
            .add_at(&format!("r{i}"), start + ms(500 + i * 6), b"")
            .unwrap();
    }
    std::thread::sleep(ms(700));
    server.restart().unwrap(); // SIGKILL, then start again on the same AOF
    for i in 500..600u64 {
        client
            .add_at(&format!("r{i}"), SystemTime::now() + ms(200), b"")
            .unwrap();
    }
    rec.wait_for(600);
    let by_key = rec.by_key();
    assert_eq!(by_key.len(), 600, "a timer was lost");
    let dup = by_key.values().filter(|r| r.len() > 1).count();
    eprintln!("runs repeated across the restart: {dup}");
    assert_none_early(&rec.runs());
    for n in nodes {
        n.shutdown().unwrap();
    }
}

#[test]
fn a_handler_longer_than_its_lease_is_not_run_twice() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let rec = Recorder::new();
    let nodes: Vec<DurableTimers> = (0..2)
        .map(|i| {
            node(&server.url(), "long")
                .lease(ms(300))
                .poll(ms(100))
                .claim_ahead(ms(200))
                .handler(rec.handler(i, |_| {
                    std::thread::sleep(ms(1_200)); // four leases
                    Outcome::Done
                }))
                .build()
                .unwrap()
        })
        .collect();
    nodes[0].add("slow", ms(50), b"").unwrap();
    rec.wait_for(1);
    eventually("the run to finish", || {
        nodes[0].get("slow").unwrap().is_none()
    });
    assert_eq!(rec.runs().len(), 1, "renewals should keep the lease");
    for n in nodes {
        n.shutdown().unwrap();
    }
}

#[test]
fn an_unreachable_server_is_reported_as_unavailable_with_its_cause() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let called = std::time::Instant::now();
    let e = DurableTimers::builder()
        .redis(&format!("redis://127.0.0.1:{port}/0"))
        .unavailable_after(ms(500))
        .build()
        .unwrap_err();
    assert!(matches!(e, DurableError::Unavailable(_)), "{e:?}");
    // It retried for the whole bound, not a back-off step less.
    assert!(
        called.elapsed() >= ms(500),
        "gave up after {:?}",
        called.elapsed()
    );
    // The client's own error is kept as the cause.
    let cause = std::error::Error::source(&e).expect("a cause");
    let redis = cause
        .downcast_ref::<redis::RedisError>()
        .unwrap_or_else(|| panic!("not a RedisError: {cause:?}"));
    assert!(
        redis.is_io_error() || redis.is_connection_refusal(),
        "{redis:?}"
    );
    assert!(e.to_string().contains(&redis.to_string()), "{e}");
}

/// Polls `stats` every 100 ms while Redis is killed under a node and
/// started again: the calls during the outage say so and keep the last
/// counts, and fresh counts come back with the server. How long the calls
/// take is a figure of the comparison's outages table, not asserted.
#[test]
fn stats_keeps_the_last_counts_through_a_redis_outage() {
    let Some(mut server) = RedisServer::for_test(ServerOptions { aof: true }) else {
        return;
    };
    let timers = node(&server.url(), "outage")
        .handler(|_| Outcome::Done)
        .build()
        .unwrap();
    let later = SystemTime::now() + Duration::from_secs(3600);
    for i in 0..50 {
        timers.add_at(&format!("o{i}"), later, b"").unwrap();
    }
    eventually("fresh counts", || {
        let s = timers.stats();
        s.store_available && s.pending == Some(50)
    });
    // Each poll: what it said.
    let poll = |n: usize| -> Vec<DurableStats> {
        (0..n)
            .map(|_| {
                let s = timers.stats();
                std::thread::sleep(ms(100));
                s
            })
            .collect()
    };
    server.kill();
    let down = poll(30);
    server.restart().unwrap();
    eventually("counts back with the server", || {
        let s = timers.stats();
        s.store_available && s.pending == Some(50) && s.store_counts_age < Some(ms(1_000))
    });
    let first_down = down
        .iter()
        .position(|s| !s.store_available)
        .expect("the outage was never reported");
    assert!(first_down <= 2, "noticed only at poll {first_down}");
    for s in &down[first_down..] {
        assert!(!s.store_available, "available again while killed");
        assert_eq!(s.pending, Some(50), "the last counts read");
    }
    let ages: Vec<Duration> = down.iter().filter_map(|s| s.store_counts_age).collect();
    assert!(
        ages.last() > ages.first(),
        "the counts' age grows: {ages:?}"
    );
    timers.shutdown().unwrap();
}

/// Pages read alternately by two clients from the other's cursor token.
#[test]
fn pages_of_10_000_timers_are_stable_while_timers_come_and_go() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let a = node(&server.url(), "list").build().unwrap();
    let b = node(&server.url(), "list").build().unwrap();
    durable_listing::pages_are_stable_while_timers_come_and_go(&[&a, &b]);
}

#[test]
fn one_of_8_clients_adding_one_key_if_absent_wins() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let clients: Vec<Arc<DurableTimers>> = (0..8)
        .map(|_| Arc::new(node(&server.url(), "race").build().unwrap()))
        .collect();
    durable_listing::one_of_racing_adds_if_absent_wins(&clients);
}

#[test]
fn dead_letters_are_listed_with_their_failure() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let timers = node(&server.url(), "dead")
        .handler(durable_listing::failing)
        .build()
        .unwrap();
    durable_listing::dead_letters_are_listed_with_their_failure(&timers);
}
