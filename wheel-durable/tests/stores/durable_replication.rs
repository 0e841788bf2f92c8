//! Acknowledged means replicated, when asked (`DurableTimersBuilder::replicas`):
//! a Redis master with one replica, as real processes. The replica is
//! frozen (SIGSTOP) to stand for one that has fallen behind; for a
//! failover it is also cut off from the master (as by a partition), so
//! that nothing in its socket buffer reaches it on thawing and what the
//! failover loses is known in advance: without the option, every add
//! acknowledged since the cut; with it, nothing acknowledged.

use crate::durable_common;

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime};

use durable_common::{Recorder, eventually};
use wheel_durable::{DurableError, DurableTimers, DurableTimersBuilder, Outcome};
use wheel_testkit::{RedisServer, ServerOptions};

const NS: &str = "repl";
const WAIT: Duration = Duration::from_millis(200);

fn client(server: &RedisServer) -> DurableTimersBuilder {
    DurableTimers::builder().redis(&server.url()).namespace(NS)
}

fn replicated(server: &RedisServer) -> DurableTimersBuilder {
    client(server).replicas(1, WAIT)
}

/// A master and a replica that holds everything the master has.
fn pair() -> Option<(RedisServer, RedisServer)> {
    let master = RedisServer::for_test(ServerOptions::default())?;
    let replica = RedisServer::replica_of(&master).expect("start a replica");
    Some((master, replica))
}

pub(crate) fn tomorrow() -> SystemTime {
    SystemTime::now() + Duration::from_secs(24 * 3600)
}

/// Adds `n` timers named `{prefix}{i}` due tomorrow; the keys acknowledged,
/// and the errors of the others.
pub(crate) fn add_all(
    t: &DurableTimers,
    prefix: &str,
    n: usize,
) -> (Vec<String>, Vec<DurableError>) {
    let (mut acked, mut failed) = (Vec::new(), Vec::new());
    for i in 0..n {
        let key = format!("{prefix}{i}");
        match t.add_at(&key, tomorrow(), b"x") {
            Ok(()) => acked.push(key),
            Err(e) => failed.push(e),
        }
    }
    (acked, failed)
}

/// The keys among `keys` that `t`'s store holds.
pub(crate) fn present(t: &DurableTimers, keys: &[String]) -> usize {
    keys.iter()
        .filter(|k| t.get(k).expect("read the store").is_some())
        .count()
}

/// Freezes the replica and cuts its link: the master's writes from now on
/// never reach it.
fn cut_off(master: &RedisServer, replica: &RedisServer) {
    replica.pause().unwrap();
    master.disconnect_replicas().unwrap();
}

/// Kills the master, thaws the replica and promotes it; a client on it.
fn fail_over(mut master: RedisServer, mut replica: RedisServer) -> (RedisServer, DurableTimers) {
    master.kill();
    replica.resume().unwrap();
    replica.promote().unwrap();
    let t = client(&replica)
        .build()
        .expect("a client on the promoted replica");
    (replica, t)
}

fn not_replicated(e: &DurableError) -> bool {
    *e == DurableError::NotReplicated {
        wanted: 1,
        confirmed: 0,
    }
}

#[test]
fn with_a_live_replica_every_acknowledged_write_is_on_it() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let t = replicated(&master).build().unwrap();
    let (acked, failed) = add_all(&t, "a", 200);
    assert!(failed.is_empty(), "{failed:?}");
    // Read from the replica at once, without waiting for it to catch up:
    // the confirmation came after it had applied each add.
    let on_replica = client(&replica).build().unwrap();
    assert_eq!(present(&on_replica, &acked), 200);
    // Other writes wait as well, and succeed.
    assert!(t.cancel("a0").unwrap());
    assert!(t.reset_at("a1", tomorrow()).unwrap());
    assert_eq!(on_replica.get("a0").unwrap(), None);
    // A node's claims, starts and finishes wait too: each timer fires once.
    let rec = Recorder::new();
    let node = replicated(&master)
        .handler(rec.handler(0, |_| Outcome::Done))
        .build()
        .unwrap();
    for i in 0..30 {
        t.add(&format!("due{i}"), Duration::from_millis(100), b"")
            .unwrap();
    }
    let runs = rec.wait_for(30);
    let keys: HashSet<&str> = runs.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys.len(), 30, "a timer ran twice");
    node.shutdown().unwrap();
}

#[test]
fn with_the_replica_frozen_a_write_fails_with_the_typed_error_after_the_timeout() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let t = replicated(&master).build().unwrap();
    t.add_at("before", tomorrow(), b"").unwrap();
    replica.pause().unwrap();
    let started = Instant::now();
    let e = t.add_at("during", tomorrow(), b"").unwrap_err();
    assert!(not_replicated(&e), "{e:?}");
    assert!(started.elapsed() >= WAIT, "it waited the whole timeout");
    assert!(!e.is_input());
    let e = t.cancel("before").unwrap_err();
    assert!(not_replicated(&e), "{e:?}");
    // Reads wait for no replica.
    assert!(t.get("during").unwrap().is_some(), "made on the master");
    replica.resume().unwrap();
    replica.wait_caught_up(&master).unwrap();
    // The same add again is confirmed, and with it the first try.
    t.add_at("during", tomorrow(), b"").unwrap();
}

#[test]
fn without_the_option_a_failover_loses_every_add_the_replica_had_not_received() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let t = client(&master).build().unwrap();
    let (before, failed) = add_all(&t, "b", 20);
    assert!(failed.is_empty(), "{failed:?}");
    replica.wait_caught_up(&master).unwrap();
    cut_off(&master, &replica);
    let (during, failed) = add_all(&t, "d", 30);
    assert!(
        failed.is_empty(),
        "the master acknowledges every add: {failed:?}"
    );
    drop(t);
    let (_promoted, t) = fail_over(master, replica);
    assert_eq!(present(&t, &before), 20);
    let lost = during.len() - present(&t, &during);
    assert_eq!(lost, 30, "every add acknowledged since the cut");
}

#[test]
fn with_the_option_a_failover_loses_no_acknowledged_add() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let t = replicated(&master).build().unwrap();
    let (mut acked, failed) = add_all(&t, "b", 20);
    assert!(failed.is_empty(), "{failed:?}");
    cut_off(&master, &replica);
    let (during, failed) = add_all(&t, "d", 5);
    assert!(
        during.is_empty(),
        "nothing confirmed since the cut: {during:?}"
    );
    assert_eq!(failed.len(), 5);
    assert!(failed.iter().all(not_replicated), "{failed:?}");
    acked.extend(during);
    drop(t);
    let (_promoted, t) = fail_over(master, replica);
    let lost = acked.len() - present(&t, &acked);
    assert_eq!(lost, 0, "an acknowledged add is gone");
}

/// The node meets the error on its claims, starts and finishes while the
/// replica is frozen (for less than a lease, so no run outlives its lease
/// unrecorded), retries, and once it is back fires every timer, each once.
#[test]
fn a_node_rides_out_a_frozen_replica_without_losing_or_repeating_a_timer() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let t = replicated(&master).build().unwrap();
    let rec = Recorder::new();
    let node = replicated(&master)
        .handler(rec.handler(0, |_| Outcome::Done))
        .build()
        .unwrap();
    let keys: Vec<String> = (0..20).map(|i| format!("n{i}")).collect();
    for k in &keys {
        t.add(k, Duration::from_millis(300), b"").unwrap();
    }
    replica.pause().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    replica.resume().unwrap();
    // Once every timer has ended in the store, none can run again.
    eventually("every timer ended", || present(&t, &keys) == 0);
    let runs = rec.runs();
    let ran: HashSet<&str> = runs.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(ran.len(), 20, "a timer was lost");
    assert_eq!(runs.len(), 20, "a timer ran twice");
    node.shutdown().unwrap();
}

#[test]
fn replicas_need_redis_and_a_timeout_of_at_least_a_millisecond() {
    let dir = tempfile::tempdir().unwrap();
    let e = DurableTimers::builder()
        .embedded(dir.path().join("timers"))
        .replicas(1, WAIT)
        .build()
        .unwrap_err();
    assert!(matches!(e, DurableError::Config(_)), "{e:?}");
    // Zero replicas is the default: nothing to wait for, on any store.
    let t = DurableTimers::builder()
        .embedded(dir.path().join("timers"))
        .replicas(0, Duration::ZERO)
        .build()
        .unwrap();
    t.shutdown().unwrap();
    let e = DurableTimers::builder()
        .redis("redis://127.0.0.1:1/0")
        .replicas(1, Duration::from_micros(999))
        .build()
        .unwrap_err();
    assert!(matches!(e, DurableError::Config(_)), "{e:?}");
}
