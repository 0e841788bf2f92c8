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
//! - `slots/`: the slot table (one atomic state word per timer); the
//!   linearization points of cancel, reset and firing.
//! - `handle.rs`: [`TimerHandle`].
//! - `command.rs`: the message a lane's queue carries to the tick thread
//!   (`Command`, the timer `Entry` and its type-erased callback).
//! - `submit.rs`: the producer paths and the no-lost-wake-up protocol with
//!   the tick thread.
//! - `lanes.rs`: per-thread stripes of the producer-side state, so that
//!   producers on different cores write disjoint cache lines.
//! - `ticker.rs`: the tick thread (the only owner of the [`Wheel`]), with
//!   its wake-up lateness estimate in `lateness.rs`.
//! - `workers.rs`: the worker pool that runs callbacks.
//! - `builder.rs`: [`SchedulerBuilder`]; `threads.rs`: starting, shutting
//!   down and joining the threads.
//! - this file: [`Scheduler`], [`Stats`] and the state they share.
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

mod builder;
mod command;
mod handle;
mod lanes;
mod lateness;
mod outbox;
mod slots;
mod submit;
mod threads;
mod ticker;
mod workers;

use std::fmt;
use std::time::Duration;

pub use self::builder::SchedulerBuilder;
pub use self::handle::TimerHandle;

use crate::clock::{NEVER, TimeBase};
use crate::sync::{
    Arc, AtomicBool, AtomicU64, AtomicUsize, OnceLock, Ordering, Unparker, thread, thread_stripe,
};

use self::lanes::{Lane, LaneCounts, lane_of};
use self::slots::SlotTable;
use self::submit::WakePlan;
use self::threads::{Outer, shutdown};
use self::ticker::FLUSH_INTERVAL;
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
    /// Timers that shutdown dropped without running them (added by the
    /// tick thread once, after its final drain).
    pub(crate) dropped: AtomicU64,
    /// Nanoseconds.
    pub(crate) max_lateness: AtomicU64,
    /// The tick the wheel has been advanced to.
    pub(crate) reached_tick: AtomicU64,
    /// Times the tick thread returned from parking (`Stats::wakeups`);
    /// relaxed: a statistic, nothing is ordered by it.
    pub(crate) wakeups: AtomicU64,
}

/// State shared by callers, handles, the tick thread and the workers.
pub(crate) struct Shared {
    /// One state word per timer: every cancel, reset, claim and start is a
    /// CAS on it (`slots/`).
    pub(crate) slots: SlotTable,
    /// The outboxes, command queues and counter stripes, one per lane
    /// (`lanes.rs`).
    pub(crate) lanes: Box<[Lane]>,
    /// How many ticks before a timer's deadline tick the tick thread takes
    /// it from its outbox (`outbox.rs`): one flush interval, so that taking
    /// a full outbox never delays a timer due at the tick it is taken.
    pub(crate) take_lead: u64,
    /// When the tick thread will wake: written by it, read by every
    /// producer after its push (`submit.rs`).
    pub(crate) wake_plan: WakePlan,
    /// The job queue and the sleeping workers (`workers.rs`).
    pub(crate) pool: Pool,
    pub(crate) counters: Counters,
    /// The clock, the origin and the tick: due times and ticks.
    pub(crate) time: TimeBase,
    /// The cap on pending timers; `usize::MAX` for none.
    pub(crate) max_pending: usize,
    /// Set once by `shutdown`; never cleared.
    pub(crate) shutdown: AtomicBool,
    /// Set by the tick thread after its final drain.
    pub(crate) ticker_done: AtomicBool,
    /// Wakes the tick thread.
    pub(crate) ticker_unparker: Unparker,
    /// The worker threads (to recognise a call from inside a callback).
    pub(crate) worker_ids: OnceLock<Vec<thread::ThreadId>>,
    /// Number of worker threads.
    pub(crate) workers: usize,
    /// Whether the tick thread polls the clock for the last stretch before
    /// a due timer (and has a worker poll for the jobs), or only sleeps.
    pub(crate) poll_before_due: bool,
}

impl Shared {
    /// The state of a scheduler with `lanes` lanes and `workers` workers,
    /// before any thread starts; `ticker_unparker` wakes the tick thread.
    fn new(
        time: TimeBase,
        lanes: usize,
        workers: usize,
        max_pending: usize,
        poll_before_due: bool,
        ticker_unparker: Unparker,
    ) -> Shared {
        let take_lead = time
            .conv()
            .tick_of_nanos(u64::try_from(FLUSH_INTERVAL.as_nanos()).unwrap_or(u64::MAX))
            .max(1);
        Shared {
            slots: SlotTable::new(lanes),
            lanes: (0..lanes).map(|_| Lane::new()).collect(),
            take_lead,
            wake_plan: WakePlan::new(),
            pool: Pool::new(),
            counters: Counters {
                pending: AtomicUsize::new(0),
                dropped: AtomicU64::new(0),
                max_lateness: AtomicU64::new(0),
                reached_tick: AtomicU64::new(0),
                wakeups: AtomicU64::new(0),
            },
            time,
            max_pending,
            shutdown: AtomicBool::new(false),
            ticker_done: AtomicBool::new(false),
            ticker_unparker,
            worker_ids: OnceLock::new(),
            workers,
            poll_before_due,
        }
    }

    /// Whether `max_pending` is bounded (then `counters.pending` is kept).
    pub(crate) fn bounded(&self) -> bool {
        self.max_pending != usize::MAX
    }

    /// The lane of the calling thread.
    pub(crate) fn my_lane(&self) -> usize {
        lane_of(thread_stripe(), self.lanes.len())
    }

    /// Whether every lane's command queue is empty.
    pub(crate) fn commands_empty(&self) -> bool {
        self.lanes.iter().all(|l| l.commands.is_empty())
    }

    /// The earliest take-by tick of the lanes' outboxes (`NEVER` if all
    /// are empty).
    pub(crate) fn earliest_take(&self) -> u64 {
        self.lanes
            .iter()
            .map(|l| l.outbox.earliest())
            .min()
            .unwrap_or(NEVER)
    }

    /// The take-by tick of a timer due at `tick` (`NEVER` for a timer
    /// that never fires: it waits in its outbox until the outbox is full or
    /// is taken for another timer).
    pub(crate) fn take_by(&self, tick: u64) -> u64 {
        if tick == NEVER {
            NEVER
        } else {
            tick.saturating_sub(self.take_lead)
        }
    }

    /// Records that a timer is over for another reason than a `cancel` or
    /// shutdown (a one-shot started, a repeating timer was stopped).
    pub(crate) fn timer_ended(&self, lane: usize) {
        self.lanes[lane]
            .counts
            .runs
            .ended
            .fetch_add(1, Ordering::Relaxed);
        self.pending_over();
    }

    /// One accepted timer is over (ran, cancelled, or never placed): the
    /// exact `pending` count of a bounded scheduler goes down.
    pub(crate) fn pending_over(&self) {
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
                .wrapping_add(l.counts.submit.cancels())
                .wrapping_add(l.counts.runs.ended.load(Ordering::Relaxed));
        }
        let scheduled: u64 = self
            .lanes
            .iter()
            .map(|l| l.counts.submit.scheduled.load(Ordering::Relaxed))
            .sum();
        usize::try_from(scheduled.saturating_sub(over)).unwrap_or(usize::MAX)
    }
}

/// A timer service: runs closures after a delay, at an instant, or
/// periodically, on a pool of worker threads.
///
/// Cloning is cheap and every clone drives the same engine; the engine shuts
/// down when [`shutdown`](Scheduler::shutdown) is called or the last clone is
/// dropped. Scheduling, cancelling and resetting make no system call in the
/// common case and never wait for the tick thread: a new timer waits in an
/// outbox of the calling thread's lane, behind a lock that only that
/// thread takes in the common case (held for a few dozen nanoseconds, never
/// while a callback runs), until its deadline comes near; a timer cancelled
/// before then never reaches the tick thread.
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
/// // Time since the start, whether or not the tick thread is awake.
/// assert!(stats.elapsed >= stats.advanced);
/// // The tick thread's wake-ups only grow.
/// assert!(scheduler.stats().wakeups >= stats.wakeups);
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
    /// Time since the scheduler started, read from its clock when the
    /// snapshot is taken (with a `ManualClock`: how far the clock has been
    /// advanced since the scheduler was built).
    pub elapsed: Duration,
    /// How far (from the scheduler's start) the tick thread has advanced
    /// its wheel: every timer due before then has been handed to the
    /// workers. It moves only when the tick thread wakes (a timer is due, or
    /// commands arrived), so on an idle scheduler it stays where the last
    /// wake-up left it while `elapsed` goes on; rounded down to the tick.
    /// With a `ManualClock`, equal to `elapsed` rounded down to the tick
    /// once the tick thread has caught up with an `advance`.
    pub advanced: Duration,
    /// The tick length.
    pub tick: Duration,
    /// Number of worker threads.
    pub workers: usize,
    /// How many times the tick thread woke from parking: a timer came due,
    /// commands arrived while it slept, a flush interval ended, or the
    /// clock was advanced. Its short polls of the clock just before a due
    /// timer do not park and are not counted. Divided by the timers
    /// scheduled, it is what a scheduler costs in thread wake-ups.
    pub wakeups: u64,
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
        let advanced = conv
            .instant_of(reached)
            .map_or(Duration::MAX, |at| at - conv.origin());
        // Read after `reached`, so that `advanced <= elapsed`.
        let elapsed = Duration::from_nanos(s.time.now_nanos());
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
            scheduled: sum(|l| &l.submit.scheduled),
            fired: sum(|l| &l.runs.fired),
            cancelled: s.lanes.iter().map(|l| l.counts.submit.cancels()).sum(),
            panicked: sum(|l| &l.runs.panicked),
            dropped: c.dropped.load(Ordering::Relaxed),
            max_lateness: Duration::from_nanos(c.max_lateness.load(Ordering::Relaxed)),
            queued: s.pool.queued(),
            elapsed,
            advanced,
            tick: conv.tick_len(),
            workers: s.workers,
            wakeups: c.wakeups.load(Ordering::Relaxed),
        }
    }
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
