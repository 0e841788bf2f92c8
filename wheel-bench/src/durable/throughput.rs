//! Throughput: adds from one, eight and sixty-four threads (and, for the
//! embedded store, the raw disk's group-commit appends from as many),
//! batched adds and the store bytes they take, firing many timers due at
//! once (with the Redis server's CPU meanwhile), and the embedded store's
//! restart with many timers pending.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use wheel_durable::{DurableTimers, Fired, Outcome};

use super::disk::{self, AppendRate};
use super::ours::{self, NodeSettings, Store};
use super::peer::{PeerNode, SecondWheel};
use super::redis_cpu::{self, RedisCpu, Sampler};
use super::{Impl, PAYLOAD, Recorder, Summary, index_of, key, lateness, unix_ns, whole_ms};
use crate::workloads::Check;

/// Sizes of the throughput measurements.
#[derive(Debug, Clone)]
pub struct ThroughputParams {
    /// How long each measurement of single adds adds for.
    pub add_for: Duration,
    /// Threads of the many-thread adds (at most 100).
    pub threads: usize,
    /// Threads of the most-thread adds (at most 100).
    pub most_threads: usize,
    /// Timers added with `add_many`, also the sample for bytes per timer.
    pub bulk: usize,
    /// Timers all due at once for the fire rate.
    pub fire: usize,
    /// Timers pending in the store for the embedded restart.
    pub restart: usize,
    /// Of which overdue.
    pub overdue: usize,
}

/// Something timers are added to.
pub trait Adder: Sync {
    /// One timer.
    fn add_one(&self, key: &str, due: SystemTime) -> Result<(), String>;
    /// Many in one call.
    fn add_batch(&self, items: &[(String, SystemTime)]) -> Result<(), String>;
}

impl Adder for DurableTimers {
    fn add_one(&self, key: &str, due: SystemTime) -> Result<(), String> {
        self.add_at(key, due, PAYLOAD).map_err(|e| e.to_string())
    }

    fn add_batch(&self, items: &[(String, SystemTime)]) -> Result<(), String> {
        let items: Vec<(&str, SystemTime, &[u8])> = items
            .iter()
            .map(|(k, d)| (k.as_str(), *d, &PAYLOAD[..]))
            .collect();
        self.add_many(&items).map_err(|e| e.to_string())
    }
}

impl Adder for SecondWheel {
    fn add_one(&self, key: &str, due: SystemTime) -> Result<(), String> {
        self.add(key, due, PAYLOAD).map_err(|e| e.to_string())
    }

    fn add_batch(&self, items: &[(String, SystemTime)]) -> Result<(), String> {
        self.add_many(items, PAYLOAD).map_err(|e| e.to_string())
    }
}

/// The key of add `i` of thread `t` (below 100): `tag`, two digits of
/// the thread and 13 of `i`, 16 bytes.
pub fn thread_key(tag: char, t: usize, i: u64) -> String {
    format!("{tag}{t:02}{i:013}")
}

/// Single adds per second from `threads` threads adding for `d`, timers an
/// hour out; keys from [`thread_key`].
pub fn add_rate(a: &dyn Adder, threads: usize, d: Duration, tag: char) -> Result<f64, String> {
    let due = whole_ms(SystemTime::now() + Duration::from_secs(3_600));
    add_rate_due(a, threads, d, tag, |_, _| due)
}

/// The same with the due time of add `i` of thread `t` from `due(t, i)`.
pub fn add_rate_due(
    a: &dyn Adder,
    threads: usize,
    d: Duration,
    tag: char,
    due: impl Fn(usize, u64) -> SystemTime + Sync,
) -> Result<f64, String> {
    let due = &due;
    let start = Instant::now();
    let total = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || -> Result<u64, String> {
                    let mut i = 0u64;
                    while start.elapsed() < d {
                        a.add_one(&thread_key(tag, t, i), due(t, i))?;
                        i += 1;
                    }
                    Ok(i)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("adder thread"))
            .sum::<Result<u64, String>>()
    })?;
    Ok(total as f64 / start.elapsed().as_secs_f64())
}

/// `n` timers an hour out with `add_many`, `batch` at a time: timers per
/// second.
pub fn bulk_rate(a: &dyn Adder, n: usize, batch: usize, tag: char) -> Result<f64, String> {
    let due = whole_ms(SystemTime::now() + Duration::from_secs(3_600));
    let items: Vec<(String, SystemTime)> = (0..n).map(|i| (format!("{tag}{i:015}"), due)).collect();
    let start = Instant::now();
    for chunk in items.chunks(batch.max(1)) {
        a.add_batch(chunk)?;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

/// Redis's `used_memory`, bytes.
pub fn used_memory(url: &str) -> Result<u64, String> {
    let mut c = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .map_err(|e| e.to_string())?;
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query(&mut c)
        .map_err(|e| e.to_string())?;
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| "no used_memory in INFO".into())
}

/// The shortest span a fire rate is taken over: runs closer together than
/// this give a lower bound.
const MIN_SPAN: f64 = 1e-3;

/// The shortest span Redis's CPU is taken over, s: two samples' interval
/// ([`redis_cpu::EVERY`]); over a shorter one the samples around it
/// would mostly measure time outside it.
pub const CPU_SPAN: f64 = 0.1;

/// The fire rate: timers run per second from the first run to the last,
/// and the run's figures.
#[derive(Debug, Clone)]
pub struct FireRate {
    /// Timers per second.
    pub per_sec: f64,
    /// Every run started within a millisecond: `per_sec` is a lower bound.
    pub at_least: bool,
    /// The run's figures.
    pub summary: Summary,
    /// The Redis server's CPU from the first run to the last (`None` for
    /// the embedded store).
    pub redis_cpu: Option<RedisCpu>,
}

impl FireRate {
    /// The rate for a table cell.
    pub fn cell(&self) -> String {
        let sign = if self.at_least { ">= " } else { "" };
        format!("{sign}{:.0}", self.per_sec)
    }

    /// Redis's CPU for a table cell ("-" without).
    pub fn cpu_cell(&self) -> String {
        self.redis_cpu.map_or("-".into(), |c| c.cell())
    }
}

/// The rate of `n` timers all due at `due`, with Redis's CPU between the
/// first start and the last from `cpu` samples, if any.
pub(super) fn fire_rate_of(
    n: usize,
    due: SystemTime,
    summary: Summary,
    cpu: &[redis_cpu::Sample],
) -> FireRate {
    let span = match (summary.lateness.first(), summary.lateness.last()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e9,
        _ => f64::NAN,
    };
    let due = unix_ns(due);
    let redis_cpu = match (summary.lateness.first(), summary.lateness.last()) {
        (Some(a), Some(b)) if span >= CPU_SPAN => redis_cpu::share(cpu, due + a, due + b),
        _ => None,
    };
    FireRate {
        per_sec: n as f64 / span.max(MIN_SPAN),
        at_least: span < MIN_SPAN,
        summary,
        redis_cpu,
    }
}

/// A CPU sampler of the Redis server at `url`, if any.
fn sampler(url: Option<&str>) -> Result<Option<Sampler>, String> {
    url.map(Sampler::start).transpose()
}

/// `n` timers due at one instant (added while the nodes run), fired by
/// `nodes` of ours on `store`.
pub fn fire_rate_ours(store: &Store, nodes: usize, n: usize) -> Result<FireRate, String> {
    let due = vec![whole_ms(SystemTime::now() + fire_lead(n)); n];
    let rec = Arc::new(Recorder::new(&due));
    let keys: Vec<String> = (0..n).map(key).collect();
    let ns = format!("fire-{nodes}");
    let cpu = sampler(match store {
        Store::Redis(url) => Some(url.as_str()),
        Store::Embedded(_) => None,
    })?;
    let started = ours::start_nodes(store, &ns, nodes, &NodeSettings::default(), &rec)
        .map_err(|e| e.to_string())?;
    ours::add_all(&started[0], &keys, &due, lateness::BATCH).map_err(|e| e.to_string())?;
    rec.wait_all(due[0] + Duration::from_secs(120));
    let samples = cpu.map(Sampler::finish).unwrap_or_default();
    ours::shutdown_all(started).map_err(|e| e.to_string())?;
    Ok(fire_rate_of(n, due[0], rec.summary(), &samples))
}

/// The same for the peer with `nodes` nodes.
pub fn fire_rate_peer(url: &str, nodes: usize, n: usize) -> Result<FireRate, String> {
    let wheel = Arc::new(SecondWheel::open(url, "fire").map_err(|e| e.to_string())?);
    let due = vec![whole_ms(SystemTime::now() + fire_lead(n)); n];
    let rec = Arc::new(Recorder::new(&due));
    let cpu = Sampler::start(url)?;
    let started: Vec<PeerNode> = (0..nodes)
        .map(|_| {
            let run = lateness::peer_recording(rec.clone(), Duration::ZERO);
            PeerNode::start(wheel.clone(), lateness::PEER_RUNNERS, run, None)
        })
        .collect();
    let items: Vec<(String, SystemTime)> = (0..n).map(|i| (key(i), due[0])).collect();
    for chunk in items.chunks(lateness::BATCH) {
        wheel.add_many(chunk, PAYLOAD).map_err(|e| e.to_string())?;
    }
    rec.wait_all(due[0] + Duration::from_secs(10));
    let samples = cpu.finish();
    started.into_iter().for_each(PeerNode::stop);
    Ok(fire_rate_of(n, due[0], rec.summary(), &samples))
}

/// Time to add `n` timers before they are due, and then some.
pub(super) fn fire_lead(n: usize) -> Duration {
    Duration::from_millis(1_500) + Duration::from_micros(20) * n as u32
}

/// The embedded store's restart.
#[derive(Debug, Clone)]
pub struct Restart {
    /// Timers pending in the store.
    pub pending: usize,
    /// Of which overdue.
    pub overdue: usize,
    /// Timers per second while filling the store (`add_many`, 10 000 per call).
    pub fill_rate: f64,
    /// The store's size on disk, bytes.
    pub file_bytes: u64,
    /// How long `build()` took.
    pub build: Duration,
    /// From calling `build()` to the first handler start.
    pub first: Duration,
    /// From calling `build()` to the start of the last overdue timer.
    pub all_overdue: Duration,
    /// Overdue timers lost or run twice, and timers run before their time.
    pub check: Check,
}

/// Fills a store with `p.restart` pending timers (`p.overdue` of them due
/// now, the rest in an hour), closes it, and opens it again with a handler.
pub fn restart(p: &ThroughputParams) -> Result<Restart, String> {
    let path = super::temp_store("restart");
    let out = restart_in(&path, p);
    super::remove_store(&path);
    out
}

fn restart_in(path: &std::path::Path, p: &ThroughputParams) -> Result<Restart, String> {
    let store = Store::Embedded(path.to_owned());
    let e = |e: wheel_durable::DurableError| e.to_string();
    let now = whole_ms(SystemTime::now());
    let later = now + Duration::from_secs(3_600);
    let keys: Vec<String> = (0..p.restart).map(key).collect();
    let due: Vec<SystemTime> = (0..p.restart)
        .map(|i| if i < p.overdue { now } else { later })
        .collect();
    let client = ours::builder(&store, "restart").build().map_err(e)?;
    let t = Instant::now();
    ours::add_all(&client, &keys, &due, 10_000).map_err(e)?;
    let fill_rate = p.restart as f64 / t.elapsed().as_secs_f64();
    client.shutdown().map_err(e)?;
    let file_bytes = super::store_bytes(path);
    let rec = Arc::new(Recorder::new(&due[..p.overdue]));
    let first = Arc::new(OnceLock::new());
    let strays = Arc::new(AtomicUsize::new(0));
    let handler = {
        let (rec, first, strays) = (rec.clone(), first.clone(), strays.clone());
        move |t: &Fired| {
            first.get_or_init(Instant::now);
            match index_of(t.key.as_bytes()).filter(|&i| i < rec.len()) {
                Some(i) => rec.record(i, unix_ns(SystemTime::now())),
                None => drop(strays.fetch_add(1, Ordering::Relaxed)),
            }
            Outcome::Done
        }
    };
    let t = Instant::now();
    let timers = ours::builder(&store, "restart")
        .handler(handler)
        .build()
        .map_err(e)?;
    let build = t.elapsed();
    rec.wait_all(SystemTime::now() + Duration::from_secs(120));
    let all_overdue = t.elapsed();
    timers.shutdown().map_err(e)?;
    let s = rec.summary();
    let check = Check::from_errors(&[
        ("lost", s.lost as u64),
        ("duplicates", s.duplicates),
        ("fired early", strays.load(Ordering::Relaxed) as u64),
    ]);
    Ok(Restart {
        pending: p.restart,
        overdue: p.overdue,
        fill_rate,
        file_bytes,
        build,
        first: first.get().map_or(Duration::MAX, |f| f.duration_since(t)),
        all_overdue,
        check,
    })
}

/// The adds of one implementation.
#[derive(Debug, Clone, Copy)]
pub struct Adds {
    /// Single adds per second from one thread.
    pub one: f64,
    /// Single adds per second from `threads` threads.
    pub many: f64,
    /// Single adds per second from `most_threads` threads.
    pub most: f64,
    /// `add_many` timers per second.
    pub bulk: f64,
    /// Store bytes per timer after `add_many`: Redis memory, or the
    /// embedded store's growth on disk.
    pub bytes: f64,
}

/// Everything the throughput table shows for one implementation.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Adds and store bytes.
    pub adds: Adds,
    /// The fire rate with one node.
    pub fire1: FireRate,
    /// The fire rate with three nodes (not for the embedded store).
    pub fire3: Option<FireRate>,
    /// Raw group-commit appends from as many threads as the adds, measured
    /// right after them (the embedded store only).
    pub disk: Option<DiskRates>,
}

/// Durable raw appends per second from 1, `threads` and `most_threads`
/// threads ([`disk::append_rate`]).
#[derive(Debug, Clone, Copy)]
pub struct DiskRates {
    /// From one thread.
    pub one: AppendRate,
    /// From `threads` threads.
    pub many: AppendRate,
    /// From `most_threads` threads.
    pub most: AppendRate,
}

/// The raw appends of [`DiskRates`], each for `p.add_for`.
pub fn disk_rates(p: &ThroughputParams) -> Result<DiskRates, String> {
    Ok(DiskRates {
        one: disk::append_rate(1, p.add_for)?,
        many: disk::append_rate(p.threads, p.add_for)?,
        most: disk::append_rate(p.most_threads, p.add_for)?,
    })
}

/// Measures `imp` (the node count is ignored: both are measured).
pub fn measure(imp: Impl, p: &ThroughputParams, url: Option<&str>) -> Result<Measured, String> {
    let need_url = || url.ok_or_else(|| "no Redis server".to_string());
    let err = |e: wheel_durable::DurableError| e.to_string();
    match imp {
        Impl::Embedded => {
            let path = super::temp_store("adds");
            let client = ours::builder(&Store::Embedded(path.clone()), "adds").build();
            let size = || super::store_bytes(&path);
            let added = client.map_err(err).and_then(|c| adds(&c, p, size));
            super::remove_store(&path);
            let disk = disk_rates(p)?;
            let path = super::temp_store("fire");
            let fire1 = fire_rate_ours(&Store::Embedded(path.clone()), 1, p.fire);
            super::remove_store(&path);
            Ok(Measured {
                adds: added?,
                fire1: fire1?,
                fire3: None,
                disk: Some(disk),
            })
        }
        Impl::Redis { .. } => {
            let url = need_url()?;
            super::flush(url)?;
            let store = Store::Redis(url.into());
            let client = ours::builder(&store, "adds").build().map_err(err)?;
            let added = adds(&client, p, || used_memory(url).unwrap_or(0))?;
            client.shutdown().map_err(err)?;
            fires(url, added, |nodes| fire_rate_ours(&store, nodes, p.fire))
        }
        Impl::Peer { .. } => {
            let url = need_url()?;
            super::flush(url)?;
            let wheel = SecondWheel::open(url, "adds").map_err(|e| e.to_string())?;
            let added = adds(&wheel, p, || used_memory(url).unwrap_or(0))?;
            fires(url, added, |nodes| fire_rate_peer(url, nodes, p.fire))
        }
    }
}

/// The fire rates with 1 and 3 nodes on an emptied Redis server each.
fn fires(
    url: &str,
    adds: Adds,
    rate: impl Fn(usize) -> Result<FireRate, String>,
) -> Result<Measured, String> {
    super::flush(url)?;
    let fire1 = rate(1)?;
    super::flush(url)?;
    Ok(Measured {
        adds,
        fire1,
        fire3: Some(rate(3)?),
        disk: None,
    })
}

/// `add_many` into the empty store with `size()` (store bytes) read before
/// and after it, then single adds from one, `p.threads` and
/// `p.most_threads` threads.
fn adds(a: &dyn Adder, p: &ThroughputParams, size: impl Fn() -> u64) -> Result<Adds, String> {
    let before = size();
    let bulk = bulk_rate(a, p.bulk, lateness::BATCH, 'b')?;
    let bytes = size().saturating_sub(before) as f64 / p.bulk as f64;
    Ok(Adds {
        one: add_rate(a, 1, p.add_for, 'a')?,
        many: add_rate(a, p.threads, p.add_for, 'm')?,
        most: add_rate(a, p.most_threads, p.add_for, 'n')?,
        bulk,
        bytes,
    })
}
