//! Stress: 4 producers schedule 200 000 timers with random delays (0-50 ms)
//! while another thread cancels a random third. Afterwards every timer whose
//! cancel returned false fired exactly once, no cancelled timer fired, and
//! none fired early.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use wheel::{Scheduler, TimerHandle};

const PRODUCERS: usize = 4;
const TIMERS: usize = 200_000;
const PER_PRODUCER: usize = TIMERS / PRODUCERS;
const MAX_DELAY_US: u64 = 50_000;

fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn stress_schedule_and_cancel_from_many_threads() {
    let s = Scheduler::builder().workers(2).build().unwrap();
    // Per timer: how often it fired, and whether it fired early.
    let fired: Arc<Vec<AtomicU8>> = Arc::new((0..TIMERS).map(|_| AtomicU8::new(0)).collect());
    let early = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::channel::<(usize, TimerHandle)>();
    let start = Instant::now();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (s, fired, early, tx) = (s.clone(), fired.clone(), early.clone(), tx.clone());
            thread::spawn(move || {
                let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (p as u64 + 1);
                for i in 0..PER_PRODUCER {
                    let id = p * PER_PRODUCER + i;
                    let delay = Duration::from_micros(xorshift(&mut seed) % MAX_DELAY_US);
                    let at = Instant::now() + delay;
                    let (fired, early) = (fired.clone(), early.clone());
                    let h = s
                        .schedule_at(at, move || {
                            if Instant::now() < at {
                                early.fetch_add(1, Ordering::Relaxed);
                            }
                            fired[id].fetch_add(1, Ordering::Relaxed);
                        })
                        .unwrap();
                    tx.send((id, h)).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let canceller = thread::spawn(move || {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut outcome = vec![None::<bool>; TIMERS];
        for (id, h) in rx {
            if xorshift(&mut seed) % 3 == 0 {
                outcome[id] = Some(h.cancel());
            } else {
                outcome[id] = Some(false);
            }
        }
        outcome
    });
    for p in producers {
        p.join().unwrap();
    }
    let outcome = canceller.join().unwrap();
    let cancelled = outcome.iter().filter(|o| **o == Some(true)).count();
    let deadline = Instant::now() + Duration::from_secs(60);
    let expected = (TIMERS - cancelled) as u64;
    while s.stats().fired < expected || s.stats().queued > 0 {
        assert!(
            Instant::now() < deadline,
            "timers did not fire: {:?}",
            s.stats()
        );
        thread::sleep(Duration::from_millis(5));
    }
    s.shutdown(); // joins the workers: every started callback has finished
    for (id, o) in outcome.iter().enumerate() {
        let n = fired[id].load(Ordering::Relaxed);
        match o {
            Some(true) => assert_eq!(n, 0, "cancelled timer {id} fired"),
            Some(false) => assert_eq!(n, 1, "timer {id} fired {n} times"),
            None => panic!("timer {id} was never scheduled"),
        }
    }
    assert_eq!(early.load(Ordering::Relaxed), 0, "timers fired early");
    let st = s.stats();
    assert_eq!(st.fired, expected);
    assert_eq!(st.cancelled as usize, cancelled);
    assert_eq!(st.pending, 0);
    eprintln!(
        "stress: {TIMERS} timers, {cancelled} cancelled, {:?} total, max lateness {:?}",
        start.elapsed(),
        st.max_lateness
    );
}
