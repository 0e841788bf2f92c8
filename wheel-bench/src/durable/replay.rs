//! Bulk replay of dead letters: `n` dead letters revived by one
//! `DurableTimers::replay_dead` at a set rate, timed from the call to the
//! replay reporting done and to the last revived timer's handler start.
//!
//! The dead letters are made the way users get them: `n` plain timers due
//! at once whose handler gives up (`Outcome::Fail`) on their first run.
//! Once all are dead, the same handler records instead of failing, and the
//! replay starts. One node on the store fires both phases.
//!
//! The check: every dead letter revived and run exactly once, and none
//! ahead of the pace. The replay revives its `k`-th letter (from 0) no
//! earlier than `k / rate` after its start, so by then at most `k` runs
//! can have started: the `k`-th earliest run starting sooner than that is
//! a revival ahead of its slot, whichever letter it was.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use wheel_durable::{DeadFilter, DurableTimers, Fired, Outcome, ReplayState};

use super::ours::{self, Store};
use super::{Recorder, index_of, key, unix_ns, whole_ms};
use crate::workloads::Check;

/// One replay's setting.
#[derive(Debug, Clone, Copy)]
pub struct ReplayParams {
    /// Dead letters made and replayed.
    pub n: usize,
    /// Revivals per second asked of the replay.
    pub rate: f64,
}

impl ReplayParams {
    /// How long the replay should take at its rate: `n / rate` (the last
    /// revival's slot is one step sooner).
    pub fn expected(&self) -> Duration {
        Duration::from_secs_f64(self.n as f64 / self.rate)
    }
}

/// What one replay took.
#[derive(Debug, Clone)]
pub struct ReplayRun {
    /// From the `replay_dead` call to the replay reporting done.
    pub to_done: Duration,
    /// From the call to the last revived timer's handler start (`None`
    /// when none ran).
    pub to_last_run: Option<Duration>,
    /// Revived, as the replay counted them.
    pub revived: u64,
    /// Revived timers that ran at least once.
    pub ran: usize,
    /// Runs beyond each timer's first.
    pub duplicates: u64,
    /// Runs that started before the pace allowed (see the module doc).
    pub ahead: usize,
    /// How the replay ended, when not done.
    pub ended: Option<String>,
}

impl ReplayRun {
    /// Ahead of the pace, not revived, not run, or run twice: each fails.
    pub fn check(&self, n: usize) -> Check {
        let mut errors = vec![
            ("ahead of the pace", self.ahead as u64),
            ("not revived", (n as u64).saturating_sub(self.revived)),
            ("not run", n.saturating_sub(self.ran) as u64),
            ("duplicates", self.duplicates),
        ];
        if self.ended.is_some() {
            errors.push(("replays not done", 1));
        }
        let check = Check::from_errors(&errors);
        match (&self.ended, check) {
            (Some(why), Check::Failed(c)) => Check::Failed(format!("{c} ({why})")),
            (_, c) => c,
        }
    }
}

/// The handler of both phases: gives up while `replaying` is false,
/// records into `rec` once it is true.
fn handler(
    replaying: Arc<AtomicBool>,
    rec: Arc<Recorder>,
) -> impl Fn(&Fired) -> Outcome + Send + Sync + 'static {
    move |t: &Fired| {
        if !replaying.load(Ordering::SeqCst) {
            return Outcome::Fail("wheel-bench: dead on purpose".into());
        }
        if let Some(i) = index_of(t.key.as_bytes()) {
            rec.record(i, unix_ns(SystemTime::now()));
        }
        Outcome::Done
    }
}

/// Polls the node's counts until `n` dead letters are in the store, or
/// `within` passes.
fn wait_dead(t: &DurableTimers, n: usize, within: Duration) -> Result<(), String> {
    let deadline = Instant::now() + within;
    loop {
        let dead = t.stats().dead;
        if dead == Some(n as u64) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "only {dead:?} of {n} timers were dead after {within:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs after the `k`-th earliest start sooner than `k / rate` after
/// `start_ns`, given every first start in `firsts_ns`.
pub fn ahead_of_pace(firsts_ns: &mut [i64], start_ns: i64, rate: f64) -> usize {
    firsts_ns.sort_unstable();
    firsts_ns
        .iter()
        .enumerate()
        // 1 µs of slack for the rounding of the slot in floating point.
        .filter(|(k, at)| ((**at - start_ns) as f64) < *k as f64 * 1e9 / rate - 1e3)
        .count()
}

/// Makes `p.n` dead letters on `store` (emptied by the caller), replays
/// them at `p.rate`, and times it.
pub fn run(store: &Store, p: &ReplayParams) -> Result<ReplayRun, String> {
    let replaying = Arc::new(AtomicBool::new(false));
    let due = whole_ms(SystemTime::now() + Duration::from_millis(200));
    let rec = Arc::new(Recorder::new(&vec![due; p.n]));
    let t = ours::builder(store, "replay")
        .handler(handler(replaying.clone(), rec.clone()))
        .build()
        .map_err(|e| e.to_string())?;
    let out = (|| {
        let keys: Vec<String> = (0..p.n).map(key).collect();
        ours::add_all(&t, &keys, &vec![due; p.n], 1_000).map_err(|e| e.to_string())?;
        wait_dead(&t, p.n, Duration::from_secs(30))?;
        replaying.store(true, Ordering::SeqCst);
        let start_ns = unix_ns(SystemTime::now());
        let started = Instant::now();
        let replay = t
            .replay_dead(&DeadFilter::default(), p.rate, None)
            .map_err(|e| e.to_string())?;
        let end = replay.wait();
        let to_done = started.elapsed();
        // The last revival's run follows it within a poll of the node;
        // what is not run by then counts as not run.
        rec.wait_all(SystemTime::now() + Duration::from_secs(10));
        Ok(summarize(&rec, p, (unix_ns(due), start_ns), to_done, end))
    })();
    t.shutdown().map_err(|e| e.to_string())?;
    out
}

/// The run's figures from the records.
fn summarize(
    rec: &Recorder,
    p: &ReplayParams,
    (due_ns, start_ns): (i64, i64),
    to_done: Duration,
    end: wheel_durable::ReplayProgress,
) -> ReplayRun {
    // The recorder counts from the dead letters' first due time (`due_ns`);
    // the pace counts from the replay's start.
    let mut firsts: Vec<i64> = (0..p.n)
        .filter_map(|i| rec.lateness_of(i))
        .map(|late| late + due_ns)
        .collect();
    let last = firsts.iter().max().copied();
    let duplicates = (0..p.n)
        .map(|i| u64::from(rec.runs_of(i).saturating_sub(1)))
        .sum();
    let ended = match end.state {
        ReplayState::Done => None,
        other => Some(format!("{other:?}")),
    };
    ReplayRun {
        to_done,
        to_last_run: last.map(|l| Duration::from_nanos((l - start_ns).max(0) as u64)),
        revived: end.revived,
        ran: rec.fired(),
        duplicates,
        ahead: ahead_of_pace(&mut firsts, start_ns, p.rate),
        ended,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_before_its_slot_is_ahead_of_the_pace() {
        // At 10/s, the k-th earliest run may start k * 100 ms after the
        // start at the soonest.
        let mut on_pace = vec![0, 350_000_000, 100_000_000, 200_000_000];
        assert_eq!(ahead_of_pace(&mut on_pace, 0, 10.0), 0);
        let mut burst = vec![0, 1, 2, 300_000_000];
        assert_eq!(ahead_of_pace(&mut burst, 0, 10.0), 2);
    }

    #[test]
    fn every_dead_letter_is_replayed_once_on_pace() {
        let path = super::super::temp_store("replay-test");
        let p = ReplayParams { n: 20, rate: 100.0 };
        let r = run(&Store::Embedded(path.clone()), &p);
        super::super::remove_store(&path);
        let r = r.unwrap();
        assert_eq!(r.check(p.n), Check::Passed, "{r:?}");
        // The 20th revival's slot is 190 ms after the start.
        assert!(r.to_done >= Duration::from_millis(190), "{r:?}");
    }
}
