//! Thread lifecycle of the `Scheduler`: every thread is joined on shutdown
//! and on drop of the last clone. A separate test binary (one test) so that
//! no other scheduler's threads are counted.
#![cfg(not(loom))]

use std::sync::mpsc;
use std::time::Duration;

use wheel::Scheduler;

/// Live threads of this process whose name starts with `wheel-`.
fn wheel_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return usize::MAX; // not Linux: the test below is skipped
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("wheel-"))
        .count()
}

/// Waits until exactly `n` wheel threads are live (a new thread names
/// itself only once it runs, an exiting one disappears once reaped).
#[track_caller]
fn eventually_threads(n: usize) {
    let what = format!("{n} wheel threads");
    wheel_testkit::eventually(&what, || wheel_threads() == n);
}

fn eventually_no_threads() {
    eventually_threads(0);
}

#[test]
fn threads_are_joined_on_shutdown_and_on_last_drop() {
    if wheel_threads() == usize::MAX {
        eprintln!("no /proc/self/task: skipped");
        return;
    }
    assert_eq!(wheel_threads(), 0);

    // Drop of the last clone joins synchronously.
    let s = Scheduler::builder().workers(3).build().unwrap();
    eventually_threads(4);
    let s2 = s.clone();
    s.schedule(Duration::from_secs(60), || {}).unwrap();
    drop(s);
    assert_eq!(wheel_threads(), 4, "a clone is still alive");
    assert!(!s2.is_shutdown());
    drop(s2);
    eventually_no_threads();

    // Explicit shutdown joins synchronously too.
    let s = Scheduler::builder().workers(2).build().unwrap();
    eventually_threads(3);
    s.shutdown();
    eventually_no_threads();
    drop(s);

    // Shutdown from inside a callback: the calling worker exits by itself.
    let s = Scheduler::builder().workers(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let s2 = s.clone();
    s.schedule(Duration::ZERO, move || tx.send(s2.shutdown()).unwrap())
        .unwrap();
    rx.recv_timeout(Duration::from_secs(20)).unwrap();
    drop(s);
    eventually_no_threads();

    // The last clone dropped inside a callback.
    let s = Scheduler::builder().workers(2).build().unwrap();
    let s2 = s.clone();
    let (tx, rx) = mpsc::channel();
    s.schedule(Duration::from_millis(2), move || {
        drop(s2);
        tx.send(()).unwrap();
    })
    .unwrap();
    drop(s);
    rx.recv_timeout(Duration::from_secs(20)).unwrap();
    eventually_no_threads();
}
