//! How late the tick thread's timed wake-ups come, and so how early
//! before a due timer it stops sleeping and starts polling the clock (the
//! *spin lead*; see the sleep policy in `ticker.rs`).

use std::time::Duration;

/// The least time before a timer's tick at which the tick thread ends its
/// timed sleep; it then announces the timer to the workers and polls the
/// clock until the tick starts. Only when a timer is due that soon: far or
/// no timers cost no CPU. The lead actually used grows with how late this
/// machine's timed wake-ups come (see [`WakeLateness`]).
pub(crate) const SPIN_LEAD_MIN: Duration = Duration::from_micros(100);

/// The most the spin lead grows to, however late timed wake-ups come.
pub(crate) const SPIN_LEAD_MAX: Duration = Duration::from_millis(2);

/// Margin added to the estimated wake-up lateness to get the spin lead.
const SPIN_LEAD_MARGIN_NS: u64 = 50_000;

/// How fast the lateness estimate forgets a late wake-up: each timed
/// wake-up that comes earlier than the estimate moves it 1/`DECAY` of
/// the way down.
const LATENESS_DECAY: u64 = 64;

/// The tick thread's estimate of how late its timed wake-ups come (a
/// timed park returns after its timeout by the kernel's timer slack, and
/// on a virtual machine often by a few hundred microseconds more). The
/// estimate jumps up to any later wake-up and decays slowly, so it tracks
/// the high tail, not the mean; the spin lead is the estimate plus a
/// margin, between [`SPIN_LEAD_MIN`] and [`SPIN_LEAD_MAX`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WakeLateness {
    est_nanos: u64,
}

impl WakeLateness {
    /// Records that a timed wake-up came `late_nanos` after its timeout
    /// (counted as at most [`SPIN_LEAD_MAX`]: one stall of a second, the
    /// process stopped say, must not keep the lead at its maximum for
    /// hundreds of wake-ups).
    pub(crate) fn observe(&mut self, late_nanos: u64) {
        let cap = u64::try_from(SPIN_LEAD_MAX.as_nanos()).unwrap_or(u64::MAX);
        self.est_nanos = next_lateness(self.est_nanos, late_nanos.min(cap));
    }

    /// How long before a due tick the timed sleep should end.
    pub(crate) fn lead(&self) -> Duration {
        spin_lead(self.est_nanos)
    }
}

/// The next lateness estimate: at least `late` (jumps up at once), else
/// `est` moved 1/[`LATENESS_DECAY`] of the way down to `late`.
pub(crate) fn next_lateness(est: u64, late: u64) -> u64 {
    if late >= est {
        late
    } else {
        est - (est - late).div_ceil(LATENESS_DECAY)
    }
}

/// The spin lead for a lateness estimate: estimate plus margin, clamped to
/// [`SPIN_LEAD_MIN`]..=[`SPIN_LEAD_MAX`].
pub(crate) fn spin_lead(est_nanos: u64) -> Duration {
    Duration::from_nanos(est_nanos.saturating_add(SPIN_LEAD_MARGIN_NS))
        .clamp(SPIN_LEAD_MIN, SPIN_LEAD_MAX)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn lateness_estimate_jumps_up_and_decays_slowly() {
        assert_eq!(next_lateness(0, 0), 0);
        assert_eq!(next_lateness(100, 5_000), 5_000);
        assert_eq!(next_lateness(5_000, 5_000), 5_000);
        // Down by 1/64 of the gap, rounded up so it always moves.
        assert_eq!(next_lateness(6_400, 0), 6_300);
        assert_eq!(next_lateness(10, 9), 9);
        assert_eq!(next_lateness(u64::MAX, 0), u64::MAX - u64::MAX.div_ceil(64));
        // Reaches the floor of what it sees, from far above.
        let mut est = 2_000_000;
        for _ in 0..2_000 {
            est = next_lateness(est, 30_000);
        }
        assert_eq!(est, 30_000);
    }

    #[test]
    fn spin_lead_is_estimate_plus_margin_within_bounds() {
        assert_eq!(spin_lead(0), SPIN_LEAD_MIN);
        assert_eq!(spin_lead(50_000), SPIN_LEAD_MIN);
        assert_eq!(spin_lead(400_000), Duration::from_nanos(450_000));
        assert_eq!(spin_lead(u64::MAX), SPIN_LEAD_MAX);
        let mut w = WakeLateness::default();
        assert_eq!(w.lead(), SPIN_LEAD_MIN);
        w.observe(900_000);
        assert_eq!(w.lead(), Duration::from_nanos(950_000));
        // A stall of a second counts as the maximum lead, and decays from
        // there.
        w.observe(1_000_000_000);
        assert_eq!(w.lead(), SPIN_LEAD_MAX);
        for _ in 0..64 {
            w.observe(0);
        }
        assert!(w.lead() < SPIN_LEAD_MAX);
    }
}
