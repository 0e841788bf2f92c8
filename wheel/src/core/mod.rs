//! The single-threaded hierarchical timing wheel, [`Wheel<T>`].
//!
//! The wheel counts integer ticks and knows nothing of threads or clocks.
//! Layout and arithmetic live in [`config`], entry storage in [`slab`], slot
//! lists and bitmaps in [`level`]; `docs/design.md` explains the whole.
//!
//! # State and invariants
//!
//! - `now` is the largest tick ever passed to `poll` (or 0). It never goes
//!   back. An entry's *effective deadline* `when` is `max(deadline, now)` at
//!   the time of its insert or reset; that is what it is ordered and fired by.
//! - `elapsed <= now` is the wheel's processing cursor: every slot event up
//!   to `elapsed` has been processed. It lags `now` only while `poll` has
//!   returned an entry before finishing its advance.
//! - The ready list holds entries with `when <= elapsed`, in the order they
//!   must be returned (non-decreasing `when`, FIFO among equals). Their
//!   `Loc` is `READY`, or level 0 for a lowest-level slot spliced there
//!   whole; since every entry still in a slot has `when > elapsed`, the
//!   deadline tells the two apart.
//! - Every other entry has `when > elapsed` and sits on level
//!   `level_for(elapsed, when)`, in the slot `slot_of(when)` of that level.
//!   Each slot list is in FIFO order of insert/reset for equal deadlines.
//! - Below the top level, every occupied slot lies ahead of `elapsed` in the
//!   level's current turn, so a level's first occupied slot is its next
//!   event, and the lowest non-empty level holds the earliest event of all.
//! - Top-level slots may hold entries several turns ahead ("cycles"). Each
//!   keeps a lower bound of its deadlines (`min_when`); `top_next` is a lower
//!   bound of the next top-level visit, `>= elapsed` while the top is
//!   non-empty.
//! - `event_hint` is a lower bound of the next slot event (`u64::MAX` if
//!   there is none before `u64::MAX`), so an idle `poll` is O(1).

pub(crate) mod config;
pub(crate) mod level;
#[cfg(any(test, fuzzing))]
pub mod model;
pub(crate) mod slab;

#[cfg(test)]
mod tests;

use std::fmt;

use self::config::Layout;
pub use self::config::{ConfigError, WheelConfig};
use self::level::{lane_of, slot_is_empty, Level, List, Slot, LANES};
use self::slab::{Loc, Slab, NIL};

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
    ready: List,
    now: u64,
    elapsed: u64,
    top_next: Option<u64>,
    event_hint: u64,
    /// Slot events processed so far (tests check the O(levels) claims).
    #[cfg(test)]
    events_processed: u64,
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
        Wheel {
            layout,
            levels,
            slab: Slab::with_capacity(capacity),
            ready: List::EMPTY,
            now: 0,
            elapsed: 0,
            top_next: None,
            event_hint: u64::MAX,
            #[cfg(test)]
            events_processed: 0,
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
        self.slab.capacity()
    }

    /// Adds a timer due at tick `deadline` and returns its key. Any `u64` is
    /// accepted; a deadline `<= now()` is due at once (its effective deadline
    /// is `now()`).
    ///
    /// # Panics
    ///
    /// Only if more than `u32::MAX - 1` timers are pending at once.
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
    pub fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        let when = deadline.max(self.now);
        let (index, gen) = self.slab.insert(value, when, Loc::READY);
        self.place(index, when);
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
    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let node = self.slab.get_key(key.index, key.gen)?;
        let (when, loc) = (node.when, node.loc);
        self.unlink_at(key.index, when, loc);
        Some(self.slab.remove(key.index).value)
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
        if self.slab.get_key(key.index, key.gen).is_none() {
            return false;
        }
        self.unlink(key.index);
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
    pub fn poll(&mut self, now: u64) -> Option<Expired<T>> {
        if now > self.now {
            self.now = now;
        }
        loop {
            if let Some(index) = self.ready.pop_front(&mut self.slab.links) {
                let node = self.slab.remove(index);
                return Some(Expired {
                    key: TimerKey {
                        index,
                        gen: node.gen,
                    },
                    deadline: node.when,
                    value: node.value,
                });
            }
            if self.event_hint > self.now {
                self.elapsed = self.now;
                return None;
            }
            match self.next_event() {
                Some(event) if event.at <= self.now => self.process(event),
                other => {
                    self.event_hint = other.map_or(u64::MAX, |e| e.at);
                    self.elapsed = self.now;
                    return None;
                }
            }
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
        if self.ready.head != NIL {
            return Some(self.slab.node(self.ready.head).when);
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
        self.slab.shrink_to_fit();
    }

    /// Links an entry whose effective deadline is `when` (>= `now`).
    fn place(&mut self, index: u32, when: u64) {
        if when <= self.elapsed {
            self.slab.node_mut(index).loc = Loc::READY;
            self.ready.push_back(&mut self.slab.links, index);
        } else {
            self.place_in_wheel(index, when);
        }
    }

    /// Links an entry with `when > elapsed` into its level and slot.
    fn place_in_wheel(&mut self, index: u32, when: u64) {
        let l = self.layout.level_for(self.elapsed, when);
        let level = &mut self.levels[l];
        let slot = level.geom.slot_of(when);
        let start = level.geom.slot_start(when);
        self.slab.node_mut(index).loc = Loc::level(l);
        level.slots[slot][lane_of(when)].push_back(&mut self.slab.links, index);
        level.set(slot);
        if l == self.layout.top() {
            level.min_when[slot] = level.min_when[slot].min(when);
            self.top_next = Some(self.top_next.map_or(start, |t| t.min(start)));
        }
        self.event_hint = self.event_hint.min(start);
    }

    /// Unlinks an occupied entry from whichever list holds it.
    fn unlink(&mut self, index: u32) {
        let node = self.slab.node(index);
        self.unlink_at(index, node.when, node.loc);
    }

    /// Unlinks entry `index`, whose deadline and location the caller read.
    #[inline]
    fn unlink_at(&mut self, index: u32, when: u64, loc: Loc) {
        let l = match loc.as_level() {
            Some(l) if !(l == 0 && when <= self.elapsed) => l,
            // On the ready list: moved there one by one, or spliced there
            // with its whole lowest-level slot (see `process`).
            _ => {
                self.ready.unlink(&mut self.slab.links, index);
                return;
            }
        };
        let level = &mut self.levels[l];
        let slot = level.geom.slot_of(when);
        level.slots[slot][lane_of(when)].unlink(&mut self.slab.links, index);
        if slot_is_empty(&level.slots[slot]) {
            level.clear(slot);
            if l == self.layout.top() {
                level.min_when[slot] = u64::MAX;
                if level.is_empty() {
                    self.top_next = None;
                }
            }
        }
    }

    /// The next slot event, computed exactly from the bitmaps: the first
    /// occupied slot of the lowest non-empty level below the top, or else the
    /// next top-level visit.
    fn next_event(&self) -> Option<Event> {
        let top = self.layout.top();
        for (l, level) in self.levels[..top].iter().enumerate() {
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
    /// that are due go to the ready list, the others move down (cascade) or,
    /// on the top level, stay for a later turn. FIFO order is kept.
    fn process(&mut self, event: Event) {
        debug_assert!(event.at >= self.elapsed && event.at <= self.now);
        self.elapsed = event.at;
        #[cfg(test)]
        {
            self.events_processed += 1;
        }
        let top = self.layout.top();
        let level = &mut self.levels[event.level];
        let lanes: Slot = std::mem::replace(&mut level.slots[event.slot], [List::EMPTY; LANES]);
        level.clear(event.slot);
        if event.level == 0 && top > 0 {
            // Below the top, a lowest-level slot holds exactly the entries
            // due at `event.at` (all in one lane): splice them onto the ready
            // list in O(1). They keep `Loc` level 0; `when <= elapsed` tells
            // `unlink` they are on the ready list now.
            for lane in lanes {
                self.ready.append(&mut self.slab.links, lane);
            }
            self.event_hint = 0;
            return;
        }
        if event.level == top {
            level.min_when[event.slot] = u64::MAX;
            self.top_next = None;
        }
        // Walk the lanes in lockstep so their nodes' cache misses overlap.
        // Entries with equal deadlines share a lane, so FIFO order among
        // them is kept; order between different deadlines does not matter.
        let mut cursors = lanes.map(|lane| lane.head);
        loop {
            let mut moved = false;
            for cursor in &mut cursors {
                let at = *cursor;
                if at != NIL {
                    let when = self.slab.node(at).when;
                    *cursor = self.slab.links[at as usize].next;
                    self.place(at, when);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        if event.level == top {
            self.recompute_top_next();
        }
        // Unknown until recomputed: forces an exact look next time.
        self.event_hint = 0;
    }

    /// Recomputes `top_next` exactly from the per-slot lower bounds.
    fn recompute_top_next(&mut self) {
        let level = &self.levels[self.layout.top()];
        self.top_next = level
            .occupied_slots()
            .map(|s| level.geom.slot_start(level.min_when[s]))
            .min();
    }

    /// Checks every structural invariant listed in the module docs.
    ///
    /// For tests and fuzzing only; O(capacity + slots).
    #[cfg(any(test, fuzzing))]
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        self.slab.check()?;
        if self.elapsed > self.now {
            return Err(format!("elapsed {} > now {}", self.elapsed, self.now));
        }
        let top = self.layout.top();
        let mut seen = 0usize;
        // `expect` is the list's Loc; `None` is the ready list, whose entries
        // are READY or spliced level-0 entries.
        let mut walk = |list: &List, expect: Option<Loc>| -> Result<Vec<u64>, String> {
            let mut whens = Vec::new();
            let (mut at, mut prev) = (list.head, NIL);
            while at != NIL {
                let node = self
                    .slab
                    .get_key(at, self.slab.node(at).gen)
                    .ok_or("vacant")?;
                let loc_ok = match expect {
                    Some(loc) => node.loc == loc,
                    None => node.loc == Loc::READY || node.loc == Loc::level(0),
                };
                let link = self.slab.links[at as usize];
                if link.prev != prev || !loc_ok {
                    return Err(format!("bad links or loc at {at}"));
                }
                whens.push(node.when);
                seen += 1;
                if whens.len() > self.slab.len() {
                    return Err("list cycle".into());
                }
                prev = at;
                at = link.next;
            }
            if list.tail != prev {
                return Err("tail mismatch".into());
            }
            Ok(whens)
        };
        let ready = walk(&self.ready, None)?;
        if ready.windows(2).any(|w| w[0] > w[1]) || ready.iter().any(|&w| w > self.elapsed) {
            return Err(format!("ready list out of order or not due: {ready:?}"));
        }
        for (l, level) in self.levels.iter().enumerate() {
            level.check_bitmaps()?;
            for s in level.occupied_slots() {
                for (lane, list) in level.slots[s].iter().enumerate() {
                    for when in walk(list, Some(Loc::level(l)))? {
                        if lane_of(when) != lane {
                            return Err(format!("entry {when} in lane {lane}"));
                        }
                        if when <= self.elapsed {
                            return Err(format!("level {l} holds due entry {when}"));
                        }
                        if level.geom.slot_of(when) != s {
                            return Err(format!("entry {when} in slot {s} of level {l}"));
                        }
                        if self.layout.level_for(self.elapsed, when) != l {
                            return Err(format!(
                                "entry {when} on level {l}, elapsed {}",
                                self.elapsed
                            ));
                        }
                        if l == top && level.min_when[s] > when {
                            return Err(format!("min_when[{s}] above entry {when}"));
                        }
                    }
                }
            }
        }
        if seen != self.slab.len() {
            return Err(format!("{seen} linked but len {}", self.slab.len()));
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
        self.wheel.unlink(index);
        let node = self.wheel.slab.remove(index);
        Some(Expired {
            key: TimerKey {
                index,
                gen: node.gen,
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
