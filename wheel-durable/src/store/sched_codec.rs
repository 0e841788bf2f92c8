//! The embedded store's byte layout of a [`SchedRecord`]: small, because a
//! store holds one per schedule and rewrites it on every run.
//!
//! Layout: a version byte ([`VERSION`]); a flags byte (bit 0 paused, bit 1
//! unplanned, bit 2 a last nominal time is set); the overlap byte; then as
//! LEB128 varints the generation, the last nominal time (only with its
//! flag), the runs created and the three skipped counts; the definition
//! and the payload, each a varint length and its bytes; then the next,
//! running and buffered runs, each a [`RunRef`]: a tag byte (0 none, 1
//! this schedule's chain run, 2 this schedule's triggered run, 3 any other
//! key), then the run's nominal or trigger time as a varint (tags 1 and 2)
//! or the key as a varint length and its bytes (tag 3).
//!
//! A run key of the record's own schedule is stored as its time alone: the
//! key is rebuilt from the schedule id, which is the record's key in the
//! store. That keeps a record of a short definition and payload under 50
//! bytes, where whole keys and fixed-width counters took about 200.
//!
//! Decoding refuses (answers `None` for) anything this encoder does not
//! write: an unknown version, tag or flag, a varint over ten bytes or
//! past 64 bits, a length past the end, a key that is not UTF-8, bytes
//! left over.
//!
//! Node state: none (pure functions).

use super::schedules::{SchedRecord, owner, trigger_key};
use crate::time::Millis;

/// The layout's version byte.
const VERSION: u8 = 1;

/// The flags byte's bits.
const PAUSED: u8 = 1;
const UNPLANNED: u8 = 2;
const LAST_NOMINAL: u8 = 4;

/// The run references' tags.
const NONE: u8 = 0;
const CHAIN: u8 = 1;
const TRIGGER: u8 = 2;
const OTHER: u8 = 3;

/// Appends `v` as an unsigned LEB128 varint (1 to 10 bytes).
fn put_varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

/// Reads an unsigned LEB128 varint from the front of `b`, advancing it;
/// `None` when it runs past the end or past 64 bits.
fn take_varint(b: &mut &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b.split_first()?;
        *b = rest;
        let bits = u64::from(byte & 0x7f);
        // The tenth byte holds bit 63 only.
        if shift == 63 && bits > 1 {
            return None;
        }
        v |= bits << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn take_byte(b: &mut &[u8]) -> Option<u8> {
    let (&byte, rest) = b.split_first()?;
    *b = rest;
    Some(byte)
}

fn put_bytes(b: &mut Vec<u8>, v: &[u8]) {
    put_varint(b, v.len() as u64);
    b.extend_from_slice(v);
}

fn take_bytes<'b>(b: &mut &'b [u8]) -> Option<&'b [u8]> {
    let len = usize::try_from(take_varint(b)?).ok()?;
    let (v, rest) = b.split_at_checked(len)?;
    *b = rest;
    Some(v)
}

/// Appends a run key of schedule `id` in its shortest form.
fn put_run(b: &mut Vec<u8>, id: &str, key: Option<&str>) {
    let Some(key) = key else {
        b.push(NONE);
        return;
    };
    match owner(key) {
        // Only a key that rebuilds to the same bytes is stored as a time.
        Some((of, chain, ms)) if of == id && rebuild(id, chain, ms) == key => {
            b.push(if chain { CHAIN } else { TRIGGER });
            put_varint(b, ms);
        }
        _ => {
            b.push(OTHER);
            put_bytes(b, key.as_bytes());
        }
    }
}

/// The key of schedule `id`'s chain or triggered run at `ms`.
fn rebuild(id: &str, chain: bool, ms: Millis) -> String {
    if chain {
        format!("sched:{id}:{ms}")
    } else {
        trigger_key(id, ms)
    }
}

fn take_run(b: &mut &[u8], id: &str) -> Option<Option<String>> {
    match take_byte(b)? {
        NONE => Some(None),
        tag @ (CHAIN | TRIGGER) => Some(Some(rebuild(id, tag == CHAIN, take_varint(b)?))),
        OTHER => Some(Some(String::from_utf8(take_bytes(b)?.to_vec()).ok()?)),
        _ => None,
    }
}

impl SchedRecord {
    /// The record of schedule `id` as the embedded store keeps it.
    pub(crate) fn pack(&self, id: &str) -> Vec<u8> {
        let mut b = Vec::with_capacity(32 + self.definition.len() + self.payload.len());
        b.push(VERSION);
        let flags = [
            (self.paused, PAUSED),
            (self.unplanned, UNPLANNED),
            (self.last_nominal.is_some(), LAST_NOMINAL),
        ]
        .into_iter()
        .filter(|(set, _)| *set)
        .fold(0, |flags, (_, bit)| flags | bit);
        b.push(flags);
        b.push(self.overlap);
        put_varint(&mut b, self.generation);
        if let Some(at) = self.last_nominal {
            put_varint(&mut b, at);
        }
        for v in [
            self.runs_created,
            self.skipped_missed,
            self.skipped_overlap,
            self.skipped_paused,
        ] {
            put_varint(&mut b, v);
        }
        put_bytes(&mut b, &self.definition);
        put_bytes(&mut b, &self.payload);
        for key in [&self.next, &self.running, &self.buffered] {
            put_run(&mut b, id, key.as_deref());
        }
        b
    }

    /// The record of schedule `id` from [`pack`](Self::pack)'s bytes;
    /// `None` for bytes it does not write (see the module docs).
    pub(crate) fn unpack(id: &str, mut b: &[u8]) -> Option<SchedRecord> {
        let b = &mut b;
        if take_byte(b)? != VERSION {
            return None;
        }
        let flags = take_byte(b)?;
        if flags & !(PAUSED | UNPLANNED | LAST_NOMINAL) != 0 {
            return None;
        }
        let overlap = take_byte(b)?;
        let generation = take_varint(b)?;
        let last_nominal = match flags & LAST_NOMINAL {
            0 => None,
            _ => Some(take_varint(b)?),
        };
        let mut counts = [0u64; 4];
        for c in &mut counts {
            *c = take_varint(b)?;
        }
        let definition = take_bytes(b)?.to_vec();
        let payload = take_bytes(b)?.to_vec();
        let (next, running, buffered) = (take_run(b, id)?, take_run(b, id)?, take_run(b, id)?);
        if !b.is_empty() {
            return None;
        }
        Some(SchedRecord {
            definition,
            overlap,
            payload,
            generation,
            last_nominal,
            runs_created: counts[0],
            paused: flags & PAUSED != 0,
            unplanned: flags & UNPLANNED != 0,
            next,
            running,
            buffered,
            skipped_missed: counts[1],
            skipped_overlap: counts[2],
            skipped_paused: counts[3],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> SchedRecord {
        SchedRecord {
            definition: vec![1, 2, 3],
            overlap: 1,
            payload: b"p".to_vec(),
            generation: u64::MAX,
            last_nominal: Some(0),
            runs_created: 9,
            paused: true,
            unplanned: true,
            next: Some("sched:a:b:1".into()),
            running: Some("order:1".into()),
            buffered: Some("sched-trigger:a:b:5".into()),
            skipped_missed: 1 << 35,
            skipped_overlap: 127,
            skipped_paused: 128,
        }
    }

    #[test]
    fn records_round_trip_and_damage_is_refused() {
        for r in [full(), SchedRecord::default()] {
            let b = r.pack("a:b");
            assert_eq!(SchedRecord::unpack("a:b", &b), Some(r.clone()));
            for cut in 0..b.len() {
                assert_eq!(SchedRecord::unpack("a:b", &b[..cut]), None, "cut at {cut}");
            }
            let mut longer = b.clone();
            longer.push(0);
            assert_eq!(SchedRecord::unpack("a:b", &longer), None);
            let mut other_version = b;
            other_version[0] = VERSION + 1;
            assert_eq!(SchedRecord::unpack("a:b", &other_version), None);
        }
    }

    #[test]
    fn own_run_keys_are_stored_as_times_and_others_whole() {
        let r = full();
        let b = r.pack("a:b");
        // The foreign key "order:1" is kept whole; the two own keys are a
        // tag and a varint each.
        assert!(b.windows(7).any(|w| w == b"order:1"));
        assert!(!b.windows(6).any(|w| w == b"sched:"));
        // Read back under another id, own keys name that schedule.
        let moved = SchedRecord::unpack("c", &b).unwrap();
        assert_eq!(moved.next.as_deref(), Some("sched:c:1"));
        assert_eq!(moved.running.as_deref(), Some("order:1"));
        // A key that names another schedule stays whole.
        let stranger = SchedRecord {
            next: Some("sched:z:1".into()),
            ..SchedRecord::default()
        };
        let b = stranger.pack("a");
        assert_eq!(SchedRecord::unpack("a", &b), Some(stranger));
    }

    #[test]
    fn a_short_record_is_small() {
        let r = SchedRecord {
            definition: vec![0; 20],
            generation: 3,
            last_nominal: Some(1_800_000_000_000),
            runs_created: 1_000,
            next: Some("sched:reports:1800000060000".into()),
            running: Some("sched:reports:1800000000000".into()),
            ..SchedRecord::default()
        };
        assert_eq!(
            SchedRecord::unpack("reports", &r.pack("reports")),
            Some(r.clone())
        );
        // 3 + 1 + 6 + 2 + 3 (counts) + 21 + 1 + 7 + 7 + 1 bytes.
        assert_eq!(r.pack("reports").len(), 52);
    }

    #[test]
    fn varints_at_their_edges() {
        for (v, len) in [
            (0, 1),
            (127, 1),
            (128, 2),
            (16_383, 2),
            (16_384, 3),
            (u64::MAX >> 1, 9),
            (u64::MAX, 10),
        ] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), len, "{v}");
            let mut s = b.as_slice();
            assert_eq!(take_varint(&mut s), Some(v));
            assert!(s.is_empty());
        }
        // Past 64 bits, an eleventh byte, or cut short.
        for bad in [
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02][..],
            &[0x80; 11][..],
            &[0x80][..],
            &[][..],
        ] {
            assert_eq!(take_varint(&mut &bad[..]), None, "{bad:?}");
        }
    }
}
