//! Tests of the lazy deletion (see `core/lazy.rs`): the kill log, lazily
//! dead cells, compaction and sweeps, under both tunings where the sizes
//! matter.

use super::*;
use crate::core::cells::COMPACT_RATIO;
use crate::core::kill_log::DEFER_KILLS;

/// Resetting one timer over and over in a bucket of a few live ones: each
/// reset kills a cell and pushes a new one. A compaction bound that counted
/// all cells could be crossed by the push with no compaction after it (the
/// `config` fuzz target found this in the ready queue at `u64::MAX`).
#[test]
fn repeated_resets_keep_buckets_compacted() {
    for tuning in TUNINGS {
        repeated_resets_keep_buckets_compacted_under(tuning);
    }
}

fn repeated_resets_keep_buckets_compacted_under(tuning: Tuning) {
    for (now, deadline) in [(u64::MAX, u64::MAX), (0, 1 << 20), (0, 5)] {
        let mut w = Wheel::with_tuning(WheelConfig::default(), tuning);
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
    for tuning in TUNINGS {
        logged_cancels_are_marked_and_swept_under(tuning);
    }
}

fn logged_cancels_are_marked_and_swept_under(tuning: Tuning) {
    let mut w = Wheel::with_tuning(layout(&[4, 4, 4]), tuning);
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

/// Cancels above level 0 only mark cells (lazy buckets); sweeps keep the
/// marked cells in proportion to the pending timers. Here the clock never
/// moves, so no cascade clears anything: without sweeps every cancel would
/// leave a cell behind for good. With the small tuning, so that 200
/// timers sweep (the default's allowance alone is 16 384 cells).
#[test]
fn sweeps_keep_lazily_dead_cells_in_proportion() {
    let mut w = Wheel::with_tuning(layout(&[4, 4, 4]), Tuning::SMALL);
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
        let bound = (COMPACT_RATIO + 2) * w.len() + w.sweep_min + DEFER_KILLS;
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
    assert!(w.lazy_dead <= w.sweep_min + DEFER_KILLS);
    assert_eq!(w.next_expiration(), None);
    assert!(tick_by_tick(&mut w, 0, 5_000).is_empty());
    assert_eq!(w.blocks.in_use(), 0);
}

/// A drain abandoned half-way (leaked) leaves cells counted dead in lazy
/// buckets beside cells cancelled lazily; staging then passes both kinds,
/// and the accounting stays exact.
#[test]
fn staging_after_a_leaked_drain_passes_both_kinds_of_dead_cells() {
    for tuning in TUNINGS {
        staging_after_a_leaked_drain_passes_both_kinds_of_dead_cells_under(tuning);
    }
}

fn staging_after_a_leaked_drain_passes_both_kinds_of_dead_cells_under(tuning: Tuning) {
    let mut w = Wheel::with_tuning(layout(&[4, 4, 4]), tuning);
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
    for tuning in TUNINGS {
        compaction_after_staging_accounts_for_lazily_dead_cells_under(tuning);
    }
}

fn compaction_after_staging_accounts_for_lazily_dead_cells_under(tuning: Tuning) {
    let mut w = Wheel::with_tuning(layout(&[4, 4, 4]), tuning);
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
