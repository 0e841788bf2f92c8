//! The state word: everything the threads agree on about one timer, in
//! one `AtomicU64` (see `slots/transitions.rs` for who may change it, and
//! when).
//!
//! ```text
//!  63            32 31                 5    4       3     2..0
//! +---------------+--------------------+-------+------+-------+
//! |  generation   |  reset sequence    |applied|repeat| state |
//! +---------------+--------------------+-------+------+-------+
//! ```
//!
//! - `state` is [`FREE`], [`PENDING`], [`QUEUED`] (due, handed to the
//!   workers, not started), [`RUNNING`] (the callback has started) or
//!   [`CANCELLED`].
//! - `repeat` is set for repeating timers (it decides what `cancel` may do
//!   to a running timer).
//! - `applied` is set by the tick thread when it puts the timer in its
//!   wheel (and never cleared before the slot is freed). While it is clear
//!   the entry is in its outbox or just taken from it, so a `cancel` sends
//!   nothing and frees the slot itself (FREE, next generation): the tick
//!   thread's `mark_applied` then finds another generation and drops only
//!   the entry.
//! - `seq` starts at the timer's position in its lane's outbox (mod 2^27;
//!   `outbox.rs`, so that a handle finds its timer there) and counts the
//!   successful `reset`s after the tick thread took it; the tick thread
//!   stores the `seq` it armed an entry with and fires the entry only if
//!   the word still carries that `seq`.
//! - `generation` is bumped each time the slot is freed, so a handle (index,
//!   generation) of an earlier occupant never matches again (until the 32-bit
//!   generation wraps, i.e. after 2^32 reuses of the same slot while the old
//!   handle is kept; the free lists are (mostly) FIFO, which spreads reuse
//!   over all free slots).

/// `state` value of a slot on the free list.
pub(crate) const FREE: u64 = 0;
/// `state` value of a scheduled timer whose (next) run has not started.
pub(crate) const PENDING: u64 = 1;
/// `state` value while a run has been claimed by the tick thread and has
/// not finished.
pub(crate) const RUNNING: u64 = 2;
/// `state` value of a cancelled timer whose slot is not yet released.
pub(crate) const CANCELLED: u64 = 3;
/// `state` value of a run that the tick thread handed to the workers and
/// that has not started yet (still cancellable and resettable).
pub(crate) const QUEUED: u64 = 4;

const STATE_MASK: u64 = 0b111;
const REPEAT_BIT: u64 = 1 << 3;
const APPLIED_BIT: u64 = 1 << 4;
const SEQ_SHIFT: u32 = 5;
/// Width of the reset sequence number.
const SEQ_BITS: u32 = 27;
const SEQ_LIMIT: u32 = 1 << SEQ_BITS;
const SEQ_MASK: u64 = ((SEQ_LIMIT as u64) - 1) << SEQ_SHIFT;
const GEN_SHIFT: u32 = 32;

/// Packs the fields of a state word (`applied` clear: see [`with_applied`]).
pub(crate) fn pack(generation: u32, seq: u32, repeat: bool, state: u64) -> u64 {
    debug_assert!(state <= STATE_MASK && seq < SEQ_LIMIT);
    (u64::from(generation) << GEN_SHIFT)
        | (u64::from(seq % SEQ_LIMIT) << SEQ_SHIFT)
        | if repeat { REPEAT_BIT } else { 0 }
        | (state & STATE_MASK)
}

/// The generation of a state word.
pub(crate) fn gen_of(w: u64) -> u32 {
    (w >> GEN_SHIFT) as u32
}

/// The reset sequence number of a state word.
pub(crate) fn seq_of(w: u64) -> u32 {
    ((w & SEQ_MASK) >> SEQ_SHIFT) as u32
}

/// The state of a state word.
pub(crate) fn state_of(w: u64) -> u64 {
    w & STATE_MASK
}

/// Whether the word belongs to a repeating timer.
pub(crate) fn is_repeat(w: u64) -> bool {
    w & REPEAT_BIT != 0
}

/// Whether the tick thread has put the timer in its wheel.
pub(crate) fn is_applied(w: u64) -> bool {
    w & APPLIED_BIT != 0
}

/// The same word with `applied` set.
pub(crate) fn with_applied(w: u64) -> u64 {
    w | APPLIED_BIT
}

/// The same word with another state.
pub(crate) fn with_state(w: u64, state: u64) -> u64 {
    (w & !STATE_MASK) | (state & STATE_MASK)
}

/// `v` as a sequence number (mod 2^27).
pub(crate) fn wrap_seq(v: u32) -> u32 {
    v % SEQ_LIMIT
}

/// The same word with the reset sequence incremented (mod 2^27).
pub(crate) fn bump_seq(w: u64) -> u64 {
    let seq = (seq_of(w) + 1) % SEQ_LIMIT;
    (w & !SEQ_MASK) | (u64::from(seq) << SEQ_SHIFT)
}

/// The word of a freed slot: next generation, sequence 0, FREE.
pub(crate) fn freed(w: u64) -> u64 {
    pack(gen_of(w).wrapping_add(1), 0, false, FREE)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn word_fields_round_trip_at_boundaries() {
        for &(generation, seq, repeat, state) in &[
            (0u32, 0u32, false, FREE),
            (u32::MAX, SEQ_LIMIT - 1, true, CANCELLED),
            (1, 1, false, PENDING),
            (0x8000_0000, 0x0400_0000, true, RUNNING),
        ] {
            let w = pack(generation, seq, repeat, state);
            assert_eq!(gen_of(w), generation);
            assert_eq!(seq_of(w), seq);
            assert_eq!(is_repeat(w), repeat);
            assert_eq!(state_of(w), state);
            assert!(!is_applied(w));
            let a = with_applied(w);
            assert!(is_applied(a));
            assert_eq!(
                (gen_of(a), seq_of(a), is_repeat(a), state_of(a)),
                (generation, seq, repeat, state)
            );
        }
    }

    #[test]
    fn seq_wraps_without_touching_other_fields() {
        let w = with_applied(pack(7, SEQ_LIMIT - 1, true, RUNNING));
        let b = bump_seq(w);
        assert_eq!(seq_of(b), 0);
        assert_eq!(gen_of(b), 7);
        assert!(is_repeat(b));
        assert!(is_applied(b));
        assert!(is_applied(with_state(b, CANCELLED)));
        assert_eq!(state_of(b), RUNNING);
        let f = freed(with_applied(pack(u32::MAX, 5, true, CANCELLED)));
        assert_eq!(
            (
                gen_of(f),
                seq_of(f),
                is_repeat(f),
                is_applied(f),
                state_of(f)
            ),
            (0, 0, false, false, FREE)
        );
        assert_eq!(state_of(with_state(w, PENDING)), PENDING);
    }
}
