//! The `delay_queue_ops` input: a structure-aware decoder of bytes into a
//! tick, a capacity and queue operations, each byte range mapped to one
//! kind of operation (the mapping is the corpus's meaning: change it only
//! together with the seeds).

use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};

use crate::core::testing::{Pick, ops_until_empty};

/// A tick length for the queue under test (some invalid, to check the
/// builder's errors).
#[derive(Debug, Clone, Copy)]
pub enum TickSpec {
    /// 1 ns: rounding is exact.
    Nano,
    /// 1 µs.
    Micro,
    /// 1 ms (the default tick).
    Milli,
    /// An odd length `1 + n` ns, so that tick edges fall between round numbers.
    Odd(u16),
    /// `1 + n` seconds.
    Secs(u8),
    /// Zero: `build` must fail with `BuildError::ZeroTick`.
    Zero,
    /// `Duration::MAX`: `build` must fail with `BuildError::TickTooLong`.
    TooLong,
}

impl<'a> Arbitrary<'a> for TickSpec {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let sel: u8 = u.arbitrary()?;
        Ok(match sel {
            0..=59 => TickSpec::Nano,
            60..=99 => TickSpec::Micro,
            100..=159 => TickSpec::Milli,
            160..=219 => TickSpec::Odd(u.arbitrary()?),
            220..=249 => TickSpec::Secs(u.arbitrary()?),
            250..=252 => TickSpec::Zero,
            _ => TickSpec::TooLong,
        })
    }
}

impl TickSpec {
    /// The tick length this stands for.
    pub(super) fn duration(self) -> Duration {
        match self {
            TickSpec::Nano => Duration::from_nanos(1),
            TickSpec::Micro => Duration::from_micros(1),
            TickSpec::Milli => Duration::from_millis(1),
            TickSpec::Odd(n) => Duration::from_nanos(1 + u64::from(n)),
            TickSpec::Secs(n) => Duration::from_secs(1 + u64::from(n)),
            TickSpec::Zero => Duration::ZERO,
            TickSpec::TooLong => Duration::MAX,
        }
    }
}

/// A delay, relative to the queue's tick where that matters.
#[derive(Debug, Clone, Copy)]
pub enum Delay {
    /// Zero: due at once.
    Zero,
    /// `n` nanoseconds (mostly inside one tick).
    Nanos(u16),
    /// `ticks` ticks plus `off` nanoseconds: right on and around tick edges.
    Ticks {
        /// Whole ticks.
        ticks: u8,
        /// Offset in nanoseconds.
        off: i8,
    },
    /// `mantissa << exponent` nanoseconds, up to far past `u64::MAX` ns.
    Far {
        /// The significant bits.
        mantissa: u16,
        /// The shift (modulo 80).
        exponent: u8,
    },
    /// `Duration::MAX`.
    Max,
}

impl<'a> Arbitrary<'a> for Delay {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let sel: u8 = u.arbitrary()?;
        Ok(match sel {
            0..=29 => Delay::Zero,
            30..=79 => Delay::Nanos(u.arbitrary()?),
            80..=199 => Delay::Ticks {
                ticks: u.arbitrary::<u8>()? % 16,
                off: u.arbitrary::<i8>()? % 3,
            },
            200..=247 => Delay::Far {
                mantissa: u.arbitrary()?,
                exponent: u.arbitrary()?,
            },
            _ => Delay::Max,
        })
    }
}

/// One operation on the queue.
#[derive(Debug, Clone, Copy)]
pub enum DqOp {
    /// `insert(value, delay)`.
    Insert(Delay),
    /// `insert_at(value, now - n ns)`: at or before now, possibly before the
    /// queue was built.
    InsertAtPast(u32),
    /// `insert_at(value, now + delay)` (skipped if that overflows `Instant`).
    InsertAt(Delay),
    /// `remove(key)`.
    Remove(Pick),
    /// `reset(key, delay)`, or `reset_at(key, now + delay)` on every other
    /// pair of steps when that instant exists (see [`DqHarness`]).
    Reset(Pick, Delay),
    /// One `try_take()`, or `try_take_expired()` on every other pair of
    /// steps.
    TryTake,
    /// `try_take()` until `None`, then `shrink_to_fit()` on every other
    /// pair of steps.
    TakeAll,
    /// `take_timeout(Duration::ZERO)`: must not block, answers like `try_take`.
    TakeTimeoutZero,
    /// `clock.advance(delay)`.
    Advance(Delay),
    /// `close()`.
    Close,
    /// `drain()`, compared with the model as a set, in deadline order; on
    /// every other pair of steps `clear()` instead.
    Drain,
}

impl<'a> Arbitrary<'a> for DqOp {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let sel: u8 = u.arbitrary()?;
        Ok(match sel {
            0..=69 => DqOp::Insert(u.arbitrary()?),
            70..=79 => DqOp::InsertAtPast(u.arbitrary()?),
            80..=94 => DqOp::InsertAt(u.arbitrary()?),
            95..=109 => DqOp::Remove(u.arbitrary()?),
            110..=129 => DqOp::Reset(u.arbitrary()?, u.arbitrary()?),
            130..=164 => DqOp::TryTake,
            165..=179 => DqOp::TakeAll,
            180..=189 => DqOp::TakeTimeoutZero,
            190..=249 => DqOp::Advance(u.arbitrary()?),
            250..=251 => DqOp::Close,
            _ => DqOp::Drain,
        })
    }
}

/// A whole `delay_queue_ops` input.
#[derive(Debug, Clone)]
pub struct DqInput {
    /// The queue's tick.
    pub tick: TickSpec,
    /// The builder's `capacity`.
    pub capacity: u16,
    /// The operations (at most [`MAX_OPS`]).
    pub ops: Vec<DqOp>,
}

impl<'a> Arbitrary<'a> for DqInput {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(DqInput {
            tick: u.arbitrary()?,
            capacity: u.arbitrary()?,
            ops: ops_until_empty(u)?,
        })
    }

    fn arbitrary_take_rest(mut u: Unstructured<'a>) -> arbitrary::Result<Self> {
        Self::arbitrary(&mut u)
    }
}
