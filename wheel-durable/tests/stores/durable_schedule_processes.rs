//! Durable schedules across real processes: three `durable_node` children
//! on one private Redis run 200 schedules every second for 30 s; the test
//! process, a client, upserts them and, halfway, kills the node with the
//! most runs in flight with SIGKILL. The children print each run's start
//! (`fired`) and return (`ended`); the test reads those lines and the
//! store afterwards.
//!
//! The schedules catch up with `All` and overlap with `Allow`: the killed
//! node's claimed runs start only when their lease ends, after later slots
//! have passed, and only `All` (with `Allow`, so that the missed runs due
//! together all start) runs every one of those slots rather than skipping
//! them as the documented policies say.

use crate::durable_processes::ChildNode;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wheel_durable::schedule::{CatchUp, Overlap, Schedule, Spec, run_key};
use wheel_durable::{DurableTimers, Listing};
use wheel_testkit::{RedisServer, ServerOptions, eventually};

const SCHEDULES: usize = 200;
/// How long the schedules run; the kill comes halfway.
const WINDOW: Duration = Duration::from_secs(30);
const NODES: usize = 3;

fn unix_ms(t: SystemTime) -> u64 {
    u64::try_from(t.duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// The first slot of a 1 s period anchored at the epoch at or after `ms`.
fn slot_at_or_after(ms: u64) -> u64 {
    ms.div_ceil(1_000) * 1_000
}

/// One `fired` line: a run as a node started it.
#[derive(Debug, Clone)]
struct Started {
    node: usize,
    key: String,
    fence: u64,
    at_ms: u64,
    due_ms: u64,
    nominal_ms: u64,
}

/// The lines of every node, parsed.
#[derive(Default)]
struct Lines {
    started: Vec<Started>,
    /// (node, key, fence) of each `ended` line.
    ended: HashSet<(usize, String, u64)>,
}

impl Lines {
    fn take(&mut self, node: usize, line: &str) {
        let fields: Vec<&str> = line.split(' ').collect();
        let number = |i: usize| fields[i].parse::<u64>().unwrap();
        match fields[0] {
            "fired" => self.started.push(Started {
                node,
                key: fields[1].to_owned(),
                fence: number(2),
                at_ms: number(4),
                due_ms: number(5),
                nominal_ms: fields[6].parse().expect("only schedules' runs"),
            }),
            "ended" => {
                self.ended.insert((node, fields[1].to_owned(), number(2)));
            }
            _ => panic!("unexpected line from node {node}: {line}"),
        }
    }

    /// The runs node `node` started and has not ended (by its lines).
    fn in_flight(&self, node: usize) -> usize {
        let started = self.started.iter().filter(|s| s.node == node).count();
        let ended = self.ended.iter().filter(|e| e.0 == node).count();
        started - ended
    }

    /// Reads what the live nodes printed so far.
    fn drain(&mut self, nodes: &[(usize, ChildNode)]) {
        for (i, n) in nodes {
            for line in n.lines.try_iter() {
                self.take(*i, &line);
            }
        }
    }

    /// The nominal times each schedule ran at (by its runs' keys).
    fn nominals(&self) -> HashMap<String, BTreeSet<u64>> {
        let mut by_id: HashMap<String, BTreeSet<u64>> = HashMap::new();
        for s in &self.started {
            let id = id_of(&s.key);
            by_id.entry(id.to_owned()).or_default().insert(s.nominal_ms);
        }
        by_id
    }
}

/// The schedule id in a run key `sched:{id}:{ms}`.
fn id_of(key: &str) -> &str {
    let rest = key.strip_prefix("sched:").expect("a schedule's run key");
    rest.rsplit_once(':').unwrap().0
}

/// Whether every slot from each schedule's latest possible first run up
/// to `end_ms` ran (`check_runs` checks the first one).
fn every_slot_ran(lines: &Lines, first: &HashMap<String, (u64, u64)>, end_ms: u64) -> bool {
    let by_id = lines.nominals();
    first.iter().all(|(id, (_, hi))| {
        by_id.get(id).is_some_and(|ran| {
            (slot_at_or_after(*hi)..=end_ms)
                .step_by(1_000)
                .all(|slot| ran.contains(&slot))
        })
    })
}

#[test]
fn three_node_processes_run_every_period_of_200_schedules_through_a_sigkill() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let url = server.url();
    // A lease of 2 s brings the killed node's runs back soon; 200 ms of
    // work per run keeps runs in flight just after each slot, where the
    // kill comes, for it to cut short.
    let args = [
        "--redis",
        &url,
        "--namespace",
        "sprocs",
        "--lease-ms",
        "2000",
        "--poll-ms",
        "200",
        "--workers",
        "32",
        "--busy-ms",
        "200",
        "--fire",
    ];
    let mut nodes: Vec<(usize, ChildNode)> =
        (0..NODES).map(|i| (i, ChildNode::spawn(&args))).collect();
    for (_, n) in &nodes {
        assert_eq!(n.line(), "ready");
    }
    let client = DurableTimers::builder()
        .redis(&url)
        .namespace("sprocs")
        .build()
        .unwrap();
    let schedule = Schedule::builder(Spec::every(Duration::from_secs(1)).unwrap())
        .catch_up(CatchUp::All {
            window: Duration::from_secs(60),
        })
        .overlap(Overlap::Allow)
        .build()
        .unwrap();
    // Each schedule's first run is its first slot at or after the store's
    // clock during its upsert: between these two bounds.
    let mut first: HashMap<String, (u64, u64)> = HashMap::new();
    let began = SystemTime::now();
    for i in 0..SCHEDULES {
        let id = format!("s{i}");
        let before = unix_ms(SystemTime::now());
        client.upsert_schedule(&id, &schedule, b"").unwrap();
        first.insert(id, (before, unix_ms(SystemTime::now())));
    }
    let end_ms = unix_ms(began + WINDOW);
    let mut lines = Lines::default();
    // Halfway, 100 ms after a slot, while the nodes run that slot's runs:
    // the node with the most runs in flight.
    let kill_at =
        UNIX_EPOCH + Duration::from_millis(slot_at_or_after(unix_ms(began + WINDOW / 2)) + 100);
    drain_until(&mut lines, &nodes, kill_at);
    let at = (0..nodes.len())
        .max_by_key(|i| lines.in_flight(nodes[*i].0))
        .unwrap();
    let (killed, victim) = nodes.remove(at);
    eprintln!(
        "killing node {killed}, {} runs in flight",
        lines.in_flight(killed)
    );
    for line in victim.kill() {
        lines.take(killed, &line);
    }
    drain_until(&mut lines, &nodes, began + WINDOW);
    eventually("every slot of the window to run", || {
        lines.drain(&nodes);
        every_slot_ran(&lines, &first, end_ms)
    });
    // All at once: a node still running after another stopped would take
    // over the runs it handed back, late, and create catch-up runs.
    for (_, n) in &mut nodes {
        n.close_input();
    }
    for (i, n) in nodes {
        for line in n.stop() {
            lines.take(i, &line);
        }
    }
    check_runs(&lines, &first, end_ms, killed);
    check_chains(&client, &lines);
    client.shutdown().unwrap();
}

/// Reads the nodes' lines until `until`.
fn drain_until(lines: &mut Lines, nodes: &[(usize, ChildNode)], until: SystemTime) {
    while SystemTime::now() < until {
        lines.drain(nodes);
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every slot ran from the first one on, none early, and the only runs
/// that ran twice are those the kill of node `killed` cut short.
fn check_runs(lines: &Lines, first: &HashMap<String, (u64, u64)>, end_ms: u64, killed: usize) {
    let by_id = lines.nominals();
    assert_eq!(by_id.len(), SCHEDULES);
    for (id, (lo, hi)) in first {
        let ran = &by_id[id];
        let from = *ran.first().unwrap();
        assert!(
            (slot_at_or_after(*lo)..=slot_at_or_after(*hi)).contains(&from),
            "{id}: first run {from}, upserted between {lo} and {hi}"
        );
        let missing: Vec<u64> = (from..=end_ms)
            .step_by(1_000)
            .filter(|slot| !ran.contains(slot))
            .collect();
        assert!(missing.is_empty(), "{id}: slots {missing:?} never ran");
        assert!(
            ran.iter().all(|n| (n - from).is_multiple_of(1_000)),
            "{id}: {ran:?}"
        );
    }
    for s in &lines.started {
        let id = id_of(&s.key);
        let nominal = UNIX_EPOCH + Duration::from_millis(s.nominal_ms);
        assert_eq!(s.key, run_key(id, nominal).unwrap());
        assert!(
            s.at_ms >= s.due_ms && s.due_ms >= s.nominal_ms,
            "{s:?} ran early"
        );
    }
    let mut runs: HashMap<&str, Vec<&Started>> = HashMap::new();
    for s in &lines.started {
        runs.entry(s.key.as_str()).or_default().push(s);
    }
    let twice: HashSet<&str> = runs
        .iter()
        .filter(|(_, r)| r.len() > 1)
        .map(|(k, _)| *k)
        .collect();
    // Cut short: started on the killed node, never returned there.
    let cut_short: HashSet<&str> = lines
        .started
        .iter()
        .filter(|s| s.node == killed)
        .filter(|s| !lines.ended.contains(&(killed, s.key.clone(), s.fence)))
        .map(|s| s.key.as_str())
        .collect();
    for key in &twice {
        let r = &runs[key];
        assert_eq!(r.len(), 2, "{key} ran {} times: {r:?}", r.len());
        let (a, b) = if r[0].fence < r[1].fence {
            (r[0], r[1])
        } else {
            (r[1], r[0])
        };
        assert!(
            a.node == killed && b.node != killed,
            "{key} ran twice, not across the kill: {r:?}"
        );
    }
    // Each run cut short runs again. A run that returned on the killed
    // node may run again too, when the kill came between its return and
    // the store's record of the finish (the finisher writes after the
    // handler): those, counted apart, and no others run twice (above).
    assert!(!cut_short.is_empty(), "no run was in flight at the kill");
    assert!(
        cut_short.is_subset(&twice),
        "cut short and not run again: {:?}",
        cut_short.difference(&twice).collect::<Vec<_>>()
    );
    let finish_lost = twice.difference(&cut_short).count();
    eprintln!(
        "{} runs, {} on the killed node, {} cut short by the kill and run again, \
         {finish_lost} returned there but ran again (the finish lost with the kill)",
        lines.started.len(),
        lines.started.iter().filter(|s| s.node == killed).count(),
        cut_short.len(),
    );
}

/// Every schedule has exactly one pending next run (the nodes are stopped
/// and have handed their claims back), nothing skipped. A chain run that a
/// late start created as a catch-up run just before the stop may still be
/// pending, for a slot before the next run: allowed if it never ran.
fn check_chains(client: &DurableTimers, lines: &Lines) {
    let page = client.schedules(1_000).unwrap();
    assert_eq!(page.schedules.len(), SCHEDULES);
    let mut pending: HashMap<String, Vec<String>> = HashMap::new();
    for listing in [Listing::Pending, Listing::Claimed] {
        for t in client.list(listing, 1_000).unwrap().timers {
            pending
                .entry(id_of(&t.key).to_owned())
                .or_default()
                .push(t.key);
        }
    }
    for info in &page.schedules {
        let next = info.next_nominal.expect("a pending next run");
        let keys = &pending[&info.id];
        let next_key = run_key(&info.id, next).unwrap();
        assert_eq!(
            keys.iter().filter(|k| **k == next_key).count(),
            1,
            "{keys:?}"
        );
        for k in keys.iter().filter(|k| **k != next_key) {
            let nominal: u64 = k.rsplit_once(':').unwrap().1.parse().unwrap();
            assert!(nominal < unix_ms(next), "{}: {keys:?}", info.id);
            assert!(
                lines.started.iter().all(|s| s.key != *k),
                "{k} ran and is still pending"
            );
            eprintln!("{k}: a catch-up run created before the stop, not run yet");
        }
        assert_eq!(info.skipped.missed + info.skipped.overlap, 0, "{info:?}");
    }
}
