//! The Redis store in a Redis Cluster (`redis_cluster`), as real
//! processes on loopback: a namespace split into partitions over 3
//! masters, a live move of its slots while 3 nodes fire, and a master
//! killed and its replica promoted, with and without `replicas`: the
//! lost, early and repeated timers are counted.

use crate::durable_common;
use crate::durable_replication::{add_all, present, tomorrow};

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use durable_common::{Recorder, Run, assert_none_early, eventually};
use wheel_durable::{DurableError, DurableTimers, DurableTimersBuilder, Listing, Outcome};
use wheel_testkit::RedisCluster;

fn client(c: &RedisCluster, ns: &str) -> DurableTimersBuilder {
    DurableTimers::builder()
        .redis_cluster(c.urls())
        .namespace(ns)
        .unavailable_after(Duration::from_secs(10))
}

/// Each master's keys of namespace `ns` (its partitions' tags begin
/// `{ns/`), by the hash slot they live in.
fn slots_of(c: &RedisCluster, ns: &str) -> HashMap<u16, u16> {
    let mut slots = HashMap::new();
    for m in c.masters().unwrap() {
        for k in c.keys_on(m, &format!("{{{ns}/*")).unwrap() {
            slots.insert(c.slot_of(&k).unwrap(), m);
        }
    }
    slots
}

/// Every run once, none early.
fn assert_once_each(runs: &[Run], keys: &[String]) {
    assert_none_early(runs);
    let mut count: HashMap<&str, usize> = HashMap::new();
    for r in runs {
        *count.entry(r.key.as_str()).or_default() += 1;
    }
    let lost: Vec<_> = keys
        .iter()
        .filter(|k| !count.contains_key(k.as_str()))
        .collect();
    let twice: Vec<_> = count.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        lost.is_empty(),
        "{} lost: {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    assert!(twice.is_empty(), "{} ran twice: {twice:?}", twice.len());
}

#[test]
fn a_partitioned_namespace_spreads_over_the_masters_and_answers_as_one() {
    let _heavy = durable_common::heavy();
    let Some(cluster) = RedisCluster::for_test(3, 0) else {
        return;
    };
    let t = client(&cluster, "spread").partitions(3).build().unwrap();
    let base = tomorrow();
    let keys: Vec<String> = (0..300).map(|i| format!("k{i:03}")).collect();
    let timers: Vec<(&str, SystemTime, &[u8])> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            (
                k.as_str(),
                base + Duration::from_millis(i as u64),
                &b"x"[..],
            )
        })
        .collect();
    t.add_many(&timers).unwrap();
    // One partition per master: each holds a share of the timers.
    let slots = slots_of(&cluster, "spread");
    let masters: HashSet<u16> = slots.values().copied().collect();
    assert_eq!((slots.len(), masters.len()), (3, 3), "{slots:?}");
    // One listing in due order across the partitions, paged by one cursor.
    let mut page = t.list(Listing::Pending, 7).unwrap();
    let mut listed: Vec<String> = Vec::new();
    loop {
        listed.extend(page.timers.iter().map(|i| i.key.clone()));
        match page.next {
            Some(next) => page = t.list_after(&next, 7).unwrap(),
            None => break,
        }
    }
    assert_eq!(listed, keys);
    assert!(t.get("k005").unwrap().is_some());
    assert!(t.cancel("k005").unwrap());
    assert!(t.get("k005").unwrap().is_none());
    assert!(t.reset_at("k006", base).unwrap());
    eventually("the counts", || t.stats().pending == Some(299));
    // Another count would look for timers where they are not.
    let e = client(&cluster, "spread")
        .partitions(2)
        .build()
        .unwrap_err();
    assert!(matches!(e, DurableError::Config(_)), "{e:?}");
    let e = client(&cluster, "spread").build().unwrap_err();
    assert!(matches!(e, DurableError::Config(_)), "{e:?}");
    // Flow limits cannot be checked across partitions.
    let e = t
        .set_flow_limits("acme", &wheel_durable::FlowLimits::new().parallelism(1))
        .unwrap_err();
    assert!(matches!(e, DurableError::Config(_)), "{e:?}");
    t.shutdown().unwrap();
}

/// A client and 3 nodes from `builder`, and `n` timers `{prefix}{i}` added
/// through the client, due `lead_ms + i * every_ms` ms from now.
fn firing(
    builder: impl Fn() -> DurableTimersBuilder,
    prefix: &str,
    n: u64,
    lead_ms: u64,
    every_ms: u64,
) -> (DurableTimers, Recorder, Vec<DurableTimers>, Vec<String>) {
    let t = builder().build().unwrap();
    let rec = Recorder::new();
    let nodes: Vec<DurableTimers> = (0..3)
        .map(|i| {
            builder()
                .handler(rec.handler(i, |_| Outcome::Done))
                .build()
                .unwrap()
        })
        .collect();
    let keys: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
    let now = SystemTime::now();
    let timers: Vec<(&str, SystemTime, &[u8])> = keys
        .iter()
        .zip(0u64..)
        .map(|(k, i)| {
            let due = now + Duration::from_millis(lead_ms + every_ms * i);
            (k.as_str(), due, &b""[..])
        })
        .collect();
    t.add_many(&timers).unwrap();
    (t, rec, nodes, keys)
}

#[test]
fn three_nodes_fire_every_timer_once_while_the_slots_move() {
    let _heavy = durable_common::heavy();
    let Some(cluster) = RedisCluster::for_test(3, 0) else {
        return;
    };
    let ns = "reshard";
    let b = || client(&cluster, ns).partitions(3);
    let (t, rec, nodes, keys) = firing(b, "r", 1_500, 500, 2);
    // While they fire, every partition's slot moves to the next master,
    // its keys two at a time.
    let masters = cluster.masters().unwrap();
    for (slot, from) in slots_of(&cluster, ns) {
        let i = masters.iter().position(|m| *m == from).unwrap();
        let to = masters[(i + 1) % masters.len()];
        cluster
            .move_slot(slot, to, 2, Duration::from_millis(50))
            .unwrap();
        assert_eq!(cluster.master_of(slot).unwrap(), to);
    }
    let runs = rec.wait_for(keys.len());
    std::thread::sleep(Duration::from_millis(300)); // room for a late repeat
    assert_once_each(&rec.runs(), &keys);
    assert_eq!(runs.len(), keys.len());
    eventually("nothing pending", || t.stats().pending == Some(0));
    for n in nodes {
        n.shutdown().unwrap();
    }
}

/// A failover of the namespace's master after its replica was cut off:
/// the adds acknowledged since then, and how many of them the promoted
/// replica lacks.
fn failover_after_a_cut(replicated: bool) -> (usize, usize, Vec<DurableError>) {
    let _heavy = durable_common::heavy();
    let Some(mut cluster) = RedisCluster::for_test(3, 1) else {
        return (0, 0, Vec::new());
    };
    let ns = if replicated { "fo-r" } else { "fo" };
    let sure = client(&cluster, ns)
        .replicas(1, Duration::from_secs(2))
        .build()
        .unwrap();
    let (before, failed) = add_all(&sure, "b", 20);
    assert!(failed.is_empty(), "{failed:?}");
    let slot = cluster.slot_of(&format!("{{{ns}}}:t")).unwrap();
    cluster.cut_replica(slot).unwrap();
    let t = if replicated {
        client(&cluster, ns)
            .replicas(1, Duration::from_millis(200))
            .build()
            .unwrap()
    } else {
        client(&cluster, ns).build().unwrap()
    };
    let (during, failed) = add_all(&t, "d", 30);
    drop((t, sure));
    cluster.fail_over(slot).unwrap();
    let after = client(&cluster, ns).build().unwrap();
    assert_eq!(present(&after, &before), 20, "confirmed before the cut");
    let lost = during.len() - present(&after, &during);
    (during.len(), lost, failed)
}

#[test]
fn without_replicas_a_failover_loses_every_add_acknowledged_since_the_cut() {
    let (acked, lost, failed) = failover_after_a_cut(false);
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!((acked, lost), (30, 30));
}

#[test]
fn with_replicas_a_failover_loses_no_acknowledged_add() {
    let (acked, lost, failed) = failover_after_a_cut(true);
    if !RedisCluster::available() {
        return;
    }
    assert_eq!((acked, lost), (0, 0));
    assert_eq!(failed.len(), 30);
    let typed = DurableError::NotReplicated {
        wanted: 1,
        confirmed: 0,
    };
    assert!(failed.iter().all(|e| *e == typed), "{failed:?}");
}

#[test]
fn three_nodes_ride_out_a_failover_of_one_partition_with_replicas() {
    let _heavy = durable_common::heavy();
    let Some(mut cluster) = RedisCluster::for_test(3, 1) else {
        return;
    };
    let ns = "ride";
    let b = || {
        client(&cluster, ns)
            .partitions(3)
            .replicas(1, Duration::from_secs(1))
    };
    let (_t, rec, nodes, keys) = firing(b, "f", 900, 300, 3);
    // A third of the way in, one partition's master dies. Until its old
    // master is back as the new one's replica, that partition's writes
    // cannot be confirmed; the other partitions fire on.
    rec.wait_for(300);
    let slot = *slots_of(&cluster, ns).keys().next().unwrap();
    cluster.fail_over(slot).unwrap();
    cluster.restart_killed().unwrap();
    rec.wait_for(keys.len());
    std::thread::sleep(Duration::from_millis(300));
    assert_once_each(&rec.runs(), &keys);
    for n in nodes {
        n.shutdown().unwrap();
    }
}
