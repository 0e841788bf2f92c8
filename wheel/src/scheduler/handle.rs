//! [`TimerHandle`]: what `schedule*` returns, to cancel or reset one timer.
//!
//! A handle names its timer's slot by index and generation (see `slots/`),
//! so that it never touches a later occupant of the slot, and holds the
//! [`LaneRef`] of the lane the timer was scheduled on, so that its commands
//! reach the tick thread after the timer's insert.

use std::fmt;
use std::time::{Duration, Instant};

use crate::sync::Arc;

use super::lanes::LaneRef;

/// A handle to one scheduled timer: cancel it, move its deadline
/// ([`reset`](Self::reset) after a delay, [`reset_at`](Self::reset_at) an
/// instant), ask whether it is still pending.
///
/// A handle is a slot index plus a generation (16 bytes with the pointer to
/// the scheduler's shared state). Handles are cheap to clone; all clones
/// name the same timer. A handle whose timer is over (fired, cancelled, or
/// its slot reused by a later timer) is *stale*: every method answers
/// `false` and never touches another timer. Handles may outlive the
/// [`Scheduler`](crate::Scheduler).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::Scheduler;
///
/// let scheduler = Scheduler::new();
/// let handle = scheduler.schedule(Duration::from_secs(3600), || println!("late")).unwrap();
/// assert!(handle.is_active());
/// assert!(handle.cancel()); // the callback will never run
/// assert!(!handle.cancel()); // already cancelled
/// assert!(!handle.is_active());
/// ```
#[derive(Clone)]
pub struct TimerHandle {
    /// The engine, and the lane the timer was scheduled on.
    pub(crate) lane_ref: Arc<LaneRef>,
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl TimerHandle {
    /// Stops every future run of the timer. Returns `true` iff this call did
    /// so: for a one-shot timer, the callback never starts; for a repeating
    /// timer, no run starts after `cancel` returns (a run already in
    /// progress finishes). Exactly one of "a `cancel` returns true" and "the
    /// callback starts" happens for a one-shot timer.
    ///
    /// O(1), no allocation; callable from any thread, including from inside
    /// the timer's own callback. A timer still in its lane's outbox (its
    /// deadline not near yet) is cancelled there, under the lane's short
    /// lock, and its closure is dropped by this call; otherwise the
    /// closure is dropped within about a millisecond (by the tick thread),
    /// not at its deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let scheduler = wheel::Scheduler::new();
    /// let h = scheduler.schedule(Duration::from_secs(60), || unreachable!()).unwrap();
    /// assert!(h.cancel());
    /// ```
    pub fn cancel(&self) -> bool {
        let r = &self.lane_ref;
        r.shared.cancel(r.lane, self.index, self.generation)
    }

    /// Re-arms a timer that has not started so that it runs `delay` from now
    /// instead of at its current deadline. Returns `true` iff the timer had
    /// not started and will now run at the new deadline (never at the old
    /// one); `false` if it already started, finished or was cancelled.
    ///
    /// On a repeating timer it moves the next run (also while a run is in
    /// progress: the run after it then happens `delay` after the `reset`),
    /// and later runs follow at the period from there.
    ///
    /// O(1), no allocation, no system call in the common case (the lane's
    /// short lock while the timer waits in its outbox): suited to pushing
    /// back an idle timeout on every heartbeat.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let scheduler = wheel::Scheduler::new();
    /// let idle = scheduler.schedule(Duration::from_secs(30), || println!("idle")).unwrap();
    /// assert!(idle.reset(Duration::from_secs(30))); // heartbeat received
    /// idle.cancel();
    /// assert!(!idle.reset(Duration::from_secs(30)));
    /// ```
    pub fn reset(&self, delay: Duration) -> bool {
        let r = &self.lane_ref;
        let due = r.shared.time.due_after(delay);
        r.shared.reset(r.lane, self.index, self.generation, due)
    }

    /// Re-arms a timer that has not started so that it runs at `deadline`
    /// (never before; as soon as possible if `deadline` has passed) instead
    /// of at its current deadline. Returns `true` iff the timer had not
    /// started and will now run at the new deadline (never at the old one);
    /// `false` if it already started, finished or was cancelled. An instant
    /// too far away to represent is accepted and never fires.
    ///
    /// On a repeating timer it moves the next run (also while a run is in
    /// progress: the run after it then happens at `deadline`), and later
    /// runs follow at the period from there. O(1), no allocation, like
    /// [`reset`](Self::reset).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let scheduler = wheel::Scheduler::new();
    /// let close = scheduler.schedule(Duration::from_secs(30), || println!("closed")).unwrap();
    /// let end_of_day = Instant::now() + Duration::from_secs(8 * 3600);
    /// assert!(close.reset_at(end_of_day));
    /// close.cancel();
    /// assert!(!close.reset_at(end_of_day));
    /// ```
    pub fn reset_at(&self, deadline: Instant) -> bool {
        let r = &self.lane_ref;
        let due = r.shared.time.due_at(deadline);
        r.shared.reset(r.lane, self.index, self.generation, due)
    }

    /// `true` while the timer has a run that [`cancel`](Self::cancel) could
    /// still stop: a one-shot timer that has not started, or a repeating
    /// timer that has not been cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let scheduler = wheel::Scheduler::new();
    /// let h = scheduler.schedule_repeating(Duration::from_secs(1), || {}).unwrap();
    /// assert!(h.is_active());
    /// h.cancel();
    /// assert!(!h.is_active());
    /// ```
    pub fn is_active(&self) -> bool {
        self.lane_ref
            .shared
            .slots
            .is_active(self.index, self.generation)
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHandle")
            .field("index", &self.index)
            .field("generation", &self.generation)
            .field("active", &self.is_active())
            .finish()
    }
}
