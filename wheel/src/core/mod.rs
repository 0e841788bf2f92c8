//! The single-threaded hierarchical timing wheel, [`Wheel<T>`].
//!
//! The wheel counts integer ticks and knows nothing of threads or clocks.
//! Layout and arithmetic live in [`config`], entry storage in [`slab`], slot
//! contents in [`cells`], bitmaps in [`level`]; `docs/design.md` explains
//! the whole.
//!
//! # State and invariants
//!
//! - `now` is the largest tick ever passed to `poll` (or 0). It never goes
//!   back. An entry's *effective deadline* `when` is `max(deadline, now)` at
//!   the time of its insert or reset; that is what it is ordered and fired by.
//! - `elapsed <= now` is the wheel's processing cursor: every slot event up
//!   to `elapsed` has been processed. It lags `now` only while `poll` has
//!   returned an entry before finishing its advance.
//! - Every pending entry has exactly one *live cell*: a cell of a bucket (a
//!   slot's contents) or of the ready queue that holds its index at the
//!   address the entry keeps in `pos`. Every other cell is dead (its entry
//!   was cancelled or moved on, or it is padding) and has its dead bit set,
//!   except the cells in the *kill log*: up to [`DEFER_KILLS`] cells of
//!   cancelled or reset entries in lazy buckets, not yet marked (see
//!   [`Wheel::kill`]). Every step that reads a lazy bucket flushes the log
//!   first.
//! - The ready queue, level 0 and the stage are *exact* buckets: each counts
//!   its dead cells. Levels 1 and up are *lazy*: a cancel marks the cell and
//!   leaves its bucket alone, which counts the cell as live until it reads
//!   it; `lazy_dead` counts all such cells, and sweeps (see
//!   [`Wheel::sweep`]) keep it below about [`COMPACT_RATIO`] per pending
//!   timer plus [`SWEEP_MIN`]. Which bucket holds an entry's live cell
//!   follows from `when` and `elapsed` alone:
//! - Entries with `when <= elapsed` are in the ready queue, in the order
//!   they must be returned (non-decreasing `when`, FIFO among equals). Its
//!   front cell is live whenever the queue is non-empty.
//! - Every other entry has `when > elapsed` and sits on level
//!   `level_for(elapsed, when)`, in the slot `slot_of(when)` of that level,
//!   except *staged* entries: those of the level-1 slot `staging` names,
//!   moved ahead of time into the level-0 slot `slot_of(when)` of `stage`
//!   (see [`Wheel::stage_step`]); their cells' blocks carry the tag
//!   `stage_epoch`, which no other bucket's block carries. Each bucket's
//!   live cells are in FIFO order of insert/reset for equal deadlines, and
//!   a stage bucket's cells precede, in that order, those still in the
//!   staged level-1 slot.
//! - Below the top level, every occupied slot lies ahead of `elapsed` in the
//!   level's current turn, so a level's first occupied slot is its next
//!   event, and the lowest non-empty level holds the earliest event of all.
//! - Top-level slots may hold entries several turns ahead ("cycles"). Each
//!   keeps a lower bound of its deadlines (`min_when`); `top_next` is a lower
//!   bound of the next top-level visit, `>= elapsed` while the top is
//!   non-empty.
//! - `event_hint` is a lower bound of the next slot event (`u64::MAX` if
//!   there is none before `u64::MAX`), so an idle `poll` is O(1).

pub(crate) mod cells;
pub(crate) mod config;
pub(crate) mod kill_log;
pub(crate) mod level;
#[cfg(any(test, fuzzing))]
pub mod model;
pub(crate) mod slab;

#[cfg(test)]
mod tests;

use std::fmt;

use self::cells::{Blocks, Bucket, CellOwner, BLOCK_CELLS, COMPACT_RATIO};
use self::config::Layout;
pub use self::config::{ConfigError, WheelConfig};
use self::kill_log::KillLog;
#[cfg(doc)]
use self::kill_log::DEFER_KILLS;
use self::level::Level;
use self::slab::{Slab, NIL};

/// Names one timer in a [`Wheel`]: an index and a generation, 8 bytes.
///
/// A key stays valid until its timer fires, is cancelled, or is drained;
/// after that every method answers `None`/`false` for it, even once the
/// index holds another timer.
///
/// # Examples
///
/// ```
/// use wheel::Wheel;
///
/// let mut wheel = Wheel::new();
/// let key = wheel.insert(5, "a");
/// assert_eq!(wheel.cancel(key), Some("a"));
/// let other = wheel.insert(5, "b"); // may reuse the same index
/// assert_eq!(wheel.cancel(key), None); // the old key never touches "b"
/// assert_eq!(wheel.get(other), Some(&"b"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerKey {
    index: u32,
    gen: u32,
}

/// A timer returned by [`Wheel::poll`] or [`Wheel::drain`].
///
/// # Examples
///
/// ```
/// use wheel::Wheel;
///
/// let mut wheel = Wheel::new();
/// let key = wheel.insert(3, 'x');
/// let fired = wheel.poll(10).unwrap();
/// assert_eq!((fired.key, fired.deadline, fired.value), (key, 3, 'x'));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired<T> {
    /// The key the timer had (now stale).
    pub key: TimerKey,
    /// The effective deadline: `max(requested deadline, now())` at the time
    /// of the last insert or reset.
    pub deadline: u64,
    /// The value stored with the timer.
    pub value: T,
}

/// A hierarchical hashed timing wheel over integer ticks.
///
/// Single-threaded (it is `Send` when `T` is); the [`Scheduler`] and
/// [`DelayQueue`] build concurrent engines on top of it. Every operation is
/// O(1) (advancing over empty time costs O(levels), not O(ticks)), and no
/// heap allocation happens per insert once the capacity is reached.
///
/// Semantics:
/// - [`insert`](Wheel::insert) accepts any `u64` deadline; one `<= now()` is
///   due at once. Deadlines beyond the layout's span wait extra turns of the
///   top level and are never fired early.
/// - [`poll(t)`](Wheel::poll) advances `now()` to `t` (never backwards) and
///   returns the first due timer: by effective deadline, ties in insert/reset
///   order. Every timer is returned exactly once and never before its
///   deadline; one not yet returned stays pending.
/// - [`next_expiration`](Wheel::next_expiration) tells a safe tick to sleep
///   until.
///
/// [`Scheduler`]: crate::Scheduler
/// [`DelayQueue`]: crate::DelayQueue
///
/// # Examples
///
/// ```
/// use wheel::Wheel;
///
/// let mut wheel = Wheel::new();
/// let a = wheel.insert(30, "close order 17");
/// wheel.insert(10, "retry job 4");
/// wheel.insert(10, "retry job 5");
/// wheel.cancel(a);
///
/// assert_eq!(wheel.next_expiration(), Some(10));
/// let due: Vec<_> = std::iter::from_fn(|| wheel.poll(100)).map(|e| e.value).collect();
/// assert_eq!(due, ["retry job 4", "retry job 5"]);
/// assert!(wheel.is_empty());
/// ```
pub struct Wheel<T> {
    layout: Layout,
    levels: Box<[Level]>,
    slab: Slab<T>,
    /// The blocks that every bucket's cells live in.
    blocks: Blocks,
    /// Cells of due entries, in the order they are returned.
    ready: Bucket,
    now: u64,
    elapsed: u64,
    top_next: Option<u64>,
    event_hint: u64,
    /// Level-0 buckets for the level-1 slot being staged (see
    /// [`Wheel::stage_step`]); empty unless `staging` is set.
    stage: Level,
    /// The level-1 slot being staged: `(start, slot)`.
    staging: Option<(u64, usize)>,
    /// The tag of the blocks of `stage`'s buckets (never 0, the tag of
    /// every other block); a new one for each staged slot.
    stage_epoch: u32,
    /// Cells of cancelled or reset entries in lazy buckets (levels 1 and
    /// up, not staged) not yet marked dead: at most [`DEFER_KILLS`], marked
    /// together by [`Wheel::flush_kills`] (see [`Wheel::kill`]).
    kills: KillLog,
    /// Cells of lazy buckets marked dead by a cancel or reset that their
    /// buckets still count as live (see [`cells`]); kept below about
    /// [`COMPACT_RATIO`] per pending timer plus [`SWEEP_MIN`] by
    /// [`Wheel::sweep`].
    lazy_dead: usize,
    /// The sweep pass under way, if any: the next lazy slot to compact, as
    /// `(level, slot)`.
    sweep: Option<(usize, usize)>,
    /// `when >> lane_shift` picks an insert's lane of fresh slab indices:
    /// the level-0 bits, so one lane per level-1 slot.
    lane_shift: u32,
    /// Slot events processed so far (tests check the O(levels) claims).
    #[cfg(test)]
    events_processed: u64,
    /// Cells moved by cascades (processing a level-1+ slot) so far.
    #[cfg(test)]
    cells_cascaded: u64,
}

/// Cells [`Wheel::stage_step`] moves at most per call: bounds the work an
/// idle `poll` adds.
const STAGE_BUDGET: usize = 64;

/// Entries whose deadlines a cascade reads before placing them.
const GATHER: usize = 32;

/// Lazily dead cells allowed beyond [`COMPACT_RATIO`] per pending timer
/// before a sweep starts (see [`Wheel::sweep`]): 64 KiB of cells, which
/// keeps small wheels that cancel everything they insert (a `DelayQueue`
/// of a few thousand items) from sweeping at all. The model-based tests and
/// the fuzz targets, whose wheels hold a few dozen timers, use 8, so that
/// they sweep all the time.
const SWEEP_MIN: usize = if cfg!(any(test, fuzzing)) { 8 } else { 1 << 14 };

/// Cells a sweep pass reads (at least) per cell that the kill log marks
/// dead: a pass over `C` cells then ends within `C / 8` cancels, so the
/// cells that die during a pass are few beside those it started for.
const SWEEP_PER_KILL: usize = 8;

/// Where a cell lives: the bucket [`Wheel::locate`] finds for it.
#[derive(Debug, Clone, Copy)]
enum Loc {
    Ready,
    Stage(usize),
    Level(usize, usize),
}

/// The next slot to process: its level, slot and the tick it comes up.
#[derive(Debug, Clone, Copy)]
struct Event {
    at: u64,
    level: usize,
    slot: usize,
}

impl<T> Default for Wheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for Wheel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("now", &self.now)
            .field("len", &self.len())
            .field("levels", &self.levels.len())
            .finish_non_exhaustive()
    }
}

impl<T> Wheel<T> {
    /// An empty wheel with the default layout
    /// (eight levels of 256 slots, see [`WheelConfig::default`]), at tick 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let wheel: wheel::Wheel<()> = wheel::Wheel::new();
    /// assert_eq!(wheel.now(), 0);
    /// assert!(wheel.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with_config(WheelConfig::default())
    }

    /// An empty wheel with the given layout.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel::{Wheel, WheelConfig};
    /// let mut wheel = Wheel::with_config(WheelConfig::new(&[4, 4]).unwrap());
    /// wheel.insert(1_000, ()); // beyond the 8-bit span: waits extra turns
    /// assert!(wheel.poll(999).is_none());
    /// assert!(wheel.poll(1_000).is_some());
    /// ```
    pub fn with_config(config: WheelConfig) -> Self {
        Self::build(config, 0)
    }

    /// An empty wheel with the default layout and room for `capacity`
    /// timers before it allocates again.
    ///
    /// # Examples
    ///
    /// ```
    /// let wheel: wheel::Wheel<u64> = wheel::Wheel::with_capacity(1_000);
    /// assert!(wheel.capacity() >= 1_000);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self::build(WheelConfig::default(), capacity)
    }

    fn build(config: WheelConfig, capacity: usize) -> Self {
        let layout = Layout::new(&config);
        let top = layout.top();
        let levels = layout
            .levels
            .iter()
            .enumerate()
            .map(|(i, &g)| Level::new(g, i == top))
            .collect();
        let blocks = Blocks::with_capacity(blocks_for(capacity, &layout));
        let stage = Level::new(layout.levels[0], false);
        let lane_shift = layout.levels[0].bits;
        Wheel {
            layout,
            levels,
            slab: Slab::with_capacity(capacity),
            blocks,
            ready: Bucket::EMPTY,
            now: 0,
            elapsed: 0,
            top_next: None,
            event_hint: u64::MAX,
            stage,
            staging: None,
            stage_epoch: 1,
            kills: KillLog::new(),
            lazy_dead: 0,
            sweep: None,
            lane_shift,
            #[cfg(test)]
            events_processed: 0,
            #[cfg(test)]
            cells_cascaded: 0,
        }
    }

    /// The current tick: the largest tick passed to [`poll`](Wheel::poll).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel: wheel::Wheel<()> = wheel::Wheel::new();
    /// wheel.poll(7);
    /// wheel.poll(3); // time never goes back
    /// assert_eq!(wheel.now(), 7);
    /// ```
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Number of pending timers (not yet returned, cancelled or drained).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = wheel::Wheel::new();
    /// wheel.insert(1, ());
    /// assert_eq!(wheel.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// `true` if no timer is pending.
    ///
    /// # Examples
    ///
    /// ```
    /// let wheel: wheel::Wheel<()> = wheel::Wheel::new();
    /// assert!(wheel.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.slab.len() == 0
    }

    /// How many timers fit before the wheel allocates again.
    ///
    /// # Examples
    ///
    /// ```
    /// let wheel: wheel::Wheel<()> = wheel::Wheel::with_capacity(64);
    /// assert!(wheel.capacity() >= 64);
    /// ```
    pub fn capacity(&self) -> usize {
        // The slot cells come from an arena of blocks sized along with the
        // entries (`with_capacity` reserves both).
        self.slab
            .capacity()
            .min(self.blocks.capacity().saturating_mul(BLOCK_CELLS))
    }

    /// Adds a timer due at tick `deadline` and returns its key. Any `u64` is
    /// accepted; a deadline `<= now()` is due at once (its effective deadline
    /// is `now()`).
    ///
    /// # Panics
    ///
    /// Only if the 32-bit index spaces run out: about `u32::MAX` timers
    /// pending at once (less the at most 16 128 indices a large wheel keeps
    /// in reserve, see `docs/design.md`, "Lanes"), or more than about four
    /// billion slot cells (live ones plus cancelled ones not yet swept or
    /// compacted, which stay below about five per pending timer), so not
    /// below about 700 million pending timers.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = wheel::Wheel::new();
    /// wheel.poll(50);
    /// let late = wheel.insert(10, "late");
    /// assert_eq!(wheel.deadline(late), Some(50));
    /// wheel.insert(u64::MAX, "never, in practice");
    /// assert_eq!(wheel.poll(50).map(|e| e.value), Some("late"));
    /// ```
    #[inline]
    pub fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        let when = deadline.max(self.now);
        // The cell goes in first, so the node is written once, complete.
        // Entries due in the same level-1 slot share a lane of the slab
        // (see `slab`), so a cascade reads them from few cache lines.
        let (index, gen) = self.slab.vacant(when >> self.lane_shift);
        let pos = self.place_cell(index, when);
        self.slab.fill(index, gen, value, when, pos);
        TimerKey { index, gen }
    }

    /// Cancels a pending timer and returns its value; `None` if the key is
    /// stale (fired, cancelled, drained). O(1).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = wheel::Wheel::new();
    /// let key = wheel.insert(10, 42);
    /// assert_eq!(wheel.cancel(key), Some(42));
    /// assert_eq!(wheel.cancel(key), None);
    /// ```
    #[inline]
    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        // Freed first: a vacant entry's cell is dead, as `detach` expects.
        let node = self.slab.remove_key(key.index, key.gen)?;
        self.kill(node.when, node.pos);
        Some(node.value)
    }

    /// Makes the cell at `pos` of an entry due at `when` dead: at once if it
    /// is in an exact bucket (the ready queue, level 0 or the stage), else
    /// later, with up to [`DEFER_KILLS`] others, and without telling its
    /// bucket.
    ///
    /// Why later: the cell's dead bit is a cache miss when timers are many,
    /// and a processor runs ahead across only a few such updates, so random
    /// cancels would each wait for memory. Logged instead, a cancel costs a
    /// store that depends on nothing pending, and the batch is marked from
    /// the log with its misses overlapping. Until then the cells are
    /// unmarked: every step that reads a lazy bucket flushes the log first.
    ///
    /// Why without the bucket: finding a cell's bucket means computing its
    /// level and slot from the deadline and updating the bucket's counts,
    /// about 50 instructions per cancel (`docs/design.md`, "Lazy buckets and
    /// sweeps").
    /// A lazy bucket's cells are only read when its slot comes up, when it
    /// is staged, or by a sweep, and each of these tells the dead cells by
    /// their bits. The bucket counts a lazily dead cell as live until then;
    /// `lazy_dead` counts them all, and [`sweep`](Wheel::sweep) keeps that
    /// count in proportion to the pending timers. Level 0, the stage and
    /// the ready queue stay exact, so `next_expiration` stays exact for
    /// level 0 and the ready queue's front stays live.
    ///
    /// [`locate`](Wheel::locate), spelled out: calling it computed the slot
    /// of a lazy cell too and measured 14 more instructions per `DelayQueue`
    /// push+remove pair (callgrind, 10K items).
    #[inline]
    fn kill(&mut self, when: u64, pos: u32) {
        let loc = if when <= self.elapsed {
            Loc::Ready
        } else {
            let l = self.layout.level_for(self.elapsed, when);
            if l == 0 {
                Loc::Level(0, self.levels[0].geom.slot_of(when))
            } else if self.is_staged(l, when, pos) {
                Loc::Stage(self.stage.geom.slot_of(when))
            } else {
                if self.kills.push(pos) {
                    self.flush_kills();
                }
                return;
            }
        };
        self.detach_at(loc, pos);
    }

    /// Marks every logged cell dead, counts them in `lazy_dead`, and sweeps
    /// if a pass is under way or the count calls for one.
    #[inline(never)]
    fn flush_kills(&mut self) {
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
        COMPACT_RATIO * self.slab.len() + SWEEP_MIN
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
        let (mut l, mut s) = self.sweep.unwrap_or((1, 0));
        let mut read = 0;
        while l <= top {
            let Some(slot) = self.levels[l].next_occupied_from(s) else {
                (l, s) = (l + 1, 0);
                continue;
            };
            read += self.compact_at(Loc::Level(l, slot));
            s = slot + 1;
            if read >= budget {
                self.sweep = Some((l, s));
                return;
            }
        }
        // Cells killed behind the cursor may still exceed the bound: the
        // next flush then starts another pass.
        self.sweep = None;
    }

    /// Compacts the bucket of a slot (of a level or the stage), taking its
    /// share off `lazy_dead` (none if the bucket is exact), and frees the
    /// slot if nothing live was left. Returns the cells read.
    fn compact_at(&mut self, loc: Loc) -> usize {
        let bucket = bucket_at(&mut self.ready, &mut self.stage, &mut self.levels, loc);
        let cells = bucket.live + bucket.dead;
        self.lazy_dead -= bucket.compact(&mut self.blocks, &mut self.slab) as usize;
        if bucket.is_empty() {
            self.slot_emptied(loc);
        }
        cells as usize
    }

    /// Moves a pending timer to a new deadline (`<= now()` means due at
    /// once). It then goes behind every timer already due at the same tick.
    /// Returns `false`, changing nothing, if the key is stale. O(1).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = wheel::Wheel::new();
    /// let key = wheel.insert(10, "idle timeout");
    /// assert!(wheel.reset(key, 20)); // a heartbeat arrived
    /// assert!(wheel.poll(19).is_none());
    /// assert_eq!(wheel.poll(20).map(|e| e.deadline), Some(20));
    /// assert!(!wheel.reset(key, 30)); // already fired
    /// ```
    pub fn reset(&mut self, key: TimerKey, deadline: u64) -> bool {
        let Some(node) = self.slab.get_key(key.index, key.gen) else {
            return false;
        };
        let (old, pos) = (node.when, node.pos);
        self.slab.node_mut(key.index).pos = NIL;
        self.kill(old, pos);
        let when = deadline.max(self.now);
        self.slab.node_mut(key.index).when = when;
        self.place(key.index, when);
        true
    }

    /// The effective deadline of a pending timer.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = wheel::Wheel::new();
    /// let key = wheel.insert(9, ());
    /// assert_eq!(wheel.deadline(key), Some(9));
    /// ```
    pub fn deadline(&self, key: TimerKey) -> Option<u64> {
        self.slab.get_key(key.index, key.gen).map(|n| n.when)
    }

    /// The value of a pending timer.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = wheel::Wheel::new();
    /// let key = wheel.insert(9, "v");
    /// assert_eq!(wheel.get(key), Some(&"v"));
    /// ```
    pub fn get(&self, key: TimerKey) -> Option<&T> {
        self.slab.get_key(key.index, key.gen).map(|n| &n.value)
    }

    /// The value of a pending timer, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = wheel::Wheel::new();
    /// let key = wheel.insert(9, 1);
    /// *wheel.get_mut(key).unwrap() += 1;
    /// assert_eq!(wheel.get(key), Some(&2));
    /// ```
    pub fn get_mut(&mut self, key: TimerKey) -> Option<&mut T> {
        self.slab
            .get_key_mut(key.index, key.gen)
            .map(|n| &mut n.value)
    }

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
        if let Some(at) = self.ready.front() {
            return Some(self.pop_ready(at));
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
                    if let Some(at) = self.ready.front() {
                        return Some(self.pop_ready(at));
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
    /// at address `at` (the front cell is always live, see `settle_ready`).
    #[inline(always)]
    fn pop_ready(&mut self, at: u32) -> Expired<T> {
        let index = self.blocks.get(at);
        self.ready.advance(&mut self.blocks, true);
        let node = self.slab.remove(index);
        self.settle_ready();
        Expired {
            key: TimerKey {
                index,
                gen: node.gen.get(),
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
        if let Some(at) = self.ready.front() {
            return Some(self.slab.node(self.blocks.get(at)).when);
        }
        self.next_event().map(|e| e.at)
    }

    /// Removes every pending timer, due or not, without advancing time (for
    /// shutdown). The order is unspecified. Dropping the iterator early still
    /// removes the rest; leaking it leaves the rest pending.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = wheel::Wheel::new();
    /// wheel.insert(5, 'a');
    /// wheel.insert(u64::MAX, 'b');
    /// let mut all: Vec<char> = wheel.drain().map(|e| e.value).collect();
    /// all.sort();
    /// assert_eq!(all, ['a', 'b']);
    /// assert!(wheel.is_empty());
    /// ```
    pub fn drain(&mut self) -> impl Iterator<Item = Expired<T>> + '_ {
        if !self.kills.is_empty() {
            self.flush_kills();
        }
        Drain {
            wheel: self,
            cursor: 0,
        }
    }

    /// Releases memory held for timers no longer pending, as far as the
    /// live timers' positions allow.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = wheel::Wheel::new();
    /// let keys: Vec<_> = (0..1000).map(|i| wheel.insert(i, ())).collect();
    /// for k in keys { wheel.cancel(k); }
    /// wheel.shrink_to_fit();
    /// assert_eq!(wheel.capacity(), 0);
    /// ```
    pub fn shrink_to_fit(&mut self) {
        if !self.kills.is_empty() {
            self.flush_kills();
        }
        self.slab.shrink_to_fit();
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
            while let Some((at, index)) = taken.next_cell(old, true) {
                // Read before the next call frees the block.
                if !old.is_dead(at) {
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
        for l in 1..self.levels.len() {
            let emptied: Vec<usize> = self.levels[l]
                .occupied_slots()
                .filter(|&s| self.levels[l].slots[s].is_empty())
                .collect();
            for slot in emptied {
                self.slot_emptied(Loc::Level(l, slot));
            }
        }
    }

    /// Places an entry whose effective deadline is `when` (>= `now`): in
    /// the ready queue if it is due by `elapsed`, else in its slot.
    #[inline(always)]
    fn place(&mut self, index: u32, when: u64) {
        let at = self.place_cell(index, when);
        self.slab.node_mut(index).pos = at;
    }

    /// Appends a cell naming entry `index`, due at `when` (>= `now`), to
    /// the ready queue if it is due by `elapsed`, else to its slot, and
    /// returns the cell's address; the caller stores it in the entry's
    /// `pos`.
    #[inline(always)]
    fn place_cell(&mut self, index: u32, when: u64) -> u32 {
        if when <= self.elapsed {
            return self.ready.push(&mut self.blocks, index);
        }
        let l = self.layout.level_for(self.elapsed, when);
        let level = &mut self.levels[l];
        let slot = level.geom.slot_of(when);
        let at = level.push(&mut self.blocks, slot, index);
        let start = level.geom.slot_start(when);
        if l == self.layout.top() {
            level.min_when[slot] = level.min_when[slot].min(when);
            self.top_next = Some(self.top_next.map_or(start, |t| t.min(start)));
        }
        self.event_hint = self.event_hint.min(start);
        at
    }

    /// Makes the cell at `pos` of an entry due at `when` dead now: sets its
    /// dead bit, counts it in its bucket and frees or compacts the bucket as
    /// needed. The caller has already freed the entry, or set its `pos` to
    /// [`NIL`] before re-placing it.
    #[inline]
    fn detach(&mut self, when: u64, pos: u32) {
        let loc = self.locate(when, pos);
        self.detach_at(loc, pos);
    }

    /// [`detach`](Wheel::detach) once the cell's bucket is known.
    #[inline]
    fn detach_at(&mut self, loc: Loc, pos: u32) {
        if self.kill_at(loc, pos) || matches!(loc, Loc::Ready) {
            self.settle(loc);
        }
    }

    /// The bucket that holds the cell at `pos` of an entry due at `when`.
    #[inline]
    fn locate(&self, when: u64, pos: u32) -> Loc {
        if when <= self.elapsed {
            return Loc::Ready;
        }
        let l = self.layout.level_for(self.elapsed, when);
        if self.is_staged(l, when, pos) {
            return Loc::Stage(self.stage.geom.slot_of(when));
        }
        Loc::Level(l, self.levels[l].geom.slot_of(when))
    }

    /// `true` if the live cell at `pos` of an entry due at `when`, on level
    /// `l`, is in a stage bucket rather than in its level-1 slot. Only
    /// entries of the staged level-1 slot can be, so the slot is compared
    /// first and the block's tag (one more memory access, a cache miss when
    /// timers are many) is read for those alone. A staged block carries
    /// `stage_epoch`; a level-1 block carries 0.
    #[inline(always)]
    fn is_staged(&self, l: usize, when: u64, pos: u32) -> bool {
        l == 1
            && self
                .staging
                .is_some_and(|(_, slot)| slot == self.levels[1].geom.slot_of(when))
            && self.blocks.tag(pos) == self.stage_epoch
    }

    /// Makes the cell at `pos`, in the bucket at `loc`, dead (see
    /// [`Bucket::kill`]); returns `true` if the bucket then needs
    /// [`settle`](Wheel::settle) (it has no live cell left, or too many
    /// dead ones).
    #[inline]
    fn kill_at(&mut self, loc: Loc, pos: u32) -> bool {
        let bucket = bucket_at(&mut self.ready, &mut self.stage, &mut self.levels, loc);
        bucket.kill(&mut self.blocks, pos) || bucket.wants_compaction()
    }

    /// Restores the shape of the bucket at `loc` after cells died: frees it
    /// if no live cell is left, else compacts it if dead cells are too many
    /// (for the ready queue, see [`settle_ready`](Wheel::settle_ready)).
    #[inline]
    fn settle(&mut self, loc: Loc) {
        let (level, slot) = match loc {
            Loc::Ready => return self.settle_ready(),
            Loc::Stage(slot) => (&mut self.stage, slot),
            Loc::Level(l, slot) => (&mut self.levels[l], slot),
        };
        let bucket = &mut level.slots[slot];
        if bucket.live == 0 {
            bucket.clear(&mut self.blocks);
            self.slot_emptied(loc);
        } else if bucket.wants_compaction() {
            self.compact_at(loc);
        }
    }

    /// Marks the slot at `loc`, whose bucket was just emptied, unoccupied
    /// (and, on the top level, forgets its deadline bound).
    fn slot_emptied(&mut self, loc: Loc) {
        match loc {
            Loc::Ready => {}
            Loc::Stage(slot) => self.stage.clear(slot),
            Loc::Level(l, slot) => {
                let level = &mut self.levels[l];
                level.clear(slot);
                if l == self.layout.top() {
                    level.min_when[slot] = u64::MAX;
                    if level.is_empty() {
                        self.top_next = None;
                    }
                }
            }
        }
    }

    /// Restores the ready queue's shape after a pop or a dead cell: drops
    /// dead cells at the front (so the front is live, or the queue empty)
    /// and compacts the queue when dead cells outnumber the live ones.
    #[inline(always)]
    fn settle_ready(&mut self) {
        while self.ready.dead > 0 {
            let Some(at) = self.ready.front() else { break };
            if !self.blocks.is_dead(at) {
                break;
            }
            self.ready.advance(&mut self.blocks, false);
        }
        if self.ready.live == 0 {
            self.ready.clear(&mut self.blocks);
        } else if self.ready.wants_compaction() {
            self.compact_at(Loc::Ready);
        }
    }

    /// The next slot event, computed exactly from the bitmaps: the first
    /// occupied slot of the lowest non-empty level below the top, or else the
    /// next top-level visit.
    fn next_event(&self) -> Option<Event> {
        let top = self.layout.top();
        for (l, level) in self.levels[..top].iter().enumerate() {
            if l == 1 && !self.stage.is_empty() {
                // Level 0 is empty: the staged slot comes up next (its
                // start lies before every other level-1 slot's).
                if let Some((at, slot)) = self.staging {
                    return Some(Event { at, level: 1, slot });
                }
            }
            if let Some(slot) = level.first_occupied() {
                return Some(Event {
                    at: level.geom.slot_start_in_turn(self.elapsed, slot),
                    level: l,
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
        let (l, slot) = (event.level, event.slot);
        let top = self.layout.top();
        let level = &mut self.levels[l];
        level.clear(slot);
        // Unknown until recomputed: forces an exact look next time.
        self.event_hint = 0;
        if l == 0 && top > 0 {
            // Below the top, a lowest-level slot holds exactly the entries
            // due at `event.at`: its cells join the ready queue as they are,
            // in O(1), and `when <= elapsed` now marks them ready.
            // Load their entries now, in one tight loop whose cache misses
            // overlap, rather than one miss per `poll` later.
            warm(&self.slab, &self.blocks, &level.slots[slot]);
            self.ready.append(&mut self.blocks, &mut level.slots[slot]);
            self.settle_ready();
            return;
        }
        if l == top {
            level.min_when[slot] = u64::MAX;
            self.top_next = None;
        }
        if l == 1 && self.staging.is_some_and(|(at, _)| at == event.at) {
            self.unstage();
        }
        // A level-1 slot holding at least one cell per level-0 slot marks
        // the level-0 slots it fills once, after the cascade, instead of
        // once per cell: level 0 holds nothing but the stage it may just
        // have become, so after the cascade a level-0 slot is occupied iff
        // its bucket has cells.
        let bulk = l == 1
            && l != top
            && self.levels[1].slots[slot].live as usize >= self.levels[0].slots.len();
        // Read the deadlines a batch at a time, then place the batch: the
        // reading loop is short, so many of its cache misses are in flight
        // at once (placing each entry right after reading it would leave
        // room for few).
        // Cells marked dead beyond those the bucket counted dead are its
        // share of `lazy_dead` (none for an exact bucket).
        let counted_dead = self.levels[l].slots[slot].dead;
        let mut marked = 0;
        let mut taken = self.levels[l].slots[slot].take();
        let mut batch = [(0u32, 0u64); GATHER];
        loop {
            let mut n = 0;
            while n < GATHER {
                let Some((at, index)) = taken.next_cell(&mut self.blocks, true) else {
                    break;
                };
                // The dead bit is read before the next call frees the block.
                if self.blocks.is_dead(at) {
                    marked += 1 + taken.skip_dead(&self.blocks);
                } else {
                    batch[n] = (index, self.slab.node(index).when);
                    debug_assert_eq!(self.slab.node(index).pos, at);
                    n += 1;
                }
            }
            if l == top {
                for &(index, when) in &batch[..n] {
                    self.place(index, when);
                }
            } else {
                for &(index, when) in &batch[..n] {
                    self.cascade_one(l, index, when, !bulk);
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
        if l == top {
            self.recompute_top_next();
        }
        if bulk {
            let level = &mut self.levels[0];
            for s in 0..level.slots.len() {
                if !level.slots[s].is_empty() {
                    level.set(s);
                }
            }
        }
    }

    /// Places an entry read from a slot of level `from`, below the top, that
    /// is being processed: it is due at once or goes to a lower level (its
    /// deadline lies in the slot's span). A lean [`place`](Wheel::place):
    /// no top-level bookkeeping, and no `event_hint` update (`process` set
    /// it to 0, the lowest bound there is). Without `mark` the slot's
    /// occupancy bit is left to the caller (see `process`).
    #[inline(always)]
    fn cascade_one(&mut self, from: usize, index: u32, when: u64, mark: bool) {
        let at = if when <= self.elapsed {
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
            // Not `Level::push`: here it measured about 0.7 instructions
            // more per cascaded timer (callgrind, insert+expire).
            if mark {
                level.set(slot);
            }
            level.slots[slot].push(&mut self.blocks, index)
        };
        self.slab.node_mut(index).pos = at;
    }

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
    fn stage_step(&mut self, budget: usize) {
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
            let Some(at) = bucket.front() else { break };
            let index = self.blocks.get(at);
            if self.blocks.is_dead(at) {
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
            let s = self.stage.geom.slot_of(when);
            let to = self.stage.push(&mut self.blocks, s, index);
            self.blocks.set_tag(to, self.stage_epoch);
            self.slab.node_mut(index).pos = to;
        }
        // Moving live cells out may leave only dead ones, or too many.
        self.settle(Loc::Level(1, slot));
    }

    /// The staged slot comes up (level 0 is empty: its events all came
    /// first): the stage becomes level 0, and the staged entries due at
    /// once join the ready queue ahead of any the slot still holds.
    fn unstage(&mut self) {
        debug_assert!(self.levels[0].is_empty());
        std::mem::swap(&mut self.levels[0], &mut self.stage);
        self.end_staging();
        let level = &mut self.levels[0];
        let s0 = level.geom.slot_of(self.elapsed);
        if !level.slots[s0].is_empty() {
            level.clear(s0);
            warm(&self.slab, &self.blocks, &level.slots[s0]);
            self.ready.append(&mut self.blocks, &mut level.slots[s0]);
            self.settle_ready();
        }
    }

    /// Forgets the staged slot; its blocks' tag is never used again.
    fn end_staging(&mut self) {
        self.staging = None;
        self.stage_epoch = self.stage_epoch.checked_add(1).unwrap_or(1);
    }

    /// Recomputes `top_next` exactly from the per-slot lower bounds.
    fn recompute_top_next(&mut self) {
        let level = &self.levels[self.layout.top()];
        self.top_next = level
            .occupied_slots()
            .map(|s| level.geom.slot_start(level.min_when[s]))
            .min();
    }

    /// For the cell at `at` (holding `index`): `Live(when)` if it is live
    /// for an entry due at `when`, `Logged` if its entry is gone but the
    /// cell is in the kill log (unmarked yet), `Marked` if its dead bit is
    /// set. An error if its dead bit or the log says otherwise.
    #[cfg(any(test, fuzzing))]
    fn judge(
        &self,
        index: u32,
        at: u32,
        log: &std::collections::HashSet<u32>,
    ) -> Result<Judged, String> {
        let when = live_when(&self.slab, index, at);
        match (when, self.blocks.is_dead(at), log.contains(&at)) {
            (Some(when), false, false) => Ok(Judged::Live(when)),
            (None, true, false) => Ok(Judged::Marked),
            (None, false, true) => Ok(Judged::Logged),
            (Some(_), _, true) => Err(format!("cell {at} (entry {index}) is live but logged")),
            (None, true, true) => Err(format!("cell {at} is marked and logged")),
            (None, false, false) => Err(format!("cell {at} (entry {index}) is dead but unmarked")),
            (Some(_), true, _) => Err(format!("cell {at} (entry {index}) is live but marked dead")),
        }
    }

    /// Checks every structural invariant listed in the module docs.
    ///
    /// For tests and fuzzing only; O(capacity + slots + cells).
    #[cfg(any(test, fuzzing))]
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        self.slab.check()?;
        if self.elapsed > self.now {
            return Err(format!("elapsed {} > now {}", self.elapsed, self.now));
        }
        let top = self.layout.top();
        let mut live = 0usize;
        let mut logged = 0usize;
        // The lazy buckets' marked cells beyond those they count dead.
        let mut share = 0usize;
        let mut blocks = 0;
        if self.kills.len() >= kill_log::DEFER_KILLS {
            return Err(format!("kill log holds {} cells", self.kills.len()));
        }
        let log: std::collections::HashSet<u32> = self.kills.as_slice().iter().copied().collect();
        if log.len() != self.kills.len() {
            return Err("kill log holds a cell twice".into());
        }
        // Counts one bucket's cells, checks them against its counts, and
        // returns the deadlines of its live cells, front to back, with their
        // addresses. An exact bucket counts exactly its marked cells dead
        // and holds no logged cell; a lazy one counts at least `dead` of its
        // marked cells dead and the rest (its share) live.
        let count = |bucket: &Bucket,
                     exact: bool,
                     blocks: &mut usize,
                     logged: &mut usize,
                     share: &mut usize|
         -> Result<Vec<(u32, u64)>, String> {
            let (cells, used) = bucket.walk(&self.blocks)?;
            *blocks += used;
            let mut whens = Vec::new();
            let (mut marked, mut in_log) = (0u32, 0u32);
            for (at, index) in cells {
                match self.judge(index, at, &log)? {
                    Judged::Live(when) => whens.push((at, when)),
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
            *logged += in_log as usize;
            *share += (marked - bucket.dead) as usize;
            Ok(whens)
        };
        // The ready queue.
        let whens = count(&self.ready, true, &mut blocks, &mut logged, &mut share)?;
        if let Some(&(at, _)) = whens.first() {
            if self.ready.front() != Some(at) {
                return Err("ready front is dead".into());
            }
        }
        if whens.iter().any(|&(_, when)| when > self.elapsed) {
            return Err(format!("ready queue holds a cell not due: {whens:?}"));
        }
        if whens.windows(2).any(|w| w[0].1 > w[1].1) {
            return Err(format!("ready queue out of order: {whens:?}"));
        }
        if self.ready.wants_compaction() {
            return Err("ready queue: compaction overdue".into());
        }
        live += whens.len();
        // The levels.
        for (l, level) in self.levels.iter().enumerate() {
            level.check_bitmaps()?;
            for s in level.occupied_slots() {
                let bucket = &level.slots[s];
                let whens = count(bucket, l == 0, &mut blocks, &mut logged, &mut share)
                    .map_err(|e| format!("level {l} slot {s}: {e}"))?;
                for &(at, when) in &whens {
                    if when <= self.elapsed
                        || self.layout.level_for(self.elapsed, when) != l
                        || level.geom.slot_of(when) != s
                    {
                        return Err(format!(
                            "level {l} slot {s} cell {at}: when {when} elapsed {}",
                            self.elapsed
                        ));
                    }
                    if l == top && level.min_when[s] > when {
                        return Err(format!("min_when[{s}] above entry {when}"));
                    }
                }
                live += whens.len();
                if bucket.wants_compaction() {
                    return Err(format!("level {l} slot {s}: compaction overdue"));
                }
            }
        }
        // Level-1 blocks never carry the stage's tag.
        for s in self
            .levels
            .get(1)
            .map(|l| l.occupied_slots())
            .into_iter()
            .flatten()
        {
            let (cells, _) = self.levels[1].slots[s].walk(&self.blocks)?;
            if cells
                .iter()
                .any(|&(at, _)| self.blocks.tag(at) == self.stage_epoch)
            {
                return Err(format!("level 1 slot {s}: a block carries the stage tag"));
            }
        }
        // The stage: entries of the staged level-1 slot, by level-0 slot.
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
        for s in self.stage.occupied_slots() {
            let bucket = &self.stage.slots[s];
            let (cells, _) = bucket.walk(&self.blocks)?;
            if let Some(&(at, _)) = cells
                .iter()
                .find(|&&(at, _)| self.blocks.tag(at) != self.stage_epoch)
            {
                return Err(format!("stage slot {s} cell {at}: block not tagged"));
            }
            let whens = count(bucket, true, &mut blocks, &mut logged, &mut share)
                .map_err(|e| format!("stage slot {s}: {e}"))?;
            let (_, staged) = self.staging.ok_or("stage without staging")?;
            for &(at, when) in &whens {
                if when <= self.elapsed
                    || self.layout.level_for(self.elapsed, when) != 1
                    || self.levels[1].geom.slot_of(when) != staged
                    || self.stage.geom.slot_of(when) != s
                {
                    return Err(format!(
                        "stage slot {s} cell {at}: when {when} elapsed {}",
                        self.elapsed
                    ));
                }
            }
            live += whens.len();
            if bucket.wants_compaction() {
                return Err(format!("stage slot {s}: compaction overdue"));
            }
        }
        self.blocks.check(blocks)?;
        // Every logged cell was found in a bucket, once (a cell's address
        // is unique while its block is in a bucket).
        if logged != self.kills.len() {
            return Err(format!(
                "{logged} logged cells in buckets, {} in the log",
                self.kills.len()
            ));
        }
        if share != self.lazy_dead {
            return Err(format!(
                "lazy buckets hold {share} uncounted dead cells, lazy_dead is {}",
                self.lazy_dead
            ));
        }
        if let Some((l, slot)) = self.sweep {
            if l == 0 || l > top || slot > self.levels[l].slots.len() {
                return Err(format!("sweep cursor {l}, {slot} out of range"));
            }
        }
        // A cell's entry has its `pos` and lives in the bucket that its
        // deadline names, so no entry has two cells: this counts each once.
        if live != self.slab.len() {
            return Err(format!("{live} live cells but len {}", self.slab.len()));
        }
        let top_level = &self.levels[top];
        if !top_level.is_empty() {
            let next = self.top_next.ok_or("top non-empty without top_next")?;
            let real = top_level
                .occupied_slots()
                .map(|s| top_level.geom.slot_start(top_level.min_when[s]))
                .min()
                .unwrap_or(u64::MAX);
            if next < self.elapsed || next > real {
                return Err(format!(
                    "top_next {next} outside [{}, {real}]",
                    self.elapsed
                ));
            }
        }
        if let Some(e) = self.next_event() {
            if self.event_hint > e.at {
                return Err(format!(
                    "event hint {} above next event {}",
                    self.event_hint, e.at
                ));
            }
        }
        Ok(())
    }
}

/// The deadline of the entry that the cell at address `at` (holding
/// `index`) is live for, or `None` if the cell is dead: its entry is gone or
/// keeps another address. (Padding cells hold [`NIL`], never an index.)
/// For the checks: the wheel itself judges cells by their dead bits.
#[cfg(any(test, fuzzing))]
fn live_when<T>(slab: &Slab<T>, index: u32, at: u32) -> Option<u64> {
    slab.get(index)
        .filter(|node| node.pos == at)
        .map(|node| node.when)
}

/// What [`Wheel::judge`] found a cell to be.
#[cfg(any(test, fuzzing))]
enum Judged {
    Live(u64),
    Logged,
    Marked,
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
        Loc::Level(l, slot) => &mut levels[l].slots[slot],
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

impl<T> CellOwner for Slab<T> {
    #[inline]
    fn moved(&mut self, index: u32, to: u32) {
        self.node_mut(index).pos = to;
    }
}

/// Blocks to reserve for `capacity` timers: their cells, plus one part-used
/// block per slot, per stage slot and for the ready queue.
fn blocks_for(capacity: usize, layout: &Layout) -> usize {
    if capacity == 0 {
        return 0;
    }
    let slots: usize =
        layout.levels.iter().map(|g| g.slots()).sum::<usize>() + layout.levels[0].slots() + 1;
    capacity.div_ceil(BLOCK_CELLS) + slots.min(capacity)
}

/// The iterator returned by [`Wheel::drain`].
struct Drain<'a, T> {
    wheel: &'a mut Wheel<T>,
    cursor: usize,
}

impl<T> Iterator for Drain<'_, T> {
    type Item = Expired<T>;

    fn next(&mut self) -> Option<Expired<T>> {
        let index = self.wheel.slab.next_occupied(self.cursor)?;
        self.cursor = index as usize + 1;
        let node = self.wheel.slab.node(index);
        let (when, pos) = (node.when, node.pos);
        self.wheel.slab.node_mut(index).pos = NIL;
        self.wheel.detach(when, pos);
        let node = self.wheel.slab.remove(index);
        Some(Expired {
            key: TimerKey {
                index,
                gen: node.gen.get(),
            },
            deadline: node.when,
            value: node.value,
        })
    }
}

impl<T> Drop for Drain<'_, T> {
    fn drop(&mut self) {
        for _ in self.by_ref() {}
    }
}
