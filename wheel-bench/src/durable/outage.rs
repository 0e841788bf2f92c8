//! Outages and shutdown: how long our durable timers take to say that the
//! store is gone, what reading their counts costs meanwhile, how long they
//! take to see it back, and how long a node takes to shut down while it
//! holds claims.
//!
//! - [`unreachable()`](fn@unreachable): building against a Redis port nobody listens on,
//!   timed until the builder answers `Unavailable`;
//! - [`redis_outage`]: a node on a private `redis-server` (append-only
//!   file on, so the timers come back with it) that is killed with
//!   SIGKILL: `stats` polled through the outage, one `add` timed until it
//!   answers `Unavailable`, then the server restarted and timed until the
//!   counts are fresh and an add succeeds;
//! - [`shutdown`]: a node holding `n` claims shut down (its claims go back
//!   to the store in one call), on either store, and on Redis also with
//!   the server killed first (the hand-back fails after `unavailable_after`
//!   and the claims are left to their leases).
//!
//! Each run checks what the library documents for the case: the error is
//! `Unavailable`, the counts read last are kept while the store is gone,
//! the claims are pending again after a shutdown (or still claimed, left to
//! their leases, when the hand-back could not reach the store).

use std::time::{Duration, Instant, SystemTime};

use wheel_durable::{DurableError, DurableStats, DurableTimers, Outcome};
use wheel_testkit::{RedisServer, ServerOptions};

use super::ours::{self, Store};
use super::{key, whole_ms};
use crate::stats::percentile_sorted;
use crate::workloads::Check;

/// The outage runs' sizes.
#[derive(Debug, Clone)]
pub struct OutageParams {
    /// The builder's `unavailable_after` in every run.
    pub unavailable_after: Duration,
    /// `stats` calls during the outage...
    pub polls: usize,
    /// ...one this often.
    pub poll_every: Duration,
    /// Timers in the store through the outage (due in an hour).
    pub timers: usize,
    /// Claims the node holds when it is shut down.
    pub claimed: usize,
}

/// A bounded wait for the setup of a run: a condition that does not hold
/// within `limit` fails the run with `what`.
fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) -> Result<(), String> {
    let until = Instant::now() + limit;
    while !ok() {
        if Instant::now() > until {
            return Err(format!("{what}: not within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// The time from the call to an `Unavailable` answer, or the run's
/// failure when the answer was something else.
fn until_unavailable<T>(f: impl FnOnce() -> Result<T, DurableError>) -> Result<Duration, String> {
    let t = Instant::now();
    match f() {
        Err(DurableError::Unavailable(_)) => Ok(t.elapsed()),
        Err(e) => Err(format!("answered {e} instead of Unavailable")),
        Ok(_) => Err("succeeded with the store gone".into()),
    }
}

/// Building a node against a port where nothing listens: the time until
/// the builder answers `Unavailable`.
pub fn unreachable(p: &OutageParams) -> Result<Duration, String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    until_unavailable(|| {
        DurableTimers::builder()
            .redis(&format!("redis://127.0.0.1:{port}/0"))
            .unavailable_after(p.unavailable_after)
            .handler(|_| Outcome::Done)
            .build()
    })
}

/// What a Redis outage under a node measured.
#[derive(Debug, Clone)]
pub struct Outage {
    /// How long each `stats` call during the outage took, sorted.
    pub stats_calls: Vec<Duration>,
    /// The first poll (from 0) that said the store was unavailable.
    pub noticed_at: Option<usize>,
    /// Polls after the first that said so whose counts were not the last
    /// ones read, or that said the store was available again.
    pub wrong_polls: usize,
    /// The time until an `add` answered `Unavailable`.
    pub add_unavailable: Duration,
    /// From the restart until `stats` had fresh counts again.
    pub counts_back: Duration,
    /// From the restart until an `add` succeeded.
    pub add_back: Duration,
}

impl Outage {
    /// The slowest `stats` call and the median one.
    pub fn stats_max_p50(&self) -> (Duration, Duration) {
        let ns: Vec<i64> = self
            .stats_calls
            .iter()
            .map(|d| d.as_nanos() as i64)
            .collect();
        let p50 = percentile_sorted(&ns, 50.0)
            .map_or(Duration::ZERO, |v| Duration::from_nanos(v.max(0) as u64));
        (self.stats_calls.last().copied().unwrap_or_default(), p50)
    }

    /// The outage noticed within two polls, the last counts kept while the
    /// store was gone.
    pub fn check(&self) -> Check {
        let late = match self.noticed_at {
            Some(n) => u64::from(n > 2),
            None => 1,
        };
        Check::from_errors(&[
            ("outage noticed late or never", late),
            ("polls without the last counts", self.wrong_polls as u64),
        ])
    }
}

/// Whether `s` reports fresh counts with `n` timers pending.
fn fresh(s: &DurableStats, n: usize) -> bool {
    s.store_available
        && s.pending == Some(n as u64)
        && s.store_counts_age < Some(Duration::from_secs(1))
}

/// Kills a private Redis server under a node and starts it again.
pub fn redis_outage(p: &OutageParams) -> Result<Outage, String> {
    let mut server = RedisServer::start(ServerOptions { aof: true }).map_err(|e| e.to_string())?;
    let e = |e: DurableError| e.to_string();
    let timers = DurableTimers::builder()
        .redis(&server.url())
        .namespace("outage")
        .unavailable_after(p.unavailable_after)
        .handler(|_| Outcome::Done)
        .build()
        .map_err(e)?;
    let later = whole_ms(SystemTime::now()) + Duration::from_secs(3_600);
    let keys: Vec<String> = (0..p.timers).map(key).collect();
    ours::add_all(&timers, &keys, &vec![later; p.timers], 1_000).map_err(e)?;
    wait_until("fresh counts", Duration::from_secs(10), || {
        fresh(&timers.stats(), p.timers)
    })?;
    server.kill();
    let mut calls = Vec::with_capacity(p.polls);
    let (mut noticed_at, mut wrong_polls) = (None, 0);
    for i in 0..p.polls {
        let t = Instant::now();
        let s = timers.stats();
        calls.push(t.elapsed());
        if noticed_at.is_none() && !s.store_available {
            noticed_at = Some(i);
        }
        if noticed_at.is_some() && (s.store_available || s.pending != Some(p.timers as u64)) {
            wrong_polls += 1;
        }
        std::thread::sleep(p.poll_every);
    }
    calls.sort_unstable();
    let add_unavailable = until_unavailable(|| timers.add_at("during", later, b""))?;
    server.restart().map_err(|e| e.to_string())?;
    let back = Instant::now();
    wait_until("counts after the restart", Duration::from_secs(30), || {
        fresh(&timers.stats(), p.timers)
    })?;
    let counts_back = back.elapsed();
    wait_until("an add after the restart", Duration::from_secs(30), || {
        timers.add_at("after", later, b"").is_ok()
    })?;
    let add_back = back.elapsed();
    timers.shutdown().map_err(e)?;
    Ok(Outage {
        stats_calls: calls,
        noticed_at,
        wrong_polls,
        add_unavailable,
        counts_back,
        add_back,
    })
}

/// A shutdown of a node holding claims.
#[derive(Debug, Clone)]
pub struct Shutdown {
    /// Claims the node held when `shutdown` was called.
    pub held: u64,
    /// How long `shutdown` took.
    pub took: Duration,
    /// What the store said afterwards: (pending, claimed).
    pub after: (Option<u64>, Option<u64>),
    /// What the store should say: every claim pending again, or (the store
    /// gone) every claim still claimed, left to its lease.
    pub expected: (u64, u64),
}

impl Shutdown {
    /// The store's counts afterwards as documented.
    pub fn check(&self) -> Check {
        let (pending, claimed) = self.after;
        let wrong = pending != Some(self.expected.0) || claimed != Some(self.expected.1);
        if wrong {
            Check::Failed(format!(
                "afterwards pending {pending:?}, claimed {claimed:?}; expected {:?}",
                self.expected
            ))
        } else {
            Check::Passed
        }
    }
}

/// Where a shutdown run keeps its timers.
#[derive(Debug, Clone, Copy)]
pub enum ShutdownStore<'a> {
    /// A fresh embedded store.
    Embedded,
    /// The Redis server at this URL, left running.
    Redis(&'a str),
    /// A private Redis server with its append-only file on, killed once
    /// the claims are made (and started again to read the counts).
    RedisKilled,
}

/// Shuts down a node holding `p.claimed` claims, due in 10 s, and reads
/// the store's counts with a fresh client afterwards.
pub fn shutdown(p: &OutageParams, on: ShutdownStore<'_>) -> Result<Shutdown, String> {
    match on {
        ShutdownStore::Embedded => {
            let path = super::temp_store("shutdown");
            let out = shutdown_on(p, &Store::Embedded(path.clone()), None);
            super::remove_store(&path);
            out
        }
        ShutdownStore::Redis(url) => shutdown_on(p, &Store::Redis(url.into()), None),
        ShutdownStore::RedisKilled => {
            let mut server =
                RedisServer::start(ServerOptions { aof: true }).map_err(|e| e.to_string())?;
            let store = Store::Redis(server.url());
            shutdown_on(p, &store, Some(&mut server))
        }
    }
}

fn shutdown_on(
    p: &OutageParams,
    store: &Store,
    kill: Option<&mut RedisServer>,
) -> Result<Shutdown, String> {
    let e = |e: DurableError| e.to_string();
    let n = p.claimed;
    let node = ours::builder(store, "shutdown")
        .claim_ahead(Duration::from_secs(20))
        .max_claimed(n)
        .unavailable_after(p.unavailable_after)
        .handler(|_| Outcome::Done)
        .build()
        .map_err(e)?;
    let due = whole_ms(SystemTime::now()) + Duration::from_secs(10);
    let keys: Vec<String> = (0..n).map(key).collect();
    ours::add_all(&node, &keys, &vec![due; n], 1_000).map_err(e)?;
    wait_until("the claims", Duration::from_secs(9), || {
        node.stats().held == n as u64
    })?;
    let killed = kill.is_some();
    let mut server = kill;
    if let Some(s) = server.as_deref_mut() {
        s.kill();
    }
    let t = Instant::now();
    node.shutdown().map_err(e)?;
    let took = t.elapsed();
    if let Some(s) = server {
        s.restart().map_err(|e| e.to_string())?;
    }
    // A client (no handler): it reads the counts and claims nothing.
    let client = ours::builder(store, "shutdown").build().map_err(e)?;
    let mut after = (None, None);
    wait_until("the counts afterwards", Duration::from_secs(9), || {
        let s = client.stats();
        after = (s.pending, s.claimed);
        s.pending.is_some()
    })?;
    client.shutdown().map_err(e)?;
    Ok(Shutdown {
        held: n as u64,
        took,
        after,
        expected: if killed { (0, n as u64) } else { (n as u64, 0) },
    })
}
