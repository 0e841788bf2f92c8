//! The worker pool: threads that run callbacks, never the tick thread.
//!
//! # Protocol
//!
//! The tick thread pushes claimed entries (state RUNNING) onto a lock-free
//! FIFO job queue and, after each batch, wakes up to `batch` sleeping
//! workers. A worker pops jobs until the queue is empty, then sleeps on a
//! condition variable. No wake-up is lost:
//!
//! - a worker announces itself in `sleepers` (a `SeqCst` read-modify-write
//!   followed by a `SeqCst` fence) before re-checking the queue under the
//!   mutex and waiting;
//! - the tick thread pushes, issues a `SeqCst` fence, reads `sleepers`, and
//!   if it is non-zero notifies *while holding the mutex*.
//!
//! Either the tick thread sees the sleeper (and its notification, sent
//! under the mutex, cannot fall between the worker's re-check and its wait),
//! or the worker's re-check sees the job. Workers that are busy cost the
//! tick thread no system call.
//!
//! A queued job starts only if its slot is still QUEUED with the entry's
//! sequence (the `start` CAS, the linearization point of "the callback
//! starts"); a job cancelled or reset after the claim is dropped or sent
//! back. Jobs queued before shutdown still start: they were due. Workers
//! exit once the tick thread is done and the queue is empty.
//!
//! Latency hint (not part of the protocol): while the tick thread expects
//! jobs within a tick or two (`expecting`, set by [`Pool::prepare`] when a
//! timer is imminent), one idle worker polls the queue for a while (the
//! tick thread's spin lead plus [`WORKER_SPIN_MARGIN`], at least
//! [`WORKER_SPIN_MIN`]) before it goes through the sleep protocol above.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::sync::{
    Arc, AtomicBool, AtomicU64, AtomicUsize, Backoff, Condvar, Mutex, Ordering, RingQueue, fence,
    lock, wait,
};

use super::Shared;
use super::command::{Command, Entry};
use super::slots::Start;
use super::submit::next_fixed_rate;

/// The least time an idle worker polls the job queue before it sleeps,
/// when no other worker is polling: jobs that come in this soon (the next
/// tick of a busy scheduler, or a timer the tick thread announced with
/// [`Pool::prepare`]) start without a wake-up's latency.
pub(crate) const WORKER_SPIN_MIN: Duration = Duration::from_micros(200);

/// A worker polls this much longer than the tick thread's spin lead (it
/// is woken when the lead starts and must still poll when the job comes).
pub(crate) const WORKER_SPIN_MARGIN: Duration = Duration::from_micros(100);

/// How long a polling worker polls, in nanoseconds, when the tick thread
/// announces jobs `lead` ahead: the lead plus [`WORKER_SPIN_MARGIN`], at
/// least [`WORKER_SPIN_MIN`].
pub(crate) fn worker_spin(lead: Duration) -> u64 {
    let spin = lead.saturating_add(WORKER_SPIN_MARGIN).max(WORKER_SPIN_MIN);
    u64::try_from(spin.as_nanos()).unwrap_or(u64::MAX)
}

/// Jobs the worker queue holds without allocating (a ring, allocated on
/// first use; more spill into a growable overflow). The tick thread then
/// allocates nothing per job while it fires: a segment queue allocates a
/// block every few dozen jobs, which the workers free, and with glibc's
/// allocator and a fragmented heap such cross-thread traffic can stall
/// firing by milliseconds (`docs/scheduler.md`). The ring costs 40 KiB per
/// scheduler.
const JOB_RING: usize = 1024;

/// The job queue and the sleeping workers.
pub(crate) struct Pool {
    jobs: RingQueue<Entry>,
    sleepers: AtomicUsize,
    /// Workers polling the job queue before they sleep (at most one by
    /// policy; a hint, not part of the wake-up protocol).
    spinning: AtomicUsize,
    /// Set by the tick thread while it expects to hand out jobs within a
    /// tick or two (it is polling the clock for an imminent timer); idle
    /// workers poll only then. A hint.
    expecting: AtomicBool,
    /// How long a polling worker polls, in nanoseconds (set by `prepare`).
    spin_nanos: AtomicU64,
    /// Held by a worker between re-checking the job queue and waiting, and
    /// by whoever notifies `cv` (see the protocol above).
    mutex: Mutex<()>,
    cv: Condvar,
}

impl Pool {
    pub(crate) fn new() -> Pool {
        Pool {
            jobs: RingQueue::new(JOB_RING),
            sleepers: AtomicUsize::new(0),
            spinning: AtomicUsize::new(0),
            expecting: AtomicBool::new(false),
            spin_nanos: AtomicU64::new(WORKER_SPIN_MIN.as_nanos() as u64),
            mutex: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// Tick thread: queues a claimed entry (call `wake` after the batch).
    pub(crate) fn push(&self, entry: Entry) {
        self.jobs.push(entry);
    }

    /// Tick thread: wakes up to `n` sleeping workers after pushing jobs.
    pub(crate) fn wake(&self, n: usize) {
        fence(Ordering::SeqCst);
        let sleeping = self.sleepers.load(Ordering::SeqCst);
        // The decision rests on `sleepers` alone (the Dekker pair above);
        // the `spinning` hint must not suppress a notification.
        if sleeping == 0 {
            return;
        }
        let _guard = lock(&self.mutex);
        if n >= sleeping {
            self.cv.notify_all();
        } else {
            for _ in 0..n {
                self.cv.notify_one();
            }
        }
    }

    /// Tick thread: a timer is about to be due. Wakes one sleeping worker
    /// (unless one is already polling) so that it polls the job queue when
    /// the job comes, instead of waiting to be woken then. `lead`: how long
    /// before the job the tick thread calls this (a polling worker polls
    /// that long and a margin more).
    pub(crate) fn prepare(&self, lead: Duration) {
        let spin = worker_spin(lead);
        if self.spin_nanos.load(Ordering::Relaxed) != spin {
            self.spin_nanos.store(spin, Ordering::Relaxed);
        }
        if !self.expecting.load(Ordering::Relaxed) {
            self.expecting.store(true, Ordering::Relaxed);
        }
        if self.spinning.load(Ordering::Relaxed) > 0 || self.sleepers.load(Ordering::Relaxed) == 0 {
            return;
        }
        let _guard = lock(&self.mutex);
        self.cv.notify_one();
    }

    /// Tick thread: no timer is imminent (it is going to a timed or
    /// untimed sleep); idle workers go straight to sleep.
    pub(crate) fn relax(&self) {
        if self.expecting.load(Ordering::Relaxed) {
            self.expecting.store(false, Ordering::Relaxed);
        }
    }

    /// Worker: polls the job queue for a while (see [`worker_spin`]) if the tick
    /// thread expects jobs soon and no other worker polls. Returns `true`
    /// if a job may be there.
    fn poll_for_jobs(&self, shared: &Shared) -> bool {
        if cfg!(loom) || !self.expecting.load(Ordering::Relaxed) {
            return false;
        }
        if self.spinning.fetch_add(1, Ordering::Relaxed) > 0 {
            if !cfg!(loom) {
                self.spinning.fetch_sub(1, Ordering::Relaxed);
            }
            return false;
        }
        let until = Instant::now() + Duration::from_nanos(self.spin_nanos.load(Ordering::Relaxed));
        let backoff = Backoff::new();
        let mut found = false;
        loop {
            if !self.jobs.is_empty() || shared.ticker_done.load(Ordering::Relaxed) {
                found = true;
                break;
            }
            if backoff.is_completed() {
                if Instant::now() >= until || !self.expecting.load(Ordering::Relaxed) {
                    break;
                }
                crate::sync::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
        self.spinning.fetch_sub(1, Ordering::Relaxed);
        found
    }

    /// Wakes every worker (shutdown).
    pub(crate) fn wake_all(&self) {
        let _guard = lock(&self.mutex);
        self.cv.notify_all();
    }

    /// Jobs waiting for a worker.
    pub(crate) fn queued(&self) -> usize {
        self.jobs.len()
    }
}

/// A worker thread's main loop.
pub(crate) fn worker_main(shared: Arc<Shared>) {
    let pool = &shared.pool;
    let lane = shared.my_lane();
    loop {
        if let Some(job) = pool.jobs.pop() {
            run_job(&shared, lane, job);
            continue;
        }
        if shared.ticker_done.load(Ordering::SeqCst) {
            if pool.jobs.is_empty() {
                return;
            }
            continue;
        }
        if pool.poll_for_jobs(&shared) {
            continue;
        }
        pool.sleepers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let mut guard = lock(&pool.mutex);
        while pool.jobs.is_empty() && !shared.ticker_done.load(Ordering::SeqCst) {
            guard = wait(&pool.cv, guard);
        }
        drop(guard);
        pool.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Starts one queued entry (if still due), runs it, then releases or
/// re-arms it.
fn run_job(shared: &Shared, lane: usize, mut entry: Entry) {
    let counters = &shared.counters;
    let counts = &shared.lanes[lane].counts.runs;
    let slots = &shared.slots;
    let index = entry.index;
    match slots.start(index, entry.seq) {
        Start::Run => {}
        Start::Cancelled => {
            drop(entry);
            slots.release(lane, index);
            return;
        }
        Start::Moved => {
            // A reset after the claim: back to the tick thread, which parks
            // the entry until the reset's command moves it. Always wake the
            // tick thread: it may have filed that command already.
            send_back(shared, lane, entry);
            shared.unpark_ticker();
            return;
        }
    }
    let period = entry.task.period();
    if period == 0 {
        shared.timer_ended(lane);
    }
    counts.fired.fetch_add(1, Ordering::Relaxed);
    let started = shared.time.now();
    if let Some(at) = shared.time.conv().instant_of_nanos(entry.due) {
        let late = started.saturating_duration_since(at);
        let late = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
        counters.max_lateness.fetch_max(late, Ordering::Relaxed);
    }
    if period == 0 {
        // One-shot: the call consumes the closure (so a zero-sized closure
        // was never allocated).
        let task = entry.task;
        if catch_unwind(AssertUnwindSafe(move || task.run_once())).is_err() {
            counts.panicked.fetch_add(1, Ordering::Relaxed);
        }
        slots.release(lane, index);
        return;
    }
    let ok = catch_unwind(AssertUnwindSafe(|| entry.task.run())).is_ok();
    if !ok {
        counts.panicked.fetch_add(1, Ordering::Relaxed);
    }
    if !ok || shared.shutdown.load(Ordering::SeqCst) {
        // Stop a panicking timer, or one whose scheduler is shutting down.
        if slots.stop_running(index) {
            shared.timer_ended(lane);
        }
        drop(entry);
        slots.release(lane, index);
        return;
    }
    let Some(seq) = slots.finish_run(index) else {
        // Cancelled during the run: its canceller left the entry to us.
        drop(entry);
        slots.release(lane, index);
        return;
    };
    // Fixed rate: the next run is the first one due after this run started
    // (runs due meanwhile collapse into one late run). Computed from the
    // start, not when the tick thread gets the entry back, so the schedule
    // does not depend on how long the command waits. After a reset during
    // the run the deadline is the reset's (the tick thread has it): wake
    // regardless.
    let earliest = if seq == entry.seq {
        entry.due = next_fixed_rate(entry.due, period, shared.time.due_at(started));
        shared.time.tick_of_due(entry.due)
    } else {
        0
    };
    // `send_back` issued the fence after its push.
    if send_back(shared, lane, entry) && shared.wake_plan.needs_wake_fenced(earliest) {
        shared.unpark_ticker();
    }
}

/// Sends a PENDING entry back to the tick thread. Returns `false` if the
/// scheduler is shutting down (then the timer is stopped here, unless the
/// tick thread's final drain already stopped it).
fn send_back(shared: &Shared, lane: usize, entry: Entry) -> bool {
    let index = entry.index;
    shared.lanes[lane].commands.push(Command::Rearm(entry));
    fence(Ordering::SeqCst);
    if shared.shutdown.load(Ordering::SeqCst) {
        // The tick thread may have done its final drain already: stop the
        // timer ourselves (the entry stays queued and is dropped with the
        // scheduler's shared state).
        if shared.slots.cancel_current(index) {
            shared.timer_ended(lane);
        }
        shared.unpark_ticker();
        return false;
    }
    true
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_polling_worker_outlasts_the_tick_threads_lead() {
        let us = |n: u64| Duration::from_micros(n);
        assert_eq!(worker_spin(Duration::ZERO), 200_000);
        assert_eq!(worker_spin(us(100)), 200_000);
        assert_eq!(worker_spin(us(900)), 1_000_000);
        assert_eq!(worker_spin(Duration::MAX), u64::MAX);
    }
}
