//! [`RingQueue`]: a lock-free bag that allocates nothing in steady state.

use std::sync::OnceLock;

/// A lock-free multi-producer multi-consumer bag: a bounded ring that
/// never allocates after its first use (crossbeam's `ArrayQueue`, created
/// on the first push), and an unbounded `SegQueue` for what does not fit.
/// FIFO within each part, **not** across them: use it only where order
/// does not matter, or where the consumer tolerates reordering.
///
/// The point is allocation traffic: `SegQueue` allocates a block every 31
/// pushes and the consumer frees it, so a producer and a consumer on
/// different threads keep handing memory across the allocator's per-thread
/// caches (with glibc, contending on an arena lock).
///
/// Under loom, `sync/loom.rs` models it as a ring of capacity 1 and an
/// overflow, so that models see values overtake each other.
pub(crate) struct RingQueue<T> {
    ring: OnceLock<crossbeam_queue::ArrayQueue<T>>,
    cap: usize,
    overflow: crossbeam_queue::SegQueue<T>,
}

impl<T> RingQueue<T> {
    /// A queue whose ring holds `cap` (at least 1) values.
    pub(crate) fn new(cap: usize) -> Self {
        RingQueue {
            ring: OnceLock::new(),
            cap: cap.max(1),
            overflow: crossbeam_queue::SegQueue::new(),
        }
    }
    pub(crate) fn push(&self, value: T) {
        let ring = self
            .ring
            .get_or_init(|| crossbeam_queue::ArrayQueue::new(self.cap));
        if let Err(value) = ring.push(value) {
            self.overflow.push(value)
        }
    }
    pub(crate) fn pop(&self) -> Option<T> {
        if let Some(ring) = self.ring.get() {
            if !ring.is_empty() {
                if let Some(v) = ring.pop() {
                    return Some(v);
                }
            }
        }
        if self.overflow.is_empty() {
            return None;
        }
        self.overflow.pop()
    }
    pub(crate) fn is_empty(&self) -> bool {
        let ring_empty = match self.ring.get() {
            Some(r) => r.is_empty(),
            None => true,
        };
        ring_empty && self.overflow.is_empty()
    }
    pub(crate) fn len(&self) -> usize {
        self.ring.get().map_or(0, |r| r.len()) + self.overflow.len()
    }
}
