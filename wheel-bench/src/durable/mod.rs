//! The durable comparison: our durable timers (`wheel_durable`, on the
//! embedded store and on Redis with one and three nodes) against the
//! one-second Redis time wheel that users build by hand ([`peer`]).
//!
//! Every run gives each timer a 16-byte key `t` + 15 digits (its index) and
//! the same 32-byte payload, due at a whole millisecond, and records each
//! handler start against the requested due time in a [`Recorder`], on this
//! machine's clock (the Redis server is local, so it reads the same clock).
//! A [`Summary`] of the records gives lateness percentiles, early starts,
//! lost timers and duplicate runs, and the check shown in the tables.
//!
//! - [`lateness`]: timers due evenly over a window at a fixed rate;
//! - [`kill`]: the same with three node processes, one killed mid window
//!   ([`node`] is that process, a hidden mode of the `wheel-bench` binary);
//! - [`throughput`]: adds (one, eight and sixty-four threads, batched),
//!   firing many due at once, store bytes per timer, and the embedded
//!   store's restart; [`disk`]: the raw disk's group-commit appends beside
//!   the embedded adds; [`redis_cpu`]: the Redis server's CPU while firing;
//! - [`script_cost`]: Redis's time by script (from the [`slowlog`]) for
//!   the fire rate with three nodes and for single adds;
//! - [`nearfar`]: adds to Redis while three nodes fire, timers due soon
//!   against timers an hour out; [`adds_firing`]: single adds from four
//!   threads of timers due from 3 s ahead while three nodes fire them;
//! - [`outage`]: a Redis server killed under a node, an unreachable one,
//!   and a node shut down while it holds claims;
//! - [`flow_cost`]: what flow limits cost per callback on Redis, in
//!   Redis's CPU and the nodes'; [`replay`]: dead letters replayed in bulk
//!   at a set rate;
//! - [`chart`]: the lateness distributions as an SVG;
//! - [`ours`]: our builders, nodes and recording handler as the runs use
//!   them; [`record`]: the records and their summary.

pub mod adds_firing;
pub mod chart;
pub mod cluster;
pub mod disk;
pub mod flow_cost;
pub mod http;
pub mod kill;
pub mod lateness;
pub mod nearfar;
pub mod node;
pub mod ours;
pub mod outage;
pub mod peer;
pub mod record;
pub mod redis_cpu;
pub mod replay;
pub mod script_cost;
pub mod slowlog;
pub mod throughput;

pub use record::{Recorder, Summary};

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One implementation of the comparison, with its node count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Impl {
    /// Ours on the embedded store (one node: one process owns the store).
    Embedded,
    /// Ours on Redis.
    Redis {
        /// Nodes firing.
        nodes: usize,
    },
    /// The one-second Redis time wheel.
    Peer {
        /// Nodes ticking.
        nodes: usize,
    },
}

impl Impl {
    /// The row name.
    pub fn name(&self) -> String {
        let nodes = |n: usize| {
            if n == 1 {
                "1 node".to_string()
            } else {
                format!("{n} nodes")
            }
        };
        match *self {
            Impl::Embedded => "ours, embedded".into(),
            Impl::Redis { nodes: n } => format!("ours, Redis, {}", nodes(n)),
            Impl::Peer { nodes: n } => format!("one-second Redis wheel, {}", nodes(n)),
        }
    }

    /// Whether it needs a Redis server.
    pub fn needs_redis(&self) -> bool {
        !matches!(self, Impl::Embedded)
    }
}

/// Empties the Redis server at `url` between runs.
pub fn flush(url: &str) -> Result<(), String> {
    let mut c = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .map_err(|e| e.to_string())?;
    redis::cmd("FLUSHALL")
        .exec(&mut c)
        .map_err(|e| e.to_string())
}

/// The payload of every timer (32 bytes).
pub const PAYLOAD: &[u8; 32] = b"wheel-bench-durable-payload-32b!";

/// The key of timer `i`: `t` and 15 digits, 16 bytes.
pub fn key(i: usize) -> String {
    format!("t{i:015}")
}

/// The index in a key made by [`key`] (any one-letter prefix).
pub fn index_of(key: &[u8]) -> Option<usize> {
    std::str::from_utf8(key.get(1..)?).ok()?.parse().ok()
}

/// Nanoseconds since the Unix epoch (negative before it).
pub fn unix_ns(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        Err(e) => -(e.duration().as_nanos() as i64),
    }
}

/// `t` rounded up to a whole millisecond, so that the stores keep it as is.
pub fn whole_ms(t: SystemTime) -> SystemTime {
    let ns = unix_ns(t).max(0) as u128;
    UNIX_EPOCH + Duration::from_millis(ns.div_ceil(1_000_000) as u64)
}

/// Due times of `n` timers spread evenly over `window` from `start`
/// (rounded up to whole milliseconds).
pub fn spread(n: usize, start: SystemTime, window: Duration) -> Vec<SystemTime> {
    let start = whole_ms(start);
    (0..n)
        .map(|i| whole_ms(start + window.mul_f64(i as f64 / n.max(1) as f64)))
        .collect()
}

/// A fresh path for an embedded store (a directory) under the temporary
/// directory; remove it with [`remove_store`].
pub fn temp_store(name: &str) -> std::path::PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    std::env::temp_dir().join(format!("wheel-bench-{name}-{}-{nanos}", std::process::id()))
}

/// The bytes an embedded store takes on disk: the blocks allocated to its
/// files (its journal is preallocated sparse, so its length says little).
pub fn store_bytes(path: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    let mut total = 0;
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        total += if meta.is_dir() {
            store_bytes(&entry.path())
        } else {
            allocated(&meta)
        };
    }
    total
}

#[cfg(unix)]
fn allocated(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.blocks() * 512
}

#[cfg(not(unix))]
fn allocated(meta: &std::fs::Metadata) -> u64 {
    meta.len()
}

/// Removes an embedded store made at a [`temp_store`] path.
pub fn remove_store(path: &std::path::Path) {
    let _ = std::fs::remove_dir_all(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_16_bytes_and_give_back_their_index() {
        assert_eq!(key(42).len(), 16);
        assert_eq!(index_of(key(42).as_bytes()), Some(42));
        assert_eq!(index_of(b"a000000000000007"), Some(7));
        assert_eq!(index_of(b"t"), None);
        assert_eq!(index_of(b""), None);
        assert_eq!(PAYLOAD.len(), 32);
    }

    #[test]
    fn dues_are_whole_milliseconds_spread_over_the_window() {
        let start = UNIX_EPOCH + Duration::from_nanos(1_000_000_500);
        let d = spread(4, start, Duration::from_millis(100));
        let ms: Vec<i64> = d.iter().map(|t| unix_ns(*t) / 1_000_000).collect();
        assert_eq!(ms, vec![1001, 1026, 1051, 1076]);
        assert!(d.iter().all(|t| unix_ns(*t) % 1_000_000 == 0));
        assert_eq!(unix_ns(UNIX_EPOCH - Duration::from_secs(1)), -1_000_000_000);
    }
}
