//! The byte layout of a timer and of a dead letter, shared by the
//! embedded store (its table values) and the Redis store (its hash values,
//! written by the Lua scripts with `struct.pack` in the same layout).
//!
//! A timer: `due`, `lease_until`, `fence` (u64 each), `attempts` (u32),
//! `state` (u8), then `first_due` (u64) only when the state byte has its
//! high bit ([`FIRST_DUE`]) set, then `first_fence` (u64) only when it has
//! [`FIRST_FENCE`] set, then the payload to the end. A dead
//! letter: `failed_at`, `due` (u64 each), `attempts`, the reason's length
//! (u32 each), then `first_due` (u64) only when the length has its high
//! bit set, the reason, then the payload to the end. All integers
//! little-endian.
//!
//! `first_due` is the due time the timer was added (or rescheduled, or
//! revived) with; retries and lost leases move `due` but keep it. It is
//! written only when it differs from `due`, so a timer that never retried
//! costs no byte more.
//!
//! `first_fence` is the fence of the timer's first started run: the
//! identity of one delivery, the same on every attempt (a callback's
//! `webhook-id` is made from it) and new for a timer added again. Until a
//! claim replaces the fence of a timer that has already started, the
//! current fence is that fence, so it is written only from then on: a
//! claim of a timer with `attempts >= 1` and no `first_fence` keeps the old
//! fence there ([`Record::claim_with`]). `add` and `retry_dead` write a
//! fresh record without it; `reschedule` keeps it (the same delivery,
//! moved). A dead letter does not keep it: reviving one is a new delivery.
//! A record that does not parse (too short, an unknown
//! state, a flag without its eight bytes) is reported as corruption, never
//! trusted.
//!
//! Node state: none (pure encoding).

use super::Millis;
use crate::time::system_time_of;
use crate::{TimerInfo, TimerState};

/// A timer as a store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) due: Millis,
    /// The due time before any retry (equal to `due` until one).
    pub(crate) first_due: Millis,
    pub(crate) lease_until: Millis,
    pub(crate) fence: u64,
    pub(crate) attempts: u32,
    pub(crate) state: TimerState,
    /// The fence of the first started run, once a later claim replaced it.
    pub(crate) first_fence: Option<u64>,
    pub(crate) payload: Vec<u8>,
}

/// A dead letter as a store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeadRecord {
    pub(crate) failed_at: Millis,
    pub(crate) due: Millis,
    pub(crate) first_due: Millis,
    pub(crate) attempts: u32,
    pub(crate) reason: String,
    pub(crate) payload: Vec<u8>,
}

const HEADER: usize = 8 + 8 + 8 + 4 + 1;
const DEAD_HEADER: usize = 8 + 8 + 4 + 4;

/// The state byte's flag: `first_due` follows the fixed header.
const FIRST_DUE: u8 = 0x80;

/// The state byte's flag: `first_fence` follows (after `first_due`, if any).
const FIRST_FENCE: u8 = 0x40;

/// The dead letter's reason-length flag: `first_due` follows the header.
const DEAD_FIRST_DUE: u32 = 1 << 31;

#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
fn state_byte(s: TimerState) -> u8 {
    match s {
        TimerState::Pending => 0,
        TimerState::Claimed => 1,
        TimerState::Running => 2,
        TimerState::Dead => 3,
        TimerState::Parked => 4,
    }
}

fn state_of(b: u8) -> Option<TimerState> {
    Some(match b {
        0 => TimerState::Pending,
        1 => TimerState::Claimed,
        2 => TimerState::Running,
        4 => TimerState::Parked,
        _ => return None,
    })
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
impl Record {
    /// A timer just added: pending, never claimed, first due at `due`.
    pub(crate) fn new(due: Millis, payload: &[u8]) -> Record {
        Record {
            due,
            first_due: due,
            lease_until: 0,
            fence: 0,
            attempts: 0,
            state: TimerState::Pending,
            first_fence: None,
            payload: payload.to_vec(),
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let retried = self.first_due != self.due;
        let mut flags = state_byte(self.state);
        if retried {
            flags |= FIRST_DUE;
        }
        if self.first_fence.is_some() {
            flags |= FIRST_FENCE;
        }
        let mut b = Vec::with_capacity(HEADER + 16 + self.payload.len());
        b.extend_from_slice(&self.due.to_le_bytes());
        b.extend_from_slice(&self.lease_until.to_le_bytes());
        b.extend_from_slice(&self.fence.to_le_bytes());
        b.extend_from_slice(&self.attempts.to_le_bytes());
        b.push(flags);
        if retried {
            b.extend_from_slice(&self.first_due.to_le_bytes());
        }
        if let Some(f) = self.first_fence {
            b.extend_from_slice(&f.to_le_bytes());
        }
        b.extend_from_slice(&self.payload);
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<Record> {
        if b.len() < HEADER {
            return None;
        }
        let due = u64_at(b, 0);
        let flags = b[28];
        let mut at = HEADER;
        let mut extension = |flag: u8| -> Option<Option<u64>> {
            if flags & flag == 0 {
                return Some(None);
            }
            let v = u64_at(b.get(at..at + 8)?, 0);
            at += 8;
            Some(Some(v))
        };
        let first_due = extension(FIRST_DUE)?.unwrap_or(due);
        let first_fence = extension(FIRST_FENCE)?;
        Some(Record {
            due,
            first_due,
            lease_until: u64_at(b, 8),
            fence: u64_at(b, 16),
            attempts: u32_at(b, 24),
            state: state_of(flags & !(FIRST_DUE | FIRST_FENCE))?,
            first_fence,
            payload: b[at..].to_vec(),
        })
    }

    /// Gives the record the fence of a new claim, keeping the old fence as
    /// `first_fence` when it was the fence of the first started run (the
    /// timer has started, and no earlier claim kept one).
    pub(crate) fn claim_with(&mut self, fence: u64) {
        if self.attempts >= 1 && self.first_fence.is_none() {
            self.first_fence = Some(self.fence);
        }
        self.fence = fence;
    }

    /// The fence that names this delivery: of its first started run, or
    /// the current one until a later claim replaced it.
    pub(crate) fn identity_fence(&self) -> u64 {
        self.first_fence.unwrap_or(self.fence)
    }
}

#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
impl DeadRecord {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let reason = self.reason.as_bytes();
        let retried = self.first_due != self.due;
        let mut b = Vec::with_capacity(DEAD_HEADER + 8 + reason.len() + self.payload.len());
        b.extend_from_slice(&self.failed_at.to_le_bytes());
        b.extend_from_slice(&self.due.to_le_bytes());
        b.extend_from_slice(&self.attempts.to_le_bytes());
        // The high bit is the flag: a reason is cut to 2 GiB - 1 bytes.
        let len =
            u32::try_from(reason.len()).map_or(DEAD_FIRST_DUE - 1, |n| n.min(DEAD_FIRST_DUE - 1));
        let flag = if retried { DEAD_FIRST_DUE } else { 0 };
        b.extend_from_slice(&(len | flag).to_le_bytes());
        if retried {
            b.extend_from_slice(&self.first_due.to_le_bytes());
        }
        b.extend_from_slice(&reason[..len as usize]);
        b.extend_from_slice(&self.payload);
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<DeadRecord> {
        if b.len() < DEAD_HEADER {
            return None;
        }
        let due = u64_at(b, 8);
        let field = u32_at(b, 20);
        let (first_due, from) = if field & DEAD_FIRST_DUE != 0 {
            let first = b.get(DEAD_HEADER..DEAD_HEADER + 8)?;
            (u64_at(first, 0), DEAD_HEADER + 8)
        } else {
            (due, DEAD_HEADER)
        };
        let len = (field & !DEAD_FIRST_DUE) as usize;
        let end = from.checked_add(len)?;
        let reason = b.get(from..end)?;
        Some(DeadRecord {
            failed_at: u64_at(b, 0),
            due,
            first_due,
            attempts: u32_at(b, 16),
            reason: String::from_utf8_lossy(reason).into_owned(),
            payload: b[end..].to_vec(),
        })
    }
}

impl Record {
    /// The timer as [`TimerInfo`] reports it: every store's `get` and
    /// `list` build it here.
    pub(crate) fn info(self, key: &str) -> TimerInfo {
        TimerInfo {
            key: key.to_owned(),
            due: system_time_of(self.due),
            first_due: system_time_of(self.first_due),
            attempts: self.attempts,
            state: self.state,
            payload: self.payload,
            failed_at: None,
            reason: None,
        }
    }
}

#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
impl DeadRecord {
    /// The dead letter as [`TimerInfo`] reports it, with its failure.
    pub(crate) fn info(self, key: &str) -> TimerInfo {
        TimerInfo {
            key: key.to_owned(),
            due: system_time_of(self.due),
            first_due: system_time_of(self.first_due),
            attempts: self.attempts,
            state: TimerState::Dead,
            payload: self.payload,
            failed_at: Some(system_time_of(self.failed_at)),
            reason: Some(self.reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for state in [
            TimerState::Pending,
            TimerState::Claimed,
            TimerState::Running,
            TimerState::Parked,
        ] {
            for (first_due, first_fence) in [
                (u64::MAX, None),
                (5, None),
                (u64::MAX, Some(3)),
                (5, Some(u64::MAX)),
            ] {
                let r = Record {
                    due: u64::MAX,
                    first_due,
                    lease_until: 7,
                    fence: 1 << 40,
                    attempts: u32::MAX,
                    state,
                    first_fence,
                    payload: b"\0|x".to_vec(),
                };
                assert_eq!(Record::decode(&r.encode()), Some(r));
            }
        }
        for first_due in [2, 1] {
            let d = DeadRecord {
                failed_at: 3,
                due: 2,
                first_due,
                attempts: 1,
                reason: "gave up: ü".into(),
                payload: b"p".to_vec(),
            };
            assert_eq!(DeadRecord::decode(&d.encode()), Some(d));
        }
    }

    #[test]
    fn the_first_due_time_costs_bytes_only_after_a_retry() {
        let mut r = Record {
            due: 10,
            first_due: 10,
            lease_until: 0,
            fence: 0,
            attempts: 0,
            state: TimerState::Pending,
            first_fence: None,
            payload: b"xy".to_vec(),
        };
        assert_eq!(r.encode().len(), HEADER + 2);
        r.due = 20;
        let b = r.encode();
        assert_eq!(b.len(), HEADER + 8 + 2);
        assert_eq!(b[28], FIRST_DUE);
        assert_eq!(u64_at(&b, HEADER), 10);
        // The first fence comes after the first due time, in its own eight
        // bytes, and alone when the due time never moved.
        r.first_fence = Some(7);
        let b = r.encode();
        assert_eq!(b.len(), HEADER + 16 + 2);
        assert_eq!(b[28], FIRST_DUE | FIRST_FENCE);
        assert_eq!((u64_at(&b, HEADER), u64_at(&b, HEADER + 8)), (10, 7));
        r.due = 10;
        let b = r.encode();
        assert_eq!(b.len(), HEADER + 8 + 2);
        assert_eq!(b[28], FIRST_FENCE);
        assert_eq!(u64_at(&b, HEADER), 7);
        let mut d = DeadRecord {
            failed_at: 30,
            due: 20,
            first_due: 20,
            attempts: 2,
            reason: "r".into(),
            payload: vec![],
        };
        assert_eq!(d.encode().len(), DEAD_HEADER + 1);
        d.first_due = 10;
        assert_eq!(d.encode().len(), DEAD_HEADER + 8 + 1);
    }

    #[test]
    fn a_claim_keeps_the_fence_of_the_first_started_run() {
        let mut r = Record {
            due: 1,
            first_due: 1,
            lease_until: 0,
            fence: 0,
            attempts: 0,
            state: TimerState::Pending,
            first_fence: None,
            payload: vec![],
        };
        // Claims before any start (released, or leases lost while only
        // claimed) keep nothing: the next start's fence is the identity.
        r.claim_with(4);
        r.claim_with(5);
        assert_eq!((r.first_fence, r.identity_fence()), (None, 5));
        r.attempts = 1; // started with fence 5
        r.claim_with(8);
        assert_eq!((r.first_fence, r.identity_fence()), (Some(5), 5));
        r.attempts = 2;
        r.claim_with(9);
        assert_eq!(
            (r.first_fence, r.fence, r.identity_fence()),
            (Some(5), 9, 5)
        );
    }

    #[test]
    fn short_or_odd_bytes_do_not_parse() {
        assert_eq!(Record::decode(&[0; HEADER - 1]), None);
        let mut b = vec![0; HEADER];
        b[28] = 3; // a dead letter never sits in the timers table
        assert_eq!(Record::decode(&b), None);
        b[28] = 3 | FIRST_DUE;
        assert_eq!(Record::decode(&b), None, "a dead state, flagged");
        // The flag without its eight bytes, whatever follows.
        for extra in 0..8 {
            let mut b = vec![0; HEADER + extra];
            b[28] = FIRST_DUE;
            assert_eq!(Record::decode(&b), None, "{extra} bytes after the flag");
        }
        let mut b = vec![0; HEADER + 8];
        b[28] = 2 | FIRST_DUE;
        assert!(Record::decode(&b).is_some());
        b[28] = 0x20; // an unknown bit
        assert_eq!(Record::decode(&b), None);
        // Both flags need sixteen bytes.
        for extra in 8..16 {
            let mut b = vec![0; HEADER + extra];
            b[28] = FIRST_DUE | FIRST_FENCE;
            assert_eq!(Record::decode(&b), None, "{extra} bytes after both flags");
        }
        let mut d = vec![0; DEAD_HEADER];
        d[20] = 9; // a reason longer than the record
        assert_eq!(DeadRecord::decode(&d), None);
        for extra in 0..8 {
            let mut d = vec![0; DEAD_HEADER + extra];
            d[23] = 0x80; // the flag, without its eight bytes
            assert_eq!(DeadRecord::decode(&d), None, "{extra} bytes after the flag");
        }
        let mut d = vec![0; DEAD_HEADER + 8 + 2];
        d[23] = 0x80;
        d[20] = 3; // a reason one byte past the end, after the flag's bytes
        assert_eq!(DeadRecord::decode(&d), None);
        d[20] = 2;
        assert_eq!(DeadRecord::decode(&d).map(|x| x.reason.len()), Some(2));
    }
}
