//! One level of the wheel: its slot lists and occupancy bitmaps, plus the
//! intrusive index-linked list used by slots and the ready list.
//!
//! A slot is [`LANES`] lists. An entry due at `when` goes to lane
//! `lane_of(when)`, so entries with equal deadlines always share a lane and
//! keep their FIFO order, while a slot's lanes can be walked in lockstep:
//! their nodes are loaded in parallel instead of one dependent cache miss
//! after another (see `docs/design.md`, "Lanes").
//!
//! Invariants (checked by `Wheel::check_invariants`):
//! - bit `s` of `words` is set iff one of slot `s`'s lanes is non-empty;
//! - bit `w` of `summary` is set iff `words[w] != 0`;
//! - `occupied` counts the set bits of `words`;
//! - on the top level only, `min_when[s]` is a lower bound of the deadlines
//!   in slot `s` (`u64::MAX` when empty).

use super::config::LevelGeom;
use super::slab::{Link, NIL};

/// Lists per slot. Four lanes let a cascade keep four cache misses in
/// flight; more lanes cost slot memory (8 bytes per lane per slot).
pub(crate) const LANES: usize = 4;

/// The lane of a slot that an entry due at `when` goes to.
#[inline]
pub(crate) fn lane_of(when: u64) -> usize {
    (when as usize) & (LANES - 1)
}

/// The lists of one slot.
pub(crate) type Slot = [List; LANES];

/// `true` if every lane of the slot is empty.
#[inline]
pub(crate) fn slot_is_empty(slot: &Slot) -> bool {
    slot.iter().all(List::is_empty)
}

/// Head and tail of a doubly linked list threaded through slab nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct List {
    pub(crate) head: u32,
    pub(crate) tail: u32,
}

impl List {
    pub(crate) const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// Appends `index` (not linked anywhere) at the tail.
    #[inline]
    pub(crate) fn push_back(&mut self, links: &mut [Link], index: u32) {
        links[index as usize] = Link {
            next: NIL,
            prev: self.tail,
        };
        if self.tail == NIL {
            self.head = index;
        } else {
            links[self.tail as usize].next = index;
        }
        self.tail = index;
    }

    /// Unlinks `index`, which must be on this list.
    #[inline]
    pub(crate) fn unlink(&mut self, links: &mut [Link], index: u32) {
        let Link { next, prev } = links[index as usize];
        if prev == NIL {
            self.head = next;
        } else {
            links[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            links[next as usize].prev = prev;
        }
    }

    /// Moves every entry of `other` to the tail of this list, in O(1).
    #[inline]
    pub(crate) fn append(&mut self, links: &mut [Link], other: List) {
        if other.head == NIL {
            return;
        }
        if self.tail == NIL {
            self.head = other.head;
        } else {
            links[self.tail as usize].next = other.head;
            links[other.head as usize].prev = self.tail;
        }
        self.tail = other.tail;
    }

    /// Removes and returns the head.
    #[inline]
    pub(crate) fn pop_front(&mut self, links: &mut [Link]) -> Option<u32> {
        let head = self.head;
        if head == NIL {
            return None;
        }
        self.unlink(links, head);
        Some(head)
    }
}

/// A level: `2^bits` slot lists and the bitmaps that find occupied ones.
#[derive(Debug)]
pub(crate) struct Level {
    pub(crate) geom: LevelGeom,
    pub(crate) slots: Box<[Slot]>,
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
            slots: vec![[List::EMPTY; LANES]; slots].into_boxed_slice(),
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
            .find(|(_, &bits)| bits != 0)?;
        let w = sw * 64 + sbits.trailing_zeros() as usize;
        Some(w * 64 + self.words[w].trailing_zeros() as usize)
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

    /// Checks the bitmaps: every set bit names a non-empty list, the summary
    /// matches the words and the count matches the bits. (A non-empty list
    /// behind a clear bit is caught by the caller, which counts the entries
    /// reachable through set bits against the slab's length.)
    #[cfg(any(test, fuzzing))]
    pub(crate) fn check_bitmaps(&self) -> Result<(), String> {
        let mut count = 0;
        for s in self.occupied_slots() {
            if slot_is_empty(&self.slots[s]) {
                return Err(format!("slot {s} marked occupied but empty"));
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
    use crate::core::slab::{Loc, Slab};

    #[test]
    fn bitmap_finds_slots_across_words() {
        let mut level = Level::new(LevelGeom { shift: 0, bits: 13 }, false);
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
    fn list_keeps_fifo_order_and_unlinks_anywhere() {
        let mut slab = Slab::with_capacity(4);
        let ids: Vec<u32> = (0..4).map(|v| slab.insert(v, 0, Loc::READY).0).collect();
        let links = &mut slab.links;
        let mut list = List::EMPTY;
        for &i in &ids {
            list.push_back(links, i);
        }
        list.unlink(links, ids[2]);
        list.unlink(links, ids[0]);
        list.push_back(links, ids[0]);
        let mut other = List::EMPTY;
        other.push_back(links, ids[2]);
        list.append(links, other);
        list.append(links, List::EMPTY);
        list.unlink(links, ids[0]);
        let order: Vec<u32> = std::iter::from_fn(|| list.pop_front(links)).collect();
        assert_eq!(order, [ids[1], ids[3], ids[2]]);
        assert!(list.is_empty());
    }
}
