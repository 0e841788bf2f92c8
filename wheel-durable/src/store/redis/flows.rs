//! The Redis store's flow control: the calls of `pause.lua` (pause or
//! resume the namespace or a flow key), `defer.lua` (park claims a node
//! hands back), `flows.lua` (the state) and the limits' writes; `flow.lua`
//! holds the rules the start, finish and claim scripts share: the gate,
//! the permits, the rate, the breakers and the wake-ups with their
//! allowances (`store/flow_state.rs` states them).
//!
//! Keys: `{ns}:paused` hash of the paused flow keys (flow key → `1`; the
//! field `""`, which no flow key can be, is the paused namespace),
//! `{ns}:parked` sorted set of every parked key by due time (the parked
//! listing and count), `{ns}:pflow` hash parked key → its flow key,
//! `{ns}:parked:<flow>` sorted set of one flow key's parked keys by due
//! time (what a resume takes, earliest first), `{ns}:pflows` sorted set
//! (score 0, so in byte order) of the flow keys with parked timers,
//! `{ns}:wakeups` sorted set of flow keys by wake time, `{ns}:limits` hash
//! flow key → its limits (`Limits::encode`; the field `""` holds the
//! defaults), `{ns}:tat` hash flow key → its rate's theoretical arrival
//! time in µs (decimal), `{ns}:breakers` hash flow key → its breaker
//! (phase, failures, step, until, opened at, the probe's fence and key;
//! see `flow.lua`), `{ns}:inflight:<flow>` sorted set of the permits taken
//! under a flow key (member: the run's fence as 8 bytes little-endian,
//! then its key; score: its lease end), `{ns}:inflight` sorted set (score
//! 0) of the flow keys whose own set is not empty, and `{ns}:permits` hash
//! key of a run holding a permit → its fence (8 bytes) and flow key.
//!
//! Invariants: a parked key is in `{ns}:parked`, `{ns}:pflow` and its flow
//! key's set, in no other index; a flow key is in `{ns}:pflows` exactly
//! while its own set is not empty, and in `{ns}:inflight` exactly while
//! its permits' set is not empty. A breaker is stored unless it is closed
//! with no failure counted. A permit is valid while its run is running
//! with the member's fence and its lease has not passed. Every record
//! change goes through the prelude's `unindex`, which notes the running
//! runs a script changes; its flush looks them up in `{ns}:permits` (one
//! `EXISTS` while none is held) and removes the member of each run that
//! ended (finish, cancel, replace, lease taken back) or moves its score to
//! a renewed lease. So a member whose score (lease end) is still to come is
//! valid, and only those whose lease end has come unseen (a node that
//! died) are checked against their records, once per key and call.
//!
//! Cost: while nothing is paused and no key has limits, a start reads one
//! `EXISTS` more than without flow control, a claim one `ZRANGEBYSCORE`
//! of the due wake-ups, a finish one `HMGET` of the limits when it names
//! flow keys. Otherwise each distinct flow key of a call has its limits,
//! rate, breaker and permits read once for the whole call.
//!
//! Node state: none: the keys belong to the store.

use redis::Value;

use super::call::Call;
use super::{RedisStore, bad_reply, bytes, int, millis};
use crate::DurableError;
use crate::flow_key::check_deferral;
use crate::store::flow_state::{BreakerView, FlowClass, FlowEntry, Phase};
use crate::store::{
    Fenced, FlowOutcome, FlowsState, Limits, Millis, Start, StoreResult, UNPARK_BATCH,
};

/// Values of one key in the flows script's answer.
const ENTRY: usize = 9;

/// Encoded limits as the scripts answer them (nil: none).
fn limits(v: &Value) -> Option<Option<Limits>> {
    match v {
        Value::Nil => Some(None),
        v => Limits::decode(&bytes(v)?).map(Some),
    }
}

fn entry(e: &[Value]) -> Option<FlowEntry> {
    let phase = match int(&e[5])? {
        0 => Phase::Closed,
        1 => Phase::Open,
        2 => Phase::HalfOpen,
        _ => return None,
    };
    Some(FlowEntry {
        key: String::from_utf8(bytes(&e[0])?).ok()?,
        paused: int(&e[1])? == 1,
        parked: millis(&e[2])?,
        limits: limits(&e[3])?,
        in_flight: u32::try_from(int(&e[4])?).ok()?,
        breaker: BreakerView {
            phase,
            failures: u32::try_from(int(&e[6])?).ok()?,
            step: u32::try_from(int(&e[7])?).ok()?,
            until: u64::try_from(int(&e[8])?).ok(),
        },
    })
}

/// The flows script's answer, its keys in byte order.
fn flows_state(reply: &[Value]) -> Option<FlowsState> {
    let [paused, defaults, rest @ ..] = reply else {
        return None;
    };
    if rest.len() % ENTRY != 0 {
        return None;
    }
    let mut keys = rest.chunks(ENTRY).map(entry).collect::<Option<Vec<_>>>()?;
    keys.sort_by(|a, b| a.key.cmp(&b.key));
    Some(FlowsState {
        paused: int(paused)? == 1,
        defaults: limits(defaults)?,
        keys,
    })
}

/// The start script's answer: four numbers per claim (`start.lua`).
pub(super) fn starts(reply: &[i64], n: usize) -> Option<Vec<Start>> {
    let ms = |v: i64| Millis::try_from(v).ok();
    let start = |t: &[i64]| match *t {
        [0, _, _, _] => Some(Start::Stale),
        [1, now, due, _] => Some(Start::NotYet {
            now: ms(now)?,
            due: ms(due)?,
        }),
        [2, now, attempt, _] => Some(Start::Started {
            now: ms(now)?,
            attempt: u32::try_from(attempt).ok()?,
        }),
        [3, now, _, _] => Some(Start::Paused { now: ms(now)? }),
        [4, now, until, _] => Some(Start::Wait {
            now: ms(now)?,
            until: ms(until)?,
        }),
        [5, now, attempt, at] => Some(Start::Reserved {
            now: ms(now)?,
            attempt: u32::try_from(attempt).ok()?,
            at: ms(at)?,
        }),
        _ => None,
    };
    let starts: Vec<Start> = reply.chunks(4).map(start).collect::<Option<_>>()?;
    (starts.len() == n).then_some(starts)
}

/// The finish script's flow key, class and `Retry-After` of one run
/// (`finish.lua`).
pub(super) fn outcome_args(inv: &mut Call<'_>, out: Option<&FlowOutcome<'_>>) {
    let Some(out) = out else {
        inv.arg("").arg("").arg(0);
        return;
    };
    inv.arg(out.flow);
    match out.class {
        FlowClass::Success => inv.arg("s").arg(0),
        FlowClass::Failure { retry_after } => inv.arg("f").arg(retry_after),
        FlowClass::Neutral => inv.arg("n").arg(0),
    };
}

impl RedisStore {
    /// `Store::set_paused`.
    pub(super) fn set_flow_paused(&self, flow: Option<&str>, paused: bool) -> StoreResult<bool> {
        // The empty field is the namespace's: an empty flow key would
        // alias it (callers validate keys; this keeps a slip harmless).
        if flow == Some("") {
            return Err(DurableError::InvalidFlow("it is empty".into()));
        }
        self.flag(&self.scripts.pause, |inv| {
            inv.arg(flow.unwrap_or(""))
                .arg(if paused { "1" } else { "0" })
                .arg(UNPARK_BATCH);
        })
    }

    /// `Store::defer`: parks each claim still held with its fence under
    /// its flow key (`defer.lua`).
    pub(super) fn defer_claims(
        &self,
        claims: &[Fenced<'_>],
        flows: &[&str],
    ) -> StoreResult<Vec<bool>> {
        check_deferral(claims.len(), flows)?;
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        self.flags(&self.scripts.defer, claims.len(), |inv| {
            for (c, flow) in claims.iter().zip(flows) {
                inv.arg(c.key).arg(c.fence).arg(*flow);
            }
        })
    }

    /// `Store::set_limits`: one `HSET` or `HDEL` of the limits hash.
    pub(super) fn write_limits(
        &self,
        flow: Option<&str>,
        limits: Option<&Limits>,
    ) -> StoreResult<()> {
        // The empty field holds the defaults, as for the paused hash.
        if flow == Some("") {
            return Err(DurableError::InvalidFlow("it is empty".into()));
        }
        let hash = &self.keys[16];
        let field = flow.unwrap_or("");
        self.with_conn(|c| match limits {
            Some(l) => redis::cmd("HSET")
                .arg(hash)
                .arg(field)
                .arg(l.encode())
                .query::<()>(c),
            None => redis::cmd("HDEL").arg(hash).arg(field).query::<()>(c),
        })
    }

    /// `Store::flows`.
    pub(super) fn read_flows(&self) -> StoreResult<FlowsState> {
        let reply: Vec<Value> = self.run(&self.scripts.flows, |_| {})?;
        flows_state(&reply).ok_or_else(|| bad_reply("flows"))
    }
}
