//! Criterion micro-benchmarks for regressions: our wheel on insert+cancel,
//! insert+expire and a churn step, the floor beside them (so a change in the
//! ratio shows), `DelayQueue` push+take, and the cost of one uncontended
//! `Mutex` lock and unlock (a floor for any `&self` queue: push and remove
//! take the lock once each).
//!
//! `cargo bench -p wheel-bench --bench micro` (add a filter such as `churn` to
//! run one group). Each iteration runs one whole workload and only its timed
//! part is counted (`iter_custom`); throughput is reported per operation.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;
use wheel_bench::peers::floor::Floor;
use wheel_bench::peers::wheel::OurWheel;
use wheel_bench::workloads::delay_queue::{push_take, OurDq};
use wheel_bench::workloads::single::{self, Churn, Inputs};
use wheel_bench::workloads::Check;

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
    let mut g = c.benchmark_group("delay_queue_push_take");
    g.sample_size(10).warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function(BenchmarkId::new("wheel", N), |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let o = push_take(OurDq::new(N), N);
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

criterion_group!(
    benches,
    insert_cancel,
    insert_expire,
    churn,
    delay_queue,
    mutex_floor
);
criterion_main!(benches);
