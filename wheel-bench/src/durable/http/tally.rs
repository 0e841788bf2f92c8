//! What the receiver's log adds up to for one run: each expected key's
//! first arrival against its requested due time, early and lost keys,
//! duplicate requests, and the run's span and rate.
//!
//! Lateness is the arrival minus the due time the run asked for; a request
//! whose `Wheel-Due` header disagrees with it counts as a wrong due (ours
//! must send the timer's due time; the peer sends none). A key that is not
//! the run's (no index, out of range) is counted apart, as foreign.
//!
//! The tally reads each request as an [`Arrival`], the little of a
//! [`Received`] it needs, so that its tests build the log by hand.

use wheel_testkit::Received;

use crate::durable::{index_of, unix_ns};
use crate::stats::percentile_sorted;
use crate::workloads::Check;

/// One request as the tally reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// Arrival, ns since the epoch.
    pub at_ns: i64,
    /// `Wheel-Timer-Key`, if sent.
    pub key: Option<String>,
    /// `Wheel-Fence`, if sent and a number.
    pub fence: Option<u64>,
    /// `Wheel-Due` (Unix ms), if sent and a number.
    pub due_ms: Option<i64>,
}

impl From<&Received> for Arrival {
    fn from(r: &Received) -> Arrival {
        Arrival {
            at_ns: unix_ns(r.at),
            key: r.header("wheel-timer-key").map(str::to_owned),
            fence: r.header("wheel-fence").and_then(|v| v.trim().parse().ok()),
            due_ms: r.header("wheel-due").and_then(|v| v.trim().parse().ok()),
        }
    }
}

/// One run's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Callbacks expected.
    pub expected: usize,
    /// Keys that arrived at least once.
    pub received: usize,
    /// Keys whose first request arrived before their due time.
    pub early: usize,
    /// Keys that never arrived, less [`not_sent`](Self::not_sent).
    pub lost: usize,
    /// Keys that never arrived but were still in the sender's store at
    /// the end: a sender behind, not a lost callback.
    pub not_sent: usize,
    /// The indexes of the keys that never arrived.
    pub missing: Vec<usize>,
    /// Requests beyond each key's first.
    pub duplicates: usize,
    /// Of the duplicates, those whose `Wheel-Fence` differs from the
    /// key's first request's: a later run of the timer (its lease lapsed
    /// and it was claimed again), not an attempt of the same run.
    pub new_fence: usize,
    /// Requests whose `Wheel-Due` differs from the due time asked for.
    pub wrong_due: usize,
    /// Requests with no key of the run.
    pub foreign: usize,
    /// First arrivals minus due times, ns, sorted.
    pub lateness: Vec<i64>,
    /// The earliest due time, ns since the epoch.
    pub first_due_ns: i64,
    /// The last due time, ns since the epoch.
    pub last_due_ns: i64,
    /// The last first arrival, ns since the epoch.
    pub last_arrival_ns: Option<i64>,
    /// The earliest arrival, ns since the epoch.
    pub first_arrival_ns: Option<i64>,
}

impl Tally {
    /// The tally of the receiver's `log` for keys `0..due_ns.len()` due at
    /// `due_ns`.
    pub fn of_received(log: &[Received], due_ns: &[i64]) -> Tally {
        let arrivals: Vec<Arrival> = log.iter().map(Arrival::from).collect();
        Tally::of(&arrivals, due_ns)
    }

    /// The tally of `arrivals` for keys `0..due_ns.len()` due at `due_ns`.
    pub fn of(arrivals: &[Arrival], due_ns: &[i64]) -> Tally {
        let mut first: Vec<Option<i64>> = vec![None; due_ns.len()];
        let mut fence: Vec<Option<u64>> = vec![None; due_ns.len()];
        let mut t = Tally {
            expected: due_ns.len(),
            first_due_ns: due_ns.iter().copied().min().unwrap_or(0),
            last_due_ns: due_ns.iter().copied().max().unwrap_or(0),
            ..Tally::default()
        };
        for a in arrivals {
            let i = a.key.as_deref().and_then(|k| index_of(k.as_bytes()));
            let Some(i) = i.filter(|&i| i < due_ns.len()) else {
                t.foreign += 1;
                continue;
            };
            if a.due_ms.is_some_and(|ms| ms * 1_000_000 != due_ns[i]) {
                t.wrong_due += 1;
            }
            match &mut first[i] {
                Some(at) => {
                    t.duplicates += 1;
                    t.new_fence += usize::from(a.fence.is_some() && a.fence != fence[i]);
                    *at = (*at).min(a.at_ns);
                }
                slot => {
                    *slot = Some(a.at_ns);
                    fence[i] = a.fence;
                }
            }
        }
        for (i, at) in first.iter().enumerate() {
            let Some(at) = *at else {
                t.lost += 1;
                t.missing.push(i);
                continue;
            };
            t.received += 1;
            let late = at - due_ns[i];
            t.early += usize::from(late < 0);
            t.lateness.push(late);
            t.last_arrival_ns = Some(t.last_arrival_ns.map_or(at, |l: i64| l.max(at)));
            t.first_arrival_ns = Some(t.first_arrival_ns.map_or(at, |f: i64| f.min(at)));
        }
        t.lateness.sort_unstable();
        t
    }

    /// Of the missing keys, `n` are still in the sender's store: they
    /// count as not sent yet instead of lost.
    pub fn set_not_sent(&mut self, n: usize) {
        let n = n.min(self.lost + self.not_sent);
        self.lost = self.lost + self.not_sent - n;
        self.not_sent = n;
    }

    /// The duplicates cell: "0", or with those of a new fence beside it.
    pub fn duplicates_cell(&self) -> String {
        if self.new_fence == 0 {
            self.duplicates.to_string()
        } else {
            format!("{} ({} new fence)", self.duplicates, self.new_fence)
        }
    }

    /// The lost cell: "0", or with the keys not sent yet beside it.
    pub fn lost_cell(&self) -> String {
        if self.not_sent == 0 {
            self.lost.to_string()
        } else {
            format!("{} ({} not sent yet)", self.lost, self.not_sent)
        }
    }

    /// Percentile `p` of the lateness, ms.
    pub fn lateness_ms(&self, p: f64) -> Option<f64> {
        percentile_sorted(&self.lateness, p).map(|ns| ns as f64 / 1e6)
    }

    /// From the first due time to the last first arrival, s.
    pub fn span_s(&self) -> Option<f64> {
        self.last_arrival_ns
            .map(|l| (l - self.first_due_ns) as f64 / 1e9)
    }

    /// Keys received per second, from the first due time (or the first
    /// arrival, if earlier: a sender that fires early) to the last arrival.
    pub fn per_sec(&self) -> Option<f64> {
        let (first, last) = (self.first_arrival_ns?, self.last_arrival_ns?);
        let from = first.min(self.first_due_ns);
        Some((last - from) as f64 / 1e9)
            .filter(|s| *s > 0.0)
            .map(|s| self.received as f64 / s)
    }

    /// From the last due time to the last first arrival, s: how far
    /// behind the sender ended.
    pub fn lag_s(&self) -> Option<f64> {
        self.last_arrival_ns
            .map(|l| (l - self.last_due_ns) as f64 / 1e9)
    }

    /// Early, lost, duplicate, wrong-due and foreign requests: ours must
    /// have none.
    pub fn check(&self) -> Check {
        Check::from_errors(&[
            ("early", self.early as u64),
            ("lost", self.lost as u64),
            ("duplicates", self.duplicates as u64),
            ("wrong Wheel-Due", self.wrong_due as u64),
            ("foreign", self.foreign as u64),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::key;

    fn at(i: usize, at_ns: i64, due_ms: Option<i64>) -> Arrival {
        Arrival {
            at_ns,
            key: Some(key(i)),
            fence: Some(1),
            due_ms,
        }
    }

    #[test]
    fn firsts_early_lost_duplicates_and_foreign_are_counted() {
        let due = [1_000_000_000, 1_000_000_000, 1_000_000_000, 2_000_000_000];
        let mut log = vec![
            at(0, 1_003_000_000, Some(1_000)),
            at(1, 999_000_000, None),
            at(0, 1_001_000_000, Some(1_000)),
            at(3, 2_010_000_000, Some(1_999)),
        ];
        log.push(Arrival {
            at_ns: 5,
            key: Some("nope".into()),
            fence: None,
            due_ms: None,
        });
        log.push(at(99, 5, None));
        log.push(Arrival {
            fence: Some(2),
            ..at(3, 2_020_000_000, Some(2_000))
        });
        let t = Tally::of(&log, &due);
        assert_eq!((t.expected, t.received, t.lost), (4, 3, 1));
        assert_eq!(t.missing, vec![2]);
        assert_eq!(
            (t.early, t.duplicates, t.wrong_due, t.foreign),
            (1, 2, 1, 2)
        );
        // Key 3's second request came from a later run (fence 2).
        assert_eq!(t.new_fence, 1);
        assert_eq!(t.duplicates_cell(), "2 (1 new fence)");
        // Key 0's first arrival is the earlier of its two.
        assert_eq!(t.lateness, vec![-1_000_000, 1_000_000, 10_000_000]);
        assert_eq!(t.lateness_ms(50.0), Some(1.0));
        assert_eq!(t.last_arrival_ns, Some(2_010_000_000));
        assert_eq!(t.span_s(), Some(1.01));
        assert_eq!(t.lag_s(), Some(0.01));
        // Key 1 came early: the rate counts from its arrival.
        let rate = t.per_sec().unwrap();
        assert!((rate - 3.0 / 1.011).abs() < 1e-9, "{rate}");
        let check = t.check().label();
        assert!(check.starts_with("FAILED"), "{check}");
        assert!(
            check.contains("1 lost") && check.contains("2 foreign"),
            "{check}"
        );
    }

    #[test]
    fn a_clean_run_passes_and_an_empty_one_has_no_rate() {
        let due = [1_000_000_000, 1_000_000_000];
        let log = [
            at(1, 1_002_000_000, Some(1_000)),
            at(0, 1_001_000_000, Some(1_000)),
        ];
        let t = Tally::of(&log, &due);
        assert_eq!(t.check(), Check::Passed);
        assert_eq!(t.lateness_ms(99.0), Some(2.0));
        let none = Tally::of(&[], &due);
        assert_eq!(
            (none.lost, none.per_sec(), none.lateness_ms(99.0)),
            (2, None, None)
        );
    }

    #[test]
    fn an_arrival_reads_the_key_fence_and_due_headers_of_a_request() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_500);
        let header = |n: &str, v: &str| (n.to_owned(), v.to_owned());
        let r = Received {
            method: "POST".into(),
            path: "/callback".into(),
            headers: vec![
                header("wheel-timer-key", "t000000000000003"),
                header("wheel-fence", " 7"),
                header("wheel-due", "soon"),
            ],
            body: Vec::new(),
            at,
        };
        let a = Arrival::from(&r);
        assert_eq!(
            a,
            Arrival {
                at_ns: 1_500_000_000,
                key: Some("t000000000000003".into()),
                fence: Some(7),
                due_ms: None, // not a number
            }
        );
        let bare = Received {
            headers: Vec::new(),
            ..r
        };
        assert_eq!(Arrival::from(&bare).key, None);
    }
}
