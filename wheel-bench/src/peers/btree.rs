//! `std::collections::BTreeMap` keyed by (deadline, insertion sequence): the
//! obvious ordered-map timer. Cancel removes eagerly.

use super::TimerQueue;
use std::collections::BTreeMap;

/// A `BTreeMap` timer queue.
pub struct BTreeQueue {
    map: BTreeMap<(u64, u64), u64>,
    seq: u64,
}

impl BTreeQueue {
    /// An empty queue (a `BTreeMap` cannot be pre-sized).
    pub fn new() -> BTreeQueue {
        BTreeQueue {
            map: BTreeMap::new(),
            seq: 0,
        }
    }
}

impl Default for BTreeQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl TimerQueue for BTreeQueue {
    type Handle = (u64, u64);

    #[inline]
    fn insert(&mut self, deadline: u64, id: u64) -> (u64, u64) {
        self.seq += 1;
        let key = (deadline, self.seq);
        self.map.insert(key, id);
        key
    }

    #[inline]
    fn cancel(&mut self, handle: (u64, u64)) -> Option<u64> {
        self.map.remove(&handle)
    }

    fn advance<F: FnMut(u64)>(&mut self, now: u64, mut fire: F) {
        while let Some(entry) = self.map.first_entry() {
            if entry.key().0 > now {
                break;
            }
            fire(entry.remove());
        }
    }
}
