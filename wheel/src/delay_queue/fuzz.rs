//! The `DelayQueue` differential harness: a structure-aware decoder of
//! queue operations and a harness that drives a `DelayQueue<u64>` on a
//! [`ManualClock`] (one thread) against the reference model counted in the
//! queue's ticks, checking every item handed out against the clock in
//! `Instant`s as well. Every other operation goes through
//! [`DelayQueue::exclusive`] instead of the shared methods, so both paths
//! are exercised. After every operation `peek` is checked against the
//! model's earliest deadline, and before a remove or reset, `deadline` of
//! the key; half the single takes are `try_take_expired`, whose key and
//! deadline are checked, and half the `TakeAll`s and `Drain`s end in
//! `shrink_to_fit` (spaced by `shrink_period` steps) and are `clear`,
//! respectively. The queue's wheel must pass `Wheel::check_invariants`
//! every [`Checks`] period and before and after the final drain. The
//! input's decoder is in `fuzz/decode.rs`. Compiled only for tests and
//! `cfg(fuzzing)`; the `delay_queue_ops` fuzz target and the proptests
//! below feed it the same bytes.

use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};

use crate::clock::NEVER;
use crate::core::testing::{
    Checks, KeyBook, MAX_OPS, Model, Pick, TuningPreset, clamp, shrink_period,
};
use crate::sync::lock;
use crate::{BuildError, Closed, DelayKey, DelayQueue, ManualClock, WheelConfig};

mod decode;

pub use self::decode::{Delay, DqInput, DqOp, TickSpec};

#[derive(Debug)]
struct DqItem {
    /// The instant asked for; `None` if it is past the range of `Instant`
    /// (the item must never come out of `take`).
    at: Option<Instant>,
}

/// A `DelayQueue<u64>` on a `ManualClock`, kept in lock step with the
/// reference [`Model`] counted in the queue's ticks. Odd steps insert,
/// remove, reset, take and count through [`DelayQueue::exclusive`], even
/// steps through the shared methods. A reset names its new deadline as a
/// delay (`reset`) on steps `4k` and `4k + 1`, and as an instant
/// (`reset_at`) on steps `4k + 2` and `4k + 3`, so each form runs on both
/// paths; the choice hangs on the step, not on the input bytes, so every
/// byte keeps its meaning.
///
/// The model applies the documented rounding (a deadline in the future
/// rounds *up* to a tick boundary; a deadline at or before now is due at
/// the current tick, which is now rounded *down*). Tick [`NEVER`] means
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
    /// The first step at which a `TakeAll` shrinks the queue again: a
    /// shrink rebuilds every bucket of the queue's wheel, so they are
    /// spaced by [`shrink_period`] steps, the input alone deciding which.
    next_shrink: usize,
    /// Run `check_invariants` on the queue's wheel every this many steps
    /// ([`Checks`]), and at the end.
    check_every: usize,
}

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
    pub fn new(tick: TickSpec, capacity: u16, preset: TuningPreset) -> Option<DqHarness> {
        let clock = ManualClock::new();
        let built = DelayQueue::builder()
            .tick(tick.duration())
            .clock(clock.clone())
            .capacity(usize::from(capacity))
            .tuning(preset.tuning())
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
            next_shrink: 0,
            check_every: Checks::from_env().period(WheelConfig::default().slot_bits()),
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
        clamp(self.now_ns() / self.tick_ns).min(NEVER - 1)
    }

    /// The tick of an item due at `at` (`None` = past the end of `Instant`).
    fn tick_of(&self, at: Option<Instant>) -> u64 {
        let now = self.clock.now();
        match at {
            None => NEVER,
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

    fn insert(
        &mut self,
        op: &dyn std::fmt::Debug,
        at: Option<Instant>,
        how: Result<Duration, Instant>,
    ) {
        let id = self.items.len() as u64;
        let tick = self.tick_of(at);
        let res = match (how, self.exclusive()) {
            (Ok(delay), false) => self.queue.insert(id, delay),
            (Err(at), false) => self.queue.insert_at(id, at),
            (Ok(delay), true) => self.queue.exclusive().insert(id, delay),
            (Err(at), true) => self.queue.exclusive().insert_at(id, at),
        };
        match (res, self.closed) {
            (Ok(key), false) => {
                assert_eq!(self.model.insert(tick, id), id, "model ids are dense");
                self.items.push(DqItem { at });
                assert_eq!(self.book.add(key), id, "key ids are dense");
            }
            (Err(Closed(v)), true) if v == id => {}
            (Err(Closed(v)), true) => self.fail(
                op,
                format_args!("insert after close gave back {v}, not {id}"),
            ),
            (Ok(key), true) => self.fail(op, format_args!("insert after close accepted ({key:?})")),
            (Err(Closed(v)), false) => {
                self.fail(op, format_args!("insert refused {v} on an open queue"))
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

    /// `reset` or `reset_at` (see [`DqHarness`]) on this step's path; `at`
    /// is now + `delay`, if that instant exists.
    fn reset(&mut self, key: DelayKey, delay: Duration, at: Option<Instant>) -> bool {
        let deadline = at.filter(|_| self.step % 4 >= 2);
        match (deadline, self.exclusive()) {
            (None, true) => self.queue.exclusive().reset(key, delay),
            (None, false) => self.queue.reset(key, delay),
            (Some(at), true) => self.queue.exclusive().reset_at(key, at),
            (Some(at), false) => self.queue.reset_at(key, at),
        }
    }

    /// `try_take_expired` on this step's path, checked against the model:
    /// the key the item had and the instant of its effective deadline.
    fn try_take_expired(&mut self, op: &dyn std::fmt::Debug) {
        let got = if self.exclusive() {
            self.queue.exclusive().try_take_expired()
        } else {
            self.queue.try_take_expired()
        };
        let (key, deadline) = match &got {
            Some(e) => (Some(e.key()), Some(e.deadline())),
            None => (None, None),
        };
        let Some((id, eff)) = self.took(op, got.map(|e| e.into_inner())) else {
            return;
        };
        if key != Some(self.book.key(id)) || deadline != self.instant_of(eff) {
            self.fail(
                op,
                format_args!(
                    "try_take_expired gave key {key:?} due {deadline:?}, expected {:?} due {:?}",
                    self.book.key(id),
                    self.instant_of(eff)
                ),
            );
        }
    }

    /// The instant tick `tick` starts at (`None` past the range of
    /// `Instant`, as for "never").
    fn instant_of(&self, tick: u64) -> Option<Instant> {
        let ns = u128::from(tick) * self.tick_ns;
        self.start.checked_add(duration_from_nanos(ns)).filter(|_| {
            // `duration_from_nanos` saturates: a saturated sum is not exact.
            ns <= Duration::MAX.as_nanos()
        })
    }

    /// `deadline(key)` on this step's path against the model (`None` for a
    /// stale key, and for an item that never comes due).
    fn check_deadline(&mut self, op: &dyn std::fmt::Debug, key: DelayKey, id: Option<u64>) {
        let got = if self.exclusive() {
            self.queue.exclusive().deadline(key)
        } else {
            self.queue.deadline(key)
        };
        let want = id
            .and_then(|id| self.model.deadline(id))
            .and_then(|t| self.instant_of(t));
        if got != want {
            self.fail(
                op,
                format_args!("deadline({key:?}) = {got:?}, expected {want:?}"),
            );
        }
    }

    /// `peek` on this step's path: a live item whose deadline is the
    /// model's earliest.
    fn check_peek(&mut self, op: &dyn std::fmt::Debug) {
        let got = if self.exclusive() {
            self.queue.exclusive().peek()
        } else {
            self.queue.peek()
        };
        let want = self.model.earliest();
        let id = got.and_then(|k| {
            let live = self.book.live_ids().iter();
            live.copied().find(|&id| self.book.key(id) == k)
        });
        let eff = id.and_then(|id| self.model.deadline(id));
        if eff != want || got.is_some() != id.is_some() {
            self.fail(
                op,
                format_args!("peek() = {got:?} (due {eff:?}), model's earliest {want:?}"),
            );
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

    /// One take-like call: `got` is its answer. Returns the item's id and
    /// effective deadline when one was rightly taken.
    fn took(&mut self, op: &dyn std::fmt::Debug, got: Option<u64>) -> Option<(u64, u64)> {
        let want = if self.closed {
            None
        } else {
            self.model.poll(self.now_tick())
        };
        match (got, want) {
            (None, None) => None,
            (Some(g), Some((id, eff, _))) if g == id => {
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
                Some((id, eff))
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
        if self.step % 4 >= 2 {
            self.queue.clear();
            for (id, _, _) in self.model.drain() {
                self.book.retire(id);
            }
            return;
        }
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
            DqOp::Insert(d) => {
                let delay = self.delay(d);
                let at = self.clock.now().checked_add(delay);
                self.insert(dop, at, Ok(delay));
            }
            DqOp::InsertAtPast(n) => {
                let at = self
                    .clock
                    .now()
                    .checked_sub(Duration::from_nanos(u64::from(n)))
                    .unwrap_or(self.start);
                self.insert(dop, Some(at), Err(at));
            }
            DqOp::InsertAt(d) => {
                if let Some(at) = self.clock.now().checked_add(self.delay(d)) {
                    self.insert(dop, Some(at), Err(at));
                }
            }
            DqOp::Remove(pick) => self.remove_picked(dop, pick),
            DqOp::Reset(pick, d) => self.reset_picked(dop, pick, d),
            DqOp::TryTake if self.step % 4 >= 2 => self.try_take_expired(dop),
            DqOp::TryTake => {
                let got = self.try_take();
                self.took(dop, got);
            }
            DqOp::TakeAll => self.take_all(dop),
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
        self.check_len_and_closed(dop);
        self.check_peek(dop);
        if self.step % self.check_every == 0 {
            self.check_wheel(dop);
        }
    }

    /// `Wheel::check_invariants` on the queue's wheel: a broken structure
    /// (a leaked slab entry, a cell in the wrong slot) that has not yet
    /// changed an answer.
    fn check_wheel(&self, op: &dyn std::fmt::Debug) {
        let checked = lock(&self.queue.state).wheel.check_invariants();
        if let Err(e) = checked {
            self.fail(op, format_args!("check_invariants: {e}"));
        }
    }

    /// `remove` of a picked key (live or stale), against the model.
    fn remove_picked(&mut self, op: &dyn std::fmt::Debug, pick: Pick) {
        let Some((key, id)) = self.book.pick(pick) else {
            return;
        };
        self.check_deadline(op, key, id);
        let got = self.remove(key);
        let want = id.and_then(|id| self.model.cancel(id));
        if got != want {
            self.fail(
                op,
                format_args!("remove({key:?}) = {got:?}, expected {want:?}"),
            );
        }
        if let Some(id) = id {
            self.book.retire(id);
        }
    }

    /// `reset` of a picked key (live or stale) to `d`, against the model.
    fn reset_picked(&mut self, op: &dyn std::fmt::Debug, pick: Pick, d: Delay) {
        let Some((key, id)) = self.book.pick(pick) else {
            return;
        };
        self.check_deadline(op, key, id);
        let delay = self.delay(d);
        let at = self.clock.now().checked_add(delay);
        let tick = self.tick_of(at);
        let got = self.reset(key, delay, at);
        let want = id.is_some_and(|id| self.model.reset(id, tick));
        if got != want {
            self.fail(op, format_args!("reset({key:?}) = {got}, expected {want}"));
        }
        if let (true, Some(id)) = (got, id) {
            self.items[id as usize].at = at;
        }
    }

    /// `try_take` until it answers `None`, each answer against the model.
    fn take_all(&mut self, op: &dyn std::fmt::Debug) {
        let bound = self.model.len() + 1;
        let mut n = 0;
        while {
            let got = self.try_take();
            self.took(op, got).is_some()
        } {
            n += 1;
            assert!(n <= bound, "try_take kept returning items");
        }
        if self.step % 4 >= 2 && self.step >= self.next_shrink {
            self.next_shrink = self.step + shrink_period(WheelConfig::default().slot_bits());
            // Keys must keep working afterwards: the next steps check them.
            self.queue.shrink_to_fit();
            let (len, cap) = (self.queue.len(), self.queue.capacity());
            if cap < len {
                self.fail(
                    op,
                    format_args!("capacity {cap} below len {len} after shrink_to_fit"),
                );
            }
        }
    }

    /// After every operation: `len`, `is_empty` and `is_closed` agree
    /// with the model.
    fn check_len_and_closed(&mut self, op: &dyn std::fmt::Debug) {
        let (len, empty) = self.len_and_empty();
        if len != self.model.len() || empty != self.model.is_empty() {
            self.fail(
                op,
                format_args!("len {len} / is_empty {empty}, model {}", self.model.len()),
            );
        }
        if self.queue.is_closed() != self.closed {
            self.fail(op, format_args!("is_closed() = {}", self.queue.is_closed()));
        }
    }

    /// Ends a run: everything still inside must come out of `drain`.
    pub fn finish(mut self) {
        let op = "final drain";
        self.check_wheel(&op);
        self.drain(&op);
        if !self.queue.is_empty() {
            self.fail(&op, format_args!("not empty after drain"));
        }
        self.check_wheel(&op);
    }
}

/// Runs a decoded input with the tuning [`TuningPreset::for_ops`] picks.
pub fn run_delay_queue(input: &DqInput) {
    run_delay_queue_with(input, TuningPreset::for_ops(input.ops.len()));
}

/// Runs a decoded input with the queue's wheel on `preset`.
pub fn run_delay_queue_with(input: &DqInput, preset: TuningPreset) {
    let Some(mut h) = DqHarness::new(input.tick, input.capacity, preset) else {
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
    fn replay_seed_corpus_delay_queue_ops() {
        for data in wheel_testkit::seed_corpus("delay_queue_ops") {
            let Ok(input) = DqInput::arbitrary_take_rest(Unstructured::new(&data)) else {
                continue;
            };
            for preset in TuningPreset::ALL {
                run_delay_queue_with(&input, preset);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn delay_queue_ops_from_random_bytes(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            run_delay_queue_ops(&data);
        }
    }
}
