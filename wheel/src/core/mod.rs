//! The single-threaded hierarchical timing wheel, [`Wheel<T>`].
//!
//! The wheel counts integer ticks and knows nothing of threads or clocks.
//! This file holds the type, its state and its constructors; the
//! operations are spread by concern:
//!
//! - [`timers`]: adding, moving and removing timers (`insert`, `cancel`,
//!   `reset`, `get`, `drain`, `shrink_to_fit`) and where a cell goes;
//! - [`advance`]: `poll` and `next_expiration`: finding and processing
//!   slot events, cascading; [`stage`]: moving the next level-1 slot down
//!   ahead of time;
//! - [`lazy`]: how a cell dies (the kill log, marking, settling,
//!   compacting, sweeping), one state machine;
//! - `check`: the invariant checker (tests and fuzzing only).
//!
//! Layout and arithmetic live in [`config`], entry storage in [`slab`], slot
//! contents in [`cells`], the index that names nothing, which both use, in
//! `index`, bitmaps in [`level`], the kill log in [`kill_log`];
//! `docs/design.md` explains the whole.
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
//!   [`lazy`]). Every step that reads a lazy bucket flushes the log first.
//! - The ready queue, level 0 and the stage are *exact* buckets: each counts
//!   its dead cells. Levels 1 and up are *lazy*: a cancel marks the cell and
//!   leaves its bucket alone, which counts the cell as live until it reads
//!   it; `lazy_dead` counts all such cells, and sweeps (see [`lazy`]) keep
//!   it below about [`COMPACT_RATIO`] per pending timer plus the tuning's
//!   `sweep_min`. Which bucket holds an entry's live cell follows from
//!   `when` and `elapsed` alone:
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

mod advance;
pub(crate) mod cells;
#[cfg(any(test, fuzzing))]
mod check;
pub(crate) mod config;
mod index;
pub(crate) mod kill_log;
mod lazy;
pub(crate) mod level;
pub(crate) mod slab;
mod stage;
#[cfg(any(test, fuzzing))]
pub(crate) mod testing;
mod timers;

#[cfg(test)]
mod tests;

use std::fmt;

#[cfg(doc)]
use self::cells::COMPACT_RATIO;
use self::cells::{BLOCK_CELLS, Blocks, Bucket, CellAddr, CellOwner};
use self::config::Layout;
pub(crate) use self::config::Tuning;
pub use self::config::{ConfigError, WheelConfig};
#[cfg(doc)]
use self::kill_log::DEFER_KILLS;
use self::kill_log::KillLog;
use self::level::Level;
use self::slab::Slab;

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
    generation: u32,
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
    /// The largest tick ever polled; never goes back.
    now: u64,
    /// The processing cursor: every slot event up to it has been processed;
    /// `elapsed <= now`.
    elapsed: u64,
    /// A lower bound of the next top-level visit, `>= elapsed`; `Some`
    /// while the top level holds cells.
    top_next: Option<u64>,
    /// A lower bound of the next slot event (`u64::MAX` if none), so that
    /// an idle `poll` is O(1).
    event_hint: u64,
    /// Level-0 buckets for the level-1 slot being staged (see [`stage`]);
    /// empty unless `staging` is set.
    stage: Level,
    /// The level-1 slot being staged: `(start, slot)`.
    staging: Option<(u64, usize)>,
    /// The tag of the blocks of `stage`'s buckets (never 0, the tag of
    /// every other block); a new one for each staged slot.
    stage_epoch: u32,
    /// Cells of cancelled or reset entries in lazy buckets (levels 1 and
    /// up, not staged) not yet marked dead: fewer than [`DEFER_KILLS`]
    /// between calls, marked together by `flush_kills` (see [`lazy`]).
    kills: KillLog,
    /// Cells of lazy buckets marked dead by a cancel or reset that their
    /// buckets still count as live (see [`cells`]); kept below about
    /// [`COMPACT_RATIO`] per pending timer plus `sweep_min` by the sweeps
    /// (see [`lazy`]).
    lazy_dead: usize,
    /// The sweep pass under way, if any: the next lazy slot to compact, as
    /// `(level, slot)`.
    sweep: Option<(usize, usize)>,
    /// Lazily dead cells allowed beyond [`COMPACT_RATIO`] per pending timer
    /// before a sweep starts ([`Tuning::sweep_min`]).
    sweep_min: usize,
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

/// Where a cell lives: the bucket [`Wheel::locate`] finds for it.
#[derive(Debug, Clone, Copy)]
enum Loc {
    Ready,
    Stage(usize),
    Level(usize, usize),
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
        Self::build(config, 0, Tuning::DEFAULT)
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
        Self::build(WheelConfig::default(), capacity, Tuning::DEFAULT)
    }

    /// An empty wheel with the given layout and tuning (see [`Tuning`]):
    /// for the tests, which run the small tuning as well as the default
    /// one.
    #[cfg(test)]
    pub(crate) fn with_tuning(config: WheelConfig, tuning: Tuning) -> Self {
        Self::build(config, 0, tuning)
    }

    /// The constructor every other one (and the test harness) goes
    /// through.
    pub(crate) fn build(config: WheelConfig, capacity: usize, tuning: Tuning) -> Self {
        let layout = Layout::new(&config);
        let top = layout.top();
        let levels = layout
            .levels
            .iter()
            .enumerate()
            .map(|(level, &geom)| Level::new(geom, level == top))
            .collect();
        let blocks = Blocks::with_capacity(blocks_for(capacity, &layout));
        let stage = Level::new(layout.levels[0], false);
        let lane_shift = layout.levels[0].bits;
        Wheel {
            layout,
            levels,
            slab: Slab::with_capacity(capacity, &tuning),
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
            sweep_min: tuning.sweep_min,
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
}

impl<T> CellOwner for Slab<T> {
    #[inline]
    fn moved(&mut self, index: u32, to: CellAddr) {
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
