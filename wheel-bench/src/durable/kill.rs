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
//! cut short (started on the killed node, never ended: run again after the
//! lease, so they count as duplicates), lost timers, duplicates.

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
    /// Runs started on the victim that never ended, or that ended less
    /// than [`UNRECORDED`] before it was killed.
    pub cut_short: usize,
}

/// How long before the kill a run that ended on the victim still counts
/// as cut short: its outcome goes to the store in the next group commit
/// after the handler returns, and an outcome the store never got makes the
/// run start again after the lease (at-least-once), as a run that never
/// ended does. A store call takes a millisecond or so here; the rest is
/// room for a loaded machine.
pub const UNRECORDED: Duration = Duration::from_millis(250);

/// What the parent tracks while the nodes run.
struct Track {
    rec: Arc<Recorder>,
    /// Per timer: the earliest start seen (ns) and the node that made it.
    first: Vec<(i64, usize)>,
    /// Per node: started minus ended runs of each timer it ran.
    open: Vec<std::collections::HashMap<usize, i32>>,
    /// Per node: when the parent last heard that a run of each timer ended
    /// (never before the run ended).
    ended: Vec<std::collections::HashMap<usize, SystemTime>>,
    /// When the victim got its SIGKILL.
    killed: Option<SystemTime>,
    ready: usize,
}

impl Track {
    fn apply(&mut self, node: usize, ev: Event) {
        match ev {
            Event::Ready => self.ready += 1,
            Event::Started(i, ns) => {
                self.rec.record(i, ns);
                if let Some(f) = self.first.get_mut(i) {
                    if ns < f.0 {
                        *f = (ns, node);
                    }
                }
                *self.open[node].entry(i).or_default() += 1;
            }
            Event::Ended(i) => {
                *self.open[node].entry(i).or_default() -= 1;
                self.ended[node].insert(i, SystemTime::now());
            }
            Event::Took(_) | Event::Gone => {}
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
        open: vec![Default::default(); p.nodes],
        ended: vec![Default::default(); p.nodes],
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
    KillRun {
        summary: track.rec.summary(),
        killed_at,
        taken_over,
        cut_short: cut_short(track, victim),
    }
}

/// The victim's runs that may run again: those that never ended, and
/// those that ended within [`UNRECORDED`] of the kill.
fn cut_short(track: &Track, victim: usize) -> usize {
    let recent = |i: &usize| {
        let (Some(killed), Some(ended)) = (track.killed, track.ended[victim].get(i)) else {
            return false;
        };
        ended
            .checked_add(UNRECORDED)
            .is_some_and(|until| until >= killed)
    };
    track.open[victim]
        .iter()
        .filter(|&(i, &open)| open > 0 || recent(i))
        .count()
}
