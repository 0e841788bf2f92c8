//! The operation decoders: how raw fuzz bytes become a wheel layout and a
//! sequence of [`WheelOp`]s, with weights that favour what finds bugs
//! (small distances, ties, level edges, extreme ticks). `arbitrary` does
//! the decoding, so the fuzz targets (typed inputs) and the stable
//! proptests (random bytes, seed files) read bytes the same way.
//!
//! Every tick and key here is relative ([`When`], [`PollTo`], [`Pick`]):
//! the harness resolves it against its own state, so that any byte string
//! is a meaningful run.

use arbitrary::{Arbitrary, Unstructured};

/// Upper bound on the operations taken from one input, so that one fuzz
/// execution stays cheap (the fuzzer favours many short runs).
pub const MAX_OPS: usize = 2_000;

/// The largest slot count exponent a level may have.
const MAX_LEVEL_BITS: u32 = 16;
/// The widest layout: the sum of all levels' bits.
const MAX_TOTAL_BITS: u64 = 64;

/// `true` if `WheelConfig::new(bits)` must succeed according to the layout
/// rules: non-empty, every level 1..=16 bits, at most 64 bits in all.
/// (Stated here again, apart from `WheelConfig::new`, as the oracle the
/// harness checks it against.)
pub fn layout_is_valid(bits: &[u32]) -> bool {
    !bits.is_empty()
        && bits.iter().all(|&b| (1..=MAX_LEVEL_BITS).contains(&b))
        && bits.iter().map(|&b| u64::from(b)).sum::<u64>() <= MAX_TOTAL_BITS
}

/// How the wheel under test is built.
#[derive(Debug, Clone)]
pub enum LayoutSpec {
    /// `Wheel::new()` (the default layout).
    Default,
    /// `Wheel::with_capacity(n)`.
    Capacity(u16),
    /// A valid layout: each byte `b` becomes a level of `1 + b % 16` bits,
    /// stopping before the total would pass 64.
    Valid(Vec<u8>),
    /// Any layout, usually invalid: it must be rejected with a
    /// `ConfigError` (the run then continues on the default layout).
    Raw(Vec<LevelBits>),
}

/// Decodes a short list: a count byte (modulo `max + 1`), then the items.
/// (A derived `Vec` may swallow most of the input; this keeps the layout
/// small and leaves the bytes to the operations.)
fn short_vec<'a, T: Arbitrary<'a>>(u: &mut Unstructured<'a>, max: u8) -> arbitrary::Result<Vec<T>> {
    let n = u.arbitrary::<u8>()? % (max + 1);
    (0..n).map(|_| u.arbitrary()).collect()
}

/// The most levels a decoded layout has (64 one-bit levels is the widest
/// valid one; a few more make it invalid).
const MAX_DECODED_LEVELS: u8 = 70;

impl<'a> Arbitrary<'a> for LayoutSpec {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let sel: u8 = u.arbitrary()?;
        Ok(match sel {
            0..=29 => LayoutSpec::Default,
            30..=49 => LayoutSpec::Capacity(u.arbitrary()?),
            50..=219 => LayoutSpec::Valid(short_vec(u, MAX_DECODED_LEVELS)?),
            _ => LayoutSpec::Raw(short_vec(u, MAX_DECODED_LEVELS)?),
        })
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (1, None)
    }
}

/// One level's bit count in a raw (possibly invalid) layout.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum LevelBits {
    /// `b % 20`: 0, the valid 1..=16, and a few just above the limit.
    Small(u8),
    /// Any `u32` (overflow bait for a careless sum).
    Wide(u32),
}

impl LevelBits {
    pub(super) fn bits(self) -> u32 {
        match self {
            LevelBits::Small(b) => u32::from(b) % 20,
            LevelBits::Wide(b) => b,
        }
    }
}

/// The most slots a `Valid` layout decodes to, so that building the wheel
/// and checking its invariants (which grow with the slots) stay cheap next
/// to the operations: a level of 16 bits alone is 65 536 slots.
/// Wide levels (up to 16 bits) are still built by `LayoutSpec::Raw` and by
/// the `config` target, which accept every layout the rules allow.
const MAX_VALID_SLOTS: u64 = 1 << 12;

/// Maps `Valid` bytes to a layout that the rules accept: each byte `b` is a
/// level of `1 + b % 16` bits, stopping before the total would pass 64 bits
/// or [`MAX_VALID_SLOTS`] slots.
pub(crate) fn valid_layout(bytes: &[u8]) -> Vec<u32> {
    let mut bits = Vec::new();
    let (mut total, mut slots) = (0u64, 0u64);
    for &b in bytes {
        let level = 1 + u32::from(b) % MAX_LEVEL_BITS;
        if total + u64::from(level) > MAX_TOTAL_BITS || slots + (1 << level) > MAX_VALID_SLOTS {
            break;
        }
        total += u64::from(level);
        slots += 1 << level;
        bits.push(level);
    }
    if bits.is_empty() {
        bits.push(1 + u32::from(bytes.first().copied().unwrap_or(5)) % MAX_LEVEL_BITS);
    }
    bits
}

/// A tick chosen relative to the harness's state (its clock, layout and
/// pending timers). Decoded with weights that favour small distances and
/// ties, where ordering bugs live.
#[derive(Debug, Clone, Copy)]
pub enum When {
    /// The current tick.
    Now,
    /// `now + n`.
    Near(u8),
    /// `now + mantissa << exponent`: spread over every magnitude.
    Far {
        /// The significant bits.
        mantissa: u16,
        /// The shift, taken modulo 64.
        exponent: u8,
    },
    /// `now - n` (saturating): already due.
    Past(u16),
    /// An absolute tick.
    Abs(u64),
    /// `u64::MAX`.
    Max,
    /// `u64::MAX - n`.
    MaxMinus(u16),
    /// Near a boundary of the layout: the tick `slots` spans of the first
    /// `level` levels after the start of the current such span, moved by
    /// `nudge`.
    Edge {
        /// How many levels make the span (modulo the level count + 1).
        level: u8,
        /// How many spans ahead.
        slots: u8,
        /// A small offset around the boundary.
        nudge: i8,
    },
    /// The effective deadline of a pending timer (index modulo the number
    /// pending; `now` if none): makes ties, to check FIFO order.
    Tie(u16),
}

impl<'a> Arbitrary<'a> for When {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let sel: u8 = u.arbitrary()?;
        Ok(match sel {
            0..=9 => When::Now,
            10..=79 => When::Near(u.arbitrary::<u8>()? % 16),
            80..=109 => When::Near(u.arbitrary()?),
            110..=139 => When::Far {
                mantissa: u.arbitrary()?,
                exponent: u.arbitrary()?,
            },
            140..=149 => When::Past(u.arbitrary()?),
            150..=154 => When::Abs(u.arbitrary()?),
            155..=164 => When::Max,
            165..=169 => When::MaxMinus(u.arbitrary::<u16>()? % 512),
            170..=219 => When::Edge {
                level: u.arbitrary()?,
                slots: u.arbitrary::<u8>()? % 4,
                nudge: u.arbitrary::<i8>()? % 4,
            },
            _ => When::Tie(u.arbitrary()?),
        })
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (1, Some(9))
    }
}

/// Where a poll moves the clock to.
#[derive(Debug, Clone, Copy)]
pub enum PollTo {
    /// `now + n`.
    Step(u8),
    /// `now + mantissa << exponent`, a jump of any size short of the end
    /// of time (exponent below 48, so that runs do not all end at
    /// `u64::MAX` where everything is due at once).
    Jump {
        /// The significant bits.
        mantissa: u16,
        /// The shift (taken modulo 48).
        exponent: u8,
    },
    /// Any tick chosen like a deadline (may be behind `now`).
    At(When),
    /// Whatever the wheel's `next_expiration()` says (or `now`): the
    /// scheduler's sleep-until loop.
    NextExpiration,
    /// The model's earliest effective deadline (exact boundary).
    Earliest,
    /// One tick before the model's earliest effective deadline.
    BeforeEarliest,
}

impl<'a> Arbitrary<'a> for PollTo {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let sel: u8 = u.arbitrary()?;
        Ok(match sel {
            0..=89 => PollTo::Step(u.arbitrary::<u8>()? % 8),
            90..=129 => PollTo::Step(u.arbitrary()?),
            130..=159 => PollTo::Jump {
                mantissa: u.arbitrary()?,
                exponent: u.arbitrary::<u8>()? % 48,
            },
            160..=174 => PollTo::At(u.arbitrary()?),
            175..=214 => PollTo::NextExpiration,
            215..=239 => PollTo::Earliest,
            _ => PollTo::BeforeEarliest,
        })
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (1, Some(10))
    }
}

/// Which timer an operation addresses.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Pick {
    /// A pending timer (index modulo the number pending); falls back to a
    /// stale key when nothing is pending.
    Live(u16),
    /// A key whose timer already fired, was cancelled or drained; falls
    /// back to a pending one when there is none.
    Stale(u16),
}

/// One operation on the wheel. Decoded with weights: mostly inserts and
/// polls, so that timers pile up and come out in interesting orders.
#[derive(Debug, Clone, Copy)]
pub enum WheelOp {
    /// `insert(deadline, value)`.
    Insert(When),
    /// `cancel(key)`.
    Cancel(Pick),
    /// `reset(key, deadline)`.
    Reset(Pick, When),
    /// One `poll(t)`.
    Poll(PollTo),
    /// `poll(t)` until it returns `None`.
    PollAll(PollTo),
    /// `next_expiration()` (its contract is checked after every op anyway;
    /// this variant walks the sleep-until loop a few times).
    NextExpiration,
    /// `drain()`, compared with the model as a set.
    Drain,
    /// `get(key)`.
    Get(Pick),
    /// `get_mut(key)`, writing a new value through it.
    GetMut(Pick),
    /// `deadline(key)`.
    Deadline(Pick),
    /// `shrink_to_fit()`.
    ShrinkToFit,
    /// Compare every pending timer's deadline and value.
    CheckAll,
}

impl<'a> Arbitrary<'a> for WheelOp {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let sel: u8 = u.arbitrary()?;
        Ok(match sel {
            0..=89 => WheelOp::Insert(u.arbitrary()?),
            90..=109 => WheelOp::Cancel(u.arbitrary()?),
            110..=134 => WheelOp::Reset(u.arbitrary()?, u.arbitrary()?),
            135..=174 => WheelOp::Poll(u.arbitrary()?),
            175..=204 => WheelOp::PollAll(u.arbitrary()?),
            205..=214 => WheelOp::NextExpiration,
            215..=216 => WheelOp::Drain,
            217..=226 => WheelOp::Get(u.arbitrary()?),
            227..=236 => WheelOp::GetMut(u.arbitrary()?),
            237..=246 => WheelOp::Deadline(u.arbitrary()?),
            247..=250 => WheelOp::ShrinkToFit,
            _ => WheelOp::CheckAll,
        })
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (1, Some(20))
    }
}

/// A whole wheel fuzz input: a layout and the operations to run on it.
#[derive(Debug, Clone)]
pub struct WheelInput {
    /// How to build the wheel.
    pub layout: LayoutSpec,
    /// What to do with it (at most [`MAX_OPS`] are run).
    pub ops: Vec<WheelOp>,
}

/// Decodes operations until the input runs out (at most [`MAX_OPS`]).
///
/// Unlike `arbitrary`'s own `Vec` decoding, there is no "continue?" flag
/// before each element, so random bytes (the stable proptests) give long
/// sequences too, not one or two operations.
pub(crate) fn ops_until_empty<'a, T: Arbitrary<'a>>(
    u: &mut Unstructured<'a>,
) -> arbitrary::Result<Vec<T>> {
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < MAX_OPS {
        ops.push(u.arbitrary()?);
    }
    Ok(ops)
}

impl<'a> Arbitrary<'a> for WheelInput {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(WheelInput {
            layout: u.arbitrary()?,
            ops: ops_until_empty(u)?,
        })
    }

    fn arbitrary_take_rest(mut u: Unstructured<'a>) -> arbitrary::Result<Self> {
        Self::arbitrary(&mut u)
    }
}

/// An extreme tick for the `config` target.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Extreme {
    /// Tick 0.
    Zero,
    /// Tick 1.
    One,
    /// `u64::MAX`.
    Max,
    /// `u64::MAX - 1`.
    MaxMinusOne,
    /// `2^k - 1`, `2^k` or `2^k + 1` for k < 64.
    PowerOfTwo {
        /// The exponent, modulo 64.
        k: u8,
        /// -1, 0 or +1 (modulo 3).
        off: u8,
    },
    /// A level boundary of the layout.
    Edge {
        /// Which level (modulo levels + 1).
        level: u8,
        /// How many spans ahead.
        slots: u8,
        /// Offset.
        nudge: i8,
    },
    /// Any tick.
    Any(u64),
}

/// An operation of the `config` target: only extreme ticks.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum ExtremeOp {
    /// Insert at an extreme tick.
    Insert(Extreme),
    /// Reset a timer to an extreme tick.
    Reset(Pick, Extreme),
    /// Cancel a timer.
    Cancel(Pick),
    /// Poll once at an extreme tick (a huge jump, or backwards).
    Poll(Extreme),
    /// Poll until nothing is due at an extreme tick.
    PollAll(Extreme),
    /// Follow `next_expiration` a few times.
    NextExpiration,
}

/// The `config` target's input: any layout (mostly invalid) and extreme ticks.
#[derive(Debug, Clone)]
pub struct ConfigInput {
    /// The raw layout; must be rejected with `ConfigError` iff it breaks the rules.
    pub layout: Vec<LevelBits>,
    /// Operations run (against the model) if the layout was accepted.
    pub ops: Vec<ExtremeOp>,
}

impl<'a> Arbitrary<'a> for ConfigInput {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(ConfigInput {
            layout: short_vec(u, MAX_DECODED_LEVELS)?,
            ops: ops_until_empty(u)?,
        })
    }

    fn arbitrary_take_rest(mut u: Unstructured<'a>) -> arbitrary::Result<Self> {
        Self::arbitrary(&mut u)
    }
}

impl Extreme {
    pub(super) fn when(self) -> When {
        match self {
            Extreme::Zero => When::Abs(0),
            Extreme::One => When::Abs(1),
            Extreme::Max => When::Max,
            Extreme::MaxMinusOne => When::MaxMinus(1),
            Extreme::PowerOfTwo { k, off } => {
                let p = 1u64 << (k % 64);
                When::Abs(match off % 3 {
                    0 => p - 1,
                    1 => p,
                    _ => p.saturating_add(1),
                })
            }
            Extreme::Edge {
                level,
                slots,
                nudge,
            } => When::Edge {
                level,
                slots,
                nudge,
            },
            Extreme::Any(t) => When::Abs(t),
        }
    }
}

impl ExtremeOp {
    /// The wheel operation this stands for.
    pub fn op(self) -> WheelOp {
        match self {
            ExtremeOp::Insert(x) => WheelOp::Insert(x.when()),
            ExtremeOp::Reset(p, x) => WheelOp::Reset(p, x.when()),
            ExtremeOp::Cancel(p) => WheelOp::Cancel(p),
            ExtremeOp::Poll(x) => WheelOp::Poll(PollTo::At(x.when())),
            ExtremeOp::PollAll(x) => WheelOp::PollAll(PollTo::At(x.when())),
            ExtremeOp::NextExpiration => WheelOp::NextExpiration,
        }
    }
}
