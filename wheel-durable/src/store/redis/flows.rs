//! The Redis store's flow control: the calls of `pause.lua` (pause or
//! resume the namespace or a flow key) and `flows.lua` (the paused state);
//! `start.lua` parks, `claim.lua` continues resumes, and `prelude.lua`'s
//! flush keeps the parked indexes (`store/flow_state.rs` states the rules).
//!
//! Keys: `{ns}:paused` hash of the paused flow keys (flow key → `1`; the
//! field `""`, which no flow key can be, is the paused namespace),
//! `{ns}:parked` sorted set of every parked key by due time (the parked
//! listing and count), `{ns}:pflow` hash parked key → its flow key,
//! `{ns}:parked:<flow>` sorted set of one flow key's parked keys by due
//! time (what a resume takes, earliest first), `{ns}:pflows` and
//! `{ns}:resuming` sorted sets (score 0, so in byte order) of the flow keys
//! with parked timers and of those whose resume continues in the claims.
//!
//! Invariants: a parked key is in `{ns}:parked`, `{ns}:pflow` and its flow
//! key's set, in no other index; a flow key is in `{ns}:pflows` exactly
//! while its own set is not empty, and in `{ns}:resuming` only then, so
//! each resuming key a claim visits has timers to unpark. A start reads
//! the paused hash once per call: one `EXISTS`, and one `HMGET` of the
//! namespace field and the batch's flow keys only while something is
//! paused.
//!
//! Node state: none: the keys belong to the store.

use redis::Value;

use super::{RedisStore, bad_reply, bytes, int, millis};
use crate::DurableError;
use crate::store::flow_state::FlowEntry;
use crate::store::{FlowsState, StoreResult, UNPARK_BATCH};

/// The flows script's answer, its keys in byte order.
fn flows_state(reply: &[Value]) -> Option<FlowsState> {
    let (paused, rest) = reply.split_first()?;
    if rest.len() % 3 != 0 {
        return None;
    }
    let mut keys = rest
        .chunks(3)
        .map(|e| {
            Some(FlowEntry {
                key: String::from_utf8(bytes(&e[0])?).ok()?,
                paused: int(&e[1])? == 1,
                parked: millis(&e[2])?,
                limits: None, // FLOWS-TODO
                in_flight: 0,
                breaker: Default::default(),
            })
        })
        .collect::<Option<Vec<FlowEntry>>>()?;
    keys.sort_by(|a, b| a.key.cmp(&b.key));
    Some(FlowsState {
        paused: int(paused)? == 1,
        defaults: None, // FLOWS-TODO
        keys,
    })
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

    /// `Store::flows`.
    pub(super) fn read_flows(&self) -> StoreResult<FlowsState> {
        let reply: Vec<Value> = self.run(&self.scripts.flows, |_| {})?;
        flows_state(&reply).ok_or_else(|| bad_reply("flows"))
    }
}
