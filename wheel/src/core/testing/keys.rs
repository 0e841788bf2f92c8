//! [`KeyBook`]: the keys a harness was handed, live and stale, so that
//! operations can aim at either on purpose (shared by the wheel's and the
//! `DelayQueue`'s harnesses).

use super::ops::Pick;

/// `KeyBook::pos` of an id that is no longer live.
const GONE: usize = usize::MAX;

/// Every key a harness was handed, by id (ids are dense, in insert order):
/// which ids are still live and which keys went stale, so that operations
/// can aim at either on purpose.
pub(crate) struct KeyBook<K> {
    keys: Vec<K>,
    /// Index of each id in `live`, or `GONE`.
    pos: Vec<usize>,
    live: Vec<u64>,
    stale: Vec<K>,
}

impl<K: Copy> KeyBook<K> {
    pub(crate) fn new() -> Self {
        KeyBook {
            keys: Vec::new(),
            pos: Vec::new(),
            live: Vec::new(),
            stale: Vec::new(),
        }
    }

    /// Records a new live key; returns its id.
    pub(crate) fn add(&mut self, key: K) -> u64 {
        let id = self.keys.len() as u64;
        self.keys.push(key);
        self.pos.push(self.live.len());
        self.live.push(id);
        id
    }

    /// The ids still live, in no particular order.
    pub(crate) fn live_ids(&self) -> &[u64] {
        &self.live
    }

    /// The keys gone stale, in the order they went.
    pub(crate) fn stale_keys(&self) -> &[K] {
        &self.stale
    }

    /// The key of `id`, live or stale.
    pub(crate) fn key(&self, id: u64) -> K {
        self.keys[id as usize]
    }

    /// `true` if `id` was handed out and is still live.
    pub(crate) fn is_live(&self, id: u64) -> bool {
        self.pos.get(id as usize).is_some_and(|&p| p != GONE)
    }

    /// A live or a stale key as asked (the other kind if there is none),
    /// with its id if it is live.
    pub(crate) fn pick(&self, pick: Pick) -> Option<(K, Option<u64>)> {
        let live = |i: u16| {
            (!self.live.is_empty()).then(|| {
                let id = self.live[usize::from(i) % self.live.len()];
                (self.keys[id as usize], Some(id))
            })
        };
        let stale = |i: u16| {
            (!self.stale.is_empty()).then(|| (self.stale[usize::from(i) % self.stale.len()], None))
        };
        match pick {
            Pick::Live(i) => live(i).or_else(|| stale(i)),
            Pick::Stale(i) => stale(i).or_else(|| live(i)),
        }
    }

    /// Moves a live id's key to the stale keys.
    pub(crate) fn retire(&mut self, id: u64) {
        let pos = self.pos[id as usize];
        debug_assert_ne!(pos, GONE);
        self.live.swap_remove(pos);
        if let Some(&moved) = self.live.get(pos) {
            self.pos[moved as usize] = pos;
        }
        self.pos[id as usize] = GONE;
        self.stale.push(self.keys[id as usize]);
    }
}
