//! Redis's time per script: the fire rate with three nodes and single
//! adds from many threads, each run under the [`SlowLog`], giving each
//! script's calls, µs per call, timers per call and µs per fired timer
//! (or per add), their total, and `INFO cpu` over the same interval.
//!
//! The slow log times each command's execution only; `INFO cpu` counts the
//! server's every cycle (reading commands, writing replies, its upkeep),
//! so it is the larger. The fire rate is measured once without the log
//! and once with it: the difference is the log's own cost.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::ours::{self, Store};
use super::redis_cpu::{self, CpuTotals};
use super::slowlog::{CostRow, SlowLog, Tallies};
use super::throughput::{self, Adder, FireRate};

/// One run's figures by script.
#[derive(Debug, Clone)]
pub struct Costs {
    /// By callee: scripts first, then other commands.
    pub rows: Vec<CostRow>,
    /// Timers fired, or adds made: what "per timer" divides by.
    pub units: u64,
    /// Entries the slow log dropped.
    pub missed: u64,
    /// Commands the scripts called (logged, left out of the rows).
    pub inner: u64,
    /// Most entries one drain of the log found (of its length,
    /// [`MAX_LEN`](super::slowlog::MAX_LEN)): the headroom left.
    pub most: u64,
    /// The server's CPU seconds over the run (from `INFO cpu`).
    pub cpu: CpuTotals,
}

impl Costs {
    /// `rows` of `tallies`; a row without timers in its arguments that
    /// is named `per_unit` is given one timer per unit (the claim of the
    /// fire run: each fired timer is claimed once).
    fn of(tallies: &Tallies, units: u64, cpu: CpuTotals, per_unit: Option<&str>) -> Costs {
        let mut rows = tallies.rows();
        for r in &mut rows {
            if r.timers.is_none() && Some(r.name.as_str()) == per_unit {
                r.timers = Some(units);
            }
        }
        Costs {
            rows,
            units,
            missed: tallies.missed,
            inner: tallies.inner,
            most: tallies.most,
            cpu,
        }
    }

    /// Calls and µs of all the scripts together.
    pub fn scripts(&self) -> (u64, u64) {
        self.rows
            .iter()
            .filter(|r| r.is_script)
            .fold((0, 0), |(c, m), r| (c + r.calls, m + r.micros))
    }

    /// µs per unit of all the scripts together.
    pub fn scripts_per_unit(&self) -> f64 {
        self.scripts().1 as f64 / self.units.max(1) as f64
    }
}

/// `f` run under the slow log, with the server's CPU seconds over it.
fn measured<T>(
    url: &str,
    f: impl FnOnce() -> Result<T, String>,
) -> Result<(T, Tallies, CpuTotals), String> {
    let mut conn = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .map_err(|e| e.to_string())?;
    let log = SlowLog::start(url)?;
    let before = redis_cpu::read(&mut conn)?;
    let out = f();
    let after = redis_cpu::read(&mut conn);
    let tallies = log.finish()?;
    let (out, after) = (out?, after?);
    let main = match (before.main, after.main) {
        (Some(b), Some(a)) => Some(a - b),
        _ => None,
    };
    let cpu = CpuTotals {
        server: after.server - before.server,
        main,
    };
    Ok((out, tallies, cpu))
}

/// The fire rate measured without the slow log and with it.
#[derive(Debug, Clone)]
pub struct FireCost {
    /// Nodes firing.
    pub nodes: usize,
    /// Without the log.
    pub without: FireRate,
    /// With the log.
    pub with: FireRate,
    /// By script, over the run with the log (the adding included).
    pub costs: Costs,
}

/// `n` timers due at one instant fired by `nodes` of ours on the Redis
/// server at `url` ([`throughput::fire_rate_ours`]), without the slow
/// log and then with it, each on an emptied server.
pub fn fire(url: &str, nodes: usize, n: usize) -> Result<FireCost, String> {
    let store = Store::Redis(url.into());
    super::flush(url)?;
    let without = throughput::fire_rate_ours(&store, nodes, n)?;
    super::flush(url)?;
    let (with, tallies, cpu) = measured(url, || throughput::fire_rate_ours(&store, nodes, n))?;
    super::flush(url)?;
    Ok(FireCost {
        nodes,
        without,
        with,
        costs: Costs::of(&tallies, n as u64, cpu, Some("claim")),
    })
}

/// Single adds from many threads.
#[derive(Debug, Clone)]
pub struct AddCost {
    /// Threads adding.
    pub threads: usize,
    /// Adds per second (with the log).
    pub per_sec: f64,
    /// By script.
    pub costs: Costs,
}

/// An [`Adder`] counting the timers added through it.
struct Counting<'a> {
    inner: &'a dyn Adder,
    added: AtomicU64,
}

impl Adder for Counting<'_> {
    fn add_one(&self, key: &str, due: SystemTime) -> Result<(), String> {
        self.inner.add_one(key, due)?;
        self.added.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn add_batch(&self, items: &[(String, SystemTime)]) -> Result<(), String> {
        self.inner.add_batch(items)?;
        self.added.fetch_add(items.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

/// Single adds (timers an hour out) from `threads` threads for `d`, on an
/// emptied server, under the slow log.
pub fn adds(url: &str, threads: usize, d: Duration) -> Result<AddCost, String> {
    let err = |e: wheel_durable::DurableError| e.to_string();
    super::flush(url)?;
    let client = ours::builder(&Store::Redis(url.into()), "cost-adds")
        .build()
        .map_err(err)?;
    let counting = Counting {
        inner: &client,
        added: AtomicU64::new(0),
    };
    let run = measured(url, || throughput::add_rate(&counting, threads, d, 'c'));
    client.shutdown().map_err(err)?;
    super::flush(url)?;
    let (per_sec, tallies, cpu) = run?;
    let added = counting.added.load(Ordering::Relaxed);
    Ok(AddCost {
        threads,
        per_sec,
        costs: Costs::of(&tallies, added, cpu, None),
    })
}
