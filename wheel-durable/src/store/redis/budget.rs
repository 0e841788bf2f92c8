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

/// How long one claim, start or finish script may run, in ns. A quarter
/// of a millisecond keeps the wait of a command queued behind one script
/// well under a millisecond, the lateness the node aims for, while each
/// script still does tens of timers, so its fixed cost (the call, the
/// prelude, the reply) stays a small part of it.
pub(crate) const SCRIPT_BUDGET_NS: u64 = 250_000;

// Redis execution time per timer of each script, in ns, from the slow-log
// table "Durable timers: Redis's time by script" of
// `cargo run --release -p wheel-bench -- --only durable --quick`
// (µs per call over timers per call, Redis 7.0, 3 nodes firing): a claim
// of ~94 timers took ~600 µs, a start of ~150 ~1 000 µs, a finish of
// ~170 ~700 µs.

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
