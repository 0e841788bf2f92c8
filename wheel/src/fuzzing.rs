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
//! layouts and extreme ticks. [`run_delay_queue`] drives a
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
use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};

pub use crate::core::model::Model;
use crate::{
    BuildError, Closed, DelayKey, DelayQueue, Expired, ManualClock, TimerKey, Wheel, WheelConfig,
};

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
fn ops_until_empty<'a, T: Arbitrary<'a>>(u: &mut Unstructured<'a>) -> arbitrary::Result<Vec<T>> {
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
struct KeyBook<K> {
    keys: Vec<K>,
    /// Index of each id in `live`, or `GONE`.
    pos: Vec<usize>,
    live: Vec<u64>,
    stale: Vec<K>,
}

impl<K: Copy> KeyBook<K> {
    fn new() -> Self {
        KeyBook {
            keys: Vec::new(),
            pos: Vec::new(),
            live: Vec::new(),
            stale: Vec::new(),
        }
    }

    /// Records a new live key; returns its id.
    fn add(&mut self, key: K) -> u64 {
        let id = self.keys.len() as u64;
        self.keys.push(key);
        self.pos.push(self.live.len());
        self.live.push(id);
        id
    }

    fn key(&self, id: u64) -> K {
        self.keys[id as usize]
    }

    /// `true` if `id` was handed out and is still live.
    fn is_live(&self, id: u64) -> bool {
        self.pos.get(id as usize).is_some_and(|&p| p != GONE)
    }

    /// A live or a stale key as asked (the other kind if there is none),
    /// with its id if it is live.
    fn pick(&self, pick: Pick) -> Option<(K, Option<u64>)> {
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
    fn retire(&mut self, id: u64) {
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

fn clamp(t: u128) -> u64 {
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

// ---------------------------------------------------------------------------
// DelayQueue: single thread, driven by a ManualClock.
// ---------------------------------------------------------------------------

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
    fn duration(self) -> Duration {
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
    /// `push(value, delay)`.
    Push(Delay),
    /// `push_at(value, now - n ns)`: at or before now, possibly before the
    /// queue was built.
    PushAtPast(u32),
    /// `push_at(value, now + delay)` (skipped if that overflows `Instant`).
    PushAt(Delay),
    /// `remove(key)`.
    Remove(Pick),
    /// `reset(key, delay)`.
    Reset(Pick, Delay),
    /// One `try_take()`.
    TryTake,
    /// `try_take()` until `None`.
    TakeAll,
    /// `take_timeout(Duration::ZERO)`: must not block, answers like `try_take`.
    TakeTimeoutZero,
    /// `clock.advance(delay)`.
    Advance(Delay),
    /// `close()`.
    Close,
    /// `drain()`, compared with the model as a set, in deadline order.
    Drain,
}

impl<'a> Arbitrary<'a> for DqOp {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let sel: u8 = u.arbitrary()?;
        Ok(match sel {
            0..=69 => DqOp::Push(u.arbitrary()?),
            70..=79 => DqOp::PushAtPast(u.arbitrary()?),
            80..=94 => DqOp::PushAt(u.arbitrary()?),
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

#[derive(Debug)]
struct DqItem {
    /// The instant asked for; `None` if it is past the range of `Instant`
    /// (the item must never come out of `take`).
    at: Option<Instant>,
}

/// A `DelayQueue<u64>` on a `ManualClock`, kept in lock step with the
/// reference [`Model`] counted in the queue's ticks. Odd steps push, remove,
/// reset, take and count through [`DelayQueue::exclusive`], even steps
/// through the shared methods.
///
/// The model applies the documented rounding (a deadline in the future
/// rounds *up* to a tick boundary; a deadline at or before now is due at
/// the current tick, which is now rounded *down*). Tick `u64::MAX` means
/// "never": deadlines past the range of `Instant` or of the ticks land
/// there, and the model's clock stops one tick short of it, because
/// `Duration::MAX` and far-future instants must simply never fire.
/// Independently of that arithmetic, every item handed out is checked
/// against the clock in `Instant`s: never before the instant asked for.
pub struct DqHarness {
    queue: DelayQueue<u64>,
    clock: ManualClock,
    start: Instant,
    tick_ns: u128,
    model: Model<u64>,
    items: Vec<DqItem>,
    book: KeyBook<DelayKey>,
    closed: bool,
    step: usize,
}

/// The tick of a queue item that must never come due.
const NEVER_TICK: u64 = u64::MAX;

/// A duration from nanoseconds, saturating at `Duration::MAX`.
fn duration_from_nanos(ns: u128) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    match u64::try_from(ns / NANOS_PER_SEC) {
        Ok(secs) => Duration::new(secs, (ns % NANOS_PER_SEC) as u32),
        Err(_) => Duration::MAX,
    }
}

impl DqHarness {
    /// Builds the queue; `None` if the tick is invalid (after checking the
    /// builder reported the right error).
    pub fn new(tick: TickSpec, capacity: u16) -> Option<DqHarness> {
        let clock = ManualClock::new();
        let built = DelayQueue::builder()
            .tick(tick.duration())
            .clock(clock.clone())
            .capacity(usize::from(capacity))
            .build();
        let queue = match (tick, built) {
            (TickSpec::Zero, Err(BuildError::ZeroTick)) => return None,
            (TickSpec::TooLong, Err(BuildError::TickTooLong)) => return None,
            (TickSpec::Zero | TickSpec::TooLong, other) => {
                panic!("DelayQueue builder with tick {tick:?} gave {other:?}, expected an error")
            }
            (_, Ok(q)) => q,
            (_, Err(e)) => panic!("DelayQueue builder rejected tick {tick:?}: {e}"),
        };
        Some(DqHarness {
            queue,
            start: clock.now(),
            clock,
            tick_ns: tick.duration().as_nanos(),
            model: Model::new(),
            items: Vec::new(),
            book: KeyBook::new(),
            closed: false,
            step: 0,
        })
    }

    fn fail(&self, op: &dyn std::fmt::Debug, what: std::fmt::Arguments<'_>) -> ! {
        panic!(
            "DelayQueue diverged from the model at op #{} {:?} (clock +{:?}, tick {} ns, now tick {}, {} pending, closed {}): {}",
            self.step,
            op,
            self.clock.now() - self.start,
            self.tick_ns,
            self.now_tick(),
            self.model.len(),
            self.closed,
            what
        )
    }

    fn now_ns(&self) -> u128 {
        (self.clock.now() - self.start).as_nanos()
    }

    /// The current instant rounded down to a tick, short of `u64::MAX`:
    /// that tick means "never" (a deadline past the range of `Instant`, or
    /// one that rounds up past the last tick), so it must never come due.
    fn now_tick(&self) -> u64 {
        clamp(self.now_ns() / self.tick_ns).min(NEVER_TICK - 1)
    }

    /// The tick of an item due at `at` (`None` = past the end of `Instant`).
    fn tick_of(&self, at: Option<Instant>) -> u64 {
        let now = self.clock.now();
        match at {
            None => NEVER_TICK,
            Some(at) if at <= now => self.now_tick(),
            Some(at) => clamp((at - self.start).as_nanos().div_ceil(self.tick_ns)),
        }
    }

    fn delay(&self, d: Delay) -> Duration {
        match d {
            Delay::Zero => Duration::ZERO,
            Delay::Nanos(n) => Duration::from_nanos(u64::from(n)),
            Delay::Ticks { ticks, off } => {
                let ns = (u128::from(ticks) * self.tick_ns) as i128 + i128::from(off);
                duration_from_nanos(ns.max(0) as u128)
            }
            Delay::Far { mantissa, exponent } => {
                duration_from_nanos(u128::from(mantissa) << (u32::from(exponent) % 80))
            }
            Delay::Max => Duration::MAX,
        }
    }

    fn push(
        &mut self,
        op: &dyn std::fmt::Debug,
        at: Option<Instant>,
        how: Result<Duration, Instant>,
    ) {
        let id = self.items.len() as u64;
        let tick = self.tick_of(at);
        let res = match (how, self.exclusive()) {
            (Ok(delay), false) => self.queue.push(id, delay),
            (Err(at), false) => self.queue.push_at(id, at),
            (Ok(delay), true) => self.queue.exclusive().push(id, delay),
            (Err(at), true) => self.queue.exclusive().push_at(id, at),
        };
        match (res, self.closed) {
            (Ok(key), false) => {
                assert_eq!(self.model.insert(tick, id), id, "model ids are dense");
                self.items.push(DqItem { at });
                assert_eq!(self.book.add(key), id, "key ids are dense");
            }
            (Err(Closed(v)), true) if v == id => {}
            (Err(Closed(v)), true) => {
                self.fail(op, format_args!("push after close gave back {v}, not {id}"))
            }
            (Ok(key), true) => self.fail(op, format_args!("push after close accepted ({key:?})")),
            (Err(Closed(v)), false) => {
                self.fail(op, format_args!("push refused {v} on an open queue"))
            }
        }
    }

    /// Whether this step goes through [`DelayQueue::exclusive`] (odd steps)
    /// rather than the shared methods (even steps): both must agree with
    /// the model alike, and any sequence of operations can put each kind of
    /// operation on either path.
    fn exclusive(&self) -> bool {
        self.step % 2 == 1
    }

    /// `try_take` on this step's path.
    fn try_take(&mut self) -> Option<u64> {
        if self.exclusive() {
            self.queue.exclusive().try_take()
        } else {
            self.queue.try_take()
        }
    }

    /// `remove` on this step's path.
    fn remove(&mut self, key: DelayKey) -> Option<u64> {
        if self.exclusive() {
            self.queue.exclusive().remove(key)
        } else {
            self.queue.remove(key)
        }
    }

    /// `reset` on this step's path.
    fn reset(&mut self, key: DelayKey, delay: Duration) -> bool {
        if self.exclusive() {
            self.queue.exclusive().reset(key, delay)
        } else {
            self.queue.reset(key, delay)
        }
    }

    /// `len` and `is_empty` on this step's path.
    fn len_and_empty(&mut self) -> (usize, bool) {
        if self.exclusive() {
            let q = self.queue.exclusive();
            (q.len(), q.is_empty())
        } else {
            (self.queue.len(), self.queue.is_empty())
        }
    }

    /// One take-like call: `got` is its answer.
    fn took(&mut self, op: &dyn std::fmt::Debug, got: Option<u64>) -> bool {
        let want = if self.closed {
            None
        } else {
            self.model.poll(self.now_tick())
        };
        match (got, want) {
            (None, None) => false,
            (Some(g), Some((id, _, _))) if g == id => {
                let now = self.clock.now();
                match self.items[id as usize].at {
                    Some(at) if at <= now => {}
                    at => self.fail(
                        op,
                        format_args!(
                            "item #{id} handed out EARLY: asked for {at:?}, clock at {now:?}"
                        ),
                    ),
                }
                self.book.retire(id);
                true
            }
            (got, want) => {
                let what = match (got, want) {
                    (Some(g), None) if (g as usize) < self.items.len() && !self.book.is_live(g) => {
                        "an item that already left (DOUBLE take)"
                    }
                    (Some(_), None) => "an item that is not due (EARLY, or after close)",
                    (None, Some(_)) => "nothing although an item is due (LOST or late)",
                    _ => "the wrong item (order: deadline, then FIFO)",
                };
                self.fail(
                    op,
                    format_args!(
                        "took {got:?}, model expected {:?}: {what}",
                        want.map(|w| (w.0, w.1))
                    ),
                )
            }
        }
    }

    fn drain(&mut self, op: &dyn std::fmt::Debug) {
        let got = self.queue.drain();
        let want = self.model.drain();
        let mut sorted = got.clone();
        sorted.sort_unstable();
        let mut want_ids: Vec<u64> = want.iter().map(|w| w.0).collect();
        want_ids.sort_unstable();
        if sorted != want_ids {
            self.fail(
                op,
                format_args!("drain returned {got:?}, model holds {want_ids:?}"),
            );
        }
        // "In deadline order (the order among items due in the same tick is
        // unspecified)".
        let eff: std::collections::HashMap<u64, u64> = want.iter().map(|w| (w.0, w.1)).collect();
        if got.windows(2).any(|w| eff[&w[0]] > eff[&w[1]]) {
            self.fail(op, format_args!("drain not in deadline order: {got:?}"));
        }
        for id in want_ids {
            self.book.retire(id);
        }
    }

    /// Runs one operation and the per-op checks.
    pub fn apply(&mut self, op: DqOp) {
        self.step += 1;
        let dop: &dyn std::fmt::Debug = &op;
        match op {
            DqOp::Push(d) => {
                let delay = self.delay(d);
                let at = self.clock.now().checked_add(delay);
                self.push(dop, at, Ok(delay));
            }
            DqOp::PushAtPast(n) => {
                let at = self
                    .clock
                    .now()
                    .checked_sub(Duration::from_nanos(u64::from(n)))
                    .unwrap_or(self.start);
                self.push(dop, Some(at), Err(at));
            }
            DqOp::PushAt(d) => {
                if let Some(at) = self.clock.now().checked_add(self.delay(d)) {
                    self.push(dop, Some(at), Err(at));
                }
            }
            DqOp::Remove(pick) => {
                if let Some((key, id)) = self.book.pick(pick) {
                    let got = self.remove(key);
                    let want = id.and_then(|id| self.model.cancel(id));
                    if got != want {
                        self.fail(
                            dop,
                            format_args!("remove({key:?}) = {got:?}, expected {want:?}"),
                        );
                    }
                    if let Some(id) = id {
                        self.book.retire(id);
                    }
                }
            }
            DqOp::Reset(pick, d) => {
                if let Some((key, id)) = self.book.pick(pick) {
                    let delay = self.delay(d);
                    let at = self.clock.now().checked_add(delay);
                    let tick = self.tick_of(at);
                    let got = self.reset(key, delay);
                    let want = id.is_some_and(|id| self.model.reset(id, tick));
                    if got != want {
                        self.fail(dop, format_args!("reset({key:?}) = {got}, expected {want}"));
                    }
                    if let (true, Some(id)) = (got, id) {
                        self.items[id as usize].at = at;
                    }
                }
            }
            DqOp::TryTake => {
                let got = self.try_take();
                self.took(dop, got);
            }
            DqOp::TakeAll => {
                let bound = self.model.len() + 1;
                let mut n = 0;
                while {
                    let got = self.try_take();
                    self.took(dop, got)
                } {
                    n += 1;
                    assert!(n <= bound, "try_take kept returning items");
                }
            }
            DqOp::TakeTimeoutZero => {
                let got = self.queue.take_timeout(Duration::ZERO);
                self.took(dop, got);
            }
            DqOp::Advance(d) => self.clock.advance(self.delay(d)),
            DqOp::Close => {
                self.queue.close();
                self.closed = true;
            }
            DqOp::Drain => self.drain(dop),
        }
        let (len, empty) = self.len_and_empty();
        if len != self.model.len() || empty != self.model.is_empty() {
            self.fail(
                dop,
                format_args!("len {len} / is_empty {empty}, model {}", self.model.len()),
            );
        }
        if self.queue.is_closed() != self.closed {
            self.fail(
                dop,
                format_args!("is_closed() = {}", self.queue.is_closed()),
            );
        }
    }

    /// Ends a run: everything still inside must come out of `drain`.
    pub fn finish(mut self) {
        let op = "final drain";
        self.drain(&op);
        if !self.queue.is_empty() {
            self.fail(&op, format_args!("not empty after drain"));
        }
    }
}

/// Runs a decoded `delay_queue_ops` input. Panics on divergence.
pub fn run_delay_queue(input: &DqInput) {
    let Some(mut h) = DqHarness::new(input.tick, input.capacity) else {
        return;
    };
    for &op in input.ops.iter().take(MAX_OPS) {
        h.apply(op);
    }
    h.finish();
}

/// Decodes and runs a `delay_queue_ops` input. Undecodable input is ignored.
pub fn run_delay_queue_ops(data: &[u8]) {
    if let Ok(input) = DqInput::arbitrary_take_rest(Unstructured::new(data)) {
        run_delay_queue(&input);
    }
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

    /// The committed seed files (`seed-*`) of `fuzz/corpus/<target>/`; the
    /// rest of that folder is what local fuzzing runs grew (not committed).
    fn corpus(target: &str) -> Vec<Vec<u8>> {
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

    #[test]
    fn replay_seed_corpus_wheel_ops() {
        for data in corpus("wheel_ops") {
            run_wheel_ops(&data, Checks::EveryOp);
        }
    }

    #[test]
    fn replay_seed_corpus_delay_queue_ops() {
        for data in corpus("delay_queue_ops") {
            run_delay_queue_ops(&data);
        }
    }

    #[test]
    fn replay_seed_corpus_config() {
        for data in corpus("config") {
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
        fn delay_queue_ops_from_random_bytes(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            run_delay_queue_ops(&data);
        }

        #[test]
        fn config_from_random_bytes(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            run_config_ops(&data, Checks::EveryOp);
        }
    }
}
