//! Run planning: which runs to create when a schedule's chain is advanced
//! or recovered, as a pure function of the schedule, the last run created,
//! the count of runs created and "now".
//!
//! A schedule's chain is one run at a time: the pending run, a timer due at
//! its nominal time. When it is claimed, the node plans again with it as
//! the last run. Slots between the last run and now were missed (no node
//! was there to create them) and go through the catch-up policy; the first
//! slot at or after now becomes the next pending run.
//!
//! Invariants of every [`Plan`]: `create` is strictly increasing, every
//! entry strictly after `last` and before `now`; `pending` is at or after
//! `now` and after `last`; all are slots of the schedule within its bounds,
//! and `create.len() + pending.is_some()` never passes the runs left under
//! the run limit. So planning twice from the same state gives the same
//! runs, and their keys ([`run_key`](super::run_key)) dedupe a retry.
//!
//! Node state: none (pure functions).

use std::time::SystemTime;

use super::instant::{Ms, floor_ms, system_time};
use super::{CatchUp, MAX_CATCH_UP_RUNS, Schedule};

/// The runs to create now, and the next one to hold as pending.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use wheel_durable::schedule::{CatchUp, Schedule, Spec};
///
/// let min = |m: u64| UNIX_EPOCH + Duration::from_secs(60 * m);
/// let s = Schedule::builder(Spec::every(Duration::from_secs(60))?)
///     .catch_up(CatchUp::Latest)
///     .build()?;
/// // The last run was at minute 10; the nodes came back at 14:30.
/// let plan = s.plan(Some(min(10)), 1, min(14) + Duration::from_secs(30));
/// assert_eq!(plan.create, [min(14)]);
/// assert_eq!(plan.pending, Some(min(15)));
/// let skipped = plan.skipped.unwrap();
/// assert_eq!((skipped.first, skipped.last), (min(11), min(13)));
/// # Ok::<(), wheel_durable::schedule::SpecError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Missed runs to create now (already due), in nominal order.
    pub create: Vec<SystemTime>,
    /// The next run, at or after now: created as a timer due then. `None`
    /// when the schedule is over (past its end, or its run limit reached).
    pub pending: Option<SystemTime>,
    /// The missed runs the catch-up policy dropped, if any.
    pub skipped: Option<Skipped>,
}

/// The first and last nominal times of the missed runs a plan dropped (all
/// the schedule's slots between them were dropped too).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use wheel_durable::schedule::{CatchUp, Schedule, Spec};
///
/// let s = Schedule::builder(Spec::every(Duration::from_secs(1))?)
///     .catch_up(CatchUp::Skip)
///     .build()?;
/// let plan = s.plan(Some(UNIX_EPOCH), 1, UNIX_EPOCH + Duration::from_millis(3_500));
/// let skipped = plan.skipped.unwrap();
/// assert_eq!(skipped.first, UNIX_EPOCH + Duration::from_secs(1));
/// assert_eq!(skipped.last, UNIX_EPOCH + Duration::from_secs(3));
/// # Ok::<(), wheel_durable::schedule::SpecError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skipped {
    /// The earliest dropped run.
    pub first: SystemTime,
    /// The latest dropped run.
    pub last: SystemTime,
}

impl Schedule {
    /// Plans the runs to create when the schedule is advanced at `now`.
    ///
    /// `last` is the nominal time of the last run created (`None` before
    /// the first); `runs_created` counts the runs created so far, for the
    /// run limit. With no last run, slots from `start` on count as missed
    /// (a start in the past), or, with no start, none do: the schedule
    /// begins at `now`. A slot exactly at `now` is pending, not missed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use wheel_durable::schedule::{CatchUp, Schedule, Spec};
    ///
    /// let min = |m: u64| UNIX_EPOCH + Duration::from_secs(60 * m);
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(60))?)
    ///     .catch_up(CatchUp::All { window: Duration::from_secs(3_600) })
    ///     .build()?;
    /// // A new schedule, planned at 5:30: nothing missed, the first run at 6:00.
    /// let plan = s.plan(None, 0, min(5) + Duration::from_secs(30));
    /// assert!(plan.create.is_empty() && plan.skipped.is_none());
    /// assert_eq!(plan.pending, Some(min(6)));
    /// // Runs missed from 7 to 9 within the one-hour window: all run.
    /// let plan = s.plan(Some(min(6)), 1, min(9) + Duration::from_secs(1));
    /// assert_eq!(plan.create, [min(7), min(8), min(9)]);
    /// assert_eq!(plan.pending, Some(min(10)));
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn plan(&self, last: Option<SystemTime>, runs_created: u64, now: SystemTime) -> Plan {
        let now = floor_ms(now);
        let left = self
            .run_limit()
            .map_or(u64::MAX, |n| n.get().saturating_sub(runs_created));
        if left == 0 {
            return Plan {
                create: Vec::new(),
                pending: None,
                skipped: None,
            };
        }
        // Slots strictly after `after` are the schedule's to create.
        let after = match (last, self.start()) {
            (Some(last), _) => floor_ms(last),
            (None, Some(_)) => -1,
            (None, None) => now - 1,
        };
        let mut create = self.catch_up_runs(after, now);
        let skipped = self.skipped(after, create.first().copied().unwrap_or(now));
        let mut pending = self.next_ms(after.max(now - 1));
        // The runs are counted in nominal order: the earliest ones fit.
        if let Ok(left) = usize::try_from(left)
            && create.len() >= left
        {
            create.truncate(left);
            pending = None;
        }
        Plan {
            create: create.into_iter().map(system_time).collect(),
            pending: pending.map(system_time),
            skipped,
        }
    }

    /// The missed slots in `(after, now)` that the catch-up policy keeps.
    fn catch_up_runs(&self, after: Ms, now: Ms) -> Vec<Ms> {
        let floor = match self.catch_up() {
            CatchUp::Skip => return Vec::new(),
            CatchUp::Latest => {
                return self
                    .prev_ms(now)
                    .filter(|p| *p > after)
                    .into_iter()
                    .collect();
            }
            CatchUp::All { window } => {
                let window = Ms::try_from(window.as_millis()).unwrap_or(Ms::MAX);
                // Slots at `now - window` or later are within the window.
                after.max(now.saturating_sub(window).saturating_sub(1))
            }
        };
        // Backwards from now, so the bound keeps the most recent slots.
        let mut runs = Vec::new();
        let mut at = now;
        while runs.len() < MAX_CATCH_UP_RUNS {
            match self.prev_ms(at).filter(|p| *p > floor) {
                Some(p) => {
                    runs.push(p);
                    at = p;
                }
                None => break,
            }
        }
        runs.reverse();
        runs
    }

    /// The dropped slots: those in `(after, upto)`.
    fn skipped(&self, after: Ms, upto: Ms) -> Option<Skipped> {
        let first = self.next_ms(after).filter(|f| *f < upto)?;
        let last = self.prev_ms(upto).filter(|l| *l >= first)?;
        Some(Skipped {
            first: system_time(first),
            last: system_time(last),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::schedule::Spec;

    fn min(m: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(60 * m)
    }

    fn every_minute(catch_up: CatchUp) -> Schedule {
        let spec = Spec::every(Duration::from_secs(60)).unwrap();
        Schedule::builder(spec).catch_up(catch_up).build().unwrap()
    }

    fn mins(ms: &[u64]) -> Vec<SystemTime> {
        ms.iter().map(|m| min(*m)).collect()
    }

    #[test]
    fn on_time_advances_create_nothing_and_hold_the_next_slot() {
        for policy in [
            CatchUp::Skip,
            CatchUp::Latest,
            CatchUp::All {
                window: crate::schedule::DEFAULT_CATCH_UP_WINDOW,
            },
        ] {
            let s = every_minute(policy);
            // Claimed exactly at its due time, or a little after.
            for now in [min(5), min(5) + Duration::from_millis(999)] {
                let plan = s.plan(Some(min(5)), 5, now);
                assert_eq!(plan.create, [], "{policy:?}");
                assert_eq!(plan.pending, Some(min(6)), "{policy:?}");
                assert_eq!(plan.skipped, None, "{policy:?}");
            }
            // A slot exactly at now is pending, not missed.
            let plan = s.plan(Some(min(5)), 5, min(6));
            assert_eq!((plan.create, plan.pending), (vec![], Some(min(6))));
        }
    }

    #[test]
    fn each_policy_treats_missed_runs_its_own_way() {
        let now = min(20) + Duration::from_secs(1);
        let skip = every_minute(CatchUp::Skip).plan(Some(min(10)), 1, now);
        assert_eq!((skip.create, skip.pending), (vec![], Some(min(21))));
        assert_eq!(
            skip.skipped,
            Some(Skipped {
                first: min(11),
                last: min(20)
            })
        );

        let latest = every_minute(CatchUp::Latest).plan(Some(min(10)), 1, now);
        assert_eq!(
            (latest.create, latest.pending),
            (mins(&[20]), Some(min(21)))
        );
        assert_eq!(
            latest.skipped,
            Some(Skipped {
                first: min(11),
                last: min(19)
            })
        );

        let window = CatchUp::All {
            window: Duration::from_secs(3 * 60),
        };
        let all = every_minute(window).plan(Some(min(10)), 1, now);
        // 17:01 .. 20:01 is the window: 18, 19, 20 (17 is 3 min 1 s back).
        assert_eq!(
            (all.create, all.pending),
            (mins(&[18, 19, 20]), Some(min(21)))
        );
        assert_eq!(
            all.skipped,
            Some(Skipped {
                first: min(11),
                last: min(17)
            })
        );
        // The window's edge is inclusive.
        let all = every_minute(window).plan(Some(min(10)), 1, min(20));
        assert_eq!(all.create, mins(&[17, 18, 19]));

        let wide = CatchUp::All {
            window: Duration::from_secs(3_600),
        };
        let all = every_minute(wide).plan(Some(min(10)), 1, now);
        assert_eq!(all.create, mins(&[11, 12, 13, 14, 15, 16, 17, 18, 19, 20]));
        assert_eq!(all.skipped, None);
    }

    #[test]
    fn catching_up_all_is_bounded_keeping_the_most_recent() {
        let s = Schedule::builder(Spec::every(Duration::from_secs(1)).unwrap())
            .catch_up(CatchUp::All {
                window: Duration::from_secs(86_400),
            })
            .build()
            .unwrap();
        let sec = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        let plan = s.plan(Some(sec(0)), 1, sec(5_000));
        assert_eq!(plan.create.len(), MAX_CATCH_UP_RUNS);
        assert_eq!(plan.create.first(), Some(&sec(4_000)));
        assert_eq!(plan.create.last(), Some(&sec(4_999)));
        assert_eq!(plan.pending, Some(sec(5_000)));
        assert_eq!(
            plan.skipped,
            Some(Skipped {
                first: sec(1),
                last: sec(3_999)
            })
        );
    }

    #[test]
    fn the_run_limit_counts_created_and_pending_runs() {
        let s = Schedule::builder(Spec::every(Duration::from_secs(60)).unwrap())
            .run_limit(3)
            .catch_up(CatchUp::All {
                window: Duration::from_secs(3_600),
            })
            .build()
            .unwrap();
        let now = min(10) + Duration::from_secs(1);
        assert_eq!(s.plan(Some(min(5)), 1, now).create, mins(&[6, 7]));
        assert_eq!(s.plan(Some(min(5)), 1, now).pending, None);
        let plan = s.plan(Some(min(9)), 1, now);
        assert_eq!((plan.create, plan.pending), (mins(&[10]), Some(min(11))));
        let plan = s.plan(Some(min(9)), 2, min(9));
        assert_eq!((plan.create, plan.pending), (vec![], Some(min(10))));
        for done in [3, 4, u64::MAX] {
            let plan = s.plan(Some(min(9)), done, now);
            assert_eq!(
                (plan.create, plan.pending, plan.skipped),
                (vec![], None, None)
            );
        }
    }

    #[test]
    fn start_and_end_bound_every_run() {
        let s = Schedule::builder(Spec::every(Duration::from_secs(60)).unwrap())
            .start(min(10))
            .end(min(13))
            .catch_up(CatchUp::All {
                window: Duration::from_secs(3_600),
            })
            .build()
            .unwrap();
        // Never run, start in the past: the slots since start are missed.
        let plan = s.plan(None, 0, min(11) + Duration::from_secs(1));
        assert_eq!(
            (plan.create, plan.pending),
            (mins(&[10, 11]), Some(min(12)))
        );
        // Before start: the first run is at start.
        let plan = s.plan(None, 0, min(2));
        assert_eq!((plan.create, plan.pending), (vec![], Some(min(10))));
        // The end is exclusive: 13 never runs.
        let plan = s.plan(Some(min(12)), 3, min(30));
        assert_eq!(
            (plan.create, plan.pending, plan.skipped),
            (vec![], None, None)
        );
        let plan = s.plan(Some(min(11)), 2, min(30));
        assert_eq!(
            (plan.create, plan.pending, plan.skipped),
            (mins(&[12]), None, None)
        );
    }

    #[test]
    fn a_last_run_ahead_of_now_plans_after_it() {
        // Another node's clock ran ahead: nothing is missed, nothing repeats.
        let plan = every_minute(CatchUp::default()).plan(Some(min(8)), 8, min(5));
        assert_eq!(
            (plan.create, plan.pending, plan.skipped),
            (vec![], Some(min(9)), None)
        );
    }

    #[test]
    fn times_at_the_ends_of_the_range_plan_without_overflow() {
        let s = every_minute(CatchUp::All {
            window: Duration::MAX,
        });
        let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 4);
        let plan = s.plan(Some(UNIX_EPOCH), 1, far);
        assert_eq!(plan.create.len(), MAX_CATCH_UP_RUNS);
        assert_eq!(plan.pending, None);
        let plan = s.plan(None, 0, UNIX_EPOCH - Duration::from_secs(5));
        assert_eq!((plan.create, plan.pending), (vec![], Some(UNIX_EPOCH)));
    }
}
