//! Starts: the claims at their instant that wait for a start call, and the
//! lock-free hand-off that lets one thread at a time make that call.
//!
//! Owns `waiting` (the claims), `starting` (start passes in flight, at
//! most [`START_CALLS`]) and `resuming` (a pass is scheduled to resume the
//! starts and has not begun). Only the starter (`starter.rs`) calls these
//! methods, except [`Starts::len`] (what the node holds, for the claimer)
//! and [`Starts::close`] (shutdown).
//!
//! The protocol: whoever offers a claim leaves it in `waiting` and runs a
//! [`Starts::pass`]: if fewer than [`START_CALLS`] passes are in flight it
//! becomes one, takes everything waiting, starts it and takes again until
//! nothing is left; otherwise it leaves the claim for the pass in flight
//! and returns. Two rules make sure no claim is stranded:
//! - a pass looks at `waiting` once more after it stops counting itself,
//!   so a claim left while it was finishing is taken by this pass or by
//!   the next one;
//! - a thread that finds every pass taken changes nothing: it does not
//!   count itself in and out, which could make a finishing pass that
//!   looks again believe another pass is still in flight and give up.
//!
//! A pass takes only as much as `room` allows (the handlers' queue is
//! bounded); claims beyond stay waiting, still claimed. Whoever frees room
//! asks [`Starts::resume_wanted`]: true for one caller at a time, who then
//! schedules a pass on another thread, which calls [`Starts::resumed`]
//! before it looks at anything, so a room freed after that schedules the
//! next one. A pass in flight needs no resuming: it looks at the room
//! again after it stops counting itself.
//!
//! Every step is `SeqCst`, and each check of `waiting` or of the room
//! locks the queue it reads, which orders it against the push or the take
//! that changed it. `tests/loom_node.rs` model-checks this file (with
//! `queue.rs`): it names nothing but the queue and `crate::sync`.

use super::queue::Queue;
use crate::sync::{AtomicBool, AtomicUsize, Ordering};

/// Start calls a node has in flight at most. One: while it runs, the
/// claims coming due pile up into the next call's batch. With two, calls
/// were measured to carry one timer each at 10 000 timers/s on 3 nodes,
/// and their fixed cost in Redis made every timer later.
pub(super) const START_CALLS: usize = 1;

/// The claims waiting for a start call, and the passes that make them.
pub(super) struct Starts<T> {
    waiting: Queue<T>,
    starting: AtomicUsize,
    resuming: AtomicBool,
}

/// Counts a pass out when dropped, even when the start call panicked, so
/// that a panic cannot close the gate for good.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<T> Starts<T> {
    pub(super) fn new() -> Starts<T> {
        Starts {
            waiting: Queue::new(),
            starting: AtomicUsize::new(0),
            resuming: AtomicBool::new(false),
        }
    }

    /// Leaves a claim for a pass; gives it back once the node has closed
    /// the starts.
    pub(super) fn offer(&self, item: T) -> Result<(), T> {
        self.waiting.push(item)
    }

    /// Starts what waits while `room()` allows, unless enough passes are
    /// in flight already (then one of them takes it). `room()` says how
    /// many claims the next batch may take; `start` gets each batch.
    pub(super) fn pass(&self, room: impl Fn() -> usize, mut start: impl FnMut(Vec<T>)) {
        while !self.waiting.is_empty() && room() > 0 {
            let Some(_in_flight) = self.enter() else {
                // A pass in flight looks at the queue once more after it
                // stops counting itself: it takes what this one leaves.
                return;
            };
            loop {
                let batch = self.waiting.try_take_up_to(room());
                if batch.is_empty() {
                    break;
                }
                start(batch);
            }
            // `_in_flight` counts this pass out here; the loop's test then
            // looks at the queue and the room again.
        }
    }

    /// Counts a pass in if fewer than [`START_CALLS`] are in flight. A
    /// full gate is left exactly as it was (see the module doc).
    fn enter(&self) -> Option<InFlight<'_>> {
        self.starting
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < START_CALLS).then_some(n + 1)
            })
            .ok()
            .map(|_| InFlight(&self.starting))
    }

    /// Whether the caller, which has just freed room, should schedule a
    /// pass: claims wait, no pass is in flight or scheduled (either would
    /// see the room), and `room_enough()`. True for one caller until the
    /// scheduled pass calls [`Starts::resumed`].
    pub(super) fn resume_wanted(&self, room_enough: impl FnOnce() -> bool) -> bool {
        !(self.starting.load(Ordering::SeqCst) > 0
            || self.resuming.load(Ordering::SeqCst)
            || self.waiting.is_empty()
            || !room_enough()
            || self.resuming.swap(true, Ordering::SeqCst))
    }

    /// Called by a scheduled pass before it looks at anything (or by its
    /// caller when it could not be scheduled): room freed from now on may
    /// schedule the next pass.
    pub(super) fn resumed(&self) {
        self.resuming.store(false, Ordering::SeqCst);
    }

    /// How many claims wait.
    pub(super) fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Refuses further offers and takes every claim left (at shutdown,
    /// once no pass can run any more).
    pub(super) fn close(&self) -> Vec<T> {
        self.waiting.close();
        self.waiting.try_take_up_to(usize::MAX)
    }
}

// The loom model compiles this file into its test, where loom's locks
// work only inside a model: these tests are std's.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_pass_takes_what_waits_in_batches_the_room_allows() {
        let starts = Starts::new();
        for i in 0..5 {
            starts.offer(i).unwrap();
        }
        let mut batches = Vec::new();
        starts.pass(|| 2, |b| batches.push(b));
        assert_eq!(batches, [vec![0, 1], vec![2, 3], vec![4]]);
        assert_eq!(starts.len(), 0);
    }

    #[test]
    fn without_room_claims_wait_and_one_caller_resumes() {
        let starts = Starts::new();
        starts.offer(1).unwrap();
        starts.pass(|| 0, |_| panic!("no room: nothing starts"));
        assert_eq!(starts.len(), 1);
        assert!(!starts.resume_wanted(|| false), "not enough room yet");
        assert!(starts.resume_wanted(|| true));
        assert!(!starts.resume_wanted(|| true), "a pass is scheduled");
        starts.resumed();
        assert!(starts.resume_wanted(|| true));
    }

    #[test]
    fn a_start_that_panics_leaves_the_gate_open() {
        let starts = Starts::new();
        starts.offer(1).unwrap();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            starts.pass(|| 1, |_| panic!("the store panicked"));
        }));
        assert!(panicked.is_err());
        starts.offer(2).unwrap();
        let mut started = Vec::new();
        starts.pass(|| 1, |b| started.extend(b));
        assert_eq!(started, [2]);
    }

    #[test]
    fn closed_starts_refuse_offers_and_give_back_what_waits() {
        let starts = Starts::new();
        starts.offer(1).unwrap();
        assert_eq!(starts.close(), [1]);
        assert_eq!(starts.offer(2), Err(2));
    }
}
