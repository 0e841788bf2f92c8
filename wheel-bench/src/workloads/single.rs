//! Single-threaded workloads over [`TimerQueue`], on a tick clock (1 tick = 1 ms
//! for the peers that think in durations).
//!
//! 1. insert+cancel: `n` timers due uniformly over `1..=SPAN`, then all cancelled
//!    in a random order, then the clock moved past `SPAN` (nothing may fire).
//!    That last step is timed too, so lazy-cancel designs pay for their
//!    tombstones. Cost per insert+cancel pair.
//! 2. insert+expire: `n` timers due uniformly over `1..=SPAN`, then one
//!    `advance(SPAN)` firing all. Checked: each fired exactly once, in
//!    non-decreasing deadline order. Cost per timer.
//! 3. churn: `pending` connections each with one timer due `1..=CHURN_MAX`
//!    ahead; each step picks a random connection, cancels its timer (if it has not
//!    fired) and arms a new one `CHURN_MIN..=CHURN_MAX` ahead; every
//!    `STEPS_PER_TICK` steps the clock moves one tick, firing what is due.
//!    Checked: every firing timer is the connection's current one and not early;
//!    at the end nothing due is left. Cost per step.
//! 4. memory: live heap bytes per pending timer (a) right after inserting `n`
//!    timers, (b) after a long churn, where a queue may also hold what its
//!    cancelled timers left behind.
//!
//! Inputs (deadlines, cancel order) are drawn from the same seed for every
//! implementation and prepared before the clock starts. The random draws inside
//! the churn loop and the per-connection bookkeeping are the same for every
//! implementation, the floor included.

use super::Check;
use crate::alloc::Counting;
use crate::peers::TimerQueue;
use crate::rng::Rng;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Deadlines of insert+cancel, insert+expire and memory are uniform over `1..=SPAN`.
pub const SPAN: u64 = 60_000;
/// Churn re-arms a connection's timer this many ticks ahead at least...
pub const CHURN_MIN: u64 = 1_000;
/// ...and at most.
pub const CHURN_MAX: u64 = 30_000;
/// Churn steps per clock tick.
pub const STEPS_PER_TICK: u64 = 1_000;

/// One run's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Nanoseconds per operation (pair, timer or step).
    pub ns_per_op: f64,
    /// The timed part's duration.
    pub elapsed: Duration,
    /// Wall time of the whole run, setup included (for the skip estimate).
    pub wall: Duration,
    /// The run's own output check.
    pub check: Check,
    /// Timers that fired during the timed part.
    pub fired: u64,
}

/// The outcome of a run of `ops` operations whose timed part took
/// `elapsed`, the whole run having started at `wall`.
fn outcome(elapsed: Duration, ops: usize, wall: Instant, check: Check, fired: u64) -> Outcome {
    Outcome {
        ns_per_op: per_op(elapsed, ops),
        elapsed,
        wall: wall.elapsed(),
        check,
        fired,
    }
}

/// `check()` for a real timer; the floor keeps no order, so nothing of its
/// output can be checked.
fn checked<Q: TimerQueue>(q: &Q, check: impl FnOnce() -> Check) -> Check {
    if q.is_timer() {
        check()
    } else {
        Check::NotApplicable
    }
}

/// The inputs shared by insert+cancel, insert+expire and memory.
pub struct Inputs {
    /// Deadline of timer `i`.
    pub deadlines: Vec<u64>,
    /// The cancel order (a permutation of `0..n`).
    pub cancel_order: Vec<u32>,
}

impl Inputs {
    /// Draw the inputs for `n` timers.
    pub fn new(n: usize, seed: u64) -> Inputs {
        let mut rng = Rng::new(seed);
        let deadlines = (0..n).map(|_| rng.range_inclusive(1, SPAN)).collect();
        let mut cancel_order: Vec<u32> = (0..n as u32).collect();
        rng.shuffle(&mut cancel_order);
        Inputs {
            deadlines,
            cancel_order,
        }
    }

    /// Number of timers.
    pub fn len(&self) -> usize {
        self.deadlines.len()
    }

    /// Whether there are no timers.
    pub fn is_empty(&self) -> bool {
        self.deadlines.is_empty()
    }
}

/// Workload 1: insert `n`, cancel all in random order, advance past the end.
pub fn insert_cancel<Q: TimerQueue>(mut q: Q, inputs: &Inputs) -> Outcome {
    let wall = Instant::now();
    let n = inputs.len();
    let mut handles: Vec<Q::Handle> = Vec::with_capacity(n);
    let mut fired: Vec<u64> = Vec::with_capacity(16);
    let mut wrong_cancels = 0u64;
    let elapsed = q.run(|q| {
        let t = Instant::now();
        for (i, &d) in inputs.deadlines.iter().enumerate() {
            handles.push(q.insert(d, i as u64));
        }
        for &i in &inputs.cancel_order {
            if q.cancel(handles[i as usize]) != Some(u64::from(i)) {
                wrong_cancels += 1;
            }
        }
        q.advance(SPAN + 1, |id| fired.push(id));
        t.elapsed()
    });
    let check = checked(&q, || {
        Check::from_errors(&[
            ("cancels that missed", wrong_cancels),
            ("cancelled timers fired", fired.len() as u64),
        ])
    });
    drop(black_box(q));
    outcome(elapsed, n, wall, check, fired.len() as u64)
}

/// Workload 2: insert `n`, then one advance to the end firing all.
pub fn insert_expire<Q: TimerQueue>(mut q: Q, inputs: &Inputs) -> Outcome {
    let wall = Instant::now();
    let n = inputs.len();
    let mut fired: Vec<u64> = Vec::with_capacity(n);
    let elapsed = q.run(|q| {
        let t = Instant::now();
        for (i, &d) in inputs.deadlines.iter().enumerate() {
            black_box(q.insert(d, i as u64));
        }
        q.advance(SPAN, |id| fired.push(id));
        t.elapsed()
    });
    let check = checked(&q, || check_expired(&fired, &inputs.deadlines));
    drop(black_box(q));
    outcome(elapsed, n, wall, check, fired.len() as u64)
}

/// Each id fired exactly once, deadlines in non-decreasing order of firing.
fn check_expired(fired: &[u64], deadlines: &[u64]) -> Check {
    let mut seen = vec![false; deadlines.len()];
    let (mut unknown, mut twice, mut out_of_order) = (0u64, 0u64, 0u64);
    let mut last = 0u64;
    for &id in fired {
        let Some(s) = seen.get_mut(id as usize) else {
            unknown += 1;
            continue;
        };
        if *s {
            twice += 1;
        }
        *s = true;
        let d = deadlines[id as usize];
        if d < last {
            out_of_order += 1;
        }
        last = last.max(d);
    }
    let missing = seen.iter().filter(|s| !**s).count() as u64;
    Check::from_errors(&[
        ("unknown ids fired", unknown),
        ("fired twice", twice),
        ("fired before an earlier deadline", out_of_order),
        ("never fired", missing),
    ])
}

/// A churn connection: its current timer, if armed.
#[derive(Clone, Copy)]
struct Conn<H> {
    handle: Option<H>,
    deadline: u64,
    r#gen: u32,
}

/// The id of connection `conn`'s timer number `gen`.
#[inline]
fn churn_id(conn: usize, r#gen: u32) -> u64 {
    (u64::from(r#gen) << 32) | conn as u64
}

/// Churn parameters.
#[derive(Debug, Clone, Copy)]
pub struct Churn {
    /// Connections, each with one pending timer (until it fires).
    pub pending: usize,
    /// Steps timed.
    pub steps: usize,
    /// A re-armed timer is due this many ticks ahead at least...
    pub min_ahead: u64,
    /// ...and at most; the initial timers are due `1..=max_ahead`.
    pub max_ahead: u64,
    /// The seed of the draws.
    pub seed: u64,
}

impl Churn {
    /// The benchmark's churn: re-armed `CHURN_MIN..=CHURN_MAX` ahead.
    pub fn new(pending: usize, steps: usize, seed: u64) -> Churn {
        Churn {
            pending,
            steps,
            min_ahead: CHURN_MIN,
            max_ahead: CHURN_MAX,
            seed,
        }
    }
}

/// Workload 3: churn.
pub fn churn<Q: TimerQueue>(q: Q, p: &Churn) -> Outcome {
    let wall = Instant::now();
    let mut run = ChurnRun::fill(q, p);
    let elapsed = run.steps();
    let (check, fired) = run.finish();
    outcome(elapsed, p.steps, wall, check, fired)
}

/// Workload 4b: live heap bytes per pending timer after a churn of
/// `p.steps` steps. A queue may hold more under churn than right after
/// its timers were inserted (the [`memory`] workload): room for cancelled
/// timers not cleared yet, spare capacity left by growth. `make` builds the
/// queue inside the counting window; the workload's own connection records
/// are taken off the count, and the bytes are divided by the timers pending
/// at the end (a connection whose timer fired stays empty until it is
/// picked again). Nothing is timed; the churn's output is checked as in
/// [`churn`].
///
/// # Examples
///
/// ```
/// use wheel_bench::peers::wheel::OurWheel;
/// use wheel_bench::workloads::single::{churn_memory, Churn};
/// use wheel_bench::workloads::Check;
///
/// let p = Churn::new(1_000, 50_000, 7);
/// let (bytes, check) = churn_memory(|| OurWheel::with_capacity(1_000), &p);
/// assert_eq!(check, Check::Passed);
/// assert!(bytes > 8.0, "{bytes}"); // at least a timer's deadline
/// ```
pub fn churn_memory<Q: TimerQueue>(make: impl FnOnce() -> Q, p: &Churn) -> (f64, Check) {
    let counting = Counting::start();
    let mut run = ChurnRun::fill(make(), p);
    run.steps();
    let per_timer = run.bytes_per_pending(counting.live_bytes());
    drop(counting);
    (per_timer, run.finish().0)
}

/// A churn between its fill and its check, so that [`churn_memory`] can
/// count the queue's bytes after the steps.
struct ChurnRun<Q: TimerQueue> {
    q: Q,
    conns: Vec<Conn<Q::Handle>>,
    rng: Rng,
    p: Churn,
    /// What the steps counted; `None` until they ran.
    counts: Option<StepCounts>,
}

impl<Q: TimerQueue> ChurnRun<Q> {
    /// Arms one timer per connection, due `1..=p.max_ahead` (not timed).
    fn fill(mut q: Q, p: &Churn) -> ChurnRun<Q> {
        let mut rng = Rng::new(p.seed);
        let mut conns: Vec<Conn<Q::Handle>> = Vec::with_capacity(p.pending);
        q.run(|q| {
            for c in 0..p.pending {
                let deadline = rng.range_inclusive(1, p.max_ahead);
                let handle = q.insert(deadline, churn_id(c, 0));
                conns.push(Conn {
                    handle: Some(handle),
                    deadline,
                    r#gen: 0,
                });
            }
        });
        ChurnRun {
            q,
            conns,
            rng,
            p: *p,
            counts: None,
        }
    }

    /// Runs the `p.steps` steps and returns the time they took.
    fn steps(&mut self) -> Duration {
        let ChurnRun {
            q,
            conns,
            rng,
            p,
            counts,
        } = self;
        q.run(|q| {
            let t = Instant::now();
            *counts = Some(churn_steps(q, conns, rng, p));
            t.elapsed()
        })
    }

    /// `live_bytes`, a count that includes the run's connection records,
    /// less those records, per timer pending now (armed and not fired).
    fn bytes_per_pending(&self, live_bytes: i64) -> f64 {
        let records = self.conns.capacity() * std::mem::size_of::<Conn<Q::Handle>>();
        let pending = self.conns.iter().filter(|c| c.handle.is_some()).count();
        (live_bytes - records as i64) as f64 / pending.max(1) as f64
    }

    /// Ends the run: its check (none early, none stale, no cancel missed,
    /// nothing due left; not applicable to the floor) and the timers fired.
    fn finish(self) -> (Check, u64) {
        let c = self.counts.unwrap_or_default();
        let check = checked(&self.q, || {
            let left_due = self
                .conns
                .iter()
                .filter(|conn| conn.handle.is_some() && conn.deadline <= c.now)
                .count() as u64;
            Check::from_errors(&[
                ("fired early", c.early),
                ("stale or unknown timers fired", c.stale),
                ("cancels that missed", c.wrong_cancels),
                ("due timers never fired", left_due),
            ])
        });
        drop(black_box(self.q));
        (check, c.fired)
    }
}

/// What [`churn_steps`] counted, and where its clock ended.
#[derive(Default)]
struct StepCounts {
    /// Timers fired before their deadline.
    early: u64,
    /// Stale or unknown timers fired.
    stale: u64,
    /// Cancels that did not return the cancelled timer.
    wrong_cancels: u64,
    /// Timers fired.
    fired: u64,
    /// The clock after the last step.
    now: u64,
}

/// The timed steps of [`churn`], from tick 0; a function of their own so
/// that a profiler can count them alone.
#[inline(never)]
fn churn_steps<Q: TimerQueue>(
    q: &mut Q,
    conns: &mut [Conn<Q::Handle>],
    rng: &mut Rng,
    p: &Churn,
) -> StepCounts {
    let (pending, steps) = (p.pending, p.steps);
    let (mut early, mut stale, mut wrong_cancels, mut fired) = (0u64, 0u64, 0u64, 0u64);
    let mut now = 0u64;
    for step in 0..steps as u64 {
        if step % STEPS_PER_TICK == STEPS_PER_TICK - 1 {
            now += 1;
            q.advance(now, |id| {
                fired += 1;
                let c = (id & u64::from(u32::MAX)) as usize;
                match conns.get_mut(c) {
                    Some(conn) if conn.handle.is_some() && conn.r#gen == (id >> 32) as u32 => {
                        if conn.deadline > now {
                            early += 1;
                        }
                        conn.handle = None;
                    }
                    _ => stale += 1,
                }
            });
        }
        let c = rng.below(pending as u64) as usize;
        let conn = &mut conns[c];
        if let Some(h) = conn.handle.take() {
            if q.cancel(h) != Some(churn_id(c, conn.r#gen)) {
                wrong_cancels += 1;
            }
        }
        conn.r#gen = conn.r#gen.wrapping_add(1);
        conn.deadline = now + rng.range_inclusive(p.min_ahead, p.max_ahead);
        conn.handle = Some(q.insert(conn.deadline, churn_id(c, conn.r#gen)));
    }
    StepCounts {
        early,
        stale,
        wrong_cancels,
        fired,
        now,
    }
}

/// Workload 4a: live heap bytes per pending timer. `make` builds the queue (inside
/// the counting window, so the structure's own allocations count); the handles
/// are the caller's storage and are allocated before the window. Afterwards all
/// timers are cancelled as a check.
pub fn memory<Q: TimerQueue>(make: impl FnOnce() -> Q, inputs: &Inputs) -> (f64, Check) {
    let n = inputs.len();
    let mut handles: Vec<Q::Handle> = Vec::with_capacity(n);
    let counting = Counting::start();
    let mut q = make();
    q.run(|q| {
        for (i, &d) in inputs.deadlines.iter().enumerate() {
            handles.push(q.insert(d, i as u64));
        }
    });
    let bytes = counting.live_bytes();
    drop(counting);
    let mut wrong = 0u64;
    q.run(|q| {
        for (i, h) in handles.iter().enumerate() {
            if q.cancel(*h) != Some(i as u64) {
                wrong += 1;
            }
        }
    });
    let check = checked(&q, || Check::from_errors(&[("cancels that missed", wrong)]));
    (bytes as f64 / n.max(1) as f64, check)
}

/// Nanoseconds per operation: `elapsed` over `ops` (over 1 if `ops` is 0).
pub(crate) fn per_op(elapsed: Duration, ops: usize) -> f64 {
    elapsed.as_nanos() as f64 / ops.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::*;

    const N: usize = 5_000;

    fn all_checks_pass<Q: TimerQueue>(make: impl Fn() -> Q) {
        let inputs = Inputs::new(N, 1);
        assert_eq!(insert_cancel(make(), &inputs).check, Check::Passed);
        assert_eq!(insert_expire(make(), &inputs).check, Check::Passed);
        // Short timeouts and connections picked every ~20 ticks, so that many
        // timers fire during the run (100 ticks).
        let p = Churn {
            pending: 20_000,
            steps: 100_000,
            min_ahead: 1,
            max_ahead: 30,
            seed: 2,
        };
        let o = churn(make(), &p);
        assert_eq!(o.check, Check::Passed);
        assert!(o.fired > 100, "only {} fired", o.fired);
        assert_eq!(memory(&make, &inputs).1, Check::Passed);
        assert_eq!(churn_memory(&make, &p).1, Check::Passed);
    }

    #[test]
    fn wheel_passes() {
        all_checks_pass(|| wheel::OurWheel::with_capacity(N));
    }

    #[test]
    fn heap_passes() {
        all_checks_pass(|| heap::LazyHeap::with_capacity(N));
    }

    #[test]
    fn btree_passes() {
        all_checks_pass(btree::BTreeQueue::new);
    }

    #[test]
    fn hhwt_passes() {
        all_checks_pass(hhwt::HhwtQueue::new);
    }

    #[test]
    fn tokio_delay_queue_passes() {
        all_checks_pass(|| tokio_dq::TokioDelayQueue::with_capacity(N));
    }

    #[test]
    fn floor_is_not_checked() {
        let inputs = Inputs::new(N, 1);
        let o = insert_expire(floor::Floor::with_capacity(N), &inputs);
        assert_eq!(o.check, Check::NotApplicable);
    }

    /// The checks can fail: a queue that fires everything at once, early.
    struct Eager(Vec<u64>);
    impl TimerQueue for Eager {
        type Handle = ();
        fn insert(&mut self, _deadline: u64, id: u64) {
            self.0.push(id);
        }
        fn cancel(&mut self, _: ()) -> Option<u64> {
            None
        }
        fn advance<F: FnMut(u64)>(&mut self, _now: u64, mut fire: F) {
            for id in self.0.drain(..) {
                fire(id);
            }
        }
    }

    #[test]
    fn bytes_per_pending_leave_out_the_records_and_the_fired() {
        // The figure itself comes from a process-wide count that other test
        // threads disturb; the arithmetic around it is checked here.
        let record = std::mem::size_of::<Conn<<floor::Floor as TimerQueue>::Handle>>() as i64;
        let run = ChurnRun::fill(floor::Floor::with_capacity(1_000), &Churn::new(1_000, 0, 1));
        assert_eq!(run.bytes_per_pending(1_000 * record + 32_000), 32.0);
        // Short timeouts: after 30 ticks many connections wait with no timer.
        let p = Churn {
            pending: 2_000,
            steps: 30_000,
            min_ahead: 1,
            max_ahead: 20,
            seed: 5,
        };
        let mut run = ChurnRun::fill(wheel::OurWheel::with_capacity(2_000), &p);
        run.steps();
        let pending = run.conns.iter().filter(|c| c.handle.is_some()).count();
        assert!(pending < 1_900, "{pending} of 2000 pending");
        let record = std::mem::size_of_val(&run.conns[0]) as i64;
        let live = 2_000 * record + 10 * pending as i64;
        assert_eq!(run.bytes_per_pending(live), 10.0);
        assert_eq!(run.finish().0, Check::Passed);
    }

    #[test]
    fn checks_catch_a_broken_queue() {
        let inputs = Inputs::new(1000, 1);
        assert!(matches!(
            insert_cancel(Eager(Vec::new()), &inputs).check,
            Check::Failed(_)
        ));
        // Fires in insertion order, not deadline order.
        assert!(matches!(
            insert_expire(Eager(Vec::new()), &inputs).check,
            Check::Failed(_)
        ));
        let c = churn(Eager(Vec::new()), &Churn::new(100, 5_000, 3)).check;
        assert!(
            matches!(c, Check::Failed(ref s) if s.contains("early")),
            "{c:?}"
        );
    }
}
