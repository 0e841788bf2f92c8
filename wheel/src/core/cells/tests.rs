//! Tests of buckets and the block arena.

use super::arena::Block;
use super::*;

fn contents(b: &Bucket, arena: &Blocks) -> Vec<u32> {
    b.walk(arena).unwrap().0.into_iter().map(|c| c.1).collect()
}

/// A cell owner that records what a compaction tells it, as
/// `(index, new address)`.
#[derive(Default)]
struct Moves(Vec<(u32, CellAddr)>);

impl CellOwner for Moves {
    fn moved(&mut self, index: u32, to: CellAddr) {
        self.0.push((index, to));
    }
}

impl Moves {
    fn indices(&self) -> Vec<u32> {
        self.0.iter().map(|m| m.0).collect()
    }
}

#[test]
fn block_is_128_bytes_and_not_over_aligned() {
    assert_eq!(std::mem::size_of::<Block>(), 128);
    // At most 16 bytes, or the arena is copied when it grows (see
    // `Block`).
    assert_eq!(std::mem::align_of::<Block>(), std::mem::align_of::<u32>());
}

#[test]
fn push_kill_compact_keep_order_and_addresses() {
    let mut arena = Blocks::with_capacity(0);
    let mut b = Bucket::EMPTY;
    let addrs: Vec<CellAddr> = (0..300).map(|i| b.push(&mut arena, i)).collect();
    for (i, &a) in addrs.iter().enumerate() {
        assert_eq!(arena.get(a), i as u32);
    }
    assert_eq!(arena.in_use(), 300usize.div_ceil(BLOCK_CELLS));
    let live = |i: u32| i % 5 == 0;
    for i in (0..300).filter(|&i| !live(i)) {
        assert!(!b.kill(&mut arena, addrs[i as usize]));
        assert!(arena.is_dead(addrs[i as usize]));
    }
    assert!(!arena.is_dead(addrs[5]));
    assert!(b.wants_compaction());
    let mut owner = Moves::default();
    b.compact(&mut arena, &mut owner);
    let want: Vec<u32> = (0..300).step_by(5).collect();
    assert_eq!(contents(&b, &arena), want);
    // Entry 0 has no dead cell before it: it stays, and is not told.
    assert_eq!(b.front(), Some(addrs[0]));
    assert_eq!(owner.indices(), want[1..]);
    for &(index, to) in &owner.0 {
        assert_eq!(arena.get(to), index);
        assert!(!arena.is_dead(to), "a moved cell keeps no dead bit");
    }
    assert_eq!((b.live, b.dead), (60, 0));
    // `walk` checks that the new tail keeps no bit past its end.
    b.walk(&arena).unwrap();
    let used = 60usize.div_ceil(BLOCK_CELLS);
    assert_eq!(arena.in_use(), used);
    arena.check(used).unwrap();
    b.clear(&mut arena);
    assert!(b.is_empty());
    arena.check(0).unwrap();
}

#[test]
fn kill_reports_the_last_live_cell() {
    let mut arena = Blocks::with_capacity(4);
    let mut b = Bucket::EMPTY;
    let x = b.push(&mut arena, 7);
    let y = b.push(&mut arena, 8);
    assert!(!b.kill(&mut arena, y));
    assert!(b.kill(&mut arena, x));
    assert_eq!((b.live, b.dead), (0, 2));
}

#[test]
fn append_and_advance_drain_in_order() {
    let mut arena = Blocks::with_capacity(0);
    let (mut a, mut b) = (Bucket::EMPTY, Bucket::EMPTY);
    for i in 0..70 {
        a.push(&mut arena, i);
    }
    let kept: Vec<CellAddr> = (70..200).map(|i| b.push(&mut arena, i)).collect();
    a.append(&mut arena, &mut b);
    assert!(b.is_empty());
    // The cells of `b` kept their addresses; the rest of `a`'s last
    // block became dead padding.
    assert_eq!(arena.get(kept[0]), 70);
    let padding = (70usize.div_ceil(BLOCK_CELLS) * BLOCK_CELLS - 70) as u32;
    assert_eq!((a.live, a.dead), (200, padding));
    a.walk(&arena).unwrap();
    let mut seen = Vec::new();
    while let Some(addr) = a.front() {
        let index = arena.get(addr);
        // Padding holds NIL and is marked dead.
        assert_eq!(index == NIL, arena.is_dead(addr));
        a.advance(&mut arena, index != NIL);
        if index != NIL {
            seen.push(index);
        }
    }
    assert_eq!(seen, (0..200).collect::<Vec<_>>());
    assert_eq!(a, Bucket::EMPTY);
    arena.check(0).unwrap();
}

#[test]
fn skip_dead_passes_only_a_wholly_dead_rest_of_a_block() {
    let mut arena = Blocks::with_capacity(0);
    let mut b = Bucket::EMPTY;
    // Blocks of 31: cells 0..31, 31..62, 62..70 (the tail, end 8).
    let addrs: Vec<CellAddr> = (0..70).map(|i| b.push(&mut arena, i)).collect();
    for &addr in addrs[5..31]
        .iter()
        .chain(&addrs[40..62])
        .chain(&addrs[66..70])
    {
        arena.set_dead(addr);
    }
    let mut taken = b.take();
    let mut seen = Vec::new();
    let mut skipped = Vec::new();
    while let Some((addr, index)) = taken.next_cell(&mut arena, true) {
        if arena.is_dead(addr) {
            skipped.push((index, taken.skip_dead(&arena)));
        } else {
            seen.push(index);
        }
    }
    // After cell 5, the rest of block 0 is dead (25 cells); in block 1
    // cells 40..62 are dead, but after cell 40 the rest is too (21);
    // in the tail, after cell 66 the rest up to the end (3).
    assert_eq!(skipped, [(5, 25), (40, 21), (66, 3)]);
    let want: Vec<u32> = (0..5).chain(31..40).chain(62..66).collect();
    assert_eq!(seen, want);
    arena.check(0).unwrap();
    // A dead cell followed by a live one skips nothing.
    let mut b = Bucket::EMPTY;
    let addrs: Vec<CellAddr> = (0..3).map(|i| b.push(&mut arena, i)).collect();
    arena.set_dead(addrs[0]);
    let mut taken = b.take();
    assert_eq!(taken.next_cell(&mut arena, true), Some((addrs[0], 0)));
    assert_eq!(taken.skip_dead(&arena), 0);
    assert_eq!(taken.next_cell(&mut arena, true), Some((addrs[1], 1)));
}

#[test]
fn taken_cells_free_their_blocks() {
    let mut arena = Blocks::with_capacity(0);
    let mut b = Bucket::EMPTY;
    let addrs: Vec<CellAddr> = (0..127).map(|i| b.push(&mut arena, i)).collect();
    let mut taken = b.take();
    let got: Vec<(CellAddr, u32)> =
        std::iter::from_fn(|| taken.next_cell(&mut arena, true)).collect();
    let want: Vec<(CellAddr, u32)> = addrs.into_iter().zip(0..127).collect();
    assert_eq!(got, want);
    arena.check(0).unwrap();
}

#[test]
fn compacting_only_dead_cells_frees_everything() {
    let mut arena = Blocks::with_capacity(0);
    let mut b = Bucket::EMPTY;
    let addrs: Vec<CellAddr> = (0..140).map(|i| b.push(&mut arena, i)).collect();
    for &addr in &addrs[1..] {
        b.kill(&mut arena, addr);
    }
    b.compact(&mut arena, &mut Moves::default());
    assert_eq!(contents(&b, &arena), [0]);
    arena.check(1).unwrap();
    let front = b.front().unwrap();
    assert!(b.kill(&mut arena, front));
    b.compact(&mut arena, &mut Moves::default());
    assert!(b.is_empty());
    arena.check(0).unwrap();
}

#[test]
fn compaction_drops_cells_marked_without_the_bucket_and_counts_exactly() {
    // A lazy bucket: cells marked dead by `set_dead` alone stay counted
    // live until a compaction reads their bits.
    let mut arena = Blocks::with_capacity(0);
    let mut b = Bucket::EMPTY;
    let addrs: Vec<CellAddr> = (0..100).map(|i| b.push(&mut arena, i)).collect();
    for &addr in &addrs[40..80] {
        arena.set_dead(addr);
    }
    assert_eq!((b.live, b.dead), (100, 0));
    let mut owner = Moves::default();
    b.compact(&mut arena, &mut owner);
    let want: Vec<u32> = (0..40).chain(80..100).collect();
    assert_eq!(contents(&b, &arena), want);
    assert_eq!((b.live, b.dead), (60, 0));
    // Only the cells behind the first dead one moved.
    assert_eq!(owner.indices(), (80..100).collect::<Vec<_>>());
    assert_eq!(arena.get(addrs[39]), 39);
    arena.check(60usize.div_ceil(BLOCK_CELLS)).unwrap();
    // With no dead cell, nothing moves and nobody is told.
    let mut owner = Moves::default();
    b.compact(&mut arena, &mut owner);
    assert_eq!(contents(&b, &arena), want);
    assert!(owner.0.is_empty());
}
