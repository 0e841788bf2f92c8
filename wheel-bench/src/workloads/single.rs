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
//! 4. memory: live heap bytes per pending timer after inserting `n` timers.
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
    /// Of `elapsed`, the time spent advancing the clock (firing, the
    /// callbacks included); measured by churn only, zero elsewhere.
    pub firing: Duration,
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
    let check = if q.is_timer() {
        Check::from_errors(&[
            ("cancels that missed", wrong_cancels),
            ("cancelled timers fired", fired.len() as u64),
        ])
    } else {
        Check::NotApplicable
    };
    drop(black_box(q));
    Outcome {
        ns_per_op: per_op(elapsed, n),
        elapsed,
        wall: wall.elapsed(),
        check,
        fired: fired.len() as u64,
        firing: Duration::ZERO,
    }
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
    let check = if q.is_timer() {
        check_expired(&fired, &inputs.deadlines)
    } else {
        Check::NotApplicable
    };
    drop(black_box(q));
    Outcome {
        ns_per_op: per_op(elapsed, n),
        elapsed,
        wall: wall.elapsed(),
        check,
        fired: fired.len() as u64,
        firing: Duration::ZERO,
    }
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
    gen: u32,
}

/// The id of connection `conn`'s timer number `gen`.
#[inline]
fn churn_id(conn: usize, gen: u32) -> u64 {
    (u64::from(gen) << 32) | conn as u64
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

    /// A churn for tests: timers re-armed `1..=20` ticks ahead, so that a
    /// few ticks fire many of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_bench::workloads::single::Churn;
    ///
    /// let p = Churn::short_timeouts(1_000, 5_000, 7);
    /// assert_eq!((p.min_ahead, p.max_ahead), (1, 20));
    /// ```
    pub fn short_timeouts(pending: usize, steps: usize, seed: u64) -> Churn {
        Churn {
            pending,
            steps,
            min_ahead: 1,
            max_ahead: 20,
            seed,
        }
    }
}

/// Workload 3: churn.
pub fn churn<Q: TimerQueue>(q: Q, p: &Churn) -> Outcome {
    let wall = Instant::now();
    let mut run = ChurnRun::fill(q, p);
    let elapsed = run.steps(p.steps);
    let (check, fired, firing) = run.finish();
    Outcome {
        ns_per_op: per_op(elapsed, p.steps),
        elapsed,
        wall: wall.elapsed(),
        check,
        fired,
        firing,
    }
}

/// A churn in progress, whose steps can run in parts: [`churn`] runs them
/// all at once; `examples/churn_interleaved.rs` alternates the parts of
/// several queues, so that the machine's drift hits them alike.
///
/// # Examples
///
/// ```
/// use wheel_bench::peers::wheel::OurWheel;
/// use wheel_bench::workloads::single::{Churn, ChurnRun};
/// use wheel_bench::workloads::Check;
///
/// let p = Churn::short_timeouts(1_000, 0, 7);
/// let mut run = ChurnRun::fill(OurWheel::with_capacity(1_000), &p);
/// run.steps(5_000);
/// run.steps(5_000); // goes on from step 5 000, at tick 5
/// let (check, fired, _firing) = run.finish();
/// assert!(matches!(check, Check::Passed));
/// assert!(fired > 100); // 10 ticks, each past about 1/20 of the timers
/// ```
pub struct ChurnRun<Q: TimerQueue> {
    q: Q,
    conns: Vec<Conn<Q::Handle>>,
    rng: Rng,
    p: Churn,
    counts: StepCounts,
}

impl<Q: TimerQueue> ChurnRun<Q> {
    /// Arms one timer per connection, due `1..=p.max_ahead` (not timed);
    /// `p.steps` is not used here.
    pub fn fill(mut q: Q, p: &Churn) -> ChurnRun<Q> {
        let mut rng = Rng::new(p.seed);
        let mut conns: Vec<Conn<Q::Handle>> = Vec::with_capacity(p.pending);
        q.run(|q| {
            for c in 0..p.pending {
                let deadline = rng.range_inclusive(1, p.max_ahead);
                let handle = q.insert(deadline, churn_id(c, 0));
                conns.push(Conn {
                    handle: Some(handle),
                    deadline,
                    gen: 0,
                });
            }
        });
        ChurnRun {
            q,
            conns,
            rng,
            p: *p,
            counts: StepCounts::default(),
        }
    }

    /// Runs `steps` more steps and returns the time they took.
    pub fn steps(&mut self, steps: usize) -> Duration {
        let ChurnRun {
            q,
            conns,
            rng,
            p,
            counts,
        } = self;
        q.run(|q| {
            let t = Instant::now();
            churn_steps(q, conns, rng, p, steps, counts);
            t.elapsed()
        })
    }

    /// Connections whose timer is pending (armed and not fired).
    pub fn pending(&self) -> usize {
        self.conns.iter().filter(|c| c.handle.is_some()).count()
    }

    /// Heap bytes the run's own bookkeeping takes (its connection records),
    /// to be taken off a live-bytes count that includes them
    /// (`examples/churn_memory.rs`).
    pub fn bookkeeping_bytes(&self) -> usize {
        self.conns.capacity() * std::mem::size_of::<Conn<Q::Handle>>()
    }

    /// Ends the run: its check (none early, none stale, no cancel missed,
    /// nothing due left; not applicable to the floor), the timers fired and
    /// the time spent firing, over all the steps run.
    pub fn finish(self) -> (Check, u64, Duration) {
        let c = &self.counts;
        let check = if self.q.is_timer() {
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
        } else {
            Check::NotApplicable
        };
        let (fired, firing) = (c.fired, c.firing);
        drop(black_box(self.q));
        (check, fired, firing)
    }
}

/// What [`churn_steps`] counted so far, and where its clock is.
#[derive(Default)]
struct StepCounts {
    /// Steps run.
    step: u64,
    /// Timers fired before their deadline.
    early: u64,
    /// Stale or unknown timers fired.
    stale: u64,
    /// Cancels that did not return the cancelled timer.
    wrong_cancels: u64,
    /// Timers fired.
    fired: u64,
    /// Time spent advancing the clock (firing, the callbacks included).
    firing: Duration,
    /// The clock after the last step.
    now: u64,
}

/// The timed steps of [`churn`], `steps` more of them from where `counts`
/// left off; a function of their own so that a profiler can count them alone
/// (`docs/benchmarks.md`, "Eleventh session").
#[inline(never)]
fn churn_steps<Q: TimerQueue>(
    q: &mut Q,
    conns: &mut [Conn<Q::Handle>],
    rng: &mut Rng,
    p: &Churn,
    steps: usize,
    counts: &mut StepCounts,
) {
    let pending = p.pending;
    let (mut early, mut stale, mut wrong_cancels, mut fired) = (0u64, 0u64, 0u64, 0u64);
    let mut now = counts.now;
    let mut firing = Duration::ZERO;
    for step in counts.step..counts.step + steps as u64 {
        if step % STEPS_PER_TICK == STEPS_PER_TICK - 1 {
            now += 1;
            // Two clock reads per tick of 1 000 steps: 0.05 ns or so
            // per step, the same for every queue.
            let f = Instant::now();
            q.advance(now, |id| {
                fired += 1;
                let c = (id & u64::from(u32::MAX)) as usize;
                match conns.get_mut(c) {
                    Some(conn) if conn.handle.is_some() && conn.gen == (id >> 32) as u32 => {
                        if conn.deadline > now {
                            early += 1;
                        }
                        conn.handle = None;
                    }
                    _ => stale += 1,
                }
            });
            firing += f.elapsed();
        }
        let c = rng.below(pending as u64) as usize;
        let conn = &mut conns[c];
        if let Some(h) = conn.handle.take() {
            if q.cancel(h) != Some(churn_id(c, conn.gen)) {
                wrong_cancels += 1;
            }
        }
        conn.gen = conn.gen.wrapping_add(1);
        conn.deadline = now + rng.range_inclusive(p.min_ahead, p.max_ahead);
        conn.handle = Some(q.insert(conn.deadline, churn_id(c, conn.gen)));
    }
    counts.step += steps as u64;
    counts.early += early;
    counts.stale += stale;
    counts.wrong_cancels += wrong_cancels;
    counts.fired += fired;
    counts.firing += firing;
    counts.now = now;
}

/// What the steps of a churn do: how many timers fire and how many steps
/// find their connection's timer already fired (so they insert without a
/// cancel). [`churn_mix`] counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChurnMix {
    /// Steps run.
    pub steps: u64,
    /// Timers that fired.
    pub fired: u64,
    /// Steps whose connection had no pending timer: an insert, no cancel.
    pub without_cancel: u64,
}

/// The mix of a churn's `p.steps` steps, counted by running them (untimed)
/// over the lower bound [`Calendar`](crate::peers::calendar::Calendar), a
/// checked timer: the draws are the workload's own, so any correct timer
/// fires the same timers and cancels as often (the test
/// `churn_mix_is_what_a_run_does` compares it with a run of our wheel).
///
/// It shows what the full comparison's churn asks of a timer at each size
/// (`docs/benchmarks.md`, "Eighteenth session"): with 10M connections, a
/// connection whose timer fired is rarely picked again within 2M steps, so
/// nearly every step cancels and inserts as the floor does, and the firing
/// comes on top.
///
/// # Panics
///
/// If the calendar's run fails its check (a bug in the calendar).
///
/// # Examples
///
/// ```
/// use wheel_bench::workloads::single::{churn_mix, Churn};
///
/// let mix = churn_mix(&Churn::short_timeouts(1_000, 5_000, 7));
/// assert_eq!(mix.steps, 5_000);
/// assert!(mix.fired > 100 && mix.without_cancel > 0);
/// assert!(mix.without_cancel <= mix.fired);
/// ```
pub fn churn_mix(p: &Churn) -> ChurnMix {
    let calendar = crate::peers::calendar::Calendar::with_capacity(p.pending);
    let mut run = ChurnRun::fill(CountCancels(calendar, 0), p);
    run.steps(p.steps);
    let cancels = run.q.1;
    let (check, fired, _) = run.finish();
    assert_eq!(check, Check::Passed, "the calendar's churn");
    ChurnMix {
        steps: p.steps as u64,
        fired,
        without_cancel: p.steps as u64 - cancels,
    }
}

/// A queue that counts the cancels it is asked for.
struct CountCancels<Q>(Q, u64);

impl<Q: TimerQueue> TimerQueue for CountCancels<Q> {
    type Handle = Q::Handle;

    #[inline]
    fn insert(&mut self, deadline: u64, id: u64) -> Q::Handle {
        self.0.insert(deadline, id)
    }

    #[inline]
    fn cancel(&mut self, h: Q::Handle) -> Option<u64> {
        self.1 += 1;
        self.0.cancel(h)
    }

    fn advance<F: FnMut(u64)>(&mut self, now: u64, fire: F) {
        self.0.advance(now, fire);
    }
}

/// Workload 4: live heap bytes per pending timer. `make` builds the queue (inside
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
    let check = if q.is_timer() {
        Check::from_errors(&[("cancels that missed", wrong)])
    } else {
        Check::NotApplicable
    };
    (bytes as f64 / n.max(1) as f64, check)
}

/// Nanoseconds per operation: `elapsed` over `ops` (over 1 if `ops` is 0).
pub fn per_op(elapsed: Duration, ops: usize) -> f64 {
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

    /// A queue whose every `advance` takes at least a millisecond.
    struct SlowAdvance;
    impl TimerQueue for SlowAdvance {
        type Handle = ();
        fn insert(&mut self, _deadline: u64, _id: u64) {}
        fn cancel(&mut self, _: ()) -> Option<u64> {
            None
        }
        fn advance<F: FnMut(u64)>(&mut self, _now: u64, _fire: F) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn churn_times_advancing_apart() {
        // 5 000 steps are 5 ticks: five calls to `advance`.
        let o = churn(SlowAdvance, &Churn::new(100, 5_000, 3));
        assert!(o.firing >= Duration::from_millis(5), "{:?}", o.firing);
        assert!(o.firing <= o.elapsed, "{:?} > {:?}", o.firing, o.elapsed);
        let o = insert_expire(floor::Floor::with_capacity(N), &Inputs::new(N, 1));
        assert_eq!(o.firing, Duration::ZERO);
    }

    #[test]
    fn bookkeeping_bytes_are_the_connection_records() {
        let p = Churn::new(1_000, 0, 1);
        let run = ChurnRun::fill(floor::Floor::with_capacity(1_000), &p);
        assert_eq!(run.pending(), 1_000);
        let record = std::mem::size_of::<Conn<<floor::Floor as TimerQueue>::Handle>>();
        assert_eq!(run.bookkeeping_bytes(), 1_000 * record);
    }

    #[test]
    fn churn_in_parts_is_the_same_churn() {
        let p = Churn::short_timeouts(2_000, 30_000, 5);
        let whole = churn(wheel::OurWheel::with_capacity(2_000), &p);
        let mut run = ChurnRun::fill(wheel::OurWheel::with_capacity(2_000), &p);
        for part in [10_000, 1, 9_999, 10_000] {
            run.steps(part);
        }
        let (check, fired, _) = run.finish();
        assert_eq!(check, Check::Passed);
        assert!(fired > 1_000, "only {fired} fired");
        // The same draws, the same ticks: the same timers fire.
        assert_eq!(fired, whole.fired);
        // And the count is of all the parts: one part alone fires fewer.
        let mut short = ChurnRun::fill(wheel::OurWheel::with_capacity(2_000), &p);
        short.steps(10_000);
        assert!(short.finish().1 < fired);
    }

    #[test]
    fn churn_mix_is_what_a_run_does() {
        for p in [
            Churn::short_timeouts(2_000, 30_000, 5),
            Churn::new(3_000, 40_000, 6),
        ] {
            let mix = churn_mix(&p);
            let mut run =
                ChurnRun::fill(CountCancels(wheel::OurWheel::with_capacity(2_000), 0), &p);
            run.steps(p.steps);
            let cancels = run.q.1;
            let (check, fired, _) = run.finish();
            assert_eq!(check, Check::Passed);
            assert_eq!(mix.fired, fired);
            assert_eq!(mix.without_cancel, p.steps as u64 - cancels);
        }
        // A step finds no timer only where one fired before, each at most
        // once.
        let short = churn_mix(&Churn::short_timeouts(2_000, 30_000, 5));
        assert!(short.without_cancel > 0, "{short:?}");
        assert!(short.without_cancel <= short.fired, "{short:?}");
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
