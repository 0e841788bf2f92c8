//! The wire form of the store's calls: the arguments the operations take
//! (a fenced key, a due time) and the replies they give (integers, bytes,
//! records, a claim's batch), parsed into the store's types. A reply of
//! the wrong shape parses as `None`, which the caller reports as a bad
//! reply.
//!
//! Node state: none.

use redis::Value;

use super::call::Call;
use crate::TimerState;
use crate::store::record::{DeadRecord, Record};
use crate::store::schedules::SchedRecord;
use crate::store::{ClaimBatch, Claimed, Due, Fenced, Listed, Millis};

/// Key and fence of each entry of a batch.
pub(super) fn fenced_args(inv: &mut Call<'_>, batch: &[Fenced<'_>]) {
    for f in batch {
        inv.arg(f.key).arg(f.fence);
    }
}

/// The two arguments of a due time: its kind and its value.
pub(super) fn due_args(inv: &mut Call<'_>, due: Due) {
    match due {
        Due::At(at) => inv.arg("a").arg(at),
        Due::After(ms) => inv.arg("r").arg(ms),
    };
}

pub(super) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(n) => Some(*n),
        _ => None,
    }
}

pub(super) fn bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b.clone()),
        _ => None,
    }
}

pub(super) fn millis(v: &Value) -> Option<Millis> {
    int(v).and_then(|n| u64::try_from(n).ok())
}

/// -1 for "none", as the scripts answer.
pub(super) fn maybe_millis(v: &Value) -> Option<Option<Millis>> {
    int(v).map(|n| u64::try_from(n).ok())
}

/// A timer record (or a dead letter's, with `dead`) as a listing reports
/// it: its score is the time its index orders it by.
pub(super) fn listed(key: &str, rec: &Value, dead: bool) -> Option<Listed> {
    let rec = bytes(rec)?;
    if dead {
        let d = DeadRecord::decode(&rec)?;
        return Some(Listed {
            score: d.failed_at,
            info: d.info(key),
        });
    }
    let r = Record::decode(&rec)?;
    let score = match r.state {
        TimerState::Pending | TimerState::Parked => r.due,
        _ => r.lease_until,
    };
    Some(Listed {
        score,
        info: r.info(key),
    })
}

/// A claim's answer, and the schedule record that came with each claimed
/// chain run (see `claimed_schedules.rs`).
pub(super) fn claim_batch(reply: &[Value]) -> Option<(ClaimBatch, Vec<(String, SchedRecord)>)> {
    let (head, rest) = reply.split_at_checked(6)?;
    let shown = usize::try_from(int(&head[5])?).ok()?;
    let (shown, rest) = rest.split_at_checked(shown)?;
    let expired_keys = shown
        .iter()
        .map(|k| String::from_utf8(bytes(k)?).ok())
        .collect::<Option<Vec<String>>>()?;
    let mut batch = ClaimBatch {
        expired_keys,
        now: millis(&head[0])?,
        reclaimed: u32::try_from(int(&head[1])?).ok()?,
        expired_dead: u32::try_from(int(&head[2])?).ok()?,
        next_due: maybe_millis(&head[3])?,
        next_lease: maybe_millis(&head[4])?,
        timers: Vec::with_capacity(rest.len() / 8),
    };
    let mut records = Vec::new();
    for t in rest.chunks(8) {
        let [
            key,
            due,
            first_due,
            attempts,
            fence,
            first_fence,
            payload,
            schedule,
        ] = t
        else {
            return None;
        };
        let key = String::from_utf8(bytes(key)?).ok()?;
        if let Value::BulkString(b) = schedule {
            records.push((key.clone(), SchedRecord::decode(b)?));
        }
        batch.timers.push(Claimed {
            key,
            due: millis(due)?,
            first_due: millis(first_due)?,
            attempts: u32::try_from(int(attempts)?).ok()?,
            fence: millis(fence)?,
            first_fence: millis(first_fence)?,
            payload: bytes(payload)?,
        });
    }
    Some((batch, records))
}
