//! A lower bound for the churn workload: the floor's slab plus a ring of
//! one-tick slots with lazy cancellation.
//!
//! `insert` does the floor's work and appends `(index, generation)` to the
//! slot of the deadline's tick; `cancel` does only the floor's work, leaving
//! the pair behind; `advance` walks the ring tick by tick and fires each pair
//! whose entry is still live with that generation. So it orders timers with
//! the least work we found for this workload, and it is a correct timer (its
//! output is checked like the others'): a pair due in a later turn of the
//! ring is kept for that turn, so any deadline works.
//!
//! It is **not a design to ship**, only a bound to measure against: a
//! cancelled timer's pair stays in the ring until its tick comes, so memory
//! grows with the insert rate times the horizon, not with the pending count
//! (under the churn workload, by estimate about 15 million pairs of 8 bytes,
//! whether 1M or 10M timers are pending: 1 000 inserts per tick, each pair
//! kept about 15 500 ticks), and a jump of `k` ticks costs `k` slot
//! visits. `docs/benchmarks.md` ("Eighth session") has what it measured; the
//! example `churn_bound` runs it.

use super::floor::{Due, Floor};
use super::TimerQueue;

/// Slots in the ring, one tick each (a power of two above the churn
/// workload's 30 000-tick horizon, so each of its pairs fires on its first
/// visit).
pub const RING_SLOTS: usize = 1 << 15;

/// The churn lower bound (see the module docs).
///
/// # Examples
///
/// ```
/// use wheel_bench::peers::calendar::Calendar;
/// use wheel_bench::peers::TimerQueue;
///
/// let mut c = Calendar::with_capacity(2);
/// let a = c.insert(5, 1);
/// c.insert(5, 2);
/// assert_eq!(c.cancel(a), Some(1));
/// let mut fired = Vec::new();
/// c.advance(5, |id| fired.push(id));
/// assert_eq!(fired, vec![2]);
/// ```
pub struct Calendar {
    /// The floor's slab, unchanged: the entries and their generations.
    slab: Floor,
    ring: Vec<Vec<(u32, u32)>>,
    now: u64,
}

impl Calendar {
    /// An empty calendar with room for `capacity` entries; its ring's
    /// slots start empty and grow as pairs come.
    pub fn with_capacity(capacity: usize) -> Calendar {
        Calendar {
            slab: Floor::with_capacity(capacity),
            ring: (0..RING_SLOTS).map(|_| Vec::new()).collect(),
            now: 0,
        }
    }

    /// As [`with_capacity`](Calendar::with_capacity), with every ring slot
    /// also given room for `2 * capacity / RING_SLOTS + 64` pairs, written
    /// once so that its pages are touched before anything is timed. That is
    /// room for the churn's fill of `capacity` timers plus what 2M steps add
    /// (about 70 pairs per slot on average). At 1M timers callgrind counts
    /// the same instructions per step as at 10M, so growth no longer shows;
    /// at much smaller sizes a few of the fullest slots may still grow.
    ///
    /// Why: growing slots cost the unsized calendar about 18 instructions a
    /// step at 1M timers and none at 10M (the slots that hold a fill of
    /// 10M timers are large enough already), which made its churn ratio
    /// look flat from 1M to 10M (`docs/benchmarks.md`, "Eighteenth
    /// session"). The timing instruments (`examples/churn_bound.rs`,
    /// `examples/churn_interleaved.rs`) use this one; the memory count
    /// (`examples/churn_memory.rs`) the unsized one.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_bench::peers::calendar::Calendar;
    /// use wheel_bench::peers::TimerQueue;
    ///
    /// let mut c = Calendar::presized(1_000);
    /// c.insert(3, 7);
    /// let mut fired = Vec::new();
    /// c.advance(3, |id| fired.push(id));
    /// assert_eq!(fired, vec![7]);
    /// ```
    pub fn presized(capacity: usize) -> Calendar {
        let room = 2 * capacity / RING_SLOTS + 64;
        let mut c = Calendar::with_capacity(capacity);
        for slot in &mut c.ring {
            *slot = vec![(0, 0); room];
            slot.clear();
        }
        c
    }

    /// The fewest pairs any ring slot has room for.
    #[cfg(test)]
    fn least_room(&self) -> usize {
        self.ring.iter().map(Vec::capacity).min().unwrap_or(0)
    }
}

impl TimerQueue for Calendar {
    type Handle = (u32, u32);

    // Always: with a second caller (`Frozen<Calendar>` in
    // `examples/churn_interleaved.rs`) a plain `#[inline]` left it out of
    // line in the churn loop, about 10 more instructions per step
    // (callgrind).
    #[inline(always)]
    fn insert(&mut self, deadline: u64, id: u64) -> (u32, u32) {
        let handle = self.slab.insert(deadline, id);
        // A deadline at or before `now` is visited on the next tick.
        let at = deadline.max(self.now + 1);
        self.ring[at as usize % RING_SLOTS].push(handle);
        handle
    }

    #[inline]
    fn cancel(&mut self, handle: (u32, u32)) -> Option<u64> {
        self.slab.cancel(handle)
    }

    fn advance<F: FnMut(u64)>(&mut self, now: u64, mut fire: F) {
        while self.now < now {
            self.now += 1;
            let slot = self.now as usize % RING_SLOTS;
            let mut pairs = std::mem::take(&mut self.ring[slot]);
            let mut later = 0;
            for i in 0..pairs.len() {
                let handle = pairs[i];
                match self.slab.take_due(handle, self.now) {
                    Due::Stale => {}
                    Due::Taken(id) => fire(id),
                    // Due in a later turn of the ring: keep it, in order.
                    Due::Later => {
                        pairs[later] = handle;
                        later += 1;
                    }
                }
            }
            pairs.truncate(later);
            self.ring[slot] = pairs;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fire_to(c: &mut Calendar, now: u64) -> Vec<u64> {
        let mut fired = Vec::new();
        c.advance(now, |id| fired.push(id));
        fired
    }

    #[test]
    fn fires_at_the_deadline_in_insert_order_and_never_early() {
        let mut c = Calendar::with_capacity(4);
        c.insert(3, 30);
        c.insert(2, 20);
        c.insert(3, 31);
        assert_eq!(fire_to(&mut c, 1), Vec::<u64>::new());
        assert_eq!(fire_to(&mut c, 2), vec![20]);
        assert_eq!(fire_to(&mut c, 10), vec![30, 31]);
    }

    #[test]
    fn presized_has_room_and_fires_alike() {
        assert_eq!(Calendar::with_capacity(10).least_room(), 0);
        let n = 200_000;
        let mut a = Calendar::presized(n);
        assert!(a.least_room() >= 2 * n / RING_SLOTS + 64);
        let mut b = Calendar::with_capacity(n);
        for (i, d) in [(1u64, 9u64), (2, 4), (3, 9), (4, 40_000)] {
            a.insert(d, i);
            b.insert(d, i);
        }
        for now in [4, 9, 40_000] {
            assert_eq!(fire_to(&mut a, now), fire_to(&mut b, now));
        }
    }

    #[test]
    fn cancelled_and_stale_handles_fire_nothing() {
        let mut c = Calendar::with_capacity(4);
        let a = c.insert(5, 1);
        assert_eq!(c.cancel(a), Some(1));
        assert_eq!(c.cancel(a), None);
        // The freed entry is reused; the old pair must not fire the new timer
        // at the old deadline.
        let b = c.insert(9, 2);
        assert_eq!(b.0, a.0);
        assert_eq!(fire_to(&mut c, 8), Vec::<u64>::new());
        assert_eq!(fire_to(&mut c, 9), vec![2]);
        assert_eq!(c.cancel(b), None);
    }

    #[test]
    fn deadlines_beyond_the_ring_wait_for_their_turn() {
        let mut c = Calendar::with_capacity(2);
        let far = RING_SLOTS as u64 + 7;
        c.insert(far, 1);
        c.insert(7, 2);
        assert_eq!(fire_to(&mut c, far - 1), vec![2]);
        assert_eq!(fire_to(&mut c, far), vec![1]);
    }

    #[test]
    fn past_deadlines_fire_on_the_next_tick() {
        let mut c = Calendar::with_capacity(2);
        assert_eq!(fire_to(&mut c, 100), Vec::<u64>::new());
        c.insert(50, 1);
        assert_eq!(fire_to(&mut c, 101), vec![1]);
    }
}
