//! Slot contents: unrolled lists of entry indices ("cells") in one shared
//! arena of 128-byte blocks.
//!
//! A slot holds its entries as a [`Bucket`]: a chain of [`Block`]s, each 128
//! bytes holding [`BLOCK_CELLS`] cells and the index of the next block.
//! Cells are appended in placement order. An entry remembers the *address*
//! of its cell (`block * 32 + offset`, stable while the cell exists), so:
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
//!   block, known up front, so the entries' cache misses
//!   overlap instead of forming a chain of dependent loads as an intrusive
//!   list's would;
//! - a whole bucket moves to another chain, or back to the free list, in
//!   O(1) by relinking blocks, and the cells keep their addresses.
//!
//! Invariants (checked by `Wheel::check_invariants` through
//! `Blocks::check` and `Bucket::walk`):
//! - every block is either on the free list or in exactly one bucket;
//! - a cell of a bucket is dead iff its dead bit is set (but for the wheel's
//!   kill log, see `Wheel::kill`); the bits of a tail block's cells past the
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

use std::fmt;

use super::slab::NIL;

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
/// no compaction following (found by the `config` fuzz target).
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

/// A block of cells: 128 bytes, two cache lines' worth.
///
/// Not over-aligned (its alignment is a `u32`'s), on purpose. Rust's system
/// allocator grows a `Vec` of a type aligned to at most 16 bytes with the C
/// library's `realloc`, and glibc's `realloc` moves a large arena (one that
/// it mapped on its own) to its grown place by remapping its pages
/// (`mremap`), without copying them. Aligned to 64 bytes, as blocks were
/// until the fourteenth session, the arena was copied instead each time it
/// grew: the insert that grew a 41 MB arena (10M timers) took 24-108 ms,
/// against 0.2 ms remapped (`docs/benchmarks.md`, "Fourteenth session").
/// A block may now straddle three cache lines instead of two; buckets are
/// read front to back, and no workload measured slower.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(crate) struct Block {
    cells: [u32; BLOCK_CELLS],
    next: u32,
}

impl Block {
    const EMPTY: Block = Block {
        cells: [NIL; BLOCK_CELLS],
        next: NIL,
    };
}

/// The arena every bucket takes its blocks from, with a free list.
#[derive(Debug)]
pub(crate) struct Blocks {
    blocks: Vec<Block>,
    /// One tag per block: 0 from [`Blocks::alloc`] on, or the staging epoch
    /// of the stage bucket that took the block (see `Wheel::stage_step`).
    tags: Vec<u32>,
    /// One word of dead bits per block: bit `o` is set iff cell `o` is dead
    /// (see the module docs); 0 from [`Blocks::alloc`] on.
    dead: Vec<u32>,
    free: u32,
    in_use: usize,
}

impl Blocks {
    /// An arena with room for `blocks` blocks before it allocates again.
    pub(crate) fn with_capacity(blocks: usize) -> Blocks {
        Blocks {
            blocks: Vec::with_capacity(blocks.min(MAX_BLOCKS)),
            tags: Vec::with_capacity(blocks.min(MAX_BLOCKS)),
            dead: Vec::with_capacity(blocks.min(MAX_BLOCKS)),
            free: NIL,
            in_use: 0,
        }
    }

    /// Blocks the arena has room for.
    pub(crate) fn capacity(&self) -> usize {
        self.blocks.capacity()
    }

    /// Blocks currently in some bucket.
    #[cfg(test)]
    pub(crate) fn in_use(&self) -> usize {
        self.in_use
    }

    /// Takes a block off the free list (or grows the arena); its `next` is
    /// [`NIL`].
    ///
    /// # Panics
    ///
    /// If the arena would exceed `2^27 - 1` blocks (about four billion
    /// cells, live and dead, at once).
    #[inline]
    fn alloc(&mut self) -> u32 {
        self.in_use += 1;
        if self.free != NIL {
            let b = self.free;
            self.free = self.blocks[b as usize].next;
            self.blocks[b as usize].next = NIL;
            self.tags[b as usize] = 0;
            self.dead[b as usize] = 0;
            return b;
        }
        assert!(
            self.blocks.len() < MAX_BLOCKS,
            "wheel: more than 2^32 slot cells at once"
        );
        self.blocks.push(Block::EMPTY);
        self.tags.push(0);
        self.dead.push(0);
        (self.blocks.len() - 1) as u32
    }

    /// The tag of the block holding the cell at `addr`.
    #[inline]
    pub(crate) fn tag(&self, addr: CellAddr) -> u32 {
        self.tags[addr.block()]
    }

    /// Tags the block holding the cell at `addr`.
    #[inline]
    pub(crate) fn set_tag(&mut self, addr: CellAddr, tag: u32) {
        self.tags[addr.block()] = tag;
    }

    /// `true` if the cell at `addr` is dead (its dead bit is set).
    #[inline]
    pub(crate) fn is_dead(&self, addr: CellAddr) -> bool {
        self.dead[addr.block()] & (1 << addr.offset()) != 0
    }

    /// Sets the dead bit of the cell at `addr`.
    #[inline]
    pub(crate) fn set_dead(&mut self, addr: CellAddr) {
        self.dead[addr.block()] |= 1 << addr.offset();
    }

    /// Returns the chain of blocks `head ..= tail` to the free list, in O(1).
    #[inline]
    fn free_chain(&mut self, head: u32, tail: u32, count: usize) {
        self.blocks[tail as usize].next = self.free;
        self.free = head;
        self.in_use -= count;
    }

    /// Returns the chain `head ..= tail` to the free list, counting its
    /// blocks on the way (O(blocks)).
    fn free_through(&mut self, head: u32, tail: u32) {
        let mut count = 1;
        let mut block = head;
        while block != tail {
            block = self.blocks[block as usize].next;
            count += 1;
        }
        self.free_chain(head, tail, count);
    }

    /// The index stored in the cell at `addr` ([`NIL`] if dead).
    #[inline]
    pub(crate) fn get(&self, addr: CellAddr) -> u32 {
        self.blocks[addr.block()].cells[addr.offset() as usize]
    }

    /// Checks the free list against the count of blocks in use.
    #[cfg(any(test, fuzzing))]
    pub(crate) fn check(&self, in_buckets: usize) -> Result<(), String> {
        let mut free = 0usize;
        let mut block = self.free;
        while block != NIL {
            free += 1;
            if free > self.blocks.len() {
                return Err("block free list has a cycle".into());
            }
            block = self.blocks[block as usize].next;
        }
        if free + self.in_use != self.blocks.len() || in_buckets != self.in_use {
            return Err(format!(
                "blocks: {free} free + {} in use != {}, {in_buckets} in buckets",
                self.in_use,
                self.blocks.len()
            ));
        }
        Ok(())
    }
}

/// The cells of one slot (or of the ready queue), in placement order.
///
/// Aligned to 32 bytes (28 of them used): a bucket's address is then a
/// shift of its slot number instead of a multiply by 28 (callgrind: about
/// 6 instructions fewer per `DelayQueue` push+remove pair), and no bucket
/// straddles two cache lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(align(32))]
pub(crate) struct Bucket {
    head: u32,
    tail: u32,
    /// First cell of `head` that belongs to the bucket.
    start: u32,
    /// One past the last used cell of `tail`.
    end: u32,
    /// Blocks in the chain.
    blocks: u32,
    pub(crate) live: u32,
    pub(crate) dead: u32,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket::EMPTY
    }
}

impl Bucket {
    pub(crate) const EMPTY: Bucket = Bucket {
        head: NIL,
        tail: NIL,
        start: 0,
        end: 0,
        blocks: 0,
        live: 0,
        dead: 0,
    };

    /// `true` if the bucket holds no cells.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// Appends a cell holding `index` and returns its address.
    #[inline(always)]
    pub(crate) fn push(&mut self, arena: &mut Blocks, index: u32) -> CellAddr {
        if self.tail == NIL || self.end == BLOCK_CELLS as u32 {
            let b = arena.alloc();
            if self.tail == NIL {
                self.head = b;
                self.start = 0;
            } else {
                arena.blocks[self.tail as usize].next = b;
            }
            self.tail = b;
            self.end = 0;
            self.blocks += 1;
        }
        let addr = CellAddr::new(self.tail, self.end);
        arena.blocks[self.tail as usize].cells[self.end as usize] = index;
        self.end += 1;
        self.live += 1;
        addr
    }

    /// Kills this bucket's live cell at `addr` at once (its entry has left):
    /// marks it (sets its dead bit) and counts it dead. Returns `true` if
    /// the bucket has no live cell left; the caller then frees it with
    /// [`Bucket::clear`].
    #[inline]
    pub(crate) fn kill(&mut self, arena: &mut Blocks, addr: CellAddr) -> bool {
        arena.set_dead(addr);
        self.live -= 1;
        self.dead += 1;
        self.live == 0
    }

    /// `true` if the dead cells are due for compaction.
    #[inline]
    pub(crate) fn wants_compaction(&self) -> bool {
        let (live, dead) = (self.live as usize, self.dead as usize);
        dead >= COMPACT_MIN && dead > COMPACT_RATIO * live
    }

    /// Frees every block and empties the bucket, in O(1).
    #[inline]
    pub(crate) fn clear(&mut self, arena: &mut Blocks) {
        if self.head != NIL {
            arena.free_chain(self.head, self.tail, self.blocks as usize);
        }
        *self = Bucket::EMPTY;
    }

    /// Takes every cell of `other`, in order, behind this bucket's cells, in
    /// O(1); the cells keep their addresses. The unused rest of this
    /// bucket's last block becomes dead cells.
    pub(crate) fn append(&mut self, arena: &mut Blocks, other: &mut Bucket) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = std::mem::take(other);
            return;
        }
        // The unused rest of the last block becomes dead cells: NIL never
        // names an entry.
        let tail = &mut arena.blocks[self.tail as usize];
        for cell in &mut tail.cells[self.end as usize..] {
            *cell = NIL;
        }
        arena.dead[self.tail as usize] |= ALL_CELLS & !((1 << self.end) - 1);
        self.dead += BLOCK_CELLS as u32 - self.end;
        tail.next = other.head;
        self.tail = other.tail;
        self.end = other.end;
        self.blocks += other.blocks;
        self.live += other.live;
        self.dead += other.dead;
        *other = Bucket::EMPTY;
    }

    /// The address of the front cell, if any.
    #[inline]
    pub(crate) fn front(&self) -> Option<CellAddr> {
        (self.head != NIL).then(|| CellAddr::new(self.head, self.start))
    }

    /// Drops the front cell (live or dead); frees its block once passed.
    #[inline]
    pub(crate) fn advance(&mut self, arena: &mut Blocks, was_live: bool) {
        if was_live {
            self.live -= 1;
        } else {
            self.dead -= 1;
        }
        self.start += 1;
        if self.head == self.tail && self.start == self.end {
            arena.free_chain(self.head, self.head, 1);
            *self = Bucket::EMPTY;
        } else if self.start == BLOCK_CELLS as u32 {
            let old = self.head;
            self.head = arena.blocks[old as usize].next;
            self.start = 0;
            self.blocks -= 1;
            arena.free_chain(old, old, 1);
        }
    }

    /// Detaches every cell, leaving the bucket empty: iterate the result
    /// with [`Taken::next_cell`], which frees each block once read.
    #[inline]
    pub(crate) fn take(&mut self) -> Taken {
        let taken = Taken {
            block: self.head,
            offset: self.start,
            tail: self.tail,
            end: self.end,
        };
        *self = Bucket::EMPTY;
        taken
    }

    /// Drops the dead cells (by their dead bits), keeping the live ones in
    /// order, and frees the blocks left over; the bucket then counts its
    /// live cells exactly, and is empty if none was left. `owner` is told
    /// where each live cell that moves goes. Returns how many of the dropped
    /// cells the bucket had counted live: a lazy bucket's share of lazily
    /// dead cells (0 for an exact bucket).
    pub(crate) fn compact(&mut self, arena: &mut Blocks, owner: &mut impl CellOwner) -> u32 {
        if self.is_empty() {
            return 0;
        }
        let counted_live = self.live;
        // The write cursor never passes the read cursor (it writes at most
        // as many cells as were read), so compaction works in place, and a
        // cell is judged before anything is written over it.
        let (mut wb, mut wo) = (self.head, 0u32);
        let mut taken = self.take();
        let head = wb;
        let mut blocks = 1;
        let mut live = 0;
        // A written cell's bit is cleared; the reader has read it already.
        while let Some((addr, index)) = taken.next_cell(arena, false) {
            if arena.is_dead(addr) {
                taken.skip_dead(arena);
                continue;
            }
            if wo == BLOCK_CELLS as u32 {
                wb = arena.blocks[wb as usize].next;
                wo = 0;
                blocks += 1;
            }
            // A live cell with no dead cell before it stays where it is:
            // then its entry is not touched (a cache miss spared when the
            // bucket holds few dead cells, as in a sweep, see
            // `Wheel::sweep`).
            let to = CellAddr::new(wb, wo);
            if to != addr {
                arena.blocks[wb as usize].cells[wo as usize] = index;
                arena.dead[wb as usize] &= !(1 << wo);
                owner.moved(index, to);
            }
            wo += 1;
            live += 1;
        }
        if live == 0 {
            // Every block from `head` on is still chained: free them all.
            arena.free_through(head, taken.tail);
            return counted_live;
        }
        if wb != taken.tail {
            let rest = arena.blocks[wb as usize].next;
            arena.free_through(rest, taken.tail);
        }
        arena.blocks[wb as usize].next = NIL;
        // The new tail's cells past `end` keep no dead bit.
        arena.dead[wb as usize] &= (1 << wo) - 1;
        *self = Bucket {
            head,
            tail: wb,
            start: 0,
            end: wo,
            blocks,
            live,
            dead: 0,
        };
        counted_live - live
    }

    /// Calls `f` with every cell's content, front to back.
    #[inline]
    pub(crate) fn for_each(&self, arena: &Blocks, mut f: impl FnMut(u32)) {
        let (mut b, mut from) = (self.head, self.start as usize);
        while b != NIL {
            let block = &arena.blocks[b as usize];
            let to = if b == self.tail {
                self.end as usize
            } else {
                BLOCK_CELLS
            };
            for &index in &block.cells[from..to] {
                f(index);
            }
            if b == self.tail {
                break;
            }
            b = block.next;
            from = 0;
        }
    }

    /// Every cell (live or dead) as (address, content), front to back, and
    /// the number of blocks walked; for checks.
    #[cfg(any(test, fuzzing))]
    pub(crate) fn walk(&self, arena: &Blocks) -> Result<(Vec<(CellAddr, u32)>, usize), String> {
        let mut cells = Vec::new();
        if self.head == NIL {
            if *self != Bucket::EMPTY {
                return Err(format!("empty bucket with state {self:?}"));
            }
            return Ok((cells, 0));
        }
        let (mut b, mut o) = (self.head, self.start);
        let mut blocks = 1;
        loop {
            if b == self.tail && o == self.end {
                break;
            }
            if o == BLOCK_CELLS as u32 {
                if b == self.tail {
                    return Err("ran past the tail block".into());
                }
                b = arena.blocks[b as usize].next;
                o = 0;
                blocks += 1;
                if b == NIL || blocks > arena.blocks.len() {
                    return Err("broken block chain".into());
                }
                continue;
            }
            let addr = CellAddr::new(b, o);
            cells.push((addr, arena.get(addr)));
            o += 1;
        }
        if arena.blocks[self.tail as usize].next != NIL {
            return Err("tail block has a successor".into());
        }
        if arena.dead[self.tail as usize] >> self.end != 0 {
            return Err(format!("tail block has dead bits past end {}", self.end));
        }
        if blocks != self.blocks as usize
            || cells.len() != (self.live + self.dead) as usize
            || self.live == 0
        {
            return Err(format!(
                "bucket counts {self:?}: {blocks} blocks, {} cells",
                cells.len()
            ));
        }
        Ok((cells, blocks))
    }
}

/// The detached cells of a bucket being read once, front to back.
#[derive(Debug)]
pub(crate) struct Taken {
    block: u32,
    offset: u32,
    tail: u32,
    end: u32,
}

impl Taken {
    /// The next cell as (address, content), or `None` at the end. With
    /// `free`, each block goes back to the arena once read (its cells may
    /// then be reused by the caller's own pushes).
    #[inline]
    pub(crate) fn next_cell(&mut self, arena: &mut Blocks, free: bool) -> Option<(CellAddr, u32)> {
        loop {
            if self.block == NIL || (self.block == self.tail && self.offset == self.end) {
                if free && self.block != NIL {
                    arena.free_chain(self.block, self.block, 1);
                    self.block = NIL;
                }
                return None;
            }
            if self.offset == BLOCK_CELLS as u32 {
                let done = self.block;
                self.block = arena.blocks[done as usize].next;
                self.offset = 0;
                if free {
                    arena.free_chain(done, done, 1);
                }
                continue;
            }
            let addr = CellAddr::new(self.block, self.offset);
            let index = arena.blocks[self.block as usize].cells[self.offset as usize];
            self.offset += 1;
            return Some((addr, index));
        }
    }

    /// If every cell left in the current block is marked dead, skips them
    /// all and returns how many; else (or at the end of a block) returns 0
    /// and skips nothing. For readers that drop marked cells: called after
    /// a dead cell, it passes a run of cancelled timers a block at a time
    /// instead of a cell at a time.
    #[inline]
    pub(crate) fn skip_dead(&mut self, arena: &Blocks) -> u32 {
        if self.block == NIL {
            return 0;
        }
        let stop = if self.block == self.tail {
            self.end
        } else {
            BLOCK_CELLS as u32
        };
        if self.offset >= stop {
            return 0;
        }
        // `stop <= 31` and `offset < stop`: neither shift overflows.
        let rest = ((1u32 << stop) - 1) & !((1u32 << self.offset) - 1);
        if arena.dead[self.block as usize] & rest != rest {
            return 0;
        }
        let skipped = stop - self.offset;
        self.offset = stop;
        skipped
    }
}

#[cfg(test)]
mod tests {
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
}
