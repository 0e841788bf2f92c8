//! The transitions of a slot's state word (`word.rs`): who may make each
//! one, and when.
//!
//! # Transitions
//!
//! | from | to | by | operation |
//! |------|----|----|-----------|
//! | FREE(g) | PENDING(g, p) | the allocating producer (sole owner of a popped free index), under its outbox's lock; `p` = the timer's outbox position | `alloc`, `reuse` (plain store) |
//! | PENDING(g, s) | PENDING(g, s), applied | tick thread, applying a timer it took from an outbox (generation `g`) | `mark_applied` (CAS) |
//! | PENDING(g, *), in an outbox | FREE(g+1) | any thread with a handle, under the outbox's lock | `free_waiting` (plain store: only the lock's holders write the word then) |
//! | PENDING(g, *), not applied, taken from its outbox | FREE(g+1) | any thread with a handle: the index goes to its lane's free list at once | `cancel` (CAS) |
//! | PENDING(g, s) | PENDING(g, s+1) | any thread with a handle | `reset` (CAS) |
//! | RUNNING(g, s), repeating | RUNNING(g, s+1) | any thread with a handle | `reset` (CAS) |
//! | QUEUED(g, s) | QUEUED(g, s+1) | any thread with a handle | `reset` (CAS) |
//! | PENDING(g, s) | QUEUED(g, s) | tick thread, with `s` = the entry's seq | `claim` (CAS) |
//! | QUEUED(g, s) | RUNNING(g, s) | the worker holding the entry, `s` = the entry's seq: **the callback starts** | `start` (CAS) |
//! | QUEUED(g, s') | PENDING(g, s') | the worker, when `s'` ≠ the entry's seq (reset after the claim): the entry goes back to the tick thread | `start` (CAS) |
//! | PENDING(g, *), applied, or QUEUED(g, *) | CANCELLED(g) | any thread with a handle | `cancel` (CAS) |
//! | PENDING(g, *) | CANCELLED(g) | the holder of the entry at shutdown (tick thread, worker) | `cancel_current` (CAS) |
//! | RUNNING(g, *), repeating | CANCELLED(g) | any thread with a handle | `cancel` (CAS) |
//! | RUNNING(g, s) | PENDING(g, s) | the worker that ran it (repeating) | `finish_run` (CAS) |
//! | RUNNING(g, *) | CANCELLED(g) | the worker that ran it (repeating, at shutdown or after a panic) | `stop_running` (CAS) |
//! | RUNNING or CANCELLED (g) | FREE(g+1) | the single owner of the timer's entry (see below) | `release` (plain store) |
//!
//! `release` is a plain store because no other thread can change the word
//! in those states: `cancel`/`reset` never CAS a one-shot RUNNING word or a
//! CANCELLED word, and only the owner of the entry claims or finishes it.
//! Every transition keeps the `applied` bit except the ones to FREE
//! (`release`, and `cancel` of an unapplied timer), which start a new word.
//!
//! **Who frees a cancelled entry.** `cancel` tells its caller where the
//! entry is ([`Cancelled`]): still in a command queue (`applied` clear),
//! with the tick thread (it must be told: a `Cancel` command), or with a
//! worker (which frees it after `start` or `finish_run` fails).
//!
//! **Cancel before the timer is applied.** A timer still in its outbox is
//! cancelled there (`outbox.rs`): under the outbox's lock the canceller
//! frees the slot (a plain store of FREE(g+1)), removes the entry and
//! drops the closure; the tick thread never sees the timer. A timer the
//! tick thread has taken but not applied yet is held by nobody but the
//! tick thread, which has not looked at the slot, so the canceller frees
//! the slot itself: one CAS from PENDING(g) to FREE(g+1), and the index
//! goes to the free list of the handle's lane at once. When the tick
//! thread then applies the timer (the entry carries `g`), `mark_applied`
//! finds another generation (the slot is free or already reused) and the
//! tick thread drops the entry, closure included, without touching the
//! slot. `mark_applied` and `cancel` are CASes on one word, so exactly one
//! of "the tick thread armed the entry" and "the canceller freed the slot"
//! happens. Generations only grow, so a slot's later occupant never
//! carries `g` (until the 32-bit generation wraps, as for handles).
//!
//! **Release ownership.** A slot is released exactly once, by whoever holds
//! the timer's entry (its closure) when it is known to be over: the worker
//! after a one-shot run or after a cancelled/stopped repeating run; the tick
//! thread when it removes a cancelled entry from its wheel, pops one whose
//! claim finds it cancelled, or receives a re-arm of a cancelled timer.
//! Since the entry is unique (it is moved, never copied), so is the
//! release. The exceptions are the cancels before the timer is applied,
//! above, where the canceller frees the slot and drops the entry (in the
//! outbox) or the tick thread frees only the entry (taken, not applied);
//! the outbox's lock, or one CAS, decides which case holds. After `release` the index (with its new generation) goes to its
//! lane's free list; the tick thread does this in batches (`retire` now,
//! `recycle` at the end of its round or every 256 slots).
//!
//! **Linearizability.** "cancel returns true" and "the callback starts" are
//! the two CASes {PENDING, QUEUED}→{CANCELLED, FREE} and QUEUED→RUNNING on
//! the same word; the latter is made by the worker immediately before it
//! calls the closure. For a one-shot timer RUNNING is terminal for
//! `cancel`, so exactly one succeeds; for a repeating timer `cancel` of a
//! RUNNING word succeeds and no later `start` can (the worker's
//! `finish_run` fails), so no run starts after `cancel` returned true. `reset` returning true is
//! the CAS that bumps `seq`; an entry armed with the old `seq` can no
//! longer be claimed, so the old deadline can never fire.

use super::SlotTable;
use super::word::{
    CANCELLED, PENDING, QUEUED, RUNNING, bump_seq, freed, gen_of, is_applied, is_repeat, seq_of,
    state_of, with_applied, with_state,
};
use crate::sync::Ordering;

/// Where a timer's entry was when `cancel` succeeded: who frees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cancelled {
    /// The tick thread took it from its outbox and has not applied it: the
    /// slot is already free again, and the tick thread drops the entry
    /// when it applies it (no command needed).
    Unapplied,
    /// The tick thread holds it: a `Cancel` command must tell it.
    WithTicker,
    /// A worker holds it (QUEUED or RUNNING) and frees it.
    WithWorker,
}

/// What the tick thread's claim of an expired entry found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// PENDING with the entry's seq: now QUEUED; hand it to a worker.
    Won,
    /// The timer was cancelled: drop the entry and release the slot.
    Cancelled,
    /// A reset moved the timer after this entry was armed; its message is
    /// on the way (or already applied to a newer entry).
    Stale,
}

/// What a worker's start of a queued entry found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// Now RUNNING: call the closure.
    Run,
    /// Reset after the claim: now PENDING again; send the entry back to the
    /// tick thread (the reset's command carries the new deadline).
    Moved,
    /// Cancelled after the claim: drop the entry and release the slot.
    Cancelled,
}

impl SlotTable {
    /// `cancel` from a handle of `lane`: PENDING or QUEUED → CANCELLED, or
    /// RUNNING → CANCELLED for a repeating timer; a PENDING timer taken
    /// from its outbox but not applied yet goes to FREE(g+1) instead, and
    /// its index to `lane`'s free list (see "Cancel before the timer is
    /// applied").
    /// On success, where the entry is (who releases the slot); `None` if
    /// the handle's timer is over.
    pub(crate) fn cancel(&self, lane: usize, index: u32, generation: u32) -> Option<Cancelled> {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        loop {
            if gen_of(w) != generation {
                return None;
            }
            let (holder, to) = match state_of(w) {
                PENDING if is_applied(w) => (Cancelled::WithTicker, with_state(w, CANCELLED)),
                PENDING => (Cancelled::Unapplied, freed(w)),
                QUEUED => (Cancelled::WithWorker, with_state(w, CANCELLED)),
                RUNNING if is_repeat(w) => (Cancelled::WithWorker, with_state(w, CANCELLED)),
                _ => return None,
            };
            match word.compare_exchange_weak(w, to, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    if holder == Cancelled::Unapplied {
                        self.recycle(lane, index, gen_of(to));
                    }
                    return Some(holder);
                }
                Err(now) => w = now,
            }
        }
    }

    /// If the timer `(index, generation)` is PENDING and not yet applied
    /// (it may still wait in its lane's outbox), its sequence: its outbox
    /// position if it is there. A hint read without a lock (the outbox
    /// decides under its lock).
    pub(crate) fn unapplied(&self, index: u32, generation: u32) -> Option<u32> {
        let w = self.word(index).load(Ordering::Acquire);
        (gen_of(w) == generation && state_of(w) == PENDING && !is_applied(w)).then(|| seq_of(w))
    }

    /// The tick thread applies a timer of generation `generation` it took
    /// from an outbox:
    /// sets `applied` on its PENDING word (whatever its sequence: a reset's
    /// command about it comes after the take). `false` if the timer was
    /// cancelled first: its canceller freed the slot (which may have a new
    /// occupant already), and the caller drops the entry and leaves the
    /// slot alone.
    pub(crate) fn mark_applied(&self, index: u32, generation: u32) -> bool {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        loop {
            if gen_of(w) != generation {
                return false;
            }
            match state_of(w) {
                PENDING => {}
                other => unreachable!("applied an insert in state {other}"),
            }
            match word.compare_exchange_weak(
                w,
                with_applied(w),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// PENDING → CANCELLED for the slot's current occupant, whatever its
    /// generation and sequence. Used at shutdown by the owner of the entry.
    pub(crate) fn cancel_current(&self, index: u32) -> bool {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        while state_of(w) == PENDING {
            match word.compare_exchange_weak(
                w,
                with_state(w, CANCELLED),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
        false
    }

    /// `reset` from a handle: bumps the sequence of a PENDING timer (or of a
    /// running repeating one). Returns the new sequence on success.
    pub(crate) fn reset(&self, index: u32, generation: u32) -> Option<u32> {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        loop {
            if gen_of(w) != generation {
                return None;
            }
            match state_of(w) {
                PENDING | QUEUED => {}
                RUNNING if is_repeat(w) => {}
                _ => return None,
            }
            let next = bump_seq(w);
            match word.compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(seq_of(next)),
                Err(now) => w = now,
            }
        }
    }

    /// The tick thread's claim of an expired entry armed with `seq`.
    pub(crate) fn claim(&self, index: u32, seq: u32) -> Claim {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        loop {
            match state_of(w) {
                PENDING if seq_of(w) == seq => {}
                PENDING => return Claim::Stale,
                CANCELLED => return Claim::Cancelled,
                other => unreachable!("claimed a slot in state {other}"),
            }
            match word.compare_exchange_weak(
                w,
                with_state(w, QUEUED),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Claim::Won,
                Err(now) => w = now,
            }
        }
    }

    /// The worker's start of a QUEUED entry armed with `seq`.
    pub(crate) fn start(&self, index: u32, seq: u32) -> Start {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        loop {
            let (to, outcome) = match state_of(w) {
                QUEUED if seq_of(w) == seq => (RUNNING, Start::Run),
                QUEUED => (PENDING, Start::Moved),
                CANCELLED => return Start::Cancelled,
                other => unreachable!("started a slot in state {other}"),
            };
            match word.compare_exchange_weak(
                w,
                with_state(w, to),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return outcome,
                Err(now) => w = now,
            }
        }
    }

    /// After a repeating run: RUNNING → PENDING (keeping the sequence).
    /// `Some(current seq)`, or `None` if the timer was cancelled meanwhile.
    pub(crate) fn finish_run(&self, index: u32) -> Option<u32> {
        self.leave_running(index, PENDING)
    }

    /// After a repeating run that must not be re-armed (shutdown, panic):
    /// RUNNING → CANCELLED. `false` if it was already cancelled.
    pub(crate) fn stop_running(&self, index: u32) -> bool {
        self.leave_running(index, CANCELLED).is_some()
    }

    fn leave_running(&self, index: u32, to: u64) -> Option<u32> {
        let word = self.word(index);
        let mut w = word.load(Ordering::Acquire);
        loop {
            match state_of(w) {
                RUNNING => {}
                CANCELLED => return None,
                other => unreachable!("finished a run in state {other}"),
            }
            match word.compare_exchange_weak(
                w,
                with_state(w, to),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(seq_of(w)),
                Err(now) => w = now,
            }
        }
    }

    /// `true` iff `cancel(index, generation)` would succeed now.
    pub(crate) fn is_active(&self, index: u32, generation: u32) -> bool {
        let w = self.word(index).load(Ordering::Acquire);
        gen_of(w) == generation
            && match state_of(w) {
                PENDING | QUEUED => true,
                RUNNING => is_repeat(w),
                _ => false,
            }
    }

    /// The current word (for the tick thread's message checks).
    pub(crate) fn load(&self, index: u32) -> u64 {
        self.word(index).load(Ordering::Acquire)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn table_protocol_single_thread() {
        let t = SlotTable::new(1);
        let (i, g) = t.alloc(0, false, 0).unwrap();
        assert!(t.is_active(i, g));
        assert!(t.mark_applied(i, g));
        assert_eq!(t.reset(i, g), Some(1));
        assert_eq!(t.claim(i, 0), Claim::Stale);
        assert_eq!(t.claim(i, 1), Claim::Won);
        assert_eq!(t.reset(i, g), Some(2), "queued, not started: still movable");
        assert_eq!(t.start(i, 1), Start::Moved);
        assert_eq!(t.claim(i, 2), Claim::Won);
        assert_eq!(t.start(i, 2), Start::Run);
        assert_eq!(
            t.cancel(0, i, g),
            None,
            "a started one-shot cannot be cancelled"
        );
        assert_eq!(t.reset(i, g), None);
        t.release(0, i);
        assert_eq!(t.cancel(0, i, g), None, "stale handle");
        let (j, g2) = t.alloc(0, true, 0).unwrap();
        assert_eq!(
            (j, g2),
            (i, g + 1),
            "free slot reused with a new generation"
        );
        assert!(t.mark_applied(j, g2));
        assert_eq!(t.claim(j, 0), Claim::Won);
        assert_eq!(t.start(j, 0), Start::Run);
        assert_eq!(
            t.reset(j, g2),
            Some(1),
            "a running repeating timer can be moved"
        );
        assert_eq!(t.finish_run(j), Some(1));
        assert_eq!(t.cancel(0, j, g), None);
        assert_eq!(t.cancel(0, j, g2), Some(Cancelled::WithTicker));
        assert_eq!(t.claim(j, 1), Claim::Cancelled);
        assert!(!t.cancel_current(j));
        t.release(0, j);
        let (k, g3) = t.alloc(0, false, 0).unwrap();
        assert!(t.mark_applied(k, g3));
        assert_eq!(t.claim(k, 0), Claim::Won);
        assert_eq!(
            t.cancel(0, k, g3),
            Some(Cancelled::WithWorker),
            "queued: cancellable, the worker releases"
        );
        assert_eq!(t.start(k, 0), Start::Cancelled);
        t.release(0, k);
        // Cancelled before the tick thread applied the insert: the
        // canceller frees the slot; the insert, applied after the slot was
        // reused, finds another generation and leaves the new occupant
        // alone.
        let (u, g4) = t.alloc(0, false, 0).unwrap();
        assert_eq!(t.reset(u, g4), Some(1), "reset keeps it unapplied");
        assert_eq!(t.cancel(0, u, g4), Some(Cancelled::Unapplied));
        assert_eq!(t.cancel(0, u, g4), None);
        let (v, g5) = t.alloc(0, false, 0).unwrap();
        assert_eq!((v, g5), (u, g4 + 1));
        assert!(!t.mark_applied(u, g4));
        assert!(t.is_active(v, g5));
        assert!(t.mark_applied(v, g5));
    }
}
