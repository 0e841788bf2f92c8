//! A plain reference model of [`Wheel`](crate::Wheel) for differential tests
//! and fuzzing: a `BTreeMap` keyed by (effective deadline, sequence number).
//!
//! It is deliberately simple (O(log n) everything) so that it is obviously
//! right; the wheel must agree with it after every operation.

use std::collections::{BTreeMap, HashMap};

/// The reference model. Timers are named by a model id (the caller keeps the
/// mapping to the wheel's [`TimerKey`](crate::TimerKey)s).
#[derive(Debug, Default)]
pub struct Model<T> {
    now: u64,
    seq: u64,
    next_id: u64,
    order: BTreeMap<(u64, u64), u64>,
    live: HashMap<u64, (u64, u64, T)>,
}

impl<T> Model<T> {
    /// An empty model at time 0.
    pub fn new() -> Self {
        Model {
            now: 0,
            seq: 0,
            next_id: 0,
            order: BTreeMap::new(),
            live: HashMap::new(),
        }
    }

    /// The model's clock.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Number of pending timers.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// `true` if nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Adds a timer; returns its model id.
    pub fn insert(&mut self, deadline: u64, value: T) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let eff = deadline.max(self.now);
        self.seq += 1;
        self.order.insert((eff, self.seq), id);
        self.live.insert(id, (eff, self.seq, value));
        id
    }

    /// Removes a pending timer.
    pub fn cancel(&mut self, id: u64) -> Option<T> {
        let (eff, seq, value) = self.live.remove(&id)?;
        self.order.remove(&(eff, seq));
        Some(value)
    }

    /// Moves a pending timer to a new deadline (it goes behind any timer
    /// already due at the same tick).
    pub fn reset(&mut self, id: u64, deadline: u64) -> bool {
        let Some(entry) = self.live.get_mut(&id) else {
            return false;
        };
        self.order.remove(&(entry.0, entry.1));
        self.seq += 1;
        entry.0 = deadline.max(self.now);
        entry.1 = self.seq;
        self.order.insert((entry.0, entry.1), id);
        true
    }

    /// The effective deadline of a pending timer.
    pub fn deadline(&self, id: u64) -> Option<u64> {
        self.live.get(&id).map(|e| e.0)
    }

    /// Advances to `now` (never backwards) and returns the first due timer
    /// as (id, effective deadline, value).
    pub fn poll(&mut self, now: u64) -> Option<(u64, u64, T)> {
        self.now = self.now.max(now);
        let (&(eff, seq), &id) = self.order.iter().next()?;
        if eff > self.now {
            return None;
        }
        self.order.remove(&(eff, seq));
        let (_, _, value) = self.live.remove(&id).expect("order and live agree");
        Some((id, eff, value))
    }

    /// The earliest effective deadline, if any.
    pub fn earliest(&self) -> Option<u64> {
        self.order.keys().next().map(|k| k.0)
    }

    /// Removes everything, in deadline order.
    pub fn drain(&mut self) -> Vec<(u64, u64, T)> {
        let order = std::mem::take(&mut self.order);
        order
            .into_values()
            .map(|id| {
                let (eff, _, v) = self.live.remove(&id).expect("order and live agree");
                (id, eff, v)
            })
            .collect()
    }
}
