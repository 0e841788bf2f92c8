//! Workload 6: `DelayQueue`s (values pulled out when due), both on a clock the
//! workload moves by hand, so the figures are the queues' and not the waiting:
//! tokio-util's on a paused tokio clock, ours on a `wheel::ManualClock`.
//!
//! - insert+take: insert `n` items with increasing delays (1 ms to [`TAKE_SPAN_MS`]),
//!   move the clock past the last (not timed), take all. Checked: each taken
//!   once, in non-decreasing deadline order, none before its deadline.
//! - insert+remove: insert `n` items due uniformly over 1..60 000 ms, remove all in a
//!   random order. Checked: every remove returns its item; nothing is left.

use super::Check;
use super::single::{SPAN, per_op};
use crate::rng::Rng;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// insert+take delays rise evenly from 1 ms to this.
pub const TAKE_SPAN_MS: u64 = 1_000;

/// A delay queue as workload 6 drives it, on a clock it moves by hand.
pub trait DelayQueueLike {
    /// What `insert` hands back for `remove`.
    type Key: Copy;
    /// Insert `value` due `delay_ms` from the queue's current time.
    fn insert(&mut self, value: u64, delay_ms: u64) -> Self::Key;
    /// Remove a pending item.
    fn remove(&mut self, key: Self::Key) -> Option<u64>;
    /// Move the hand-driven clock forward (not timed).
    fn advance_clock(&mut self, ms: u64);
    /// The next due item, without blocking.
    fn take_due(&mut self) -> Option<u64>;
    /// Run `f` in whatever context the queue needs (tokio's runtime).
    fn run<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R
    where
        Self: Sized,
    {
        f(self)
    }
}

/// Result of one run.
#[derive(Debug, Clone)]
pub struct DqOutcome {
    /// Nanoseconds per item (insert+take or insert+remove).
    pub ns_per_item: f64,
    /// The timed part's duration.
    pub elapsed: Duration,
    /// The run's check.
    pub check: Check,
}

impl DqOutcome {
    /// The outcome of a run of `n` items whose timed part took `elapsed`;
    /// checked against `errors` (see [`Check::from_errors`]).
    fn new(elapsed: Duration, n: usize, errors: &[(&str, u64)]) -> DqOutcome {
        DqOutcome {
            ns_per_item: per_op(elapsed, n),
            elapsed,
            check: Check::from_errors(errors),
        }
    }
}

/// insert+take of `n` items.
pub fn insert_take<Q: DelayQueueLike>(mut q: Q, n: usize) -> DqOutcome {
    let delay = |i: usize| 1 + (i as u64 * (TAKE_SPAN_MS - 1)) / n.max(1) as u64;
    let mut taken: Vec<u64> = Vec::with_capacity(n);
    let (elapsed, early_takes) = q.run(|q| {
        let t = Instant::now();
        for i in 0..n {
            black_box(q.insert(i as u64, delay(i)));
        }
        let inserting = t.elapsed();
        // Nothing is due before the first deadline.
        let early = u64::from(q.take_due().is_some());
        q.advance_clock(TAKE_SPAN_MS);
        let t = Instant::now();
        while let Some(v) = q.take_due() {
            taken.push(v);
        }
        (inserting + t.elapsed(), early)
    });
    let mut seen = vec![false; n];
    let (mut twice, mut unknown, mut out_of_order) = (0u64, 0u64, 0u64);
    let mut last = 0;
    for &v in &taken {
        match seen.get_mut(v as usize) {
            Some(s) if *s => twice += 1,
            Some(s) => *s = true,
            None => {
                unknown += 1;
                continue;
            }
        }
        let d = delay(v as usize);
        if d < last {
            out_of_order += 1;
        }
        last = last.max(d);
    }
    let missing = seen.iter().filter(|s| !**s).count() as u64;
    DqOutcome::new(
        elapsed,
        n,
        &[
            ("taken before due", early_takes),
            ("taken twice", twice),
            ("unknown items", unknown),
            ("taken before an earlier deadline", out_of_order),
            ("never taken", missing),
        ],
    )
}

/// insert+remove of `n` items.
pub fn insert_remove<Q: DelayQueueLike>(mut q: Q, n: usize, seed: u64) -> DqOutcome {
    let mut rng = Rng::new(seed);
    let delays: Vec<u64> = (0..n).map(|_| rng.range_inclusive(1, SPAN)).collect();
    let mut order: Vec<u32> = (0..n as u32).collect();
    rng.shuffle(&mut order);
    let mut keys: Vec<Q::Key> = Vec::with_capacity(n);
    let (elapsed, wrong, left) = q.run(|q| {
        let t = Instant::now();
        for (i, &d) in delays.iter().enumerate() {
            keys.push(q.insert(i as u64, d));
        }
        let mut wrong = 0u64;
        for &i in &order {
            if q.remove(keys[i as usize]) != Some(u64::from(i)) {
                wrong += 1;
            }
        }
        let elapsed = t.elapsed();
        q.advance_clock(SPAN + 1);
        let mut left = 0u64;
        while q.take_due().is_some() {
            left += 1;
        }
        (elapsed, wrong, left)
    });
    DqOutcome::new(
        elapsed,
        n,
        &[
            ("removes that missed", wrong),
            ("removed items taken", left),
        ],
    )
}

/// tokio-util's `DelayQueue<u64>` on a paused current-thread runtime.
pub struct TokioDq(crate::peers::tokio_dq::TokioDelayQueue);

impl TokioDq {
    /// A fresh queue and runtime.
    pub fn new(capacity: usize) -> TokioDq {
        TokioDq(crate::peers::tokio_dq::TokioDelayQueue::with_capacity(
            capacity,
        ))
    }
}

impl DelayQueueLike for TokioDq {
    type Key = tokio_util::time::delay_queue::Key;

    fn insert(&mut self, value: u64, delay_ms: u64) -> Self::Key {
        self.0.insert_after(value, Duration::from_millis(delay_ms))
    }

    fn remove(&mut self, key: Self::Key) -> Option<u64> {
        use crate::peers::TimerQueue;
        self.0.cancel(key)
    }

    fn advance_clock(&mut self, ms: u64) {
        self.0.advance_clock(Duration::from_millis(ms));
    }

    fn take_due(&mut self) -> Option<u64> {
        self.0.poll_one()
    }

    fn run<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let rt = self.0.runtime();
        let _ctx = rt.enter();
        f(self)
    }
}

/// tokio-util's `DelayQueue<u64>` inside a `std::sync::Mutex`, locked once per
/// call: what sharing it between threads would cost at the least (its own
/// methods all take `&mut self`), to compare with our shared queue. Each
/// call is [`TokioDq`]'s, under the lock.
pub struct TokioDqLocked(std::sync::Mutex<TokioDq>);

impl TokioDqLocked {
    /// A fresh queue and runtime.
    pub fn new(capacity: usize) -> TokioDqLocked {
        TokioDqLocked(std::sync::Mutex::new(TokioDq::new(capacity)))
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, TokioDq> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl DelayQueueLike for TokioDqLocked {
    type Key = tokio_util::time::delay_queue::Key;

    fn insert(&mut self, value: u64, delay_ms: u64) -> Self::Key {
        self.queue().insert(value, delay_ms)
    }

    fn remove(&mut self, key: Self::Key) -> Option<u64> {
        self.queue().remove(key)
    }

    fn advance_clock(&mut self, ms: u64) {
        self.queue().advance_clock(ms);
    }

    fn take_due(&mut self) -> Option<u64> {
        self.queue().take_due()
    }

    fn run<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let rt = self.queue().0.runtime();
        let _ctx = rt.enter();
        f(self)
    }
}

/// Ours: `wheel::DelayQueue<u64>` on a `ManualClock`, default 1 ms tick,
/// used through its shared (`&self`) methods, each of which takes its lock.
pub struct OurDq {
    queue: wheel::DelayQueue<u64>,
    clock: wheel::ManualClock,
}

impl OurDq {
    /// A fresh queue pre-sized for `capacity` items, on its own manual clock.
    pub fn new(capacity: usize) -> OurDq {
        let clock = wheel::ManualClock::new();
        let queue = wheel::DelayQueue::builder()
            .clock(clock.clone())
            .capacity(capacity)
            .build()
            .expect("default delay queue settings are valid");
        OurDq { queue, clock }
    }
}

/// The key of an insert into our queue, which the workloads never close.
fn inserted(r: Result<wheel::DelayKey, wheel::Closed<u64>>) -> wheel::DelayKey {
    match r {
        Ok(key) => key,
        Err(_) => panic!("insert into an open queue returned Closed"),
    }
}

impl DelayQueueLike for OurDq {
    type Key = wheel::DelayKey;

    fn insert(&mut self, value: u64, delay_ms: u64) -> wheel::DelayKey {
        inserted(self.queue.insert(value, Duration::from_millis(delay_ms)))
    }

    fn remove(&mut self, key: wheel::DelayKey) -> Option<u64> {
        self.queue.remove(key)
    }

    fn advance_clock(&mut self, ms: u64) {
        self.clock.advance(Duration::from_millis(ms));
    }

    fn take_due(&mut self) -> Option<u64> {
        self.queue.try_take()
    }
}

/// Ours again, used through [`wheel::DelayQueue::exclusive`]: the same queue
/// borrowed `&mut`, without its lock, as tokio-util's queue is always used.
pub struct OurDqExclusive(OurDq);

impl OurDqExclusive {
    /// A fresh queue pre-sized for `capacity` items, on its own manual clock.
    pub fn new(capacity: usize) -> OurDqExclusive {
        OurDqExclusive(OurDq::new(capacity))
    }
}

impl DelayQueueLike for OurDqExclusive {
    type Key = wheel::DelayKey;

    fn insert(&mut self, value: u64, delay_ms: u64) -> wheel::DelayKey {
        inserted(
            self.0
                .queue
                .exclusive()
                .insert(value, Duration::from_millis(delay_ms)),
        )
    }

    fn remove(&mut self, key: wheel::DelayKey) -> Option<u64> {
        self.0.queue.exclusive().remove(key)
    }

    fn advance_clock(&mut self, ms: u64) {
        self.0.advance_clock(ms);
    }

    fn take_due(&mut self) -> Option<u64> {
        self.0.queue.exclusive().try_take()
    }
}

/// The `DelayQueue` implementations, and how each is used. The queues are
/// compared like for like (see [`DqPeer::compared_with`]): used by one owner
/// (`&mut`, the only way tokio-util's queue can be used) or shared (`&self`,
/// tokio-util's behind a mutex).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DqPeer {
    /// `wheel::DelayQueue` through its shared methods (a lock per call).
    Ours,
    /// `wheel::DelayQueue` through [`wheel::DelayQueue::exclusive`].
    OursExclusive,
    /// tokio-util's `DelayQueue`.
    TokioUtil,
    /// tokio-util's `DelayQueue` in a `std::sync::Mutex`.
    TokioUtilLocked,
}

impl DqPeer {
    /// All of them, ours first.
    pub const ALL: [DqPeer; 4] = [
        DqPeer::Ours,
        DqPeer::OursExclusive,
        DqPeer::TokioUtil,
        DqPeer::TokioUtilLocked,
    ];

    /// The name shown in tables.
    pub fn name(self) -> &'static str {
        match self {
            DqPeer::Ours => "wheel::DelayQueue, shared (ours)",
            DqPeer::OursExclusive => "wheel::DelayQueue, exclusive (ours)",
            DqPeer::TokioUtil => "tokio-util DelayQueue",
            DqPeer::TokioUtilLocked => "tokio-util DelayQueue in a Mutex",
        }
    }

    /// Our queue used the same way: exclusively for tokio-util's bare queue,
    /// shared for tokio-util's behind a mutex (ours map to themselves).
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_bench::workloads::delay_queue::DqPeer;
    /// assert_eq!(DqPeer::TokioUtil.compared_with(), DqPeer::OursExclusive);
    /// assert_eq!(DqPeer::TokioUtilLocked.compared_with(), DqPeer::Ours);
    /// assert_eq!(DqPeer::Ours.compared_with(), DqPeer::Ours);
    /// ```
    pub fn compared_with(self) -> DqPeer {
        match self {
            DqPeer::Ours | DqPeer::TokioUtilLocked => DqPeer::Ours,
            DqPeer::OursExclusive | DqPeer::TokioUtil => DqPeer::OursExclusive,
        }
    }

    /// One insert+take run of `n` items.
    pub fn insert_take(self, n: usize) -> DqOutcome {
        match self {
            DqPeer::Ours => insert_take(OurDq::new(n), n),
            DqPeer::OursExclusive => insert_take(OurDqExclusive::new(n), n),
            DqPeer::TokioUtil => insert_take(TokioDq::new(n), n),
            DqPeer::TokioUtilLocked => insert_take(TokioDqLocked::new(n), n),
        }
    }

    /// One insert+remove run of `n` items.
    pub fn insert_remove(self, n: usize, seed: u64) -> DqOutcome {
        match self {
            DqPeer::Ours => insert_remove(OurDq::new(n), n, seed),
            DqPeer::OursExclusive => insert_remove(OurDqExclusive::new(n), n, seed),
            DqPeer::TokioUtil => insert_remove(TokioDq::new(n), n, seed),
            DqPeer::TokioUtilLocked => insert_remove(TokioDqLocked::new(n), n, seed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A broken queue: everything is due at once, last inserted first, and remove
    /// finds nothing.
    struct Stack(Vec<u64>);
    impl DelayQueueLike for Stack {
        type Key = ();
        fn insert(&mut self, value: u64, _delay_ms: u64) {
            self.0.push(value);
        }
        fn remove(&mut self, _: ()) -> Option<u64> {
            None
        }
        fn advance_clock(&mut self, _ms: u64) {}
        fn take_due(&mut self) -> Option<u64> {
            self.0.pop()
        }
    }

    #[test]
    fn checks_catch_a_broken_queue() {
        let c = insert_take(Stack(Vec::new()), 1000).check;
        assert!(
            matches!(c, Check::Failed(ref s) if s.contains("before due")),
            "{c:?}"
        );
        let c = insert_remove(Stack(Vec::new()), 1000, 2).check;
        assert!(
            matches!(c, Check::Failed(ref s) if s.contains("missed")),
            "{c:?}"
        );
    }

    #[test]
    fn ours_passes() {
        assert_eq!(insert_take(OurDq::new(3000), 3000).check, Check::Passed);
        assert_eq!(
            insert_remove(OurDq::new(3000), 3000, 1).check,
            Check::Passed
        );
    }

    #[test]
    fn every_peer_passes() {
        for peer in DqPeer::ALL {
            assert_eq!(peer.insert_take(2000).check, Check::Passed, "{peer:?}");
            assert_eq!(peer.insert_remove(2000, 3).check, Check::Passed, "{peer:?}");
        }
    }

    #[test]
    fn tokio_util_passes() {
        assert_eq!(insert_take(TokioDq::new(3000), 3000).check, Check::Passed);
        assert_eq!(
            insert_remove(TokioDq::new(3000), 3000, 1).check,
            Check::Passed
        );
    }
}
