//! [`WheelHarness`]: a [`Wheel<u64>`](crate::Wheel) and the reference
//! [`Model`] kept in lock step, one operation at a time, with every answer
//! compared (see [`super`] for what is checked).

use std::collections::HashSet;

use super::choices::{Checks, TuningPreset, shrink_period};
use super::keys::KeyBook;
use super::model::Model;
use super::ops::{LayoutSpec, Pick, PollTo, WheelOp, When, layout_is_valid, valid_layout};
use crate::{Expired, TimerKey, Wheel, WheelConfig};

/// Bits of a timer's value that hold its model id (the rest count `get_mut`
/// writes, so a stale write would show up as a changed value).
const ID_BITS: u32 = 40;
const ID_MASK: u64 = (1 << ID_BITS) - 1;

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

/// What the harness expects of one timer.
#[derive(Debug)]
struct Tracked {
    /// Its value: its model id, plus `get_mut` writes above [`ID_BITS`].
    value: u64,
}

/// A wheel and its model, kept in lock step. See the module docs.
pub struct WheelHarness {
    wheel: Wheel<u64>,
    model: Model<u64>,
    /// The wheel's layout.
    bits: Vec<u32>,
    /// The wheel's tuning.
    preset: TuningPreset,
    /// Per model id, what the harness expects of the timer.
    timers: Vec<Tracked>,
    book: KeyBook<TimerKey>,
    issued: HashSet<TimerKey>,
    step: usize,
    /// Run `check_invariants` every this many operations.
    check_every: usize,
    /// Operations at least between two shrinks ([`shrink_period`]).
    shrink_every: usize,
    /// The first step at which a `ShrinkToFit` operation shrinks again.
    next_shrink: usize,
}

impl WheelHarness {
    /// Builds the wheel described by `layout` (checking the accept/reject
    /// verdict for raw layouts), with the tuning `preset` names.
    pub fn new(layout: &LayoutSpec, checks: Checks, preset: TuningPreset) -> WheelHarness {
        let (config, capacity) = match layout {
            LayoutSpec::Default => (WheelConfig::default(), 0),
            LayoutSpec::Capacity(n) => (WheelConfig::default(), usize::from(*n)),
            LayoutSpec::Valid(bytes) => {
                let bits = valid_layout(bytes);
                (checked_config(&bits).expect("valid layout accepted"), 0)
            }
            LayoutSpec::Raw(levels) => {
                let bits: Vec<u32> = levels.iter().map(|level| level.bits()).collect();
                (checked_config(&bits).unwrap_or_default(), 0)
            }
        };
        let bits = config.slot_bits().to_vec();
        let harness = WheelHarness {
            wheel: Wheel::build(config, capacity, preset.tuning()),
            model: Model::new(),
            check_every: checks.period(&bits),
            shrink_every: shrink_period(&bits),
            next_shrink: 0,
            bits,
            preset,
            timers: Vec::new(),
            book: KeyBook::new(),
            issued: HashSet::new(),
            step: 0,
        };
        harness.check_cheap(&"new");
        harness
    }

    fn fail(&self, op: &dyn std::fmt::Debug, what: std::fmt::Arguments<'_>) -> ! {
        panic!(
            "wheel diverged from the model at op #{} {:?} (now {}, layout {:?}, tuning {:?}, {} pending): {}",
            self.step,
            op,
            self.model.now(),
            self.bits,
            self.preset,
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
            When::Tie(i) => match self.book.live_ids() {
                [] => now,
                live => {
                    let id = live[usize::from(i) % live.len()];
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
                if got.deadline > self.wheel.now() {
                    self.fail(
                        op,
                        format_args!("poll({t}) returned {got:?}: EARLY FIRE"),
                    );
                }
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
            WheelOp::Insert(when) => self.insert(dop, when),
            WheelOp::Cancel(pick) => self.cancel(dop, pick),
            WheelOp::Reset(pick, when) => self.reset(dop, pick, when),
            WheelOp::Poll(to) => {
                let t = self.poll_tick(to);
                self.poll_once(dop, t);
            }
            WheelOp::PollAll(to) => {
                let t = self.poll_tick(to);
                self.poll_all(dop, t);
            }
            WheelOp::NextExpiration => self.follow_next_expiration(dop),
            WheelOp::Drain => self.drain(dop),
            WheelOp::Get(pick) | WheelOp::Deadline(pick) => {
                if let Some((key, id)) = self.book.pick(pick) {
                    self.expect_key_state(dop, key, id);
                }
            }
            WheelOp::GetMut(pick) => self.get_mut(dop, pick),
            WheelOp::ShrinkToFit => self.shrink_to_fit(),
            WheelOp::CheckAll => self.check_all(dop),
        }
        self.check_cheap(dop);
    }

    /// `shrink_to_fit`, unless the last one ran fewer than
    /// [`shrink_period`] operations ago (it costs O(slots)); every key
    /// must keep working afterwards, which the next operations check.
    fn shrink_to_fit(&mut self) {
        if self.step >= self.next_shrink {
            self.wheel.shrink_to_fit();
            self.next_shrink = self.step + self.shrink_every;
        }
    }

    /// `insert`: the key must be new, the deadline `max(deadline, now)`.
    fn insert(&mut self, op: &dyn std::fmt::Debug, when: When) {
        let t = self.tick(when);
        let id = self.timers.len() as u64;
        let value = id;
        let key = self.wheel.insert(t, value);
        let mid = self.model.insert(t, id);
        assert_eq!(mid, id, "model ids are dense");
        if !self.issued.insert(key) {
            self.fail(op, format_args!("insert({t}) returned key {key:?}, which was issued before (keys must be generational)"));
        }
        self.timers.push(Tracked { value });
        assert_eq!(self.book.add(key), id, "key ids are dense");
        let want = self.model.deadline(id);
        let got = self.wheel.deadline(key);
        if got != want {
            self.fail(op, format_args!("after insert({t}), deadline = {got:?}, expected {want:?} (max of deadline and now)"));
        }
    }

    /// `cancel` of a live or stale key.
    fn cancel(&mut self, op: &dyn std::fmt::Debug, pick: Pick) {
        let Some((key, id)) = self.book.pick(pick) else {
            return;
        };
        let got = self.wheel.cancel(key);
        let want = id.and_then(|id| {
            self.model
                .cancel(id)
                .map(|_| self.timers[id as usize].value)
        });
        if got != want {
            self.fail(
                op,
                format_args!("cancel({key:?}) = {got:?}, expected {want:?}"),
            );
        }
        if let Some(id) = id {
            self.book.retire(id);
        }
    }

    /// `reset` of a live or stale key, then its deadline and value.
    fn reset(&mut self, op: &dyn std::fmt::Debug, pick: Pick, when: When) {
        let Some((key, id)) = self.book.pick(pick) else {
            return;
        };
        let t = self.tick(when);
        let got = self.wheel.reset(key, t);
        let want = id.is_some_and(|id| self.model.reset(id, t));
        if got != want {
            self.fail(
                op,
                format_args!("reset({key:?}, {t}) = {got}, expected {want}"),
            );
        }
        self.expect_key_state(op, key, id);
    }

    /// `poll(t)` until it returns `None` (and never more often than there
    /// are timers).
    fn poll_all(&mut self, op: &dyn std::fmt::Debug, t: u64) {
        let bound = self.model.len() + 1;
        let mut fired = 0;
        while self.poll_once(op, t) {
            fired += 1;
            assert!(fired <= bound, "poll kept returning entries");
        }
    }

    /// Walks the sleep-until loop a few times: wakes at the tick
    /// `next_expiration` reports and polls there.
    fn follow_next_expiration(&mut self, op: &dyn std::fmt::Debug) {
        for _ in 0..4 {
            let Some(e) = self.wheel.next_expiration() else {
                break;
            };
            let t = e.max(self.model.now());
            self.poll_once(op, t);
            self.check_cheap(op);
        }
    }

    /// `get_mut` of a live or stale key, writing a new value through it.
    fn get_mut(&mut self, op: &dyn std::fmt::Debug, pick: Pick) {
        let Some((key, id)) = self.book.pick(pick) else {
            return;
        };
        self.expect_key_state(op, key, id);
        match (self.wheel.get_mut(key), id) {
            (None, None) => {}
            (Some(v), Some(id)) => {
                let t = &mut self.timers[id as usize];
                if *v != t.value {
                    let got = *v;
                    self.fail(
                        op,
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
                op,
                format_args!("get_mut({key:?}) gave access through a stale key"),
            ),
            (None, Some(id)) => self.fail(
                op,
                format_args!("get_mut({key:?}) = None for pending timer #{id}"),
            ),
        }
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
            (Some(e), Some(earliest)) if e == earliest || e < earliest && !self.exact(earliest) => {}
            (got, earliest) => self.fail(
                op,
                format_args!("next_expiration() = {got:?} but the earliest pending effective deadline is {earliest:?} (must be None iff empty, else <= earliest, and exact on the lowest level)"),
            ),
        }
        if self.step > 0 && self.step % self.check_every == 0 {
            self.check_invariants(op);
        }
    }

    /// `true` if `next_expiration` must be exactly `earliest`, the earliest
    /// pending deadline: it lies ahead of `elapsed` in the same turn of the
    /// lowest level (so on level 0, which is exact), nothing is ready, and
    /// the lowest level is not the top (whose per-slot bounds may be
    /// stale).
    fn exact(&self, earliest: u64) -> bool {
        let wheel = &self.wheel;
        let bits0 = wheel.layout.levels[0].bits;
        wheel.layout.levels.len() > 1
            && wheel.ready.is_empty()
            && earliest > wheel.elapsed
            && earliest >> bits0 == wheel.elapsed >> bits0
    }

    fn check_invariants(&self, op: &dyn std::fmt::Debug) {
        if let Err(e) = self.wheel.check_invariants() {
            self.fail(op, format_args!("check_invariants: {e}"));
        }
    }

    /// Compares every pending timer's deadline and value (O(n)).
    fn check_all(&self, op: &dyn std::fmt::Debug) {
        for &id in self.book.live_ids() {
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
        for &key in self.book.stale_keys() {
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
