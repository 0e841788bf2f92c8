//! The many-producer workload: `producers` threads each schedule timers due
//! 10-20 s out and cancel each one after scheduling the next
//! [`CANCEL_LAG`], so about `CANCEL_LAG` timers are pending per producer.
//!
//! Every closure captures an `Arc` counter and increments it when it runs,
//! as a real callback holding shared state would: scheduling clones the
//! `Arc`, and each implementation pays for dropping it wherever it drops a
//! cancelled closure. Nothing may run, so the counter must stay at zero.

use super::{ThreadedTimer, TimerProducer};
use crate::cpu::{CpuSample, thread_cpu, wait_until_quiet};
use crate::rng::Rng;
use crate::workloads::Check;
use crate::workloads::threaded::CANCEL_LAG;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// One run of the scaling workload.
#[derive(Debug, Clone)]
pub struct Scaling {
    /// Schedule+cancel pairs per second, all producers together: every
    /// pair over the span from the first producer's start to the last
    /// one's end.
    pub pairs_per_sec: f64,
    /// Whole-process CPU per pair, until the service went quiet.
    pub cpu_ns_per_pair: f64,
    /// The service's timer-thread wake-ups per 1 000 pairs over the same
    /// span as the CPU, for services that count them.
    pub wakeups_per_1k: Option<f64>,
    /// Nothing ran; every cancel the service reports on succeeded.
    pub check: Check,
}

/// The producer counts measured on a machine with `cores` cores: powers of
/// two below `cores`, then `cores` itself.
pub fn producer_levels(cores: usize) -> Vec<usize> {
    let cores = cores.max(1);
    let mut levels: Vec<usize> = std::iter::successors(Some(1usize), |p| p.checked_mul(2))
        .take_while(|&p| p < cores)
        .collect();
    levels.push(cores);
    levels
}

/// What one producer thread reports.
struct ProducerRun {
    start: Instant,
    end: Instant,
    /// Its own CPU time (it exits before the CPU window ends).
    cpu: Duration,
    failed_cancels: u64,
}

/// Runs the workload: `pairs` schedule+cancel pairs on each of `producers`
/// threads.
pub fn scaling<T: ThreadedTimer>(producers: usize, pairs: usize, seed: u64) -> Scaling {
    let timer = T::start();
    wait_until_quiet(Duration::from_millis(50), Duration::from_secs(2));
    let fired = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(producers + 1));
    // Delays are drawn before the clock starts, so the timed loop is only
    // schedule and cancel.
    let delays: Vec<Vec<Duration>> = (0..producers)
        .map(|p| {
            let mut rng = Rng::new(seed ^ (p as u64 + 1));
            (0..pairs)
                .map(|_| Duration::from_nanos(rng.range_inclusive(10_000_000_000, 20_000_000_000)))
                .collect()
        })
        .collect();
    let wakeups0 = timer.wakeups();
    let cpu0 = CpuSample::now();
    let threads: Vec<_> = delays
        .into_iter()
        .map(|delays| {
            let producer = timer.producer();
            let (barrier, fired) = (Arc::clone(&barrier), Arc::clone(&fired));
            std::thread::spawn(move || produce(producer, delays, &barrier, &fired))
        })
        .collect();
    barrier.wait();
    let runs: Vec<ProducerRun> = threads
        .into_iter()
        .map(|t| t.join().expect("producer panicked"))
        .collect();
    wait_until_quiet(Duration::from_millis(100), Duration::from_secs(10));
    let exited: Duration = runs.iter().map(|r| r.cpu).sum();
    let cpu = CpuSample::now()
        .since(&cpu0, exited)
        .map_or(f64::NAN, |d| d.as_nanos() as f64);
    let wakeups = timer.wakeups().zip(wakeups0).map(|(b, a)| b - a);
    timer.shutdown();
    let total = (producers * pairs) as f64;
    let first = runs.iter().map(|r| r.start).min();
    let last = runs.iter().map(|r| r.end).max();
    let span = first
        .zip(last)
        .map_or(f64::NAN, |(a, b)| (b - a).as_secs_f64());
    Scaling {
        pairs_per_sec: total / span,
        cpu_ns_per_pair: cpu / total,
        wakeups_per_1k: wakeups.map(|w| w as f64 * 1e3 / total),
        check: Check::from_errors(&[
            ("cancelled timers fired", fired.load(Ordering::Relaxed)),
            (
                "cancels reported as failed",
                runs.iter().map(|r| r.failed_cancels).sum(),
            ),
        ]),
    }
}

/// One producer thread's loop.
fn produce<P: TimerProducer>(
    mut producer: P,
    delays: Vec<Duration>,
    barrier: &Barrier,
    fired: &Arc<AtomicU64>,
) -> ProducerRun {
    let mut ring: Vec<Option<P::Handle>> = (0..CANCEL_LAG).map(|_| None).collect();
    let mut failed_cancels = 0u64;
    let cpu_before = thread_cpu();
    barrier.wait();
    let start = Instant::now();
    for (i, d) in delays.into_iter().enumerate() {
        let counter = Arc::clone(fired);
        let h = producer.schedule(d, move || {
            counter.fetch_add(1, Ordering::Relaxed);
        });
        if let Some(old) = ring[i % CANCEL_LAG].replace(h) {
            failed_cancels += u64::from(producer.cancel(old) == Some(false));
        }
    }
    for h in ring.into_iter().flatten() {
        failed_cancels += u64::from(producer.cancel(h) == Some(false));
    }
    let end = Instant::now();
    let cpu = match (cpu_before, thread_cpu()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => Duration::ZERO,
    };
    ProducerRun {
        start,
        end,
        cpu,
        failed_cancels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::threaded::{Immediate, ThreadedPeer};

    #[test]
    fn levels_double_up_to_the_core_count() {
        assert_eq!(producer_levels(0), [1]);
        assert_eq!(producer_levels(1), [1]);
        assert_eq!(producer_levels(2), [1, 2]);
        assert_eq!(producer_levels(6), [1, 2, 4, 6]);
        assert_eq!(producer_levels(16), [1, 2, 4, 8, 16]);
    }

    #[test]
    fn every_peer_passes_a_small_run_and_only_ours_counts_wakeups() {
        for peer in ThreadedPeer::ALL {
            let s = crate::with_threaded!(peer, |T| scaling::<T>(2, 1_000, 9));
            assert_eq!(s.check, Check::Passed, "{}", peer.name());
            assert!(s.pairs_per_sec > 0.0, "{}", peer.name());
            assert_eq!(
                s.wakeups_per_1k.is_some(),
                peer == ThreadedPeer::Scheduler,
                "{}",
                peer.name()
            );
        }
    }

    #[test]
    fn the_check_catches_fired_and_failed_cancels() {
        let s = scaling::<Immediate>(2, 300, 10);
        let Check::Failed(why) = s.check else {
            panic!("{:?}", s.check)
        };
        assert!(why.contains("600 cancelled timers fired"), "{why}");
        assert!(why.contains("600 cancels reported as failed"), "{why}");
        assert_eq!(s.wakeups_per_1k, None);
    }
}
