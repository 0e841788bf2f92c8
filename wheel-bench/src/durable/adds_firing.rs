//! Single adds while the timers they add come due: threads sharing one
//! handle add timers one `add_at` call each, due from `lead` ahead at `rate`
//! per second (timer `i` at `lead + i / rate` after the adding starts),
//! while nodes of ours on the same Redis server claim and fire them. The
//! adds must keep ahead of the due times: an add that waits behind the
//! nodes' scripts lands late, and so its timer fires late.
//!
//! Thread `t` of `T` adds timers `t`, `t + T`, `t + 2T`, ..., so the
//! adding runs through the due times in order. The handlers record each
//! start in a [`Recorder`]; the run waits for every timer until the last
//! due time plus `grace`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::ours::{self, NodeSettings, Store};
use super::{PAYLOAD, Recorder, Summary, key, whole_ms};
use crate::workloads::Check;

/// One adds-while-due workload.
#[derive(Debug, Clone)]
pub struct AddsFiringParams {
    /// Timers added, one `add` each.
    pub timers: usize,
    /// Threads adding, sharing one handle.
    pub threads: usize,
    /// The first timer is due this long after the adding starts...
    pub lead: Duration,
    /// ...and the rest follow at this many per second.
    pub rate: u64,
    /// Nodes firing meanwhile.
    pub nodes: usize,
    /// How long after the last due time a timer may still run before it
    /// counts as lost.
    pub grace: Duration,
}

/// The most the adding may take (the first due time is 3 s out).
pub const ADDING_TARGET: Duration = Duration::from_secs(3);

/// The most the 99th percentile of lateness may be, ns.
pub const P99_TARGET_NS: i64 = 20_000_000;

/// What one run measured.
#[derive(Debug, Clone)]
pub struct AddsFiringRun {
    /// The records' figures.
    pub summary: Summary,
    /// How long adding every timer took.
    pub adding: Duration,
}

impl AddsFiringRun {
    /// Early runs, lost timers and duplicates.
    pub fn check(&self) -> Check {
        self.summary.check()
    }

    /// Whether the adding took at most [`ADDING_TARGET`] and the p99 of
    /// lateness was at most [`P99_TARGET_NS`].
    pub fn targets(&self) -> Check {
        let mut missed = Vec::new();
        if self.adding > ADDING_TARGET {
            missed.push(format!("adding {:.2} s", self.adding.as_secs_f64()));
        }
        match self.summary.pct(99.0) {
            Some(p99) if p99 <= P99_TARGET_NS => {}
            Some(p99) => missed.push(format!("p99 {:.1} ms", p99 as f64 / 1e6)),
            None => missed.push("nothing fired".into()),
        }
        if missed.is_empty() {
            Check::Passed
        } else {
            Check::Failed(missed.join(", "))
        }
    }
}

/// The due time of timer `i` of `p` for adding that starts at `start`.
pub fn due_of(p: &AddsFiringParams, start: SystemTime, i: usize) -> SystemTime {
    let after = p.lead + Duration::from_secs_f64(i as f64 / p.rate.max(1) as f64);
    whole_ms(start + after)
}

/// Runs `p` on the Redis server at `url`, in namespace `adds-firing`.
/// The due times count from just before the nodes start (their start
/// takes a few milliseconds of the lead).
pub fn run(url: &str, p: &AddsFiringParams) -> Result<AddsFiringRun, String> {
    let store = Store::Redis(url.into());
    let err = |e: wheel_durable::DurableError| e.to_string();
    let keys: Vec<String> = (0..p.timers).map(key).collect();
    let start = SystemTime::now();
    let due: Vec<SystemTime> = (0..p.timers).map(|i| due_of(p, start, i)).collect();
    let rec = Arc::new(Recorder::new(&due));
    let settings = NodeSettings::default();
    let nodes = ours::start_nodes(&store, "adds-firing", p.nodes, &settings, &rec).map_err(err)?;
    let adding = add_all(&nodes[0], p, &keys, &due);
    let end = due.last().copied().unwrap_or(start) + p.grace;
    if adding.is_ok() {
        rec.wait_all(end);
    }
    ours::shutdown_all(nodes).map_err(err)?;
    Ok(AddsFiringRun {
        summary: rec.summary(),
        adding: adding?,
    })
}

/// Adds `keys[i]` due at `due[i]` from `p.threads` threads, one `add`
/// each; returns how long it took.
fn add_all(
    timers: &wheel_durable::DurableTimers,
    p: &AddsFiringParams,
    keys: &[String],
    due: &[SystemTime],
) -> Result<Duration, String> {
    let t0 = Instant::now();
    let step = p.threads.max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..step)
            .map(|t| {
                s.spawn(move || -> Result<(), String> {
                    for i in (t..keys.len()).step_by(step) {
                        timers
                            .add_at(&keys[i], due[i], PAYLOAD)
                            .map_err(|e| e.to_string())?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("adder thread"))
    })?;
    Ok(t0.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn params() -> AddsFiringParams {
        AddsFiringParams {
            timers: 20_000,
            threads: 4,
            lead: Duration::from_secs(3),
            rate: 6_667,
            nodes: 3,
            grace: Duration::from_secs(5),
        }
    }

    #[test]
    fn due_times_start_at_the_lead_and_follow_at_the_rate() {
        let p = params();
        let start = UNIX_EPOCH + Duration::from_secs(100);
        assert_eq!(due_of(&p, start, 0), start + Duration::from_secs(3));
        assert_eq!(due_of(&p, start, 6_667), start + Duration::from_secs(4));
        // The last of 20 000 is due 3 s after the first.
        let last = due_of(&p, start, 19_999);
        let span = last.duration_since(due_of(&p, start, 0)).unwrap();
        assert!(span > Duration::from_millis(2_990) && span <= Duration::from_secs(3));
    }

    #[test]
    fn targets_are_the_adding_time_and_the_p99() {
        let run = |adding_ms: u64, lateness_ms: i64| AddsFiringRun {
            summary: Summary {
                lateness: vec![lateness_ms * 1_000_000; 100],
                ..Summary::default()
            },
            adding: Duration::from_millis(adding_ms),
        };
        assert_eq!(run(2_900, 5).targets(), Check::Passed);
        assert_eq!(
            run(3_500, 5).targets(),
            Check::Failed("adding 3.50 s".into())
        );
        assert_eq!(
            run(1_000, 25).targets(),
            Check::Failed("p99 25.0 ms".into())
        );
        assert_eq!(run(1_000, 5).check(), Check::Passed);
    }
}
