//! Adding, moving and removing timers: [`Wheel::insert`], `cancel`,
//! `reset`, the lookups, `drain` and `shrink_to_fit`, and where a new cell
//! goes ([`Wheel::place_cell`]).
//!
//! An entry's cell is placed once per insert or reset, by its effective
//! deadline and `elapsed` alone (see the invariants in [`super`]); a cell an
//! entry leaves dies through [`Wheel::kill`] (or, in `drain`,
//! `Wheel::kill_now`; see [`super::lazy`]), which needs the entry's old
//! deadline and address, so every caller reads them before it frees the
//! entry or points its `pos` elsewhere.

use super::cells::CellAddr;
use super::{Expired, TimerKey, Wheel};

impl<T> Wheel<T> {
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
        let (index, generation) = self.slab.vacant(when >> self.lane_shift);
        let pos = self.place_cell(index, when);
        self.slab.fill(index, generation, value, when, pos);
        TimerKey { index, generation }
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
        // Freed first: a vacant entry's cell is dead, as `kill` expects.
        let node = self.slab.remove_key(key.index, key.generation)?;
        self.kill(node.when, node.pos);
        Some(node.value)
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
        let Some(node) = self.slab.get_key(key.index, key.generation) else {
            return false;
        };
        let (old, pos) = (node.when, node.pos);
        self.slab.node_mut(key.index).pos = CellAddr::NONE;
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
        self.slab.get_key(key.index, key.generation).map(|n| n.when)
    }

    /// The key of a pending timer with the earliest effective deadline
    /// (`None` if the wheel is empty), for the delay queue's `peek`.
    ///
    /// A timer already due sits at the front of the ready queue: found in
    /// O(1), and exactly the one `poll` returns next. Otherwise the slab is
    /// scanned, O(pending): the buckets keep their timers in FIFO order but
    /// not sorted by deadline, and a level's first occupied slot may hold
    /// only lazily cancelled cells, so no bucket can be read instead. Among
    /// timers not yet due that share the earliest tick, the scan names the
    /// one with the lowest slab index, which need not be the first `poll`
    /// returns.
    pub(crate) fn earliest(&self) -> Option<TimerKey> {
        if let Some(front) = self.ready.front() {
            let index = self.blocks.get(front);
            let generation = self.slab.node(index).generation.get();
            return Some(TimerKey { index, generation });
        }
        let mut best: Option<(u64, u32)> = None;
        let mut from = 0;
        while let Some(index) = self.slab.next_occupied(from) {
            from = index as usize + 1;
            let when = self.slab.node(index).when;
            // Strict: the lowest index wins a tie.
            if best.is_none_or(|(w, _)| when < w) {
                best = Some((when, index));
            }
        }
        best.map(|(_, index)| TimerKey {
            index,
            generation: self.slab.node(index).generation.get(),
        })
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
        self.slab
            .get_key(key.index, key.generation)
            .map(|n| &n.value)
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
            .get_key_mut(key.index, key.generation)
            .map(|n| &mut n.value)
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
        self.compact_all();
    }

    /// Places an entry whose effective deadline is `when` (>= `now`): in
    /// the ready queue if it is due by `elapsed`, else in its slot.
    #[inline(always)]
    pub(super) fn place(&mut self, index: u32, when: u64) {
        let pos = self.place_cell(index, when);
        self.slab.node_mut(index).pos = pos;
    }

    /// Appends a cell naming entry `index`, due at `when` (>= `now`), to
    /// the ready queue if it is due by `elapsed`, else to its slot, and
    /// returns the cell's address; the caller stores it in the entry's
    /// `pos`.
    #[inline(always)]
    fn place_cell(&mut self, index: u32, when: u64) -> CellAddr {
        if when <= self.elapsed {
            return self.ready.push(&mut self.blocks, index);
        }
        let to = self.layout.level_for(self.elapsed, when);
        let level = &mut self.levels[to];
        let slot = level.geom.slot_of(when);
        let pos = level.push(&mut self.blocks, slot, index);
        let start = level.geom.slot_start(when);
        if to == self.layout.top() {
            level.min_when[slot] = level.min_when[slot].min(when);
            self.top_next = Some(self.top_next.map_or(start, |t| t.min(start)));
        }
        self.event_hint = self.event_hint.min(start);
        pos
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
        let node = self.wheel.slab.node(index);
        let (when, pos) = (node.when, node.pos);
        self.wheel.slab.node_mut(index).pos = CellAddr::NONE;
        let loc = self.wheel.locate(when, pos);
        self.wheel.kill_now(loc, pos);
        let node = self.wheel.slab.remove(index);
        Some(Expired {
            key: TimerKey {
                index,
                generation: node.generation.get(),
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
