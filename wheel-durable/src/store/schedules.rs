//! What the stores keep per schedule ([`SchedRecord`]), the operations on
//! it ([`SchedOp`]) and their answers, shared by every store.
//!
//! A record holds the definition (the [`Schedule`](crate::schedule::Schedule)'s
//! stored form) and its overlap policy (a byte the store reads without
//! decoding the definition), the payload each run carries, a generation
//! that grows on every change, the chain's state (the last nominal time,
//! the runs created, the key of the pending run), the paused flag, the key
//! of the run that last started and of the run parked behind it, the
//! skipped counts by reason, and `unplanned`: the chain has no pending run
//! although the schedule is neither paused nor over, so a node must
//! re-plan it.
//!
//! Two byte layouts: the embedded store keeps a record packed small
//! ([`sched_codec`](super::sched_codec)); the Redis store keeps the fields
//! in a hash, and its scripts answer a record in this one (integers
//! little-endian): generation,
//! last nominal time, runs created, the three skipped counts (u64 each), a
//! flags byte (bit 0 paused, bit 1 unplanned, bit 2 a last nominal time is
//! set), the overlap byte, then the definition, the payload and the keys
//! of the next, running and buffered runs, each a u32 length (`u32::MAX`
//! for none) and its bytes.
//!
//! Run keys: a chain run is `sched:{id}:{ms}` ([`run_key`](crate::schedule::run_key)),
//! a triggered run `sched-trigger:{id}:{ms}` ([`trigger_key`]). Keys with
//! either prefix are the stores' own: the library refuses them in `add`.
//!
//! Node state: none (plain values and encodings).

use crate::schedule::chain::{Advance, ChainRun};
use crate::schedule::key::TRIGGER_PREFIX;
use crate::schedule::{Overlap, parse_run_key};
use crate::time::Millis;

/// The key of a run triggered at store time `now`.
#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
pub(crate) fn trigger_key(id: &str, now: Millis) -> String {
    format!("{TRIGGER_PREFIX}{id}:{now}")
}

/// Which schedule a run key belongs to, and whether it is a chain run
/// (`true`) or a triggered one.
pub(crate) fn owner(key: &str) -> Option<(&str, bool, Millis)> {
    if let Some((id, at)) = parse_run_key(key) {
        let ms = crate::time::millis_of(at).ok()?;
        return Some((id, true, ms));
    }
    let (id, ms) = key.strip_prefix(TRIGGER_PREFIX)?.rsplit_once(':')?;
    let canonical = !ms.is_empty()
        && ms.bytes().all(|b| b.is_ascii_digit())
        && (ms == "0" || !ms.starts_with('0'));
    let ms: Millis = ms.parse().ok().filter(|_| canonical)?;
    (!id.is_empty() && ms <= crate::time::MAX_MILLIS).then_some((id, false, ms))
}

/// A schedule as a store holds it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SchedRecord {
    pub(crate) definition: Vec<u8>,
    pub(crate) overlap: u8,
    pub(crate) payload: Vec<u8>,
    pub(crate) generation: u64,
    pub(crate) last_nominal: Option<Millis>,
    pub(crate) runs_created: u64,
    pub(crate) paused: bool,
    pub(crate) unplanned: bool,
    /// The chain's pending run: its start advances the chain.
    pub(crate) next: Option<String>,
    /// The run that last started (overlapping while its timer exists).
    pub(crate) running: Option<String>,
    /// The run parked behind it ([`Overlap::BufferOne`]).
    pub(crate) buffered: Option<String>,
    pub(crate) skipped_missed: u64,
    pub(crate) skipped_overlap: u64,
    pub(crate) skipped_paused: u64,
}

/// The overlap policy as its record byte.
pub(crate) fn overlap_byte(o: Overlap) -> u8 {
    match o {
        Overlap::Skip => 0,
        Overlap::BufferOne => 1,
        Overlap::Allow => 2,
    }
}

/// The overlap policy of a record byte (an unknown byte is the safe one).
#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
pub(crate) fn overlap_of(b: u8) -> Overlap {
    match b {
        1 => Overlap::BufferOne,
        2 => Overlap::Allow,
        _ => Overlap::Skip,
    }
}

const NONE: u32 = u32::MAX;

impl SchedRecord {
    /// The scripts' answer for this record (what `schedule.lua` packs).
    #[cfg(test)]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.definition.len() + self.payload.len());
        for v in [
            self.generation,
            self.last_nominal.unwrap_or(0),
            self.runs_created,
            self.skipped_missed,
            self.skipped_overlap,
            self.skipped_paused,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let flags = u8::from(self.paused)
            | u8::from(self.unplanned) << 1
            | u8::from(self.last_nominal.is_some()) << 2;
        b.push(flags);
        b.push(self.overlap);
        let bytes = |b: &mut Vec<u8>, v: Option<&[u8]>| match v {
            Some(v) => {
                b.extend_from_slice(&u32::try_from(v.len()).unwrap_or(NONE - 1).to_le_bytes());
                b.extend_from_slice(v);
            }
            None => b.extend_from_slice(&NONE.to_le_bytes()),
        };
        bytes(&mut b, Some(&self.definition));
        bytes(&mut b, Some(&self.payload));
        for k in [&self.next, &self.running, &self.buffered] {
            bytes(&mut b, k.as_deref().map(str::as_bytes));
        }
        b
    }

    /// A record from a script's answer.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))] // the Redis store's
    pub(crate) fn decode(b: &[u8]) -> Option<SchedRecord> {
        let mut at = 0;
        let mut u64s = [0u64; 6];
        for v in &mut u64s {
            *v = u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?);
            at += 8;
        }
        let flags = *b.get(at)?;
        let overlap = *b.get(at + 1)?;
        at += 2;
        let mut bytes = || -> Option<Option<Vec<u8>>> {
            let len = u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?);
            at += 4;
            if len == NONE {
                return Some(None);
            }
            let v = b.get(at..at + len as usize)?.to_vec();
            at += len as usize;
            Some(Some(v))
        };
        let definition = bytes()??;
        let payload = bytes()??;
        let mut key = || -> Option<Option<String>> {
            match bytes()? {
                Some(v) => String::from_utf8(v).ok().map(Some),
                None => Some(None),
            }
        };
        let (next, running, buffered) = (key()?, key()?, key()?);
        if at != b.len() || flags & !7 != 0 {
            return None;
        }
        Some(SchedRecord {
            definition,
            overlap,
            payload,
            generation: u64s[0],
            last_nominal: (flags & 4 != 0).then_some(u64s[1]),
            runs_created: u64s[2],
            paused: flags & 1 != 0,
            unplanned: flags & 2 != 0,
            next,
            running,
            buffered,
            skipped_missed: u64s[3],
            skipped_overlap: u64s[4],
            skipped_paused: u64s[5],
        })
    }
}

/// One atomic change of a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SchedOp {
    /// Creates the schedule (`expect` `None`: only if absent) or replaces
    /// its definition (`expect` its generation): a definition and payload
    /// equal to the stored ones change nothing; otherwise the generation
    /// grows, the pending run not started is cancelled and `first` becomes
    /// the chain's pending run (unless the schedule is paused).
    Upsert {
        expect: Option<u64>,
        definition: Vec<u8>,
        overlap: u8,
        payload: Vec<u8>,
        first: Option<ChainRun>,
    },
    /// Pauses: cancels the pending run not started.
    Pause,
    /// Resumes with this step (planned from the record's generation).
    Resume(Advance),
    /// Deletes the record, cancelling its pending and parked runs.
    Delete,
    /// Adds a run due now, keyed by the store's clock.
    Trigger,
    /// Gives an unplanned chain its pending run again.
    Replan(Advance),
}

/// What a [`SchedOp`] did.
#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SchedAnswer {
    /// Created (an upsert of a new id).
    Created,
    /// Changed as asked.
    Changed,
    /// Nothing to change (the same definition, already paused ...).
    Unchanged,
    /// No schedule with this id.
    NotFound,
    /// The record is not at the generation the change was planned from:
    /// read it again and re-plan.
    Conflict,
    /// The key of the triggered run.
    Triggered(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_is_refused() {
        let full = SchedRecord {
            definition: vec![1, 2, 3],
            overlap: 1,
            payload: b"p".to_vec(),
            generation: 7,
            last_nominal: Some(0),
            runs_created: 9,
            paused: true,
            unplanned: true,
            next: Some("sched:a:1".into()),
            running: None,
            buffered: Some("sched-trigger:a:5".into()),
            skipped_missed: 1,
            skipped_overlap: 2,
            skipped_paused: 3,
        };
        for r in [full, SchedRecord::default()] {
            let b = r.encode();
            assert_eq!(SchedRecord::decode(&b), Some(r.clone()));
            for cut in 0..b.len() {
                assert_eq!(SchedRecord::decode(&b[..cut]), None, "cut at {cut}");
            }
        }
    }

    #[test]
    fn run_keys_name_their_schedule() {
        assert_eq!(owner("sched:a:b:15"), Some(("a:b", true, 15)));
        assert_eq!(owner(&trigger_key("a:b", 7)), Some(("a:b", false, 7)));
        for stranger in [
            "order:1",
            "sched-trigger:a:07",
            "sched-trigger::1",
            "sched:a",
        ] {
            assert_eq!(owner(stranger), None, "{stranger}");
        }
    }
}
