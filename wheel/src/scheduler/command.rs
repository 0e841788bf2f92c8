//! What travels on a lane's command queue to the tick thread: [`Command`],
//! and the timer [`Entry`] and type-erased callback ([`Task`]) it carries.
//!
//! # Who sends what
//!
//! - `schedule*` (`submit.rs`) sends nothing: a new timer waits in its
//!   lane's outbox (`outbox.rs`) until the tick thread takes it;
//! - a [`TimerHandle`](super::TimerHandle) sends `Cancel` and `Reset`, on
//!   the lane its timer was scheduled on, for a timer the tick thread has
//!   taken;
//! - a worker (`workers.rs`) sends `Rearm` for a repeating timer whose run
//!   ended, on its own lane;
//! - only the tick thread (`ticker.rs`) receives.
//!
//! # Invariants
//!
//! - An [`Entry`] (and so its closure) is owned by exactly one place at a
//!   time: an outbox, a command in a queue, the tick thread, the worker
//!   queue, or a worker. It is never shared, so a closure runs at most once per run.
//! - A command names its timer by slot index and generation (and, for
//!   `Reset`, the reset sequence); the tick thread acts on it only while the
//!   slot still carries them (see `slots/`), so a late command never touches
//!   a later timer of the same slot.
//! - A [`Command`] stays 40 bytes (tested below): it is the element of every
//!   lane's queue.

/// A timer's callback, type-erased. One-shot closures are wrapped in
/// [`Once`], repeating ones in [`Every`].
pub(crate) trait Task: Send {
    /// Runs a one-shot callback, consuming it.
    fn run_once(self: Box<Self>);
    /// Runs one run of a repeating callback (never called on a one-shot).
    fn run(&mut self);
    /// The period in nanoseconds; 0 for a one-shot timer.
    fn period(&self) -> u64;
    /// The exact due time of a repeating timer's next run (nanoseconds
    /// after the origin), kept in its box by the tick thread; `None` for a
    /// one-shot timer, whose due time is not stored (its wheel tick is).
    fn due(&self) -> Option<u64>;
    /// Records the due time (ignored by one-shot timers).
    fn set_due(&mut self, due: u64);
}

/// A one-shot closure. Stored as is (no `Option`), so that
/// `Box<Once<F>>` of a closure that captures nothing is zero-sized and
/// costs no allocation.
pub(crate) struct Once<F>(pub(crate) F);

impl<F: FnOnce() + Send> Task for Once<F> {
    fn run_once(self: Box<Self>) {
        (self.0)()
    }
    fn run(&mut self) {
        debug_assert!(false, "a one-shot task is run by `run_once`");
    }
    fn period(&self) -> u64 {
        0
    }
    fn due(&self) -> Option<u64> {
        None
    }
    fn set_due(&mut self, _due: u64) {}
}

/// A repeating closure, its period (nanoseconds, at least 1) and the due
/// time of its next run (see [`Task::due`]).
pub(crate) struct Every<F> {
    pub(crate) f: F,
    pub(crate) period: u64,
    pub(crate) due: u64,
}

impl<F: FnMut() + Send> Task for Every<F> {
    fn run_once(mut self: Box<Self>) {
        (self.f)()
    }
    fn run(&mut self) {
        (self.f)()
    }
    fn period(&self) -> u64 {
        self.period
    }
    fn due(&self) -> Option<u64> {
        Some(self.due)
    }
    fn set_due(&mut self, due: u64) {
        self.due = due;
    }
}

/// A timer's entry: its closure and where it belongs. Owned by exactly one
/// place at a time: a command in the queue, the tick thread (which keeps it
/// split: `(index, seq)` in its wheel, the closure in a side table), the
/// worker queue, or a worker.
pub(crate) struct Entry {
    pub(crate) task: Box<dyn Task>,
    /// Slot index.
    pub(crate) index: u32,
    /// The reset sequence this entry is armed for (see `handle.rs`).
    pub(crate) seq: u32,
    /// Requested instant, nanoseconds after the scheduler's origin;
    /// [`NEVER`](crate::clock::NEVER) for never. In a job handed to a
    /// worker: for a one-shot timer, the start of its deadline tick (the
    /// requested instant rounded up to the tick); for a repeating timer,
    /// the exact due time.
    pub(crate) due: u64,
}

/// What the tick thread is asked to do.
pub(crate) enum Command {
    /// A repeating timer whose run just ended: schedule its next run.
    Rearm(Entry),
    /// A handle cancelled this timer: drop its entry now.
    Cancel { index: u32, generation: u32 },
    /// A handle reset this timer to `due`; valid only if the slot still
    /// carries `seq`.
    Reset {
        index: u32,
        generation: u32,
        seq: u32,
        due: u64,
    },
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Command;

    #[test]
    fn a_command_is_40_bytes() {
        // A command queue's slot is this plus crossbeam's state word; an
        // insert's generation fits in the enum's padding.
        assert_eq!(std::mem::size_of::<Command>(), 40);
    }
}
