//! The slot table: one atomic state word per timer, and [`TimerHandle`].
//!
//! # State word
//!
//! Every timer owns a *slot* while it exists. The slot is one `AtomicU64`:
//!
//! ```text
//!  63            32 31                 4   3     2..0
//! +---------------+--------------------+------+-------+
//! |  generation   |  reset sequence    |repeat| state |
//! +---------------+--------------------+------+-------+
//! ```
//!
//! - `state` is [`FREE`], [`PENDING`], [`QUEUED`] (due, handed to the
//!   workers, not started), [`RUNNING`] (the callback has started) or
//!   [`CANCELLED`].
//! - `repeat` is set for repeating timers (it decides what `cancel` may do
//!   to a running timer).
//! - `seq` counts successful `reset`s (mod 2^28); the tick thread stores the
//!   `seq` it armed an entry with and fires the entry only if the word still
//!   carries that `seq`.
//! - `generation` is bumped each time the slot is freed, so a handle (index,
//!   generation) of an earlier occupant never matches again (until the 32-bit
//!   generation wraps, i.e. after 2^32 reuses of the same slot while the old
//!   handle is kept; the free lists are (mostly) FIFO, which spreads reuse over all
//!   free slots).
//!
//! # Transitions and who may make them
//!
//! | from | to | by | operation |
//! |------|----|----|-----------|
//! | FREE(g) | PENDING(g, 0) | the allocating producer (sole owner of a popped free index) | `alloc` (plain store) |
//! | PENDING(g, s) | PENDING(g, s+1) | any thread with a handle | `reset` (CAS) |
//! | RUNNING(g, s), repeating | RUNNING(g, s+1) | any thread with a handle | `reset` (CAS) |
//! | QUEUED(g, s) | QUEUED(g, s+1) | any thread with a handle | `reset` (CAS) |
//! | PENDING(g, s) | QUEUED(g, s) | tick thread, with `s` = the entry's seq | `claim` (CAS) |
//! | QUEUED(g, s) | RUNNING(g, s) | the worker holding the entry, `s` = the entry's seq: **the callback starts** | `start` (CAS) |
//! | QUEUED(g, s') | PENDING(g, s') | the worker, when `s'` ≠ the entry's seq (reset after the claim): the entry goes back to the tick thread | `start` (CAS) |
//! | PENDING or QUEUED (g, *) | CANCELLED(g) | any thread with a handle; tick thread and producers at shutdown (PENDING only) | `cancel` / `cancel_current` (CAS) |
//! | RUNNING(g, *), repeating | CANCELLED(g) | any thread with a handle | `cancel` (CAS) |
//! | RUNNING(g, s) | PENDING(g, s) | the worker that ran it (repeating) | `finish_run` (CAS) |
//! | RUNNING(g, *) | CANCELLED(g) | the worker that ran it (repeating, at shutdown or after a panic) | `stop_running` (CAS) |
//! | RUNNING or CANCELLED (g) | FREE(g+1) | the single owner of the timer's entry (see below) | `release` (plain store) |
//!
//! `release` is a plain store because no other thread can change the word
//! in those states: `cancel`/`reset` never CAS a one-shot RUNNING word or a
//! CANCELLED word, and only the owner of the entry claims or finishes it.
//!
//! **Release ownership.** A slot is released exactly once, by whoever holds
//! the timer's entry (its closure) when it is known to be over: the worker
//! after a one-shot run or after a cancelled/stopped repeating run; the tick
//! thread when it removes a cancelled entry from its wheel, pops one whose
//! claim finds it cancelled, or receives an insert/re-arm of a cancelled
//! timer. Since the entry is unique (it is moved, never copied), so is the
//! release. After `release` the index (with its new generation) goes to
//! its lane's free list; the tick thread does this in batches (`retire`
//! now, `recycle` at the end of its round or every 256 slots).
//!
//! **Linearizability.** "cancel returns true" and "the callback starts" are
//! the two CASes {PENDING, QUEUED}→CANCELLED and QUEUED→RUNNING on the same
//! word; the latter is made by the worker immediately before it calls the
//! closure. For a one-shot timer RUNNING is terminal for `cancel`, so
//! exactly one succeeds; for a repeating timer `cancel` of a RUNNING word
//! succeeds and no later `start` can (the worker's `finish_run` fails), so
//! no run starts after `cancel` returned true. `reset` returning true is the CAS that bumps `seq`; an entry
//! armed with the old `seq` can no longer be claimed, so the old deadline
//! can never fire.
//!
//! # Growth
//!
//! The table is a fixed directory of chunks, four of each size, the size
//! doubling from one group of four to the next (so the table grows by a
//! quarter to an eighth of its size at a time, see [`locate`]), each
//! allocated once, on first use, in a `OnceLock`; reading a word is
//! lock-free (an acquire load of the chunk pointer), and only the thread
//! that first needs a new chunk takes the cell's internal lock while
//! allocating it. Never-used indices are handed out densely from one
//! shared counter, in blocks of `FRESH_BLOCK` per lane (so the table's size
//! follows the number of live timers, whatever the number of lanes); freed
//! indices go to the lanes' lock-free free lists (a bounded ring plus an
//! overflow queue, `sync::RingQueue`).

use std::fmt;
use std::time::Duration;

use crate::sync::{Arc, AtomicU64, CachePadded, OnceLock, Ordering, RingQueue};

use super::LaneRef;

/// `state` value of a slot on the free list.
pub(crate) const FREE: u64 = 0;
/// `state` value of a scheduled timer whose (next) run has not started.
pub(crate) const PENDING: u64 = 1;
/// `state` value while a run has been claimed by the tick thread and has
/// not finished.
pub(crate) const RUNNING: u64 = 2;
/// `state` value of a cancelled timer whose slot is not yet released.
pub(crate) const CANCELLED: u64 = 3;
/// `state` value of a run that the tick thread handed to the workers and
/// that has not started yet (still cancellable and resettable).
pub(crate) const QUEUED: u64 = 4;

const STATE_MASK: u64 = 0b111;
const REPEAT_BIT: u64 = 1 << 3;
const SEQ_SHIFT: u32 = 4;
/// Width of the reset sequence number.
pub(crate) const SEQ_BITS: u32 = 28;
const SEQ_LIMIT: u32 = 1 << SEQ_BITS;
const SEQ_MASK: u64 = ((SEQ_LIMIT as u64) - 1) << SEQ_SHIFT;
const GEN_SHIFT: u32 = 32;

/// Packs the fields of a state word.
pub(crate) fn pack(gen: u32, seq: u32, repeat: bool, state: u64) -> u64 {
    debug_assert!(state <= STATE_MASK && seq < SEQ_LIMIT);
    (u64::from(gen) << GEN_SHIFT)
        | (u64::from(seq % SEQ_LIMIT) << SEQ_SHIFT)
        | if repeat { REPEAT_BIT } else { 0 }
        | (state & STATE_MASK)
}

/// The generation of a state word.
pub(crate) fn gen_of(w: u64) -> u32 {
    (w >> GEN_SHIFT) as u32
}

/// The reset sequence number of a state word.
pub(crate) fn seq_of(w: u64) -> u32 {
    ((w & SEQ_MASK) >> SEQ_SHIFT) as u32
}

/// The state of a state word.
pub(crate) fn state_of(w: u64) -> u64 {
    w & STATE_MASK
}

/// Whether the word belongs to a repeating timer.
pub(crate) fn is_repeat(w: u64) -> bool {
    w & REPEAT_BIT != 0
}

/// The same word with another state.
pub(crate) fn with_state(w: u64, state: u64) -> u64 {
    (w & !STATE_MASK) | (state & STATE_MASK)
}

/// The same word with the reset sequence incremented (mod 2^28).
pub(crate) fn bump_seq(w: u64) -> u64 {
    let seq = (seq_of(w) + 1) % SEQ_LIMIT;
    (w & !SEQ_MASK) | (u64::from(seq) << SEQ_SHIFT)
}

/// The word of a freed slot: next generation, sequence 0, FREE.
pub(crate) fn freed(w: u64) -> u64 {
    pack(gen_of(w).wrapping_add(1), 0, false, FREE)
}

/// A free-list entry: a retired index and its new generation.
pub(crate) fn pack_free(index: u32, gen: u32) -> u64 {
    (u64::from(gen) << 32) | u64::from(index)
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
pub(crate) fn locate(index: u32) -> (usize, usize) {
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

/// What the tick thread's claim of an expired entry found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// PENDING with the entry's seq: now QUEUED; hand it to a worker.
    Won,
    /// The timer was cancelled: drop the entry and release the slot.
    Cancelled,
    /// A reset moved the timer after this entry was armed; its message is
    /// on the way (or already applied to a newer entry).
    Stale,
}

/// What a worker's start of a queued entry found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// Now RUNNING: call the closure.
    Run,
    /// Reset after the claim: now PENDING again; send the entry back to the
    /// tick thread (the reset's command carries the new deadline).
    Moved,
    /// Cancelled after the claim: drop the entry and release the slot.
    Cancelled,
}

/// The shared table of state words.
///
/// Each *lane* (see `mod.rs`) has its own block of never-used indices and
/// its own free list; releasers return an index to the lane it came from
/// when they know it (the tick thread applying a lane's `Cancel`), else to
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
    /// A table with `lanes` lanes (at least 1).
    pub(crate) fn new(lanes: usize) -> SlotTable {
        let lanes = lanes.max(1);
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
        let (k, off) = locate(index);
        &self.chunk(k)[off]
    }

    /// A free index for a producer on `lane`: the lane's free list first,
    /// then (so that the table never grows while slots are free elsewhere)
    /// the other lanes' free lists, then a never-used index. `None` when
    /// all 2^32 indices are in use.
    fn take_index(&self, lane: usize) -> Option<(u32, u32)> {
        let lanes = self.free.len();
        let lane = lane % lanes;
        // `is_empty` first: it is two loads, while `pop` on an empty
        // queue costs a fence.
        for d in 0..lanes {
            let q = &self.free[(lane + d) % lanes];
            if !q.is_empty() {
                if let Some(v) = q.pop() {
                    return Some(unpack_free(v));
                }
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

    /// Takes a free slot (preferably of `lane`) and marks it PENDING.
    /// Returns `(index, generation)`, or `None` when all 2^32 indices are
    /// in use.
    pub(crate) fn alloc(&self, lane: usize, repeat: bool) -> Option<(u32, u32)> {
        let (index, gen) = self.take_index(lane)?;
        let word = self.word(index);
        // Sole owner: the index came from a free list or a counter. The
        // free list carries the generation, so this is a blind store: no
        // load of a line the releasing thread wrote last (a cache miss
        // that would stall; a store miss does not). The free-list pop
        // (acquire) is ordered after the release's store of FREE(gen).
        debug_assert_eq!(word.load(Ordering::Acquire), pack(gen, 0, false, FREE));
        word.store(pack(gen, 0, repeat, PENDING), Ordering::Release);
        Some((index, gen))
    }

    /// Frees the slot (see "Release ownership"): bumps the generation and
    /// puts the index on `lane`'s free list (any lane is correct; the
    /// caller's own, or the lane the timer came from, keeps reuse local).
    pub(crate) fn release(&self, lane: usize, index: u32) {
        let gen = self.retire(index);
        self.recycle(lane, index, gen);
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
    pub(crate) fn recycle(&self, lane: usize, index: u32, gen: u32) {
        self.free[lane % self.free.len()].push(pack_free(index, gen));
    }

    /// The lane an index is returned to when the releaser knows no better
    /// one.
    pub(crate) fn home_lane(&self, index: u32) -> usize {
        (index as usize / FRESH_BLOCK as usize) % self.free.len()
    }

    /// `cancel` from a handle: PENDING or QUEUED → CANCELLED, or RUNNING →
    /// CANCELLED for a repeating timer. On success, `Some(with_worker)`:
    /// whether the entry is with a worker (QUEUED, RUNNING), which then
    /// releases the slot; otherwise the tick thread does.
    pub(crate) fn cancel(&self, index: u32, gen: u32) -> Option<bool> {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        loop {
            if gen_of(w) != gen {
                return None;
            }
            let running = match state_of(w) {
                PENDING => false,
                QUEUED => true,
                RUNNING if is_repeat(w) => true,
                _ => return None,
            };
            match word.compare_exchange_weak(
                w,
                with_state(w, CANCELLED),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(running),
                Err(now) => w = now,
            }
        }
    }

    /// PENDING → CANCELLED for the slot's current occupant, whatever its
    /// generation and sequence. Used at shutdown by the owner of the entry.
    pub(crate) fn cancel_current(&self, index: u32) -> bool {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        while state_of(w) == PENDING {
            match word.compare_exchange_weak(
                w,
                with_state(w, CANCELLED),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
        false
    }

    /// `reset` from a handle: bumps the sequence of a PENDING timer (or of a
    /// running repeating one). Returns the new sequence on success.
    pub(crate) fn reset(&self, index: u32, gen: u32) -> Option<u32> {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        loop {
            if gen_of(w) != gen {
                return None;
            }
            match state_of(w) {
                PENDING | QUEUED => {}
                RUNNING if is_repeat(w) => {}
                _ => return None,
            }
            let next = bump_seq(w);
            match word.compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(seq_of(next)),
                Err(now) => w = now,
            }
        }
    }

    /// The tick thread's claim of an expired entry armed with `seq`.
    pub(crate) fn claim(&self, index: u32, seq: u32) -> Claim {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        loop {
            match state_of(w) {
                PENDING if seq_of(w) == seq => {}
                PENDING => return Claim::Stale,
                CANCELLED => return Claim::Cancelled,
                other => unreachable!("claimed a slot in state {other}"),
            }
            match word.compare_exchange_weak(
                w,
                with_state(w, QUEUED),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Claim::Won,
                Err(now) => w = now,
            }
        }
    }

    /// The worker's start of a QUEUED entry armed with `seq`.
    pub(crate) fn start(&self, index: u32, seq: u32) -> Start {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        loop {
            let (to, outcome) = match state_of(w) {
                QUEUED if seq_of(w) == seq => (RUNNING, Start::Run),
                QUEUED => (PENDING, Start::Moved),
                CANCELLED => return Start::Cancelled,
                other => unreachable!("started a slot in state {other}"),
            };
            match word.compare_exchange_weak(
                w,
                with_state(w, to),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return outcome,
                Err(now) => w = now,
            }
        }
    }

    /// After a repeating run: RUNNING → PENDING (keeping the sequence).
    /// `Some(current seq)`, or `None` if the timer was cancelled meanwhile.
    pub(crate) fn finish_run(&self, index: u32) -> Option<u32> {
        self.leave_running(index, PENDING)
    }

    /// After a repeating run that must not be re-armed (shutdown, panic):
    /// RUNNING → CANCELLED. `false` if it was already cancelled.
    pub(crate) fn stop_running(&self, index: u32) -> bool {
        self.leave_running(index, CANCELLED).is_some()
    }

    fn leave_running(&self, index: u32, to: u64) -> Option<u32> {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        loop {
            match state_of(w) {
                RUNNING => {}
                CANCELLED => return None,
                other => unreachable!("finished a run in state {other}"),
            }
            match word.compare_exchange_weak(
                w,
                with_state(w, to),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(seq_of(w)),
                Err(now) => w = now,
            }
        }
    }

    /// `true` iff `cancel(index, gen)` would succeed now.
    pub(crate) fn is_active(&self, index: u32, gen: u32) -> bool {
        let w = self.word(index).load(Ordering::Acquire);
        gen_of(w) == gen
            && match state_of(w) {
                PENDING | QUEUED => true,
                RUNNING => is_repeat(w),
                _ => false,
            }
    }

    /// The current word (for the tick thread's message checks).
    pub(crate) fn load(&self, index: u32) -> u64 {
        self.word(index).load(Ordering::Acquire)
    }
}

/// A handle to one scheduled timer: cancel it, push it back, ask whether it
/// is still pending.
///
/// A handle is a slot index plus a generation (16 bytes with the pointer to
/// the scheduler's shared state). Handles are cheap to clone; all clones
/// name the same timer. A handle whose timer is over (fired, cancelled, or
/// its slot reused by a later timer) is *stale*: every method answers
/// `false` and never touches another timer. Handles may outlive the
/// [`Scheduler`](crate::Scheduler).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::Scheduler;
///
/// let scheduler = Scheduler::new();
/// let handle = scheduler.schedule(Duration::from_secs(3600), || println!("late")).unwrap();
/// assert!(handle.is_active());
/// assert!(handle.cancel()); // the callback will never run
/// assert!(!handle.cancel()); // already cancelled
/// assert!(!handle.is_active());
/// ```
#[derive(Clone)]
pub struct TimerHandle {
    pub(crate) lane: Arc<LaneRef>,
    pub(crate) index: u32,
    pub(crate) gen: u32,
}

impl TimerHandle {
    /// Stops every future run of the timer. Returns `true` iff this call did
    /// so: for a one-shot timer, the callback never starts; for a repeating
    /// timer, no run starts after `cancel` returns (a run already in
    /// progress finishes). Exactly one of "a `cancel` returns true" and "the
    /// callback starts" happens for a one-shot timer.
    ///
    /// Lock-free and O(1); callable from any thread, including from inside
    /// the timer's own callback. The closure is dropped within about a
    /// millisecond (by the tick thread), not at its deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let scheduler = wheel::Scheduler::new();
    /// let h = scheduler.schedule(Duration::from_secs(60), || unreachable!()).unwrap();
    /// assert!(h.cancel());
    /// ```
    pub fn cancel(&self) -> bool {
        self.lane
            .shared
            .cancel(self.lane.lane, self.index, self.gen)
    }

    /// Re-arms a timer that has not started so that it runs `delay` from now
    /// instead of at its current deadline. Returns `true` iff the timer had
    /// not started and will now run at the new deadline (never at the old
    /// one); `false` if it already started, finished or was cancelled.
    ///
    /// On a repeating timer it moves the next run (also while a run is in
    /// progress: the run after it then happens `delay` after the `reset`),
    /// and later runs follow at the period from there.
    ///
    /// Lock-free, O(1), no allocation: suited to pushing back an idle
    /// timeout on every heartbeat.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let scheduler = wheel::Scheduler::new();
    /// let idle = scheduler.schedule(Duration::from_secs(30), || println!("idle")).unwrap();
    /// assert!(idle.reset(Duration::from_secs(30))); // heartbeat received
    /// idle.cancel();
    /// assert!(!idle.reset(Duration::from_secs(30)));
    /// ```
    pub fn reset(&self, delay: Duration) -> bool {
        self.lane
            .shared
            .reset(self.lane.lane, self.index, self.gen, delay)
    }

    /// `true` while the timer has a run that [`cancel`](Self::cancel) could
    /// still stop: a one-shot timer that has not started, or a repeating
    /// timer that has not been cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let scheduler = wheel::Scheduler::new();
    /// let h = scheduler.schedule_repeating(Duration::from_secs(1), || {}).unwrap();
    /// assert!(h.is_active());
    /// h.cancel();
    /// assert!(!h.is_active());
    /// ```
    pub fn is_active(&self) -> bool {
        self.lane.shared.slots.is_active(self.index, self.gen)
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHandle")
            .field("index", &self.index)
            .field("generation", &self.gen)
            .field("active", &self.is_active())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn word_fields_round_trip_at_boundaries() {
        for &(gen, seq, repeat, state) in &[
            (0u32, 0u32, false, FREE),
            (u32::MAX, SEQ_LIMIT - 1, true, CANCELLED),
            (1, 1, false, PENDING),
            (0x8000_0000, 0x0800_0000, true, RUNNING),
        ] {
            let w = pack(gen, seq, repeat, state);
            assert_eq!(gen_of(w), gen);
            assert_eq!(seq_of(w), seq);
            assert_eq!(is_repeat(w), repeat);
            assert_eq!(state_of(w), state);
        }
    }

    #[test]
    fn seq_wraps_without_touching_other_fields() {
        let w = pack(7, SEQ_LIMIT - 1, true, RUNNING);
        let b = bump_seq(w);
        assert_eq!(seq_of(b), 0);
        assert_eq!(gen_of(b), 7);
        assert!(is_repeat(b));
        assert_eq!(state_of(b), RUNNING);
        let f = freed(pack(u32::MAX, 5, true, CANCELLED));
        assert_eq!(
            (gen_of(f), seq_of(f), is_repeat(f), state_of(f)),
            (0, 0, false, FREE)
        );
        assert_eq!(state_of(with_state(w, PENDING)), PENDING);
    }

    #[test]
    fn locate_covers_every_index_once() {
        let first = 1u32 << FIRST_CHUNK_BITS;
        let group = 1u32 << GROUP_BITS;
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(first - 1), (0, first as usize - 1));
        assert_eq!(locate(first), (1, 0));
        // The first group: `group` chunks of `first` words.
        assert_eq!(
            locate(group * first - 1),
            (group as usize - 1, first as usize - 1)
        );
        // The second group: chunks of twice the size.
        assert_eq!(locate(group * first), (group as usize, 0));
        assert_eq!(
            locate(group * first + 2 * first - 1),
            (group as usize, 2 * first as usize - 1)
        );
        assert_eq!(locate(group * first + 2 * first), (group as usize + 1, 0));
        assert_eq!(chunk_len(0), first as usize);
        assert_eq!(chunk_len(group as usize), 2 * first as usize);
        let (k, off) = locate(u32::MAX);
        assert!(k < CHUNKS);
        assert!(off < chunk_len(k));
        // The directory covers exactly what it needs (no chunk past the
        // one holding u32::MAX could ever be used).
        assert!(k >= CHUNKS - group as usize);
        // Consecutive indices map to consecutive positions.
        let mut prev = locate(0);
        for i in 1..(80 * first) {
            let cur = locate(i);
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
    fn table_protocol_single_thread() {
        let t = SlotTable::new(1);
        let (i, g) = t.alloc(0, false).unwrap();
        assert!(t.is_active(i, g));
        assert_eq!(t.reset(i, g), Some(1));
        assert_eq!(t.claim(i, 0), Claim::Stale);
        assert_eq!(t.claim(i, 1), Claim::Won);
        assert_eq!(t.reset(i, g), Some(2), "queued, not started: still movable");
        assert_eq!(t.start(i, 1), Start::Moved);
        assert_eq!(t.claim(i, 2), Claim::Won);
        assert_eq!(t.start(i, 2), Start::Run);
        assert_eq!(
            t.cancel(i, g),
            None,
            "a started one-shot cannot be cancelled"
        );
        assert_eq!(t.reset(i, g), None);
        t.release(0, i);
        assert_eq!(t.cancel(i, g), None, "stale handle");
        let (j, g2) = t.alloc(0, true).unwrap();
        assert_eq!(
            (j, g2),
            (i, g + 1),
            "free slot reused with a new generation"
        );
        assert_eq!(t.claim(j, 0), Claim::Won);
        assert_eq!(t.start(j, 0), Start::Run);
        assert_eq!(
            t.reset(j, g2),
            Some(1),
            "a running repeating timer can be moved"
        );
        assert_eq!(t.finish_run(j), Some(1));
        assert_eq!(t.cancel(j, g), None);
        assert_eq!(t.cancel(j, g2), Some(false));
        assert_eq!(t.claim(j, 1), Claim::Cancelled);
        assert!(!t.cancel_current(j));
        t.release(0, j);
        let (k, g3) = t.alloc(0, false).unwrap();
        assert_eq!(t.claim(k, 0), Claim::Won);
        assert_eq!(
            t.cancel(k, g3),
            Some(true),
            "queued: cancellable, the worker releases"
        );
        assert_eq!(t.start(k, 0), Start::Cancelled);
        t.release(0, k);
    }

    #[test]
    fn lanes_take_dense_blocks_and_share_free_slots() {
        let t = SlotTable::new(4);
        let b = FRESH_BLOCK as u32;
        // Lane 1 takes the first block, lane 3 the next one: indices stay
        // dense whatever the number of lanes.
        let a: Vec<_> = (0..3).map(|_| t.alloc(1, false).unwrap()).collect();
        assert_eq!(a, vec![(0, 0), (1, 0), (2, 0)]);
        assert_eq!(t.alloc(3, false).unwrap(), (b, 0));
        assert_eq!(t.alloc(1, false).unwrap(), (3, 0), "lane 1 keeps its block");
        // A released slot goes to the lane the releaser names, with the
        // next generation, and is reused before any fresh index...
        assert_eq!(t.cancel(1, 0), Some(false));
        t.release(1, 1);
        assert_eq!(t.alloc(1, false).unwrap(), (1, 1));
        // ...also by a producer on another lane (stolen), so the table
        // does not grow while slots are free.
        assert_eq!(t.cancel(2, 0), Some(false));
        t.release(1, 2);
        assert_eq!(t.alloc(2, true).unwrap(), (2, 1));
        assert_eq!(t.alloc(2, false).unwrap(), (2 * b, 0), "then a fresh block");
        // retire + recycle is release in two steps.
        assert_eq!(t.cancel(0, 0), Some(false));
        assert_eq!(t.retire(0), 1);
        assert_eq!(t.cancel(0, 0), None, "stale once retired");
        t.recycle(t.home_lane(0), 0, 1);
        assert_eq!(t.alloc(0, false).unwrap(), (0, 1));
    }

    #[test]
    fn one_lane_of_many_allocates_densely() {
        // 8 lanes, one producer: the table must not grow 8 times faster
        // than the number of timers (indices are not striped by lane).
        let t = SlotTable::new(8);
        let n = 10_000u32;
        let max = (0..n).map(|_| t.alloc(5, false).unwrap().0).max().unwrap();
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
            let (i, g) = t.alloc(0, false).unwrap();
            assert_eq!((i, g), (expect, 0));
        }
        assert!(t.is_active(n - 1, 0));
    }
}
