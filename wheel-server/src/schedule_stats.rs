//! The schedule counts `/metrics` shows: how many schedules exist, how
//! many are paused, and their skipped slots by reason, summed over every
//! schedule in the store (all nodes).
//!
//! The store keeps these per schedule, so they are read by paging through
//! every schedule: too slow for a scrape to wait on (a Redis store that is
//! down makes each call wait for `unavailable_after`). So a scrape gets
//! the counts of the last finished walk, and starts a new walk on the
//! runtime when those are older than [`REFRESH`] and none is under way. A
//! scrape before the first walk has finished gets none (the gauges then
//! have no sample, as the store's counts do while unknown).
//!
//! Who touches what: a scrape reads `last` and sets `walking`; only the
//! walk it starts writes `last` and clears `walking`. Nothing here depends
//! on the rest of the crate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wheel_durable::{AsyncTimers, DurableError};

/// How old the counts may be before a scrape starts a new walk.
pub(crate) const REFRESH: Duration = Duration::from_secs(5);

/// Schedules per store call of a walk (the library's largest page).
const PAGE: usize = 1_000;

/// The counts of one walk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ScheduleCounts {
    /// Schedules in the store.
    pub(crate) schedules: u64,
    /// Of those, paused.
    pub(crate) paused: u64,
    /// Slots dropped by the catch-up policy, summed.
    pub(crate) skipped_catch_up: u64,
    /// Slots dropped by the overlap policy, summed.
    pub(crate) skipped_overlap: u64,
    /// Slots that fell while paused, summed.
    pub(crate) skipped_paused: u64,
}

/// The last counts and whether a walk is under way.
#[derive(Default)]
pub(crate) struct ScheduleStats {
    last: Mutex<Option<(ScheduleCounts, Instant)>>,
    walking: AtomicBool,
}

impl ScheduleStats {
    /// The counts of the last finished walk; starts a walk (on the
    /// current tokio runtime) when they are missing or older than
    /// [`REFRESH`] and none is under way.
    pub(crate) fn snapshot(self: &Arc<Self>, timers: &AsyncTimers) -> Option<ScheduleCounts> {
        let last = *self.last.lock().unwrap_or_else(|e| e.into_inner());
        let stale = last.is_none_or(|(_, at)| at.elapsed() >= REFRESH);
        if stale && !self.walking.swap(true, Ordering::AcqRel) {
            let (me, timers) = (self.clone(), timers.clone());
            tokio::spawn(async move {
                match walk(&timers).await {
                    Ok(counts) => {
                        *me.last.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some((counts, Instant::now()));
                    }
                    Err(e) => tracing::debug!(error = %e, "schedule counts not read"),
                }
                me.walking.store(false, Ordering::Release);
            });
        }
        last.map(|(counts, _)| counts)
    }
}

/// Reads every schedule, a page at a time, and sums.
async fn walk(timers: &AsyncTimers) -> Result<ScheduleCounts, DurableError> {
    let mut c = ScheduleCounts::default();
    let mut page = timers.schedules(PAGE).await?;
    loop {
        for s in &page.schedules {
            c.schedules += 1;
            c.paused += u64::from(s.paused);
            c.skipped_catch_up += s.skipped.missed;
            c.skipped_overlap += s.skipped.overlap;
            c.skipped_paused += s.skipped.paused;
        }
        match page.next {
            Some(after) => page = timers.schedules_after(&after, PAGE).await?,
            None => return Ok(c),
        }
    }
}
