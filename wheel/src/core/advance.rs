//! Advancing time: [`Wheel::poll`], [`Wheel::next_expiration`], and the
//! slot events behind them (finding the next one, processing it: moving a
//! slot's entries to the ready queue or down a level, a *cascade*).
//!
//! `poll` returns the ready queue's front while there is one; only when the
//! queue is empty does it advance (out of line): it flushes the kill log
//! (the slot events read lazy buckets), then processes slot events in time
//! order up to `now` until one makes an entry due. Once caught up it
//! records where the next event lies (`event_hint`) and stages part of the
//! next level-1 slot (see [`super::stage`]).

use super::cells::{Blocks, Bucket, CellAddr};
use super::slab::Slab;
use super::{Expired, TimerKey, Wheel};

/// Cells [`Wheel::stage_step`] moves at most per call: bounds the work an
/// idle `poll` adds.
const STAGE_BUDGET: usize = 64;

/// Entries whose deadlines a cascade reads before placing them.
const GATHER: usize = 32;

/// The next slot to process: its level, slot and the tick it comes up.
#[derive(Debug, Clone, Copy)]
pub(super) struct Event {
    pub(super) at: u64,
    pub(super) level: usize,
    pub(super) slot: usize,
}

impl<T> Wheel<T> {
    /// Advances the clock to `now` (a smaller value acts as `now()`) and
    /// returns the first due timer, or `None` when nothing is due. Call it
    /// until `None` to take everything due; timers not yet returned stay
    /// pending.
    ///
    /// A call that returns `None` also moves up to 64 timers of the next
    /// level-1 slot to the lowest level ahead of time, so that polling once
    /// per tick spreads the cascade of that slot over the turn before it
    /// instead of doing it all in the call that reaches it.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = wheel::Wheel::new();
    /// wheel.insert(5, "b");
    /// wheel.insert(2, "a");
    /// assert!(wheel.poll(1).is_none());
    /// assert_eq!(wheel.poll(9).unwrap().value, "a");
    /// assert_eq!(wheel.poll(9).unwrap().value, "b");
    /// assert!(wheel.poll(9).is_none());
    /// ```
    #[inline]
    pub fn poll(&mut self, now: u64) -> Option<Expired<T>> {
        if now > self.now {
            self.now = now;
        }
        // The common case, returning an entry already due, stays small
        // enough to inline into the caller's loop; advancing time is out of
        // line.
        if let Some(front) = self.ready.front() {
            return Some(self.pop_ready(front));
        }
        self.advance()
    }

    /// Processes slot events up to `now` until an entry is due (and returns
    /// it) or none is left to process (and returns `None`). The ready queue
    /// is empty on entry.
    #[inline(never)]
    fn advance(&mut self) -> Option<Expired<T>> {
        if !self.kills.is_empty() {
            self.flush_kills();
        }
        loop {
            if self.event_hint > self.now {
                self.elapsed = self.now;
                self.stage_step(STAGE_BUDGET);
                return None;
            }
            match self.next_event() {
                Some(event) if event.at <= self.now => {
                    self.process(event);
                    if let Some(front) = self.ready.front() {
                        return Some(self.pop_ready(front));
                    }
                }
                other => {
                    self.event_hint = other.map_or(u64::MAX, |e| e.at);
                    self.elapsed = self.now;
                    self.stage_step(STAGE_BUDGET);
                    return None;
                }
            }
        }
    }

    /// Removes and returns the entry whose cell is the ready queue's front,
    /// at address `front` (the front cell is always live, see
    /// `settle_ready`).
    #[inline(always)]
    fn pop_ready(&mut self, front: CellAddr) -> Expired<T> {
        let index = self.blocks.get(front);
        self.ready.advance(&mut self.blocks, true);
        let node = self.slab.remove(index);
        self.settle_ready();
        Expired {
            key: TimerKey {
                index,
                generation: node.generation.get(),
            },
            deadline: node.when,
            value: node.value,
        }
    }

    /// A tick to sleep until: `None` iff the wheel is empty; otherwise a tick
    /// `<=` the earliest pending effective deadline, such that polling at any
    /// tick below it returns `None`. Exact when the earliest timer sits on
    /// the lowest level, i.e. in the same turn of `2^slot_bits[0]` ticks as
    /// `now()`, for any layout of two or more levels. (A single-level layout
    /// is all top level, whose per-slot bounds may run early after a cancel
    /// or reset: still safe, sometimes early.)
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = wheel::Wheel::new();
    /// assert_eq!(wheel.next_expiration(), None);
    /// wheel.insert(40, ());
    /// assert_eq!(wheel.next_expiration(), Some(40));
    /// ```
    pub fn next_expiration(&self) -> Option<u64> {
        if self.is_empty() {
            // Buckets may still hold logged cells of cancelled entries.
            return None;
        }
        if let Some(front) = self.ready.front() {
            return Some(self.slab.node(self.blocks.get(front)).when);
        }
        self.next_event().map(|e| e.at)
    }

    /// The next slot event, computed exactly from the bitmaps: the first
    /// occupied slot of the lowest non-empty level below the top, or else the
    /// next top-level visit.
    pub(super) fn next_event(&self) -> Option<Event> {
        let top = self.layout.top();
        for (index, level) in self.levels[..top].iter().enumerate() {
            if index == 1 && !self.stage.is_empty() {
                // Level 0 is empty: the staged slot comes up next (its
                // start lies before every other level-1 slot's).
                if let Some((at, slot)) = self.staging {
                    return Some(Event { at, level: 1, slot });
                }
            }
            if let Some(slot) = level.first_occupied() {
                return Some(Event {
                    at: level.geom.slot_start_in_turn(self.elapsed, slot),
                    level: index,
                    slot,
                });
            }
        }
        if self.levels[top].is_empty() {
            return None;
        }
        let at = self.top_next?;
        Some(Event {
            at,
            level: top,
            slot: self.levels[top].geom.slot_of(at),
        })
    }

    /// Processes a slot event: time moves to `event.at`; the slot's entries
    /// that are due go to the ready queue, the others move down (cascade)
    /// or, on the top level, stay for a later turn. FIFO order is kept: the
    /// cells are read in order and every move appends.
    fn process(&mut self, event: Event) {
        debug_assert!(event.at >= self.elapsed && event.at <= self.now);
        self.elapsed = event.at;
        #[cfg(test)]
        {
            self.events_processed += 1;
        }
        let (level, slot) = (event.level, event.slot);
        let top = self.layout.top();
        self.levels[level].clear(slot);
        // Unknown until recomputed: forces an exact look next time.
        self.event_hint = 0;
        if level == 0 && top > 0 {
            // Below the top, a lowest-level slot holds exactly the entries
            // due at `event.at`: its cells join the ready queue as they are,
            // in O(1), and `when <= elapsed` now marks them ready.
            self.level0_slot_to_ready(slot);
            return;
        }
        if level == top {
            self.levels[level].min_when[slot] = u64::MAX;
            self.top_next = None;
        }
        if level == 1 && self.staging.is_some_and(|(at, _)| at == event.at) {
            self.unstage();
        }
        // A level-1 slot holding at least one cell per level-0 slot marks
        // the level-0 slots it fills once, after the cascade, instead of
        // once per cell: level 0 holds nothing but the stage it may just
        // have become, so after the cascade a level-0 slot is occupied iff
        // its bucket has cells.
        let bulk = level == 1
            && level != top
            && self.levels[1].slots[slot].live as usize >= self.levels[0].slots.len();
        self.cascade_slot(level, slot, bulk);
        if level == top {
            self.recompute_top_next();
        }
        if bulk {
            let level0 = &mut self.levels[0];
            for slot in 0..level0.slots.len() {
                if !level0.slots[slot].is_empty() {
                    level0.set(slot);
                }
            }
        }
    }

    /// Empties `slot` of `level` (above level 0, or the only level), whose
    /// event is being processed: every live cell's entry is placed again
    /// (see [`cascade_one`](Wheel::cascade_one); on the top level, a full
    /// [`place`](Wheel::place)), and the dead cells are dropped, the
    /// bucket's share of them taken off `lazy_dead`. With `bulk`, the
    /// level-0 occupancy bits are left to the caller.
    ///
    /// The deadlines are read a batch at a time, then the batch is placed:
    /// the reading loop is short, so many of its cache misses are in flight
    /// at once (placing each entry right after reading it would leave room
    /// for few).
    ///
    /// Not forced inline into `process`: the expire path ran more
    /// instructions that way.
    fn cascade_slot(&mut self, level: usize, slot: usize, bulk: bool) {
        let top = self.layout.top();
        // Cells marked dead beyond those the bucket counted dead are its
        // share of `lazy_dead` (none for an exact bucket).
        let counted_dead = self.levels[level].slots[slot].dead;
        let mut marked = 0;
        let mut taken = self.levels[level].slots[slot].take();
        let mut batch = [(0u32, 0u64); GATHER];
        loop {
            let mut n = 0;
            while n < GATHER {
                let Some((addr, index)) = taken.next_cell(&mut self.blocks, true) else {
                    break;
                };
                // The dead bit is read before the next call frees the block.
                if self.blocks.is_dead(addr) {
                    marked += 1 + taken.skip_dead(&self.blocks);
                } else {
                    batch[n] = (index, self.slab.node(index).when);
                    debug_assert_eq!(self.slab.node(index).pos, addr);
                    n += 1;
                }
            }
            if level == top {
                for &(index, when) in &batch[..n] {
                    self.place(index, when);
                }
            } else {
                for &(index, when) in &batch[..n] {
                    self.cascade_one(level, index, when, !bulk);
                }
            }
            #[cfg(test)]
            {
                self.cells_cascaded += n as u64;
            }
            if n < GATHER {
                break;
            }
        }
        debug_assert!(marked >= counted_dead);
        self.lazy_dead -= (marked - counted_dead) as usize;
    }

    /// Places an entry read from a slot of level `from`, below the top, that
    /// is being processed: it is due at once or goes to a lower level (its
    /// deadline lies in the slot's span). A lean [`place`](Wheel::place):
    /// no top-level bookkeeping, and no `event_hint` update (`process` set
    /// it to 0, the lowest bound there is). Without `mark` the slot's
    /// occupancy bit is left to the caller (see `process`).
    #[inline(always)]
    fn cascade_one(&mut self, from: usize, index: u32, when: u64, mark: bool) {
        let pos = if when <= self.elapsed {
            self.ready.push(&mut self.blocks, index)
        } else {
            // From level 1 everything goes to level 0.
            let to = if from == 1 {
                0
            } else {
                self.layout.level_for(self.elapsed, when)
            };
            debug_assert!(to < from && to == self.layout.level_for(self.elapsed, when));
            let level = &mut self.levels[to];
            let slot = level.geom.slot_of(when);
            // Not `Level::push`, whose test of the bucket for emptiness
            // this path does not need: the bit is set here, or by the
            // caller in bulk.
            if mark {
                level.set(slot);
            }
            level.slots[slot].push(&mut self.blocks, index)
        };
        self.slab.node_mut(index).pos = pos;
    }

    /// Moves a lowest-level slot's cells, as they are, to the ready queue.
    /// Their entries are loaded first, in one tight loop whose cache misses
    /// overlap, rather than one miss per `poll` later.
    #[inline(always)]
    pub(super) fn level0_slot_to_ready(&mut self, slot: usize) {
        let bucket = &mut self.levels[0].slots[slot];
        warm(&self.slab, &self.blocks, bucket);
        self.ready.append(&mut self.blocks, bucket);
        self.settle_ready();
    }

    /// Recomputes `top_next` exactly from the per-slot lower bounds.
    fn recompute_top_next(&mut self) {
        self.top_next = self.exact_top_next();
    }

    /// The start of the top level's next visit, from the per-slot lower
    /// bounds; `None` when the top level is empty.
    pub(super) fn exact_top_next(&self) -> Option<u64> {
        let top = &self.levels[self.layout.top()];
        top.occupied_slots()
            .map(|slot| top.geom.slot_start(top.min_when[slot]))
            .min()
    }
}

/// Loads the entry of every cell of `bucket`, in a loop short enough that
/// many of the cache misses are in flight at once, so that the walk that
/// follows (popping, compacting) finds them in cache.
#[inline]
fn warm<T>(slab: &Slab<T>, blocks: &Blocks, bucket: &Bucket) {
    let mut acc = 0u64;
    bucket.for_each(blocks, |index| {
        if let Some(node) = slab.get(index) {
            acc ^= node.when;
        }
    });
    std::hint::black_box(acc);
}
