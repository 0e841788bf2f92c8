//! Our durable timers as the runs use them: which store, how many nodes,
//! and a handler that records each start.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use wheel_durable::{DurableError, DurableTimers, DurableTimersBuilder, Fired, Outcome};

use super::{Recorder, index_of, unix_ns};

/// Where our timers live.
#[derive(Debug, Clone)]
pub enum Store {
    /// The embedded store in this file.
    Embedded(PathBuf),
    /// The Redis store at this URL.
    Redis(String),
}

/// How our nodes run.
#[derive(Debug, Clone)]
pub struct NodeSettings {
    /// Handler threads per node.
    pub workers: usize,
    /// The lease.
    pub lease: Duration,
    /// How long each handler works (sleeps) after recording its start.
    pub work: Duration,
}

impl Default for NodeSettings {
    /// The builder's defaults (4 workers, a 5 s lease) and a handler that
    /// does nothing.
    fn default() -> Self {
        NodeSettings {
            workers: 4,
            lease: Duration::from_secs(5),
            work: Duration::ZERO,
        }
    }
}

/// A builder on `store` in namespace `ns`.
pub fn builder(store: &Store, ns: &str) -> DurableTimersBuilder {
    let b = DurableTimers::builder().namespace(ns);
    match store {
        Store::Embedded(path) => b.embedded(path),
        Store::Redis(url) => b.redis(url),
    }
}

/// A handler that records its start in `rec` (by the key's index), then
/// works for `work`.
pub fn recording(
    rec: Arc<Recorder>,
    work: Duration,
) -> impl Fn(&Fired) -> Outcome + Send + Sync + 'static {
    move |t: &Fired| {
        let start = unix_ns(SystemTime::now());
        if let Some(i) = index_of(t.key.as_bytes()) {
            rec.record(i, start);
        }
        if !work.is_zero() {
            std::thread::sleep(work);
        }
        Outcome::Done
    }
}

/// `n` nodes on `store` whose handlers record into `rec`.
pub fn start_nodes(
    store: &Store,
    ns: &str,
    n: usize,
    settings: &NodeSettings,
    rec: &Arc<Recorder>,
) -> Result<Vec<DurableTimers>, DurableError> {
    (0..n)
        .map(|_| {
            builder(store, ns)
                .workers(settings.workers)
                .lease(settings.lease)
                .handler(recording(rec.clone(), settings.work))
                .build()
        })
        .collect()
}

/// Adds the timers `keys[i]` due at `dues[i]` with `add_many`, `batch` at a
/// time.
pub fn add_all(
    timers: &DurableTimers,
    keys: &[String],
    dues: &[SystemTime],
    batch: usize,
) -> Result<(), DurableError> {
    let items: Vec<(&str, SystemTime, &[u8])> = keys
        .iter()
        .zip(dues)
        .map(|(k, d)| (k.as_str(), *d, &super::PAYLOAD[..]))
        .collect();
    for chunk in items.chunks(batch.max(1)) {
        timers.add_many(chunk)?;
    }
    Ok(())
}

/// Shuts every node down.
pub fn shutdown_all(nodes: Vec<DurableTimers>) -> Result<(), DurableError> {
    nodes.iter().try_for_each(DurableTimers::shutdown)
}
