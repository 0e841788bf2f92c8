//! What a [`DelayQueue`](super::DelayQueue) keeps behind its *state lock*,
//! and the operations on it.
//!
//! The shared methods run these operations under the lock;
//! [`DelayQueueMut`](super::DelayQueueMut) runs the very same ones with no
//! lock (its `&mut` borrow excludes every other user), so both behave
//! alike.
//!
//! # Invariants
//!
//! - Every item leaves the wheel exactly once, under the state lock (or
//!   the exclusive borrow), through `take*`, `remove` or `drain`.
//! - If a blocking taker waits (`waiters > 0`) and an item is pending, then
//!   either a leader is asleep with a wake-up no later than the earliest
//!   item's tick (`leader_at`), or a notification is in flight (the
//!   signal's epoch was bumped under the state lock). An operation that
//!   makes an item due earlier than the leader's wake-up deposes the leader
//!   (`leader = 0`) and bumps the epoch ([`State::came_earlier`]).
//! - `async_waiting`/`async_at` mirror the signal's async registrations:
//!   whenever an async taker is registered, `async_waiting` is true and
//!   `async_at` equals the helper's deadline, so an insert that comes due
//!   earlier is always passed on to the helper.

use std::time::Instant;

use super::signal::Signal;
use super::{Closed, DelayKey};
use crate::clock::{NEVER, TimeBase};
use crate::core::{Expired as Entry, Tuning, Wheel, WheelConfig};
use crate::sync::Arc;

/// What the state lock guards.
pub(super) struct State<T> {
    /// The items, at their ticks. Each leaves exactly once.
    pub(super) wheel: Wheel<T>,
    /// Set once by `close`; never cleared.
    pub(super) closed: bool,
    /// Blocking takers between deciding to sleep and re-taking the lock.
    pub(super) waiters: usize,
    /// Token of the leader (0: none).
    pub(super) leader: u64,
    /// The tick the leader plans to wake at.
    pub(super) leader_at: u64,
    /// Last leader token handed out.
    pub(super) tokens: u64,
    /// Mirror of "the signal has async takers registered".
    pub(super) async_waiting: bool,
    /// Mirror of the helper's deadline while `async_waiting`.
    pub(super) async_at: u64,
}

/// The operations that [`DelayQueue`](super::DelayQueue) runs under its
/// lock and [`DelayQueueMut`](super::DelayQueueMut) runs with no lock (its `&mut` borrow excludes every
/// other user), written once so that both behave alike. Those that can make
/// an item due earlier (`add`, `reset`) also return whether a blocked taker
/// must be woken; the caller wakes it, after releasing the lock.
impl<T> State<T> {
    /// An open queue with room for `capacity` items, no taker waiting.
    pub(super) fn new(capacity: usize, tuning: Tuning) -> State<T> {
        State {
            wheel: Wheel::build(WheelConfig::default(), capacity, tuning),
            closed: false,
            waiters: 0,
            leader: 0,
            leader_at: NEVER,
            tokens: 0,
            async_waiting: false,
            async_at: NEVER,
        }
    }

    /// Adds an item, or hands the value back in [`Closed`] if the queue
    /// was closed.
    #[inline]
    pub(super) fn add(
        &mut self,
        signal: &Arc<Signal>,
        value: T,
        tick: u64,
    ) -> Result<(DelayKey, bool), Closed<T>> {
        if self.closed {
            return Err(Closed(value));
        }
        let key = self.wheel.insert(tick, value);
        let due_tick = tick.max(self.wheel.now());
        Ok((DelayKey(key), self.came_earlier(signal, due_tick)))
    }

    #[inline]
    pub(super) fn remove(&mut self, key: DelayKey) -> Option<T> {
        self.wheel.cancel(key.0)
    }

    /// Returns whether `key` was found, and whether to wake a taker.
    pub(super) fn reset(&mut self, signal: &Arc<Signal>, key: DelayKey, tick: u64) -> (bool, bool) {
        if !self.wheel.reset(key.0, tick) {
            return (false, false);
        }
        let due_tick = tick.max(self.wheel.now());
        (true, !self.closed && self.came_earlier(signal, due_tick))
    }

    /// The earliest due item with its key and tick; `None` if nothing is
    /// due or the queue is closed.
    pub(super) fn try_take(&mut self, time: &TimeBase) -> Option<Entry<T>> {
        if self.closed {
            return None;
        }
        self.poll_due(time).ok()
    }

    /// Takes the earliest due item (with its key and tick), or returns the
    /// instant read from the clock. Tries the tick the wheel already
    /// reached before reading the clock, so a backlog of due items is
    /// handed out without clock reads.
    pub(super) fn poll_due(&mut self, time: &TimeBase) -> Result<Entry<T>, Instant> {
        let reached = self.wheel.now();
        if let Some(e) = self.wheel.poll(reached) {
            return Ok(e);
        }
        let now = time.now();
        match self.wheel.poll(time.conv().now_tick(now)) {
            Some(e) => Ok(e),
            None => Err(now),
        }
    }

    /// The instant the item of `key` is due (its tick's start); `None` if
    /// the key is stale or the item never comes due.
    pub(super) fn deadline(&self, time: &TimeBase, key: DelayKey) -> Option<Instant> {
        let tick = self.wheel.deadline(key.0)?;
        time.conv().instant_of(tick)
    }

    /// The key of the item due first (see `Wheel::earliest`).
    pub(super) fn peek(&self) -> Option<DelayKey> {
        self.wheel.earliest().map(DelayKey)
    }

    /// Takes every item out, for the caller to drop (outside the lock).
    pub(super) fn clear(&mut self) -> Vec<T> {
        self.wheel.drain().map(|e| e.value).collect()
    }

    /// An item is now due at `tick`: tells the helper if async takers wait
    /// for something later, and returns whether a blocked taker must be
    /// woken (then the leader is deposed and the epoch bumped).
    ///
    /// `signal` stays an `&Arc`, dereferenced only on those rare paths: as
    /// a `&Signal`, every insert would load the pointer up front.
    fn came_earlier(&mut self, signal: &Arc<Signal>, tick: u64) -> bool {
        if self.async_waiting && tick < self.async_at {
            match signal.lower_deadline(tick) {
                Some(d) => self.async_at = d,
                None => self.async_waiting = false,
            }
        }
        if self.waiters > 0 && (self.leader == 0 || tick < self.leader_at) {
            self.leader = 0;
            signal.bump();
            true
        } else {
            false
        }
    }
}
