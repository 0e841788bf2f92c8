//! [`SchedulerBuilder`]: the settings of a [`Scheduler`], checked and
//! turned into running threads by [`SchedulerBuilder::build`].

use std::time::Duration;

use crate::clock::{Clock, ManualClock, TimeBase, check_tick};
use crate::core::{Wheel, WheelConfig};
use crate::error::BuildError;
use crate::sync::{Arc, Parker};

use super::lanes::lane_count;
use super::threads::Outer;
use super::{DEFAULT_TICK, Scheduler, Shared};

/// Configures and starts a [`Scheduler`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::{ManualClock, Scheduler};
///
/// let scheduler = Scheduler::builder()
///     .tick(Duration::from_millis(1))
///     .workers(2)
///     .clock(ManualClock::new())
///     .max_pending(1_000)
///     .build()
///     .unwrap();
/// assert_eq!(scheduler.stats().workers, 2);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct SchedulerBuilder {
    tick: Duration,
    workers: Option<usize>,
    config: WheelConfig,
    clock: Clock,
    max_pending: Option<usize>,
    /// Whether the tick thread polls the clock before a due timer (see
    /// [`SchedulerBuilder::sleep_only`]).
    poll_before_due: bool,
}

impl Default for SchedulerBuilder {
    fn default() -> Self {
        SchedulerBuilder {
            tick: DEFAULT_TICK,
            workers: None,
            config: WheelConfig::default(),
            clock: Clock::System,
            max_pending: None,
            poll_before_due: true,
        }
    }
}

impl SchedulerBuilder {
    /// Sets the tick: the resolution of deadlines (they round up to it).
    /// Default: 50 µs.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = wheel::Scheduler::builder().tick(Duration::from_millis(1)).build().unwrap();
    /// assert_eq!(s.stats().tick, Duration::from_millis(1));
    /// ```
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Sets the number of worker threads. Default: the number of available
    /// cores (`std::thread::available_parallelism`, 1 if unknown).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = wheel::Scheduler::builder().workers(1).build().unwrap();
    /// assert_eq!(s.stats().workers, 1);
    /// ```
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }

    /// Sets the configuration of the timing wheel.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel::WheelConfig;
    /// let s = wheel::Scheduler::builder().wheel_config(WheelConfig::default()).build();
    /// assert!(s.is_ok());
    /// ```
    pub fn wheel_config(mut self, config: WheelConfig) -> Self {
        self.config = config;
        self
    }

    /// Uses a [`ManualClock`] instead of the system's monotonic clock: time
    /// moves only on [`ManualClock::advance`], which wakes the scheduler.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use wheel::{ManualClock, Scheduler};
    ///
    /// let clock = ManualClock::new();
    /// let s = Scheduler::builder().clock(clock.clone()).build().unwrap();
    /// let (tx, rx) = mpsc::channel();
    /// s.schedule(Duration::from_secs(48 * 3600), move || tx.send(()).unwrap()).unwrap();
    /// clock.advance(Duration::from_secs(48 * 3600));
    /// rx.recv().unwrap();
    /// ```
    pub fn clock(mut self, clock: ManualClock) -> Self {
        self.clock = Clock::Manual(clock);
        self
    }

    /// Caps the number of pending timers: once `n` are pending, `schedule*`
    /// returns [`ScheduleError::Full`](crate::ScheduleError::Full) until some
    /// fire or are cancelled. Default: unbounded.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{ScheduleError, Scheduler};
    /// let s = Scheduler::builder().max_pending(1).build().unwrap();
    /// let h = s.schedule(Duration::from_secs(60), || {}).unwrap();
    /// assert_eq!(s.schedule(Duration::from_secs(60), || {}).unwrap_err(), ScheduleError::Full);
    /// h.cancel();
    /// assert!(s.schedule(Duration::from_secs(60), || {}).is_ok());
    /// ```
    pub fn max_pending(mut self, n: usize) -> Self {
        self.max_pending = Some(n);
        self
    }

    /// The tick thread sleeps until each due tick instead of polling the
    /// clock for its last stretch, and no worker polls for the jobs: a
    /// timer then starts as late as a timed wake-up comes (tens of
    /// microseconds, more on a busy or virtual machine), and a scheduler
    /// with a timer due every millisecond or two keeps no thread spinning.
    /// For users whose own work after the timer takes far longer than
    /// that, such as the durable tier, whose closures call a store.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::Scheduler;
    ///
    /// let s = Scheduler::builder().sleep_only().build().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// s.schedule(Duration::from_millis(5), move || tx.send(()).unwrap()).unwrap();
    /// rx.recv().unwrap();
    /// s.shutdown();
    /// ```
    pub fn sleep_only(mut self) -> Self {
        self.poll_before_due = false;
        self
    }

    /// Starts the tick thread and the workers.
    ///
    /// # Errors
    ///
    /// [`BuildError::ZeroTick`], [`BuildError::TickTooLong`],
    /// [`BuildError::ZeroWorkers`], [`BuildError::ZeroMaxPending`] for bad
    /// settings; [`BuildError::Spawn`] if a thread cannot be started.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{BuildError, Scheduler};
    /// let err = Scheduler::builder().tick(Duration::ZERO).build().unwrap_err();
    /// assert!(matches!(err, BuildError::ZeroTick));
    /// ```
    pub fn build(self) -> Result<Scheduler, BuildError> {
        check_tick(self.tick)?;
        let workers = match self.workers {
            Some(0) => return Err(BuildError::ZeroWorkers),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let max_pending = match self.max_pending {
            Some(0) => return Err(BuildError::ZeroMaxPending),
            Some(n) => n,
            None => usize::MAX,
        };
        let time = TimeBase::new(self.clock, self.tick);
        let parker = Parker::new();
        let lanes = lane_count(std::thread::available_parallelism().map_or(1, |n| n.get()));
        let shared = Arc::new(Shared::new(
            time,
            lanes,
            workers,
            max_pending,
            self.poll_before_due,
            parker.unparker().clone(),
        ));
        let outer = Outer::new(shared);
        // From here on, an error drops `outer`, which shuts down and joins
        // whatever was started.
        outer.start(Wheel::<u64>::with_config(self.config), parker)?;
        Ok(Scheduler {
            outer: Arc::new(outer),
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::mpsc;
    use std::time::Instant;

    use super::*;

    #[test]
    fn a_sleep_only_scheduler_fires_every_timer_and_none_early() {
        let s = SchedulerBuilder::default()
            .workers(2)
            .sleep_only()
            .build()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let start = Instant::now();
        for i in 0..50u64 {
            let at = start + Duration::from_millis(1 + i / 2);
            let tx = tx.clone();
            s.schedule_at(at, move || tx.send((at, Instant::now())).unwrap())
                .unwrap();
        }
        for _ in 0..50 {
            let (due, ran) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
            assert!(ran >= due, "ran {:?} early", due - ran);
        }
        s.shutdown();
    }
}
