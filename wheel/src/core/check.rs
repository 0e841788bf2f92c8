//! The invariant checker, [`Wheel::check_invariants`]: every invariant of
//! the module docs of [`super`] and [`super::lazy`], one function per
//! family. For tests and fuzzing only; O(capacity + occupied slots +
//! cells).
//!
//! The checker walks every bucket once (the ready queue, each occupied slot
//! of each level, each occupied stage slot), judges every cell against the
//! slab, its dead bit and the kill log, and adds what it found to a
//! [`Census`]; the totals are then checked against the wheel's counters.

use std::collections::HashSet;

use super::Wheel;
use super::cells::{Bucket, CellAddr};
use super::kill_log::DEFER_KILLS;
use super::slab::Slab;

/// What the walk of the buckets found, summed over all of them.
#[derive(Debug, Default)]
struct Census {
    /// Live cells.
    live: usize,
    /// Cells found in the kill log.
    logged: usize,
    /// The lazy buckets' marked cells beyond those they count dead.
    share: usize,
    /// Blocks walked.
    blocks: usize,
}

/// What [`Wheel::judge`] found a cell to be.
enum Judged {
    /// Live, for an entry due at this tick.
    Live(u64),
    /// Dead and in the kill log, not yet marked.
    Logged,
    /// Dead and marked.
    Marked,
}

/// The live cells of one bucket, front to back: (address, deadline).
type LiveCells = Vec<(CellAddr, u64)>;

impl<T> Wheel<T> {
    /// Checks every structural invariant listed in the module docs.
    ///
    /// For tests and fuzzing only (the fuzz targets reach it through the
    /// harness of `core/testing/`); O(capacity + slots + cells).
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        self.slab.check()?;
        if self.elapsed > self.now {
            return Err(format!("elapsed {} > now {}", self.elapsed, self.now));
        }
        let log = self.check_kill_log()?;
        let mut census = Census::default();
        self.check_ready(&log, &mut census)?;
        self.check_levels(&log, &mut census)?;
        self.check_stage(&log, &mut census)?;
        self.check_totals(&census)?;
        self.check_bounds()
    }

    /// The kill log: fewer than [`DEFER_KILLS`] cells, each once. Returns
    /// them as a set.
    fn check_kill_log(&self) -> Result<HashSet<CellAddr>, String> {
        if self.kills.len() >= DEFER_KILLS {
            return Err(format!("kill log holds {} cells", self.kills.len()));
        }
        let log: HashSet<CellAddr> = self.kills.as_slice().iter().copied().collect();
        if log.len() != self.kills.len() {
            return Err("kill log holds a cell twice".into());
        }
        Ok(log)
    }

    /// For the cell at `addr` (holding `index`): `Live(when)` if it is live
    /// for an entry due at `when`, `Logged` if its entry is gone but the
    /// cell is in the kill log (unmarked yet), `Marked` if its dead bit is
    /// set. An error if its dead bit or the log says otherwise.
    fn judge(&self, index: u32, addr: CellAddr, log: &HashSet<CellAddr>) -> Result<Judged, String> {
        let when = live_when(&self.slab, index, addr);
        match (when, self.blocks.is_dead(addr), log.contains(&addr)) {
            (Some(when), false, false) => Ok(Judged::Live(when)),
            (None, true, false) => Ok(Judged::Marked),
            (None, false, true) => Ok(Judged::Logged),
            (Some(_), _, true) => Err(format!("cell {addr} (entry {index}) is live but logged")),
            (None, true, true) => Err(format!("cell {addr} is marked and logged")),
            (None, false, false) => {
                Err(format!("cell {addr} (entry {index}) is dead but unmarked"))
            }
            (Some(_), true, _) => Err(format!(
                "cell {addr} (entry {index}) is live but marked dead"
            )),
        }
    }

    /// Walks one bucket, judges its cells, checks them against its counts,
    /// adds them to `census`, and returns its live cells. An exact bucket
    /// counts exactly its marked cells dead and holds no logged cell; a
    /// lazy one counts at least `dead` of its marked cells dead and the
    /// rest (its share) live. No bucket is overdue for compaction.
    fn walk_bucket(
        &self,
        bucket: &Bucket,
        exact: bool,
        log: &HashSet<CellAddr>,
        census: &mut Census,
    ) -> Result<LiveCells, String> {
        let (cells, used) = bucket.walk(&self.blocks)?;
        census.blocks += used;
        let mut live = Vec::new();
        let (mut marked, mut in_log) = (0u32, 0u32);
        for (addr, index) in cells {
            match self.judge(index, addr, log)? {
                Judged::Live(when) => live.push((addr, when)),
                Judged::Marked => marked += 1,
                Judged::Logged => in_log += 1,
            }
        }
        if exact && (in_log > 0 || marked != bucket.dead) {
            return Err(format!(
                "exact bucket {bucket:?}: {marked} marked, {in_log} logged"
            ));
        }
        if marked < bucket.dead {
            return Err(format!("bucket {bucket:?}: only {marked} marked"));
        }
        if bucket.wants_compaction() {
            return Err(format!("bucket {bucket:?}: compaction overdue"));
        }
        census.logged += in_log as usize;
        census.share += (marked - bucket.dead) as usize;
        census.live += live.len();
        Ok(live)
    }

    /// The ready queue: exact, every live cell due by `elapsed`, in
    /// deadline order, its front live.
    fn check_ready(&self, log: &HashSet<CellAddr>, census: &mut Census) -> Result<(), String> {
        let live = self
            .walk_bucket(&self.ready, true, log, census)
            .map_err(|e| format!("ready queue: {e}"))?;
        if let Some(&(addr, _)) = live.first() {
            if self.ready.front() != Some(addr) {
                return Err("ready front is dead".into());
            }
        }
        if live.iter().any(|&(_, when)| when > self.elapsed) {
            return Err(format!("ready queue holds a cell not due: {live:?}"));
        }
        if live.windows(2).any(|w| w[0].1 > w[1].1) {
            return Err(format!("ready queue out of order: {live:?}"));
        }
        Ok(())
    }

    /// The levels: bitmaps; every live cell in the level and slot its
    /// deadline names (level 0 exact); the top level's per-slot bounds.
    fn check_levels(&self, log: &HashSet<CellAddr>, census: &mut Census) -> Result<(), String> {
        let top = self.layout.top();
        for (index, level) in self.levels.iter().enumerate() {
            level.check_bitmaps()?;
            for slot in level.occupied_slots() {
                let live = self
                    .walk_bucket(&level.slots[slot], index == 0, log, census)
                    .map_err(|e| format!("level {index} slot {slot}: {e}"))?;
                for &(addr, when) in &live {
                    if when <= self.elapsed
                        || self.layout.level_for(self.elapsed, when) != index
                        || level.geom.slot_of(when) != slot
                    {
                        return Err(format!(
                            "level {index} slot {slot} cell {addr}: when {when} elapsed {}",
                            self.elapsed
                        ));
                    }
                    if index == top && level.min_when[slot] > when {
                        return Err(format!("min_when[{slot}] above entry {when}"));
                    }
                }
            }
        }
        Ok(())
    }

    /// The stage: bitmaps; cells only while a slot is staged, and only the
    /// one `stage_target` names; every block tagged `stage_epoch` (and no
    /// level-1 block); exact buckets; every live cell an entry of the
    /// staged level-1 slot, in the level-0 slot its deadline names.
    fn check_stage(&self, log: &HashSet<CellAddr>, census: &mut Census) -> Result<(), String> {
        self.check_stage_tags()?;
        self.stage.check_bitmaps()?;
        if !self.stage.is_empty() {
            match self.staging {
                None => return Err("stage holds cells, none staged".into()),
                Some(t) if Some(t) != self.layout.stage_target(self.elapsed) => {
                    return Err(format!(
                        "stage of {t:?} holds cells at elapsed {}",
                        self.elapsed
                    ));
                }
                Some(_) => {}
            }
        }
        for slot in self.stage.occupied_slots() {
            let live = self
                .walk_bucket(&self.stage.slots[slot], true, log, census)
                .map_err(|e| format!("stage slot {slot}: {e}"))?;
            let (_, staged) = self.staging.ok_or("stage without staging")?;
            for &(addr, when) in &live {
                if when <= self.elapsed
                    || self.layout.level_for(self.elapsed, when) != 1
                    || self.levels[1].geom.slot_of(when) != staged
                    || self.stage.geom.slot_of(when) != slot
                {
                    return Err(format!(
                        "stage slot {slot} cell {addr}: when {when} elapsed {}",
                        self.elapsed
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every block of a stage bucket carries `stage_epoch`, and no block
    /// of a level-1 bucket does (that tag is how a cancel tells them
    /// apart).
    fn check_stage_tags(&self) -> Result<(), String> {
        for slot in self.stage.occupied_slots() {
            let (cells, _) = self.stage.slots[slot].walk(&self.blocks)?;
            if let Some(&(addr, _)) = cells
                .iter()
                .find(|&&(addr, _)| self.blocks.tag(addr) != self.stage_epoch)
            {
                return Err(format!("stage slot {slot} cell {addr}: block not tagged"));
            }
        }
        let Some(level1) = self.levels.get(1) else {
            return Ok(());
        };
        for slot in level1.occupied_slots() {
            let (cells, _) = level1.slots[slot].walk(&self.blocks)?;
            if cells
                .iter()
                .any(|&(addr, _)| self.blocks.tag(addr) == self.stage_epoch)
            {
                return Err(format!(
                    "level 1 slot {slot}: a block carries the stage tag"
                ));
            }
        }
        Ok(())
    }

    /// The census against the wheel's counters: blocks in buckets against
    /// the arena, logged cells against the log, shares against
    /// `lazy_dead`, live cells against the slab (a cell's entry has its
    /// `pos` and lives in the bucket its deadline names, so no entry has
    /// two live cells: each is counted once); and the sweep cursor.
    fn check_totals(&self, census: &Census) -> Result<(), String> {
        self.blocks.check(census.blocks)?;
        // A cell's address is unique while its block is in a bucket.
        if census.logged != self.kills.len() {
            return Err(format!(
                "{} logged cells in buckets, {} in the log",
                census.logged,
                self.kills.len()
            ));
        }
        if census.share != self.lazy_dead {
            return Err(format!(
                "lazy buckets hold {} uncounted dead cells, lazy_dead is {}",
                census.share, self.lazy_dead
            ));
        }
        if census.live != self.slab.len() {
            return Err(format!(
                "{} live cells but len {}",
                census.live,
                self.slab.len()
            ));
        }
        if let Some((level, slot)) = self.sweep {
            if level == 0 || level > self.layout.top() || slot > self.levels[level].slots.len() {
                return Err(format!("sweep cursor {level}, {slot} out of range"));
            }
        }
        Ok(())
    }

    /// The lower bounds: `top_next` between `elapsed` and the top level's
    /// real next visit, `event_hint` at most the next slot event.
    fn check_bounds(&self) -> Result<(), String> {
        let top = &self.levels[self.layout.top()];
        if !top.is_empty() {
            let next = self.top_next.ok_or("top non-empty without top_next")?;
            let real = self.exact_top_next().unwrap_or(u64::MAX);
            if next < self.elapsed || next > real {
                return Err(format!(
                    "top_next {next} outside [{}, {real}]",
                    self.elapsed
                ));
            }
        }
        if let Some(event) = self.next_event() {
            if self.event_hint > event.at {
                return Err(format!(
                    "event hint {} above next event {}",
                    self.event_hint, event.at
                ));
            }
        }
        Ok(())
    }
}

/// The deadline of the entry that the cell at `addr` (holding `index`) is
/// live for, or `None` if the cell is dead: its entry is gone or keeps
/// another address. (Padding cells hold `NIL`, never an index.) For the
/// checks: the wheel itself judges cells by their dead bits.
fn live_when<T>(slab: &Slab<T>, index: u32, addr: CellAddr) -> Option<u64> {
    slab.get(index)
        .filter(|node| node.pos == addr)
        .map(|node| node.when)
}
