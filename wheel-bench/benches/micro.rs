//! Criterion micro-benchmarks for regressions: our wheel on insert+cancel,
//! insert+expire and a churn step, the floor beside them (so a change in the
//! ratio shows), `DelayQueue` insert+take, the cost of one uncontended
//! `Mutex` lock and unlock (a floor for any `&self` queue: insert and remove
//! take the lock once each), and the producer floor: the work that any
//! thread-safe scheduler with our scheduler's guarantees must do per
//! schedule+cancel pair (see `producer_floor`).
//!
//! `cargo bench -p wheel-bench --bench micro` (add a filter such as `churn` to
//! run one group). Each iteration runs one whole workload and only its timed
//! part is counted (`iter_custom`); throughput is reported per operation.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use crossbeam_queue::ArrayQueue;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wheel_bench::peers::floor::Floor;
use wheel_bench::peers::wheel::OurWheel;
use wheel_bench::workloads::Check;
use wheel_bench::workloads::delay_queue::{OurDq, insert_take};
use wheel_bench::workloads::single::{self, Churn, Inputs};

const SIZES: [usize; 2] = [10_000, 1_000_000];

fn checked(o: single::Outcome, real_timer: bool) -> Duration {
    if real_timer {
        assert_eq!(o.check, Check::Passed, "the workload's own check failed");
    }
    black_box(o.elapsed)
}

/// One group timing a single-threaded workload on our wheel and on the
/// floor, at every size in `SIZES`, on inputs drawn from `seed`.
fn wheel_and_floor(
    c: &mut Criterion,
    name: &str,
    seed: u64,
    on_wheel: fn(OurWheel, &Inputs) -> single::Outcome,
    on_floor: fn(Floor, &Inputs) -> single::Outcome,
) {
    let mut g = c.benchmark_group(name);
    g.sample_size(10).warm_up_time(Duration::from_secs(1));
    for n in SIZES {
        let inputs = Inputs::new(n, seed);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("wheel", n), &inputs, |b, inputs| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| checked(on_wheel(OurWheel::with_capacity(n), inputs), true))
                    .sum()
            })
        });
        g.bench_with_input(BenchmarkId::new("floor", n), &inputs, |b, inputs| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| checked(on_floor(Floor::with_capacity(n), inputs), false))
                    .sum()
            })
        });
    }
    g.finish();
}

fn insert_cancel(c: &mut Criterion) {
    wheel_and_floor(
        c,
        "insert_cancel",
        11,
        single::insert_cancel,
        single::insert_cancel,
    );
}

fn insert_expire(c: &mut Criterion) {
    wheel_and_floor(
        c,
        "insert_expire",
        12,
        single::insert_expire,
        single::insert_expire,
    );
}

fn churn(c: &mut Criterion) {
    const STEPS: usize = 200_000;
    let mut g = c.benchmark_group("churn_step");
    g.sample_size(10).warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(STEPS as u64));
    for pending in [100_000usize, 1_000_000] {
        let p = Churn::new(pending, STEPS, 13);
        g.bench_with_input(BenchmarkId::new("wheel", pending), &p, |b, p| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| checked(single::churn(OurWheel::with_capacity(p.pending), p), true))
                    .sum()
            })
        });
        g.bench_with_input(BenchmarkId::new("floor", pending), &p, |b, p| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| checked(single::churn(Floor::with_capacity(p.pending), p), false))
                    .sum()
            })
        });
    }
    g.finish();
}

fn delay_queue(c: &mut Criterion) {
    const N: usize = 100_000;
    let mut g = c.benchmark_group("delay_queue_insert_take");
    g.sample_size(10).warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function(BenchmarkId::new("wheel", N), |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let o = insert_take(OurDq::new(N), N);
                    assert_eq!(o.check, Check::Passed);
                    o.elapsed
                })
                .sum()
        })
    });
    g.finish();
}

fn mutex_floor(c: &mut Criterion) {
    let mut g = c.benchmark_group("uncontended_mutex");
    g.sample_size(20).warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(1));
    let m = std::sync::Mutex::new(0u64);
    g.bench_function("lock_unlock", |b| {
        b.iter(|| {
            let mut v = black_box(&m).lock().unwrap_or_else(|e| e.into_inner());
            *v += 1;
        })
    });
    g.finish();
}

/// Producer operations per timed batch (the queues are emptied untimed
/// between batches, so they stay in cache and never grow).
const PRODUCER_BATCH: usize = 1_000;

/// Pairs per sample of `schedule_cancel_pair_drained`: more than one
/// `DRAIN_EVERY` of pushes fits in its queues.
const DRAINED: usize = 1 << 16;

/// How long the drainer sleeps when it finds the queues empty: our tick
/// thread's flush interval.
const DRAIN_EVERY: Duration = Duration::from_millis(1);

/// A boxed closure, as a scheduler stores it.
type Job = Box<dyn FnOnce() -> u64 + Send>;

/// The comparison's closure (it captures 8 bytes), boxed.
#[inline]
fn job(id: u64) -> Job {
    Box::new(move || black_box(id))
}

const PENDING: u64 = 1;
const CANCELLED: u64 = 2;

/// What a producer shares with the owner of the timers in the producer
/// floor: one queue for new timers, one for cancels, a state word per
/// timer.
struct Handoff {
    inserts: ArrayQueue<(Instant, Job)>,
    cancels: ArrayQueue<u32>,
    states: Vec<AtomicU64>,
}

impl Handoff {
    fn new(timers: usize) -> Handoff {
        Handoff {
            inserts: ArrayQueue::new(timers),
            cancels: ArrayQueue::new(timers),
            states: (0..timers).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Schedules and cancels one timer per state word, as a producer must
    /// (see `producer_floor`), and returns the time that took.
    fn pairs(&self, delay: Duration) -> Duration {
        self.states
            .iter()
            .for_each(|s| s.store(PENDING, Ordering::Relaxed));
        let t = Instant::now();
        for (i, state) in self.states.iter().enumerate() {
            let at = Instant::now() + delay;
            push(&self.inserts, (at, job(i as u64)));
            let won = state
                .compare_exchange(PENDING, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
            assert!(won);
            push(&self.cancels, i as u32);
        }
        t.elapsed()
    }

    /// Empties both queues, freeing the boxes, as the owner does; returns
    /// how many entries it took.
    fn drain(&self) -> usize {
        let mut got = 0;
        while let Some(entry) = self.inserts.pop() {
            drop(black_box(entry));
            got += 1;
        }
        while self.cancels.pop().is_some() {
            got += 1;
        }
        got
    }
}

/// Pushes `value`, waiting while the queue is full.
fn push<T>(queue: &ArrayQueue<T>, mut value: T) {
    while let Err(back) = queue.push(value) {
        value = back;
        std::hint::spin_loop();
    }
}

/// The least a producer thread must do per schedule+cancel pair with our
/// scheduler's guarantees (so a lower bound for any design that gives
/// them, ours included):
/// - `schedule(delay, f)` reads the clock once (the deadline must not be
///   before the caller's now plus `delay`: a clock kept by another thread
///   lags, so it would fire early), boxes the closure (safe Rust erases a
///   closure's type only behind a pointer; the comparison's closure
///   captures 8 bytes) and hands the timer to the thread that owns the
///   timers with one atomic push;
/// - `cancel()` from any thread, linearizable with firing, is at least one
///   compare-and-swap on the timer's state, and one more atomic push tells
///   the owner, so that the closure is freed at once rather than at its
///   deadline.
///
/// Not counted: slot allocation and handles, wake-up checks, shutdown
/// checks, counters. `instant_now` and `box_closure` time the first two
/// parts alone; `schedule_cancel_pair` times the pair with nobody reading
/// the queues (every line stays in this core's cache: the least the
/// producer can pay); `schedule_cancel_pair_drained` times it while a
/// second thread drains the queues and frees the boxes, as the owner of
/// the timers must, so the producer's lines travel between cores. That
/// drainer empties the queues in batches and sleeps for `DRAIN_EVERY`
/// whenever it finds them empty: the least traffic a prompt owner makes.
fn producer_floor(c: &mut Criterion) {
    let mut g = c.benchmark_group("producer_floor");
    g.sample_size(20).warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(PRODUCER_BATCH as u64));
    let delay = Duration::from_secs(15);
    g.bench_function("instant_now", |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters * PRODUCER_BATCH as u64 {
                black_box(Instant::now() + delay);
            }
            t.elapsed()
        })
    });
    let mut boxes: Vec<Job> = Vec::with_capacity(PRODUCER_BATCH);
    g.bench_function("box_closure", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                for i in 0..PRODUCER_BATCH as u64 {
                    boxes.push(job(i));
                }
                timed += t.elapsed();
                boxes.clear();
            }
            timed
        })
    });
    let alone = Handoff::new(PRODUCER_BATCH);
    g.bench_function("schedule_cancel_pair", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let timed = alone.pairs(delay);
                    alone.drain();
                    timed
                })
                .sum()
        })
    });
    let shared = Handoff::new(DRAINED);
    g.throughput(Throughput::Elements(DRAINED as u64));
    g.bench_function("schedule_cancel_pair_drained", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let done = AtomicBool::new(false);
                    std::thread::scope(|scope| {
                        scope.spawn(|| {
                            loop {
                                // Read before draining: once it is set, every
                                // push is visible, so this drain leaves nothing.
                                let finished = done.load(Ordering::Acquire);
                                let got = shared.drain();
                                if finished {
                                    break;
                                }
                                if got == 0 {
                                    std::thread::sleep(DRAIN_EVERY);
                                }
                            }
                        });
                        let timed = shared.pairs(delay);
                        done.store(true, Ordering::Release);
                        timed
                    })
                })
                .sum()
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    insert_cancel,
    insert_expire,
    churn,
    delay_queue,
    mutex_floor,
    producer_floor
);
criterion_main!(benches);
