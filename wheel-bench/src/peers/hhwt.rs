//! `hierarchical_hash_wheel_timer` 1.x: its cancellable `QuadWheelWithOverflow`
//! (four byte-sized wheels plus an overflow list; entries are `Rc`s found by id
//! in a hash map, and the wheels hold `Weak`s, so cancel is a map removal and the
//! wheel slot is reclaimed lazily when its tick comes).
//!
//! Its API is relative (insert with a delay, `tick()` one millisecond at a time,
//! `skip(n)` over empty stretches as `can_skip()` allows), so this adapter keeps
//! the absolute time.

use super::TimerQueue;
use hierarchical_hash_wheel_timer::wheels::Skip;
use hierarchical_hash_wheel_timer::wheels::cancellable::QuadWheelWithOverflow;
use hierarchical_hash_wheel_timer::{IdOnlyTimerEntry, TimerError};
use std::time::Duration;

/// The hhwt cancellable quad wheel behind [`TimerQueue`].
pub struct HhwtQueue {
    wheel: QuadWheelWithOverflow<IdOnlyTimerEntry<u64>>,
    now: u64,
    /// Timers inserted at or before `now` (hhwt refuses a zero delay): due at the
    /// next `advance`.
    due_now: Vec<u64>,
}

impl HhwtQueue {
    /// An empty wheel at time 0.
    pub fn new() -> HhwtQueue {
        HhwtQueue {
            wheel: QuadWheelWithOverflow::new(),
            now: 0,
            due_now: Vec::new(),
        }
    }
}

impl Default for HhwtQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl TimerQueue for HhwtQueue {
    /// hhwt cancels by id.
    type Handle = u64;

    #[inline]
    fn insert(&mut self, deadline: u64, id: u64) -> u64 {
        let delay = Duration::from_millis(deadline.saturating_sub(self.now));
        match self.wheel.insert(IdOnlyTimerEntry { id, delay }) {
            Ok(()) => {}
            Err(TimerError::Expired(e)) => self.due_now.push(e.id),
            Err(TimerError::NotFound) => unreachable!("insert never reports NotFound"),
        }
        id
    }

    #[inline]
    fn cancel(&mut self, id: u64) -> Option<u64> {
        match self.wheel.cancel(&id) {
            Ok(()) => Some(id),
            Err(_) => {
                let at = self.due_now.iter().position(|&d| d == id)?;
                Some(self.due_now.swap_remove(at))
            }
        }
    }

    fn advance<F: FnMut(u64)>(&mut self, now: u64, mut fire: F) {
        for id in self.due_now.drain(..) {
            fire(id);
        }
        while self.now < now {
            let remaining = now - self.now;
            match self.wheel.can_skip() {
                Skip::None => {
                    for e in self.wheel.tick() {
                        fire(e.id);
                    }
                    self.now += 1;
                }
                Skip::Millis(n) => {
                    let n = u64::from(n).min(remaining);
                    self.wheel.skip(n as u32);
                    self.now += n;
                }
                Skip::Empty => {
                    // Nothing inside: all hhwt times are relative, so jumping is
                    // free (skip in u32-sized steps).
                    let n = remaining.min(u64::from(u32::MAX));
                    self.wheel.skip(n as u32);
                    self.now += n;
                }
            }
        }
    }
}
