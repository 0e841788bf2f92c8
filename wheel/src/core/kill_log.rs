//! The kill log: cells of cancelled entries waiting to be marked dead in
//! one batch (see `Wheel::kill` and `docs/design.md`, "Cancelling in
//! batches").
//!
//! Invariant: between calls of the wheel's public methods the log holds
//! fewer than [`DEFER_KILLS`] cells; [`KillLog::push`] says when it is full,
//! and the wheel then empties it at once.

use super::cells::CellAddr;

/// Cells of cancelled entries the wheel keeps before making them dead in
/// one go.
pub(crate) const DEFER_KILLS: usize = 64;

/// Up to [`DEFER_KILLS`] logged cells, by address.
///
/// A fixed array rather than a `Vec`: a push is a store and a count,
/// with no capacity test and no growth path (`docs/design.md`,
/// "Instructions off the insert and cancel paths", has the counts).
#[derive(Debug)]
pub(crate) struct KillLog {
    cells: Box<[CellAddr; DEFER_KILLS]>,
    len: usize,
}

impl KillLog {
    pub(crate) fn new() -> KillLog {
        KillLog {
            cells: Box::new([CellAddr::NONE; DEFER_KILLS]),
            len: 0,
        }
    }

    /// Logs a cell; returns `true` if the log is now full (the caller must
    /// then empty it before logging again).
    #[inline]
    pub(crate) fn push(&mut self, addr: CellAddr) -> bool {
        debug_assert!(self.len < DEFER_KILLS, "kill log pushed while full");
        // The mask keeps the index in range without a bounds check; the
        // invariant keeps it from wrapping.
        self.cells[self.len % DEFER_KILLS] = addr;
        self.len += 1;
        self.len >= DEFER_KILLS
    }

    /// The logged cells, oldest first.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[CellAddr] {
        &self.cells[..self.len]
    }

    #[cfg(any(test, fuzzing))]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_reports_full_at_the_limit_and_clear_empties() {
        let addr = CellAddr::from_raw;
        let mut log = KillLog::new();
        assert!(log.is_empty());
        for i in 0..DEFER_KILLS as u32 - 1 {
            assert!(!log.push(addr(i + 100)));
        }
        assert!(log.push(addr(7)));
        assert_eq!(log.len(), DEFER_KILLS);
        assert_eq!(log.as_slice()[0], addr(100));
        assert_eq!(log.as_slice()[DEFER_KILLS - 1], addr(7));
        log.clear();
        assert!(log.is_empty());
        assert!(log.as_slice().is_empty());
        assert!(!log.push(addr(2)));
        assert_eq!(log.as_slice(), &[addr(2)]);
    }
}
