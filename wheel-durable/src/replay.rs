//! Replaying dead letters in bulk: [`Replay`], its progress, and the
//! thread that walks the dead index.
//!
//! A replay is one thread of the handle that started it. It walks the dead
//! letters in failure order with a cursor (the store's dead listing,
//! strictly after the last (failure time, key) read), so dead letters that
//! do not match are passed over at the speed of a read and never hold it
//! up. Each matching one is revived as `retry_dead` does (pending, due now
//! by the store's clock, attempts reset), the `n`-th (from 0) no earlier
//! than `n / rate` seconds after the start: evenly paced, never a burst.
//!
//! Invariants:
//! - Only dead letters that failed up to the store's clock read at the
//!   start, that millisecond included, are taken: a replay started as
//!   soon as the last letter failed takes it too. The walk revives nothing
//!   until that millisecond has passed (the clock was read before its
//!   answer came, so a millisecond after the answer the store's clock is
//!   past it), so one that fails later (a revived letter failing again
//!   included) lies past the walk's end, and a replay revives a key at
//!   most once.
//! - Just before a revival the letter is read again; one that changed
//!   since its page was read (revived, removed, or failed again) is
//!   counted as skipped and left alone.
//! - The counters only grow, and only the replay's thread writes them;
//!   the state leaves `Running` once, when the thread ends.
//! - The handle that started a replay ([`Replays`]) stops it and joins its
//!   thread on shutdown before the store closes: what was revived stays
//!   revived, the rest stays dead.
//!
//! Node state: none of the node's: the thread calls the store only.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::dead_filter::DeadFilter;
use super::store::{Due, Millis, Store};
use super::sync::{lock, wait_until_std};
use super::{DurableError, Listing, TimerState};

/// The fastest replay, in revivals per second.
pub const MAX_REPLAY_RATE: f64 = 1_000_000.0;

/// Dead letters read per page of the walk.
const PAGE: usize = 100;

/// Where a replay is.
///
/// # Examples
///
/// ```
/// use wheel_durable::ReplayState;
/// assert!(ReplayState::Running.is_running());
/// assert!(!ReplayState::Done.is_running());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplayState {
    /// Still walking the dead letters.
    Running,
    /// Every matching dead letter (up to the limit) was taken.
    Done,
    /// [`Replay::cancel`] stopped it.
    Cancelled,
    /// The handle that ran it shut down.
    Stopped,
    /// A store call failed; what was revived stays revived, and a new
    /// replay with the same filter takes up the rest.
    Failed(DurableError),
}

impl ReplayState {
    /// True while the replay runs.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!wheel_durable::ReplayState::Cancelled.is_running());
    /// ```
    pub fn is_running(&self) -> bool {
        matches!(self, ReplayState::Running)
    }
}

/// A replay's counts so far, and its state.
///
/// `matched = revived + skipped`, but for the one letter being revived at
/// the moment the counts are read.
///
/// # Examples
///
/// ```
/// let p = wheel_durable::ReplayProgress::default();
/// assert_eq!((p.matched, p.revived, p.skipped), (0, 0, 0));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayProgress {
    /// Dead letters that matched the filter so far.
    pub matched: u64,
    /// Of those, revived.
    pub revived: u64,
    /// Of those, left alone: changed since the walk read them (revived,
    /// removed or failed again by someone else).
    pub skipped: u64,
    /// Where the replay is.
    pub state: ReplayState,
}

impl Default for ReplayProgress {
    fn default() -> ReplayProgress {
        ReplayProgress {
            matched: 0,
            revived: 0,
            skipped: 0,
            state: ReplayState::Running,
        }
    }
}

/// What a replay's thread and its handles share.
#[derive(Debug, Default)]
struct Shared {
    matched: AtomicU64,
    revived: AtomicU64,
    skipped: AtomicU64,
    /// The end asked for (cancel, stop), then the end reached.
    ends: Mutex<Ends>,
    /// Signalled when an end is asked for or reached.
    changed: Condvar,
    /// Woken when the thread ends, for async waiters.
    #[cfg(feature = "tokio")]
    finished: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Ends {
    asked: Option<ReplayState>,
    reached: Option<ReplayState>,
}

/// A running (or finished) replay of dead letters: see
/// [`DurableTimers::replay_dead`](crate::DurableTimers::replay_dead).
/// Cheap to clone; every clone names the same replay.
///
/// # Examples
///
/// ```
/// use wheel_durable::{DeadFilter, DurableTimers, ReplayState};
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
/// let replay = timers.replay_dead(&DeadFilter::default().reason("HTTP 503"), 50.0, None)?;
/// let end = replay.wait();
/// assert_eq!((end.matched, end.state), (0, ReplayState::Done));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Replay {
    shared: Arc<Shared>,
}

impl Replay {
    /// The counts so far and the state; never waits.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let replay = timers.replay_dead(&Default::default(), 10.0, Some(5))?;
    /// let p = replay.progress();
    /// assert!(p.revived <= 5);
    /// # Ok(()) }
    /// ```
    pub fn progress(&self) -> ReplayProgress {
        let state = lock(&self.shared.ends)
            .reached
            .clone()
            .unwrap_or(ReplayState::Running);
        // Read after the state, so a finished replay's counts are final.
        let s = &self.shared;
        ReplayProgress {
            matched: s.matched.load(Ordering::SeqCst),
            revived: s.revived.load(Ordering::SeqCst),
            skipped: s.skipped.load(Ordering::SeqCst),
            state,
        }
    }

    /// Stops the replay before its next revival; returns at once (a
    /// revival under way completes). Does nothing to a finished replay.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::ReplayState;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let replay = timers.replay_dead(&Default::default(), 1.0, None)?;
    /// replay.cancel();
    /// assert!(matches!(replay.wait().state, ReplayState::Cancelled | ReplayState::Done));
    /// # Ok(()) }
    /// ```
    pub fn cancel(&self) {
        self.ask(ReplayState::Cancelled);
    }

    fn ask(&self, end: ReplayState) {
        let mut ends = lock(&self.shared.ends);
        if ends.asked.is_none() {
            ends.asked = Some(end);
        }
        self.shared.changed.notify_all();
    }

    /// Blocks until the replay ends; its final progress.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let end = timers.replay_dead(&Default::default(), 100.0, None)?.wait();
    /// assert!(!end.state.is_running());
    /// # Ok(()) }
    /// ```
    pub fn wait(&self) -> ReplayProgress {
        let mut ends = lock(&self.shared.ends);
        while ends.reached.is_none() {
            ends = self
                .shared
                .changed
                .wait(ends)
                .unwrap_or_else(|e| e.into_inner());
        }
        drop(ends);
        self.progress()
    }

    /// [`wait`](Self::wait), awaited (feature `tokio`): no thread blocks.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = std::sync::Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?);
    /// let timers = wheel_durable::AsyncTimers::new(timers);
    /// let replay = timers.replay_dead(&Default::default(), 100.0, None).await?;
    /// assert!(!replay.wait_async().await.state.is_running());
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn wait_async(&self) -> ReplayProgress {
        loop {
            let mut notified = std::pin::pin!(self.shared.finished.notified());
            // Registered before the check, so an end between the two wakes it.
            notified.as_mut().enable();
            let p = self.progress();
            if !p.state.is_running() {
                return p;
            }
            notified.await;
        }
    }
}

/// The replays one handle started, so that its shutdown stops them.
#[derive(Debug, Default)]
pub(crate) struct Replays {
    running: Mutex<Vec<(Replay, JoinHandle<()>)>>,
}

impl Replays {
    /// Starts a replay over `store`, checked first: the rate, the limit,
    /// the filter's time range, then one read of the store's clock (the
    /// walk's end).
    pub(crate) fn start(
        &self,
        store: Arc<dyn Store>,
        filter: &DeadFilter,
        rate: f64,
        limit: Option<u64>,
    ) -> Result<Replay, DurableError> {
        if !(rate > 0.0 && rate <= MAX_REPLAY_RATE) {
            return Err(DurableError::InvalidReplay(format!(
                "the rate must be more than 0 and at most {MAX_REPLAY_RATE} revivals per second, not {rate}"
            )));
        }
        if limit == Some(0) {
            return Err(DurableError::InvalidReplay(
                "the limit must be at least 1 (or none)".into(),
            ));
        }
        let (since, before) = filter.bounds()?;
        // The start's millisecond is in the walk: the letters that failed
        // in it failed before this call.
        let now = store.counts()?.now.saturating_add(1);
        let not_before = Instant::now() + Duration::from_millis(1);
        let walk = Walk {
            store,
            filter: filter.clone(),
            since,
            not_before,
            end: before.map_or(now, |b| b.min(now)),
            interval: 1.0 / rate,
            limit: limit.unwrap_or(u64::MAX),
        };
        let replay = Replay {
            shared: Arc::new(Shared::default()),
        };
        let mut running = lock(&self.running);
        // Finished replays' threads have ended: joining them does not wait.
        running.retain(|(r, _)| r.progress().state.is_running());
        let thread_replay = replay.clone();
        let thread = std::thread::Builder::new()
            .name("wheel-replay".into())
            .spawn(move || walk.run(&thread_replay))
            .map_err(|e| DurableError::Config(format!("cannot start a replay thread: {e}")))?;
        running.push((replay.clone(), thread));
        Ok(replay)
    }

    /// Stops every running replay and waits for their threads.
    pub(crate) fn stop_all(&self) {
        let running = std::mem::take(&mut *lock(&self.running));
        for (replay, _) in &running {
            replay.ask(ReplayState::Stopped);
        }
        for (_, thread) in running {
            // A panic in a replay's thread was already reported by the
            // panic hook; shutdown goes on.
            let _ = thread.join();
        }
    }
}

/// What a replay's thread walks.
struct Walk {
    store: Arc<dyn Store>,
    filter: DeadFilter,
    /// Failed at or after this (store time).
    since: Option<Millis>,
    /// Failed before this (store time): just past the start's clock, or
    /// the filter's bound if earlier.
    end: Millis,
    /// No revival before this: the store's clock has then passed the
    /// start's millisecond, so what a revival makes fail again fails
    /// after `end`.
    not_before: Instant,
    /// Seconds between two revivals.
    interval: f64,
    limit: u64,
}

impl Walk {
    fn run(self, replay: &Replay) {
        let state = match self.walk(replay) {
            Ok(state) => state,
            Err(e) => ReplayState::Failed(e),
        };
        let s = &replay.shared;
        lock(&s.ends).reached = Some(state);
        s.changed.notify_all();
        #[cfg(feature = "tokio")]
        s.finished.notify_waiters();
    }

    /// The walk itself; the state it ended in.
    fn walk(&self, replay: &Replay) -> Result<ReplayState, DurableError> {
        let s = &replay.shared;
        if let Some(end) = pause(replay, Some(self.not_before)) {
            return Ok(end);
        }
        let started = Instant::now();
        // Strictly after (since - 1, ""): every key is longer than "", so
        // this starts at the first letter that failed at `since - 1`; the
        // few of that millisecond are passed over below.
        let mut after: Option<(Millis, String)> = self
            .since
            .filter(|&t| t > 0)
            .map(|t| (t - 1, String::new()));
        loop {
            let at = after.as_ref().map(|(t, k)| (*t, k.as_str()));
            let page = self.store.list(Listing::Dead, at, PAGE)?;
            let last = page.len() < PAGE;
            for listed in page {
                if listed.score >= self.end {
                    return Ok(ReplayState::Done);
                }
                after = Some((listed.score, listed.info.key.clone()));
                if self.since.is_some_and(|t| listed.score < t)
                    || !self.filter.matches(&listed.info)
                {
                    continue;
                }
                let n = s.matched.load(Ordering::SeqCst);
                // Past what an `Instant` can hold (a rate of a few per
                // century): no deadline, the replay waits for its end.
                let due = Duration::try_from_secs_f64(n as f64 * self.interval)
                    .ok()
                    .and_then(|d| started.checked_add(d));
                if let Some(end) = pause(replay, due) {
                    return Ok(end);
                }
                s.matched.fetch_add(1, Ordering::SeqCst);
                if self.revive(&listed.info.key, listed.score)? {
                    s.revived.fetch_add(1, Ordering::SeqCst);
                } else {
                    s.skipped.fetch_add(1, Ordering::SeqCst);
                }
                if n + 1 >= self.limit {
                    return Ok(ReplayState::Done);
                }
            }
            if last {
                return Ok(ReplayState::Done);
            }
        }
    }

    /// Revives `key` if it is still the dead letter that failed at
    /// `failed`; false if it changed since its page was read.
    fn revive(&self, key: &str, failed: Millis) -> Result<bool, DurableError> {
        let same = self.store.get(key)?.is_some_and(|now| {
            now.state == TimerState::Dead
                && now.failed_at.map(super::time::millis_of) == Some(Ok(failed))
        });
        if !same {
            return Ok(false);
        }
        self.store.retry_dead(key, Due::After(0))
    }
}

/// Waits until `due` (`None`: never) unless an end is asked for first;
/// that end, if any.
fn pause(replay: &Replay, due: Option<Instant>) -> Option<ReplayState> {
    let s = &replay.shared;
    let mut ends = lock(&s.ends);
    loop {
        if let Some(end) = &ends.asked {
            return Some(end.clone());
        }
        let Some(due) = due else {
            ends = s.changed.wait(ends).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let (guard, passed) = wait_until_std(&s.changed, ends, due);
        ends = guard;
        if passed {
            return ends.asked.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay() -> Replay {
        Replay {
            shared: Arc::new(Shared::default()),
        }
    }

    #[test]
    fn a_pause_with_no_deadline_ends_when_an_end_is_asked_for() {
        let r = replay();
        let other = r.clone();
        let waiter = std::thread::spawn(move || pause(&other, None));
        r.ask(ReplayState::Stopped);
        // The first end asked for is the one kept.
        r.cancel();
        assert_eq!(waiter.join().unwrap(), Some(ReplayState::Stopped));
        assert_eq!(pause(&r, Some(Instant::now())), Some(ReplayState::Stopped));
    }

    #[test]
    fn a_pause_past_its_deadline_returns_at_once_without_an_end() {
        assert_eq!(pause(&replay(), Some(Instant::now())), None);
    }
}
