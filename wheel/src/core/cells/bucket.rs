//! [`Bucket`]: the cells of one slot (or of the ready queue) as a chain of
//! blocks, and [`Taken`], a bucket's cells detached to be read once.

use super::arena::Blocks;
use super::{ALL_CELLS, BLOCK_CELLS, COMPACT_MIN, COMPACT_RATIO, CellAddr, CellOwner};
use crate::core::index::NIL;

/// The cells of one slot (or of the ready queue), in placement order.
///
/// Aligned to 32 bytes (28 of them used): a bucket's address is then a
/// shift of its slot number instead of a multiply by 28 (on every insert
/// and every exact cancel), and no bucket straddles two cache lines.
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
