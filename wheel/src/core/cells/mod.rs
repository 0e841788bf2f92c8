//! Slot contents: unrolled lists of entry indices ("cells") in one shared
//! arena of 128-byte blocks.
//!
//! A slot holds its entries as a [`Bucket`] (`bucket.rs`): a chain of
//! [`Block`](arena::Block)s, each 128 bytes holding [`BLOCK_CELLS`] cells
//! and the index of the next block, taken from one arena, [`Blocks`]
//! (`arena.rs`). Cells are appended in placement order. An entry remembers
//! the *address* of its cell, a [`CellAddr`] (`block * 32 + offset`,
//! stable while the cell exists), so:
//!
//! - a cell is *live* iff the entry it names is occupied and remembers this
//!   very address. An address names one cell for as long as its block is
//!   in a bucket, so a cell left behind by a cancel or a move (a *dead*
//!   cell) can never look live again: the entry has moved to another
//!   address or is gone, and only a freed and reused block gets new cells;
//! - each block has a word of *dead bits* beside the arena, one per cell:
//!   whoever makes a cell dead sets its bit (and, in an exact bucket,
//!   counts it in the bucket), so reading a bucket (compacting, cascading,
//!   dropping dead cells at the front of the ready queue) tells dead cells
//!   apart without looking their entries up. The words take 4 bytes per
//!   128-byte block and sit close together, so cancelling a timer touches
//!   no cell, only one word that is most likely in cache; a compaction then
//!   loads the entries of live cells only, to tell them where they moved;
//! - processing a slot reads its cells block by block: 31 entry indices per
//!   block, known up front, so the entries' cache misses overlap instead of
//!   forming a chain of dependent loads as an intrusive list's would;
//! - a whole bucket moves to another chain, or back to the free list, in
//!   O(1) by relinking blocks, and the cells keep their addresses.
//!
//! Invariants (checked by `Wheel::check_invariants` through
//! `Blocks::check` and `Bucket::walk`):
//! - every block is either on the free list or in exactly one bucket;
//! - a cell of a bucket is dead iff its dead bit is set (but for the wheel's
//!   kill log, see `core/lazy.rs`); the bits of a tail block's cells past the
//!   bucket's `end` are clear (so a push needs not touch them);
//! - an empty bucket has no blocks and zero counts;
//! - a non-empty bucket's cells are the cells of its blocks from `start` in
//!   `head` to `end` in `tail`, and `live + dead` counts them. At least
//!   `dead` of them are dead. In an *exact* bucket (the wheel's ready queue,
//!   level 0 and stage) exactly `dead` are; in a *lazy* one (levels 1 and
//!   up) the cells a cancel marked dead without touching the bucket are
//!   still counted in `live` (the wheel counts them all together, and takes
//!   a bucket's share off that count whenever it reads the bucket). `live >
//!   0`: a bucket counted as all dead is freed at once;
//! - a bucket's `dead` never outnumbers its `live` more than
//!   [`COMPACT_RATIO`] to one once there are [`COMPACT_MIN`] of them or more
//!   (it is compacted when they would). The test counts dead cells only, so
//!   a push (one more live cell) can never make a compaction newly due.

mod arena;
mod bucket;
#[cfg(test)]
mod tests;

use std::fmt;

pub(crate) use self::arena::Blocks;
pub(crate) use self::bucket::Bucket;
use super::index::NIL;

/// Cells per block: 31 `u32` indices and the next block's index fill 128
/// bytes, two cache lines' worth (fetched together by the hardware when a
/// bucket is read front to back). Larger blocks read a little faster but
/// cost more in part-used blocks: at most one per slot (and stage slot, and
/// the ready queue), so at most 2 305 * 128 bytes = 288 KiB per wheel of the
/// default layout whatever the number of timers.
pub(crate) const BLOCK_CELLS: usize = 31;

/// Cell addresses are `block << BLOCK_SHIFT | offset`.
const BLOCK_SHIFT: u32 = 5;

/// The offset bits of a cell address.
const OFFSET_MASK: u32 = (1 << BLOCK_SHIFT) - 1;

/// Most blocks the arena can hold: every cell address must fit a `u32`
/// other than [`NIL`].
const MAX_BLOCKS: usize = (u32::MAX >> BLOCK_SHIFT) as usize;

/// A bucket is compacted once its dead cells outnumber its live ones this
/// many times over (and there are at least [`COMPACT_MIN`] of them): its cells
/// then cost at most about `4 * (1 + COMPACT_RATIO)` bytes per live entry,
/// and each compaction is paid for by the `COMPACT_RATIO` cancels (or more)
/// per live entry that came before it.
pub(crate) const COMPACT_RATIO: usize = 3;

/// Buckets with fewer dead cells than this are not compacted (freeing one
/// whose cells all died is free anyway). Counting dead cells, not all cells,
/// matters: with a total, a push after a cancel could cross the bound with
/// no compaction following (`repeated_resets_keep_buckets_compacted`).
pub(crate) const COMPACT_MIN: usize = 64;

/// The dead bits of a whole block: the low [`BLOCK_CELLS`] bits.
const ALL_CELLS: u32 = (1 << BLOCK_CELLS) - 1;

/// The address of a cell: its block and its offset in the block, packed as
/// `block << BLOCK_SHIFT | offset`. It names one cell for as long as the
/// cell's block is in a bucket (see the module docs). Ticks are never
/// addresses: the wheel calls a tick `at`, `when` or `tick`, and an address
/// `addr`, `pos` or `cell`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CellAddr(u32);

impl CellAddr {
    /// No cell: the `pos` of an entry that is being moved or removed, and
    /// the content of an unused kill-log entry.
    pub(crate) const NONE: CellAddr = CellAddr(NIL);

    /// The address of cell `offset` of block `block`.
    #[inline]
    fn new(block: u32, offset: u32) -> CellAddr {
        CellAddr((block << BLOCK_SHIFT) | offset)
    }

    /// The index of the block holding the cell.
    #[inline]
    fn block(self) -> usize {
        (self.0 >> BLOCK_SHIFT) as usize
    }

    /// The cell's offset in its block.
    #[inline]
    fn offset(self) -> u32 {
        self.0 & OFFSET_MASK
    }

    /// The address whose packed form is `raw` (for tests of code that only
    /// stores addresses).
    #[cfg(test)]
    pub(crate) fn from_raw(raw: u32) -> CellAddr {
        CellAddr(raw)
    }
}

impl fmt::Display for CellAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.block(), self.offset())
    }
}

/// What a compaction needs from the owner of the entries its cells name.
pub(crate) trait CellOwner {
    /// The live cell of entry `index` has moved to address `to`.
    fn moved(&mut self, index: u32, to: CellAddr);
}
