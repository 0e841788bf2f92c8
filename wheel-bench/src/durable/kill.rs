//! A node killed mid window: three node processes ([`super::node`]) fire
//! timers due at a fixed rate; halfway through the window one of them gets
//! SIGKILL.
//!
//! The victim is a node holding claims: for ours any node does (each claims
//! what comes due within its claim window all the time), so it is the
//! second; for the peer it is the node whose tick took a batch first after
//! the window's midpoint, killed as soon as it reports the batch. Handlers
//! work a few milliseconds each, as a callback to another service would, so
//! that a batch takes a while to run.
//!
//! Afterwards: the killed node's timers that others took over (ours: a
//! first run by another node later than [`taken_over_after`] after due), runs
//! cut short (started on the killed node, never ended), runs that ended on
//! the killed node before the store recorded their outcome, lost timers,
//! and every run beyond a timer's first, sorted by the run before it
//! ([`Again`]).
//!
//! The check is exact because each node process reports the store's
//! answer to every outcome (`s` lines, see [`super::node`]): a timer runs
//! again either after a run whose outcome the store never recorded
//! (at-least-once: allowed) or after one it recorded (a duplicate the
//! store let through: the check fails, naming the keys). Runs are ordered
//! by their fences, which strictly increase with every claim of a key; the
//! peer has none (0), and its take removes a task from Redis, so its runs
//! beyond the first are all the same task run twice.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, mpsc};
use std::time::{Duration, SystemTime};

use super::node::{Event, Kind, NodeProcess, NodeSpec};
use super::ours::{self, Store};
use super::peer::SecondWheel;
use super::{PAYLOAD, Recorder, Summary, key, spread};

/// A first run this much later than due, on another node than the killed
/// one, is a timer the killed node held: half the lease. Such a timer waits
/// for the whole lease; a node that is merely busy stays far below half of
/// it.
pub fn taken_over_after(lease: Duration) -> Duration {
    lease / 2
}

/// The kill workload.
#[derive(Debug, Clone)]
pub struct KillParams {
    /// Timers due per second.
    pub rate: u64,
    /// How long timers keep coming due.
    pub window: Duration,
    /// From the nodes being ready to the first due time.
    pub lead: Duration,
    /// Node processes.
    pub nodes: usize,
    /// Handler threads per node (ours) and task runners (the peer).
    pub workers: usize,
    /// Our lease.
    pub lease: Duration,
    /// How long each handler works.
    pub work: Duration,
    /// How long after the last timer can be taken over to wait for it.
    pub grace: Duration,
}

/// What one kill run measured.
#[derive(Debug, Clone, Default)]
pub struct KillRun {
    /// Every timer's figures.
    pub summary: Summary,
    /// When the victim died, after the first due time.
    pub killed_at: Duration,
    /// Timers the victim held that others ran later: lateness, ns, sorted.
    pub taken_over: Vec<i64>,
    /// Runs started on the victim that never ended.
    pub cut_short: usize,
    /// Runs that ended on the victim without a report that the store
    /// recorded their outcome: still on its way when it died, refused, or
    /// recorded just before the kill with the report not yet written.
    /// None for the peer, whose take removes a task before it runs.
    pub unacked: usize,
    /// For each of those, how long before the kill the parent heard that
    /// it ended, sorted.
    pub unacked_ended: Vec<Duration>,
    /// The runs beyond each timer's first.
    pub again: Again,
}

/// The runs beyond each timer's first, by the run before each (in fence
/// order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Again {
    /// After a run cut short on the victim (at-least-once).
    pub after_cut_short: usize,
    /// After a run that ended on the victim with no report that the store
    /// recorded its outcome (at-least-once).
    pub after_unacked: usize,
    /// After a run on a live node whose outcome the store did not record:
    /// its lease ran out first (at-least-once).
    pub after_lapsed: usize,
    /// Timers (indexes) that ran again after a run whose outcome the store
    /// had recorded, or whose one run started twice: the failures.
    pub after_stored: Vec<usize>,
}

impl Again {
    /// Runs again that at-least-once allows.
    pub fn allowed(&self) -> usize {
        self.after_cut_short + self.after_unacked + self.after_lapsed
    }
}

/// One run of a timer, as the parent saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    node: usize,
    fence: u64,
    /// When the parent heard that it ended.
    ended: Option<SystemTime>,
}

/// What the parent tracks while the nodes run.
struct Track {
    rec: Arc<Recorder>,
    /// Per timer: the earliest start seen (ns) and the node that made it.
    first: Vec<(i64, usize)>,
    /// Per timer: its runs, in the order they were reported.
    runs: HashMap<usize, Vec<Run>>,
    /// The runs (timer, fence) whose outcome the store recorded.
    stored: HashSet<(usize, u64)>,
    /// When the victim got its SIGKILL.
    killed: Option<SystemTime>,
    ready: usize,
}

impl Track {
    fn apply(&mut self, node: usize, ev: Event) {
        match ev {
            Event::Ready => self.ready += 1,
            Event::Started(i, ns, fence) => {
                self.rec.record(i, ns);
                if let Some(f) = self.first.get_mut(i) {
                    if ns < f.0 {
                        *f = (ns, node);
                    }
                }
                self.runs.entry(i).or_default().push(Run {
                    node,
                    fence,
                    ended: None,
                });
            }
            Event::Ended(i) => {
                // A node runs one run of a timer at a time: the open one.
                let open = self.runs.get_mut(&i).into_iter().flatten();
                if let Some(r) = open.filter(|r| r.node == node && r.ended.is_none()).last() {
                    r.ended = Some(SystemTime::now());
                }
            }
            Event::Settled(i, fence, true) => {
                self.stored.insert((i, fence));
            }
            Event::Settled(_, _, false) | Event::Took(_) | Event::Gone => {}
        }
    }
}

/// Runs the kill workload with `kind` nodes started from `exe` on the
/// Redis server at `url`.
pub fn run(kind: Kind, p: &KillParams, exe: &Path, url: &str) -> Result<KillRun, String> {
    let (tx, rx) = mpsc::channel();
    let ns = format!("kill-{}", if kind == Kind::Ours { "ours" } else { "peer" });
    let spec = NodeSpec {
        kind,
        workers: p.workers,
        lease_ms: p.lease.as_millis() as u64,
        work_us: p.work.as_micros() as u64,
        namespace: ns.clone(),
        url: url.to_owned(),
    };
    let mut procs = Vec::new();
    for id in 0..p.nodes {
        if kind == Kind::Peer && id > 0 {
            // Different start times give the tickers different phases.
            std::thread::sleep(Duration::from_secs(1) / p.nodes as u32);
        }
        procs.push(NodeProcess::spawn(exe, &spec, id, tx.clone()).map_err(|e| e.to_string())?);
    }
    drop(tx);
    let n = (p.rate as f64 * p.window.as_secs_f64()).round() as usize;
    let mut track = Track {
        rec: Arc::new(Recorder::new(&[])),
        first: vec![(i64::MAX, usize::MAX); n],
        runs: HashMap::new(),
        stored: HashSet::new(),
        killed: None,
        ready: 0,
    };
    let out = drive(kind, p, url, &ns, &rx, &mut procs, &mut track);
    for proc in procs {
        proc.finish(Duration::from_secs(10));
    }
    while let Ok((node, ev)) = rx.try_recv() {
        track.apply(node, ev);
    }
    let (victim, killed_at) = out?;
    Ok(result(kind, &track, victim, killed_at, p.lease))
}

/// Waits for the nodes, adds the timers, kills the victim, waits for the
/// rest; returns the victim and when it died after the first due time.
fn drive(
    kind: Kind,
    p: &KillParams,
    url: &str,
    ns: &str,
    rx: &mpsc::Receiver<(usize, Event)>,
    procs: &mut [NodeProcess],
    track: &mut Track,
) -> Result<(usize, Duration), String> {
    let ready_by = SystemTime::now() + Duration::from_secs(20);
    while track.ready < procs.len() {
        let (node, ev) = rx
            .recv_timeout(Duration::from_secs(20))
            .map_err(|_| "a node process did not get ready")?;
        if ev == Event::Gone {
            return Err(format!("node process {node} exited before it was ready"));
        }
        track.apply(node, ev);
        if SystemTime::now() > ready_by {
            return Err("the node processes did not get ready".into());
        }
    }
    let n = track.first.len();
    let due = spread(n, SystemTime::now() + p.lead, p.window);
    track.rec = Arc::new(Recorder::new(&due));
    add(kind, url, ns, &due)?;
    let start = due[0];
    let kill_at = start + p.window / 2;
    let end = start
        + p.window
        + p.grace
        + if kind == Kind::Ours {
            p.lease
        } else {
            Duration::ZERO
        };
    let mut victim = None;
    while SystemTime::now() < end {
        let now = SystemTime::now();
        let next = rx.recv_timeout(Duration::from_millis(2));
        if victim.is_none() && now >= kill_at {
            let took = matches!(next, Ok((_, Event::Took(_))));
            let give_up = now >= kill_at + Duration::from_millis(1_500);
            let chosen = match kind {
                Kind::Ours => Some(1),
                Kind::Peer if took => next.as_ref().ok().map(|(id, _)| *id),
                Kind::Peer if give_up => Some(1),
                Kind::Peer => None,
            };
            if let Some(v) = chosen {
                procs[v].kill();
                track.killed = Some(SystemTime::now());
                victim = Some((v, now.duration_since(start).unwrap_or_default()));
            }
        }
        if let Ok((node, ev)) = next {
            track.apply(node, ev);
        }
    }
    victim.ok_or_else(|| "nobody was killed".into())
}

/// Adds the timers `key(i)` due at `due[i]`, 1 000 per call.
///
/// # Errors
///
/// The store's or Redis's error, as text.
pub fn add(kind: Kind, url: &str, ns: &str, due: &[SystemTime]) -> Result<(), String> {
    let keys: Vec<String> = (0..due.len()).map(key).collect();
    match kind {
        Kind::Ours => {
            let client = ours::builder(&Store::Redis(url.into()), ns)
                .build()
                .map_err(|e| e.to_string())?;
            ours::add_all(&client, &keys, due, super::lateness::BATCH).map_err(|e| e.to_string())
        }
        Kind::Peer => {
            let wheel = SecondWheel::open(url, ns).map_err(|e| e.to_string())?;
            let items: Vec<(String, SystemTime)> =
                keys.into_iter().zip(due.iter().copied()).collect();
            items
                .chunks(super::lateness::BATCH)
                .try_for_each(|c| wheel.add_many(c, PAYLOAD))
                .map_err(|e| e.to_string())
        }
    }
}

fn result(
    kind: Kind,
    track: &Track,
    victim: usize,
    killed_at: Duration,
    lease: Duration,
) -> KillRun {
    // Nothing takes over the peer's timers: its late starts (the first
    // second of a minute, see `peer`) are not the killed node's.
    let mut taken_over: Vec<i64> = match kind {
        Kind::Ours => (0..track.first.len())
            .filter(|&i| track.first[i].1 != victim)
            .filter_map(|i| track.rec.lateness_of(i))
            .filter(|&l| l > taken_over_after(lease).as_nanos() as i64)
            .collect(),
        Kind::Peer => Vec::new(),
    };
    taken_over.sort_unstable();
    let victims = track.runs.iter().flat_map(|(&i, runs)| {
        runs.iter()
            .filter(move |r| r.node == victim)
            .map(move |r| (i, r))
    });
    // The peer's take removed each task from Redis before it ran: nothing
    // is left to acknowledge.
    let acked = |i: usize, r: &Run| kind == Kind::Peer || track.stored.contains(&(i, r.fence));
    let (mut cut_short, mut unacked_ended) = (0, Vec::new());
    for (i, r) in victims {
        match r.ended {
            None => cut_short += 1,
            Some(ended) if !acked(i, r) => {
                let killed = track.killed.unwrap_or(ended);
                unacked_ended.push(killed.duration_since(ended).unwrap_or_default());
            }
            Some(_) => {}
        }
    }
    unacked_ended.sort_unstable();
    KillRun {
        summary: track.rec.summary(),
        killed_at,
        taken_over,
        cut_short,
        unacked: unacked_ended.len(),
        unacked_ended,
        again: again(&track.runs, &track.stored, victim),
    }
}

/// Sorts every run beyond a timer's first by the run before it in fence
/// order. Every line a node wrote before its end (a SIGKILL included)
/// reaches the parent, so a run not marked ended never ended, and one not
/// marked stored was not stored or died in the instant between the
/// store's answer and its report (then it does not run again: no run
/// after it to sort).
fn again(runs: &HashMap<usize, Vec<Run>>, stored: &HashSet<(usize, u64)>, victim: usize) -> Again {
    let mut a = Again::default();
    for (&i, runs) in runs {
        let mut runs = runs.clone();
        runs.sort_by_key(|r| r.fence);
        let mut failed = false;
        for pair in runs.windows(2) {
            let (before, this) = (pair[0], pair[1]);
            let same_run = before.fence == this.fence;
            if same_run || stored.contains(&(i, before.fence)) {
                failed = true;
            } else if before.node != victim {
                a.after_lapsed += 1;
            } else if before.ended.is_some() {
                a.after_unacked += 1;
            } else {
                a.after_cut_short += 1;
            }
        }
        if failed {
            a.after_stored.push(i);
        }
    }
    a.after_stored.sort_unstable();
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(node: usize, fence: u64, ended: bool) -> Run {
        let ended = ended.then(SystemTime::now);
        Run { node, fence, ended }
    }

    /// Timer 1: cut short on the victim (node 1), run again elsewhere.
    /// Timer 2: ended on the victim, outcome not acknowledged, run again.
    /// Timer 3: a live node's lease ran out. Timer 4: run again after a
    /// stored outcome. Timer 5: one run (fence 9) started twice. Timer 6:
    /// stored once, never again.
    #[test]
    fn runs_again_are_sorted_by_the_run_before() {
        let runs: HashMap<usize, Vec<Run>> = [
            (1, vec![run(0, 8, true), run(1, 5, false)]),
            (2, vec![run(1, 5, true), run(2, 8, true)]),
            (3, vec![run(0, 5, true), run(2, 6, true)]),
            (4, vec![run(1, 5, true), run(0, 7, true)]),
            (5, vec![run(0, 9, true), run(2, 9, true)]),
            (6, vec![run(1, 5, true)]),
        ]
        .into();
        let stored: HashSet<(usize, u64)> =
            [(1, 8), (2, 8), (3, 6), (4, 5), (4, 7), (5, 9), (6, 5)].into();
        let a = again(&runs, &stored, 1);
        assert_eq!(
            a,
            Again {
                after_cut_short: 1,
                after_unacked: 1,
                after_lapsed: 1,
                after_stored: vec![4, 5],
            }
        );
        assert_eq!(a.allowed(), 3);
    }

    #[test]
    fn the_victims_runs_are_cut_short_or_unacknowledged_by_its_reports() {
        let mut t = Track {
            rec: Arc::new(Recorder::new(&[SystemTime::now(); 4])),
            first: vec![(i64::MAX, usize::MAX); 4],
            runs: HashMap::new(),
            stored: HashSet::new(),
            killed: Some(SystemTime::now()),
            ready: 0,
        };
        for (i, fence) in [(0, 3), (1, 4), (2, 5)] {
            t.apply(1, Event::Started(i, 10, fence));
        }
        t.apply(0, Event::Started(3, 10, 6));
        t.apply(1, Event::Ended(1));
        t.apply(1, Event::Ended(2));
        t.apply(1, Event::Settled(2, 5, true));
        t.apply(0, Event::Ended(3));
        let r = result(Kind::Ours, &t, 1, Duration::ZERO, Duration::from_secs(2));
        assert_eq!((r.cut_short, r.unacked), (1, 1));
        assert_eq!(r.summary.duplicates, 0);
        let peer = result(Kind::Peer, &t, 1, Duration::ZERO, Duration::from_secs(2));
        assert_eq!((peer.cut_short, peer.unacked), (1, 0));
    }
}
