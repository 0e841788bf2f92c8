//! The peer: the one-second Redis time wheel that services build by hand
//! for timers shared by several processes, written as its users write it.
//!
//! Layout: one sorted set per minute of due time (`{p}:task:{m}`, `m` the
//! minute since the epoch as a hash tag), each task a member scored by its
//! due time in **whole seconds**; one set of removed keys per minute
//! (`{p}:del:{m}`).
//! - add: a script that takes the key out of the minute's deleted set and
//!   `ZADD`s the task (`add.lua`);
//! - remove: `SADD` of the key to the minute's deleted set, which expires
//!   120 s after its first member (`remove.lua`); the task stays in the
//!   sorted set and is skipped when taken;
//! - fire: every node ticks once a second ([`PeerNode`]); a tick's script
//!   (`take.lua`) reads the current minute's deleted set and takes the
//!   tasks scored from the current second `s` to `s + 1`, both included,
//!   with `ZRANGE .. BYSCORE` and `ZREMRANGEBYSCORE`; the node skips the
//!   deleted ones and runs the rest in process at once.
//!
//! What follows by design: a task is taken up to two seconds before it is
//! due (whole-second scores and an inclusive range), so it fires early;
//! except in a minute's first second, whose tasks live in the next
//! minute's set, out of reach of the tick in second 59: the tick in second
//! 0 takes them, late by that tick's phase. A task taken by a node that
//! dies before running it is gone; a tick that misses its second (a pause,
//! a restart) leaves that second's tasks in Redis for good.
//!
//! A task (the sorted set's member) is its key, `|`, and its payload.

mod node;

pub use node::{OnTake, PeerNode, Run};

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use redis::{Connection, RedisResult, Script, Value};

/// A task as a tick hands it to the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// The key.
    pub key: Vec<u8>,
    /// The payload.
    pub payload: Vec<u8>,
}

/// The member that stores a task.
fn member(key: &str, payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(key.len() + 1 + payload.len());
    m.extend_from_slice(key.as_bytes());
    m.push(b'|');
    m.extend_from_slice(payload);
    m
}

/// The task in a member (`None` for a member without `|`).
fn task_of(member: &[u8]) -> Option<Task> {
    let bar = member.iter().position(|b| *b == b'|')?;
    Some(Task {
        key: member[..bar].to_vec(),
        payload: member[bar + 1..].to_vec(),
    })
}

/// Whole seconds since the epoch (rounded down, as the design scores).
fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The client side: add and remove tasks, take a second's tasks.
pub struct SecondWheel {
    client: redis::Client,
    /// Idle connections; a call takes one (or opens one) and puts it back.
    pool: Mutex<Vec<Connection>>,
    prefix: String,
    add: Script,
    remove: Script,
    take: Script,
}

impl SecondWheel {
    /// A client of the wheel named `prefix` on the server at `url`.
    pub fn open(url: &str, prefix: &str) -> RedisResult<SecondWheel> {
        let wheel = SecondWheel {
            client: redis::Client::open(url)?,
            pool: Mutex::new(Vec::new()),
            prefix: prefix.to_owned(),
            add: Script::new(include_str!("add.lua")),
            remove: Script::new(include_str!("remove.lua")),
            take: Script::new(include_str!("take.lua")),
        };
        wheel.with_conn(|c| redis::cmd("PING").query::<String>(c))?;
        Ok(wheel)
    }

    fn with_conn<T>(&self, f: impl FnOnce(&mut Connection) -> RedisResult<T>) -> RedisResult<T> {
        let pooled = self.pool.lock().unwrap().pop();
        let mut conn = match pooled {
            Some(c) => c,
            None => self.client.get_connection()?,
        };
        let out = f(&mut conn)?;
        self.pool.lock().unwrap().push(conn);
        Ok(out)
    }

    fn tasks_key(&self, sec: u64) -> String {
        format!("{}:task:{{{}}}", self.prefix, sec / 60)
    }

    fn deleted_key(&self, sec: u64) -> String {
        format!("{}:del:{{{}}}", self.prefix, sec / 60)
    }

    /// Adds a task due at `due`.
    pub fn add(&self, key: &str, due: SystemTime, payload: &[u8]) -> RedisResult<()> {
        let sec = unix_secs(due);
        self.with_conn(|c| {
            self.add
                .key(self.tasks_key(sec))
                .key(self.deleted_key(sec))
                .arg(sec)
                .arg(member(key, payload))
                .arg(key)
                .invoke::<i64>(c)
                .map(drop)
        })
    }

    /// Adds many tasks with one round trip: the add script once per task,
    /// pipelined (each task on its own, as the design has no batch).
    pub fn add_many(&self, tasks: &[(String, SystemTime)], payload: &[u8]) -> RedisResult<()> {
        self.with_conn(|c| {
            let sha = self.add.load(c)?;
            let mut pipe = redis::pipe();
            for (key, due) in tasks {
                let sec = unix_secs(*due);
                pipe.cmd("EVALSHA")
                    .arg(&sha)
                    .arg(2)
                    .arg(self.tasks_key(sec))
                    .arg(self.deleted_key(sec))
                    .arg(sec)
                    .arg(member(key, payload))
                    .arg(key)
                    .ignore();
            }
            pipe.exec(c)
        })
    }

    /// Removes the task `key` due at `due` (the caller must know its due
    /// time: the deleted sets are per minute).
    pub fn remove(&self, key: &str, due: SystemTime) -> RedisResult<()> {
        let sec = unix_secs(due);
        self.with_conn(|c| {
            self.remove
                .key(self.deleted_key(sec))
                .arg(key)
                .invoke::<i64>(c)
                .map(drop)
        })
    }

    /// One tick at `now`: takes the tasks scored `s` and `s + 1` (`s` = now
    /// in whole seconds) from now's minute, less the deleted ones.
    pub fn take(&self, now: SystemTime) -> RedisResult<Vec<Task>> {
        let sec = unix_secs(now);
        let reply = self.with_conn(|c| {
            self.take
                .key(self.tasks_key(sec))
                .key(self.deleted_key(sec))
                .arg(sec)
                .arg(sec + 1)
                .invoke::<Value>(c)
        })?;
        Ok(not_deleted(reply))
    }
}

/// The tasks of a take reply (deleted keys first, then the members) whose
/// keys are not among the deleted ones.
fn not_deleted(reply: Value) -> Vec<Task> {
    let Value::Array(mut items) = reply else {
        return Vec::new();
    };
    if items.is_empty() {
        return Vec::new();
    }
    let deleted: std::collections::HashSet<Vec<u8>> = match items.remove(0) {
        Value::Array(d) => d.into_iter().filter_map(bulk).collect(),
        _ => Default::default(),
    };
    items
        .into_iter()
        .filter_map(bulk)
        .filter_map(|m| task_of(&m))
        .filter(|t| !deleted.contains(&t.key))
        .collect()
}

fn bulk(v: Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.into_bytes()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_hold_key_and_payload() {
        let m = member("order:17", b"close|now");
        assert_eq!(m, b"order:17|close|now");
        let t = task_of(&m).unwrap();
        assert_eq!(
            (t.key.as_slice(), t.payload.as_slice()),
            (&b"order:17"[..], &b"close|now"[..])
        );
        assert_eq!(task_of(b"no-bar"), None);
    }

    #[test]
    fn a_take_reply_skips_deleted_keys() {
        let s = |b: &[u8]| Value::BulkString(b.to_vec());
        let reply = Value::Array(vec![
            Value::Array(vec![s(b"b")]),
            s(b"a|1"),
            s(b"b|2"),
            s(b"c|3"),
        ]);
        let keys: Vec<Vec<u8>> = not_deleted(reply).into_iter().map(|t| t.key).collect();
        assert_eq!(keys, vec![b"a".to_vec(), b"c".to_vec()]);
        assert!(not_deleted(Value::Nil).is_empty());
    }

    #[test]
    fn seconds_round_down() {
        let t = UNIX_EPOCH + std::time::Duration::from_millis(61_999);
        assert_eq!(unix_secs(t), 61);
    }
}
