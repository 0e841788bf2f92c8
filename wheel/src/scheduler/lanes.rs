//! Lanes: per-thread stripes of the producer-side state (outbox, command
//! queue, free slots, counters, handle reference count), so that producers
//! on different cores write disjoint cache lines.
//!
//! A lane is only a place, never an owner: any thread may schedule on any
//! lane (its own, normally), push onto any lane's command queue and any
//! lane's free list, and which lane a timer or a slot goes through never
//! matters for correctness (the tick thread takes every outbox and pops
//! every queue). A handle acts through the lane its timer was scheduled on:
//! its outbox while the timer is there, its command queue afterwards (see
//! `submit.rs`).

use crate::sync::{Arc, AtomicU64, CachePadded, Ordering, Queue};

use super::Shared;
use super::command::Command;
use super::outbox::Outbox;

/// One lane: an outbox, a command queue and a stripe of counters, on its
/// own cache lines. A thread uses lane `lane_of(thread_stripe(), lanes)`
/// (see [`lane_count`]); a handle acts on its timer through the lane it was
/// scheduled on. Lanes exist so that producers on different cores never
/// write the same cache line: each has its own outbox, queue tail, free
/// list (in [`SlotTable`](super::slots::SlotTable)), counters and handle
/// reference count ([`LaneRef`]).
pub(crate) struct Lane {
    /// New timers, until the tick thread takes them (`outbox.rs`).
    pub(crate) outbox: CachePadded<Outbox>,
    /// Everything else for the tick thread: cancels and resets of timers
    /// it holds, re-arms of repeating timers.
    pub(crate) commands: Queue<Command>,
    pub(crate) counts: LaneCounts,
}

/// A lane's stripe of the statistics. `Stats` sums the stripes. The
/// counters producers write and those workers write are on separate cache
/// lines, so that a worker that shares a producer's lane does not take the
/// producer's line on every run.
pub(crate) struct LaneCounts {
    /// Written by `schedule*` and `cancel`.
    pub(crate) submit: CachePadded<SubmitCounts>,
    /// Written by workers.
    pub(crate) runs: CachePadded<RunCounts>,
}

/// The producer side of [`LaneCounts`].
#[derive(Default)]
pub(crate) struct SubmitCounts {
    /// Timers accepted by `schedule*` on this lane. Written only under the
    /// lane's outbox lock, by a load and a store (no read-modify-write:
    /// the lock already orders the writers).
    pub(crate) scheduled: AtomicU64,
    /// Successful `cancel`s of handles of this lane whose timer the tick
    /// thread had taken.
    pub(crate) cancelled: AtomicU64,
    /// Successful `cancel`s of timers still in this lane's outbox; written
    /// like `scheduled`.
    pub(crate) cancelled_waiting: AtomicU64,
}

impl SubmitCounts {
    /// Adds one to `counter`, a counter written only under the outbox lock.
    pub(crate) fn bump_locked(counter: &AtomicU64) {
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Successful cancels of this lane's timers.
    pub(crate) fn cancels(&self) -> u64 {
        self.cancelled
            .load(Ordering::Relaxed)
            .wrapping_add(self.cancelled_waiting.load(Ordering::Relaxed))
    }
}

/// The worker side of [`LaneCounts`].
#[derive(Default)]
pub(crate) struct RunCounts {
    /// Timers over for another reason than `cancel` or shutdown: one-shot
    /// timers that started, repeating timers stopped by a worker.
    pub(crate) ended: AtomicU64,
    /// Runs started.
    pub(crate) fired: AtomicU64,
    /// Callbacks that panicked.
    pub(crate) panicked: AtomicU64,
}

impl Lane {
    /// An empty lane.
    pub(crate) fn new() -> Lane {
        Lane {
            outbox: CachePadded::new(Outbox::new()),
            commands: Queue::new(),
            counts: LaneCounts {
                submit: CachePadded::new(SubmitCounts::default()),
                runs: CachePadded::new(RunCounts::default()),
            },
        }
    }
}

/// What a [`TimerHandle`](super::TimerHandle) points to: the engine and the lane its commands
/// go to. Each lane has one `Arc<LaneRef>` (kept by the `Scheduler`), so
/// the reference count touched by every handle clone and drop is per lane,
/// not one line shared by all producers.
pub(crate) struct LaneRef {
    pub(crate) shared: Arc<Shared>,
    pub(crate) lane: usize,
}

/// The lane of stripe `stripe` among `lanes` lanes (a power of two: a
/// mask, not a division, on the producer path).
#[inline]
pub(crate) fn lane_of(stripe: usize, lanes: usize) -> usize {
    debug_assert!(lanes.is_power_of_two());
    stripe & (lanes - 1)
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{lane_count, lane_of};

    #[test]
    fn lane_count_is_a_bounded_power_of_two() {
        assert_eq!(lane_count(0), 8);
        assert_eq!(lane_count(1), 8);
        assert_eq!(lane_count(2), 8);
        assert_eq!(lane_count(3), 16);
        assert_eq!(lane_count(16), 64);
        assert_eq!(lane_count(usize::MAX), 64);
    }

    #[test]
    fn lane_of_wraps_like_a_remainder() {
        assert_eq!(lane_of(0, 1), 0);
        assert_eq!(lane_of(usize::MAX, 1), 0);
        assert_eq!(lane_of(7, 8), 7);
        assert_eq!(lane_of(8, 8), 0);
        assert_eq!(lane_of(usize::MAX, 64), 63);
        for s in 0..200 {
            assert_eq!(lane_of(s, 16), s % 16);
        }
    }
}
