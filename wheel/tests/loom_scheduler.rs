//! loom models of the scheduler's lock-free protocols.
//!
//! They drive the *real* `Scheduler` (slot table state machine, outboxes,
//! command queue, wake-up protocol, tick thread, worker pool, shutdown) with a
//! `ManualClock`, one worker, and at most two extra model threads: under
//! `cfg(loom)` every atomic, mutex, condvar, park and thread in the crate is
//! loom's, and the queue is a loom mutex around a `VecDeque`.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" cargo test --release -p wheel --test loom_scheduler`

use std::time::Duration;

use wheel::{ManualClock, Scheduler};
use wheel_testkit::model::sync::atomic::{AtomicUsize, Ordering};
use wheel_testkit::model::sync::{Arc, Condvar, Mutex};
use wheel_testkit::model::thread;

/// Preemption bound: 2 keeps every model within a minute or two.
const PREEMPTIONS: usize = 2;

/// Runs a model with this file's bound (see `wheel_testkit::model`:
/// loom under `--cfg loom`, a std-thread stress test otherwise).
fn check(f: impl Fn() + Sync + Send + 'static) {
    wheel_testkit::model::check(PREEMPTIONS, f);
}

/// A one-way latch with no spurious wake-ups (loom's `Notify` may wake
/// spuriously), built on loom's mutex and condvar.
struct Notify {
    set: Mutex<bool>,
    cv: Condvar,
}

impl Notify {
    fn new() -> Notify {
        Notify {
            set: Mutex::new(false),
            cv: Condvar::new(),
        }
    }
    fn notify(&self) {
        *self.set.lock().unwrap() = true;
        self.cv.notify_all();
    }
    fn wait(&self) {
        let mut set = self.set.lock().unwrap();
        while !*set {
            set = self.cv.wait(set).unwrap();
        }
    }
}

fn scheduler(clock: &ManualClock) -> Scheduler {
    Scheduler::builder()
        .workers(1)
        .tick(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// Exactly one of: `cancel` returned true, the callback ran, or shutdown
/// dropped the timer (counted).
#[test]
fn cancel_races_fire() {
    check(|| {
        let clock = ManualClock::new();
        let s = scheduler(&clock);
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let h = s
            .schedule(Duration::ZERO, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        let canceller = thread::spawn(move || h.cancel());
        let cancelled = canceller.join().unwrap();
        let dropped = s.shutdown();
        let ran = ran.load(Ordering::SeqCst);
        assert_eq!(
            usize::from(cancelled) + ran + dropped,
            1,
            "{cancelled} {ran} {dropped}"
        );
    });
}

/// A schedule racing shutdown either fails with nothing scheduled, or is
/// accounted for: it ran, or shutdown counted it as dropped.
#[test]
fn schedule_races_shutdown() {
    check(|| {
        let clock = ManualClock::new();
        let s = scheduler(&clock);
        let ran = Arc::new(AtomicUsize::new(0));
        let (s2, r) = (s.clone(), ran.clone());
        let producer = thread::spawn(move || {
            s2.schedule(Duration::ZERO, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .is_ok()
        });
        let dropped = s.shutdown();
        let ok = producer.join().unwrap();
        let ran = ran.load(Ordering::SeqCst);
        if ok {
            assert_eq!(
                ran + dropped,
                1,
                "accepted timer lost: ran {ran} dropped {dropped}"
            );
        } else {
            assert_eq!((ran, dropped), (0, 0));
        }
        assert!(s.schedule(Duration::ZERO, || {}).is_err());
    });
}

/// The tick thread plans to sleep until a far timer; a producer submits an
/// earlier (immediate) one while the tick thread is deciding to sleep. The
/// immediate timer must run without any `advance` (a lost wake-up would
/// leave every thread blocked: loom reports the deadlock).
#[test]
fn no_lost_wakeup_for_an_earlier_deadline() {
    check(|| {
        let clock = ManualClock::new();
        let s = scheduler(&clock);
        let _far = s.schedule(Duration::from_secs(3600), || {}).unwrap();
        let done = Arc::new(Notify::new());
        let (s2, d) = (s.clone(), done.clone());
        let producer = thread::spawn(move || {
            s2.schedule(Duration::ZERO, move || d.notify()).unwrap();
        });
        done.wait();
        producer.join().unwrap();
        assert_eq!(s.shutdown(), 1, "only the far timer was still pending");
    });
}

/// A cancel from another thread of a far timer that the tick thread may be
/// taking from its outbox: the second far timer fills the outbox (two
/// timers under loom), so the tick thread is woken to take both. The cancel
/// finds the timer in the outbox (and drops the closure itself), taken but
/// not yet applied (the tick thread drops it when it applies it), or in the
/// wheel (its `Cancel` command must wake the tick thread, which may be
/// sleeping towards the far deadline): the closure is dropped without any
/// `advance` in every case.
#[test]
fn no_lost_wakeup_for_a_cancel() {
    check(|| {
        struct OnDrop(Arc<Notify>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.notify();
            }
        }
        let clock = ManualClock::new();
        let s = scheduler(&clock);
        let dropped = Arc::new(Notify::new());
        let guard = OnDrop(dropped.clone());
        let h = s
            .schedule(Duration::from_secs(3600), move || drop(guard))
            .unwrap();
        let canceller = thread::spawn(move || assert!(h.cancel()));
        let _filler = s.schedule(Duration::from_secs(3600), || {}).unwrap();
        dropped.wait();
        canceller.join().unwrap();
        assert_eq!(s.shutdown(), 1, "only the filler was still pending");
    });
}

/// A reset to now of a far timer that the tick thread may be taking from
/// its outbox (the filler fills it, as above): moved in place while in the
/// outbox, or by a `Reset` command once taken, the timer runs once, without
/// any `advance`.
#[test]
fn reset_races_the_take() {
    check(|| {
        let clock = ManualClock::new();
        let s = scheduler(&clock);
        let ran = Arc::new(Notify::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let (r, n) = (ran.clone(), runs.clone());
        let h = s
            .schedule(Duration::from_secs(3600), move || {
                n.fetch_add(1, Ordering::SeqCst);
                r.notify();
            })
            .unwrap();
        let resetter = thread::spawn(move || assert!(h.reset(Duration::ZERO)));
        let _filler = s.schedule(Duration::from_secs(3600), || {}).unwrap();
        ran.wait();
        resetter.join().unwrap();
        assert_eq!(s.shutdown(), 1, "only the filler was still pending");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

/// A far timer cancelled by its producer: it is still in the lane's
/// outbox, so the canceller frees the slot and drops the closure itself
/// while the tick thread may be running its round (woken by the timer's
/// take-by tick): the closure is dropped without any `advance`, exactly
/// once, and the timer is counted as cancelled, not dropped.
#[test]
fn cancel_races_the_insert() {
    check(|| {
        struct OnDrop(Arc<Notify>, Arc<AtomicUsize>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.1.fetch_add(1, Ordering::SeqCst);
                self.0.notify();
            }
        }
        let clock = ManualClock::new();
        let s = scheduler(&clock);
        let freed = Arc::new(Notify::new());
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = OnDrop(freed.clone(), drops.clone());
        let h = s
            .schedule(Duration::from_secs(3600), move || drop(guard))
            .unwrap();
        assert!(h.cancel());
        freed.wait();
        let st = s.stats();
        assert_eq!((st.pending, st.scheduled, st.cancelled), (0, 1, 1));
        assert_eq!(s.shutdown(), 0);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    });
}

/// A timer cancelled before the tick thread applied it frees its slot at
/// once, and the next `schedule` may reuse the slot while the first timer
/// is still in the tick thread's hands: the filler fills the outbox, so
/// the tick thread takes both while the cancel runs. Applying the first
/// timer late, the tick thread must drop its closure unrun and leave the
/// new occupant alone: it runs once, at its own deadline (a timer applied
/// to the wrong occupant would arm a second wheel entry for the slot). The
/// old handle must not touch it.
#[test]
fn slot_reused_before_the_cancelled_insert_is_applied() {
    check(|| {
        struct OnDrop(Arc<AtomicUsize>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let clock = ManualClock::new();
        let s = scheduler(&clock);
        let first = Arc::new(AtomicUsize::new(0));
        let guard = OnDrop(first.clone());
        let old = s
            .schedule(Duration::from_secs(10), move || {
                drop(guard);
                unreachable!("a cancelled timer ran");
            })
            .unwrap();
        let _filler = s.schedule(Duration::from_secs(3600), || {}).unwrap();
        assert!(old.cancel());
        let ran = Arc::new(Notify::new());
        let (r, start) = (ran.clone(), clock.now());
        let c = clock.clone();
        let new = s
            .schedule(Duration::from_secs(20), move || {
                assert!(c.now() - start >= Duration::from_secs(20), "ran early");
                r.notify();
            })
            .unwrap();
        let stale = thread::spawn(move || (old.cancel(), old.is_active()));
        assert_eq!(stale.join().unwrap(), (false, false));
        assert!(new.is_active(), "the old handle touched the new timer");
        let st = s.stats();
        assert_eq!((st.pending, st.scheduled, st.cancelled), (2, 3, 1));
        clock.advance(Duration::from_secs(20));
        ran.wait();
        assert_eq!(s.shutdown(), 1, "only the filler was still pending");
        assert_eq!(first.load(Ordering::SeqCst), 1);
        assert_eq!(s.stats().fired, 1);
    });
}

/// A handle kept after its timer fired must not touch the slot's next
/// occupant (ABA): its cancel and reset answer false, and the new timer
/// stays pending.
#[test]
fn stale_handle_after_slot_reuse() {
    check(|| {
        let clock = ManualClock::new();
        let s = scheduler(&clock);
        let done = Arc::new(Notify::new());
        let d = done.clone();
        let old = s.schedule(Duration::ZERO, move || d.notify()).unwrap();
        done.wait(); // the first timer ran; its slot is (being) released
        let old2 = old.clone();
        let stale = thread::spawn(move || (old2.cancel(), old2.reset(Duration::ZERO)));
        let new = s.schedule(Duration::from_secs(3600), || {}).unwrap();
        assert_eq!(stale.join().unwrap(), (false, false));
        assert!(!old.is_active());
        assert!(new.is_active(), "a stale handle touched another timer");
        assert!(new.cancel());
        assert_eq!(s.shutdown(), 0);
    });
}

/// A repeating timer cancelled while a run may be in progress: cancel
/// returns true and no run starts after it returned. Externally a run
/// "starts" when its callback is entered; a run whose start (the worker's
/// QUEUED -> RUNNING CAS) preceded the cancel may still enter its callback
/// just after `cancel` returns, so the observable property is: at most one
/// callback entry (the run already in progress) after `cancel` returned.
/// Without the cancel, the two `advance`s would produce two runs.
#[test]
fn repeating_cancelled_during_a_run() {
    check(|| {
        let clock = ManualClock::new();
        let s = scheduler(&clock);
        let started = Arc::new(Notify::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let (st, r) = (started.clone(), runs.clone());
        let h = s
            .schedule_repeating(Duration::from_secs(1), move || {
                r.fetch_add(1, Ordering::SeqCst);
                st.notify();
            })
            .unwrap();
        clock.advance(Duration::from_secs(1));
        started.wait(); // the first run has entered its callback
        let r = runs.clone();
        let canceller = thread::spawn(move || {
            let ok = h.cancel();
            (ok, r.load(Ordering::SeqCst), h.is_active())
        });
        clock.advance(Duration::from_secs(1)); // a second run may race the cancel
        let (ok, seen, active) = canceller.join().unwrap();
        assert!(ok, "a repeating timer is always cancellable");
        assert!(!active);
        s.shutdown();
        let total = runs.load(Ordering::SeqCst);
        assert!(
            total <= seen + 1,
            "a run started after cancel returned: {total} > {seen} + 1"
        );
    });
}
