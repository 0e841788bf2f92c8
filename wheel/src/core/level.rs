//! One level of the wheel: its slot buckets and occupancy bitmaps.
//!
//! Invariants (checked by `Wheel::check_invariants`):
//! - bit `s` of `words` is set iff slot `s`'s bucket holds cells (and a
//!   bucket with cells always counts one as live, see [`super::cells`]);
//! - bit `w` of `summary` is set iff `words[w] != 0`;
//! - `occupied` counts the set bits of `words`;
//! - on the top level only, `min_when[s]` is a lower bound of the deadlines
//!   in slot `s` (`u64::MAX` when empty).

use super::cells::{Blocks, Bucket, CellAddr};
use super::config::LevelGeom;

/// A level: `2^bits` slot buckets and the bitmaps that find occupied ones.
#[derive(Debug)]
pub(crate) struct Level {
    pub(crate) geom: LevelGeom,
    pub(crate) slots: Box<[Bucket]>,
    words: Box<[u64]>,
    summary: Box<[u64]>,
    occupied: usize,
    /// Per-slot lower bound of deadlines; only on the top level.
    pub(crate) min_when: Box<[u64]>,
}

impl Level {
    pub(crate) fn new(geom: LevelGeom, is_top: bool) -> Level {
        let slots = geom.slots();
        let words = slots.div_ceil(64);
        Level {
            geom,
            slots: vec![Bucket::EMPTY; slots].into_boxed_slice(),
            words: vec![0; words].into_boxed_slice(),
            summary: vec![0; words.div_ceil(64)].into_boxed_slice(),
            occupied: 0,
            min_when: if is_top {
                vec![u64::MAX; slots].into_boxed_slice()
            } else {
                Box::new([])
            },
        }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.occupied == 0
    }

    /// Marks `slot` occupied.
    #[inline]
    pub(crate) fn set(&mut self, slot: usize) {
        let (w, b) = (slot / 64, slot % 64);
        if self.words[w] & (1 << b) == 0 {
            self.words[w] |= 1 << b;
            self.summary[w / 64] |= 1 << (w % 64);
            self.occupied += 1;
        }
    }

    /// Appends a cell holding `index` to `slot`'s bucket, marking the slot
    /// occupied if it is the bucket's first cell, and returns the cell's
    /// address. The bits match the buckets whenever this runs, so only a
    /// first cell has a bit to set, and testing the bucket (read for the
    /// push anyway) is cheaper than testing the bit.
    #[inline(always)]
    pub(crate) fn push(&mut self, blocks: &mut Blocks, slot: usize, index: u32) -> CellAddr {
        let bucket = &mut self.slots[slot];
        let first = bucket.is_empty();
        let addr = bucket.push(blocks, index);
        if first {
            self.set(slot);
        }
        addr
    }

    /// Marks `slot` empty.
    #[inline]
    pub(crate) fn clear(&mut self, slot: usize) {
        let (w, b) = (slot / 64, slot % 64);
        if self.words[w] & (1 << b) != 0 {
            self.words[w] &= !(1 << b);
            if self.words[w] == 0 {
                self.summary[w / 64] &= !(1 << (w % 64));
            }
            self.occupied -= 1;
        }
    }

    /// The lowest occupied slot.
    pub(crate) fn first_occupied(&self) -> Option<usize> {
        let (sw, sbits) = self
            .summary
            .iter()
            .enumerate()
            .find(|&(_, &bits)| bits != 0)?;
        let w = sw * 64 + sbits.trailing_zeros() as usize;
        Some(w * 64 + self.words[w].trailing_zeros() as usize)
    }

    /// The lowest occupied slot at or after `from` (`None` past the end).
    pub(crate) fn next_occupied_from(&self, from: usize) -> Option<usize> {
        let mut w = from / 64;
        let mut bits = *self.words.get(w)? & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.words.get(w)?;
        }
    }

    /// Every occupied slot, lowest first.
    pub(crate) fn occupied_slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &bits)| {
            let mut rest = bits;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let b = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(w * 64 + b)
            })
        })
    }

    /// Checks the bitmaps: every set bit names a bucket with cells, the
    /// summary matches the words and the count matches the bits. (A bucket
    /// with cells behind a clear bit is caught by the caller, which counts
    /// the blocks and live cells reachable through set bits against the
    /// arena and the slab. Only set bits are visited: the fuzz targets run
    /// this check often, on layouts of up to 2^16 slots a level.)
    #[cfg(any(test, fuzzing))]
    pub(crate) fn check_bitmaps(&self) -> Result<(), String> {
        let mut count = 0;
        for slot in self.occupied_slots() {
            if self.slots[slot].is_empty() {
                return Err(format!("slot {slot} marked occupied but empty"));
            }
            count += 1;
        }
        for (w, &bits) in self.words.iter().enumerate() {
            let sbit = self.summary[w / 64] & (1 << (w % 64)) != 0;
            if sbit != (bits != 0) {
                return Err(format!("summary bit of word {w} is {sbit}"));
            }
        }
        if count != self.occupied {
            return Err(format!("occupied {} but {count} bits", self.occupied));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_finds_slots_across_words() {
        let mut level = Level::new(LevelGeom::new(0, 13), false);
        assert_eq!(level.first_occupied(), None);
        level.set(8191);
        level.set(4100);
        assert_eq!(level.first_occupied(), Some(4100));
        level.set(0);
        assert_eq!(level.first_occupied(), Some(0));
        assert_eq!(level.occupied_slots().collect::<Vec<_>>(), [0, 4100, 8191]);
        level.clear(0);
        level.clear(0);
        level.clear(4100);
        assert_eq!(level.first_occupied(), Some(8191));
        level.clear(8191);
        assert!(level.is_empty());
        assert_eq!(level.first_occupied(), None);
    }

    #[test]
    fn next_occupied_from_starts_at_its_slot_and_stops_at_the_end() {
        let mut level = Level::new(LevelGeom::new(0, 8), false);
        assert_eq!(level.next_occupied_from(0), None);
        for slot in [0, 63, 64, 200, 255] {
            level.set(slot);
        }
        let from = |f| level.next_occupied_from(f);
        assert_eq!(from(0), Some(0));
        assert_eq!(from(1), Some(63));
        assert_eq!(from(63), Some(63));
        assert_eq!(from(64), Some(64));
        assert_eq!(from(65), Some(200));
        assert_eq!(from(201), Some(255));
        assert_eq!(from(255), Some(255));
        assert_eq!(from(256), None);
        assert_eq!(from(10_000), None);
    }
}
