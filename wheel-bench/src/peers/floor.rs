//! The floor: the bare cost of writing and freeing a timer-sized slab entry.
//!
//! A `Vec` of 32-byte entries with an index free list, the same bookkeeping a
//! timer needs at the very least (a deadline, the payload, a link, a generation),
//! and nothing else: no ordering, no buckets. It is not a timer: `advance` frees
//! everything only once `now` has passed every deadline it holds (enough for
//! insert+expire), and otherwise fires nothing, so its output is not checked.

use super::TimerQueue;

/// End of the free list.
const NIL: u32 = u32::MAX;

/// One slab entry: 32 bytes, like a timer entry with a `u64` payload.
#[derive(Clone, Copy)]
#[repr(C)]
struct Entry {
    deadline: u64,
    id: u64,
    /// Next free entry while free; unused (but written) while live.
    next: u32,
    /// Bumped on free so stale handles miss.
    r#gen: u32,
    live: u64,
}

/// The floor slab.
pub struct Floor {
    entries: Vec<Entry>,
    free: u32,
    max_deadline: u64,
    live: usize,
}

impl Floor {
    /// Pre-sized for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Floor {
        Floor {
            entries: Vec::with_capacity(capacity),
            free: NIL,
            max_deadline: 0,
            live: 0,
        }
    }

    /// The entry of a live handle, `None` for a stale one.
    #[inline]
    fn live_entry(&self, (index, r#gen): (u32, u32)) -> Option<&Entry> {
        let e = self.entries.get(index as usize)?;
        (e.r#gen == r#gen && e.live != 0).then_some(e)
    }

    fn release(&mut self, index: u32) -> u64 {
        let e = &mut self.entries[index as usize];
        e.live = 0;
        e.r#gen = e.r#gen.wrapping_add(1);
        e.next = self.free;
        self.free = index;
        self.live -= 1;
        e.id
    }
}

impl TimerQueue for Floor {
    type Handle = (u32, u32);

    #[inline]
    fn insert(&mut self, deadline: u64, id: u64) -> (u32, u32) {
        self.max_deadline = self.max_deadline.max(deadline);
        self.live += 1;
        if self.free != NIL {
            let index = self.free;
            let e = &mut self.entries[index as usize];
            self.free = e.next;
            e.deadline = deadline;
            e.id = id;
            e.next = NIL;
            e.live = 1;
            (index, e.r#gen)
        } else {
            let index = self.entries.len() as u32;
            self.entries.push(Entry {
                deadline,
                id,
                next: NIL,
                r#gen: 0,
                live: 1,
            });
            (index, 0)
        }
    }

    #[inline]
    fn cancel(&mut self, handle: (u32, u32)) -> Option<u64> {
        self.live_entry(handle)?;
        Some(self.release(handle.0))
    }

    fn advance<F: FnMut(u64)>(&mut self, now: u64, mut fire: F) {
        if now < self.max_deadline || self.live == 0 {
            return;
        }
        for index in 0..self.entries.len() as u32 {
            if self.entries[index as usize].live != 0 {
                fire(self.release(index));
            }
        }
    }

    fn is_timer(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_is_timer_sized() {
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }

    #[test]
    fn reuses_freed_entries_and_rejects_stale_handles() {
        let mut f = Floor::with_capacity(4);
        let a = f.insert(10, 1);
        assert_eq!(f.cancel(a), Some(1));
        assert_eq!(f.cancel(a), None);
        let b = f.insert(20, 2);
        assert_eq!(b.0, a.0);
        let mut fired = Vec::new();
        f.advance(19, |id| fired.push(id));
        assert!(fired.is_empty());
        f.advance(20, |id| fired.push(id));
        assert_eq!(fired, vec![2]);
    }
}
