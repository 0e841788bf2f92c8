//! How many timers one store call of the node's may name: the largest
//! claim, start and finish (and the renewals and hand-backs, which go with
//! the finish limit) a store wants.
//!
//! Invariant: every limit is at least 1, so a node always makes progress.
//! The node never sends a call larger than its store's limit; a store
//! answers a larger one all the same (the limits bound how long one call
//! holds the store, they are not a rule of the store's).

/// The largest batch of each kind of node call, in timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchLimits {
    /// Timers one claim takes at most.
    pub(crate) claim: usize,
    /// Claims one start names at most.
    pub(crate) start: usize,
    /// Runs one finish records at most; renewals and hand-backs use it
    /// too: per timer they write a subset of what a finish writes.
    pub(crate) finish: usize,
}

impl BatchLimits {
    /// Sized for a store whose every call costs a write to disk (the
    /// embedded store's fsync): large batches spread that cost. Claims are
    /// half a start, so that a node claims again before its start queue
    /// runs dry.
    pub(crate) const DEFAULT: BatchLimits = BatchLimits {
        claim: 128,
        start: 256,
        finish: 256,
    };

    /// The limits that keep one call within `budget_ns` for a store whose
    /// calls cost these nanoseconds per timer; at least 1 each, however
    /// small the budget (one timer per call is the least that progresses).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))] // Redis's limits
    pub(crate) const fn from_budget(
        budget_ns: u64,
        claim_ns: u64,
        start_ns: u64,
        finish_ns: u64,
    ) -> BatchLimits {
        BatchLimits {
            claim: per_call(budget_ns, claim_ns),
            start: per_call(budget_ns, start_ns),
            finish: per_call(budget_ns, finish_ns),
        }
    }
}

impl Default for BatchLimits {
    fn default() -> BatchLimits {
        BatchLimits::DEFAULT
    }
}

/// Timers of `cost_ns` each that fit in `budget_ns`, at least 1 (a zero
/// cost counts as 1 ns: no division by zero).
#[cfg_attr(not(feature = "redis"), allow(dead_code))] // Redis's limits
const fn per_call(budget_ns: u64, cost_ns: u64) -> usize {
    let cost = if cost_ns == 0 { 1 } else { cost_ns };
    let n = budget_ns / cost;
    if n == 0 { 1 } else { n as usize }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_divide_the_budget_and_are_at_least_one() {
        let l = BatchLimits::from_budget(1_000, 10, 300, 1_000);
        assert_eq!((l.claim, l.start, l.finish), (100, 3, 1));
        let tiny = BatchLimits::from_budget(0, 0, 5, u64::MAX);
        assert_eq!((tiny.claim, tiny.start, tiny.finish), (1, 1, 1));
    }
}
