//! The byte layout of a timer and of a dead letter, shared by the
//! embedded store (its table values) and the Redis store (its hash values,
//! written by the Lua scripts with `struct.pack` in the same layout).
//!
//! A timer: `due`, `lease_until`, `fence` (u64 each), `attempts` (u32),
//! `state` (u8), then the payload to the end. A dead letter: `failed_at`,
//! `due` (u64 each), `attempts`, the reason's length (u32 each), the reason,
//! then the payload to the end. All integers little-endian. A record that
//! does not parse is reported as corruption, never trusted.

use super::Millis;
use crate::durable::time::system_time_of;
use crate::durable::{TimerInfo, TimerState};

/// A timer as a store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) due: Millis,
    pub(crate) lease_until: Millis,
    pub(crate) fence: u64,
    pub(crate) attempts: u32,
    pub(crate) state: TimerState,
    pub(crate) payload: Vec<u8>,
}

/// A dead letter as a store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeadRecord {
    pub(crate) failed_at: Millis,
    pub(crate) due: Millis,
    pub(crate) attempts: u32,
    pub(crate) reason: String,
    pub(crate) payload: Vec<u8>,
}

const HEADER: usize = 8 + 8 + 8 + 4 + 1;
const DEAD_HEADER: usize = 8 + 8 + 4 + 4;

fn state_byte(s: TimerState) -> u8 {
    match s {
        TimerState::Pending => 0,
        TimerState::Claimed => 1,
        TimerState::Running => 2,
        TimerState::Dead => 3,
    }
}

fn state_of(b: u8) -> Option<TimerState> {
    Some(match b {
        0 => TimerState::Pending,
        1 => TimerState::Claimed,
        2 => TimerState::Running,
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

impl Record {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER + self.payload.len());
        b.extend_from_slice(&self.due.to_le_bytes());
        b.extend_from_slice(&self.lease_until.to_le_bytes());
        b.extend_from_slice(&self.fence.to_le_bytes());
        b.extend_from_slice(&self.attempts.to_le_bytes());
        b.push(state_byte(self.state));
        b.extend_from_slice(&self.payload);
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<Record> {
        if b.len() < HEADER {
            return None;
        }
        Some(Record {
            due: u64_at(b, 0),
            lease_until: u64_at(b, 8),
            fence: u64_at(b, 16),
            attempts: u32_at(b, 24),
            state: state_of(b[28])?,
            payload: b[HEADER..].to_vec(),
        })
    }
}

impl DeadRecord {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let reason = self.reason.as_bytes();
        let mut b = Vec::with_capacity(DEAD_HEADER + reason.len() + self.payload.len());
        b.extend_from_slice(&self.failed_at.to_le_bytes());
        b.extend_from_slice(&self.due.to_le_bytes());
        b.extend_from_slice(&self.attempts.to_le_bytes());
        let len = u32::try_from(reason.len()).unwrap_or(u32::MAX);
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&reason[..len as usize]);
        b.extend_from_slice(&self.payload);
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<DeadRecord> {
        if b.len() < DEAD_HEADER {
            return None;
        }
        let len = u32_at(b, 20) as usize;
        let reason = b.get(DEAD_HEADER..DEAD_HEADER.checked_add(len)?)?;
        Some(DeadRecord {
            failed_at: u64_at(b, 0),
            due: u64_at(b, 8),
            attempts: u32_at(b, 16),
            reason: String::from_utf8_lossy(reason).into_owned(),
            payload: b[DEAD_HEADER + len..].to_vec(),
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
            attempts: self.attempts,
            state: self.state,
            payload: self.payload,
            failed_at: None,
            reason: None,
        }
    }
}

impl DeadRecord {
    /// The dead letter as [`TimerInfo`] reports it, with its failure.
    pub(crate) fn info(self, key: &str) -> TimerInfo {
        TimerInfo {
            key: key.to_owned(),
            due: system_time_of(self.due),
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
        ] {
            let r = Record {
                due: u64::MAX,
                lease_until: 7,
                fence: 1 << 40,
                attempts: u32::MAX,
                state,
                payload: b"\0|x".to_vec(),
            };
            assert_eq!(Record::decode(&r.encode()), Some(r));
        }
        let d = DeadRecord {
            failed_at: 3,
            due: 2,
            attempts: 1,
            reason: "gave up: ü".into(),
            payload: vec![],
        };
        assert_eq!(DeadRecord::decode(&d.encode()), Some(d));
    }

    #[test]
    fn short_or_odd_bytes_do_not_parse() {
        assert_eq!(Record::decode(&[0; HEADER - 1]), None);
        let mut b = vec![0; HEADER];
        b[28] = 3; // a dead letter never sits in the timers table
        assert_eq!(Record::decode(&b), None);
        let mut d = vec![0; DEAD_HEADER];
        d[20] = 9; // a reason longer than the record
        assert_eq!(DeadRecord::decode(&d), None);
    }
}
