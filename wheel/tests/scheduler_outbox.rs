//! The producer path through the lanes' outboxes: a new timer waits on its
//! producer's side until its deadline comes near (or its outbox fills),
//! and a cancel or reset before then acts on it there. Timing is only
//! asserted as "not early" and "eventually".
#![cfg(not(loom))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use wheel::{ManualClock, Scheduler};
use wheel_testkit::eventually as wait_until;

fn manual(clock: &ManualClock) -> Scheduler {
    Scheduler::builder()
        .tick(Duration::from_millis(1))
        .workers(2)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// Records the thread that dropped it.
struct DropsOn(Arc<Mutex<Option<ThreadId>>>);
impl Drop for DropsOn {
    fn drop(&mut self) {
        *self.0.lock().unwrap() = Some(thread::current().id());
    }
}

/// A timer whose deadline is far is still in its outbox when it is
/// cancelled: the cancel itself drops the closure, on the cancelling
/// thread, before it returns (from the producer's thread and from another
/// one). A timer due within the take lead has been handed to the tick
/// thread, which drops its closure.
#[test]
fn a_far_timer_cancelled_drops_its_closure_in_the_cancel() {
    let s = Scheduler::new();
    for from_another_thread in [false, true] {
        let dropped = Arc::new(Mutex::new(None));
        let guard = DropsOn(dropped.clone());
        let h = s
            .schedule(Duration::from_secs(3600), move || drop(guard))
            .unwrap();
        let cancel = move || {
            assert!(h.cancel());
            thread::current().id()
        };
        let canceller = if from_another_thread {
            thread::spawn(cancel).join().unwrap()
        } else {
            cancel()
        };
        assert_eq!(*dropped.lock().unwrap(), Some(canceller));
    }
    // Due now: the tick thread takes it at once; whoever holds it when the
    // cancel lands drops it, and it never runs.
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let h = s
        .schedule(Duration::ZERO, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let cancelled = h.cancel();
    s.shutdown();
    assert_eq!(usize::from(cancelled) + ran.load(Ordering::SeqCst), 1);
}

/// More timers than an outbox holds, all far: the outbox is taken when it
/// fills, so the tick thread holds most of them and the rest wait in the
/// outbox. Cancelling every other one (some in the outbox, some in the
/// wheel) and moving the clock past them fires exactly the others, none
/// early, each once.
#[test]
fn a_full_outbox_is_taken_and_every_timer_fires_or_cancels_once() {
    const N: usize = 10_000;
    let clock = ManualClock::new();
    let s = manual(&clock);
    let start = clock.now();
    let fired: Arc<Vec<AtomicUsize>> = Arc::new((0..N).map(|_| AtomicUsize::new(0)).collect());
    let early = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..N)
        .map(|i| {
            let (f, e, c) = (fired.clone(), early.clone(), clock.clone());
            let delay = Duration::from_secs(10) + Duration::from_millis(i as u64 % 1000);
            s.schedule(delay, move || {
                if c.now() - start < delay {
                    e.fetch_add(1, Ordering::SeqCst);
                }
                f[i].fetch_add(1, Ordering::SeqCst);
            })
            .unwrap()
        })
        .collect();
    for h in handles.iter().step_by(2) {
        assert!(h.cancel());
    }
    let st = s.stats();
    assert_eq!(
        (st.scheduled, st.cancelled, st.pending),
        (N as u64, (N / 2) as u64, N / 2)
    );
    clock.advance(Duration::from_secs(12));
    wait_until("the rest fire", || s.stats().fired == (N / 2) as u64);
    assert_eq!(s.shutdown(), 0);
    assert_eq!(early.load(Ordering::SeqCst), 0);
    for (i, f) in fired.iter().enumerate() {
        assert_eq!(f.load(Ordering::SeqCst), i % 2, "timer {i}");
    }
}

/// A reset while the timer waits in its outbox moves it there: earlier (the
/// tick thread is woken for it, and it fires at its new deadline without
/// any further `advance`) and later (it does not fire at the old one).
#[test]
fn reset_in_the_outbox_moves_the_deadline_both_ways() {
    let clock = ManualClock::new();
    let s = manual(&clock);
    let start = clock.now();
    let at = Arc::new(Mutex::new(Vec::new()));
    let (a1, c1) = (at.clone(), clock.clone());
    let sooner = s
        .schedule(Duration::from_secs(3600), move || {
            a1.lock().unwrap().push(("sooner", c1.now() - start));
        })
        .unwrap();
    let (a2, c2) = (at.clone(), clock.clone());
    let later = s
        .schedule(Duration::from_secs(2), move || {
            a2.lock().unwrap().push(("later", c2.now() - start));
        })
        .unwrap();
    assert!(sooner.reset(Duration::from_secs(1)));
    assert!(later.reset(Duration::from_secs(5)));
    clock.advance(Duration::from_secs(1));
    wait_until("the sooner timer fires", || s.stats().fired == 1);
    clock.advance(Duration::from_secs(2));
    wait_until("the tick thread reaches 3 s", || {
        s.stats().advanced >= Duration::from_secs(3)
    });
    assert_eq!(
        s.stats().fired,
        1,
        "the later timer fired at its old deadline"
    );
    clock.advance(Duration::from_secs(2));
    wait_until("the later timer fires", || s.stats().fired == 2);
    assert_eq!(
        *at.lock().unwrap(),
        vec![
            ("sooner", Duration::from_secs(1)),
            ("later", Duration::from_secs(5))
        ]
    );
    assert_eq!(s.shutdown(), 0);
}

/// Timers left in outboxes at shutdown are counted as dropped, never run,
/// and scheduling after it fails without leaving anything behind.
#[test]
fn shutdown_counts_the_timers_still_in_outboxes() {
    let s = Scheduler::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let producers: Vec<_> = (0..4)
        .map(|_| {
            let (s, r) = (s.clone(), ran.clone());
            thread::spawn(move || {
                for _ in 0..100 {
                    let r = r.clone();
                    s.schedule(Duration::from_secs(3600), move || {
                        r.fetch_add(1, Ordering::SeqCst);
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    let t = Instant::now();
    assert_eq!(s.shutdown(), 400);
    assert!(t.elapsed() < wheel_testkit::LIVENESS);
    assert!(s.schedule(Duration::ZERO, || {}).is_err());
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(s.stats().pending, 0);
}
