//! Entry storage: a slab of nodes with a free list and generational keys.
//!
//! Invariants:
//! - An index is either occupied (a [`Node`]) or vacant. Vacant indices that
//!   may be reused form a singly linked free list through `next_free`.
//! - Every index has a generation. A key `(index, generation)` names a live timer
//!   iff the index is occupied with exactly that generation. Freeing bumps
//!   the generation, so old keys stop matching; a slot whose generation would
//!   wrap is retired (never reused) instead, so a key can never alias a later
//!   timer.
//! - Indices past the end of the vector (after `shrink_to_fit`) start at a
//!   generation above every generation ever handed out, for the same reason.
//! - Generations start at 1 (a node stores its generation as a
//!   `NonZeroU32`, whose zero is `SlabEntry`'s niche).
//! - `u32::MAX` is never a valid index: it is [`NIL`].
//! - Once the slab holds `lanes_from` entries, fresh indices are handed
//!   out in chunks of `chunk`, one open chunk per *lane* (a lane is picked
//!   from the deadline, see [`Slab::vacant`]), so that entries due close
//!   together sit close together in memory. A lane's unused rest of its
//!   chunk, `lanes[lane].0 .. lanes[lane].1`, holds vacant entries with the
//!   generation `fresh_gen` that are on no free list; there are at most
//!   `lanes.len() * (chunk - 1)` of them. The sizes come from the wheel's
//!   [`Tuning`].

use std::num::NonZeroU32;

use super::cells::CellAddr;
use super::config::Tuning;
use super::index::NIL;

/// An occupied entry: the user's value, its deadline, its generation and the
/// position of its cell in the bucket (or ready queue) that holds it.
///
/// The generation is a `NonZeroU32` so that `SlabEntry` needs no separate
/// discriminant (zero is the niche), keeping a `u64` payload entry at 24
/// bytes.
#[derive(Debug)]
pub(crate) struct Node<T> {
    pub(crate) value: T,
    /// The effective deadline (tick).
    pub(crate) when: u64,
    pub(crate) generation: NonZeroU32,
    /// The address of this entry's live cell, in its bucket or in the
    /// ready queue; [`CellAddr::NONE`] while it is being moved or removed.
    pub(crate) pos: CellAddr,
}

#[derive(Debug)]
pub(crate) enum SlabEntry<T> {
    Occupied(Node<T>),
    Vacant {
        /// Next index of the free list (or [`NIL`]).
        next_free: u32,
        /// The generation the next occupant gets; `None` if retired.
        generation: Option<u32>,
    },
}

/// The slab of timer entries.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    entries: Vec<SlabEntry<T>>,
    free_head: u32,
    len: usize,
    /// The generation a never-used index starts at: above every
    /// generation handed out to an index that `shrink_to_fit` released.
    fresh_gen: u32,
    /// Per lane, the rest of its chunk of fresh indices: `next .. end`
    /// (empty when equal). [`Tuning::lanes`] of them, a power of two.
    lanes: Box<[(u32, u32)]>,
    /// Fresh indices a lane takes at a time ([`Tuning::chunk`]).
    chunk: u32,
    /// The slab size from which fresh indices come from lanes
    /// ([`Tuning::lanes_from`]).
    lanes_from: u32,
}

impl<T> Slab<T> {
    /// An empty slab with room for `capacity` entries, sized by `tuning`.
    pub(crate) fn with_capacity(capacity: usize, tuning: &Tuning) -> Self {
        debug_assert!(tuning.lanes.is_power_of_two() && tuning.chunk > 0);
        // A slab that will use lanes needs room for their open chunks too.
        let room = if capacity >= tuning.lanes_from as usize {
            capacity + tuning.lanes * tuning.chunk as usize
        } else {
            capacity
        };
        Slab {
            entries: Vec::with_capacity(room),
            free_head: NIL,
            len: 0,
            fresh_gen: 1,
            lanes: vec![(0, 0); tuning.lanes].into_boxed_slice(),
            chunk: tuning.chunk,
            lanes_from: tuning.lanes_from,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Number of indices the slab has allocated room for.
    pub(crate) fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Takes an index for a new node and returns it with the generation
    /// the node gets; [`fill`](Slab::fill) then stores the node, so the
    /// caller can place the entry's cell first and write the node once,
    /// knowing its position. Reuses a freed index if there is one (taking
    /// it off the free list at once: its vacant entry, read here for the
    /// next free index and the generation, is read only once); else, in a
    /// slab of `lanes_from` entries or more, takes the next index of the
    /// lane that `near` picks (opening a new chunk for it if needed); else
    /// the next index at the end. Until `fill`, the index is on no list. (A
    /// caller that panicked in between, which `Wheel::insert` does only
    /// when its cell arena is full, would leave that one index unused.)
    ///
    /// # Panics
    ///
    /// If the index space is exhausted: about `u32::MAX` indices in use at
    /// once (about 96 GiB of entries with a `u64` payload).
    #[inline]
    pub(crate) fn vacant(&mut self, near: u64) -> (u32, u32) {
        let index = self.free_head;
        if index != NIL {
            match self.entries[index as usize] {
                SlabEntry::Vacant {
                    next_free,
                    generation: Some(generation),
                } => {
                    self.free_head = next_free;
                    return (index, generation);
                }
                // Only reusable vacant entries are on the free list.
                _ => unreachable!("free list points at a non-reusable entry"),
            }
        }
        self.fresh(near)
    }

    /// [`vacant`](Slab::vacant) when the free list is empty: a never-used
    /// index, from `near`'s lane or at the end. The end case of a small
    /// slab is inlined, the lane case is not: the end case is every insert
    /// into a fresh small wheel, such as a new `DelayQueue`'s, where a call
    /// costs more than the work it would wrap (see `docs/design.md`,
    /// "Entries and keys").
    #[inline]
    fn fresh(&mut self, near: u64) -> (u32, u32) {
        let len = self.entries.len();
        if len < self.lanes_from as usize {
            let index = fresh_index(len, 1);
            // A placeholder, so that `fill` always overwrites.
            self.entries.push(SlabEntry::Vacant {
                next_free: NIL,
                generation: Some(self.fresh_gen),
            });
            return (index, self.fresh_gen);
        }
        self.fresh_in_lane(near)
    }

    /// [`fresh`](Slab::fresh) in a slab of `lanes_from` entries or more.
    #[inline(never)]
    fn fresh_in_lane(&mut self, near: u64) -> (u32, u32) {
        let len = self.entries.len();
        let chunk = self.chunk;
        // `lanes.len()` is a power of two.
        let mask = self.lanes.len() - 1;
        let lane = &mut self.lanes[near as usize & mask];
        if lane.0 == lane.1 {
            // A new chunk at the end. Its indices were never used, so
            // `fresh_gen` is theirs, as for any fresh index (it changes
            // only in `shrink_to_fit`, which empties the lanes).
            let first = fresh_index(len, chunk);
            *lane = (first, first + chunk);
            let generation = Some(self.fresh_gen);
            self.entries.extend((0..chunk).map(|_| SlabEntry::Vacant {
                next_free: NIL,
                generation,
            }));
        }
        let index = lane.0;
        lane.0 += 1;
        (index, self.fresh_gen)
    }

    /// Stores a new node at `index` with generation `generation`, both from
    /// [`vacant`](Slab::vacant), with its cell at `pos`.
    #[inline]
    pub(crate) fn fill(&mut self, index: u32, generation: u32, value: T, when: u64, pos: CellAddr) {
        // Every generation handed out is at least 1 (`fresh_gen` starts
        // there and only grows; freeing adds 1 without wrapping).
        self.entries[index as usize] = SlabEntry::Occupied(Node {
            value,
            when,
            generation: NonZeroU32::new(generation).unwrap_or(NonZeroU32::MIN),
            pos,
        });
        self.len += 1;
    }

    /// Stores a new node, in no bucket, at [`vacant`](Slab::vacant) (see
    /// [`fill`](Slab::fill)) and returns its index and generation.
    ///
    /// # Panics
    ///
    /// As [`vacant`](Slab::vacant).
    #[cfg(test)]
    pub(crate) fn insert(&mut self, value: T, when: u64) -> (u32, u32) {
        let (index, generation) = self.vacant(when);
        self.fill(index, generation, value, when, CellAddr::NONE);
        (index, generation)
    }

    /// Frees an occupied index (the caller unlinked it) and returns its node.
    #[inline]
    pub(crate) fn remove(&mut self, index: u32) -> Node<T> {
        let (next_free, generation) = match &self.entries[index as usize] {
            SlabEntry::Occupied(node) => match node.generation.get().checked_add(1) {
                Some(g) => (self.free_head, Some(g)),
                None => (NIL, None),
            },
            SlabEntry::Vacant { .. } => unreachable!("removing a vacant entry"),
        };
        let old = std::mem::replace(
            &mut self.entries[index as usize],
            SlabEntry::Vacant {
                next_free,
                generation,
            },
        );
        if generation.is_some() {
            self.free_head = index;
        }
        self.len -= 1;
        match old {
            SlabEntry::Occupied(node) => node,
            SlabEntry::Vacant { .. } => unreachable!(),
        }
    }

    /// Frees the live node that `(index, generation)` names and returns it, or
    /// `None` (changing nothing) if the key is stale. One lookup.
    #[inline]
    pub(crate) fn remove_key(&mut self, index: u32, generation: u32) -> Option<Node<T>> {
        let entry = self.entries.get_mut(index as usize)?;
        let next_gen = match entry {
            SlabEntry::Occupied(node) if node.generation.get() == generation => {
                generation.checked_add(1)
            }
            _ => return None,
        };
        let next_free = if next_gen.is_some() {
            self.free_head
        } else {
            NIL
        };
        let old = std::mem::replace(
            entry,
            SlabEntry::Vacant {
                next_free,
                generation: next_gen,
            },
        );
        if next_gen.is_some() {
            self.free_head = index;
        }
        self.len -= 1;
        match old {
            SlabEntry::Occupied(node) => Some(node),
            SlabEntry::Vacant { .. } => None,
        }
    }

    /// The live node that `(index, generation)` names, if any.
    #[inline]
    pub(crate) fn get_key(&self, index: u32, generation: u32) -> Option<&Node<T>> {
        match self.entries.get(index as usize) {
            Some(SlabEntry::Occupied(node)) if node.generation.get() == generation => Some(node),
            _ => None,
        }
    }

    /// The live node that `(index, generation)` names, if any.
    #[inline]
    pub(crate) fn get_key_mut(&mut self, index: u32, generation: u32) -> Option<&mut Node<T>> {
        match self.entries.get_mut(index as usize) {
            Some(SlabEntry::Occupied(node)) if node.generation.get() == generation => Some(node),
            _ => None,
        }
    }

    /// The node at `index` if it is occupied, whatever its generation.
    #[inline]
    pub(crate) fn get(&self, index: u32) -> Option<&Node<T>> {
        match self.entries.get(index as usize) {
            Some(SlabEntry::Occupied(node)) => Some(node),
            _ => None,
        }
    }

    /// The node at an index known to be occupied.
    #[inline]
    pub(crate) fn node(&self, index: u32) -> &Node<T> {
        match &self.entries[index as usize] {
            SlabEntry::Occupied(node) => node,
            SlabEntry::Vacant { .. } => unreachable!("linked index {index} is vacant"),
        }
    }

    /// The node at an index known to be occupied.
    #[inline]
    pub(crate) fn node_mut(&mut self, index: u32) -> &mut Node<T> {
        match &mut self.entries[index as usize] {
            SlabEntry::Occupied(node) => node,
            SlabEntry::Vacant { .. } => unreachable!("linked index {index} is vacant"),
        }
    }

    /// The first occupied index at or after `from`.
    pub(crate) fn next_occupied(&self, from: usize) -> Option<u32> {
        self.entries
            .get(from..)?
            .iter()
            .position(|e| matches!(e, SlabEntry::Occupied(_)))
            .map(|i| (from + i) as u32)
    }

    /// Releases trailing vacant indices and spare capacity. Indices freed
    /// here start above every generation handed out so far when reused.
    pub(crate) fn shrink_to_fit(&mut self) {
        let keep = self
            .entries
            .iter()
            .rposition(|e| matches!(e, SlabEntry::Occupied(_)))
            .map_or(0, |i| i + 1);
        if keep < self.entries.len() {
            // Above every generation handed out so far: each one is either
            // below `fresh_gen` already (handed out before an earlier
            // shrink) or belongs to an index still in the slab, whose entry
            // holds it (occupied), or the next one (vacant), or gave up
            // (retired at the last generation). Found here, by one pass,
            // instead of by a maximum kept on every insert.
            let above = self
                .entries
                .iter()
                .map(|e| match e {
                    SlabEntry::Occupied(node) => node.generation.get().saturating_add(1),
                    SlabEntry::Vacant {
                        generation: Some(g),
                        ..
                    } => *g,
                    SlabEntry::Vacant {
                        generation: None, ..
                    } => u32::MAX,
                })
                .max()
                .unwrap_or(1);
            self.fresh_gen = self.fresh_gen.max(above);
            self.entries.truncate(keep);
        }
        // Rebuild the free list in ascending order so low indices are reused
        // first and the slab stays compact; the lanes' unused indices join
        // it.
        self.lanes.fill((0, 0));
        self.free_head = NIL;
        for i in (0..self.entries.len()).rev() {
            if let SlabEntry::Vacant {
                next_free,
                generation: Some(_),
            } = &mut self.entries[i]
            {
                *next_free = self.free_head;
                self.free_head = i as u32;
            }
        }
        self.entries.shrink_to_fit();
    }

    /// Checks the free list and the count (for tests and fuzzing).
    #[cfg(any(test, fuzzing))]
    pub(crate) fn check(&self) -> Result<(), String> {
        let occupied = self
            .entries
            .iter()
            .filter(|e| matches!(e, SlabEntry::Occupied(_)))
            .count();
        if occupied != self.len {
            return Err(format!("len {} but {} occupied", self.len, occupied));
        }
        let reusable = self
            .entries
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    SlabEntry::Vacant {
                        generation: Some(_),
                        ..
                    }
                )
            })
            .count();
        let mut reserved = vec![false; self.entries.len()];
        let mut in_lanes = 0;
        for (lane, &(next, end)) in self.lanes.iter().enumerate() {
            if next > end || (next < end && self.entries.len() < self.lanes_from as usize) {
                return Err(format!("lane {lane} has chunk {next}..{end}"));
            }
            for i in next..end {
                match self.entries.get(i as usize) {
                    Some(SlabEntry::Vacant {
                        generation: Some(g),
                        ..
                    }) if *g == self.fresh_gen => {}
                    _ => return Err(format!("lane {lane} holds unusable index {i}")),
                }
                if std::mem::replace(&mut reserved[i as usize], true) {
                    return Err(format!("index {i} is in two lanes"));
                }
                in_lanes += 1;
            }
        }
        let mut seen = 0;
        let mut at = self.free_head;
        while at != NIL {
            if reserved.get(at as usize) == Some(&true) {
                return Err(format!("free list reaches lane index {at}"));
            }
            match self.entries.get(at as usize) {
                Some(SlabEntry::Vacant {
                    next_free,
                    generation: Some(_),
                }) => at = *next_free,
                _ => return Err(format!("free list reaches non-free index {at}")),
            }
            seen += 1;
            if seen > reusable {
                return Err("free list has a cycle".into());
            }
        }
        if seen + in_lanes != reusable {
            return Err(format!(
                "free list has {seen} and lanes {in_lanes} of {reusable} free indices"
            ));
        }
        Ok(())
    }
}

/// `len` as the first of `count` fresh indices.
///
/// # Panics
///
/// If the last of them would be [`NIL`] or beyond: the index space is
/// exhausted.
#[inline]
fn fresh_index(len: usize, count: u32) -> u32 {
    u32::try_from(len)
        .ok()
        // The last one, `len + count - 1`, stays below `NIL`.
        .filter(|&i| i.checked_add(count).is_some())
        .expect("wheel: more than u32::MAX - 1 timers pending at once")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_is_24_bytes_for_u64_payload() {
        // 8 value + 8 when + 4 gen + 4 pos, no discriminant (the
        // generation's zero is the niche).
        assert_eq!(std::mem::size_of::<SlabEntry<u64>>(), 24);
        assert_eq!(std::mem::size_of::<SlabEntry<()>>(), 16);
    }

    #[test]
    fn generations_make_old_keys_stale() {
        let mut slab = Slab::with_capacity(0, &Tuning::DEFAULT);
        let (i, g) = slab.insert("a", 5);
        assert!(g >= 1);
        assert_eq!(slab.get_key(i, g).map(|n| n.value), Some("a"));
        assert_eq!(slab.get(i).map(|n| n.pos), Some(CellAddr::NONE));
        slab.remove(i);
        assert!(slab.get_key(i, g).is_none());
        assert!(slab.get(i).is_none());
        let (i2, g2) = slab.insert("b", 6);
        assert_eq!(i2, i, "freed index is reused");
        assert_ne!(g2, g);
        assert!(slab.get_key(i, g).is_none());
        assert_eq!(slab.get_key(i2, g2).map(|n| n.value), Some("b"));
        slab.check().unwrap();
    }

    #[test]
    fn wrapped_generation_retires_the_index() {
        let mut slab = Slab::with_capacity(0, &Tuning::DEFAULT);
        let (i, _) = slab.insert(1u8, 0);
        slab.node_mut(i).generation = NonZeroU32::MAX;
        slab.remove(i);
        slab.check().unwrap();
        let (j, _) = slab.insert(2u8, 0);
        assert_ne!(i, j, "a retired index is never reused");
        assert!(slab.get_key(i, u32::MAX).is_none());
    }

    #[test]
    fn lanes_group_fresh_indices_and_keep_the_free_list_first() {
        for tuning in [Tuning::SMALL, Tuning::DEFAULT] {
            lanes_group_fresh_indices(&tuning);
        }
    }

    fn lanes_group_fresh_indices(tuning: &Tuning) {
        let (lanes, chunk, lanes_from) = (tuning.lanes, tuning.chunk, tuning.lanes_from);
        assert!(lanes >= 4 && chunk >= 2);
        let mut slab = Slab::with_capacity(0, tuning);
        // Below `lanes_from`, fresh indices come in order whatever `near`.
        for i in 0..u64::from(lanes_from) {
            assert_eq!(slab.insert((), i * 7).0, i as u32);
        }
        slab.check().unwrap();
        // From there on, each lane takes a chunk and fills it in order.
        let (a0, _) = slab.insert((), 3);
        let (b0, _) = slab.insert((), 5);
        let (a1, _) = slab.insert((), 3 + lanes as u64);
        let (b1, _) = slab.insert((), 5);
        assert_eq!(a0, lanes_from);
        assert_eq!(b0, a0 + chunk);
        assert_eq!((a1, b1), (a0 + 1, b0 + 1));
        slab.check().unwrap();
        // A chunk used up opens the next one at the end.
        let rest: Vec<u32> = (2..=chunk).map(|_| slab.insert((), 3).0).collect();
        assert_eq!(
            rest[..rest.len() - 1],
            (a0 + 2..a0 + chunk).collect::<Vec<_>>()
        );
        assert_eq!(*rest.last().unwrap(), b0 + chunk);
        slab.check().unwrap();
        // Freed indices are reused before any lane's.
        slab.remove(7);
        assert_eq!(slab.insert((), 5).0, 7);
        slab.check().unwrap();
        // `shrink_to_fit` drops the trailing chunk and puts the lanes'
        // unused indices on the free list; old keys stay stale.
        let (last, last_gen) = slab.insert((), 3);
        slab.remove(last);
        slab.shrink_to_fit();
        slab.check().unwrap();
        assert!(slab.get_key(last, last_gen).is_none());
        assert!(slab.lanes.iter().all(|&(n, e)| n == e));
        let (i, g) = slab.insert((), 3);
        assert_ne!((i, g), (last, last_gen));
        slab.check().unwrap();
    }

    #[test]
    fn shrink_keeps_keys_unique() {
        let mut slab = Slab::with_capacity(16, &Tuning::DEFAULT);
        let keys: Vec<_> = (0..8).map(|v| slab.insert(v, 0)).collect();
        for &(i, _) in &keys[2..] {
            slab.remove(i);
        }
        slab.shrink_to_fit();
        slab.check().unwrap();
        assert_eq!(slab.len(), 2);
        // Reusing a truncated index must not revive an old key.
        let again: Vec<_> = (0..6).map(|v| slab.insert(v, 0)).collect();
        for &(i, g) in &keys[2..] {
            assert!(slab.get_key(i, g).is_none());
        }
        assert_eq!(again.len(), 6);
        slab.check().unwrap();
        assert_eq!(slab.next_occupied(0), Some(0));
    }
}
