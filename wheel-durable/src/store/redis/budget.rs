//! The script budget: how long one node script may hold the server, and
//! the batch limits that follow from it.
//!
//! Redis runs one command at a time, so every other client's command (a
//! single `add`, another node's claim) waits while a script runs. The
//! node's batches are therefore sized by time here, not by the embedded
//! store's fsync: each limit is [`SCRIPT_BUDGET_NS`] over the script's
//! measured cost per timer.
//!
//! Invariant: every limit is at least 1 (`BatchLimits::from_budget`).

use crate::store::BatchLimits;

/// How long one claim, start or finish script may run, in ns. Half a
/// millisecond keeps the wait of a command queued behind one script under
/// a millisecond, while each script still carries enough timers that its
/// fixed cost (the call, the reply, the node's round trip) stays a small
/// part of it; a quarter of a millisecond cost the nodes a sixth of their
/// fire rate (the figures are in `docs/benchmarks.md`, "Redis's script
/// budget").
pub(crate) const SCRIPT_BUDGET_NS: u64 = 500_000;

// Redis execution time per timer of each script, in ns: µs per call over
// timers per call in the slow-log table "Durable timers: Redis's time by
// script" of `cargo run --release -p wheel-bench -- --only durable --quick`.

/// Claim's cost per timer claimed, ns.
pub(crate) const CLAIM_NS_PER_TIMER: u64 = 6_400;
/// Start's cost per claim started, ns.
pub(crate) const START_NS_PER_TIMER: u64 = 6_600;
/// Finish's cost per run recorded, ns.
pub(crate) const FINISH_NS_PER_TIMER: u64 = 4_000;

/// The Redis store's batch limits.
pub(crate) const LIMITS: BatchLimits = BatchLimits::from_budget(
    SCRIPT_BUDGET_NS,
    CLAIM_NS_PER_TIMER,
    START_NS_PER_TIMER,
    FINISH_NS_PER_TIMER,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_follow_from_the_budget() {
        let fits = |limit: usize, per_timer: u64| {
            limit >= 1
                && limit as u64 * per_timer <= SCRIPT_BUDGET_NS.max(per_timer)
                && (limit as u64 + 1) * per_timer > SCRIPT_BUDGET_NS
        };
        assert!(fits(LIMITS.claim, CLAIM_NS_PER_TIMER), "{LIMITS:?}");
        assert!(fits(LIMITS.start, START_NS_PER_TIMER), "{LIMITS:?}");
        assert!(fits(LIMITS.finish, FINISH_NS_PER_TIMER), "{LIMITS:?}");
        // Below the embedded store's: the budget is what bounds them here.
        let d = BatchLimits::DEFAULT;
        assert!(LIMITS.claim < d.claim && LIMITS.start < d.start && LIMITS.finish < d.finish);
    }
}
