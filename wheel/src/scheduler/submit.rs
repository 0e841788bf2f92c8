//! The producer side: how callers hand timers to the tick thread, and when
//! they wake it.
//!
//! # Outboxes and commands
//!
//! Callers never touch the wheel. `schedule*` puts the new timer in the
//! outbox of the calling thread's *lane* (`Shared::lanes`; `outbox.rs`),
//! where it waits, on the producer's core, until the tick thread takes the
//! outbox: when the earliest timer in it is one take lead (a flush
//! interval) from its deadline, or when the outbox is full. `cancel` and
//! `reset` of a timer still there act on it in place, under the outbox's
//! lock, and send nothing.
//!
//! Everything else travels as a [`Command`] on the lane's command queue (a
//! lock-free MPMC FIFO queue, crossbeam's `SegQueue`): the `Cancel` or
//! `Reset` of a timer the tick thread has taken (on the lane recorded in
//! the handle), and workers' re-arms of repeating timers (on their own
//! lane); only the tick thread pops. `cancel` pushes nothing unless the
//! tick thread holds the entry (see `Cancelled` in `slots/transitions.rs`):
//! a timer taken but not yet applied has its slot freed at once and its
//! entry dropped when it is applied, and one with a worker is freed by the
//! worker. A handle's `Cancel`/`Reset` is sent only after its timer left
//! the outbox, and the tick thread applies everything it takes from an
//! outbox before it pops commands again, so it always holds a timer before
//! a command about it arrives. Across lanes there is no order, and none is
//! needed: the only cross-thread pair is a worker's `Rearm` against a
//! handle's `Cancel`/`Reset`, which the tick thread accepts in either order.
//!
//! # No lost wake-up
//!
//! The tick thread publishes in [`WakePlan`] the tick at which it will wake
//! (`planned`) and whether it is in a long sleep (`armed`), then issues a
//! `SeqCst` fence, then re-checks every lane's command queue and every
//! outbox's take-by tick, and only then parks.
//! A producer that lowered an outbox's take-by tick (an earlier deadline,
//! or a full outbox) issues a `SeqCst` fence, then reads `planned`, and
//! unparks the tick thread if the new take-by tick is earlier. A producer
//! that pushes a command issues a `SeqCst` fence, then reads
//! `planned`/`armed`, and unparks the tick thread if its deadline is
//! earlier than `planned` (or if `armed` was set and it is the one that
//! cleared it: a cancelled closure is then dropped promptly). A timer that
//! did not lower its outbox's take-by tick needs no fence and no check:
//! the tick thread takes the outbox by that tick anyway.
//!
//! This is the store-buffering (Dekker) pattern: with a `SeqCst` fence
//! between each side's write and read, the two fences are ordered, and the
//! side whose fence comes second sees the other side's write. So either the
//! tick thread's re-check sees the command or the lowered tick (and it does
//! not sleep), or the producer sees the plan (and unparks if needed). An
//! `unpark` before the `park` makes the `park` return, so an unpark is
//! never lost either. Modelled in `tests/loom_scheduler.rs`
//! (`no_lost_wakeup_*`).
//!
//! The shutdown check of `schedule*` needs no fence: the outbox's lock
//! orders it (see `outbox.rs`).
//!
//! While the tick thread is awake, `planned` is 0 and `armed` false, so
//! producers in a busy system make no system call at all.

use std::time::{Duration, Instant};

use crate::clock::NEVER;
use crate::error::ScheduleError;
use crate::sync::{Arc, AtomicBool, AtomicU64, Ordering, fence, thread_stripe};

use super::command::{Command, Every, Once, Task};
use super::handle::TimerHandle;
use super::lanes::{LaneRef, lane_of};
use super::slots::Cancelled;
use super::{Scheduler, Shared};

/// `planned` value while the tick thread is awake (no producer wakes it).
const AWAKE: u64 = 0;

/// The tick thread's published sleep plan (see the module docs).
pub(crate) struct WakePlan {
    /// The tick the tick thread will wake at; `AWAKE` while it runs.
    planned: AtomicU64,
    /// Set while the tick thread sleeps for long: the first command of any
    /// kind wakes it (so cancelled closures are freed promptly).
    armed: AtomicBool,
}

impl WakePlan {
    pub(crate) fn new() -> WakePlan {
        WakePlan {
            planned: AtomicU64::new(AWAKE),
            armed: AtomicBool::new(false),
        }
    }

    /// Tick thread: it is awake; producers need not wake it.
    pub(crate) fn awake(&self) {
        self.planned.store(AWAKE, Ordering::Relaxed);
        self.armed.store(false, Ordering::Relaxed);
    }

    /// Tick thread: publish the plan. The caller must re-check the command
    /// queue after this returns and before parking.
    pub(crate) fn publish(&self, wake_tick: u64, arm: bool) {
        self.planned.store(wake_tick, Ordering::SeqCst);
        self.armed.store(arm, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Producer, after pushing a command with deadline `tick` (use `NEVER`
    /// for commands without a deadline): whether it must unpark the tick
    /// thread.
    pub(crate) fn needs_wake(&self, tick: u64) -> bool {
        fence(Ordering::SeqCst);
        self.needs_wake_fenced(tick)
    }

    /// [`needs_wake`](Self::needs_wake) for a caller that has already
    /// issued a `SeqCst` fence after its push (a worker's re-arm shares
    /// one fence between its shutdown check and this one).
    pub(crate) fn needs_wake_fenced(&self, tick: u64) -> bool {
        self.sleeps_past(tick)
            || (self.armed.load(Ordering::SeqCst) && self.armed.swap(false, Ordering::SeqCst))
    }

    /// Producer, after lowering an outbox's take-by tick to `tick` and a
    /// `SeqCst` fence: whether the tick thread plans to sleep past it. A
    /// new timer never wakes an armed sleep otherwise: it waits in its
    /// outbox, not in a queue the tick thread must drain.
    pub(crate) fn sleeps_past(&self, tick: u64) -> bool {
        tick < self.planned.load(Ordering::SeqCst)
    }
}

impl Shared {
    /// Pushes `cmd` onto `lane` and wakes the tick thread if the plan says
    /// so.
    pub(crate) fn submit(&self, lane: usize, cmd: Command, tick: u64) {
        self.lanes[lane].commands.push(cmd);
        if self.wake_plan.needs_wake(tick) {
            self.unpark_ticker();
        }
    }

    /// Unparks the tick thread.
    pub(crate) fn unpark_ticker(&self) {
        self.ticker_unparker.unpark();
    }

    /// Reserves a pending place (bounded `max_pending` only), with
    /// rollback.
    fn reserve(&self) -> Result<(), ScheduleError> {
        let before = self.counters.pending.fetch_add(1, Ordering::Relaxed);
        if before >= self.max_pending {
            self.counters.pending.fetch_sub(1, Ordering::Relaxed);
            return Err(ScheduleError::Full);
        }
        Ok(())
    }

    /// The common schedule path (see the module docs and `docs/scheduler.md`),
    /// on the lane of `lane_ref`: the new timer goes to the lane's outbox.
    /// An associated function: loom's `Arc` cannot be a method receiver.
    pub(crate) fn schedule_entry(
        lane_ref: &Arc<LaneRef>,
        task: Box<dyn Task>,
        due: u64,
    ) -> Result<TimerHandle, ScheduleError> {
        let s: &Shared = &lane_ref.shared;
        let lane = lane_ref.lane;
        if s.shutdown.load(Ordering::Acquire) {
            return Err(ScheduleError::Shutdown);
        }
        let bounded = s.bounded();
        if bounded {
            s.reserve()?;
        }
        let take_by = s.take_by(s.time.tick_of_due(due));
        let placed = match s.lanes[lane].outbox.put(s, lane, task, due, take_by) {
            Ok(placed) => placed,
            Err((e, task)) => {
                drop(task);
                s.pending_over();
                return Err(e);
            }
        };
        if let Some(take_by) = placed.lowered {
            s.wake_for_take(take_by);
        }
        Ok(TimerHandle {
            lane_ref: lane_ref.clone(),
            index: placed.index,
            generation: placed.generation,
        })
    }

    /// After an outbox's take-by tick was lowered to `take_by`: wakes the
    /// tick thread if it plans to sleep past it. The `SeqCst` fence pairs
    /// with the one in `WakePlan::publish`: either the tick thread's
    /// re-check sees the lowered tick, or we see its plan here.
    fn wake_for_take(&self, take_by: u64) {
        fence(Ordering::SeqCst);
        if self.wake_plan.sleeps_past(take_by) {
            self.unpark_ticker();
        }
    }

    /// `TimerHandle::cancel` for a handle of `lane`.
    pub(crate) fn cancel(&self, lane: usize, index: u32, generation: u32) -> bool {
        // A timer not yet applied may still be in the outbox, at the
        // position its word names: cancelled there, its closure is dropped
        // here, and the tick thread never hears of it. (One look at the
        // word spares the lock otherwise.)
        if let Some(position) = self.slots.unapplied(index, generation) {
            let outbox = &self.lanes[lane].outbox;
            if let Some(waiting) = outbox.cancel(self, lane, position, index, generation) {
                self.pending_over();
                drop(waiting);
                return true;
            }
        }
        match self.slots.cancel(lane, index, generation) {
            None => false,
            Some(holder) => {
                self.count_cancel(lane);
                // Only an entry the tick thread holds needs a command: an
                // insert taken but not applied yet finds its slot gone when
                // it is applied, a worker finds the word cancelled when it
                // starts or finishes the run.
                if holder == Cancelled::WithTicker {
                    self.submit(lane, Command::Cancel { index, generation }, NEVER);
                }
                true
            }
        }
    }

    /// Counts a successful cancel of a timer of `lane`.
    fn count_cancel(&self, lane: usize) {
        self.lanes[lane]
            .counts
            .submit
            .cancelled
            .fetch_add(1, Ordering::Relaxed);
        self.pending_over();
    }

    /// `TimerHandle::reset`/`reset_at` for a handle of `lane`: the timer
    /// is now due at `due` (nanoseconds after the origin).
    pub(crate) fn reset(&self, lane: usize, index: u32, generation: u32, due: u64) -> bool {
        let tick = self.time.tick_of_due(due);
        if let Some(position) = self.slots.unapplied(index, generation) {
            let outbox = &self.lanes[lane].outbox;
            let take_by = self.take_by(tick);
            if let Some(lowered) = outbox.reset(position, index, generation, due, take_by) {
                if let Some(take_by) = lowered {
                    self.wake_for_take(take_by);
                }
                return true;
            }
        }
        match self.slots.reset(index, generation) {
            None => false,
            Some(seq) => {
                self.submit(
                    lane,
                    Command::Reset {
                        index,
                        generation,
                        seq,
                        due,
                    },
                    tick,
                );
                true
            }
        }
    }
}

impl Scheduler {
    /// The handle target of the calling thread's lane.
    fn lane_ref(&self) -> &Arc<LaneRef> {
        let refs = &self.outer.refs;
        &refs[lane_of(thread_stripe(), refs.len())]
    }

    /// Runs `f` once, `delay` from now, on a worker thread.
    ///
    /// The deadline is rounded up to the tick, so `f` never starts before
    /// `delay` has passed. A zero delay runs `f` as soon as possible;
    /// `Duration::MAX` (or any delay past the range of `Instant`) is
    /// accepted and never fires. Takes the calling thread's lane lock
    /// (uncontended unless threads share a lane); no system call unless the
    /// new deadline is earlier than the tick thread's planned wake-up.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Shutdown`] after [`shutdown`](Scheduler::shutdown),
    /// [`ScheduleError::Full`] when `max_pending` timers are pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    ///
    /// let scheduler = wheel::Scheduler::new();
    /// let (tx, rx) = mpsc::channel();
    /// scheduler.schedule(Duration::from_millis(1), move || tx.send(42).unwrap()).unwrap();
    /// assert_eq!(rx.recv().unwrap(), 42);
    /// ```
    pub fn schedule<F>(&self, delay: Duration, f: F) -> Result<TimerHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        let r = self.lane_ref();
        let due = r.shared.time.due_after(delay);
        Shared::schedule_entry(r, Box::new(Once(f)), due)
    }

    /// Runs `f` once at `at` (never before), on a worker thread. An instant
    /// in the past runs `f` as soon as possible; instants too far away to
    /// represent are accepted and never fire.
    ///
    /// # Errors
    ///
    /// As for [`schedule`](Scheduler::schedule).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::{Duration, Instant};
    ///
    /// let scheduler = wheel::Scheduler::new();
    /// let (tx, rx) = mpsc::channel();
    /// let at = Instant::now() + Duration::from_millis(2);
    /// scheduler.schedule_at(at, move || tx.send(Instant::now()).unwrap()).unwrap();
    /// assert!(rx.recv().unwrap() >= at);
    /// ```
    pub fn schedule_at<F>(&self, at: Instant, f: F) -> Result<TimerHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        let r = self.lane_ref();
        let due = r.shared.time.due_at(at);
        Shared::schedule_entry(r, Box::new(Once(f)), due)
    }

    /// Runs `f` every `period`, first `period` from now, on worker threads,
    /// until the handle is cancelled.
    ///
    /// Fixed rate: the n-th run is due at `start + n * period` (no drift).
    /// A run never overlaps the previous run of the same timer. Runs that
    /// are missed because a run or the machine was slow are not burst:
    /// they collapse into one late run, started as soon as possible, and
    /// the run after it is the first one due after that late run started.
    /// A run that panics stops the timer.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::ZeroPeriod`] for a zero period, otherwise as for
    /// [`schedule`](Scheduler::schedule).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    ///
    /// let scheduler = wheel::Scheduler::new();
    /// let (tx, rx) = mpsc::channel();
    /// let handle = scheduler
    ///     .schedule_repeating(Duration::from_millis(1), move || { let _ = tx.send(()); })
    ///     .unwrap();
    /// rx.recv().unwrap();
    /// rx.recv().unwrap();
    /// assert!(handle.cancel());
    /// ```
    pub fn schedule_repeating<F>(
        &self,
        period: Duration,
        f: F,
    ) -> Result<TimerHandle, ScheduleError>
    where
        F: FnMut() + Send + 'static,
    {
        if period.is_zero() {
            return Err(ScheduleError::ZeroPeriod);
        }
        let r = self.lane_ref();
        let period_nanos = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
        let due = r.shared.time.due_after(period);
        Shared::schedule_entry(
            r,
            Box::new(Every {
                f,
                period: period_nanos,
                due,
            }),
            due,
        )
    }
}

/// The due time of the next run of a fixed-rate timer whose run due at
/// `prev` started at `started` (all nanoseconds after the origin).
///
/// `prev + k * period` for the smallest `k >= 1` with a result strictly
/// after `started`: the run that started covers every run due up to its
/// start, so runs missed while it waited or ran are skipped, and a run due
/// while it ran comes once, late, as soon as it is re-armed. Saturates at
/// `u64::MAX` (never).
pub(crate) fn next_fixed_rate(prev: u64, period: u64, started: u64) -> u64 {
    debug_assert!(period > 0);
    let period = period.max(1);
    let first = match prev.checked_add(period) {
        Some(v) => v,
        None => return u64::MAX,
    };
    if first > started {
        return first;
    }
    // Missed: k = floor((started - prev) / period) + 1.
    let k = u128::from((started - prev) / period) + 1;
    u128::from(prev)
        .checked_add(k * u128::from(period))
        .and_then(|v| u64::try_from(v).ok())
        .unwrap_or(u64::MAX)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::next_fixed_rate;

    #[test]
    fn fixed_rate_boundaries() {
        // On time: next is prev + period.
        assert_eq!(next_fixed_rate(100, 10, 100), 110);
        assert_eq!(next_fixed_rate(100, 10, 109), 110);
        // A run that started when the next was due covers it.
        assert_eq!(next_fixed_rate(100, 10, 110), 120);
        // Missed runs are skipped; phase is kept.
        assert_eq!(next_fixed_rate(100, 10, 111), 120);
        assert_eq!(next_fixed_rate(100, 10, 119), 120);
        assert_eq!(next_fixed_rate(100, 10, 145), 150);
        // A start before the due time (never happens) still moves on.
        assert_eq!(next_fixed_rate(100, 10, 0), 110);
        // Saturation.
        assert_eq!(next_fixed_rate(u64::MAX - 5, 10, 0), u64::MAX);
        assert_eq!(next_fixed_rate(0, u64::MAX, 0), u64::MAX);
        assert_eq!(next_fixed_rate(0, u64::MAX / 2 + 1, u64::MAX), u64::MAX);
        assert_eq!(next_fixed_rate(0, 1, u64::MAX), u64::MAX);
        assert_eq!(next_fixed_rate(0, 1, u64::MAX - 1), u64::MAX);
    }
}
