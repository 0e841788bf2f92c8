//! A lane's outbox: the timers scheduled on the lane that the tick thread
//! has not taken yet.
//!
//! The tick thread needs a timer only when its deadline comes near, and a
//! timer cancelled before then need never reach it. So `schedule*` puts
//! the new timer's entry in its lane's outbox, under the lane's lock (taken
//! on the producer's own core: nobody else touches it while the producer
//! works), and `cancel` and `reset` of a timer still there act on it in
//! place. A timer that is scheduled and cancelled soon after (a request
//! timeout, a heartbeat) never leaves its producer's core: its closure is
//! dropped by the canceller, and the tick thread neither wakes nor reads a
//! line the producer wrote.
//!
//! # Invariants
//!
//! - `earliest` is the *take-by tick*: at or before it the tick thread must
//!   take the outbox. It is a lower bound on `due tick - take lead` of every
//!   timer in the outbox (a cancelled or reset timer may leave it earlier
//!   than needed: the tick thread then takes the outbox early, which is
//!   harmless), or [`TAKE_NOW`] once the outbox holds [`OUTBOX_CAP`]
//!   timers, or `NEVER` when empty. It is written only under the lock:
//!   lowered by producers, set to `NEVER` by the tick thread when it takes
//!   everything. The tick thread reads it without the lock.
//! - A timer in the outbox has a PENDING slot word without `applied`, of the
//!   generation the entry carries, and its *sequence is its position here*
//!   (mod 2^27; the tick thread arms the entry with it): a handle finds
//!   its timer here from one look at the word. While the entry is here its
//!   word changes only under the lock: `cancel` frees the slot and removes
//!   the entry in one critical section; `reset` moves the entry's due time in place and
//!   leaves the word alone (nothing is armed yet, so there is no old
//!   deadline to disarm). The tick thread marks a timer applied only after
//!   taking it out, so a timer found here is never applied.
//! - A position is trusted only if the entry at it carries the handle's
//!   slot index and generation (unique to the timer): after a take, or a
//!   reset of a taken timer (which bumps the sequence), the position read
//!   from the word may name another timer or nothing, and the handle then
//!   goes the ordinary way (`slots/transitions.rs`).
//! - Once the tick thread has taken every outbox at shutdown, nothing more
//!   is put in one: `put` reads the shutdown flag under the lock, and the
//!   tick thread took the lock after it saw the flag.

use crate::clock::NEVER;
use crate::sync::{AtomicU64, Mutex, Ordering, lock};

use crate::error::ScheduleError;

use super::Shared;
use super::command::{Entry, Task};
use super::lanes::SubmitCounts;
use super::slots::wrap_seq;

/// Timers an outbox holds before it asks the tick thread to take them: a
/// bound on the tick thread's work per take (a few hundred µs), and on how
/// many timers are not yet in the wheel per lane.
#[cfg(not(loom))]
pub(crate) const OUTBOX_CAP: usize = 4096;
/// Under loom: two timers fill an outbox, so the models reach the take.
#[cfg(loom)]
pub(crate) const OUTBOX_CAP: usize = 2;

/// The take-by tick of a full outbox: take it at once.
pub(crate) const TAKE_NOW: u64 = 0;

/// A timer waiting in an outbox: its closure, slot, the slot generation it
/// was scheduled with, and its due time (32 bytes: its sequence is its
/// position, so it is not stored).
pub(crate) struct Waiting {
    pub(crate) task: Box<dyn Task>,
    pub(crate) index: u32,
    pub(crate) generation: u32,
    /// Nanoseconds after the origin, as in [`Entry::due`].
    pub(crate) due: u64,
}

impl Waiting {
    /// The entry of the timer that waited at `position`.
    pub(crate) fn into_entry(self, position: usize) -> Entry {
        Entry {
            task: self.task,
            index: self.index,
            seq: wrap_seq(position as u32),
            due: self.due,
        }
    }
}

/// The positions of an outbox: a slab of waiting timers.
pub(crate) type Slab = Vec<Option<Waiting>>;

/// Free slots an outbox keeps for its own next timers (beyond, they go to
/// the lane's free list, where other lanes may take them).
const KEPT_SLOTS: usize = 256;

/// What the lock protects.
struct Held {
    /// Waiting timers by position; `None` at free positions.
    entries: Slab,
    /// Free positions of `entries`.
    free: Vec<u32>,
    /// Timers in `entries`.
    live: usize,
    /// Slots freed by cancels here, `(index, generation)`, FREE: the next
    /// timers of this lane take them without touching a shared free list.
    slots: Vec<(u32, u32)>,
}

/// One lane's outbox (see the module docs).
pub(crate) struct Outbox {
    held: Mutex<Held>,
    /// The take-by tick; written under the lock, read without it.
    earliest: AtomicU64,
}

/// A timer [`Outbox::put`] placed.
pub(crate) struct Placed {
    /// Its slot.
    pub(crate) index: u32,
    /// Its slot's generation.
    pub(crate) generation: u32,
    /// The take-by tick it lowered the outbox to (the caller checks whether
    /// the tick thread must wake earlier than it planned), or `None` if the
    /// outbox was due no later.
    pub(crate) lowered: Option<u64>,
}

impl Outbox {
    /// An empty outbox.
    pub(crate) fn new() -> Outbox {
        Outbox {
            held: Mutex::new(Held {
                entries: Vec::new(),
                free: Vec::new(),
                live: 0,
                slots: Vec::new(),
            }),
            earliest: AtomicU64::new(NEVER),
        }
    }

    /// The take-by tick (see the module docs).
    pub(crate) fn earliest(&self) -> u64 {
        self.earliest.load(Ordering::Acquire)
    }

    /// Producer: allocates a slot for a new timer of `lane` and puts the
    /// timer here; its take-by tick is `take_by`. The slot's word carries
    /// the timer's position here as its sequence (see the module docs).
    /// Fails if `shutdown` is set or the slot table is full, handing the
    /// callback back (to be dropped outside the lock).
    pub(crate) fn put(
        &self,
        shared: &Shared,
        lane: usize,
        task: Box<dyn Task>,
        due: u64,
        take_by: u64,
    ) -> Result<Placed, (ScheduleError, Box<dyn Task>)> {
        let (slots, counts) = (&shared.slots, &shared.lanes[lane].counts.submit);
        let mut held = lock(&self.held);
        // Under the lock: ordered after the tick thread's last take (see
        // the module docs).
        if shared.shutdown.load(Ordering::Relaxed) {
            return Err((ScheduleError::Shutdown, task));
        }
        let position = match held.free.last() {
            Some(&p) => p,
            // Positions fit in `u32`: a take empties the slab, and the slot
            // table has no more than 2^32 timers.
            None => held.entries.len() as u32,
        };
        let seq = wrap_seq(position);
        let repeat = task.period() != 0;
        let (index, generation) = match held.slots.pop() {
            Some((index, generation)) => {
                slots.reuse(index, generation, repeat, seq);
                (index, generation)
            }
            None => match slots.alloc(lane, repeat, seq) {
                Some(slot) => slot,
                None => return Err((ScheduleError::Full, task)),
            },
        };
        let waiting = Some(Waiting {
            task,
            index,
            generation,
            due,
        });
        if held.free.pop().is_some() {
            held.entries[position as usize] = waiting;
        } else {
            held.entries.push(waiting);
        }
        held.live += 1;
        SubmitCounts::bump_locked(&counts.scheduled);
        let wanted = if held.live >= OUTBOX_CAP {
            TAKE_NOW
        } else {
            take_by
        };
        let lowered = (wanted < self.earliest.load(Ordering::Relaxed)).then(|| {
            self.earliest.store(wanted, Ordering::Release);
            wanted
        });
        Ok(Placed {
            index,
            generation,
            lowered,
        })
    }

    /// `cancel` of the timer `(index, generation)` put at `position`: if
    /// it is still here, frees its slot (it is PENDING and not applied,
    /// and only this lock's holders write its word) and hands its entry
    /// back for the caller to drop (outside the lock). `None` if the timer
    /// is not here (taken, or over).
    pub(crate) fn cancel(
        &self,
        shared: &Shared,
        lane: usize,
        position: u32,
        index: u32,
        generation: u32,
    ) -> Option<Waiting> {
        let (slots, counts) = (&shared.slots, &shared.lanes[lane].counts.submit);
        let mut held = lock(&self.held);
        if !holds(&held.entries, position, index, generation) {
            return None;
        }
        let next = slots.free_waiting(index, generation);
        if held.slots.len() < KEPT_SLOTS {
            held.slots.push((index, next));
        } else {
            slots.recycle(lane, index, next);
        }
        let waiting = held.entries[position as usize].take();
        held.free.push(position);
        held.live -= 1;
        SubmitCounts::bump_locked(&counts.cancelled_waiting);
        waiting
    }

    /// `reset` of the timer `(index, generation)` put at `position` to
    /// `due` (take-by tick `take_by`), if it is still here: its entry moves
    /// in place (nothing is armed yet, so the sequence stays: it is the
    /// position). `None` if the timer is not here; otherwise the take-by
    /// tick it lowered the outbox to, if it did.
    pub(crate) fn reset(
        &self,
        position: u32,
        index: u32,
        generation: u32,
        due: u64,
        take_by: u64,
    ) -> Option<Option<u64>> {
        let mut held = lock(&self.held);
        let waiting = held.entries.get_mut(position as usize)?.as_mut()?;
        if waiting.index != index || waiting.generation != generation {
            return None;
        }
        waiting.due = due;
        let lowered = (take_by < self.earliest.load(Ordering::Relaxed)).then(|| {
            self.earliest.store(take_by, Ordering::Release);
            take_by
        });
        Some(lowered)
    }

    /// Tick thread: takes every waiting timer, swapping the slab with
    /// `into` (empty on entry, so that slabs are reused, not reallocated).
    /// The caller applies what `into` holds (a timer's position is its
    /// index there), then leaves it empty, with at most [`OUTBOX_CAP`]
    /// places (a slab that grew while the tick thread was slow to take it
    /// does not keep that memory).
    pub(crate) fn take(&self, into: &mut Slab) {
        debug_assert!(into.is_empty());
        let mut held = lock(&self.held);
        std::mem::swap(&mut held.entries, into);
        held.free.clear();
        held.live = 0;
        self.earliest.store(NEVER, Ordering::Release);
    }
}

/// Whether `entries` holds the timer `(index, generation)` at `position`.
fn holds(entries: &Slab, position: u32, index: u32, generation: u32) -> bool {
    matches!(
        entries.get(position as usize),
        Some(Some(w)) if w.index == index && w.generation == generation
    )
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Waiting;

    #[test]
    fn a_waiting_timer_is_32_bytes() {
        // An outbox's slab is this per position (the box's niche makes the
        // `Option` free).
        assert_eq!(std::mem::size_of::<Option<Waiting>>(), 32);
    }
}
