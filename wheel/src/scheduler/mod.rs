//! The [`Scheduler`]: run closures later, from any thread, cheaply.
//!
//! # Architecture
//!
//! Data flows one way:
//!
//! ```text
//!  callers ──schedule/cancel/reset──▶ command queue ──▶ tick thread ──▶ job queue ──▶ workers
//!     │                                   ▲             (owns Wheel)                   │
//!     └──── TimerHandle: CAS on the slot's state word ─────────────────────────────────┘
//!                                         └────────────── re-arm (repeating) ──────────┘
//! ```
//!
//! - `handle.rs`: the slot table (one atomic state word per timer) and
//!   [`TimerHandle`]; the linearization points of cancel, reset and firing.
//! - `submit.rs`: commands, the producer paths and the no-lost-wake-up
//!   protocol with the tick thread.
//! - lanes (this file): per-thread stripes of the producer-side state
//!   (command queue, free slots, counters, handle reference count), so
//!   that producers on different cores write disjoint cache lines.
//! - `ticker.rs`: the tick thread (the only owner of the [`Wheel`]).
//! - `workers.rs`: the worker pool that runs callbacks.
//!
//! # Ownership of the shared state
//!
//! [`Shared`] is held (through `Arc`) by the tick thread, the workers and
//! every [`TimerHandle`]. The [`Scheduler`] clones share an `Outer` that
//! also holds the thread handles; dropping the last clone drops `Outer`,
//! whose `Drop` shuts down. Threads never hold `Outer`, so they never keep
//! the engine alive. The full design and the proofs are in
//! `docs/scheduler.md`.
//!
//! [`Wheel`]: crate::Wheel

mod handle;
mod submit;
mod ticker;
mod workers;

use std::fmt;
use std::time::Duration;

pub use self::handle::TimerHandle;

use crate::clock::{check_tick, Clock, ManualClock, TimeBase};
use crate::core::{Wheel, WheelConfig};
use crate::error::BuildError;
use crate::sync::{
    fence, lock, thread, thread_stripe, try_lock, Arc, AtomicBool, AtomicU64, AtomicUsize,
    CachePadded, Mutex, OnceLock, Ordering, Parker, Queue, Unparker,
};

use self::handle::SlotTable;
use self::submit::{Command, WakePlan};
use self::ticker::Ticker;
use self::workers::Pool;

/// The default tick: 50 µs. Deadlines round up to the tick, so this bounds
/// the rounding part of the lateness; the wheel makes ticks cheap and the
/// tick thread wakes only when something is due, so a fine tick costs no
/// idle CPU. See `docs/scheduler.md` for the choice.
pub(crate) const DEFAULT_TICK: Duration = Duration::from_micros(50);

/// Scheduler-wide counters (relaxed atomics), written off the producer
/// hot path.
pub(crate) struct Counters {
    /// Exact count of pending timers; maintained only when `max_pending`
    /// is bounded (it is the admission check). Unbounded schedulers derive
    /// `Stats::pending` from the lane counters instead.
    pub(crate) pending: AtomicUsize,
    pub(crate) dropped: AtomicU64,
    /// Nanoseconds.
    pub(crate) max_lateness: AtomicU64,
    /// The tick the wheel has been advanced to.
    pub(crate) reached_tick: AtomicU64,
}

/// One lane: a command queue and a stripe of counters, on its own cache
/// lines. A thread uses lane `thread_stripe() % lanes` (see
/// [`lane_count`]); a handle sends its commands to the lane its timer was
/// scheduled on. Lanes exist so that producers on different cores never
/// write the same cache line: each has its own queue tail, free list
/// (in [`SlotTable`]), counters and handle reference count ([`LaneRef`]).
pub(crate) struct Lane {
    pub(crate) commands: Queue<Command>,
    pub(crate) counts: CachePadded<LaneCounts>,
}

/// A lane's stripe of the statistics. `Stats` sums the stripes.
pub(crate) struct LaneCounts {
    /// Timers accepted by `schedule*` on this lane.
    pub(crate) scheduled: AtomicU64,
    /// Successful `cancel`s of handles of this lane.
    pub(crate) cancelled: AtomicU64,
    /// Timers over for another reason than `cancel` or shutdown: one-shot
    /// timers that started, repeating timers stopped by a worker.
    pub(crate) ended: AtomicU64,
    /// Runs started.
    pub(crate) fired: AtomicU64,
    /// Callbacks that panicked.
    pub(crate) panicked: AtomicU64,
}

impl LaneCounts {
    fn new() -> LaneCounts {
        LaneCounts {
            scheduled: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            fired: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
        }
    }
}

/// What a [`TimerHandle`] points to: the engine and the lane its commands
/// go to. Each lane has one `Arc<LaneRef>` (kept by the `Scheduler`), so
/// the reference count touched by every handle clone and drop is per lane,
/// not one line shared by all producers.
pub(crate) struct LaneRef {
    pub(crate) shared: Arc<Shared>,
    pub(crate) lane: usize,
}

/// Number of lanes for a machine with `cores` cores: a power of two of at
/// least four per core, so that the round-robin stripes of the producers,
/// workers and callers rarely collide; at least 8, at most 64.
pub(crate) fn lane_count(cores: usize) -> usize {
    #[cfg(loom)]
    {
        let _ = cores;
        2
    }
    #[cfg(not(loom))]
    {
        cores
            .saturating_mul(4)
            .clamp(MIN_LANES, MAX_LANES)
            .next_power_of_two()
    }
}

/// Fewest lanes (see [`lane_count`]).
#[cfg(not(loom))]
const MIN_LANES: usize = 8;
/// Most lanes (see [`lane_count`]).
#[cfg(not(loom))]
const MAX_LANES: usize = 64;

/// State shared by callers, handles, the tick thread and the workers.
pub(crate) struct Shared {
    pub(crate) slots: SlotTable,
    pub(crate) lanes: Box<[Lane]>,
    pub(crate) wake: WakePlan,
    pub(crate) pool: Pool,
    pub(crate) counters: Counters,
    /// The clock, the origin and the tick: due times and ticks.
    pub(crate) time: TimeBase,
    pub(crate) max_pending: usize,
    /// Set once by `shutdown`; never cleared.
    pub(crate) shutdown: AtomicBool,
    /// Set by the tick thread after its final drain.
    pub(crate) ticker_done: AtomicBool,
    /// Wakes the tick thread.
    pub(crate) ticker: Unparker,
    /// The worker threads (to recognise a call from inside a callback).
    pub(crate) worker_ids: OnceLock<Vec<thread::ThreadId>>,
    workers: usize,
}

impl Shared {
    /// Whether `max_pending` is bounded (then `counters.pending` is kept).
    pub(crate) fn bounded(&self) -> bool {
        self.max_pending != usize::MAX
    }

    /// The lane of the calling thread.
    pub(crate) fn my_lane(&self) -> usize {
        thread_stripe() % self.lanes.len()
    }

    /// Whether every lane's command queue is empty.
    pub(crate) fn commands_empty(&self) -> bool {
        self.lanes.iter().all(|l| l.commands.is_empty())
    }

    /// Records that a timer is over for another reason than a `cancel` or
    /// shutdown (a one-shot started, a repeating timer was stopped).
    pub(crate) fn timer_ended(&self, lane: usize) {
        self.lanes[lane]
            .counts
            .ended
            .fetch_add(1, Ordering::Relaxed);
        if self.bounded() {
            self.counters.pending.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Timers scheduled and not over, derived from the lane counters
    /// (counters that only grow are summed before `scheduled`, so a timer
    /// that is scheduled and ends during the snapshot is at worst counted
    /// as pending, never as a negative).
    fn derived_pending(&self) -> usize {
        let mut over = self.counters.dropped.load(Ordering::Relaxed);
        for l in self.lanes.iter() {
            over = over
                .wrapping_add(l.counts.cancelled.load(Ordering::Relaxed))
                .wrapping_add(l.counts.ended.load(Ordering::Relaxed));
        }
        let scheduled: u64 = self
            .lanes
            .iter()
            .map(|l| l.counts.scheduled.load(Ordering::Relaxed))
            .sum();
        usize::try_from(scheduled.saturating_sub(over)).unwrap_or(usize::MAX)
    }
}

/// Join handles, taken by whichever `shutdown` joins them.
struct Threads {
    ticker: Option<thread::JoinHandle<()>>,
    workers: Vec<thread::JoinHandle<()>>,
}

/// What the `Scheduler` clones share; its `Drop` shuts down.
struct Outer {
    shared: Arc<Shared>,
    /// One handle target per lane (see [`LaneRef`]).
    refs: Box<[Arc<LaneRef>]>,
    threads: Mutex<Threads>,
}

impl Drop for Outer {
    fn drop(&mut self) {
        shutdown(&self.shared, &self.threads);
    }
}

/// A timer service: runs closures after a delay, at an instant, or
/// periodically, on a pool of worker threads.
///
/// Cloning is cheap and every clone drives the same engine; the engine shuts
/// down when [`shutdown`](Scheduler::shutdown) is called or the last clone is
/// dropped. Scheduling and cancelling are lock-free and make no system call
/// in the common case.
///
/// CPU: with no timer due soon the tick thread sleeps (no CPU, however many
/// timers are pending). Shortly before a timer is due it stops sleeping and
/// polls the clock, and one worker polls for the job, so that neither pays a
/// wake-up's latency when the timer fires; "shortly" is 100 µs on a machine
/// whose timed wake-ups are punctual and grows to at most 2 ms on one where
/// they come late (the tick thread measures this). A scheduler with a timer
/// due every millisecond therefore keeps the tick thread and one worker
/// polling most of the time on such a machine; see `docs/scheduler.md`.
///
/// # Examples
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
/// use wheel::Scheduler;
///
/// let scheduler = Scheduler::new();
/// let (tx, rx) = mpsc::channel();
/// let keep = scheduler.schedule(Duration::from_millis(5), move || tx.send("fired").unwrap()).unwrap();
/// let drop_me = scheduler.schedule(Duration::from_secs(60), || unreachable!()).unwrap();
/// assert!(drop_me.cancel());
/// assert_eq!(rx.recv().unwrap(), "fired");
/// assert!(!keep.is_active());
/// ```
#[derive(Clone)]
pub struct Scheduler {
    outer: Arc<Outer>,
}

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
}

/// A snapshot of a scheduler's counters.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let scheduler = wheel::Scheduler::new();
/// let h = scheduler.schedule(Duration::from_secs(60), || {}).unwrap();
/// assert_eq!(scheduler.stats().pending, 1);
/// h.cancel();
/// let stats = scheduler.stats();
/// assert_eq!((stats.pending, stats.scheduled, stats.cancelled), (0, 1, 1));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Timers scheduled and not yet over: one-shot timers not yet started
    /// or cancelled, repeating timers not yet cancelled.
    pub pending: usize,
    /// Timers accepted by `schedule*` (errors are not counted).
    pub scheduled: u64,
    /// Runs started: one per one-shot timer that fired, one per run of a
    /// repeating timer (counted by the worker as it starts the callback).
    pub fired: u64,
    /// Successful `cancel` calls.
    pub cancelled: u64,
    /// Callbacks that panicked (caught; the worker survived).
    pub panicked: u64,
    /// Timers dropped without running by `shutdown`.
    pub dropped: u64,
    /// The largest lateness seen: callback start minus requested instant,
    /// measured with the scheduler's clock.
    pub max_lateness: Duration,
    /// Runs that are due and handed to the workers but not started yet.
    pub queued: usize,
    /// How far (from the scheduler's start) the tick thread has advanced
    /// its wheel; with a `ManualClock`, equal to the clock's elapsed time
    /// rounded down to the tick once the tick thread has caught up.
    pub elapsed: Duration,
    /// The tick length.
    pub tick: Duration,
    /// Number of worker threads.
    pub workers: usize,
}

impl Default for SchedulerBuilder {
    fn default() -> Self {
        SchedulerBuilder {
            tick: DEFAULT_TICK,
            workers: None,
            config: WheelConfig::default(),
            clock: Clock::System,
            max_pending: None,
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
        let shared = Arc::new(Shared {
            slots: SlotTable::new(lanes),
            lanes: (0..lanes)
                .map(|_| Lane {
                    commands: Queue::new(),
                    counts: CachePadded::new(LaneCounts::new()),
                })
                .collect(),
            wake: WakePlan::new(),
            pool: Pool::new(),
            counters: Counters {
                pending: AtomicUsize::new(0),
                dropped: AtomicU64::new(0),
                max_lateness: AtomicU64::new(0),
                reached_tick: AtomicU64::new(0),
            },
            time,
            max_pending,
            shutdown: AtomicBool::new(false),
            ticker_done: AtomicBool::new(false),
            ticker: parker.unparker().clone(),
            worker_ids: OnceLock::new(),
            workers,
        });
        let outer = Outer {
            shared: shared.clone(),
            refs: (0..lanes)
                .map(|lane| {
                    Arc::new(LaneRef {
                        shared: shared.clone(),
                        lane,
                    })
                })
                .collect(),
            threads: Mutex::new(Threads {
                ticker: None,
                workers: Vec::with_capacity(workers),
            }),
        };
        // From here on, an error drops `outer`, which shuts down and joins
        // whatever was started.
        let ticker = Ticker::new(
            shared.clone(),
            Wheel::<u64>::with_config(self.config),
            parker,
        );
        let handle = thread::Builder::new()
            .name("wheel-tick".into())
            .spawn(move || ticker.run())
            .map_err(BuildError::Spawn)?;
        lock(&outer.threads).ticker = Some(handle);
        let mut ids = Vec::with_capacity(workers);
        for i in 0..workers {
            let s = shared.clone();
            let spawned = thread::Builder::new()
                .name(format!("wheel-worker-{i}"))
                .spawn(move || workers::worker_main(s));
            match spawned {
                Ok(h) => {
                    ids.push(h.thread().id());
                    lock(&outer.threads).workers.push(h);
                }
                Err(e) => {
                    let _ = shared.worker_ids.set(ids);
                    return Err(BuildError::Spawn(e));
                }
            }
        }
        let _ = shared.worker_ids.set(ids);
        Ok(Scheduler {
            outer: Arc::new(outer),
        })
    }
}

impl Scheduler {
    /// A scheduler with the default settings: a 50 µs tick, one worker per available core, the system clock, no cap.
    ///
    /// # Panics
    ///
    /// If the operating system cannot start the threads; use
    /// [`builder`](Scheduler::builder) to get that as an error.
    ///
    /// # Examples
    ///
    /// ```
    /// let scheduler = wheel::Scheduler::new();
    /// assert!(!scheduler.is_shutdown());
    /// ```
    pub fn new() -> Scheduler {
        Scheduler::builder()
            .build()
            .expect("could not start the scheduler's threads")
    }

    /// A builder to configure the tick, the workers, the wheel, the clock
    /// and the pending cap.
    ///
    /// # Examples
    ///
    /// ```
    /// let scheduler = wheel::Scheduler::builder().workers(1).build().unwrap();
    /// # drop(scheduler);
    /// ```
    pub fn builder() -> SchedulerBuilder {
        SchedulerBuilder::default()
    }

    /// Shuts the scheduler down and returns how many pending timers it
    /// dropped without running them.
    ///
    /// Afterwards `schedule*` returns
    /// [`ScheduleError::Shutdown`](crate::ScheduleError::Shutdown). Callbacks
    /// already started (claimed) finish; repeating timers are not re-armed.
    /// The threads are joined before this returns, except when it is called
    /// from inside a callback: then it does not wait for the calling worker
    /// (which exits after its callback returns) and returns without waiting
    /// if another thread is already shutting down. Idempotent: the count is
    /// returned by exactly one call, later calls return 0. Dropping the last
    /// clone calls it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{ScheduleError, Scheduler};
    ///
    /// let scheduler = Scheduler::new();
    /// scheduler.schedule(Duration::from_secs(60), || unreachable!()).unwrap();
    /// assert_eq!(scheduler.shutdown(), 1);
    /// assert_eq!(scheduler.shutdown(), 0);
    /// assert!(scheduler.is_shutdown());
    /// assert_eq!(scheduler.schedule(Duration::ZERO, || {}).unwrap_err(), ScheduleError::Shutdown);
    /// ```
    pub fn shutdown(&self) -> usize {
        shutdown(&self.outer.shared, &self.outer.threads)
    }

    /// Whether [`shutdown`](Scheduler::shutdown) has been called (or the
    /// last clone dropped).
    ///
    /// # Examples
    ///
    /// ```
    /// let scheduler = wheel::Scheduler::new();
    /// assert!(!scheduler.is_shutdown());
    /// scheduler.shutdown();
    /// assert!(scheduler.is_shutdown());
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.outer.shared.shutdown.load(Ordering::SeqCst)
    }

    /// A snapshot of the counters (each read separately, so a snapshot
    /// taken while timers move may mix instants).
    ///
    /// # Examples
    ///
    /// ```
    /// let stats = wheel::Scheduler::new().stats();
    /// assert_eq!(stats.fired, 0);
    /// ```
    pub fn stats(&self) -> Stats {
        let s = &self.outer.shared;
        let c = &s.counters;
        let reached = c.reached_tick.load(Ordering::Acquire);
        let conv = s.time.conv();
        let elapsed = conv
            .instant_of(reached)
            .map_or(Duration::MAX, |at| at - conv.origin());
        let sum = |f: fn(&LaneCounts) -> &AtomicU64| -> u64 {
            s.lanes
                .iter()
                .map(|l| f(&l.counts).load(Ordering::Relaxed))
                .sum()
        };
        Stats {
            pending: if s.bounded() {
                c.pending.load(Ordering::Relaxed)
            } else {
                s.derived_pending()
            },
            scheduled: sum(|l| &l.scheduled),
            fired: sum(|l| &l.fired),
            cancelled: sum(|l| &l.cancelled),
            panicked: sum(|l| &l.panicked),
            dropped: c.dropped.load(Ordering::Relaxed),
            max_lateness: Duration::from_nanos(c.max_lateness.load(Ordering::Relaxed)),
            queued: s.pool.queued(),
            elapsed,
            tick: conv.tick_len(),
            workers: s.workers,
        }
    }
}

/// Sets the flag, wakes the tick thread, and joins what this caller may.
fn shutdown(shared: &Shared, threads: &Mutex<Threads>) -> usize {
    shared.shutdown.store(true, Ordering::SeqCst);
    // Pairs with the fence after a producer's push (see `schedule_entry`).
    fence(Ordering::SeqCst);
    shared.unpark_ticker();
    let me = thread::current().id();
    let in_worker = shared.worker_ids.get().is_some_and(|ids| ids.contains(&me));
    let mut guard = if in_worker {
        // Another thread holding the lock may be joining this very worker.
        match try_lock(threads) {
            Some(g) => g,
            None => return 0,
        }
    } else {
        lock(threads)
    };
    let mut dropped = 0;
    if let Some(t) = guard.ticker.take() {
        // The tick thread never waits for workers or callers: safe to join
        // from anywhere, including a worker.
        let _ = t.join();
        dropped = shared.counters.dropped.load(Ordering::Relaxed) as usize;
    }
    let mut mine = Vec::new();
    for h in guard.workers.drain(..) {
        if h.thread().id() == me {
            mine.push(h); // joined later by another caller, or detached
        } else {
            let _ = h.join();
        }
    }
    guard.workers = mine;
    dropped
}

impl fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scheduler")
            .field("shutdown", &self.is_shutdown())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Default for Scheduler {
    fn default() -> Self {
        Scheduler::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::lane_count;

    #[test]
    fn lane_count_is_a_bounded_power_of_two() {
        assert_eq!(lane_count(0), 8);
        assert_eq!(lane_count(1), 8);
        assert_eq!(lane_count(2), 8);
        assert_eq!(lane_count(3), 16);
        assert_eq!(lane_count(16), 64);
        assert_eq!(lane_count(usize::MAX), 64);
    }
}
