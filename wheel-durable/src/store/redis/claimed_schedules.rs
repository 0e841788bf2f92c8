//! The schedule records read by a claim, kept until the claimed chain run
//! starts, so that planning its step costs no second call to the server.
//!
//! `claim.lua` answers, beside each claimed chain run, its schedule's
//! record. A record is kept only when that run is the chain's pending run
//! and the schedule is not paused: the only case in which the start takes
//! a step. Whatever changes such a record before the start either removes
//! the claimed run (upsert, pause, delete, a cancel: the start's fence
//! check refuses it) or bumps its generation (the start refuses a step
//! planned from another generation), so planning from the claim's copy
//! gives the step a fresh read would give. Anything not kept is read
//! again (`schedules.lua`).
//!
//! The store's clock for the plan is the claim's reading plus the time
//! since its reply (the start's own clock check still decides when a run
//! may start).
//!
//! Who touches what: the claimer thread inserts (after each claim), the
//! starter takes (one entry per start attempt); both under one mutex, held
//! only for map operations. Entries whose start never came (a claim handed
//! back, refused or lost) are dropped after [`MAX_AGE`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::store::Millis;
use crate::store::schedules::SchedRecord;
use crate::sync::lock;

/// How long a record waits for its run's start at most.
const MAX_AGE: Duration = Duration::from_secs(60);

/// How often the old entries are looked for at most.
const SWEEP_EVERY: Duration = Duration::from_secs(5);

struct Kept {
    record: SchedRecord,
    /// The store's clock during the claim, and when its reply came.
    now: Millis,
    at: Instant,
}

#[derive(Default)]
struct Inner {
    by_key: HashMap<String, Kept>,
    swept: Option<Instant>,
}

/// The kept records, by claimed run key.
#[derive(Default)]
pub(super) struct ClaimedSchedules {
    inner: Mutex<Inner>,
}

impl ClaimedSchedules {
    /// Keeps the record of each claimed run `(key, record bytes)` that is
    /// its unpaused schedule's pending run; `now` is the claim's clock.
    pub(super) fn keep(&self, now: Millis, runs: Vec<(String, SchedRecord)>) {
        let at = Instant::now();
        let mut inner = lock(&self.inner);
        if inner
            .swept
            .is_none_or(|t| at.duration_since(t) >= SWEEP_EVERY)
        {
            inner
                .by_key
                .retain(|_, k| at.duration_since(k.at) < MAX_AGE);
            inner.swept = Some(at);
        }
        for (key, record) in runs {
            if record.next.as_deref() == Some(key.as_str()) && !record.paused {
                inner.by_key.insert(key, Kept { record, now, at });
            }
        }
    }

    /// Takes the kept record of each run key (`None` where none is kept),
    /// and the latest store clock they give (the claim's reading plus the
    /// time since), if any was kept.
    pub(super) fn take(&self, keys: &[&str]) -> (Option<Millis>, Vec<Option<SchedRecord>>) {
        let mut inner = lock(&self.inner);
        let mut now = None;
        let records = keys
            .iter()
            .map(|k| {
                let kept = inner.by_key.remove(*k)?;
                let elapsed = u64::try_from(kept.at.elapsed().as_millis()).unwrap_or(u64::MAX);
                let est = kept.now.saturating_add(elapsed);
                now = Some(now.map_or(est, |n: Millis| n.max(est)));
                Some(kept.record)
            })
            .collect();
        (now, records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(next: Option<&str>, paused: bool) -> SchedRecord {
        SchedRecord {
            definition: Vec::new(),
            overlap: 0,
            payload: Vec::new(),
            generation: 3,
            last_nominal: None,
            runs_created: 1,
            paused,
            unplanned: false,
            next: next.map(str::to_owned),
            running: None,
            buffered: None,
            ..SchedRecord::default()
        }
    }

    #[test]
    fn keeps_only_records_whose_pending_run_was_claimed_and_hands_each_out_once() {
        let c = ClaimedSchedules::default();
        c.keep(
            1_000,
            vec![
                ("sched:a:1".into(), record(Some("sched:a:1"), false)),
                ("sched:b:1".into(), record(Some("sched:b:2"), false)),
                ("sched:c:1".into(), record(Some("sched:c:1"), true)),
            ],
        );
        let (now, got) = c.take(&["sched:a:1", "sched:b:1", "sched:c:1"]);
        assert_eq!(
            got,
            vec![Some(record(Some("sched:a:1"), false)), None, None]
        );
        // The claim's clock, plus the (short) time since.
        assert!(now.is_some_and(|n| n >= 1_000), "{now:?}");
        let (now, got) = c.take(&["sched:a:1"]);
        assert_eq!((now, got), (None, vec![None]), "taken once");
    }
}
