//! `std::collections::BinaryHeap` with lazy cancellation: the usual heap timer.
//!
//! The heap holds (deadline, slot); the slot table holds the payload, a
//! generation and a live flag. Cancel clears the flag (O(1)); the entry stays in
//! the heap as a tombstone until its deadline comes up, and only then is its slot
//! reused. This is the strongest simple heap design (no hash set of cancelled
//! ids), so the comparison is fair to heaps.

use super::TimerQueue;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// End of the free list.
const NIL: u32 = u32::MAX;

struct Slot {
    id: u64,
    r#gen: u32,
    /// Pending; false once cancelled (a tombstone still in the heap) or free.
    live: bool,
    next: u32,
}

/// A min-heap timer queue with lazy cancellation.
pub struct LazyHeap {
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    slots: Vec<Slot>,
    free: u32,
}

impl LazyHeap {
    /// Pre-sized for `capacity` timers.
    pub fn with_capacity(capacity: usize) -> LazyHeap {
        LazyHeap {
            heap: BinaryHeap::with_capacity(capacity),
            slots: Vec::with_capacity(capacity),
            free: NIL,
        }
    }
}

impl TimerQueue for LazyHeap {
    type Handle = (u32, u32);

    #[inline]
    fn insert(&mut self, deadline: u64, id: u64) -> (u32, u32) {
        let index = if self.free != NIL {
            let index = self.free;
            let s = &mut self.slots[index as usize];
            self.free = s.next;
            s.id = id;
            s.live = true;
            index
        } else {
            self.slots.push(Slot {
                id,
                r#gen: 0,
                live: true,
                next: NIL,
            });
            (self.slots.len() - 1) as u32
        };
        self.heap.push(Reverse((deadline, index)));
        (index, self.slots[index as usize].r#gen)
    }

    #[inline]
    fn cancel(&mut self, (index, r#gen): (u32, u32)) -> Option<u64> {
        let s = self.slots.get_mut(index as usize)?;
        if s.r#gen != r#gen || !s.live {
            return None;
        }
        s.live = false;
        Some(s.id)
    }

    fn advance<F: FnMut(u64)>(&mut self, now: u64, mut fire: F) {
        while let Some(&Reverse((deadline, index))) = self.heap.peek() {
            if deadline > now {
                break;
            }
            self.heap.pop();
            let s = &mut self.slots[index as usize];
            let was_live = s.live;
            s.live = false;
            s.r#gen = s.r#gen.wrapping_add(1);
            s.next = self.free;
            self.free = index;
            if was_live {
                fire(s.id);
            }
        }
    }
}
