//! What a run saw: the earliest start and the number of runs of every timer
//! ([`Recorder`]), and what that adds up to ([`Summary`]).
//!
//! Handlers on any thread (or the readers of child processes' output) call
//! [`Recorder::record`]; each slot is two atomics, so recording takes no
//! lock. A summary is taken once the run is over and nothing records any
//! more.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicUsize, Ordering};
use std::time::SystemTime;

use super::unix_ns;
use crate::stats::percentile_sorted;
use crate::workloads::Check;

/// Due times and handler starts of one run's timers, by index.
pub struct Recorder {
    /// Requested due time, ns since the epoch; fixed at creation.
    due: Vec<i64>,
    /// Earliest start seen, ns since the epoch; `i64::MAX` until the first.
    first: Vec<AtomicI64>,
    /// Runs started.
    runs: Vec<AtomicU32>,
    /// Timers with at least one run.
    fired: AtomicUsize,
}

impl Recorder {
    /// A recorder for timers due at `due` (index = position).
    pub fn new(due: &[SystemTime]) -> Recorder {
        Recorder {
            due: due.iter().map(|t| unix_ns(*t)).collect(),
            first: due.iter().map(|_| AtomicI64::new(i64::MAX)).collect(),
            runs: due.iter().map(|_| AtomicU32::new(0)).collect(),
            fired: AtomicUsize::new(0),
        }
    }

    /// Timers recorded for.
    pub fn len(&self) -> usize {
        self.due.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }

    /// A run of timer `i` started at `start_ns` (ns since the epoch); an
    /// index out of range is ignored.
    pub fn record(&self, i: usize, start_ns: i64) {
        let (Some(first), Some(runs)) = (self.first.get(i), self.runs.get(i)) else {
            return;
        };
        first.fetch_min(start_ns, Ordering::Relaxed);
        if runs.fetch_add(1, Ordering::Relaxed) == 0 {
            self.fired.fetch_add(1, Ordering::Release);
        }
    }

    /// Timers that have run at least once.
    pub fn fired(&self) -> usize {
        self.fired.load(Ordering::Acquire)
    }

    /// Waits until every timer has run or `deadline` passes; true if all ran.
    pub fn wait_all(&self, deadline: SystemTime) -> bool {
        while self.fired() < self.len() {
            if SystemTime::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        true
    }

    /// Timer `i`'s earliest start minus its due time in ns, if it ran.
    pub fn lateness_of(&self, i: usize) -> Option<i64> {
        let first = self.first.get(i)?.load(Ordering::Relaxed);
        (first != i64::MAX).then(|| first - self.due[i])
    }

    /// The timers that have not run.
    pub fn not_run(&self) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| self.lateness_of(i).is_none())
            .collect()
    }

    /// Runs of timer `i`.
    pub fn runs_of(&self, i: usize) -> u32 {
        self.runs.get(i).map_or(0, |r| r.load(Ordering::Relaxed))
    }

    /// The run's figures.
    pub fn summary(&self) -> Summary {
        let mut lateness = Vec::with_capacity(self.len());
        let mut s = Summary::default();
        for i in 0..self.len() {
            match self.lateness_of(i) {
                None => s.lost += 1,
                Some(l) => {
                    lateness.push(l);
                    if l < 0 {
                        s.early += 1;
                        s.max_early_ns = s.max_early_ns.max(-l);
                    }
                    s.duplicates += u64::from(self.runs_of(i).saturating_sub(1));
                }
            }
        }
        lateness.sort_unstable();
        s.lateness = lateness;
        s
    }
}

/// One run's figures.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Earliest start minus due of every timer that ran, ns, sorted.
    pub lateness: Vec<i64>,
    /// Timers whose first run started before their due time.
    pub early: usize,
    /// The largest earliness, ns.
    pub max_early_ns: i64,
    /// Timers that never ran.
    pub lost: usize,
    /// Runs beyond the first, over all timers.
    pub duplicates: u64,
}

impl Summary {
    /// The `p`-th percentile of lateness in ns.
    pub fn pct(&self, p: f64) -> Option<i64> {
        percentile_sorted(&self.lateness, p)
    }

    /// The largest lateness in ns.
    pub fn max(&self) -> Option<i64> {
        self.lateness.last().copied()
    }

    /// Early starts, lost timers and duplicate runs are failures.
    pub fn check(&self) -> Check {
        Check::from_errors(&self.errors(self.lost))
    }

    /// The failure counts of [`check`](Self::check), with `lost` as the
    /// caller counts it.
    pub fn errors(&self, lost: usize) -> [(&'static str, u64); 3] {
        [
            ("fired early", self.early as u64),
            ("lost", lost as u64),
            ("duplicates", self.duplicates),
        ]
    }

    /// "0", or the count with the largest earliness in ms.
    pub fn early_cell(&self) -> String {
        if self.early == 0 {
            "0".into()
        } else {
            format!("{} ({:.0} ms)", self.early, self.max_early_ns as f64 / 1e6)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn early_lost_and_duplicates_are_counted() {
        let due: Vec<SystemTime> = (1..=4)
            .map(|s| UNIX_EPOCH + Duration::from_secs(s))
            .collect();
        let r = Recorder::new(&due);
        r.record(0, 1_002_000_000); // 2 ms late
        r.record(1, 1_500_000_000); // 500 ms early
        r.record(2, 3_001_000_000);
        r.record(2, 3_000_500_000); // a second run, earlier: the earliest counts
        r.record(9, 0); // out of range: ignored
        assert_eq!(r.fired(), 3);
        let s = r.summary();
        assert_eq!(s.lateness, vec![-500_000_000, 500_000, 2_000_000]);
        assert_eq!(
            (s.early, s.max_early_ns, s.lost, s.duplicates),
            (1, 500_000_000, 1, 1)
        );
        assert_eq!(s.max(), Some(2_000_000));
        assert_eq!(s.pct(50.0), Some(500_000));
        assert_eq!(s.early_cell(), "1 (500 ms)");
        assert_eq!(
            s.check(),
            Check::Failed("1 fired early, 1 lost, 1 duplicates".into())
        );
        assert!(!r.wait_all(SystemTime::now()));
        assert_eq!(r.not_run(), vec![3]);
    }
}
