//! The Redis store's schedules: the calls of the schedule scripts
//! (`schedule.lua` holds the rules, the same as `store/schedule_steps.rs`;
//! `schedule_write.lua` one change; `schedules.lua` the reads) and the
//! encoding of a chain step the `start` script decodes.
//!
//! Keys: `{ns}:s` (hash: id → record, the layout of
//! [`SchedRecord::encode`]), `{ns}:sids` (sorted set, every id at score 0,
//! for listing in id order) and `{ns}:splan` (sorted set, the ids of the
//! records marked unplanned). A record and its index entries change in
//! the same script.
//!
//! Node state: none: the keys belong to the store.

use redis::Value;

use super::{RedisStore, bad_reply};
use crate::schedule::chain::{Advance, ChainRun};
use crate::store::schedules::{SchedAnswer, SchedOp, SchedRecord};
use crate::store::{Millis, StoreResult};

/// A chain step as `schedule.lua`'s `decode_advance` reads it: the
/// generation, run-this and has-last bytes, the last nominal time, runs
/// created, skipped (u64 each), the count of runs to create (u32), each run
/// (key length u32, key, due u64), then a byte saying whether the pending
/// run follows, and it. Little-endian.
pub(super) fn encode_advance(a: &Advance) -> Vec<u8> {
    let mut b = Vec::with_capacity(64 + 32 * a.create.len());
    b.extend_from_slice(&a.generation.to_le_bytes());
    b.push(u8::from(a.run_this));
    b.push(u8::from(a.last_nominal.is_some()));
    for v in [a.last_nominal.unwrap_or(0), a.runs_created, a.skipped] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    let n = u32::try_from(a.create.len()).unwrap_or(u32::MAX);
    b.extend_from_slice(&n.to_le_bytes());
    let run = |b: &mut Vec<u8>, r: &ChainRun| {
        let len = u32::try_from(r.key.len()).unwrap_or(u32::MAX);
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(r.key.as_bytes());
        b.extend_from_slice(&r.due.to_le_bytes());
    };
    for r in a.create.iter().take(n as usize) {
        run(&mut b, r);
    }
    match &a.pending {
        Some(p) => {
            b.push(1);
            run(&mut b, p);
        }
        None => b.push(0),
    }
    b
}

fn record(v: &Value) -> StoreResult<Option<SchedRecord>> {
    match v {
        Value::Nil => Ok(None),
        Value::BulkString(b) => SchedRecord::decode(b)
            .map(Some)
            .ok_or_else(|| bad_reply("a schedule record")),
        _ => Err(bad_reply("a schedule record")),
    }
}

fn text(v: &Value) -> StoreResult<String> {
    match v {
        Value::BulkString(b) => {
            String::from_utf8(b.clone()).map_err(|_| bad_reply("a schedule id"))
        }
        _ => Err(bad_reply("a schedule id")),
    }
}

impl RedisStore {
    pub(super) fn read_schedules(
        &self,
        ids: &[&str],
    ) -> StoreResult<(Millis, Vec<Option<SchedRecord>>)> {
        let reply: Vec<Value> = self.run(&self.scripts.schedules, |inv| {
            inv.arg("get");
            for id in ids {
                inv.arg(*id);
            }
        })?;
        let (now, records) = reply.split_first().ok_or_else(|| bad_reply("schedules"))?;
        let now = match now {
            Value::Int(n) => u64::try_from(*n).map_err(|_| bad_reply("the clock"))?,
            _ => return Err(bad_reply("the clock")),
        };
        if records.len() != ids.len() {
            return Err(bad_reply("schedules"));
        }
        let records = records.iter().map(record).collect::<StoreResult<_>>()?;
        Ok((now, records))
    }

    /// The records to plan the steps of claimed chain runs `(key, id)`
    /// from: those their claim read, and the others read now (the clock
    /// then is the read's).
    pub(super) fn records_to_start(
        &self,
        runs: &[(&str, &str)],
    ) -> StoreResult<(Millis, Vec<Option<SchedRecord>>)> {
        let keys: Vec<&str> = runs.iter().map(|r| r.0).collect();
        let (kept_now, mut records) = self.claimed_schedules.take(&keys);
        let missing: Vec<usize> = (0..runs.len()).filter(|i| records[*i].is_none()).collect();
        let now = if missing.is_empty() {
            // A test's hand-moved clock wins over the claim's reading.
            self.options.clock.manual().or(kept_now)
        } else {
            None
        };
        if let Some(now) = now {
            return Ok((now, records));
        }
        let ids: Vec<&str> = missing.iter().map(|i| runs[*i].1).collect();
        let (now, read) = self.read_schedules(&ids)?;
        for (i, r) in missing.into_iter().zip(read) {
            records[i] = r;
        }
        Ok((now, records))
    }

    pub(super) fn list_schedule_records(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, SchedRecord)>> {
        let reply: Vec<Value> = self.run(&self.scripts.schedules, |inv| {
            inv.arg("list").arg(after.unwrap_or("")).arg(limit);
        })?;
        reply
            .chunks(2)
            .map(|pair| match pair {
                [id, r] => Ok((
                    text(id)?,
                    record(r)?.ok_or_else(|| bad_reply("a listed id"))?,
                )),
                _ => Err(bad_reply("schedules")),
            })
            .collect()
    }

    pub(super) fn unplanned_ids(&self, limit: usize) -> StoreResult<Vec<String>> {
        let reply: Vec<Value> = self.run(&self.scripts.schedules, |inv| {
            inv.arg("unplanned").arg(limit);
        })?;
        reply.iter().map(text).collect()
    }

    pub(super) fn write_schedule(&self, id: &str, op: &SchedOp) -> StoreResult<SchedAnswer> {
        let reply: Vec<Value> = self.run(&self.scripts.schedule_write, |inv| {
            inv.arg(id);
            match op {
                SchedOp::Upsert {
                    expect,
                    definition,
                    overlap,
                    payload,
                    first,
                } => {
                    inv.arg("upsert")
                        .arg(expect.map_or_else(String::new, |g| g.to_string()))
                        .arg(definition.as_slice())
                        .arg(*overlap)
                        .arg(payload.as_slice());
                    match first {
                        Some(f) => inv.arg(&f.key).arg(f.due).arg(f.nominal),
                        None => inv.arg("").arg("").arg(""),
                    };
                }
                SchedOp::Pause => {
                    inv.arg("pause");
                }
                SchedOp::Delete => {
                    inv.arg("delete");
                }
                SchedOp::Trigger => {
                    inv.arg("trigger");
                }
                SchedOp::Resume(a) => {
                    inv.arg("resume").arg(encode_advance(a));
                }
                SchedOp::Replan(a) => {
                    inv.arg("replan").arg(encode_advance(a));
                }
            }
        })?;
        let texts = reply
            .iter()
            .map(text)
            .collect::<StoreResult<Vec<String>>>()?;
        Ok(match texts.as_slice() {
            [a] if a == "created" => SchedAnswer::Created,
            [a] if a == "changed" => SchedAnswer::Changed,
            [a] if a == "unchanged" => SchedAnswer::Unchanged,
            [a] if a == "notfound" => SchedAnswer::NotFound,
            [a] if a == "conflict" => SchedAnswer::Conflict,
            [a, key] if a == "triggered" => SchedAnswer::Triggered(key.clone()),
            _ => return Err(bad_reply("a schedule change")),
        })
    }
}
