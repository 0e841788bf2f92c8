//! The durable section's node processes (the hidden `--durable-node` mode
//! of the `wheel-bench` binary) on a private Redis server: they report
//! their handler runs and (ours) the store's answer to each outcome, and a
//! node killed mid window loses nothing of ours and runs nothing again
//! after the store recorded its outcome.
//! Skipped without `redis-server` (unless `WHEEL_REQUIRE_REDIS=1`).

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use wheel_bench::durable::kill::{self, KillParams};
use wheel_bench::durable::node::{Event, Kind, NodeProcess, NodeSpec};
use wheel_testkit::{RedisServer, ServerOptions};

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_wheel-bench"))
}

fn spec(kind: Kind, url: &str) -> NodeSpec {
    NodeSpec {
        kind,
        workers: 2,
        lease_ms: 2_000,
        work_us: 0,
        namespace: "nodes".into(),
        url: url.into(),
    }
}

/// Events of one node until `done` says so or 20 s pass.
fn events_until(
    rx: &mpsc::Receiver<(usize, Event)>,
    mut done: impl FnMut(&[Event]) -> bool,
) -> Vec<Event> {
    let mut seen = Vec::new();
    let give_up = Instant::now() + Duration::from_secs(20);
    while !done(&seen) && Instant::now() < give_up {
        if let Ok((_, ev)) = rx.recv_timeout(Duration::from_millis(50)) {
            seen.push(ev);
        }
    }
    seen
}

fn started(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::Started(..)))
        .count()
}

#[test]
fn node_processes_report_each_run_and_stop_when_their_input_closes() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let url = server.url();
    for kind in [Kind::Ours, Kind::Peer] {
        let (tx, rx) = mpsc::channel();
        let node = NodeProcess::spawn(exe(), &spec(kind, &url), 0, tx).unwrap();
        let ready = events_until(&rx, |e| e.contains(&Event::Ready));
        assert!(ready.contains(&Event::Ready), "{kind:?}: {ready:?}");
        let due = SystemTime::now() + Duration::from_millis(1_500);
        kill::add(kind, &url, "nodes", &[due; 20]).unwrap();
        let seen = events_until(&rx, |e| started(e) == 20);
        assert_eq!(started(&seen), 20, "{kind:?}: {seen:?}");
        if kind == Kind::Peer {
            assert!(seen.iter().any(|e| matches!(e, Event::Took(_))), "{seen:?}");
        }
        node.finish(Duration::from_secs(10));
        let rest: Vec<Event> = rx.try_iter().map(|(_, e)| e).collect();
        assert_eq!(rest.last(), Some(&Event::Gone), "{kind:?}: {rest:?}");
        // A clean stop records every outcome first; each run's report
        // names the fence its start did.
        let all: Vec<&Event> = seen.iter().chain(&rest).collect();
        let runs: std::collections::HashSet<(usize, u64)> = all
            .iter()
            .filter_map(|e| match e {
                Event::Started(i, _, fence) => Some((*i, *fence)),
                _ => None,
            })
            .collect();
        let stored: std::collections::HashSet<(usize, u64)> = all
            .iter()
            .filter_map(|e| match e {
                Event::Settled(i, fence, true) => Some((*i, *fence)),
                _ => None,
            })
            .collect();
        match kind {
            Kind::Ours => assert_eq!(stored, runs, "{all:?}"),
            Kind::Peer => assert!(stored.is_empty(), "{all:?}"),
        }
    }
}

#[test]
fn our_node_killed_mid_window_loses_nothing_and_runs_nothing_early() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let p = KillParams {
        rate: 200,
        window: Duration::from_secs(3),
        lead: Duration::from_millis(500),
        nodes: 3,
        workers: 2,
        lease: Duration::from_secs(1),
        work: Duration::from_millis(1),
        grace: Duration::from_secs(2),
    };
    let r = kill::run(Kind::Ours, &p, exe(), &server.url()).unwrap();
    let s = &r.summary;
    assert_eq!((s.lost, s.early), (0, 0), "{r:?}");
    // At-least-once: a timer runs again only after a run whose outcome
    // the store never recorded, and every run again is one of those.
    assert!(r.again.after_stored.is_empty(), "{r:?}");
    assert_eq!(s.duplicates, r.again.allowed() as u64, "{r:?}");
    assert!(r.again.after_cut_short <= r.cut_short, "{r:?}");
    assert!(r.again.after_unacked <= r.unacked, "{r:?}");
}
