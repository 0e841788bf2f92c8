//! Async handlers (feature `tokio`): runs in flight bounded by
//! `max_in_flight` and not by threads, a panicking future, a future that
//! never finishes (the run timeout), the shutdown grace period, and a
//! runtime the user gives.

use crate::durable_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use durable_common::{Recorder, eventually};
use wheel_durable::{
    DurableTimers, DurableTimersBuilder, Listing, Outcome, RetryPolicy, TimerState,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn node(dir: &tempfile::TempDir) -> DurableTimersBuilder {
    DurableTimers::builder()
        .embedded(dir.path().join("t"))
        .retry(RetryPolicy::new().initial(ms(10)).jitter(0.0))
}

/// Sleeps without a runtime's timer: the node's runtime may have none.
async fn nap(d: Duration) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        std::thread::sleep(d);
        let _ = tx.send(());
    });
    let _ = rx.await;
}

#[test]
fn runs_in_flight_are_bounded_by_max_in_flight_not_by_threads() {
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(AtomicBool::new(false));
    let (n, p, d, r) = (now.clone(), peak.clone(), done.clone(), release.clone());
    let timers = node(&dir)
        .workers(2)
        .max_in_flight(600)
        .handler_async(move |_| {
            let (n, p, d, r) = (n.clone(), p.clone(), d.clone(), r.clone());
            async move {
                let mine = n.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(mine, Ordering::SeqCst);
                // Every run waits for the test's word: none ends before
                // the test has seen how many are in flight.
                while !r.load(Ordering::SeqCst) {
                    nap(ms(5)).await;
                }
                n.fetch_sub(1, Ordering::SeqCst);
                d.fetch_add(1, Ordering::SeqCst);
                Outcome::Done
            }
        })
        .build()
        .unwrap();
    let due = SystemTime::now() + ms(100);
    let batch: Vec<(String, SystemTime, &[u8])> = (0..1000)
        .map(|i| (format!("k{i}"), due, &b""[..]))
        .collect();
    let refs: Vec<(&str, SystemTime, &[u8])> =
        batch.iter().map(|(k, t, p)| (k.as_str(), *t, *p)).collect();
    timers.add_many(&refs).unwrap();
    eventually("600 runs in flight on 2 threads", || {
        now.load(Ordering::SeqCst) == 600
    });
    // More are due, but none starts past the bound.
    std::thread::sleep(ms(200));
    assert_eq!(peak.load(Ordering::SeqCst), 600);
    // Nor does the node start, in the store, more than it can run soon:
    // runs waiting for a slot are at most a store batch (256) deep, and
    // the rest stay claimed (a started run waiting would need its lease
    // renewed, and a lease that lapses means the timer runs twice).
    let (running, claimed) = store_states(&timers);
    assert!(running <= 600 + 257, "{running} started for 600 slots");
    assert_eq!(running + claimed, 1000);
    release.store(true, Ordering::SeqCst);
    eventually("all 1000 done", || done.load(Ordering::SeqCst) == 1000);
    assert_eq!(peak.load(Ordering::SeqCst), 600);
    eventually("the store empty", || {
        let s = timers.stats();
        s.pending == Some(0) && s.claimed == Some(0)
    });
    timers.shutdown().unwrap();
}

/// Timers started and timers claimed (not started), as the store lists them.
fn store_states(timers: &DurableTimers) -> (usize, usize) {
    let mut page = timers.list(Listing::Claimed, 1000).unwrap();
    let (mut running, mut claimed) = (0, 0);
    loop {
        for t in &page.timers {
            match t.state {
                TimerState::Running => running += 1,
                TimerState::Claimed => claimed += 1,
                other => panic!("{} listed as claimed is {other:?}", t.key),
            }
        }
        match &page.next {
            Some(c) => page = timers.list_after(c, 1000).unwrap(),
            None => return (running, claimed),
        }
    }
}

#[test]
fn a_panicking_future_counts_as_a_retry() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new();
    let r = rec.clone();
    let timers = node(&dir)
        .handler_async(move |t| {
            let r = r.clone();
            async move {
                r.handler(0, |_| Outcome::Done)(&t);
                if t.attempt == 1 {
                    panic!("a bug on the first attempt");
                }
                Outcome::Done
            }
        })
        .build()
        .unwrap();
    timers.add("p", ms(10), b"").unwrap();
    let runs = rec.wait_for(2);
    assert_eq!(
        runs.iter().map(|r| r.attempt).collect::<Vec<_>>(),
        [1, 2],
        "a retry after the panic"
    );
    eventually("done", || timers.get("p").unwrap().is_none());
    timers.shutdown().unwrap();
}

/// Sets its flag when dropped: tells a cancelled future from one that
/// still runs.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_future_past_its_run_timeout_is_cancelled_and_retried() {
    let dir = tempfile::tempdir().unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    let attempts = Arc::new(AtomicUsize::new(0));
    let (d, a) = (dropped.clone(), attempts.clone());
    let timers = node(&dir)
        .run_timeout(ms(200))
        .handler_async(move |t| {
            let d = d.clone();
            a.fetch_add(1, Ordering::SeqCst);
            async move {
                if t.attempt == 1 {
                    let _flag = Dropped(d);
                    std::future::pending::<()>().await;
                }
                Outcome::Done
            }
        })
        .build()
        .unwrap();
    timers.add("stuck", ms(10), b"").unwrap();
    eventually("the second attempt done", || {
        timers.get("stuck").unwrap().is_none()
    });
    assert!(
        dropped.load(Ordering::SeqCst),
        "the stuck future was dropped"
    );
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    timers.shutdown().unwrap();
}

#[test]
fn shutdown_cancels_runs_past_the_grace_period_and_hands_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let started = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let (s, d) = (started.clone(), dropped.clone());
    let timers = node(&dir)
        .shutdown_grace(ms(100))
        .handler_async(move |_| {
            let (s, d) = (s.clone(), d.clone());
            async move {
                let _flag = Dropped(d);
                s.store(true, Ordering::SeqCst);
                std::future::pending::<Outcome>().await
            }
        })
        .build()
        .unwrap();
    timers.add("long", ms(10), b"x").unwrap();
    eventually("the run started", || started.load(Ordering::SeqCst));
    timers.shutdown().unwrap();
    assert!(dropped.load(Ordering::SeqCst), "the future was cancelled");
    // Handed back: pending again, due at once, its attempt counted.
    let client = DurableTimers::builder()
        .embedded(dir.path().join("t"))
        .build()
        .unwrap();
    let info = client.get("long").unwrap().expect("still stored");
    assert_eq!(info.state, TimerState::Pending);
    assert_eq!(info.attempts, 1);
    assert!(info.due <= SystemTime::now());
    client.shutdown().unwrap();
}

#[test]
fn shutdown_hands_back_runs_still_waiting_for_a_slot() {
    let dir = tempfile::tempdir().unwrap();
    let going = Arc::new(AtomicUsize::new(0));
    let g = going.clone();
    let timers = node(&dir)
        .max_in_flight(2)
        .shutdown_grace(ms(200))
        .handler_async(move |_| {
            let g = g.clone();
            async move {
                g.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<Outcome>().await
            }
        })
        .build()
        .unwrap();
    let due = SystemTime::now() + ms(50);
    let keys: Vec<String> = (0..10).map(|i| format!("k{i}")).collect();
    let batch: Vec<(&str, SystemTime, &[u8])> =
        keys.iter().map(|k| (k.as_str(), due, &b""[..])).collect();
    timers.add_many(&batch).unwrap();
    eventually("both slots taken", || going.load(Ordering::SeqCst) == 2);
    eventually("the rest started and waiting", || {
        store_states(&timers) == (10, 0)
    });
    // The slots never free: shutdown ends anyway, after its grace period.
    timers.shutdown().unwrap();
    assert_eq!(going.load(Ordering::SeqCst), 2, "no run past the bound");
    let client = DurableTimers::builder()
        .embedded(dir.path().join("t"))
        .build()
        .unwrap();
    for k in &keys {
        let info = client.get(k).unwrap().expect("still stored");
        assert_eq!(info.state, TimerState::Pending, "{k} handed back");
    }
    client.shutdown().unwrap();
}

#[test]
fn tasks_run_on_the_runtime_the_user_gives() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("users-runtime")
        .build()
        .unwrap();
    let rec = Recorder::new();
    let names = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (r, n) = (rec.clone(), names.clone());
    let timers = node(&dir)
        .runtime(rt.handle().clone())
        .handler_async(move |t| {
            let (r, n) = (r.clone(), n.clone());
            async move {
                let name = std::thread::current().name().map(str::to_owned);
                n.lock().unwrap().push(name);
                r.handler(0, |_| Outcome::Done)(&t)
            }
        })
        .build()
        .unwrap();
    for k in ["a", "b", "c"] {
        timers.add(k, ms(10), b"").unwrap();
    }
    rec.wait_for(3);
    timers.shutdown().unwrap();
    let names = names.lock().unwrap().clone();
    assert!(
        names.iter().all(|n| n.as_deref() == Some("users-runtime")),
        "{names:?}"
    );
    // The node leaves the user's runtime running.
    assert_eq!(rt.block_on(async { 7 }), 7);
}

#[test]
fn an_async_handler_beside_a_blocking_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = node(&dir)
        .handler(|_| Outcome::Done)
        .handler_async(|_| async { Outcome::Done })
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("choose one handler"), "{e}");
    let e = node(&dir)
        .max_in_flight(0)
        .handler_async(|_| async { Outcome::Done })
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("max_in_flight"), "{e}");
}
