//! A lower bound for the churn workload: the floor's slab plus a ring of
//! one-tick slots with lazy cancellation.
//!
//! `insert` does the floor's work and appends `(index, generation)` to the
//! slot of the deadline's tick; `cancel` does only the floor's work, leaving
//! the pair behind; `advance` walks the ring tick by tick and fires each pair
//! whose entry is still live with that generation. So it orders timers with
//! about the least work any timer can do, and it is a correct timer (its
//! output is checked like the others'): a pair due in a later turn of the
//! ring is kept for that turn, so any deadline works.
//!
//! It is **not a design to ship**, only a bound to measure against: a
//! cancelled timer's pair stays in the ring until its tick comes, so memory
//! grows with the insert rate times the horizon, not with the pending count
//! (under the churn workload, about 15 million pairs, 8 bytes each, whether
//! 1M or 10M timers are pending), and a jump of `k` ticks costs `k` slot
//! visits. `docs/benchmarks.md` ("Eighth session") has what it measured; the
//! example `churn_bound` runs it.

use super::TimerQueue;

/// End of the free list.
const NIL: u32 = u32::MAX;

/// Slots in the ring, one tick each (a power of two above the churn
/// workload's 30 000-tick horizon, so each of its pairs fires on its first
/// visit).
pub const RING_SLOTS: usize = 1 << 15;

/// One slab entry, laid out like the floor's (32 bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct Entry {
    deadline: u64,
    id: u64,
    next: u32,
    gen: u32,
    live: u64,
}

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
    entries: Vec<Entry>,
    free: u32,
    ring: Vec<Vec<(u32, u32)>>,
    now: u64,
}

impl Calendar {
    /// An empty calendar with room for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Calendar {
        Calendar {
            entries: Vec::with_capacity(capacity),
            free: NIL,
            ring: (0..RING_SLOTS).map(|_| Vec::new()).collect(),
            now: 0,
        }
    }

    fn release(&mut self, index: u32) -> u64 {
        let e = &mut self.entries[index as usize];
        e.live = 0;
        e.gen = e.gen.wrapping_add(1);
        e.next = self.free;
        self.free = index;
        e.id
    }
}

impl TimerQueue for Calendar {
    type Handle = (u32, u32);

    #[inline]
    fn insert(&mut self, deadline: u64, id: u64) -> (u32, u32) {
        let (index, gen) = if self.free != NIL {
            let index = self.free;
            let e = &mut self.entries[index as usize];
            self.free = e.next;
            e.deadline = deadline;
            e.id = id;
            e.next = NIL;
            e.live = 1;
            (index, e.gen)
        } else {
            let index = self.entries.len() as u32;
            self.entries.push(Entry {
                deadline,
                id,
                next: NIL,
                gen: 0,
                live: 1,
            });
            (index, 0)
        };
        // A deadline at or before `now` is visited on the next tick.
        let at = deadline.max(self.now + 1);
        self.ring[at as usize % RING_SLOTS].push((index, gen));
        (index, gen)
    }

    #[inline]
    fn cancel(&mut self, (index, gen): (u32, u32)) -> Option<u64> {
        let e = self.entries.get(index as usize)?;
        if e.gen != gen || e.live == 0 {
            return None;
        }
        Some(self.release(index))
    }

    fn advance<F: FnMut(u64)>(&mut self, now: u64, mut fire: F) {
        while self.now < now {
            self.now += 1;
            let slot = self.now as usize % RING_SLOTS;
            let mut pairs = std::mem::take(&mut self.ring[slot]);
            let mut later = 0;
            for i in 0..pairs.len() {
                let (index, gen) = pairs[i];
                let e = &self.entries[index as usize];
                if e.live == 0 || e.gen != gen {
                    continue; // cancelled (or fired) since
                }
                if e.deadline <= self.now {
                    fire(self.release(index));
                } else {
                    // Due in a later turn of the ring: keep it, in order.
                    pairs[later] = (index, gen);
                    later += 1;
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
