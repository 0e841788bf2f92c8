//! The producer side: what callers send to the tick thread, and when they
//! wake it.
//!
//! # Commands
//!
//! Callers never touch the wheel. `schedule*`, `cancel` and `reset` push a
//! [`Command`] onto one lock-free MPMC FIFO queue (`crate::sync::Queue`,
//! crossbeam's `SegQueue`); workers push re-arms of repeating timers onto
//! the same queue; only the tick thread pops. Because a handle is returned
//! only after its insert was pushed, and the queue is linearizable FIFO, the
//! tick thread always sees a timer's `Insert` before any `Cancel`/`Reset`
//! sent through one of its handles.
//!
//! # No lost wake-up
//!
//! The tick thread publishes in [`WakePlan`] the tick at which it will wake
//! (`planned`) and whether it is in a long sleep (`armed`), then issues a
//! `SeqCst` fence, then re-checks the command queue, and only then parks.
//! A producer pushes its command, issues a `SeqCst` fence, then reads
//! `planned`/`armed`, and unparks the tick thread if its deadline is earlier
//! than `planned` (or if `armed` was set and it is the one that cleared it).
//!
//! This is the store-buffering (Dekker) pattern: with a `SeqCst` fence
//! between each side's write and read, the two fences are ordered, and the
//! side whose fence comes second sees the other side's write. So either the
//! tick thread's re-check sees the command (and it does not sleep), or the
//! producer sees the plan (and unparks if needed). An `unpark` before the
//! `park` makes the `park` return, so an unpark is never lost either.
//! Modelled in `tests/loom_scheduler.rs` (`no_lost_wakeup`).
//!
//! While the tick thread is awake, `planned` is 0 and `armed` false, so
//! producers in a busy system make no system call at all.

use std::time::{Duration, Instant};

use crate::error::ScheduleError;
use crate::sync::{fence, Arc, AtomicBool, AtomicU64, Ordering};

use super::handle::TimerHandle;
use super::{Scheduler, Shared};

/// Deadline tick meaning "never": Duration::MAX, instants that overflow.
/// The tick thread never advances its wheel to this tick.
pub(crate) const NEVER: u64 = u64::MAX;

/// `planned` value while the tick thread is awake (no producer wakes it).
const AWAKE: u64 = 0;

/// A timer's callback, type-erased. One-shot closures are wrapped in
/// [`Once`], repeating ones in [`Every`].
pub(crate) trait Task: Send {
    /// Runs the callback (a one-shot closure runs at most once).
    fn run(&mut self);
    /// The period in nanoseconds; 0 for a one-shot timer.
    fn period(&self) -> u64;
}

/// A one-shot closure.
pub(crate) struct Once<F>(pub(crate) Option<F>);

impl<F: FnOnce() + Send> Task for Once<F> {
    fn run(&mut self) {
        if let Some(f) = self.0.take() {
            f()
        }
    }
    fn period(&self) -> u64 {
        0
    }
}

/// A repeating closure and its period (nanoseconds, at least 1).
pub(crate) struct Every<F> {
    pub(crate) f: F,
    pub(crate) period: u64,
}

impl<F: FnMut() + Send> Task for Every<F> {
    fn run(&mut self) {
        (self.f)()
    }
    fn period(&self) -> u64 {
        self.period
    }
}

/// A timer's entry: its closure and where it belongs. Owned by exactly one
/// place at a time: a command in the queue, the tick thread's wheel, the
/// worker queue, or a worker.
pub(crate) struct Entry {
    pub(crate) task: Box<dyn Task>,
    /// Slot index.
    pub(crate) index: u32,
    /// The reset sequence this entry is armed for (see `handle.rs`).
    pub(crate) seq: u32,
    /// Requested instant, nanoseconds after the scheduler's origin;
    /// `u64::MAX` for never.
    pub(crate) due: u64,
}

/// What the tick thread is asked to do.
pub(crate) enum Command {
    /// A new timer: put it in the wheel at `entry.due`.
    Insert(Entry),
    /// A repeating timer whose run just ended: schedule its next run.
    Rearm(Entry),
    /// A handle cancelled this timer: drop its entry now.
    Cancel { index: u32, gen: u32 },
    /// A handle reset this timer to `due`; valid only if the slot still
    /// carries `seq`.
    Reset {
        index: u32,
        gen: u32,
        seq: u32,
        due: u64,
    },
}

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
        tick < self.planned.load(Ordering::SeqCst)
            || (self.armed.load(Ordering::SeqCst) && self.armed.swap(false, Ordering::SeqCst))
    }

    /// The currently published wake tick (for tests and stats).
    #[allow(dead_code)]
    pub(crate) fn planned(&self) -> u64 {
        self.planned.load(Ordering::SeqCst)
    }
}

impl Shared {
    /// Pushes `cmd` and wakes the tick thread if the plan says so.
    pub(crate) fn submit(&self, cmd: Command, tick: u64) {
        self.commands.push(cmd);
        if self.wake.needs_wake(tick) {
            self.unpark_ticker();
        }
    }

    /// Unparks the tick thread.
    pub(crate) fn unpark_ticker(&self) {
        self.ticker.unpark();
    }

    /// Deadline in nanoseconds after the origin for "`delay` from now";
    /// `u64::MAX` (never) if it overflows.
    fn due_after(&self, delay: Duration) -> u64 {
        match self.clock.now().checked_add(delay) {
            Some(at) => self.due_at(at),
            None => u64::MAX,
        }
    }

    /// Deadline in nanoseconds after the origin for `at` (0 if earlier).
    fn due_at(&self, at: Instant) -> u64 {
        self.conv.nanos_of(at)
    }

    /// The wheel tick for a due time (rounded up: never early).
    pub(crate) fn tick_of(&self, due: u64) -> u64 {
        if due == u64::MAX {
            NEVER
        } else {
            self.conv.tick_of_nanos(due)
        }
    }

    /// Reserves a pending place (for `max_pending`), with rollback.
    fn reserve(&self) -> Result<(), ScheduleError> {
        let before = self.counters.pending.fetch_add(1, Ordering::Relaxed);
        if before >= self.max_pending {
            self.counters.pending.fetch_sub(1, Ordering::Relaxed);
            return Err(ScheduleError::Full);
        }
        Ok(())
    }

    /// The common schedule path (see the module docs and `docs/scheduler.md`).
    /// An associated function: loom's `Arc` cannot be a method receiver.
    pub(crate) fn schedule_entry(
        this: &Arc<Self>,
        task: Box<dyn Task>,
        due: u64,
    ) -> Result<TimerHandle, ScheduleError> {
        let s: &Shared = this;
        if s.shutdown.load(Ordering::Acquire) {
            return Err(ScheduleError::Shutdown);
        }
        s.reserve()?;
        let repeat = task.period() != 0;
        let Some((index, gen)) = s.slots.alloc(repeat) else {
            s.counters.pending.fetch_sub(1, Ordering::Relaxed);
            return Err(ScheduleError::Full);
        };
        let tick = s.tick_of(due);
        s.commands.push(Command::Insert(Entry {
            task,
            index,
            seq: 0,
            due,
        }));
        // Pairs with the fence in `shutdown`: either the tick thread's final
        // drain sees this insert, or we see the flag here and take the
        // timer back (or learn that the tick thread already handled it).
        fence(Ordering::SeqCst);
        if s.shutdown.load(Ordering::SeqCst) {
            if s.slots.cancel(index, gen).is_some() {
                s.counters.pending.fetch_sub(1, Ordering::Relaxed);
                s.unpark_ticker();
                return Err(ScheduleError::Shutdown);
            }
        } else if s.wake.needs_wake(tick) {
            s.unpark_ticker();
        }
        s.counters.scheduled.fetch_add(1, Ordering::Relaxed);
        Ok(TimerHandle {
            shared: this.clone(),
            index,
            gen,
        })
    }

    /// `TimerHandle::cancel`.
    pub(crate) fn cancel(&self, index: u32, gen: u32) -> bool {
        match self.slots.cancel(index, gen) {
            None => false,
            Some(was_running) => {
                self.counters.pending.fetch_sub(1, Ordering::Relaxed);
                self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
                if !was_running {
                    // A queued or running timer's entry is with a worker,
                    // which releases it; otherwise the tick thread frees it.
                    self.submit(Command::Cancel { index, gen }, NEVER);
                }
                true
            }
        }
    }

    /// `TimerHandle::reset`.
    pub(crate) fn reset(&self, index: u32, gen: u32, delay: Duration) -> bool {
        let due = self.due_after(delay);
        match self.slots.reset(index, gen) {
            None => false,
            Some(seq) => {
                let tick = self.tick_of(due);
                self.submit(
                    Command::Reset {
                        index,
                        gen,
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
    /// Runs `f` once, `delay` from now, on a worker thread.
    ///
    /// The deadline is rounded up to the tick, so `f` never starts before
    /// `delay` has passed. A zero delay runs `f` as soon as possible;
    /// `Duration::MAX` (or any delay past the range of `Instant`) is
    /// accepted and never fires. Lock-free; no system call unless the new
    /// deadline is earlier than the tick thread's planned wake-up.
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
        let shared = &self.outer.shared;
        let due = shared.due_after(delay);
        Shared::schedule_entry(shared, Box::new(Once(Some(f))), due)
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
        let shared = &self.outer.shared;
        let due = shared.due_at(at);
        Shared::schedule_entry(shared, Box::new(Once(Some(f))), due)
    }

    /// Runs `f` every `period`, first `period` from now, on worker threads,
    /// until the handle is cancelled.
    ///
    /// Fixed rate: the n-th run is due at `start + n * period` (no drift).
    /// A run never overlaps the previous run of the same timer. Runs that
    /// are missed because a run or the machine was slow are skipped, not
    /// burst: the next run is the first one still due in the future (or due
    /// exactly now). A run that panics stops the timer.
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
        let shared = &self.outer.shared;
        let period_nanos = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
        let due = shared.due_after(period);
        Shared::schedule_entry(
            shared,
            Box::new(Every {
                f,
                period: period_nanos,
            }),
            due,
        )
    }
}

/// The due time of the next run of a fixed-rate timer whose previous run
/// was due at `prev`, seen at `now` (all nanoseconds after the origin).
///
/// `prev + k * period` for the smallest `k >= 1` with a result `>= now`:
/// runs due strictly before `now` were missed and are skipped. Saturates at
/// `u64::MAX` (never).
pub(crate) fn next_fixed_rate(prev: u64, period: u64, now: u64) -> u64 {
    debug_assert!(period > 0);
    let first = match prev.checked_add(period) {
        Some(v) => v,
        None => return u64::MAX,
    };
    if first >= now {
        return first;
    }
    // Missed: k = ceil((now - prev) / period).
    let k = (now - prev).div_ceil(period);
    u128::from(prev)
        .checked_add(u128::from(k) * u128::from(period))
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
        assert_eq!(
            next_fixed_rate(100, 10, 110),
            110,
            "due exactly now is kept"
        );
        // One missed run is skipped; phase is kept.
        assert_eq!(next_fixed_rate(100, 10, 111), 120);
        assert_eq!(next_fixed_rate(100, 10, 120), 120);
        assert_eq!(next_fixed_rate(100, 10, 145), 150);
        // Saturation.
        assert_eq!(next_fixed_rate(u64::MAX - 5, 10, 0), u64::MAX);
        assert_eq!(next_fixed_rate(0, u64::MAX, 0), u64::MAX);
        assert_eq!(next_fixed_rate(0, u64::MAX / 2 + 1, u64::MAX), u64::MAX);
        assert_eq!(next_fixed_rate(0, 1, u64::MAX), u64::MAX);
    }
}
