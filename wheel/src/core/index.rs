//! [`NIL`], the one `u32` that names nothing.
//!
//! The wheel's storage links everything by `u32` index: the slab's entries
//! and its free list (`slab.rs`), the cells that hold entry indices and the
//! arena blocks that hold cells, chained by block index (`cells/`). All of
//! them use the same sentinel for "no index", so a padding cell, the end of
//! a chain and the end of the free list read alike, and [`CellAddr::NONE`]
//! (`cells/`) is `NIL` too. It lives here, below both, so that neither
//! imports the other for it.
//!
//! Invariant: no slab index, block index or cell address ever equals
//! `NIL`: the slab and the arena refuse to grow that far (`slab.rs`'s
//! `fresh_index`, `cells/`'s `MAX_BLOCKS`).
//!
//! [`CellAddr::NONE`]: super::cells::CellAddr::NONE

/// An index that names no entry, no block and no cell.
pub(crate) const NIL: u32 = u32::MAX;
