//! Unit tests of the wheel: ordering, boundaries, keys, drain, costs. The
//! lazy deletion, staging and the differential tests against the model
//! have their own files.

mod lazy;
mod model;
mod staging;

use super::*;

/// Both tunings: the one every wheel runs, and the small one (see
/// [`Tuning`]).
const TUNINGS: [Tuning; 2] = [
    testing::TuningPreset::Default.tuning(),
    testing::TuningPreset::Small.tuning(),
];

/// The layout `bits` describes.
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

/// Takes `n` timers' values through `drain` and leaks the iterator, which
/// leaves the rest pending; the values come back sorted.
fn leak_drain<T: Ord>(w: &mut Wheel<T>, n: usize) -> Vec<T> {
    let mut d = w.drain();
    let mut taken: Vec<T> = (0..n).map(|_| d.next().unwrap().value).collect();
    std::mem::forget(d);
    taken.sort_unstable();
    taken
}
