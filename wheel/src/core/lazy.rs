//! How a cell dies: the wheel's lazy deletion, one state machine.
//!
//! A cell is *live* while its entry keeps the cell's address in `pos`. The
//! entry leaves its cell when it is cancelled, reset or drained (a `poll`
//! that returns it pops the cell instead, see `Wheel::pop_ready`); from then
//! on the cell is dead, and it goes through the steps below, each named by
//! the one function that takes it. A dead cell is *marked* once its dead
//! bit is set, *counted* once its bucket's `dead` counts it, and *dropped*
//! once a reader of its bucket takes it out (steps 3 to 5 below, or the
//! bucket's other readers).
//!
//! ```text
//!    kill ─┬─ exact bucket ──▶ kill_now: marked and counted ──┐
//!          │                                                  ├──▶ dropped
//!          └─ lazy bucket ──▶ logged ──flush_kills──▶ marked ─┘
//! ```
//!
//! 1. **kill** ([`Wheel::kill`]): the one entry point, given the entry's old
//!    deadline and address after the entry let go of the cell (it is freed,
//!    or its `pos` is [`CellAddr::NONE`]). It finds the cell's bucket class
//!    from the deadline alone:
//!    - in an *exact* bucket (the ready queue, level 0, the stage) the cell
//!      is killed now ([`Wheel::kill_now`]): marked and counted at once
//!      (`Bucket::kill`), and the bucket settled if that left it needing it;
//!    - in a *lazy* bucket (levels 1 and up, not staged) the cell is only
//!      *logged*: its address goes into the kill log, and nothing else is
//!      touched. A logged cell is unmarked, and its bucket counts it live.
//!
//!    `drain` alone kills its cells now in every bucket, lazy ones too
//!    (through [`Wheel::locate`] and `kill_now`): it has flushed the log,
//!    and the bucket it takes a cell from is settled at once.
//! 2. **flush** ([`Wheel::flush_kills`]): marks every logged cell and adds
//!    their number to `lazy_dead`: they are now marked but *uncounted*, the
//!    bucket's *share* of `lazy_dead`. It runs when the log is full and
//!    before anything reads a lazy bucket (the slow part of `poll`, `drain`,
//!    `shrink_to_fit`), so that every reader can trust the dead bits; it
//!    also drives the sweep.
//! 3. **settle** ([`Wheel::settle`], and [`Wheel::settle_ready`] for the
//!    ready queue): restores the shape of a bucket in which cells were just
//!    counted dead or taken out: frees it if no live cell is left (and
//!    vacates its slot), else compacts it if its dead cells are overdue
//!    (`Bucket::wants_compaction`). The ready queue first drops the dead
//!    cells at its front, so that its front is always live.
//! 4. **sweep** ([`Wheel::sweep`]): when `lazy_dead` exceeds
//!    [`Wheel::sweep_bound`], compacts the lazy buckets one after another,
//!    a budget per flush, so that uncounted dead cells stay in proportion
//!    to the pending timers although nothing else may read their buckets
//!    for a long time.
//! 5. **compact** ([`Wheel::compact`]; [`Wheel::compact_all`] for every
//!    bucket into a fresh arena): drops every marked cell of a bucket,
//!    counted or not, takes the bucket's share off `lazy_dead`, and vacates
//!    the slot if nothing live was left.
//! 6. **vacate** ([`Wheel::vacate`]): a slot's bucket became empty: clears
//!    its occupancy bit (and, on the top level, its deadline bound).
//!
//! The other readers of a lazy bucket drop the dead cells they pass in the
//! same way, taking the bucket's share off `lazy_dead`: a cascade
//! (`Wheel::process`) and the staging (`Wheel::stage_step`).
//!
//! Why log instead of marking at once: the dead bit is a cache miss when
//! timers are many, and a processor runs ahead across only a few such
//! updates, so random cancels would each wait for memory; logged, a cancel
//! costs a store that depends on nothing pending, and a flush marks the
//! batch with its misses overlapping. Why not count the cell in its bucket:
//! finding the bucket means computing the level and slot from the deadline
//! and touching the bucket's counts (`docs/design.md`, "Lazy buckets and
//! sweeps"); a lazy bucket's cells are read only when its slot comes up,
//! when it is staged or by a sweep, and each of these tells dead cells by
//! their bits. Level 0, the stage and the ready queue stay exact, so
//! `next_expiration` stays exact for level 0 and the ready queue's front
//! stays live.
//!
//! Invariants (checked by `Wheel::check_invariants`): the kill log holds
//! fewer than `DEFER_KILLS` cells between calls, each once, all in lazy
//! buckets, none marked; an exact bucket counts exactly its marked cells;
//! a lazy bucket counts at least `dead` of its marked cells dead, and the
//! shares of all lazy buckets add up to `lazy_dead`.

use super::cells::{BLOCK_CELLS, Blocks, Bucket, COMPACT_RATIO, CellAddr};
use super::level::Level;
use super::{Loc, Wheel};

/// Cells a sweep pass reads (at least) per cell that the kill log marks
/// dead: a pass over `C` cells then ends within `C / 8` cancels, so the
/// cells that die during a pass are few beside those it started for.
const SWEEP_PER_KILL: usize = 8;

impl<T> Wheel<T> {
    /// Kills the cell at `pos` of an entry due at `when`, which has left
    /// it: at once if it is in an exact bucket (the ready queue, level 0 or
    /// the stage), else by logging it, to be marked by the next flush
    /// without its bucket being told (see the module docs).
    ///
    /// [`locate`](Wheel::locate), spelled out: calling it would compute the
    /// slot of a lazy cell too, which this path never needs.
    #[inline]
    pub(super) fn kill(&mut self, when: u64, pos: CellAddr) {
        let loc = if when <= self.elapsed {
            Loc::Ready
        } else {
            let level = self.layout.level_for(self.elapsed, when);
            if level == 0 {
                Loc::Level(0, self.levels[0].geom.slot_of(when))
            } else if self.is_staged(level, when, pos) {
                Loc::Stage(self.stage.geom.slot_of(when))
            } else {
                if self.kills.push(pos) {
                    self.flush_kills();
                }
                return;
            }
        };
        self.kill_now(loc, pos);
    }

    /// Kills the cell at `pos`, in the bucket at `loc`, now: marks and
    /// counts it (see [`Bucket::kill`]), then settles the bucket if it has
    /// no live cell left or too many dead ones (and the ready queue always,
    /// whose front must stay live). The caller has already freed the entry,
    /// or set its `pos` to [`CellAddr::NONE`] before placing it again.
    #[inline]
    pub(super) fn kill_now(&mut self, loc: Loc, pos: CellAddr) {
        let bucket = bucket_at(&mut self.ready, &mut self.stage, &mut self.levels, loc);
        let unsettled = bucket.kill(&mut self.blocks, pos) || bucket.wants_compaction();
        if unsettled || matches!(loc, Loc::Ready) {
            self.settle(loc);
        }
    }

    /// Marks every logged cell dead, counts them in `lazy_dead`, and sweeps
    /// if a pass is under way or the count calls for one.
    #[inline(never)]
    pub(super) fn flush_kills(&mut self) {
        let logged = self.kills.as_slice();
        for &pos in logged {
            self.blocks.set_dead(pos);
        }
        let marked = logged.len();
        self.kills.clear();
        self.lazy_dead += marked;
        if self.sweep.is_some() || self.lazy_dead > self.sweep_bound() {
            self.sweep(marked * SWEEP_PER_KILL);
        }
    }

    /// The count of lazily dead cells above which a sweep starts.
    #[inline]
    fn sweep_bound(&self) -> usize {
        COMPACT_RATIO * self.slab.len() + self.sweep_min
    }

    /// Compacts lazy buckets, from the pass's cursor on, until `budget`
    /// cells were read or the pass has visited every lazy slot once. A pass
    /// starts when `lazy_dead` exceeds [`sweep_bound`](Wheel::sweep_bound)
    /// and goes on with every flush of the kill log, reading at least
    /// [`SWEEP_PER_KILL`] cells per cell marked, so its cost is paid by the
    /// cancels that made it due (a pass reads the pending timers' cells and
    /// at least a `COMPACT_RATIO`-times larger number of dead ones). It
    /// works one bucket at a time, as a compaction always did: the pause is
    /// at most one bucket's cells.
    fn sweep(&mut self, budget: usize) {
        let top = self.layout.top();
        let (mut level, mut from) = self.sweep.unwrap_or((1, 0));
        let mut read = 0;
        while level <= top {
            let Some(slot) = self.levels[level].next_occupied_from(from) else {
                (level, from) = (level + 1, 0);
                continue;
            };
            read += self.compact(Loc::Level(level, slot));
            from = slot + 1;
            if read >= budget {
                self.sweep = Some((level, from));
                return;
            }
        }
        // Cells killed behind the cursor may still exceed the bound: the
        // next flush then starts another pass.
        self.sweep = None;
    }

    /// Compacts the bucket at `loc`, taking its share off `lazy_dead` (none
    /// if the bucket is exact), and vacates the slot if nothing live was
    /// left. Returns the cells read.
    fn compact(&mut self, loc: Loc) -> usize {
        let bucket = bucket_at(&mut self.ready, &mut self.stage, &mut self.levels, loc);
        let cells = bucket.live + bucket.dead;
        self.lazy_dead -= bucket.compact(&mut self.blocks, &mut self.slab) as usize;
        if bucket.is_empty() {
            self.vacate(loc);
        }
        cells as usize
    }

    /// Compacts every bucket at once, into a fresh arena of just the right
    /// size (for `shrink_to_fit`; the kill log is flushed).
    pub(super) fn compact_all(&mut self) {
        debug_assert!(self.kills.is_empty());
        // Copy every bucket's live cells into a fresh arena of just the
        // right size, telling each entry its new address. Every cell is
        // judged (by its dead bit in the old arena, exact now that the log
        // is flushed) before any entry is told a new one: an old and a new
        // address may be the same number.
        let slab = &mut self.slab;
        let old = &mut self.blocks;
        let mut live: Vec<Vec<u32>> = Vec::new();
        let mut judge = |bucket: &mut Bucket| {
            let mut kept = Vec::with_capacity(bucket.live as usize);
            let mut taken = bucket.take();
            while let Some((addr, index)) = taken.next_cell(old, true) {
                // Read before the next call frees the block.
                if !old.is_dead(addr) {
                    kept.push(index);
                }
            }
            live.push(kept);
        };
        judge(&mut self.ready);
        for level in self.levels.iter_mut() {
            level.slots.iter_mut().for_each(&mut judge);
        }
        self.stage.slots.iter_mut().for_each(&mut judge);
        let needed: usize = live.iter().map(|k| k.len().div_ceil(BLOCK_CELLS)).sum();
        let mut fresh = Blocks::with_capacity(needed);
        let mut lists = live.into_iter();
        let mut rebuild = |bucket: &mut Bucket| {
            for index in lists.next().unwrap_or_default() {
                slab.node_mut(index).pos = bucket.push(&mut fresh, index);
            }
        };
        rebuild(&mut self.ready);
        for level in self.levels.iter_mut() {
            level.slots.iter_mut().for_each(&mut rebuild);
        }
        let epoch = self.stage_epoch;
        for bucket in self.stage.slots.iter_mut() {
            for index in lists.next().unwrap_or_default() {
                let to = bucket.push(&mut fresh, index);
                fresh.set_tag(to, epoch);
                slab.node_mut(index).pos = to;
            }
        }
        self.blocks = fresh;
        // Lazily dead cells are gone, and with them the buckets that held
        // nothing else (the stage's buckets are exact: none of them).
        self.lazy_dead = 0;
        self.sweep = None;
        for level in 1..self.levels.len() {
            let emptied: Vec<usize> = self.levels[level]
                .occupied_slots()
                .filter(|&slot| self.levels[level].slots[slot].is_empty())
                .collect();
            for slot in emptied {
                self.vacate(Loc::Level(level, slot));
            }
        }
    }

    /// The bucket that holds the cell at `pos` of an entry due at `when`.
    #[inline]
    pub(super) fn locate(&self, when: u64, pos: CellAddr) -> Loc {
        if when <= self.elapsed {
            return Loc::Ready;
        }
        let level = self.layout.level_for(self.elapsed, when);
        if self.is_staged(level, when, pos) {
            return Loc::Stage(self.stage.geom.slot_of(when));
        }
        Loc::Level(level, self.levels[level].geom.slot_of(when))
    }

    /// `true` if the live cell at `pos` of an entry due at `when`, on
    /// `level`, is in a stage bucket rather than in its level-1 slot. Only
    /// entries of the staged level-1 slot can be, so the slot is compared
    /// first and the block's tag (one more memory access, a cache miss when
    /// timers are many) is read for those alone. A staged block carries
    /// `stage_epoch`; a level-1 block carries 0.
    #[inline(always)]
    fn is_staged(&self, level: usize, when: u64, pos: CellAddr) -> bool {
        level == 1
            && self
                .staging
                .is_some_and(|(_, slot)| slot == self.levels[1].geom.slot_of(when))
            && self.blocks.tag(pos) == self.stage_epoch
    }

    /// Restores the shape of the bucket at `loc` after cells died or left:
    /// frees it if no live cell is left, else compacts it if dead cells are
    /// too many (for the ready queue, see
    /// [`settle_ready`](Wheel::settle_ready)).
    #[inline]
    pub(super) fn settle(&mut self, loc: Loc) {
        let (level, slot) = match loc {
            Loc::Ready => return self.settle_ready(),
            Loc::Stage(slot) => (&mut self.stage, slot),
            Loc::Level(level, slot) => (&mut self.levels[level], slot),
        };
        let bucket = &mut level.slots[slot];
        if bucket.live == 0 {
            bucket.clear(&mut self.blocks);
            self.vacate(loc);
        } else if bucket.wants_compaction() {
            self.compact(loc);
        }
    }

    /// [`settle`](Wheel::settle) for the ready queue, after a pop or a
    /// dead cell: drops dead cells at the front (so the front is live, or
    /// the queue empty), then frees or compacts the queue as needed.
    #[inline(always)]
    pub(super) fn settle_ready(&mut self) {
        while self.ready.dead > 0 {
            let Some(front) = self.ready.front() else {
                break;
            };
            if !self.blocks.is_dead(front) {
                break;
            }
            self.ready.advance(&mut self.blocks, false);
        }
        if self.ready.live == 0 {
            self.ready.clear(&mut self.blocks);
        } else if self.ready.wants_compaction() {
            self.compact(Loc::Ready);
        }
    }

    /// Marks the slot at `loc`, whose bucket was just emptied, unoccupied
    /// (and, on the top level, forgets its deadline bound).
    fn vacate(&mut self, loc: Loc) {
        match loc {
            Loc::Ready => {}
            Loc::Stage(slot) => self.stage.clear(slot),
            Loc::Level(level, slot) => {
                let top = level == self.layout.top();
                let level = &mut self.levels[level];
                level.clear(slot);
                if top {
                    level.min_when[slot] = u64::MAX;
                    if level.is_empty() {
                        self.top_next = None;
                    }
                }
            }
        }
    }
}

/// The bucket at `loc`, borrowed from the wheel's fields that hold buckets
/// (not from the whole wheel, so the caller can still pass the arena).
#[inline(always)]
fn bucket_at<'a>(
    ready: &'a mut Bucket,
    stage: &'a mut Level,
    levels: &'a mut [Level],
    loc: Loc,
) -> &'a mut Bucket {
    match loc {
        Loc::Ready => ready,
        Loc::Stage(slot) => &mut stage.slots[slot],
        Loc::Level(level, slot) => &mut levels[level].slots[slot],
    }
}
