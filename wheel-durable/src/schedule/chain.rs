//! The chain's steps in store terms: the runs (key, due time, nominal
//! time) that creating, resuming, advancing or re-planning a schedule
//! writes, computed by the node (stores cannot evaluate cron) from the
//! schedule, its record's state and the store's clock, and applied by the
//! store in one atomic operation that first checks the record is still
//! the one planned from.
//!
//! Invariants: every run is a slot of the schedule within its bounds, keyed
//! by [`run_key`]; `runs_created` never passes the run limit; a step
//! planned twice from the same state is the same step. A new schedule's
//! first run is the first slot at or after `max(start, now)`: creating a
//! schedule never produces runs for past slots. When the pending run
//! starts after the slot following it has passed (the nodes were down),
//! it is one of the missed runs and the catch-up policy decides about it
//! too ([`advance`]); on time, it runs and the next slot becomes pending.
//!
//! Node state: none (pure functions).

use super::instant::{Ms, max_ms, system_time};
use super::plan::Plan;
use super::{Schedule, run_key};
use crate::time::Millis;

/// One run to create: its timer key, due time and nominal time (store
/// milliseconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChainRun {
    pub(crate) key: String,
    pub(crate) due: Millis,
    pub(crate) nominal: Millis,
}

/// What one step of the chain writes, and the record state it leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Advance {
    /// The record generation this was planned from (the store checks it).
    pub(crate) generation: u64,
    /// At a start: whether the starting run itself runs (false when it was
    /// missed and the catch-up policy drops it).
    pub(crate) run_this: bool,
    /// Missed runs to create, due now (add if absent).
    pub(crate) create: Vec<ChainRun>,
    /// The next run of the chain, if the schedule is not over.
    pub(crate) pending: Option<ChainRun>,
    /// The nominal time of the last run of the chain after this step.
    pub(crate) last_nominal: Option<Millis>,
    /// Runs created after this step, for the run limit.
    pub(crate) runs_created: u64,
    /// Slots the catch-up policy dropped in this step.
    pub(crate) skipped: u64,
}

/// The most slots [`count_slots`] walks one by one (cron specs); a count
/// that reaches it is reported as that many.
const MAX_COUNTED: u64 = 100_000;

/// The run at nominal time `ms` in store terms.
fn run(id: &str, s: &Schedule, ms: Ms) -> Option<ChainRun> {
    let nominal = system_time(ms);
    let key = run_key(id, nominal).ok()?;
    let due = crate::time::millis_of(s.due_of(id, nominal)).ok()?;
    Some(ChainRun {
        key,
        due,
        nominal: u64::try_from(ms).ok()?,
    })
}

fn as_ms(t: Millis) -> Ms {
    Ms::try_from(t).unwrap_or(max_ms())
}

/// The slots in `[first, last]` (both slots of `s`), at most [`MAX_COUNTED`].
pub(crate) fn count_slots(s: &Schedule, first: Ms, last: Ms) -> u64 {
    if last < first {
        return 0;
    }
    if let Some(period) = s.spec().period() {
        let period = Ms::try_from(period.as_millis()).unwrap_or(Ms::MAX).max(1);
        return u64::try_from((last - first) / period + 1).unwrap_or(u64::MAX);
    }
    let mut n = 0;
    let mut at = first - 1;
    while let Some(next) = s.next_ms(at).filter(|n| *n <= last) {
        n += 1;
        if n >= MAX_COUNTED {
            break;
        }
        at = next;
    }
    n
}

fn left(s: &Schedule, runs_created: u64) -> bool {
    s.run_limit().is_none_or(|n| runs_created < n.get())
}

/// The first run of a schedule created (or changed) at `now`: the first
/// slot at or after `max(start, now)`, or `None` when there is none.
pub(crate) fn first_run(id: &str, s: &Schedule, now: Millis) -> Option<ChainRun> {
    let at = s.next_ms(as_ms(now) - 1)?;
    run(id, s, at)
}

/// The step that resumes a paused schedule at `now`: no slot before `now`
/// runs; those after the last run are counted as skipped.
pub(crate) fn resume(
    id: &str,
    s: &Schedule,
    generation: u64,
    last: Option<Millis>,
    runs_created: u64,
    now: Millis,
) -> Advance {
    let now = as_ms(now);
    let after = last.map_or(now - 1, |l| as_ms(l).max(now - 1));
    let pending = if left(s, runs_created) {
        s.next_ms(after).and_then(|at| run(id, s, at))
    } else {
        None
    };
    let skipped = match (last, s.prev_ms(now)) {
        (Some(l), Some(p)) => s
            .next_ms(as_ms(l))
            .map_or(0, |first| count_slots(s, first, p)),
        _ => 0,
    };
    finish(
        generation,
        true,
        Vec::new(),
        pending,
        last,
        runs_created,
        skipped,
    )
}

/// The step taken when the chain's pending run at `nominal` starts at
/// `now` (see the module docs for a run that starts late).
pub(crate) fn advance(
    id: &str,
    s: &Schedule,
    generation: u64,
    nominal: Millis,
    runs_created: u64,
    now: Millis,
) -> Advance {
    let n = as_ms(nominal);
    let late = s.next_ms(n).is_some_and(|next| next <= as_ms(now));
    if !late {
        let p = s.plan(Some(system_time(n)), runs_created, system_time(as_ms(now)));
        return from_plan(id, s, generation, true, p, Some(nominal), runs_created);
    }
    // The starting run is one of the missed ones: planned as if not yet
    // created, it runs only if the policy keeps its slot.
    let base = runs_created.saturating_sub(1);
    let mut p = s.plan(Some(system_time(n - 1)), base, system_time(as_ms(now)));
    let run_this = p.create.first() == Some(&system_time(n));
    if run_this {
        p.create.remove(0);
        return from_plan(id, s, generation, true, p, Some(nominal), runs_created);
    }
    from_plan(id, s, generation, false, p, Some(nominal), base)
}

/// The step that re-plans a chain left without a pending run, at `now`.
pub(crate) fn replan(
    id: &str,
    s: &Schedule,
    generation: u64,
    last: Option<Millis>,
    runs_created: u64,
    now: Millis,
) -> Advance {
    let p = match last {
        Some(l) => s.plan(
            Some(system_time(as_ms(l))),
            runs_created,
            system_time(as_ms(now)),
        ),
        None => {
            let pending = first_run(id, s, now).filter(|_| left(s, runs_created));
            return finish(generation, true, Vec::new(), pending, None, runs_created, 0);
        }
    };
    from_plan(id, s, generation, true, p, last, runs_created)
}

fn from_plan(
    id: &str,
    s: &Schedule,
    generation: u64,
    run_this: bool,
    p: Plan,
    last: Option<Millis>,
    runs_before: u64,
) -> Advance {
    let create = p
        .create
        .iter()
        .filter_map(|t| run(id, s, super::instant::floor_ms(*t)))
        .collect();
    let pending = p
        .pending
        .and_then(|t| run(id, s, super::instant::floor_ms(t)));
    let skipped = p.skipped.map_or(0, |k| {
        count_slots(
            s,
            super::instant::floor_ms(k.first),
            super::instant::floor_ms(k.last),
        )
    });
    finish(
        generation,
        run_this,
        create,
        pending,
        last,
        runs_before,
        skipped,
    )
}

fn finish(
    generation: u64,
    run_this: bool,
    create: Vec<ChainRun>,
    pending: Option<ChainRun>,
    last: Option<Millis>,
    runs_before: u64,
    skipped: u64,
) -> Advance {
    let last_nominal = pending
        .as_ref()
        .or(create.last())
        .map(|r| r.nominal)
        .or(last);
    let runs_created = runs_before + create.len() as u64 + u64::from(pending.is_some());
    Advance {
        generation,
        run_this,
        create,
        pending,
        last_nominal,
        runs_created,
        skipped,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::schedule::{CatchUp, Spec};

    fn every_second(catch_up: CatchUp) -> Schedule {
        Schedule::builder(Spec::every(Duration::from_secs(1)).unwrap())
            .catch_up(catch_up)
            .build()
            .unwrap()
    }

    fn nominals(a: &Advance) -> Vec<Millis> {
        a.create.iter().map(|r| r.nominal).collect()
    }

    #[test]
    fn a_new_schedule_starts_at_the_first_slot_not_before_now() {
        let s = every_second(CatchUp::Latest);
        let r = first_run("s", &s, 10_000).unwrap();
        assert_eq!(
            (r.key.as_str(), r.due, r.nominal),
            ("sched:s:10000", 10_000, 10_000)
        );
        assert_eq!(first_run("s", &s, 10_001).unwrap().nominal, 11_000);
        let started = Schedule::builder(Spec::every(Duration::from_secs(1)).unwrap())
            .start(std::time::UNIX_EPOCH + Duration::from_secs(3))
            .run_limit(2)
            .catch_up(CatchUp::All {
                window: Duration::from_secs(60),
            })
            .build()
            .unwrap();
        // A start in the past makes no run for its past slots.
        assert_eq!(first_run("s", &started, 9_500).unwrap().nominal, 10_000);
        let a = replan("s", &started, 1, None, 0, 9_500);
        assert_eq!((nominals(&a), a.pending.unwrap().nominal), (vec![], 10_000));
    }

    #[test]
    fn an_on_time_start_holds_the_next_slot() {
        let s = every_second(CatchUp::Latest);
        let a = advance("s", &s, 3, 5_000, 5, 5_020);
        assert!(a.run_this);
        assert_eq!(nominals(&a), Vec::<Millis>::new());
        assert_eq!(a.pending.unwrap().nominal, 6_000);
        assert_eq!((a.generation, a.runs_created, a.skipped), (3, 6, 0));
        assert_eq!(a.last_nominal, Some(6_000));
    }

    #[test]
    fn a_late_start_is_one_of_the_missed_runs() {
        // Pending run at 5 s, the nodes back at 14.5 s.
        let now = 14_500;
        let skip = advance("s", &every_second(CatchUp::Skip), 1, 5_000, 5, now);
        assert!(!skip.run_this);
        assert_eq!(
            (nominals(&skip), skip.skipped, skip.runs_created),
            (vec![], 10, 5)
        );
        assert_eq!(skip.pending.unwrap().nominal, 15_000);
        let latest = advance("s", &every_second(CatchUp::Latest), 1, 5_000, 5, now);
        assert!(!latest.run_this);
        assert_eq!((nominals(&latest), latest.skipped), (vec![14_000], 9));
        assert_eq!(latest.runs_created, 6);
        let window = CatchUp::All {
            window: Duration::from_millis(3_500),
        };
        let all = advance("s", &every_second(window), 1, 5_000, 5, now);
        assert!(!all.run_this);
        assert_eq!(
            (nominals(&all), all.skipped),
            (vec![11_000, 12_000, 13_000, 14_000], 6)
        );
        let wide = CatchUp::All {
            window: Duration::from_secs(60),
        };
        let all = advance("s", &every_second(wide), 1, 5_000, 5, now);
        assert!(all.run_this, "its own slot is in the window");
        assert_eq!(
            nominals(&all),
            (6..=14).map(|s| s * 1_000).collect::<Vec<_>>()
        );
        assert_eq!((all.skipped, all.runs_created), (0, 15));
    }

    #[test]
    fn resuming_skips_the_paused_slots() {
        let s = every_second(CatchUp::Latest);
        let a = resume("s", &s, 4, Some(5_000), 5, 12_300);
        assert_eq!((nominals(&a), a.skipped), (vec![], 7));
        assert_eq!(a.pending.unwrap().nominal, 13_000);
        assert_eq!(a.runs_created, 6);
        let limited = Schedule::builder(Spec::every(Duration::from_secs(1)).unwrap())
            .run_limit(5)
            .build()
            .unwrap();
        assert_eq!(
            resume("s", &limited, 4, Some(5_000), 5, 12_300).pending,
            None
        );
    }
}
