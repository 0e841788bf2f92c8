//! Lateness at a fixed rate: `rate × window` timers due evenly over the
//! window, added up front (`add_many`, 1 000 at a time) while the nodes
//! already run, fired by one or more nodes in this process.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::ours::{self, NodeSettings, Store};
use super::peer::{PeerNode, Run, SecondWheel, Task};
use super::redis_cpu::{self, RedisCpu, Sampler};
use super::{Impl, PAYLOAD, Recorder, Summary, index_of, key, spread, temp_store, unix_ns};

/// One lateness workload.
#[derive(Debug, Clone)]
pub struct LatenessParams {
    /// Timers due per second.
    pub rate: u64,
    /// How long timers keep coming due.
    pub window: Duration,
    /// From the nodes' start to the first due time, besides the time the
    /// adds are allowed (`add_allowance` per timer).
    pub lead: Duration,
    /// Time allowed per timer for adding them all before the window.
    pub add_allowance: Duration,
    /// How long after the window a timer may still run before it is lost.
    pub grace: Duration,
}

impl LatenessParams {
    /// Timers in the run.
    pub fn timers(&self) -> usize {
        (self.rate as f64 * self.window.as_secs_f64()).round() as usize
    }
}

/// Timers added per call of `add_many`.
pub const BATCH: usize = 1_000;

/// What one run measured.
#[derive(Debug, Clone)]
pub struct LatenessRun {
    /// The records' figures.
    pub summary: Summary,
    /// How long adding every timer took.
    pub adding: Duration,
    /// Of the timers that never ran, those still in the store when the run
    /// ended (ours: a node that fell behind); the rest are lost.
    pub pending_at_end: usize,
    /// The Redis server's CPU from the first due time to the last (runs on
    /// Redis only).
    pub redis_cpu: Option<RedisCpu>,
}

impl LatenessRun {
    /// Timers that never ran and are gone.
    pub fn lost(&self) -> usize {
        self.summary.lost.saturating_sub(self.pending_at_end)
    }

    /// Early runs, lost timers and duplicates. Timers still in the store
    /// at the end are not failures: the nodes fell behind (the tables show
    /// how many), which is a figure of the run, not a wrong answer.
    pub fn check(&self) -> crate::workloads::Check {
        crate::workloads::Check::from_errors(&self.summary.errors(self.lost()))
    }
}

/// Runs `imp` on the workload `p`; `url` is the Redis server for the
/// implementations that need one.
pub fn run(imp: Impl, p: &LatenessParams, url: Option<&str>) -> Result<LatenessRun, String> {
    let n = p.timers();
    let keys: Vec<String> = (0..n).map(key).collect();
    let ns = format!("lateness-{}", p.rate);
    match imp {
        Impl::Embedded => {
            let path = temp_store("lateness");
            let out = run_ours(&Store::Embedded(path.clone()), &ns, 1, p, &keys);
            super::remove_store(&path);
            out
        }
        Impl::Redis { nodes } => {
            let url = url.ok_or("no Redis server")?;
            run_ours(&Store::Redis(url.into()), &ns, nodes, p, &keys)
        }
        Impl::Peer { nodes } => run_peer(url.ok_or("no Redis server")?, &ns, nodes, p, &keys),
    }
}

/// The due times of a run whose nodes start now and take `starting` to.
fn dues(p: &LatenessParams, n: usize, starting: Duration) -> Vec<SystemTime> {
    let start = SystemTime::now() + starting + p.lead + p.add_allowance * n as u32;
    spread(n, start, p.window)
}

fn run_ours(
    store: &Store,
    ns: &str,
    nodes: usize,
    p: &LatenessParams,
    keys: &[String],
) -> Result<LatenessRun, String> {
    let due = dues(p, keys.len(), Duration::ZERO);
    let rec = Arc::new(Recorder::new(&due));
    let cpu = match store {
        Store::Redis(url) => Some(Sampler::start(url)?),
        Store::Embedded(_) => None,
    };
    let nodes = ours::start_nodes(store, ns, nodes, &NodeSettings::default(), &rec)
        .map_err(|e| e.to_string())?;
    let t = Instant::now();
    ours::add_all(&nodes[0], keys, &due, BATCH).map_err(|e| e.to_string())?;
    let adding = t.elapsed();
    let end = due.last().copied().unwrap_or_else(SystemTime::now) + p.grace;
    rec.wait_all(end);
    let pending_at_end = rec
        .not_run()
        .iter()
        .filter(|&&i| matches!(nodes[0].get(&keys[i]), Ok(Some(_))))
        .count();
    let samples = cpu.map(Sampler::finish).unwrap_or_default();
    ours::shutdown_all(nodes).map_err(|e| e.to_string())?;
    Ok(LatenessRun {
        summary: rec.summary(),
        adding,
        pending_at_end,
        redis_cpu: window_cpu(&samples, &due),
    })
}

/// Redis's CPU share from the first due time to the last.
fn window_cpu(samples: &[redis_cpu::Sample], due: &[SystemTime]) -> Option<RedisCpu> {
    let (first, last) = (due.first()?, due.last()?);
    redis_cpu::share(samples, unix_ns(*first), unix_ns(*last))
}

/// A callback that records each task's start.
pub fn peer_recording(rec: Arc<Recorder>, work: Duration) -> Run {
    Arc::new(move |t: &Task| {
        let start = unix_ns(SystemTime::now());
        if let Some(i) = index_of(&t.key) {
            rec.record(i, start);
        }
        if !work.is_zero() {
            std::thread::sleep(work);
        }
    })
}

/// Runners per peer node: as many threads as our nodes' workers.
pub const PEER_RUNNERS: usize = 4;

fn run_peer(
    url: &str,
    ns: &str,
    nodes: usize,
    p: &LatenessParams,
    keys: &[String],
) -> Result<LatenessRun, String> {
    let wheel = Arc::new(SecondWheel::open(url, ns).map_err(|e| e.to_string())?);
    let cpu = Sampler::start(url)?;
    // Nodes of a real deployment start at different times, so their
    // one-second tickers have different phases: spread them over a second.
    let stagger = Duration::from_secs(1) / nodes.max(1) as u32;
    let due = dues(p, keys.len(), stagger * nodes as u32);
    let rec = Arc::new(Recorder::new(&due));
    let mut started = Vec::new();
    for i in 0..nodes {
        if i > 0 {
            std::thread::sleep(stagger);
        }
        let run = peer_recording(rec.clone(), Duration::ZERO);
        started.push(PeerNode::start(wheel.clone(), PEER_RUNNERS, run, None));
    }
    let t = Instant::now();
    let items: Vec<(String, SystemTime)> = keys.iter().cloned().zip(due.iter().copied()).collect();
    for chunk in items.chunks(BATCH) {
        wheel.add_many(chunk, PAYLOAD).map_err(|e| e.to_string())?;
    }
    let adding = t.elapsed();
    rec.wait_all(due.last().copied().unwrap_or_else(SystemTime::now) + p.grace);
    let samples = cpu.finish();
    started.into_iter().for_each(PeerNode::stop);
    Ok(LatenessRun {
        summary: rec.summary(),
        adding,
        pending_at_end: 0,
        redis_cpu: window_cpu(&samples, &due),
    })
}
