//! `Sleep`, `Timeout` and `Interval` on a hand-written executor, on tokio,
//! and with a `ManualClock`.
#![cfg(not(loom))]

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use wheel::{ManualClock, ScheduleError, Scheduler};

mod common;
use common::{LIVENESS, block_on, counting, ms, wait_for};

fn manual_scheduler() -> (ManualClock, Scheduler) {
    let clock = ManualClock::new();
    let s = Scheduler::builder()
        .clock(clock.clone())
        .tick(ms(1))
        .workers(1)
        .build()
        .unwrap();
    (clock, s)
}

#[test]
fn sleep_never_early_mini_executor() {
    let s = Scheduler::new();
    for d in [0u64, 1, 5, 20] {
        let start = Instant::now();
        block_on(s.sleep(ms(d)));
        assert!(start.elapsed() >= ms(d), "sleep({d} ms) came early");
    }
    let at = Instant::now() + ms(10);
    block_on(s.sleep_until(at));
    assert!(Instant::now() >= at);
    // A past instant completes promptly.
    block_on(s.sleep_until(Instant::now()));
}

#[test]
fn sleep_many_tasks_on_tokio() {
    let s = Scheduler::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..2_000u64 {
            let s = s.clone();
            let done = Arc::clone(&done);
            tasks.push(tokio::spawn(async move {
                let delay = Duration::from_micros((i * 7_919) % 30_000);
                let start = Instant::now();
                s.sleep(delay).await;
                assert!(start.elapsed() >= delay, "task {i} woke early");
                done.fetch_add(1, Ordering::SeqCst);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(done.load(Ordering::SeqCst), 2_000);
}

#[test]
fn sleep_with_manual_clock() {
    let (clock, s) = manual_scheduler();
    let (count, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let mut sleep = pin!(s.sleep(Duration::from_secs(48 * 3600)));
    assert_eq!(sleep.as_mut().poll(&mut cx), Poll::Pending);
    clock.advance(Duration::from_secs(47 * 3600));
    thread::sleep(ms(20));
    assert_eq!(sleep.as_mut().poll(&mut cx), Poll::Pending);
    assert!(!sleep.is_elapsed());
    clock.advance(Duration::from_secs(3600));
    wait_for("sleep not woken after advance", || {
        count.0.load(Ordering::SeqCst) > 0
    });
    assert_eq!(sleep.as_mut().poll(&mut cx), Poll::Ready(()));
    assert!(sleep.is_elapsed());
}

#[test]
fn new_waker_replaces_old() {
    let s = Scheduler::new();
    let (old, old_w) = counting();
    let (new, new_w) = counting();
    let mut sleep = pin!(s.sleep(ms(20)));
    assert_eq!(
        sleep.as_mut().poll(&mut Context::from_waker(&old_w)),
        Poll::Pending
    );
    assert_eq!(
        sleep.as_mut().poll(&mut Context::from_waker(&new_w)),
        Poll::Pending
    );
    wait_for("new waker not woken", || new.0.load(Ordering::SeqCst) > 0);
    assert_eq!(old.0.load(Ordering::SeqCst), 0, "replaced waker was woken");
    assert_eq!(
        sleep.as_mut().poll(&mut Context::from_waker(&new_w)),
        Poll::Ready(())
    );
}

#[test]
fn dropping_sleep_cancels_and_frees_its_timer() {
    let s = Scheduler::new();
    let (count, waker) = counting();
    {
        let mut sleep = pin!(s.sleep(Duration::from_secs(3600)));
        assert_eq!(
            sleep.as_mut().poll(&mut Context::from_waker(&waker)),
            Poll::Pending
        );
        assert_eq!(s.stats().pending, 1);
    }
    let stats = s.stats();
    assert_eq!(stats.pending, 0);
    assert_eq!(stats.cancelled, 1);
    thread::sleep(ms(20));
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        0,
        "dropped sleep woke its task"
    );
    assert_eq!(s.stats().fired, 0);
}

#[test]
fn shutdown_orphans_pending_sleep() {
    let s = Scheduler::new();
    let (count, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let mut sleep = pin!(s.sleep(Duration::from_secs(3600)));
    assert_eq!(sleep.as_mut().poll(&mut cx), Poll::Pending);
    assert_eq!(sleep.error(), None);
    s.shutdown();
    // The task is told (woken once), the sleep reports why, and it still
    // does not complete before its deadline.
    wait_for("orphaned sleep not woken", || {
        count.0.load(Ordering::SeqCst) > 0
    });
    assert_eq!(sleep.error(), Some(ScheduleError::Shutdown));
    assert_eq!(sleep.as_mut().poll(&mut cx), Poll::Pending);
    let late = s.sleep(Duration::ZERO);
    assert_eq!(late.error(), Some(ScheduleError::Shutdown));
    let mut late = pin!(late);
    assert_eq!(late.as_mut().poll(&mut cx), Poll::Pending);
}

#[test]
fn full_scheduler_reports_full() {
    let s = Scheduler::builder().max_pending(1).build().unwrap();
    let first = s.sleep(Duration::from_secs(3600));
    let second = s.sleep(Duration::from_secs(3600));
    assert_eq!(first.error(), None);
    assert_eq!(second.error(), Some(ScheduleError::Full));
    drop(first);
    assert_eq!(s.sleep(Duration::from_secs(1)).error(), None);
}

#[test]
fn timeout_ok_err_and_not_early() {
    let s = Scheduler::new();
    assert_eq!(block_on(s.timeout(ms(500), async { 5 })), Ok(5));
    let start = Instant::now();
    let r = block_on(s.timeout(ms(15), std::future::pending::<()>()));
    assert!(r.is_err());
    assert!(start.elapsed() >= ms(15), "timeout fired early");
    assert_eq!(r.unwrap_err().to_string(), "deadline has elapsed");
    // The inner future wins if it finishes before the deadline.
    let r = block_on(s.timeout(Duration::from_secs(10), s.sleep(ms(5))));
    assert_eq!(r, Ok(()));
}

#[test]
fn timeout_at_ok_err_and_not_early_with_manual_clock() {
    let (clock, s) = manual_scheduler();
    let start = clock.now();
    let deadline = start + Duration::from_secs(30);
    assert_eq!(block_on(s.timeout_at(deadline, async { 5 })), Ok(5));
    // A deadline already past elapses without the clock moving.
    let r = block_on(s.timeout_at(start, std::future::pending::<()>()));
    assert_eq!(r.unwrap_err().to_string(), "deadline has elapsed");
    // A future deadline elapses only once the clock gets there.
    let t = s.timeout_at(deadline, std::future::pending::<()>());
    let c = clock.clone();
    let waiter = thread::spawn(move || {
        let r = block_on(t);
        (r, c.now())
    });
    clock.advance(Duration::from_millis(29_999));
    thread::sleep(ms(20));
    assert!(!waiter.is_finished(), "timed out before the deadline");
    clock.advance(Duration::from_millis(1));
    let (r, at) = waiter.join().unwrap();
    assert!(r.is_err());
    assert!(at >= deadline, "timed out early, at {:?}", at - start);
}

#[test]
fn dropping_timeout_cancels_its_timer() {
    let s = Scheduler::new();
    let t = s.timeout(Duration::from_secs(3600), std::future::pending::<()>());
    assert_eq!(s.stats().pending, 1);
    assert_eq!(t.error(), None);
    drop(t);
    assert_eq!(s.stats().pending, 0);
}

#[test]
fn timeout_on_tokio_with_manual_clock() {
    let (clock, s) = manual_scheduler();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
        let t = tokio::spawn({
            let s = s.clone();
            async move { s.timeout(Duration::from_secs(30), rx).await }
        });
        tokio::time::sleep(ms(20)).await;
        assert!(!t.is_finished(), "timed out without the clock moving");
        clock.advance(Duration::from_secs(30));
        let r = tokio::time::timeout(LIVENESS, t).await.unwrap().unwrap();
        assert!(r.is_err(), "expected Elapsed, got {r:?}");
        drop(tx);
    });
}

#[test]
fn interval_fixed_rate_system_clock() {
    let s = Scheduler::new();
    let start = Instant::now();
    let mut every = s.interval(ms(10));
    assert_eq!(every.period(), ms(10));
    let mut ticks = 0;
    while ticks < 5 {
        ticks += block_on(every.tick());
        assert!(
            start.elapsed() >= ms(10) * ticks as u32,
            "tick {ticks} came early"
        );
    }
    assert!(start.elapsed() < LIVENESS);
}

#[test]
fn interval_with_manual_clock() {
    let (clock, s) = manual_scheduler();
    let mut every = s.interval(Duration::from_secs(1));
    let (count, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    assert_eq!(every.poll_tick(&mut cx), Poll::Pending);
    for round in 1..=4 {
        clock.advance(Duration::from_millis(999));
        thread::sleep(ms(10));
        assert_eq!(
            every.poll_tick(&mut cx),
            Poll::Pending,
            "early tick {round}"
        );
        let woken = count.0.load(Ordering::SeqCst);
        clock.advance(Duration::from_millis(1));
        wait_for("tick not woken", || count.0.load(Ordering::SeqCst) > woken);
        assert_eq!(every.poll_tick(&mut cx), Poll::Ready(1));
        assert_eq!(every.poll_tick(&mut cx), Poll::Pending);
    }
    assert_eq!(every.error(), None);
    drop(every);
    assert_eq!(s.stats().pending, 0, "dropping the interval cancels it");
}

#[test]
fn interval_coalesces_missed_ticks() {
    let s = Scheduler::new();
    let mut every = s.interval(ms(2));
    assert_eq!(block_on(every.tick()), 1);
    // The consumer looks away for 50 periods: no burst of 50 ready ticks,
    // one tick that reports the missed ones.
    thread::sleep(ms(100));
    let coalesced = block_on(every.tick());
    assert!(coalesced >= 2, "missed ticks not reported: {coalesced}");
}

#[test]
fn interval_errors() {
    let s = Scheduler::new();
    let mut zero = s.interval(Duration::ZERO);
    assert_eq!(zero.error(), Some(ScheduleError::ZeroPeriod));
    let (_c, w) = counting();
    assert_eq!(zero.poll_tick(&mut Context::from_waker(&w)), Poll::Pending);
    let live = s.interval(Duration::from_secs(60));
    s.shutdown();
    wait_for("interval not orphaned", || live.error().is_some());
    assert_eq!(live.error(), Some(ScheduleError::Shutdown));
}

#[test]
fn futures_are_send_and_unpin() {
    fn check<T: Send + Unpin>(_: &T) {}
    let s = Scheduler::new();
    check(&s.sleep(ms(1)));
    check(&s.timeout(ms(1), async {}));
    check(&s.timeout_at(Instant::now(), async {}));
    check(&s.interval(ms(1)));
    let mut sleep = s.sleep(ms(1));
    block_on(Pin::new(&mut sleep));
    assert!(format!("{sleep:?}").contains("elapsed: true"));
}
