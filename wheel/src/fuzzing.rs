//! Fuzzing and property-test support: structure-aware operation decoders and
//! differential harnesses. Not part of the stable API; compiled only for
//! `cfg(test)` (the stable proptests below) and `cfg(fuzzing)` (the
//! cargo-fuzz targets in `fuzz/`), so both feed raw bytes through the SAME
//! decoder and the SAME checks.
//!
//! # What a harness checks
//!
//! [`run_wheel`] drives a [`Wheel<u64>`](crate::Wheel) and the reference
//! [`Model`] with one decoded operation sequence and panics on the first
//! divergence: a different entry, effective deadline or key out of `poll`,
//! an early fire, a double fire, a lost entry, a different `len`, `now`,
//! `deadline`, `get` or `get_mut` answer, a stale key that still acts, a
//! reused key, a broken `next_expiration` contract, a `drain` that misses or
//! repeats an entry, a layout accepted or rejected against the rules, or an
//! internal invariant violation (`Wheel::check_invariants`: after every
//! operation in the stable proptests, on a budget in the fuzz targets, see
//! [`Checks`]). [`run_config`] does the same on arbitrary, mostly invalid,
//! layouts and extreme ticks. [`run_delay_queue`] (in `delay_queue/fuzz.rs`) drives a
//! [`DelayQueue<u64>`](crate::DelayQueue) on a [`ManualClock`] (one thread)
//! against the same model counted in the queue's ticks, and checks every
//! item handed out against the clock in `Instant`s; every other operation
//! goes through [`DelayQueue::exclusive`](crate::DelayQueue::exclusive)
//! instead of the shared methods. A panic is what
//! libFuzzer reports as a crash.
//!
//! # Invariants of the harness itself
//!
//! - Model ids are dense (0, 1, 2, ...) and index `WheelHarness::timers`;
//!   a timer's value in the wheel is `id | mutations << ID_BITS`, so any
//!   value coming out of the wheel names the timer it belongs to.
//! - A timer is in `live` exactly while the model holds it; its key moves
//!   to `stale` when it fires, is cancelled or drained, and from then on
//!   every operation on that key must be refused.
//! - Every decision the harness takes (which key, which tick) depends only
//!   on the input bytes and on model state, never on the wheel's answers,
//!   so a divergence is reproducible from the input alone.

use std::collections::HashSet;

use arbitrary::{Arbitrary, Unstructured};

pub use crate::core::model::Model;
pub use crate::delay_queue::fuzz::{
    run_delay_queue, run_delay_queue_ops, Delay, DqHarness, DqInput, DqOp, TickSpec,
};
use crate::{Expired, TimerKey, Wheel, WheelConfig};

/// Upper bound on the operations taken from one input, so that one fuzz
/// execution stays cheap (the fuzzer favours many short runs).
pub const MAX_OPS: usize = 2_000;

/// How often the harness runs `Wheel::check_invariants`, which walks every
/// slot of every level (about 12 ns a slot in release: 5 µs on the default
/// layout of 384 slots, 3 ms on four 16-bit levels), so it costs far more
/// than the operation it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    /// After every operation (the stable proptests; `WHEEL_FUZZ_STRICT=1`
    /// forces it for the fuzz targets, to pinpoint a reproduced crash).
    EveryOp,
    /// Every `max(1, slots / SLOTS_PER_CHECK)` operations, and always
    /// after a drain and at the end: the fuzz targets' default, which keeps
    /// them at several thousand executions a second. An invariant broken
    /// in between is still caught at the next check or by the model.
    Budget,
}

/// See [`Checks::Budget`].
pub const SLOTS_PER_CHECK: u64 = 64;

impl Checks {
    /// `Budget`, unless the environment sets `WHEEL_FUZZ_STRICT` (not "0").
    pub fn from_env() -> Checks {
        if std::env::var_os("WHEEL_FUZZ_STRICT").is_some_and(|v| v != "0") {
            Checks::EveryOp
        } else {
            Checks::Budget
        }
    }

    fn period(self, bits: &[u32]) -> usize {
        match self {
            Checks::EveryOp => 1,
            Checks::Budget => {
                let slots: u64 = bits.iter().map(|&b| 1u64 << b.min(63)).sum();
                usize::try_from(slots / SLOTS_PER_CHECK)
                    .unwrap_or(usize::MAX)
                    .max(1)
            }
        }
    }
}

/// Bits of a timer's value that hold its model id (the rest count `get_mut`
/// writes, so a stale write would show up as a changed value).
const ID_BITS: u32 = 40;
const ID_MASK: u64 = (1 << ID_BITS) - 1;

/// The largest slot count exponent a level may have.
const MAX_LEVEL_BITS: u32 = 16;
/// The widest layout: the sum of all levels' bits.
const MAX_TOTAL_BITS: u64 = 64;

/// `true` if `WheelConfig::new(bits)` must succeed according to the rules
/// of issue 2: non-empty, every level 1..=16 bits, at most 64 bits in all.
pub fn layout_is_valid(bits: &[u32]) -> bool {
    !bits.is_empty()
        && bits.iter().all(|&b| (1..=MAX_LEVEL_BITS).contains(&b))
        && bits.iter().map(|&b| u64::from(b)).sum::<u64>() <= MAX_TOTAL_BITS
}

/// Builds a config and checks that it is accepted exactly when the rules
/// say so (and that a rejection is a real, displayable error).
///
/// # Panics
/// If the verdict differs from [`layout_is_valid`].
pub fn checked_config(bits: &[u32]) -> Option<WheelConfig> {
    let expected = layout_is_valid(bits);
    match WheelConfig::new(bits) {
        Ok(config) => {
            assert!(
                expected,
                "WheelConfig::new accepted invalid layout {bits:?}"
            );
            Some(config)
        }
        Err(err) => {
            assert!(
                !expected,
                "WheelConfig::new rejected valid layout {bits:?}: {err}"
            );
            let as_error: &dyn std::error::Error = &err;
            assert!(
                !as_error.to_string().is_empty(),
                "ConfigError for {bits:?} has an empty message"
            );
            None
        }
    }
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
pub(crate) fn short_vec<'a, T: Arbitrary<'a>>(
    u: &mut Unstructured<'a>,
    max: u8,
) -> arbitrary::Result<Vec<T>> {
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
    fn bits(self) -> u32 {
        match self {
            LevelBits::Small(b) => u32::from(b) % 20,
            LevelBits::Wide(b) => b,
        }
    }
}

/// The most slots a `Valid` layout decodes to, so that building the wheel
/// and checking its invariants (about 12 ns a slot) stay cheap next to the
/// operations: a level of 16 bits alone is 65 536 slots and ~1 ms a check.
/// Wide levels (up to 16 bits) are still built by `LayoutSpec::Raw` and by
/// the `config` target, which accept every layout the rules allow.
const MAX_VALID_SLOTS: u64 = 1 << 12;

/// Maps `Valid` bytes to a layout that the rules accept: each byte `b` is a
/// level of `1 + b % 16` bits, stopping before the total would pass 64 bits
/// or [`MAX_VALID_SLOTS`] slots.
fn valid_layout(bytes: &[u8]) -> Vec<u32> {
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

#[derive(Debug)]
struct Tracked {
    value: u64,
}

/// `KeyBook::pos` of an id that is no longer live.
const GONE: usize = usize::MAX;

/// Every key a harness was handed, by id (ids are dense, in insert order):
/// which ids are still live and which keys went stale, so that operations
/// can aim at either on purpose.
pub(crate) struct KeyBook<K> {
    keys: Vec<K>,
    /// Index of each id in `live`, or `GONE`.
    pos: Vec<usize>,
    live: Vec<u64>,
    stale: Vec<K>,
}

impl<K: Copy> KeyBook<K> {
    pub(crate) fn new() -> Self {
        KeyBook {
            keys: Vec::new(),
            pos: Vec::new(),
            live: Vec::new(),
            stale: Vec::new(),
        }
    }

    /// Records a new live key; returns its id.
    pub(crate) fn add(&mut self, key: K) -> u64 {
        let id = self.keys.len() as u64;
        self.keys.push(key);
        self.pos.push(self.live.len());
        self.live.push(id);
        id
    }

    pub(crate) fn key(&self, id: u64) -> K {
        self.keys[id as usize]
    }

    /// `true` if `id` was handed out and is still live.
    pub(crate) fn is_live(&self, id: u64) -> bool {
        self.pos.get(id as usize).is_some_and(|&p| p != GONE)
    }

    /// A live or a stale key as asked (the other kind if there is none),
    /// with its id if it is live.
    pub(crate) fn pick(&self, pick: Pick) -> Option<(K, Option<u64>)> {
        let live = |i: u16| {
            (!self.live.is_empty()).then(|| {
                let id = self.live[usize::from(i) % self.live.len()];
                (self.keys[id as usize], Some(id))
            })
        };
        let stale = |i: u16| {
            (!self.stale.is_empty()).then(|| (self.stale[usize::from(i) % self.stale.len()], None))
        };
        match pick {
            Pick::Live(i) => live(i).or_else(|| stale(i)),
            Pick::Stale(i) => stale(i).or_else(|| live(i)),
        }
    }

    /// Moves a live id's key to the stale keys.
    pub(crate) fn retire(&mut self, id: u64) {
        let pos = self.pos[id as usize];
        debug_assert_ne!(pos, GONE);
        self.live.swap_remove(pos);
        if let Some(&moved) = self.live.get(pos) {
            self.pos[moved as usize] = pos;
        }
        self.pos[id as usize] = GONE;
        self.stale.push(self.keys[id as usize]);
    }
}

/// A wheel and its model, kept in lock step. See the module docs.
pub struct WheelHarness {
    wheel: Wheel<u64>,
    model: Model<u64>,
    bits: Vec<u32>,
    timers: Vec<Tracked>,
    book: KeyBook<TimerKey>,
    issued: HashSet<TimerKey>,
    step: usize,
    /// Run `check_invariants` every this many operations.
    check_every: usize,
}

impl WheelHarness {
    /// Builds the wheel described by `layout` (checking the accept/reject
    /// verdict for raw layouts).
    pub fn new(layout: &LayoutSpec, checks: Checks) -> WheelHarness {
        const DEFAULT_BITS: [u32; 6] = [6; 6];
        let (wheel, bits) = match layout {
            LayoutSpec::Default => (Wheel::new(), DEFAULT_BITS.to_vec()),
            LayoutSpec::Capacity(n) => {
                (Wheel::with_capacity(usize::from(*n)), DEFAULT_BITS.to_vec())
            }
            LayoutSpec::Valid(bytes) => {
                let bits = valid_layout(bytes);
                let config = checked_config(&bits).expect("valid layout accepted");
                (Wheel::with_config(config), bits)
            }
            LayoutSpec::Raw(levels) => {
                let bits: Vec<u32> = levels.iter().map(|l| l.bits()).collect();
                match checked_config(&bits) {
                    Some(config) => (Wheel::with_config(config), bits),
                    None => (Wheel::new(), DEFAULT_BITS.to_vec()),
                }
            }
        };
        let check_every = checks.period(&bits);
        let harness = WheelHarness {
            wheel,
            model: Model::new(),
            bits,
            timers: Vec::new(),
            book: KeyBook::new(),
            issued: HashSet::new(),
            step: 0,
            check_every,
        };
        harness.check_cheap(&"new");
        harness
    }

    /// The wheel under test (for extra assertions by callers).
    pub fn wheel(&self) -> &Wheel<u64> {
        &self.wheel
    }

    fn fail(&self, op: &dyn std::fmt::Debug, what: std::fmt::Arguments<'_>) -> ! {
        panic!(
            "wheel diverged from the model at op #{} {:?} (now {}, layout {:?}, {} pending): {}",
            self.step,
            op,
            self.model.now(),
            self.bits,
            self.model.len(),
            what
        )
    }

    /// Resolves a `When` against the current clock and layout.
    fn tick(&self, when: When) -> u64 {
        let now = self.model.now();
        match when {
            When::Now => now,
            When::Near(n) => now.saturating_add(u64::from(n)),
            When::Far { mantissa, exponent } => {
                let delta = u128::from(mantissa) << (u32::from(exponent) % 64);
                clamp(u128::from(now) + delta)
            }
            When::Past(n) => now.saturating_sub(u64::from(n)),
            When::Abs(t) => t,
            When::Tie(i) => match self.book.live.len() {
                0 => now,
                n => {
                    let id = self.book.live[usize::from(i) % n];
                    self.model
                        .deadline(id)
                        .expect("live timers are in the model")
                }
            },
            When::Max => u64::MAX,
            When::MaxMinus(n) => u64::MAX - u64::from(n),
            When::Edge {
                level,
                slots,
                nudge,
            } => {
                let levels = self.bits.len() + 1;
                let upto = usize::from(level) % levels;
                let shift: u32 = self.bits[..upto].iter().sum::<u32>().min(64);
                let span = 1u128 << shift;
                let base = (u128::from(now) >> shift) << shift;
                let target = base as i128 + i128::from(slots) * span as i128 + i128::from(nudge);
                clamp(target.max(0) as u128)
            }
        }
    }

    fn poll_tick(&self, to: PollTo) -> u64 {
        let now = self.model.now();
        match to {
            PollTo::Step(n) => now.saturating_add(u64::from(n)),
            PollTo::Jump { mantissa, exponent } => {
                clamp(u128::from(now) + (u128::from(mantissa) << (u32::from(exponent) % 48)))
            }
            PollTo::At(when) => self.tick(when),
            PollTo::NextExpiration => self.wheel.next_expiration().unwrap_or(now),
            PollTo::Earliest => self.model.earliest().unwrap_or(now),
            PollTo::BeforeEarliest => self.model.earliest().map_or(now, |e| e.saturating_sub(1)),
        }
    }

    /// The key an operation addresses, with its model id if it is pending
    /// (`None` for a stale key). Keys are never reissued (checked on every
    /// insert), so a stale key cannot name a pending timer.
    /// Checks one entry that came out of `poll` or `drain` against the
    /// timer the model says it is.
    fn check_expired(&self, op: &dyn std::fmt::Debug, got: &Expired<u64>, id: u64, eff: u64) {
        let t = &self.timers[id as usize];
        let key = self.book.key(id);
        if got.key != key || got.value != t.value || got.deadline != eff {
            self.fail(
                op,
                format_args!(
                    "returned {:?} (timer #{}, deadline {}), model expected timer #{} (key {:?}, value {}, deadline {})",
                    got.key,
                    got.value & ID_MASK,
                    got.deadline,
                    id,
                    key,
                    t.value,
                    eff
                ),
            );
        }
    }

    /// Explains an entry the wheel returned while the model had nothing due.
    fn unexpected(&self, op: &dyn std::fmt::Debug, got: &Expired<u64>) -> ! {
        let id = got.value & ID_MASK;
        let what = match self.timers.get(id as usize) {
            None => "a value that was never inserted",
            Some(_) if !self.book.is_live(id) => {
                "DOUBLE FIRE of a timer already fired, cancelled or drained"
            }
            Some(_) => "EARLY FIRE of a pending timer",
        };
        self.fail(
            op,
            format_args!(
                "poll returned {:?} (timer #{id}, deadline {}) but the model has nothing due (earliest {:?}): {what}",
                got.key,
                got.deadline,
                self.model.earliest()
            ),
        )
    }

    fn poll_once(&mut self, op: &dyn std::fmt::Debug, t: u64) -> bool {
        let got = self.wheel.poll(t);
        let want = self.model.poll(t);
        match (got, want) {
            (None, None) => {
                // Progress: after a poll that found nothing due, sleeping
                // until next_expiration() must not wake at or before now
                // (otherwise a sleep-until loop spins).
                if let Some(e) = self.wheel.next_expiration() {
                    if e <= self.wheel.now() {
                        self.fail(
                            op,
                            format_args!(
                                "poll({t}) returned None but next_expiration() = {e} <= now {} (model earliest {:?}): a sleep-until loop would spin",
                                self.wheel.now(),
                                self.model.earliest()
                            ),
                        );
                    }
                }
                false
            }
            (Some(got), Some((id, eff, _))) => {
                self.check_expired(op, &got, id, eff);
                self.book.retire(id);
                true
            }
            (Some(got), None) => self.unexpected(op, &got),
            (None, Some((id, eff, _))) => self.fail(
                op,
                format_args!(
                    "poll({t}) returned None but timer #{id} (key {:?}, deadline {eff}) is due: LOST or late entry",
                    self.book.key(id)
                ),
            ),
        }
    }

    /// Compares `op`'s view of `key` (absent = stale) with the model.
    fn expect_key_state(&self, op: &dyn std::fmt::Debug, key: TimerKey, id: Option<u64>) {
        let want_deadline = id.and_then(|id| self.model.deadline(id));
        let got = self.wheel.deadline(key);
        if got != want_deadline {
            self.fail(
                op,
                format_args!("deadline({key:?}) = {got:?}, model says {want_deadline:?} (stale keys must answer None)"),
            );
        }
        let want_value = id.map(|id| self.timers[id as usize].value);
        let got = self.wheel.get(key).copied();
        if got != want_value {
            self.fail(
                op,
                format_args!("get({key:?}) = {got:?}, expected {want_value:?}"),
            );
        }
    }

    /// Runs one operation and then the cheap global checks.
    pub fn apply(&mut self, op: WheelOp) {
        self.step += 1;
        let dop: &dyn std::fmt::Debug = &op;
        match op {
            WheelOp::Insert(when) => {
                let t = self.tick(when);
                let id = self.timers.len() as u64;
                let value = id;
                let key = self.wheel.insert(t, value);
                let mid = self.model.insert(t, id);
                assert_eq!(mid, id, "model ids are dense");
                if !self.issued.insert(key) {
                    self.fail(dop, format_args!("insert({t}) returned key {key:?}, which was issued before (keys must be generational)"));
                }
                self.timers.push(Tracked { value });
                assert_eq!(self.book.add(key), id, "key ids are dense");
                let want = self.model.deadline(id);
                let got = self.wheel.deadline(key);
                if got != want {
                    self.fail(dop, format_args!("after insert({t}), deadline = {got:?}, expected {want:?} (max of deadline and now)"));
                }
            }
            WheelOp::Cancel(pick) => {
                if let Some((key, id)) = self.book.pick(pick) {
                    let got = self.wheel.cancel(key);
                    let want = id.and_then(|id| {
                        self.model
                            .cancel(id)
                            .map(|_| self.timers[id as usize].value)
                    });
                    if got != want {
                        self.fail(
                            dop,
                            format_args!("cancel({key:?}) = {got:?}, expected {want:?}"),
                        );
                    }
                    if let Some(id) = id {
                        self.book.retire(id);
                    }
                }
            }
            WheelOp::Reset(pick, when) => {
                if let Some((key, id)) = self.book.pick(pick) {
                    let t = self.tick(when);
                    let got = self.wheel.reset(key, t);
                    let want = id.is_some_and(|id| self.model.reset(id, t));
                    if got != want {
                        self.fail(
                            dop,
                            format_args!("reset({key:?}, {t}) = {got}, expected {want}"),
                        );
                    }
                    self.expect_key_state(dop, key, id);
                }
            }
            WheelOp::Poll(to) => {
                let t = self.poll_tick(to);
                self.poll_once(dop, t);
            }
            WheelOp::PollAll(to) => {
                let t = self.poll_tick(to);
                let bound = self.model.len() + 1;
                let mut fired = 0;
                while self.poll_once(dop, t) {
                    fired += 1;
                    assert!(fired <= bound, "poll kept returning entries");
                }
            }
            WheelOp::NextExpiration => {
                // Walk the sleep-until loop a few times: wake at the
                // reported tick and poll there.
                for _ in 0..4 {
                    match self.wheel.next_expiration() {
                        None => break,
                        Some(e) => {
                            let t = e.max(self.model.now());
                            self.poll_once(dop, t);
                            self.check_cheap(dop);
                        }
                    }
                }
            }
            WheelOp::Drain => self.drain(dop),
            WheelOp::Get(pick) | WheelOp::Deadline(pick) => {
                if let Some((key, id)) = self.book.pick(pick) {
                    self.expect_key_state(dop, key, id);
                }
            }
            WheelOp::GetMut(pick) => {
                if let Some((key, id)) = self.book.pick(pick) {
                    self.expect_key_state(dop, key, id);
                    match (self.wheel.get_mut(key), id) {
                        (None, None) => {}
                        (Some(v), Some(id)) => {
                            let t = &mut self.timers[id as usize];
                            if *v != t.value {
                                let got = *v;
                                self.fail(
                                    dop,
                                    format_args!(
                                        "get_mut({key:?}) sees {got}, expected {}",
                                        self.timers[id as usize].value
                                    ),
                                );
                            }
                            t.value = t.value.wrapping_add(1 << ID_BITS);
                            *v = t.value;
                        }
                        (Some(_), None) => self.fail(
                            dop,
                            format_args!("get_mut({key:?}) gave access through a stale key"),
                        ),
                        (None, Some(id)) => self.fail(
                            dop,
                            format_args!("get_mut({key:?}) = None for pending timer #{id}"),
                        ),
                    }
                }
            }
            WheelOp::ShrinkToFit => {
                self.wheel.shrink_to_fit();
            }
            WheelOp::CheckAll => self.check_all(dop),
        }
        self.check_cheap(dop);
    }

    fn drain(&mut self, op: &dyn std::fmt::Debug) {
        let mut got: Vec<Expired<u64>> = self.wheel.drain().collect();
        let mut want = self.model.drain();
        if got.len() != want.len() {
            self.fail(
                op,
                format_args!(
                    "drain returned {} entries, model had {} pending",
                    got.len(),
                    want.len()
                ),
            );
        }
        got.sort_unstable_by_key(|e| e.value & ID_MASK);
        want.sort_unstable_by_key(|w| w.0);
        for (g, &(id, eff, _)) in got.iter().zip(&want) {
            if g.value & ID_MASK != id {
                self.fail(
                    op,
                    format_args!(
                        "drain returned timer #{} ({:?}) but not timer #{id}, or returned one twice",
                        g.value & ID_MASK,
                        g.key
                    ),
                );
            }
            self.check_expired(op, g, id, eff);
        }
        for &(id, _, _) in &want {
            self.book.retire(id);
        }
        if !self.wheel.is_empty() || self.wheel.next_expiration().is_some() {
            self.fail(op, format_args!("wheel not empty after drain"));
        }
        self.check_invariants(op);
    }

    /// Per-op checks: len, now, emptiness, the `next_expiration` contract
    /// and the wheel's internal invariants.
    fn check_cheap(&self, op: &dyn std::fmt::Debug) {
        if self.wheel.len() != self.model.len() {
            self.fail(
                op,
                format_args!("len {} != model {}", self.wheel.len(), self.model.len()),
            );
        }
        if self.wheel.is_empty() != self.model.is_empty() {
            self.fail(op, format_args!("is_empty disagrees with len"));
        }
        if self.wheel.now() != self.model.now() {
            self.fail(
                op,
                format_args!("now {} != model {}", self.wheel.now(), self.model.now()),
            );
        }
        match (self.wheel.next_expiration(), self.model.earliest()) {
            (None, None) => {}
            (Some(e), Some(earliest)) if e <= earliest => {}
            (got, earliest) => self.fail(
                op,
                format_args!("next_expiration() = {got:?} but the earliest pending effective deadline is {earliest:?} (must be None iff empty, else <= earliest)"),
            ),
        }
        if self.step > 0 && self.step % self.check_every == 0 {
            self.check_invariants(op);
        }
    }

    fn check_invariants(&self, op: &dyn std::fmt::Debug) {
        if let Err(e) = self.wheel.check_invariants() {
            self.fail(op, format_args!("check_invariants: {e}"));
        }
    }

    /// Compares every pending timer's deadline and value (O(n)).
    pub fn check_all(&self, op: &dyn std::fmt::Debug) {
        for &id in &self.book.live {
            let t = &self.timers[id as usize];
            let key = self.book.key(id);
            let want = self.model.deadline(id);
            if want.is_none()
                || self.wheel.deadline(key) != want
                || self.wheel.get(key) != Some(&t.value)
            {
                self.fail(
                    op,
                    format_args!(
                        "timer #{id} ({:?}): wheel says deadline {:?} value {:?}, model {:?} value {}",
                        key,
                        self.wheel.deadline(key),
                        self.wheel.get(key),
                        want,
                        t.value
                    ),
                );
            }
        }
        for &key in &self.book.stale {
            if self.wheel.deadline(key).is_some() || self.wheel.get(key).is_some() {
                self.fail(op, format_args!("stale key {key:?} still answers"));
            }
        }
    }

    /// Ends a run: everything still pending must come out of `drain`.
    pub fn finish(mut self) {
        let op = "final check";
        self.check_invariants(&op);
        self.check_all(&op);
        self.drain(&op);
        self.check_cheap(&op);
    }
}

pub(crate) fn clamp(t: u128) -> u64 {
    u64::try_from(t).unwrap_or(u64::MAX)
}

/// Runs a decoded wheel input against the model with [`Checks::from_env`].
/// Panics on divergence.
pub fn run_wheel(input: &WheelInput) {
    run_wheel_with(input, Checks::from_env());
}

/// Runs a decoded wheel input against the model. Panics on divergence.
pub fn run_wheel_with(input: &WheelInput, checks: Checks) {
    let mut h = WheelHarness::new(&input.layout, checks);
    for &op in input.ops.iter().take(MAX_OPS) {
        h.apply(op);
    }
    h.finish();
}

/// Decodes `data` (the same way libFuzzer's `fuzz_target!` does for a typed
/// input) and runs it. Undecodable input is ignored.
pub fn run_wheel_ops(data: &[u8], checks: Checks) {
    if let Ok(input) = WheelInput::arbitrary_take_rest(Unstructured::new(data)) {
        run_wheel_with(&input, checks);
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
    fn when(self) -> When {
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

/// Runs a `config` input with [`Checks::from_env`]: the layout verdict,
/// then (if accepted) the extreme operations against the model. Panics on
/// divergence.
pub fn run_config(input: &ConfigInput) {
    run_config_with(input, Checks::from_env());
}

/// Runs a `config` input. Panics on divergence.
pub fn run_config_with(input: &ConfigInput, checks: Checks) {
    let layout = LayoutSpec::Raw(input.layout.clone());
    let mut h = WheelHarness::new(&layout, checks);
    for &op in input.ops.iter().take(MAX_OPS) {
        h.apply(match op {
            ExtremeOp::Insert(x) => WheelOp::Insert(x.when()),
            ExtremeOp::Reset(p, x) => WheelOp::Reset(p, x.when()),
            ExtremeOp::Cancel(p) => WheelOp::Cancel(p),
            ExtremeOp::Poll(x) => WheelOp::Poll(PollTo::At(x.when())),
            ExtremeOp::PollAll(x) => WheelOp::PollAll(PollTo::At(x.when())),
            ExtremeOp::NextExpiration => WheelOp::NextExpiration,
        });
    }
    h.finish();
}

/// Decodes and runs a `config` input. Undecodable input is ignored.
pub fn run_config_ops(data: &[u8], checks: Checks) {
    if let Ok(input) = ConfigInput::arbitrary_take_rest(Unstructured::new(data)) {
        run_config_with(&input, checks);
    }
}

#[cfg(all(test, not(loom)))]
/// The committed seed files (`seed-*`) of `fuzz/corpus/<target>/`; the
/// rest of that folder is what local fuzzing runs grew (not committed).
pub(crate) fn seed_corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("seed corpus {} missing: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("seed-"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "seed corpus {} is empty", dir.display());
    files
        .iter()
        .map(|p| std::fs::read(p).expect("read corpus file"))
        .collect()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout_rules() {
        assert!(layout_is_valid(&[6; 6]));
        assert!(layout_is_valid(&[16; 4]));
        assert!(layout_is_valid(&[1; 64]));
        assert!(!layout_is_valid(&[]));
        assert!(!layout_is_valid(&[0]));
        assert!(!layout_is_valid(&[17]));
        assert!(!layout_is_valid(&[1; 65]));
        assert!(!layout_is_valid(&[16, 16, 16, 16, 1]));
        assert!(!layout_is_valid(&[u32::MAX, 2]));
        for bytes in [&[][..], &[255; 100][..], &[0, 15, 7][..]] {
            assert!(layout_is_valid(&valid_layout(bytes)));
        }
    }

    #[test]
    fn hand_written_run_agrees_with_model() {
        use Pick::*;
        use When::*;
        let input = WheelInput {
            layout: LayoutSpec::Valid(vec![1, 3]),
            ops: vec![
                WheelOp::Insert(Near(5)),
                WheelOp::Insert(Max),
                WheelOp::Insert(Near(5)),
                WheelOp::Insert(Past(3)),
                WheelOp::Reset(
                    Live(0),
                    Far {
                        mantissa: 3,
                        exponent: 40,
                    },
                ),
                WheelOp::PollAll(PollTo::Step(5)),
                WheelOp::Cancel(Stale(0)),
                WheelOp::GetMut(Live(1)),
                WheelOp::NextExpiration,
                WheelOp::Poll(PollTo::At(Max)),
                WheelOp::Insert(Abs(3)),
                WheelOp::Drain,
                WheelOp::CheckAll,
            ],
        };
        run_wheel_with(&input, Checks::EveryOp);
    }

    #[test]
    fn replay_seed_corpus_wheel_ops() {
        for data in seed_corpus("wheel_ops") {
            run_wheel_ops(&data, Checks::EveryOp);
        }
    }

    #[test]
    fn replay_seed_corpus_config() {
        for data in seed_corpus("config") {
            run_config_ops(&data, Checks::EveryOp);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn wheel_ops_from_random_bytes(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            run_wheel_ops(&data, Checks::EveryOp);
        }

        #[test]
        fn config_from_random_bytes(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            run_config_ops(&data, Checks::EveryOp);
        }
    }
}
