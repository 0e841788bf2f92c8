//! Redis's slow log as a per-script stopwatch: every command with its
//! execution time, named by the script it calls.
//!
//! `INFO commandstats` counts every script under one command (`evalsha`
//! or `fcall`). A [`SlowLog`] sets `slowlog-log-slower-than` to 0 (every
//! command is logged, with its execution time in µs and its first
//! arguments) and `slowlog-max-len` to [`MAX_LEN`], and drains the log
//! from a thread every [`DRAIN_EVERY`] with `SLOWLOG GET -1` and
//! `SLOWLOG RESET` in one `MULTI`, so that no entry falls between the two.
//! Entry ids run on across resets: a jump between ids is entries the log
//! dropped (it outgrew its length), counted in [`Tallies::missed`], but
//! for the id of each drain's own `SLOWLOG GET`, which its `RESET` erases.
//! Commands that scripts call are logged too, from the client `?:0`, just
//! before the script's entry; their time is within the script's, so they
//! are only counted ([`Tallies::inner`]). The
//! server's two settings are put back when the log is finished or dropped.
//!
//! Naming: `FCALL wheel_<8 hex>_<script>` names its script after the
//! second `_`. `EVALSHA <sha>` does not, and the store's scripts are
//! private, so each call's own arguments (after the store's keys and its
//! three common arguments: clock, window, wake channel) are matched
//! against the shape of each script's arguments ([`fits`]). One sha is
//! one script, so a sha's name is what fits all its calls, narrowed by the
//! names other shas settled; a sha that fits nothing or several scripts
//! shows as `evalsha <first 8 of sha>` (with the candidates when few).
//!
//! The log times execution only: reading the command, writing the reply
//! and the server's upkeep are not in it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use redis::Value;

/// How often the log is drained. At `slowlog-max-len` [`MAX_LEN`] this
/// keeps up with 10 million commands per second.
pub const DRAIN_EVERY: Duration = Duration::from_millis(10);

/// The log's length while measuring.
pub const MAX_LEN: u64 = 100_000;

/// Arguments every store call has after its keys: the clock, the window
/// and the wake channel.
const COMMON_ARGS: usize = 3;

/// The address the log gives a command that a script called.
const SCRIPT_CLIENT: &str = "?:0";

/// Commands the measurement sends itself, left out of the figures.
const OWN: [&str; 5] = ["slowlog", "config", "info", "multi", "exec"];

/// One slow log entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Its id, rising by one per logged command.
    pub id: u64,
    /// Execution time, µs.
    pub micros: u64,
    /// The arguments the log kept (at most 32, each at most 128 bytes),
    /// the command first.
    pub args: Vec<String>,
    /// The command's full argument count (the log's last kept argument
    /// says how many it left out).
    pub argc: usize,
    /// The client's address; `?:0` for a command a script called (logged
    /// right before the script's own entry, its time within the script's).
    pub client: String,
}

/// The entry in one element of `SLOWLOG GET`'s reply: `[id, unix time,
/// µs, [args..], client, name]`.
pub fn parse_entry(v: &Value) -> Option<Entry> {
    let Value::Array(fields) = v else { return None };
    let int = |v: &Value| match v {
        Value::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    };
    let Some(Value::Array(raw)) = fields.get(3) else {
        return None;
    };
    let mut args = raw
        .iter()
        .map(|a| match a {
            Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Value::SimpleString(s) => Some(s.clone()),
            _ => None,
        })
        .collect::<Option<Vec<String>>>()?;
    let mut argc = args.len();
    if let Some(left) = args.last().and_then(|a| more_arguments(a)) {
        args.pop();
        argc = args.len() + left;
    }
    Some(Entry {
        id: int(fields.first()?)?,
        micros: int(fields.get(2)?)?,
        args,
        argc,
        client: match fields.get(4) {
            Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        },
    })
}

/// N in the log's "... (N more arguments)".
fn more_arguments(a: &str) -> Option<usize> {
    a.strip_prefix("... (")?
        .strip_suffix(" more arguments)")?
        .parse()
        .ok()
}

/// Who a logged command called.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Callee {
    /// A function; for the store's `wheel_<8 hex>_<script>`, the script.
    Function(String),
    /// A script by its sha.
    Sha(String),
    /// Any other command, lower case.
    Command(String),
}

/// A script call's callee, its own arguments as far as the log kept them,
/// and how many it had; other commands have no arguments here.
pub fn call_of(e: &Entry) -> (Callee, Vec<String>, usize) {
    let cmd = e.args.first().map_or(String::new(), |c| c.to_lowercase());
    let callee = match (cmd.as_str(), e.args.get(1)) {
        ("fcall" | "fcall_ro", Some(f)) => Callee::Function(script_of_function(f).to_string()),
        ("evalsha" | "evalsha_ro", Some(sha)) => Callee::Sha(sha.to_lowercase()),
        _ => return (Callee::Command(cmd), Vec::new(), 0),
    };
    let numkeys = e.args.get(2).and_then(|n| n.parse::<usize>().ok());
    let first = 3 + numkeys.unwrap_or(0) + COMMON_ARGS;
    let own = e.args.get(first..).unwrap_or_default().to_vec();
    (callee, own, e.argc.saturating_sub(first))
}

/// `claim` for `wheel_1a2b3c4d_claim`; any other name as it is.
pub fn script_of_function(f: &str) -> &str {
    let mut parts = f.splitn(3, '_');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("wheel"), Some(hex), Some(script))
            if hex.len() == 8
                && hex.bytes().all(|b| b.is_ascii_hexdigit())
                && !script.is_empty() =>
        {
            script
        }
        _ => f,
    }
}

/// The store's scripts, in the order of [`fits`]'s bits.
pub const SCRIPTS: [&str; 18] = [
    "add",
    "cancel",
    "reschedule",
    "retry_dead",
    "get",
    "ended",
    "dead_letters",
    "claim",
    "start",
    "renew",
    "finish",
    "release",
    "defer",
    "counts",
    "flows",
    "list",
    "pause",
    "schedules",
];

/// The scripts (bits by [`SCRIPTS`]) whose own arguments could be `a`
/// (the kept ones) of `n` in all. A check on an argument the log did not
/// keep passes.
pub fn fits(a: &[String], n: usize) -> u32 {
    let is = |i: usize, ok: &dyn Fn(&str) -> bool| a.get(i).is_none_or(|s| ok(s));
    let int = |s: &str| s.parse::<i64>().is_ok();
    let key = |s: &str| !s.is_empty() && !int(s);
    let kind = |s: &str| s == "a" || s == "r";
    let how = |s: &str| matches!(s, "done" | "retry" | "dead");
    let sched = |s: &str| matches!(s, "get" | "list" | "unplanned");
    let shapes: [bool; 18] = [
        // add: mode, then key, due kind, due, payload per timer.
        n >= 5 && (n - 1) % 4 == 0 && is(0, &|s| s == "r" || s == "i") && is(2, &kind),
        // cancel: the dedup window, then keys.
        n >= 2 && is(0, &int) && is(1, &key) && is(2, &key),
        // reschedule, retry_dead: key, due kind, due (per timer).
        n >= 3 && n % 3 == 0 && is(0, &key) && is(1, &kind) && is(2, &int),
        n >= 3 && n % 3 == 0 && is(0, &key) && is(1, &kind) && is(2, &int),
        // get, ended: a key; dead_letters: the last index.
        n == 1 && is(0, &key),
        n == 1 && is(0, &key),
        n == 1 && is(0, &int),
        // claim: seven numbers.
        n == 7 && a.iter().all(|s| int(s)),
        // start: the lease, then key, fence, step, flow per claim.
        n >= 5 && (n - 1) % 4 == 0 && is(0, &int) && is(1, &key) && is(2, &int),
        // renew: the lease, then key, fence per claim.
        n >= 3 && n % 2 == 1 && is(0, &int) && is(1, &key) && is(2, &int) && is(3, &key),
        // finish: the dedup window, then 7 per run, the third its outcome.
        n >= 8 && (n - 1) % 7 == 0 && is(0, &int) && is(1, &key) && is(2, &int) && is(3, &how),
        // release: key, fence per claim; defer: key, fence, flow.
        n >= 2 && n % 2 == 0 && is(0, &key) && is(0, &|s| !sched(s)) && is(1, &int),
        n >= 3 && n % 3 == 0 && is(0, &key) && is(0, &|s| !sched(s)) && is(1, &int),
        // counts, flows: nothing.
        n == 0,
        n == 0,
        // list: which, score, key, limit.
        n == 4 && is(0, &|s| matches!(s, "d" | "l" | "q" | "k")) && is(3, &int),
        // pause: flow, 0 or 1, batch.
        n == 3 && is(1, &|s| s == "0" || s == "1") && is(2, &int),
        // schedules: what, then ids or a page.
        n >= 1 && is(0, &sched),
    ];
    shapes
        .iter()
        .enumerate()
        .filter(|(_, fit)| **fit)
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// Timers a call of `script` with `n` own arguments names; `None` for
/// scripts whose arguments name none, or an unknown script. `n` counts
/// after the store's keys and three common arguments, for `FCALL` as for
/// `EVALSHA`: the store passes the same arguments either way.
pub fn timers_in(script: &str, n: usize) -> Option<u64> {
    let t = match script {
        "add" | "start" => n.checked_sub(1)? / 4,
        "finish" => n.checked_sub(1)? / 7,
        "renew" => n.checked_sub(1)? / 2,
        "cancel" => n.checked_sub(1)?,
        "release" => n / 2,
        "defer" | "reschedule" | "retry_dead" => n / 3,
        _ => return None,
    };
    Some(t as u64)
}

/// What the log said about one callee.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Calls, and their µs.
    pub calls: u64,
    /// Execution time, µs.
    pub micros: u64,
    /// Calls by their execution µs: the log counts whole µs, so this stays
    /// small and gives the slowest call and the p99 exactly.
    pub by_micros: BTreeMap<u64, u64>,
    /// Calls by their count of own arguments.
    pub by_args: BTreeMap<usize, u64>,
    /// The scripts that fit every call so far (bits by [`SCRIPTS`]).
    pub fits: u32,
}

/// Tallies by callee, fed entries oldest first.
#[derive(Debug, Clone, Default)]
pub struct Tallies {
    /// By callee.
    pub by: BTreeMap<Callee, Tally>,
    /// The last id seen.
    pub last_id: Option<u64>,
    /// Entries the log dropped (gaps between ids).
    pub missed: u64,
    /// Commands scripts called (not in `by`: their time is the scripts').
    pub inner: u64,
    /// Drains.
    pub drains: u64,
    /// Most entries one drain returned.
    pub most: u64,
}

impl Tallies {
    /// Counts `e` (the measurement's own commands only for the ids).
    pub fn add(&mut self, e: &Entry) {
        if let Some(last) = self.last_id {
            let gap = e.id.saturating_sub(last + 1);
            // A drain's `SLOWLOG GET` is logged before its `RESET` runs,
            // which erases it: the id right before a `RESET` is no loss.
            let reset = e.args.len() == 2
                && e.args
                    .iter()
                    .map(|a| a.to_lowercase())
                    .eq(["slowlog", "reset"]);
            self.missed += if reset { gap.saturating_sub(1) } else { gap };
        }
        self.last_id = Some(self.last_id.map_or(e.id, |l| l.max(e.id)));
        if e.client == SCRIPT_CLIENT {
            self.inner += 1;
            return;
        }
        let (callee, own, n) = call_of(e);
        if matches!(&callee, Callee::Command(c) if OWN.contains(&c.as_str())) {
            return;
        }
        let t = self.by.entry(callee).or_insert(Tally {
            fits: u32::MAX,
            ..Tally::default()
        });
        t.calls += 1;
        t.micros += e.micros;
        *t.by_micros.entry(e.micros).or_default() += 1;
        *t.by_args.entry(n).or_default() += 1;
        t.fits &= fits(&own, n);
    }

    /// One row per callee, named, scripts first (by µs, most first).
    pub fn rows(&self) -> Vec<CostRow> {
        let names = sha_names(&self.by);
        let mut rows: Vec<CostRow> = self
            .by
            .iter()
            .map(|(callee, t)| {
                let (name, script) = match callee {
                    Callee::Function(f) => (f.clone(), Some(f.as_str())),
                    Callee::Sha(sha) => match names.get(sha) {
                        Some(&s) => (s.to_string(), Some(s)),
                        None => (sha_label(sha, t.fits), None),
                    },
                    Callee::Command(c) => (format!("`{c}` (not a script)"), None),
                };
                let timers = script.and_then(|s| {
                    t.by_args
                        .iter()
                        .map(|(&n, &calls)| timers_in(s, n).map(|x| x * calls))
                        .sum::<Option<u64>>()
                });
                CostRow {
                    name,
                    is_script: !matches!(callee, Callee::Command(_)),
                    calls: t.calls,
                    micros: t.micros,
                    max: t.by_micros.keys().next_back().copied().unwrap_or(0),
                    p99: quantile(&t.by_micros, t.calls, 0.99),
                    timers,
                }
            })
            .collect();
        rows.sort_by_key(|r| (!r.is_script, std::cmp::Reverse(r.micros)));
        rows
    }
}

/// The smallest µs at or below which `q` of the `calls` in `by_micros`
/// fall (0 for no calls).
pub fn quantile(by_micros: &BTreeMap<u64, u64>, calls: u64, q: f64) -> u64 {
    // Rank of the quantile's call, 1-based: ceil(q * calls), at least 1.
    let rank = ((q * calls as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (&micros, &n) in by_micros {
        seen += n;
        if seen >= rank {
            return micros;
        }
    }
    0
}

/// Each sha that fits exactly one script, after removing from every sha
/// the scripts other shas settled (one script has one sha).
fn sha_names(by: &BTreeMap<Callee, Tally>) -> BTreeMap<String, &'static str> {
    let mut fit: BTreeMap<&str, u32> = by
        .iter()
        .filter_map(|(c, t)| match c {
            Callee::Sha(s) => Some((s.as_str(), t.fits & ((1 << SCRIPTS.len()) - 1))),
            _ => None,
        })
        .collect();
    loop {
        let settled: Vec<(&str, u32)> = fit
            .iter()
            .filter(|(_, m)| m.count_ones() == 1)
            .map(|(s, m)| (*s, *m))
            .collect();
        let mut changed = false;
        for (sha, bit) in settled {
            for (other, m) in fit.iter_mut() {
                if *other != sha && *m & bit != 0 && *m != bit {
                    *m &= !bit;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    fit.into_iter()
        .filter(|(_, m)| m.count_ones() == 1)
        .map(|(s, m)| (s.to_string(), SCRIPTS[m.trailing_zeros() as usize]))
        .collect()
}

/// `evalsha 1a2b3c4d`, with the scripts it could be when there are a few.
fn sha_label(sha: &str, fits: u32) -> String {
    let short = sha.get(..8).unwrap_or(sha);
    let could: Vec<&str> = (0..SCRIPTS.len())
        .filter(|i| fits & (1 << i) != 0)
        .map(|i| SCRIPTS[i])
        .collect();
    match could.len() {
        0 => format!("evalsha {short}"),
        1..=3 => format!("evalsha {short} ({})", could.join(" or ")),
        _ => format!("evalsha {short} (unclear)"),
    }
}

/// One callee's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct CostRow {
    /// The script's name, or what stands for it.
    pub name: String,
    /// A script (or function), not another command.
    pub is_script: bool,
    /// Calls.
    pub calls: u64,
    /// Execution time, µs.
    pub micros: u64,
    /// The slowest call's execution time, µs.
    pub max: u64,
    /// The 99th percentile of its calls' execution time, µs.
    pub p99: u64,
    /// Timers its calls named, when its arguments say.
    pub timers: Option<u64>,
}

/// The slow log logging every command, drained by a thread, until
/// [`finish`](SlowLog::finish) (or until dropped, when a run fails).
pub struct SlowLog {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<Tallies, String>>>,
    restore: Option<Restore>,
}

/// The server's settings before the log was turned up, and a connection
/// to put them back on.
struct Restore {
    conn: redis::Connection,
    slower_than: String,
    max_len: String,
}

impl Restore {
    fn apply(mut self) -> Result<(), String> {
        config_set(&mut self.conn, "slowlog-log-slower-than", &self.slower_than)?;
        config_set(&mut self.conn, "slowlog-max-len", &self.max_len)
    }
}

fn config_get(conn: &mut redis::Connection, name: &str) -> Result<String, String> {
    let pair: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg(name)
        .query(conn)
        .map_err(|e| e.to_string())?;
    pair.get(1).cloned().ok_or_else(|| format!("no {name}"))
}

fn config_set(conn: &mut redis::Connection, name: &str, value: &str) -> Result<(), String> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .exec(conn)
        .map_err(|e| e.to_string())
}

/// Every entry logged so far, oldest first, and the log emptied, in one
/// transaction.
fn drain(conn: &mut redis::Connection) -> Result<Vec<Entry>, String> {
    let (reply,): (Vec<Value>,) = redis::pipe()
        .atomic()
        .cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .cmd("SLOWLOG")
        .arg("RESET")
        .ignore()
        .query(conn)
        .map_err(|e| e.to_string())?;
    let mut entries = reply
        .iter()
        .map(parse_entry)
        .collect::<Option<Vec<Entry>>>()
        .ok_or("a slow log entry of an unknown shape")?;
    entries.reverse();
    Ok(entries)
}

impl SlowLog {
    /// Turns the log of the server at `url` up and starts draining it;
    /// what was logged before is left out.
    pub fn start(url: &str) -> Result<SlowLog, String> {
        let client = redis::Client::open(url).map_err(|e| e.to_string())?;
        let connect = || client.get_connection().map_err(|e| e.to_string());
        let mut conn = connect()?;
        let restore = Restore {
            slower_than: config_get(&mut conn, "slowlog-log-slower-than")?,
            max_len: config_get(&mut conn, "slowlog-max-len")?,
            conn,
        };
        // Made before the settings change, so that a failure from here on
        // puts them back (on drop).
        let mut log = SlowLog {
            stop: Arc::new(AtomicBool::new(false)),
            handle: None,
            restore: Some(restore),
        };
        if let Some(r) = log.restore.as_mut() {
            // The length first: no entry logged at the lower threshold is
            // dropped for want of room.
            config_set(&mut r.conn, "slowlog-max-len", &MAX_LEN.to_string())?;
            config_set(&mut r.conn, "slowlog-log-slower-than", "0")?;
        }
        let mut conn = connect()?;
        let mut tallies = Tallies {
            last_id: drain(&mut conn)?.last().map(|e| e.id),
            ..Tallies::default()
        };
        let stop = log.stop.clone();
        log.handle = Some(std::thread::spawn(move || -> Result<Tallies, String> {
            loop {
                let last = stop.load(Ordering::Relaxed);
                if !last {
                    std::thread::sleep(DRAIN_EVERY);
                }
                let entries = drain(&mut conn)?;
                tallies.drains += 1;
                tallies.most = tallies.most.max(entries.len() as u64);
                entries.iter().for_each(|e| tallies.add(e));
                if last {
                    return Ok(tallies);
                }
            }
        }));
        Ok(log)
    }

    /// Drains the log a last time, puts the server's settings back and
    /// returns the tallies.
    pub fn finish(mut self) -> Result<Tallies, String> {
        self.stop.store(true, Ordering::Relaxed);
        let tallies = match self.handle.take().map(JoinHandle::join) {
            Some(Ok(t)) => t,
            _ => Err("the slow log's thread panicked".into()),
        };
        let restored = self.restore.take().map_or(Ok(()), Restore::apply);
        let tallies = tallies?;
        restored.map(|()| tallies)
    }
}

impl Drop for SlowLog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        if let Some(r) = self.restore.take() {
            let _ = r.apply();
        }
    }
}

#[cfg(test)]
mod tests;
