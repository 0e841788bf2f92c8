//! One namespace on a Redis Cluster of three masters, fired by three nodes
//! of ours: the whole namespace on one master against the namespace split
//! into three partitions, one per master. Each run starts a fresh cluster
//! on loopback, adds `fire` timers due at one instant, and measures the
//! fire rate (first start to last) and the CPU the masters used meanwhile,
//! summed: the rate per Redis core used is what a master's core gives,
//! whatever the machine; the rate itself grows with partitions only where
//! every master has a core of its own.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use wheel_durable::{DurableError, DurableTimers};
use wheel_testkit::RedisCluster;

use super::ours::{self, NodeSettings};
use super::redis_cpu::{self, Sampler};
use super::throughput::{FireRate, fire_lead, fire_rate_of};
use super::{Recorder, key, lateness, unix_ns, whole_ms};

/// The cluster runs' sizes.
#[derive(Debug, Clone)]
pub struct ClusterParams {
    /// Masters in the cluster (at least 3).
    pub masters: usize,
    /// Nodes of ours firing.
    pub nodes: usize,
    /// Timers due at once in each run.
    pub fire: usize,
}

/// One run: how many partitions, and what it measured.
#[derive(Debug, Clone)]
pub struct ClusterRun {
    /// The namespace's partitions (1: all on one master).
    pub partitions: u32,
    /// The fire rate; its `redis_cpu` is every master's, summed.
    pub rate: FireRate,
}

impl ClusterRun {
    /// Timers fired per second per core the masters used, if measured.
    pub fn per_core(&self) -> Option<f64> {
        let cores = self.rate.redis_cpu?.cores;
        (cores > 0.0).then(|| self.rate.per_sec / cores)
    }
}

fn builder(urls: &[String], partitions: u32) -> wheel_durable::DurableTimersBuilder {
    DurableTimers::builder()
        .redis_cluster(urls)
        .namespace("cluster")
        .partitions(partitions)
}

/// Fires `p.fire` timers with `p.nodes` nodes on a fresh cluster, the
/// namespace split in `partitions`.
pub fn run(p: &ClusterParams, partitions: u32) -> Result<ClusterRun, String> {
    let cluster = RedisCluster::start(p.masters, 0).map_err(|e| e.to_string())?;
    let urls = cluster.urls();
    let e = |e: DurableError| e.to_string();
    let due = vec![whole_ms(SystemTime::now() + fire_lead(p.fire)); p.fire];
    let rec = Arc::new(Recorder::new(&due));
    let keys: Vec<String> = (0..p.fire).map(key).collect();
    let samplers = urls
        .iter()
        .map(|u| Sampler::start(u))
        .collect::<Result<Vec<_>, _>>()?;
    let settings = NodeSettings::default();
    let nodes = (0..p.nodes)
        .map(|_| {
            builder(&urls, partitions)
                .workers(settings.workers)
                .lease(settings.lease)
                .handler(ours::recording(rec.clone(), settings.work))
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(e)?;
    ours::add_all(&nodes[0], &keys, &due, lateness::BATCH).map_err(e)?;
    rec.wait_all(due[0] + Duration::from_secs(120));
    let samples: Vec<_> = samplers.into_iter().map(Sampler::finish).collect();
    ours::shutdown_all(nodes).map_err(e)?;
    let summary = rec.summary();
    let mut rate = fire_rate_of(p.fire, due[0], summary, &[]);
    // Every master's CPU over the span of the runs, summed.
    if let (Some(a), Some(b)) = (rate.summary.lateness.first(), rate.summary.lateness.last()) {
        let (from, to) = (unix_ns(due[0]) + a, unix_ns(due[0]) + b);
        let shares: Option<Vec<_>> = samples
            .iter()
            .map(|s| redis_cpu::share(s, from, to))
            .collect();
        rate.redis_cpu = shares.map(|s| redis_cpu::RedisCpu {
            cores: s.iter().map(|c| c.cores).sum(),
            main: None,
        });
    }
    Ok(ClusterRun { partitions, rate })
}
