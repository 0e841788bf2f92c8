//! The arena of blocks every bucket takes its cells from: [`Blocks`], with
//! a free list, a tag and a word of dead bits per block.

use super::{BLOCK_CELLS, CellAddr, MAX_BLOCKS};
use crate::core::index::NIL;

/// A block of cells: 128 bytes, two cache lines' worth.
///
/// Not over-aligned (its alignment is a `u32`'s), on purpose. Rust's system
/// allocator grows a `Vec` of a type aligned to at most 16 bytes with the C
/// library's `realloc`, and glibc's `realloc` moves a large arena (one that
/// it mapped on its own) to its grown place by remapping its pages
/// (`mremap`), without copying them. Aligned to 64 bytes, the arena would
/// be copied instead each time it grows, and the insert that grows a large
/// arena would pause for the copy (`docs/benchmarks.md` has the figures).
/// A block may straddle three cache lines instead of two; buckets are read
/// front to back, so that costs little.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(crate) struct Block {
    pub(super) cells: [u32; BLOCK_CELLS],
    /// The next block of the chain (a bucket's, or the free list), or
    /// [`NIL`].
    pub(super) next: u32,
}

impl Block {
    pub(super) const EMPTY: Block = Block {
        cells: [NIL; BLOCK_CELLS],
        next: NIL,
    };
}

/// The arena every bucket takes its blocks from, with a free list.
///
/// Buckets (`super::bucket`) link and read blocks directly; every block is
/// either on the free list or in exactly one bucket.
#[derive(Debug)]
pub(crate) struct Blocks {
    pub(super) blocks: Vec<Block>,
    /// One tag per block: 0 from [`Blocks::alloc`] on, or the staging epoch
    /// of the stage bucket that took the block (see `Wheel::stage_step`).
    tags: Vec<u32>,
    /// One word of dead bits per block: bit `o` is set iff cell `o` is dead
    /// (see the module docs); 0 from [`Blocks::alloc`] on.
    pub(super) dead: Vec<u32>,
    /// The first free block, or [`NIL`].
    free: u32,
    /// Blocks in some bucket.
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
    pub(super) fn alloc(&mut self) -> u32 {
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
    pub(super) fn free_chain(&mut self, head: u32, tail: u32, count: usize) {
        self.blocks[tail as usize].next = self.free;
        self.free = head;
        self.in_use -= count;
    }

    /// Returns the chain `head ..= tail` to the free list, counting its
    /// blocks on the way (O(blocks)).
    pub(super) fn free_through(&mut self, head: u32, tail: u32) {
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
