//! Staging: moving the entries of the next level-1 slot down to level 0
//! ahead of time, a few at a time, during the idle polls of the level-0
//! turn before that slot comes up (see [`Wheel::stage_step`]).
//!
//! Staged entries wait in `stage`, a level-0-shaped set of buckets kept
//! beside level 0, whose blocks carry the tag `stage_epoch`; their
//! deadlines still name the level-1 slot, so the tag is how a cancel finds
//! them (`Wheel::is_staged`). When the slot comes up, the stage becomes
//! level 0 ([`Wheel::unstage`]).

use super::{Loc, Wheel};

impl<T> Wheel<T> {
    /// Moves up to `budget` cells of the level-1 slot that comes up at the
    /// start of the next level-0 turn into `stage` (level-0 buckets kept
    /// aside), so that when that slot comes up most of its cascade is done
    /// already: [`poll`](Wheel::poll) calls this whenever it has caught up,
    /// which spreads a cascade that would move thousands of entries in one
    /// `poll` over the idle polls of the turn before it.
    ///
    /// Order is kept: the slot's cells are moved from the front, so the
    /// staged cells precede, in each level-0 slot, every cell the slot
    /// still holds (including those inserted later). A staged entry is
    /// found again by its block's tag (`stage_epoch`), since its deadline
    /// still names the level-1 slot.
    pub(super) fn stage_step(&mut self, budget: usize) {
        let Some(target) = self.layout.stage_target(self.elapsed) else {
            return;
        };
        if self.staging.is_some_and(|t| t != target) {
            // The staged slot's start passed with nothing staged left in it
            // (its event comes up while the stage holds cells).
            debug_assert!(self.stage.is_empty());
            self.end_staging();
        }
        let (_, slot) = target;
        if self.levels[1].slots[slot].is_empty() {
            return;
        }
        self.staging = Some(target);
        for _ in 0..budget {
            let bucket = &mut self.levels[1].slots[slot];
            let Some(front) = bucket.front() else { break };
            let index = self.blocks.get(front);
            if self.blocks.is_dead(front) {
                // Marked cells are alike: one counted dead if any is left,
                // else one of the bucket's share of `lazy_dead`.
                if bucket.dead > 0 {
                    bucket.advance(&mut self.blocks, false);
                } else {
                    bucket.advance(&mut self.blocks, true);
                    self.lazy_dead -= 1;
                }
                continue;
            }
            bucket.advance(&mut self.blocks, true);
            let when = self.slab.node(index).when;
            let to_slot = self.stage.geom.slot_of(when);
            let to = self.stage.push(&mut self.blocks, to_slot, index);
            self.blocks.set_tag(to, self.stage_epoch);
            self.slab.node_mut(index).pos = to;
        }
        // Moving live cells out may leave only dead ones, or too many.
        self.settle(Loc::Level(1, slot));
    }

    /// The staged slot comes up (level 0 is empty: its events all came
    /// first): the stage becomes level 0, and the staged entries due at
    /// once join the ready queue ahead of any the slot still holds.
    pub(super) fn unstage(&mut self) {
        debug_assert!(self.levels[0].is_empty());
        std::mem::swap(&mut self.levels[0], &mut self.stage);
        self.end_staging();
        let level = &mut self.levels[0];
        let slot = level.geom.slot_of(self.elapsed);
        if !level.slots[slot].is_empty() {
            level.clear(slot);
            self.level0_slot_to_ready(slot);
        }
    }

    /// Forgets the staged slot; its blocks' tag is never used again.
    fn end_staging(&mut self) {
        self.staging = None;
        self.stage_epoch = self.stage_epoch.checked_add(1).unwrap_or(1);
    }
}
