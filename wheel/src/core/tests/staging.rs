//! Tests of staging (see `core/stage.rs`): the next level-1 slot moved to
//! level 0 during idle polls, with order, cancels, resets, shrinking and
//! draining kept exact.

use super::*;

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
