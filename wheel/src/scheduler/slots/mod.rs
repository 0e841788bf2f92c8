//! The slot table: one atomic state word per timer (`word.rs`), changed
//! only by the transitions in `transitions.rs`, and the free slots.
//!
//! Every timer owns a *slot* while it exists: an index into the table,
//! named with the slot's generation by the timer's
//! [`TimerHandle`](super::TimerHandle)s.
//!
//! # Growth
//!
//! The table is a fixed directory of chunks, four of each size, the size
//! doubling from one group of four to the next (so the table grows by a
//! quarter to an eighth of its size at a time, see [`chunk_and_offset`]), each
//! allocated once, on first use, in a `OnceLock`; reading a word is
//! lock-free (an acquire load of the chunk pointer), and only the thread
//! that first needs a new chunk takes the cell's internal lock while
//! allocating it. Never-used indices are handed out densely from one
//! shared counter, in blocks of `FRESH_BLOCK` per lane (so the table's size
//! follows the number of live timers, whatever the number of lanes); freed
//! indices go to the lanes' lock-free free lists (a bounded ring plus an
//! overflow queue, `sync::RingQueue`).

use crate::sync::{AtomicU64, CachePadded, OnceLock, Ordering, RingQueue};

use super::lanes::lane_of;

mod transitions;
mod word;

pub(crate) use self::transitions::{Cancelled, Claim, Start};
pub(crate) use self::word::{
    CANCELLED, PENDING, QUEUED, RUNNING, gen_of, is_repeat, seq_of, state_of, wrap_seq,
};

use self::word::{FREE, freed, pack};

/// A free-list entry: a retired index and its new generation.
pub(crate) fn pack_free(index: u32, generation: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(index)
}

/// The `(index, generation)` of a free-list entry.
pub(crate) fn unpack_free(v: u64) -> (u32, u32) {
    (v as u32, (v >> 32) as u32)
}

/// log2 of the number of words in chunk 0. Small under loom so that the
/// models stay cheap and cross chunk boundaries.
#[cfg(not(loom))]
const FIRST_CHUNK_BITS: u32 = 10;
#[cfg(loom)]
const FIRST_CHUNK_BITS: u32 = 1;

/// log2 of the number of chunks of each size: the table grows by
/// `1 / 2^GROUP_BITS` of its size at a time (here an eighth to a quarter),
/// so at most that fraction of it is unused, instead of up to a half with
/// plain doubling.
const GROUP_BITS: u32 = 2;

/// Never-used indices a lane takes from the shared counter at a time.
/// Indices are handed out densely (the table's size follows the number of
/// timers, not the number of lanes), and a producer touches the shared
/// counter once per block.
#[cfg(not(loom))]
const FRESH_BLOCK: u64 = 64;
#[cfg(loom)]
const FRESH_BLOCK: u64 = 1;

/// Capacity of each lane's free-index ring (16 bytes per entry, allocated
/// on the lane's first release); more free indices go to an overflow list.
const FREE_RING: usize = 4096;

/// Largest slot index; indices are `u32`.
const MAX_INDEX: u64 = u32::MAX as u64;
/// Size classes needed to cover every `u32` index (`2^GROUP_BITS` chunks
/// each).
const GROUPS: u32 = 33 - FIRST_CHUNK_BITS - GROUP_BITS;
/// Chunks needed to cover every `u32` index.
const CHUNKS: usize = (GROUPS << GROUP_BITS) as usize;

/// The chunk holding `index` and the offset inside it. Chunks come in
/// groups of `2^GROUP_BITS` of equal size; group `g` holds chunks of
/// `2^(FIRST_CHUNK_BITS + g)` words and starts at index
/// `2^(FIRST_CHUNK_BITS + GROUP_BITS) * (2^g - 1)`.
pub(crate) fn chunk_and_offset(index: u32) -> (usize, usize) {
    let shift = FIRST_CHUNK_BITS + GROUP_BITS;
    let v = (u64::from(index) >> shift) + 1;
    let g = 63 - v.leading_zeros();
    let off = u64::from(index) - (((1u64 << g) - 1) << shift);
    let size_bits = FIRST_CHUNK_BITS + g;
    let c = off >> size_bits;
    let k = (u64::from(g) << GROUP_BITS) + c;
    (k as usize, (off & ((1u64 << size_bits) - 1)) as usize)
}

/// Number of words in chunk `k`.
fn chunk_len(k: usize) -> usize {
    1usize << (FIRST_CHUNK_BITS as usize + (k >> GROUP_BITS))
}

/// A lane's block of never-used indices: `next << 32 | left`.
fn pack_fresh(next: u32, left: u32) -> u64 {
    (u64::from(next) << 32) | u64::from(left)
}

/// `(next, left)` of a lane's block of never-used indices.
fn unpack_fresh(v: u64) -> (u32, u32) {
    ((v >> 32) as u32, v as u32)
}

/// The shared table of state words.
///
/// Each *lane* (see `lanes.rs`) has its own block of never-used indices and
/// its own free list; releasers return an index to the lane it came from
/// when they know it (the tick thread applying a lane's `Cancel`, a
/// canceller freeing an unapplied timer of its handle's lane), else to
/// their own lane. So a producer that stays on its lane allocates and gets
/// its slots back without touching another thread's cache lines. Which
/// lane an index is on never matters for correctness.
pub(crate) struct SlotTable {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
    /// The first never-used index not yet given to a lane (may run past
    /// `MAX_INDEX`: then every index has been handed out).
    next_fresh: CachePadded<AtomicU64>,
    /// Per lane: the rest of the block of never-used indices the lane took
    /// from `next_fresh` (see [`pack_fresh`]).
    fresh: Box<[CachePadded<AtomicU64>]>,
    /// Per lane: released indices of that lane (see [`RingQueue`]: mostly
    /// first-in first-out).
    free: Box<[CachePadded<RingQueue<u64>>]>,
}

impl SlotTable {
    /// A table with `lanes` lanes (a power of two).
    pub(crate) fn new(lanes: usize) -> SlotTable {
        assert!(lanes.is_power_of_two(), "lanes: a power of two");
        let chunks: Box<[OnceLock<Box<[AtomicU64]>>]> =
            (0..CHUNKS).map(|_| OnceLock::new()).collect();
        let table = SlotTable {
            chunks,
            next_fresh: CachePadded::new(AtomicU64::new(0)),
            fresh: (0..lanes)
                .map(|_| CachePadded::new(AtomicU64::new(pack_fresh(0, 0))))
                .collect(),
            free: (0..lanes)
                .map(|_| CachePadded::new(RingQueue::new(FREE_RING)))
                .collect(),
        };
        table.chunk(0);
        table
    }

    fn chunk(&self, k: usize) -> &[AtomicU64] {
        self.chunks[k].get_or_init(|| {
            (0..chunk_len(k))
                .map(|_| AtomicU64::new(pack(0, 0, false, FREE)))
                .collect()
        })
    }

    /// The state word of `index`. Only indices handed out by `alloc` are
    /// ever passed here, and `alloc` allocates the chunk first.
    pub(crate) fn word(&self, index: u32) -> &AtomicU64 {
        let (k, off) = chunk_and_offset(index);
        &self.chunk(k)[off]
    }

    /// A free index for a producer on `lane`: the lane's free list first,
    /// then (so that the table never grows while slots are free elsewhere)
    /// the other lanes' free lists, then a never-used index. `None` when
    /// all 2^32 indices are in use.
    fn take_index(&self, lane: usize) -> Option<(u32, u32)> {
        let lanes = self.free.len();
        let lane = lane_of(lane, lanes);
        // `RingQueue::pop` checks for emptiness with loads first (an empty
        // crossbeam queue's `pop` costs a fence).
        for d in 0..lanes {
            if let Some(v) = self.free[lane_of(lane + d, lanes)].pop() {
                return Some(unpack_free(v));
            }
        }
        self.take_fresh(lane).map(|i| (i, 0))
    }

    /// A never-used index (generation 0): from the lane's block, or from a
    /// new block taken from the shared counter.
    fn take_fresh(&self, lane: usize) -> Option<u32> {
        let cell = &self.fresh[lane];
        let mut cur = cell.load(Ordering::Relaxed);
        loop {
            let (next, left) = unpack_fresh(cur);
            if left == 0 {
                break;
            }
            match cell.compare_exchange_weak(
                cur,
                pack_fresh(next.wrapping_add(1), left - 1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(next),
                Err(now) => cur = now,
            }
        }
        let first = self.next_fresh.fetch_add(FRESH_BLOCK, Ordering::Relaxed);
        if first > MAX_INDEX {
            return None;
        }
        let n = FRESH_BLOCK.min(MAX_INDEX + 1 - first) as u32;
        let first = first as u32;
        if n > 1 {
            let rest = pack_fresh(first.wrapping_add(1), n - 1);
            if cell
                .compare_exchange(cur, rest, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                // Another thread of this lane refilled it meanwhile: the
                // rest of the block goes to the free list instead (never
                // used, so generation 0 and FREE).
                for i in 1..n {
                    self.recycle(lane, first.wrapping_add(i), 0);
                }
            }
        }
        Some(first)
    }

    /// Takes a free slot (preferably of `lane`) and marks it PENDING with
    /// sequence `seq` (the timer's outbox position, `outbox.rs`). Returns
    /// `(index, generation)`, or `None` when all 2^32 indices are in use.
    pub(crate) fn alloc(&self, lane: usize, repeat: bool, seq: u32) -> Option<(u32, u32)> {
        let (index, generation) = self.take_index(lane)?;
        let word = self.word(index);
        // Sole owner: the index came from a free list or a counter. The
        // free list carries the generation, so this is a blind store: no
        // load of a line the releasing thread wrote last (a cache miss
        // that would stall; a store miss does not). The free-list pop
        // (acquire) is ordered after the release's store of FREE(generation).
        debug_assert_eq!(
            word.load(Ordering::Acquire),
            pack(generation, 0, false, FREE)
        );
        word.store(pack(generation, seq, repeat, PENDING), Ordering::Release);
        Some((index, generation))
    }

    /// Marks a free slot the caller popped from its own list (its lane's
    /// outbox keeps a few: `outbox.rs`) PENDING with sequence `seq`: the
    /// second half of [`alloc`](Self::alloc).
    pub(crate) fn reuse(&self, index: u32, generation: u32, repeat: bool, seq: u32) {
        let word = self.word(index);
        debug_assert_eq!(
            word.load(Ordering::Acquire),
            pack(generation, 0, false, FREE)
        );
        word.store(pack(generation, seq, repeat, PENDING), Ordering::Release);
    }

    /// Frees the slot of a timer that waits in its lane's outbox, for the
    /// canceller holding the outbox's lock (nobody else writes the word of
    /// such a timer: `outbox.rs`), so a plain store, not a CAS. Returns the
    /// slot's new generation; the caller puts the index on a free list.
    pub(crate) fn free_waiting(&self, index: u32, generation: u32) -> u32 {
        let word = self.word(index);
        let w = word.load(Ordering::Relaxed);
        debug_assert!(gen_of(w) == generation && state_of(w) == PENDING);
        let f = freed(w);
        word.store(f, Ordering::Release);
        gen_of(f)
    }

    /// Frees the slot (see "Release ownership" in `transitions.rs`): bumps
    /// the generation and
    /// puts the index on `lane`'s free list (any lane is correct; the
    /// caller's own, or the lane the timer came from, keeps reuse local).
    pub(crate) fn release(&self, lane: usize, index: u32) {
        let generation = self.retire(index);
        self.recycle(lane, index, generation);
    }

    /// The first half of [`release`](Self::release): bumps the generation
    /// (from now on every handle of the timer is stale). The caller must
    /// pass the index to [`recycle`](Self::recycle) later; until then the
    /// slot is simply not reused. The tick thread batches its recycles, so
    /// that producers popping the free list and the tick thread pushing it
    /// do not work on the same cache lines at the same time.
    /// Returns the slot's new generation.
    pub(crate) fn retire(&self, index: u32) -> u32 {
        let word = self.word(index);
        let w = word.load(Ordering::Acquire);
        debug_assert!(matches!(state_of(w), RUNNING | CANCELLED));
        let f = freed(w);
        word.store(f, Ordering::Release);
        gen_of(f)
    }

    /// The second half of [`release`](Self::release): the retired index
    /// goes to `lane`'s free list.
    pub(crate) fn recycle(&self, lane: usize, index: u32, generation: u32) {
        self.free[lane_of(lane, self.free.len())].push(pack_free(index, generation));
    }

    /// The lane an index is returned to when the releaser knows no better
    /// one.
    pub(crate) fn home_lane(&self, index: u32) -> usize {
        lane_of(index as usize / FRESH_BLOCK as usize, self.free.len())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn chunk_and_offset_covers_every_index_once() {
        let first = 1u32 << FIRST_CHUNK_BITS;
        let group = 1u32 << GROUP_BITS;
        assert_eq!(chunk_and_offset(0), (0, 0));
        assert_eq!(chunk_and_offset(first - 1), (0, first as usize - 1));
        assert_eq!(chunk_and_offset(first), (1, 0));
        // The first group: `group` chunks of `first` words.
        assert_eq!(
            chunk_and_offset(group * first - 1),
            (group as usize - 1, first as usize - 1)
        );
        // The second group: chunks of twice the size.
        assert_eq!(chunk_and_offset(group * first), (group as usize, 0));
        assert_eq!(
            chunk_and_offset(group * first + 2 * first - 1),
            (group as usize, 2 * first as usize - 1)
        );
        assert_eq!(
            chunk_and_offset(group * first + 2 * first),
            (group as usize + 1, 0)
        );
        assert_eq!(chunk_len(0), first as usize);
        assert_eq!(chunk_len(group as usize), 2 * first as usize);
        let (k, off) = chunk_and_offset(u32::MAX);
        assert!(k < CHUNKS);
        assert!(off < chunk_len(k));
        // The directory covers exactly what it needs (no chunk past the
        // one holding u32::MAX could ever be used).
        assert!(k >= CHUNKS - group as usize);
        // Consecutive indices map to consecutive positions.
        let mut prev = chunk_and_offset(0);
        for i in 1..(80 * first) {
            let cur = chunk_and_offset(i);
            if cur.0 == prev.0 {
                assert_eq!(cur.1, prev.1 + 1);
            } else {
                assert_eq!(
                    (cur.0, cur.1, prev.1 + 1),
                    (prev.0 + 1, 0, chunk_len(prev.0))
                );
            }
            prev = cur;
        }
    }

    #[test]
    fn fresh_blocks_round_trip() {
        for &(n, l) in &[(0u32, 0u32), (u32::MAX, 64), (7, 1)] {
            assert_eq!(unpack_fresh(pack_fresh(n, l)), (n, l));
        }
    }
    #[test]
    fn lanes_take_dense_blocks_and_share_free_slots() {
        let t = SlotTable::new(4);
        let b = FRESH_BLOCK as u32;
        // Lane 1 takes the first block, lane 3 the next one: indices stay
        // dense whatever the number of lanes.
        let a: Vec<_> = (0..3).map(|_| t.alloc(1, false, 0).unwrap()).collect();
        assert_eq!(a, vec![(0, 0), (1, 0), (2, 0)]);
        assert_eq!(t.alloc(3, false, 0).unwrap(), (b, 0));
        assert_eq!(
            t.alloc(1, false, 0).unwrap(),
            (3, 0),
            "lane 1 keeps its block"
        );
        // A released slot goes to the lane the releaser names, with the
        // next generation, and is reused before any fresh index...
        assert!(t.mark_applied(1, 0));
        assert_eq!(t.cancel(1, 1, 0), Some(Cancelled::WithTicker));
        t.release(1, 1);
        assert_eq!(t.alloc(1, false, 0).unwrap(), (1, 1));
        // ...also by a producer on another lane (stolen), so the table
        // does not grow while slots are free.
        assert!(t.mark_applied(2, 0));
        assert_eq!(t.cancel(1, 2, 0), Some(Cancelled::WithTicker));
        t.release(1, 2);
        assert_eq!(t.alloc(2, true, 0).unwrap(), (2, 1));
        assert_eq!(
            t.alloc(2, false, 0).unwrap(),
            (2 * b, 0),
            "then a fresh block"
        );
        // retire + recycle is release in two steps.
        assert!(t.mark_applied(0, 0));
        assert_eq!(t.cancel(1, 0, 0), Some(Cancelled::WithTicker));
        assert_eq!(t.retire(0), 1);
        assert_eq!(t.cancel(1, 0, 0), None, "stale once retired");
        t.recycle(t.home_lane(0), 0, 1);
        assert_eq!(t.alloc(0, false, 0).unwrap(), (0, 1));
        // A cancel before the insert is applied frees the slot onto the
        // handle's lane at once, with the next generation.
        let (i, g) = t.alloc(3, false, 0).unwrap();
        assert_eq!(t.cancel(3, i, g), Some(Cancelled::Unapplied));
        assert!(!t.is_active(i, g));
        assert_eq!(t.alloc(3, false, 0).unwrap(), (i, g + 1));
    }

    #[test]
    fn one_lane_of_many_allocates_densely() {
        // 8 lanes, one producer: the table must not grow 8 times faster
        // than the number of timers (indices are not striped by lane).
        let t = SlotTable::new(8);
        let n = 10_000u32;
        let max = (0..n)
            .map(|_| t.alloc(5, false, 0).unwrap().0)
            .max()
            .unwrap();
        assert_eq!(max, n - 1);
    }

    #[test]
    fn free_entries_round_trip() {
        for &(i, g) in &[(0u32, 0u32), (u32::MAX, u32::MAX), (7, 1 << 31)] {
            assert_eq!(unpack_free(pack_free(i, g)), (i, g));
        }
    }

    #[test]
    fn table_grows_past_the_first_chunks() {
        let t = SlotTable::new(1);
        let n = 40 << FIRST_CHUNK_BITS;
        for expect in 0..n {
            let (i, g) = t.alloc(0, false, 0).unwrap();
            assert_eq!((i, g), (expect, 0));
        }
        assert!(t.is_active(n - 1, 0));
    }
}
