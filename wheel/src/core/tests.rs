//! Unit tests of the wheel and the differential property test against the
//! reference model.

use super::model::Model;
use super::*;
use proptest::prelude::*;

fn layout(bits: &[u32]) -> WheelConfig {
    WheelConfig::new(bits).unwrap()
}

fn drain_due<T>(wheel: &mut Wheel<T>, now: u64) -> Vec<(u64, T)> {
    std::iter::from_fn(|| wheel.poll(now))
        .map(|e| (e.deadline, e.value))
        .collect()
}

#[test]
fn fires_in_deadline_order_with_fifo_ties() {
    let mut w = Wheel::new();
    w.insert(70, "c");
    w.insert(5, "a");
    w.insert(70, "d");
    w.insert(5, "b");
    w.insert(70_000, "e");
    w.check_invariants().unwrap();
    assert_eq!(
        drain_due(&mut w, 100_000),
        [(5, "a"), (5, "b"), (70, "c"), (70, "d"), (70_000, "e")]
    );
    w.check_invariants().unwrap();
}

#[test]
fn never_early_at_every_level_boundary() {
    for bits in [&[1u32][..], &[2, 3], &[6; 6], &[8; 8], &[16, 16, 16, 16]] {
        let mut w = Wheel::with_config(layout(bits));
        let deadlines = [
            1u64,
            2,
            3,
            63,
            64,
            65,
            255,
            256,
            4095,
            4096,
            65_535,
            65_536,
            1 << 20,
        ];
        for &d in &deadlines {
            w.insert(d, d);
        }
        for &d in &deadlines {
            assert!(w.poll(d - 1).is_none(), "{d} fired early with {bits:?}");
            assert_eq!(w.poll(d).map(|e| e.value), Some(d), "layout {bits:?}");
            w.check_invariants().unwrap();
        }
        assert!(w.is_empty());
    }
}

#[test]
fn past_deadlines_are_due_now_behind_earlier_entries() {
    let mut w = Wheel::with_config(layout(&[4, 4]));
    w.insert(10, "ten");
    w.insert(20, "twenty");
    assert_eq!(w.poll(30).map(|e| e.value), Some("ten")); // stops early
    let late = w.insert(3, "late");
    assert_eq!(w.deadline(late), Some(30));
    // "twenty" (deadline 20) comes before "late" (effective deadline 30).
    assert_eq!(drain_due(&mut w, 30), [(20, "twenty"), (30, "late")]);
    w.check_invariants().unwrap();
}

#[test]
fn poll_backwards_acts_as_now() {
    let mut w = Wheel::new();
    w.poll(100);
    w.insert(50, 'x');
    assert_eq!(w.poll(0).map(|e| (e.deadline, e.value)), Some((100, 'x')));
    assert_eq!(w.now(), 100);
}

#[test]
fn u64_max_deadline_and_huge_jumps() {
    for bits in [&[8u32; 8][..], &[6; 6], &[3], &[16]] {
        let mut w = Wheel::with_config(layout(bits));
        let a = w.insert(u64::MAX, "max");
        w.insert(u64::MAX - 1, "max-1");
        w.insert(1 << 40, "2^40");
        assert!(w.poll(u64::MAX - 2).is_some_and(|e| e.value == "2^40"));
        assert!(w.poll(u64::MAX - 2).is_none());
        w.check_invariants().unwrap();
        assert_eq!(w.poll(u64::MAX).map(|e| e.value), Some("max-1"));
        assert_eq!(w.poll(u64::MAX).map(|e| (e.key, e.value)), Some((a, "max")));
        assert!(w.poll(u64::MAX).is_none());
        // At the end of time, new timers are due at once.
        w.insert(5, "after");
        assert_eq!(w.next_expiration(), Some(u64::MAX));
        assert_eq!(w.poll(0).map(|e| e.deadline), Some(u64::MAX));
        w.check_invariants().unwrap();
    }
}

#[test]
fn cycles_beyond_the_span_are_never_early() {
    // Span 2^6 = 64 ticks; deadlines many turns ahead share slots.
    let mut w = Wheel::with_config(layout(&[3, 3]));
    let deadlines = [5u64, 69, 133, 64 * 1000 + 5, 64 * 1000 + 4, 7];
    for &d in &deadlines {
        w.insert(d, d);
    }
    let mut fired = Vec::new();
    for t in 0..=64 * 1000 + 10 {
        while let Some(e) = w.poll(t) {
            assert_eq!(e.deadline, t);
            fired.push(e.value);
        }
        if t % 997 == 0 {
            w.check_invariants().unwrap();
        }
    }
    assert_eq!(fired, [5, 7, 69, 133, 64 * 1000 + 4, 64 * 1000 + 5]);
}

#[test]
fn far_entries_do_not_cost_a_visit_per_turn() {
    // With a 4-bit span, reaching 2^60 would take 2^56 turns if every turn
    // visited the slot; the per-slot lower bound jumps straight there.
    let mut w = Wheel::with_config(layout(&[2, 2]));
    w.insert(1 << 60, ());
    w.insert((1 << 60) + 3, ());
    assert!(w.poll((1 << 60) - 1).is_none());
    assert_eq!(w.poll(u64::MAX).map(|e| e.deadline), Some(1 << 60));
    assert_eq!(w.poll(u64::MAX).map(|e| e.deadline), Some((1 << 60) + 3));
    assert!(w.events_processed < 20, "{} events", w.events_processed);
}

#[test]
fn long_empty_stretch_costs_o_levels() {
    let mut w: Wheel<()> = Wheel::new();
    w.insert(u64::MAX / 3, ());
    assert!(w.poll(u64::MAX / 3 - 1).is_none());
    assert!(w.poll(u64::MAX / 3).is_some());
    // One visit per level at most on the way down.
    assert!(w.events_processed <= 8, "{} events", w.events_processed);
}

#[test]
fn next_expiration_is_exact_on_the_lowest_level_and_safe_above() {
    let mut w = Wheel::new();
    assert_eq!(w.next_expiration(), None);
    w.insert(200, ());
    assert_eq!(w.next_expiration(), Some(200));
    w.insert(100_000, ());
    assert_eq!(w.next_expiration(), Some(200));
    w.poll(200);
    let e = w.next_expiration().unwrap();
    assert!(e <= 100_000);
    for t in [201, e.saturating_sub(1).max(201)] {
        assert!(w.poll(t).is_none());
    }
    // Once time reaches the slot, the answer becomes exact.
    w.poll(100_000 - 10);
    assert_eq!(w.next_expiration(), Some(100_000));
}

#[test]
fn keys_are_generational() {
    let mut w = Wheel::new();
    let a = w.insert(10, 1);
    assert_eq!(w.poll(10).map(|e| e.key), Some(a));
    let b = w.insert(20, 2); // reuses a's index
    assert_ne!(a, b);
    assert_eq!(w.cancel(a), None);
    assert!(!w.reset(a, 5));
    assert_eq!(w.get(a), None);
    assert_eq!(w.get_mut(a), None);
    assert_eq!(w.deadline(a), None);
    assert_eq!(w.get(b), Some(&2));
    assert_eq!(std::mem::size_of::<TimerKey>(), 8);
}

#[test]
fn reset_moves_behind_ties_and_never_fires_at_old_deadline() {
    let mut w = Wheel::new();
    let a = w.insert(10, 'a');
    w.insert(10, 'b');
    assert!(w.reset(a, 10));
    assert_eq!(drain_due(&mut w, 10), [(10, 'b'), (10, 'a')]);
    let c = w.insert(50, 'c');
    assert!(w.reset(c, 5000));
    assert!(w.poll(4999).is_none());
    assert_eq!(w.poll(5000).map(|e| e.value), Some('c'));
}

/// Resetting one timer over and over in a bucket of a few live ones: each
/// reset kills a cell and pushes a new one. A compaction bound that counted
/// all cells could be crossed by the push with no compaction after it (the
/// `config` fuzz target found this in the ready queue at `u64::MAX`).
#[test]
fn repeated_resets_keep_buckets_compacted() {
    for (now, deadline) in [(u64::MAX, u64::MAX), (0, 1 << 20), (0, 5)] {
        let mut w = Wheel::new();
        w.poll(now);
        let keys: Vec<_> = (0..14).map(|i| w.insert(deadline, i)).collect();
        for round in 0..500 {
            assert!(w.reset(keys[round % 3], deadline));
            w.check_invariants().unwrap();
        }
        assert_eq!(w.len(), 14);
        let mut fired = drain_due(&mut w, deadline);
        fired.sort();
        assert_eq!(fired, (0..14).map(|i| (deadline, i)).collect::<Vec<_>>());
    }
}

/// Cancels above level 0 are marked dead in batches (the kill log), and
/// cancels in the stage at once: here enough of them, spread over level-1
/// slots (one of them staged), top-level slots and cycles, to flush the log
/// many times, with lazy buckets swept (freed and compacted) as they go.
/// The invariants (which account for logged and lazily dead cells) hold
/// after every step, `next_expiration` stays safe, stale keys stay stale,
/// and the survivors fire once each, in order, never early.
#[test]
fn logged_cancels_are_marked_and_swept() {
    let mut w = Wheel::with_config(layout(&[4, 4, 4]));
    let bases = [20u64, 37, 100, 300, 5_000];
    let mut live: Vec<(u64, u64, TimerKey)> = (0..1_500u64)
        .map(|i| {
            let d = bases[(i % 5) as usize] + i % 7;
            (d, i, w.insert(d, i))
        })
        .collect();
    // Idle polls stage the level-1 slot of 16..=31 (see `stage_step`).
    for t in 1..4 {
        assert!(w.poll(t).is_none());
    }
    assert!(!w.stage.is_empty(), "nothing was staged");
    // Cancel every entry of 20..=26 and of 300..=306 (their buckets are
    // freed), and eight in nine of the rest (compactions), in a scrambled
    // order.
    let mut order: Vec<usize> = (0..live.len()).collect();
    let mut x = 7u64;
    for i in (1..order.len()).rev() {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        order.swap(i, (x >> 33) as usize % (i + 1));
    }
    let doomed = |d: u64, i: u64| d < 27 || (300..307).contains(&d) || i % 9 != 0;
    let mut cancelled = Vec::new();
    for &j in &order {
        let (d, i, key) = live[j];
        if !doomed(d, i) {
            continue;
        }
        assert_eq!(w.cancel(key), Some(i));
        cancelled.push(key);
        w.check_invariants().unwrap();
        let earliest = live
            .iter()
            .filter(|e| w.get(e.2).is_some())
            .map(|e| e.0)
            .min();
        match (w.next_expiration(), earliest) {
            (Some(n), Some(e)) => assert!(n <= e, "next_expiration {n} after {e}"),
            (n, e) => assert_eq!(n.is_some(), e.is_some()),
        }
    }
    for key in cancelled {
        assert_eq!(w.cancel(key), None);
        assert!(!w.reset(key, 1));
    }
    live.retain(|&(d, i, _)| !doomed(d, i));
    assert_eq!(w.len(), live.len());
    // One survivor is reset (logged too) to a later tick: it goes last.
    let moved = live.remove(0);
    assert!(w.reset(moved.2, 6_000));
    w.check_invariants().unwrap();
    live.push((6_000, moved.1, moved.2));
    live.sort_by_key(|&(d, i, _)| (d, i));
    let mut fired = Vec::new();
    for t in 4..=6_000 {
        while let Some(e) = w.poll(t) {
            assert_eq!(e.deadline, t, "fired at {t}, due {}", e.deadline);
            fired.push((e.deadline, e.value, e.key));
        }
    }
    w.check_invariants().unwrap();
    let want: Vec<_> = live.iter().map(|&(d, i, k)| (d.max(4), i, k)).collect();
    // Equal deadlines keep insertion order, except the reset one.
    assert_eq!(fired, want);
    assert!(w.is_empty());
}

#[test]
fn drain_returns_everything_once_and_leaves_the_wheel_usable() {
    let mut w = Wheel::with_config(layout(&[2, 2]));
    let mut expected: Vec<u64> = vec![0, 1, 17, 1 << 33, u64::MAX];
    for &d in &expected {
        w.insert(d, d);
    }
    w.poll(0); // one due entry waits on the ready list
    let mut got: Vec<u64> = w.drain().map(|e| e.value).collect();
    got.sort_unstable();
    expected.sort_unstable();
    // poll(0) returned the entry at 0.
    assert_eq!(got, &expected[1..]);
    assert!(w.is_empty());
    assert_eq!(w.next_expiration(), None);
    w.check_invariants().unwrap();
    w.insert(3, 3);
    assert_eq!(w.poll(3).map(|e| e.value), Some(3));
    // Dropping a drain early still removes everything.
    w.insert(10, 1);
    w.insert(20, 2);
    let mut d = w.drain();
    assert!(d.next().is_some());
    drop(d);
    assert!(w.is_empty());
    w.check_invariants().unwrap();
}

#[test]
fn no_allocation_per_insert_once_capacity_is_reached() {
    let mut w = Wheel::with_capacity(1024);
    let cap = w.capacity();
    let keys: Vec<_> = (0..1024u64).map(|i| w.insert(i * 37, i)).collect();
    for k in keys {
        w.cancel(k);
    }
    for i in 0..1024u64 {
        w.insert(i, i);
    }
    assert_eq!(w.capacity(), cap);
}

#[test]
fn wheel_is_send() {
    fn send<T: Send>() {}
    send::<Wheel<String>>();
    send::<TimerKey>();
}

// ---------------------------------------------------------------------------
// Differential property test against the model.

#[derive(Debug, Clone)]
enum Deadline {
    Near(u64),
    Mid(u64),
    Far(u64),
    Abs(u64),
    Past(u64),
    Max,
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Deadline),
    Cancel(usize),
    Reset(usize, Deadline),
    Poll(u64),
    PollJump(u64),
    PollMax,
    PollBack(u64),
    PollAll(u64),
    Drain,
    Shrink,
}

fn deadline() -> impl Strategy<Value = Deadline> {
    prop_oneof![
        4 => (0u64..300).prop_map(Deadline::Near),
        2 => (0u64..100_000).prop_map(Deadline::Mid),
        1 => (0u64..(1 << 40)).prop_map(Deadline::Far),
        1 => any::<u64>().prop_map(Deadline::Abs),
        1 => (0u64..1000).prop_map(Deadline::Past),
        1 => Just(Deadline::Max),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => deadline().prop_map(Op::Insert),
        3 => any::<usize>().prop_map(Op::Cancel),
        3 => (any::<usize>(), deadline()).prop_map(|(i, d)| Op::Reset(i, d)),
        5 => (0u64..64).prop_map(Op::Poll),
        1 => (0u64..(1 << 36)).prop_map(Op::PollJump),
        1 => Just(Op::PollMax),
        1 => (0u64..100).prop_map(Op::PollBack),
        2 => (0u64..5000).prop_map(Op::PollAll),
        1 => Just(Op::Drain),
        1 => Just(Op::Shrink),
    ]
}

fn layout_bits() -> impl Strategy<Value = Vec<u32>> {
    // Wide levels make the full invariant walk (every slot) slow in debug
    // builds, so 16-bit levels appear in a few fixed layouts only.
    prop_oneof![
        3 => Just(vec![8; 8]),
        2 => Just(vec![6; 6]),
        1 => Just(vec![16]),
        1 => Just(vec![16, 16, 16, 16]),
        6 => prop::collection::vec(1u32..=8, 1..=6),
        3 => prop::collection::vec(1u32..=12, 1..=4),
    ]
    .prop_filter("fits in 64 bits", |b| b.iter().sum::<u32>() <= 64)
}

fn resolve(d: &Deadline, now: u64) -> u64 {
    match *d {
        Deadline::Near(x) => now.saturating_add(x),
        Deadline::Mid(x) => now.saturating_add(x),
        Deadline::Far(x) => now.saturating_add(x),
        Deadline::Abs(x) => x,
        Deadline::Past(x) => now.saturating_sub(x),
        Deadline::Max => u64::MAX,
    }
}

struct Harness {
    wheel: Wheel<u64>,
    model: Model<u64>,
    /// Every key ever handed out, with its model id (stale ones included).
    keys: Vec<(TimerKey, u64)>,
}

impl Harness {
    fn poll_once(&mut self, t: u64) -> bool {
        let got = self.wheel.poll(t);
        let want = self.model.poll(t);
        match (&got, &want) {
            (None, None) => false,
            (Some(g), Some((id, eff, v))) => {
                assert_eq!((g.value, g.deadline), (*v, *eff), "fired entry");
                assert_eq!(self.keys[*id as usize].0, g.key, "key of fired entry");
                assert!(g.deadline <= self.wheel.now(), "fired early");
                true
            }
            _ => panic!("wheel {got:?} vs model {want:?} at poll({t})"),
        }
    }

    fn check(&self) {
        self.wheel.check_invariants().unwrap();
        assert_eq!(self.wheel.len(), self.model.len());
        assert_eq!(self.wheel.now(), self.model.now());
        let next = self.wheel.next_expiration();
        assert_eq!(next.is_none(), self.model.is_empty());
        if let (Some(e), Some(earliest)) = (next, self.model.earliest()) {
            assert!(
                e <= earliest,
                "next_expiration {e} after earliest {earliest}"
            );
            // Exact when the earliest entry is on the lowest level and that
            // level is not the top (whose per-slot bounds may be stale).
            let bits0 = self.wheel.layout.levels[0].bits;
            let same_turn = earliest >> bits0 == self.wheel.elapsed >> bits0;
            let multi = self.wheel.layout.levels.len() > 1;
            if multi && self.wheel.ready.is_empty() && earliest > self.wheel.elapsed && same_turn {
                assert_eq!(e, earliest, "not exact on the lowest level");
            }
        }
    }

    fn apply(&mut self, op: &Op) {
        let now = self.wheel.now();
        match op {
            Op::Insert(d) => {
                let deadline = resolve(d, now);
                let id = self.keys.len() as u64;
                let key = self.wheel.insert(deadline, id);
                assert_eq!(self.model.insert(deadline, id), id);
                self.keys.push((key, id));
            }
            Op::Cancel(i) if !self.keys.is_empty() => {
                let (key, id) = self.keys[i % self.keys.len()];
                assert_eq!(self.wheel.cancel(key), self.model.cancel(id));
            }
            Op::Reset(i, d) if !self.keys.is_empty() => {
                let (key, id) = self.keys[i % self.keys.len()];
                let deadline = resolve(d, now);
                assert_eq!(
                    self.wheel.reset(key, deadline),
                    self.model.reset(id, deadline)
                );
                assert_eq!(self.wheel.deadline(key), self.model.deadline(id));
                assert_eq!(
                    self.wheel.get(key).copied(),
                    self.model.deadline(id).map(|_| id)
                );
            }
            Op::Cancel(_) | Op::Reset(..) => {}
            Op::Poll(step) => {
                self.poll_once(now.saturating_add(*step));
            }
            Op::PollJump(step) => {
                self.poll_once(now.saturating_add(*step));
            }
            Op::PollMax => {
                self.poll_once(u64::MAX);
            }
            Op::PollBack(back) => {
                self.poll_once(now.saturating_sub(*back));
            }
            Op::PollAll(step) => {
                let t = now.saturating_add(*step);
                while self.poll_once(t) {}
            }
            Op::Drain => {
                let mut got: Vec<(u64, u64)> =
                    self.wheel.drain().map(|e| (e.value, e.deadline)).collect();
                let mut want: Vec<(u64, u64)> = self
                    .model
                    .drain()
                    .into_iter()
                    .map(|(id, eff, _)| (id, eff))
                    .collect();
                got.sort_unstable();
                want.sort_unstable();
                assert_eq!(got, want, "drain");
            }
            Op::Shrink => self.wheel.shrink_to_fit(),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn wheel_matches_model(bits in layout_bits(), ops in prop::collection::vec(op(), 1..300)) {
        let mut h = Harness {
            wheel: Wheel::with_config(WheelConfig::new(&bits).unwrap()),
            model: Model::new(),
            keys: Vec::new(),
        };
        for op in &ops {
            h.apply(op);
            h.check();
        }
        // Everything left fires exactly once, in order, by the end of time.
        while h.poll_once(u64::MAX) {}
        h.check();
        prop_assert!(h.wheel.is_empty());
    }
}

/// Polls every tick from `from` to `to` inclusive, collecting what fires,
/// with the invariants checked after each poll.
fn tick_by_tick<T>(w: &mut Wheel<T>, from: u64, to: u64) -> Vec<(u64, T)> {
    let mut out = Vec::new();
    for t in from..=to {
        out.extend(drain_due(w, t));
        w.check_invariants().unwrap();
    }
    out
}

#[test]
fn idle_polls_stage_the_next_cascade() {
    // 5 000 timers due in level-1 slot 1 (ticks 256..512) of the default
    // layout. Polling tick by tick, the idle polls of ticks 1..=255 move
    // them to level 0 ahead of time; jumping straight past 256 cascades
    // them all in one poll.
    let deadlines: Vec<u64> = (0..5_000u64).map(|i| 256 + (i * 7919) % 256).collect();
    let mut stepped = Wheel::new();
    let mut jumped = Wheel::new();
    for (i, &d) in deadlines.iter().enumerate() {
        stepped.insert(d, i);
        jumped.insert(d, i);
    }
    assert!(tick_by_tick(&mut stepped, 1, 255).is_empty());
    assert_eq!(stepped.cells_cascaded, 0);
    let before = stepped.cells_cascaded;
    let a = drain_due(&mut stepped, 256);
    assert_eq!(stepped.cells_cascaded - before, 0, "all staged before 256");
    let b = drain_due(&mut jumped, 256);
    assert_eq!(jumped.cells_cascaded, 5_000);
    assert_eq!(a, b);
    let a = tick_by_tick(&mut stepped, 257, 600);
    let b = drain_due(&mut jumped, 600);
    assert_eq!(a, b);
    assert!(stepped.is_empty() && jumped.is_empty());
}

#[test]
fn staging_keeps_fifo_order_cancel_and_reset() {
    let mut w = Wheel::new();
    let mut keys = Vec::new();
    // Early entries at 256 (the staged slot's first tick) and at 300.
    for i in 0..200 {
        keys.push(w.insert(if i % 2 == 0 { 256 } else { 300 }, i));
    }
    // One idle poll stages the first 64 cells.
    assert!(w.poll(200).is_none());
    w.check_invariants().unwrap();
    assert!(w.staging.is_some() && !w.stage.is_empty());
    // Later entries for the same ticks stay in the level-1 slot, behind.
    for i in 200..260 {
        keys.push(w.insert(if i % 2 == 0 { 256 } else { 300 }, i));
    }
    // Cancel staged and unstaged ones, reset one of each kind to 300.
    assert_eq!(w.cancel(keys[0]), Some(0));
    assert_eq!(w.cancel(keys[250]), Some(250));
    assert!(w.reset(keys[2], 300));
    assert!(w.reset(keys[150], 300));
    w.check_invariants().unwrap();
    // Straight to the staged slot's start: part of it is still unstaged.
    assert!(!w.levels[1].slots[1].is_empty());
    let mut fired = drain_due(&mut w, 256);
    w.check_invariants().unwrap();
    fired.extend(tick_by_tick(&mut w, 257, 400));
    let mut expect: Vec<(u64, i32)> = (0..260)
        .filter(|&i| i != 0 && i != 250 && i != 2 && i != 150 && i % 2 == 0)
        .map(|i| (256, i))
        .collect();
    expect.extend(
        (0..260)
            .filter(|&i| i % 2 == 1 && i != 150 && i != 2)
            .map(|i| (300, i)),
    );
    expect.extend([(300, 2), (300, 150)]);
    assert_eq!(fired, expect);
}

#[test]
fn staged_entries_cancelled_before_their_slot_leave_nothing_behind() {
    let mut w = Wheel::with_config(layout(&[4, 4, 4]));
    let keys: Vec<_> = (0..40).map(|i| w.insert(16 + i % 16, i)).collect();
    assert!(w.poll(3).is_none());
    w.check_invariants().unwrap();
    for k in keys {
        assert!(w.cancel(k).is_some());
        w.check_invariants().unwrap();
    }
    assert!(w.is_empty());
    assert_eq!(w.next_expiration(), None);
    assert!(tick_by_tick(&mut w, 4, 80).is_empty());
    w.shrink_to_fit();
    w.check_invariants().unwrap();
}

#[test]
fn shrink_and_drain_while_staging() {
    let mut w = Wheel::with_config(layout(&[4, 4, 4]));
    let keys: Vec<_> = (0..100u64).map(|i| w.insert(16 + i % 16, i)).collect();
    // One idle poll stages 64 of the 100.
    assert!(w.poll(3).is_none());
    assert!(!w.stage.is_empty() && !w.levels[1].slots[1].is_empty());
    for k in keys.iter().step_by(3) {
        assert!(w.cancel(*k).is_some());
    }
    w.shrink_to_fit();
    w.check_invariants().unwrap();
    // Staged cells were rebuilt in the stage, tagged, and are found again.
    assert!(!w.stage.is_empty());
    assert_eq!(w.cancel(keys[1]), Some(1));
    assert!(w.reset(keys[2], 17));
    w.check_invariants().unwrap();
    let mut expect: Vec<(u64, u64)> = (0..100u64)
        .filter(|i| i % 3 != 0 && *i != 1 && *i != 2)
        .map(|i| (16 + i % 16, i))
        .collect();
    expect.push((17, 2));
    expect.sort_by_key(|&(when, _)| when); // stable: FIFO within a tick
    let fired = tick_by_tick(&mut w, 4, 40);
    assert_eq!(fired, expect);
    // Drain while a slot is staged takes staged and unstaged entries alike.
    let mut w = Wheel::with_config(layout(&[4, 4, 4]));
    for i in 0..100u64 {
        w.insert(16 + i % 16, i);
    }
    assert!(w.poll(3).is_none());
    let mut all: Vec<u64> = w.drain().map(|e| e.value).collect();
    all.sort_unstable();
    assert_eq!(all, (0..100).collect::<Vec<_>>());
    w.check_invariants().unwrap();
    assert_eq!(w.next_expiration(), None);
}

/// Cancels above level 0 only mark cells (lazy buckets); sweeps keep the
/// marked cells in proportion to the pending timers. Here the clock never
/// moves, so no cascade clears anything: without sweeps every cancel would
/// leave a cell behind for good.
#[test]
fn sweeps_keep_lazily_dead_cells_in_proportion() {
    let mut w = Wheel::with_config(layout(&[4, 4, 4]));
    let mut keys: Vec<TimerKey> = (0..200u64).map(|i| w.insert(300 + i * 13, i)).collect();
    let mut peak_cells = 0;
    let mut x = 11u64;
    let mut sweeps_seen = false;
    for step in 0..20_000u64 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let j = (x >> 33) as usize % keys.len();
        assert!(w.cancel(keys[j]).is_some());
        keys[j] = w.insert(20 + (x >> 40) % 4_000, step);
        sweeps_seen |= w.sweep.is_some();
        // The bound a pass keeps: the cells it started for, plus at most
        // one per eight it reads, plus a log's worth not yet marked.
        let bound = (COMPACT_RATIO + 2) * w.len() + SWEEP_MIN + kill_log::DEFER_KILLS;
        assert!(w.lazy_dead <= bound, "step {step}: {} dead", w.lazy_dead);
        peak_cells = peak_cells.max(w.blocks.in_use() * BLOCK_CELLS);
        if step % 997 == 0 {
            w.check_invariants().unwrap();
        }
    }
    assert!(sweeps_seen, "no sweep ran");
    // 200 timers never needed more than about 6 cells each (with at most
    // one part-used block per occupied slot).
    assert!(
        peak_cells <= 6 * 200 + 48 * BLOCK_CELLS,
        "{peak_cells} cells"
    );
    // Cancelling everything leaves at most the sweep's allowance behind.
    for k in keys {
        assert!(w.cancel(k).is_some());
    }
    w.check_invariants().unwrap();
    assert!(w.lazy_dead <= SWEEP_MIN + kill_log::DEFER_KILLS);
    assert_eq!(w.next_expiration(), None);
    assert!(tick_by_tick(&mut w, 0, 5_000).is_empty());
    assert_eq!(w.blocks.in_use(), 0);
}

/// Takes `n` timers' values through `drain` and leaks the iterator, which
/// leaves the rest pending; the values come back sorted.
fn leak_drain<T: Ord>(w: &mut Wheel<T>, n: usize) -> Vec<T> {
    let mut d = w.drain();
    let mut taken: Vec<T> = (0..n).map(|_| d.next().unwrap().value).collect();
    std::mem::forget(d);
    taken.sort_unstable();
    taken
}

/// A drain abandoned half-way (leaked) leaves cells counted dead in lazy
/// buckets beside cells cancelled lazily; staging then passes both kinds,
/// and the accounting stays exact.
#[test]
fn staging_after_a_leaked_drain_passes_both_kinds_of_dead_cells() {
    let mut w = Wheel::with_config(layout(&[4, 4, 4]));
    let keys: Vec<_> = (0..100u64).map(|i| w.insert(16 + i % 16, i)).collect();
    let drained = leak_drain(&mut w, 10);
    assert_eq!(drained, (0..10).collect::<Vec<_>>());
    assert!(
        w.levels[1].slots[1].dead > 0,
        "the drain counted no dead cell"
    );
    for k in &keys[20..40] {
        assert!(w.cancel(*k).is_some());
    }
    w.check_invariants().unwrap();
    // An idle poll flushes the log and stages the front of the slot.
    assert!(w.poll(3).is_none());
    w.check_invariants().unwrap();
    assert!(!w.stage.is_empty());
    let fired = tick_by_tick(&mut w, 4, 40);
    let mut want: Vec<(u64, u64)> = (10..20).chain(40..100).map(|i| (16 + i % 16, i)).collect();
    want.sort_by_key(|&(when, _)| when); // stable: FIFO within a tick
    assert_eq!(fired, want);
    assert_eq!(w.blocks.in_use(), 0);
}

/// Staging that leaves a lazy level-1 bucket with too many counted dead
/// cells compacts it, and the compaction takes the bucket's share of
/// lazily dead cells off the wheel's count like any other.
#[test]
fn compaction_after_staging_accounts_for_lazily_dead_cells() {
    let mut w = Wheel::with_config(layout(&[4, 4, 4]));
    // Fillers take slab indices 0..100 and free them again, so that the
    // 70 timers at the back of level-1 slot 1 get indices below those of
    // the 66 at its front, and a drain (index order) takes the back ones.
    let fillers: Vec<_> = (0..100u64).map(|i| w.insert(1_000, i)).collect();
    let front: Vec<_> = (0..66u64).map(|i| w.insert(16 + i % 16, 100 + i)).collect();
    for k in fillers {
        assert!(w.cancel(k).is_some());
    }
    for i in 0..70u64 {
        w.insert(31, 200 + i);
    }
    let drained = leak_drain(&mut w, 70);
    assert_eq!(drained, (200..270).collect::<Vec<_>>());
    // One front timer cancelled lazily: the bucket counts it live.
    assert_eq!(w.cancel(front[65]), Some(165));
    w.check_invariants().unwrap();
    // Staging moves 64 front cells out, leaving 70 counted dead beside 2
    // counted live (one of them the lazily dead one): a compaction.
    assert!(w.poll(3).is_none());
    w.check_invariants().unwrap();
    // Through tick 1 000 too, where the fillers' cancelled cells lie.
    let fired = tick_by_tick(&mut w, 4, 1_100);
    let mut want: Vec<(u64, u64)> = (0..65).map(|i| (16 + i % 16, 100 + i)).collect();
    want.sort_by_key(|&(when, _)| when); // stable: FIFO within a tick
    assert_eq!(fired, want);
    assert_eq!(w.blocks.in_use(), 0);
}
