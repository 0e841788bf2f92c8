//! Behaviour tests of the `Scheduler`. Timing is only asserted as
//! "not early" and "eventually", with generous bounds.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use wheel::{BuildError, ManualClock, ScheduleError, Scheduler, Stats, TimerHandle};

/// Liveness bound: something that should happen within milliseconds.
const EVENTUALLY: Duration = wheel_testkit::LIVENESS;

use wheel_testkit::eventually as wait_until;

fn manual(clock: &ManualClock, workers: usize) -> Scheduler {
    Scheduler::builder()
        .tick(Duration::from_millis(1))
        .workers(workers)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// Waits until the tick thread has processed the clock's current time and
/// every claimed run has been taken by a worker and has finished.
fn settle(s: &Scheduler, clock: &ManualClock, start: Instant, done: impl Fn(&Stats) -> bool) {
    let target = clock.now() - start;
    assert!(s.stats().elapsed >= target);
    wait_until("tick thread catches up", || s.stats().advanced >= target);
    wait_until("runs finish", || done(&s.stats()));
}

/// Counts live closures: +1 when created, -1 when dropped.
#[derive(Clone)]
struct Live(Arc<AtomicUsize>);
struct Guard(Arc<AtomicUsize>);
impl Live {
    fn new() -> Live {
        Live(Arc::new(AtomicUsize::new(0)))
    }
    fn guard(&self) -> Guard {
        self.0.fetch_add(1, Ordering::SeqCst);
        Guard(self.0.clone())
    }
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}
impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn handle_is_small_and_types_are_shareable() {
    fn assert_traits<T: Clone + Send + Sync + 'static>() {}
    assert_traits::<Scheduler>();
    assert_traits::<TimerHandle>();
    assert_traits::<ManualClock>();
    assert!(std::mem::size_of::<TimerHandle>() <= 16);
}

/// `elapsed` is the time since the scheduler started, whether or not the
/// tick thread is awake; `advanced` is how far the tick thread has got,
/// and catches up with it.
#[test]
fn elapsed_is_time_since_the_start_and_advanced_follows_it() {
    let clock = ManualClock::new();
    let s = manual(&clock, 1);
    assert_eq!(s.stats().elapsed, Duration::ZERO);
    clock.advance(Duration::from_millis(5_500));
    // Nothing is due: the tick thread may not have looked at the clock yet,
    // but `elapsed` is read from the clock itself.
    assert_eq!(s.stats().elapsed, Duration::from_millis(5_500));
    wait_until("the tick thread catches up", || {
        s.stats().advanced == Duration::from_millis(5_500)
    });
    let system = Scheduler::builder().workers(1).build().unwrap();
    thread::sleep(Duration::from_millis(20));
    let st = system.stats();
    // An idle scheduler's tick thread sleeps; `elapsed` goes on.
    assert!(st.elapsed >= Duration::from_millis(20));
    assert!(st.advanced <= st.elapsed);
}

/// Every return of the tick thread from parking is counted: an advance of
/// the clock wakes it, so the count grows past its value before. The clock
/// is advanced on every poll because an advance made before the tick thread
/// has registered with the clock wakes nothing.
#[test]
fn wakeups_count_the_tick_threads_returns_from_parking() {
    let clock = ManualClock::new();
    let s = manual(&clock, 1);
    for _ in 0..3 {
        let before = s.stats().wakeups;
        wait_until("an advance wakes the tick thread", || {
            clock.advance(Duration::from_millis(1));
            s.stats().wakeups > before
        });
    }
}

#[test]
fn forty_eight_hours_later_with_manual_clock() {
    let clock = ManualClock::new();
    let start = clock.now();
    let s = manual(&clock, 2);
    let fired = Arc::new(Mutex::new(Vec::new()));
    let hour = Duration::from_secs(3600);
    let delays = [
        hour,
        24 * hour,
        48 * hour,
        48 * hour + Duration::from_millis(1),
        72 * hour,
    ];
    for (i, d) in delays.iter().enumerate() {
        let (fired, clock) = (fired.clone(), clock.clone());
        let due = start + *d;
        s.schedule(*d, move || {
            let now = clock.now();
            assert!(now >= due, "timer {i} fired early");
            fired.lock().unwrap().push(i);
        })
        .unwrap();
    }
    let ran = |n: u64| move |st: &Stats| st.fired == n && st.queued == 0;
    clock.advance(48 * hour - Duration::from_secs(1));
    settle(&s, &clock, start, ran(2));
    wait_until("callbacks recorded", || fired.lock().unwrap().len() == 2);
    clock.advance(Duration::from_secs(1));
    settle(&s, &clock, start, ran(3));
    wait_until("callbacks recorded", || fired.lock().unwrap().len() == 3);
    assert_eq!(s.stats().pending, 2);
    clock.advance(Duration::from_millis(1));
    settle(&s, &clock, start, ran(4));
    clock.advance(24 * hour);
    settle(&s, &clock, start, ran(5));
    wait_until("callbacks recorded", || fired.lock().unwrap().len() == 5);
    let mut got = fired.lock().unwrap().clone();
    got.sort();
    assert_eq!(got, vec![0, 1, 2, 3, 4]);
    assert_eq!(s.stats().pending, 0);
    // Lateness is measured with the manual clock: the worst was the 1 h
    // timer, run when the clock jumped to 48 h - 1 s.
    assert_eq!(s.stats().max_lateness, 47 * hour - Duration::from_secs(1));
}

#[test]
fn zero_delay_and_past_instant_run_once_and_never_early() {
    let s = Scheduler::builder().workers(2).build().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    for _ in 0..10 {
        let c = count.clone();
        s.schedule(Duration::ZERO, move || {
            c.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        let c = count.clone();
        let past = Instant::now() - Duration::from_secs(1);
        s.schedule_at(past, move || {
            c.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    }
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for i in 0..300 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_micros(seed % 20_000);
        let at = Instant::now() + delay;
        let tx = tx.clone();
        if i % 2 == 0 {
            s.schedule(delay, move || tx.send((at, Instant::now())).unwrap())
        } else {
            s.schedule_at(at, move || tx.send((at, Instant::now())).unwrap())
        }
        .unwrap();
    }
    for _ in 0..300 {
        let (at, ran) = rx.recv_timeout(EVENTUALLY).unwrap();
        assert!(ran >= at, "fired {:?} early", at - ran);
    }
    wait_until("immediate timers run", || {
        count.load(Ordering::SeqCst) == 20
    });
    wait_until("all claimed", || s.stats().fired == 320);
    assert_eq!(s.stats().pending, 0);
    assert_eq!(count.load(Ordering::SeqCst), 20);
}

#[test]
fn duration_max_and_far_instants_are_accepted_and_never_overflow() {
    let clock = ManualClock::new();
    let start = clock.now();
    let s = manual(&clock, 1);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let never = s
        .schedule(Duration::MAX, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let r = ran.clone();
    let never_rep = s
        .schedule_repeating(Duration::MAX, move || {
            r.fetch_add(100, Ordering::SeqCst);
        })
        .unwrap();
    // Within the ~584 years that nanoseconds from the start can count, a
    // far instant fires once the clock gets there; beyond, it never fires.
    let years = Duration::from_secs(100 * 365 * 24 * 3600);
    let far = s
        .schedule_at(start + years, || {})
        .expect("a far instant is accepted");
    let r = ran.clone();
    let beyond = s
        .schedule_at(start + 20 * years, move || {
            r.fetch_add(1000, Ordering::SeqCst);
        })
        .expect("an instant beyond the range is accepted");
    clock.advance(years);
    settle(&s, &clock, start, |st| st.fired == 1 && st.queued == 0);
    assert!(!far.is_active());
    clock.advance(Duration::MAX);
    // The clock saturates; the tick thread must survive and fire nothing.
    thread::sleep(Duration::from_millis(20));
    let st = s.stats();
    assert_eq!((st.fired, ran.load(Ordering::SeqCst)), (1, 0));
    assert!(never.is_active() && never_rep.is_active() && beyond.is_active());
    assert!(never.reset(Duration::MAX));
    assert!(never.cancel());
    assert!(never_rep.cancel());
    // With the system clock too.
    let sys = Scheduler::builder().workers(1).build().unwrap();
    let h = sys.schedule(Duration::MAX, || unreachable!()).unwrap();
    assert!(h.is_active());
    assert_eq!(sys.shutdown(), 1);
}

#[test]
fn bad_settings_are_typed_errors() {
    assert!(matches!(
        Scheduler::builder().tick(Duration::ZERO).build(),
        Err(BuildError::ZeroTick)
    ));
    assert!(matches!(
        Scheduler::builder().tick(Duration::MAX).build(),
        Err(BuildError::TickTooLong)
    ));
    assert!(matches!(
        Scheduler::builder().workers(0).build(),
        Err(BuildError::ZeroWorkers)
    ));
    assert!(matches!(
        Scheduler::builder().max_pending(0).build(),
        Err(BuildError::ZeroMaxPending)
    ));
    let s = Scheduler::builder().workers(1).build().unwrap();
    assert_eq!(
        s.schedule_repeating(Duration::ZERO, || {}).unwrap_err(),
        ScheduleError::ZeroPeriod
    );
    assert_eq!(s.stats().scheduled, 0);
}

#[test]
fn cancel_from_inside_callbacks() {
    let s = Scheduler::builder().workers(2).build().unwrap();
    // Repeating: cancels itself on its third run; no fourth run starts.
    let runs = Arc::new(AtomicUsize::new(0));
    let slot: Arc<OnceLock<TimerHandle>> = Arc::new(OnceLock::new());
    let (tx, rx) = mpsc::channel();
    let (r, sl) = (runs.clone(), slot.clone());
    let h = s
        .schedule_repeating(Duration::from_millis(1), move || {
            if r.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                let h = sl.get().expect("handle stored before the first run");
                tx.send(h.cancel()).unwrap();
            }
        })
        .unwrap();
    slot.set(h.clone()).unwrap();
    assert!(
        rx.recv_timeout(EVENTUALLY).unwrap(),
        "self-cancel of a repeating timer"
    );
    assert!(!h.is_active());
    thread::sleep(Duration::from_millis(30));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    // One-shot: it already started, so cancel answers false.
    let slot: Arc<OnceLock<TimerHandle>> = Arc::new(OnceLock::new());
    let (tx, rx) = mpsc::channel();
    let sl = slot.clone();
    let h = s
        .schedule(Duration::from_millis(2), move || {
            let h = sl.get().unwrap();
            tx.send((h.cancel(), h.is_active(), h.reset(Duration::from_secs(1))))
                .unwrap();
        })
        .unwrap();
    slot.set(h).unwrap();
    assert_eq!(rx.recv_timeout(EVENTUALLY).unwrap(), (false, false, false));
}

#[test]
fn cancel_of_a_running_repeating_timer_stops_later_runs() {
    let s = Scheduler::builder().workers(2).build().unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicBool::new(false));
    let violations = Arc::new(AtomicUsize::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let overlap = Arc::new(AtomicBool::new(false));
    let (st, ca, vi, ru, ov) = (
        started.clone(),
        cancelled.clone(),
        violations.clone(),
        running.clone(),
        overlap.clone(),
    );
    let h = s
        .schedule_repeating(Duration::from_millis(1), move || {
            if ca.load(Ordering::SeqCst) {
                vi.fetch_add(1, Ordering::SeqCst);
            }
            if ru.fetch_add(1, Ordering::SeqCst) != 0 {
                ov.store(true, Ordering::SeqCst);
            }
            st.fetch_add(1, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(5)); // longer than the period
            ru.fetch_sub(1, Ordering::SeqCst);
        })
        .unwrap();
    wait_until("three runs", || started.load(Ordering::SeqCst) >= 3);
    assert!(h.cancel());
    cancelled.store(true, Ordering::SeqCst);
    thread::sleep(Duration::from_millis(30));
    assert_eq!(
        violations.load(Ordering::SeqCst),
        0,
        "a run started after cancel"
    );
    assert!(!overlap.load(Ordering::SeqCst), "runs overlapped");
    assert!(!h.cancel());
}

#[test]
fn shutdown_from_inside_a_callback_does_not_deadlock() {
    for workers in [1, 2] {
        let s = Scheduler::builder().workers(workers).build().unwrap();
        let live = Live::new();
        let g = live.guard();
        s.schedule(Duration::from_secs(3600), move || drop(g))
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let s2 = s.clone();
        s.schedule(Duration::ZERO, move || {
            let n = s2.shutdown();
            tx.send((
                n,
                s2.is_shutdown(),
                s2.schedule(Duration::ZERO, || {}).is_err(),
            ))
            .unwrap();
        })
        .unwrap();
        assert_eq!(rx.recv_timeout(EVENTUALLY).unwrap(), (1, true, true));
        assert_eq!(live.count(), 0, "the pending closure was dropped");
        assert_eq!(s.shutdown(), 0, "idempotent");
        assert_eq!(s.stats().dropped, 1);
    }
}

#[test]
fn dropping_the_last_clone_inside_a_callback_is_fine() {
    let s = Scheduler::builder().workers(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let s2 = s.clone();
    let h = s
        .schedule(Duration::from_millis(5), move || {
            drop(s2);
            tx.send(()).unwrap();
        })
        .unwrap();
    drop(s);
    rx.recv_timeout(EVENTUALLY).unwrap();
    assert!(!h.is_active());
    assert!(!h.cancel(), "handles outlive the scheduler");
}

#[test]
fn shutdown_drops_pending_timers_and_rejects_new_ones() {
    let s = Scheduler::builder().workers(1).build().unwrap();
    let live = Live::new();
    let mut handles = Vec::new();
    for i in 0..10 {
        let g = live.guard();
        let h = if i % 2 == 0 {
            s.schedule(Duration::from_secs(60), move || drop(g))
        } else {
            s.schedule_repeating(Duration::from_secs(60), move || {
                let _ = &g;
            })
        };
        handles.push(h.unwrap());
    }
    assert!(handles[0].cancel());
    assert_eq!(s.shutdown(), 9);
    assert_eq!(s.shutdown(), 0);
    assert_eq!(live.count(), 0);
    assert!(handles.iter().all(|h| !h.is_active() && !h.cancel()));
    assert_eq!(
        s.schedule(Duration::ZERO, || {}).unwrap_err(),
        ScheduleError::Shutdown
    );
    assert_eq!(
        s.schedule_at(Instant::now(), || {}).unwrap_err(),
        ScheduleError::Shutdown
    );
    assert_eq!(
        s.schedule_repeating(Duration::from_secs(1), || {})
            .unwrap_err(),
        ScheduleError::Shutdown
    );
    let st = s.stats();
    assert_eq!((st.pending, st.dropped, st.cancelled), (0, 9, 1));
}

#[test]
fn shutdown_lets_running_callbacks_finish() {
    let s = Scheduler::builder().workers(1).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let finished = Arc::new(AtomicBool::new(false));
    let f = finished.clone();
    s.schedule(Duration::ZERO, move || {
        tx.send(()).unwrap();
        thread::sleep(Duration::from_millis(50));
        f.store(true, Ordering::SeqCst);
    })
    .unwrap();
    rx.recv_timeout(EVENTUALLY).unwrap();
    s.shutdown();
    assert!(
        finished.load(Ordering::SeqCst),
        "shutdown joined the worker"
    );
}

#[test]
fn stale_handles_answer_false_and_leave_the_new_timer_alone() {
    let s = Scheduler::builder().workers(1).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let old = s
        .schedule(Duration::ZERO, move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(EVENTUALLY).unwrap();
    wait_until("slot released", || {
        !old.is_active() && s.stats().pending == 0
    });
    // Give the worker time to release the slot, then reuse it.
    thread::sleep(Duration::from_millis(10));
    let new = s.schedule(Duration::from_secs(60), || {}).unwrap();
    let index = |h: &TimerHandle| {
        let d = format!("{h:?}");
        d.split("index: ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(index(&old), index(&new), "the slot is reused");
    assert!(!old.cancel());
    assert!(!old.reset(Duration::ZERO));
    assert!(!old.is_active());
    assert!(
        new.is_active(),
        "the stale handle did not touch the new timer"
    );
    assert!(new.cancel());
    // Cancelled: the slot's next user is also safe from both handles.
    thread::sleep(Duration::from_millis(10));
    let newer = s.schedule(Duration::from_secs(60), || {}).unwrap();
    assert!(!old.cancel() && !new.cancel());
    assert!(newer.is_active());
}

#[test]
fn reset_with_manual_clock_moves_the_deadline() {
    let clock = ManualClock::new();
    let start = clock.now();
    let s = manual(&clock, 1);
    let (tx, rx) = mpsc::channel();
    let c = clock.clone();
    let h = s
        .schedule(Duration::from_secs(10), move || tx.send(c.now()).unwrap())
        .unwrap();
    clock.advance(Duration::from_secs(5));
    assert!(h.reset(Duration::from_secs(10))); // now due at 15 s
    clock.advance(Duration::from_secs(5)); // 10 s: the old deadline
    settle(&s, &clock, start, |st| st.queued == 0);
    assert_eq!(s.stats().fired, 0, "fired at the old deadline");
    assert!(h.is_active());
    clock.advance(Duration::from_secs(5));
    assert_eq!(
        rx.recv_timeout(EVENTUALLY).unwrap() - start,
        Duration::from_secs(15)
    );
    assert!(!h.reset(Duration::from_secs(1)), "already fired");
    // Reset a repeating timer between runs and during a run.
    let (tx, rx) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let (c, gate) = (clock.clone(), Arc::new(Mutex::new(())));
    let g2 = gate.clone();
    let t0 = clock.now();
    let rep = s
        .schedule_repeating(Duration::from_secs(10), move || {
            tx.send(c.now()).unwrap();
            drop(g2.lock().unwrap_or_else(|e| e.into_inner()));
            done_tx.send(()).unwrap();
        })
        .unwrap();
    assert!(rep.reset(Duration::from_secs(3)));
    clock.advance(Duration::from_secs(3));
    assert_eq!(
        rx.recv_timeout(EVENTUALLY).unwrap() - t0,
        Duration::from_secs(3)
    );
    done.recv_timeout(EVENTUALLY).unwrap();
    clock.advance(Duration::from_secs(10));
    assert_eq!(
        rx.recv_timeout(EVENTUALLY).unwrap() - t0,
        Duration::from_secs(13)
    );
    done.recv_timeout(EVENTUALLY).unwrap();
    {
        let _hold = gate.lock().unwrap(); // the next run blocks inside
        clock.advance(Duration::from_secs(10));
        assert_eq!(
            rx.recv_timeout(EVENTUALLY).unwrap() - t0,
            Duration::from_secs(23)
        );
        assert!(rep.reset(Duration::from_secs(2)), "reset during a run");
    }
    clock.advance(Duration::from_secs(2));
    assert_eq!(
        rx.recv_timeout(EVENTUALLY).unwrap() - t0,
        Duration::from_secs(25)
    );
    assert!(rep.cancel());
}

#[test]
fn reset_at_with_manual_clock_moves_the_deadline_to_an_instant() {
    let clock = ManualClock::new();
    let start = clock.now();
    let s = manual(&clock, 1);
    let (tx, rx) = mpsc::channel();
    let c = clock.clone();
    let h = s
        .schedule(Duration::from_secs(10), move || tx.send(c.now()).unwrap())
        .unwrap();
    clock.advance(Duration::from_secs(5));
    assert!(h.reset_at(start + Duration::from_secs(15)));
    clock.advance(Duration::from_secs(5)); // 10 s: the old deadline
    settle(&s, &clock, start, |st| st.queued == 0);
    assert_eq!(s.stats().fired, 0, "fired at the old deadline");
    clock.advance(Duration::from_secs(5));
    assert_eq!(
        rx.recv_timeout(EVENTUALLY).unwrap() - start,
        Duration::from_secs(15)
    );
    assert!(!h.reset_at(clock.now()), "already fired");
    // An instant already past runs the timer at once, without the clock
    // moving.
    let (tx, rx) = mpsc::channel();
    let c = clock.clone();
    let late = s
        .schedule(Duration::from_secs(60), move || tx.send(c.now()).unwrap())
        .unwrap();
    assert!(late.reset_at(start));
    assert_eq!(
        rx.recv_timeout(EVENTUALLY).unwrap() - start,
        Duration::from_secs(15)
    );
    // A repeating timer: the next run moves, later runs keep the period
    // from there.
    let (tx, rx) = mpsc::channel();
    let c = clock.clone();
    let t0 = clock.now();
    let rep = s
        .schedule_repeating(Duration::from_secs(10), move || {
            tx.send(c.now()).unwrap();
        })
        .unwrap();
    assert!(rep.reset_at(t0 + Duration::from_secs(3)));
    clock.advance(Duration::from_secs(3));
    assert_eq!(
        rx.recv_timeout(EVENTUALLY).unwrap() - t0,
        Duration::from_secs(3)
    );
    clock.advance(Duration::from_secs(10));
    assert_eq!(
        rx.recv_timeout(EVENTUALLY).unwrap() - t0,
        Duration::from_secs(13)
    );
    assert!(rep.cancel());
    assert!(!rep.reset_at(clock.now()), "cancelled");
}

#[test]
fn reset_is_linearizable_with_firing() {
    let s = Scheduler::builder().workers(2).build().unwrap();
    let mut moved = 0;
    for i in 0..200u64 {
        let (tx, rx) = mpsc::channel();
        let h = s
            .schedule(Duration::from_micros(500 + (i % 7) * 100), move || {
                tx.send(Instant::now()).unwrap()
            })
            .unwrap();
        thread::sleep(Duration::from_micros(400 + (i % 5) * 100));
        let before = Instant::now();
        let ok = h.reset(Duration::from_millis(20));
        let fired = rx.recv_timeout(EVENTUALLY).unwrap();
        if ok {
            moved += 1;
            assert!(
                fired >= before + Duration::from_millis(20),
                "reset returned true but the old deadline fired"
            );
        }
        assert!(
            rx.recv_timeout(Duration::from_millis(1)).is_err(),
            "fired twice"
        );
    }
    // Both outcomes must be reachable for the test to mean something; the
    // sleep is centred on the deadline, so this holds on any machine that
    // is not wildly overloaded.
    eprintln!("reset won {moved}/200 races");
}

#[test]
fn repeating_is_fixed_rate_and_skips_missed_runs() {
    let clock = ManualClock::new();
    let start = clock.now();
    let s = manual(&clock, 1);
    let times = Arc::new(Mutex::new(Vec::new()));
    let (t, c) = (times.clone(), clock.clone());
    let h = s
        .schedule_repeating(Duration::from_secs(1), move || {
            t.lock().unwrap().push(c.now() - start)
        })
        .unwrap();
    for i in 1..=5u64 {
        clock.advance(Duration::from_secs(1));
        wait_until("run", || times.lock().unwrap().len() as u64 == i);
    }
    // Late by 8.5 s: the run due at 6 s happens once, 7..14 s are skipped.
    clock.advance(Duration::from_millis(9500));
    wait_until("late run", || times.lock().unwrap().len() == 6);
    settle(&s, &clock, start, |st| st.queued == 0);
    thread::sleep(Duration::from_millis(20));
    assert_eq!(times.lock().unwrap().len(), 6, "missed runs were burst");
    clock.advance(Duration::from_millis(500)); // 15 s: back on the grid
    wait_until("on-grid run", || times.lock().unwrap().len() == 7);
    let secs: Vec<u64> = times
        .lock()
        .unwrap()
        .iter()
        .map(|d| d.as_millis() as u64)
        .collect();
    assert_eq!(secs, vec![1000, 2000, 3000, 4000, 5000, 14500, 15000]);
    assert!(h.cancel());
    assert_eq!(s.stats().pending, 0);
}

/// A run that outlasts its period is followed by one late run, then the
/// timer is back on its grid. The clock jumps while the run is still in
/// its callback, so the re-arm reaches the tick thread after the jump: the
/// schedule must not depend on when it gets there.
#[test]
fn a_run_longer_than_its_period_is_followed_by_one_late_run() {
    let clock = ManualClock::new();
    let start = clock.now();
    let s = manual(&clock, 1);
    let times = Arc::new(Mutex::new(Vec::new()));
    let (entered_tx, entered_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let (t, c) = (times.clone(), clock.clone());
    let h = s
        .schedule_repeating(Duration::from_secs(1), move || {
            t.lock().unwrap().push((c.now() - start).as_millis() as u64);
            entered_tx.send(()).unwrap();
            release_rx.lock().unwrap().recv().unwrap();
        })
        .unwrap();
    clock.advance(Duration::from_secs(1));
    entered_rx.recv_timeout(EVENTUALLY).unwrap();
    // The run due at 1 s is in its callback; the runs due at 2, 3 and 4 s
    // are missed while it runs.
    clock.advance(Duration::from_millis(3500));
    settle(&s, &clock, start, |_| true);
    release_tx.send(()).unwrap();
    // The run due at 2 s comes late, at once; 3 and 4 s are skipped.
    entered_rx.recv_timeout(EVENTUALLY).unwrap();
    release_tx.send(()).unwrap();
    settle(&s, &clock, start, |st| st.queued == 0);
    thread::sleep(Duration::from_millis(20));
    assert_eq!(
        *times.lock().unwrap(),
        vec![1000, 4500],
        "missed runs burst"
    );
    clock.advance(Duration::from_millis(499)); // 4.999 s: nothing due
    settle(&s, &clock, start, |st| st.queued == 0);
    thread::sleep(Duration::from_millis(20));
    assert_eq!(times.lock().unwrap().len(), 2, "a run came early");
    clock.advance(Duration::from_millis(1)); // 5 s: back on the grid
    entered_rx.recv_timeout(EVENTUALLY).unwrap();
    release_tx.send(()).unwrap();
    assert_eq!(*times.lock().unwrap(), vec![1000, 4500, 5000]);
    assert!(h.cancel());
    assert_eq!(s.stats().pending, 0);
}

#[test]
fn panicking_callbacks_are_counted_and_workers_survive() {
    let s = Scheduler::builder().workers(1).build().unwrap();
    for _ in 0..3 {
        s.schedule(Duration::ZERO, || panic!("test panic (expected)"))
            .unwrap();
    }
    let rep = s
        .schedule_repeating(Duration::from_millis(1), || panic!("test panic (expected)"))
        .unwrap();
    wait_until("panics counted", || s.stats().panicked == 4);
    let (tx, rx) = mpsc::channel();
    s.schedule(Duration::ZERO, move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(EVENTUALLY).unwrap();
    assert!(!rep.is_active(), "a panicking repeating timer is stopped");
    assert_eq!(s.stats().panicked, 4);
    assert_eq!(s.stats().pending, 0);
}

#[test]
fn max_pending_rejects_with_nothing_scheduled() {
    let s = Scheduler::builder()
        .workers(1)
        .max_pending(3)
        .build()
        .unwrap();
    let live = Live::new();
    let a = s.schedule(Duration::from_secs(60), || {}).unwrap();
    let _b = s
        .schedule_repeating(Duration::from_secs(60), || {})
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let _c = s
        .schedule(Duration::ZERO, move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(EVENTUALLY).unwrap();
    wait_until("fired timer leaves the count", || s.stats().pending == 2);
    let _d = s.schedule(Duration::from_secs(60), || {}).unwrap();
    let g = live.guard();
    assert_eq!(
        s.schedule(Duration::from_secs(60), move || drop(g))
            .unwrap_err(),
        ScheduleError::Full
    );
    assert_eq!(live.count(), 0, "the rejected closure was dropped");
    assert_eq!(
        s.schedule_repeating(Duration::from_secs(1), || {})
            .unwrap_err(),
        ScheduleError::Full
    );
    let st = s.stats();
    assert_eq!((st.pending, st.scheduled), (3, 4));
    assert!(a.cancel());
    assert!(s.schedule(Duration::from_secs(60), || {}).is_ok());
}

#[test]
fn cancelled_closures_are_dropped_promptly_not_at_their_deadline() {
    for manual_clock in [false, true] {
        let clock = ManualClock::new();
        let mut b = Scheduler::builder().workers(1);
        if manual_clock {
            b = b.clock(clock.clone());
        }
        let s = b.build().unwrap();
        let live = Live::new();
        // One far timer that stays: the tick thread plans an hour's sleep.
        let keep = s.schedule(Duration::from_secs(3600), || {}).unwrap();
        thread::sleep(Duration::from_millis(20));
        for round in 0..5 {
            let handles: Vec<_> = (0..20_000)
                .map(|_| {
                    let g = live.guard();
                    s.schedule(Duration::from_secs(3600), move || drop(g))
                        .unwrap()
                })
                .collect();
            assert!(handles.iter().all(|h| h.cancel()));
            wait_until("cancelled closures dropped", || live.count() == 0);
            assert_eq!(s.stats().pending, 1, "round {round}");
        }
        assert!(keep.is_active());
    }
}

#[test]
fn fired_closures_are_dropped_and_counters_add_up() {
    let s = Scheduler::builder().workers(2).build().unwrap();
    let live = Live::new();
    let mut handles = Vec::new();
    for i in 0..1000u64 {
        let g = live.guard();
        handles.push(
            s.schedule(Duration::from_micros(i * 3), move || drop(g))
                .unwrap(),
        );
    }
    let cancelled = handles.iter().step_by(3).filter(|h| h.cancel()).count() as u64;
    wait_until("all done", || live.count() == 0);
    wait_until("counters", || s.stats().pending == 0);
    let st = s.stats();
    assert_eq!(st.scheduled, 1000);
    assert_eq!(st.cancelled, cancelled);
    assert_eq!(st.fired + st.cancelled, 1000);
}
