//! `DelayQueue::take_async` on a hand-written executor and on tokio.
#![cfg(not(loom))]

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use wheel::{DelayQueue, ManualClock};

mod common;
use common::{LIVENESS, block_on, counting, ms, wait_for};

#[test]
fn mini_executor_never_early() {
    let q = DelayQueue::new();
    let start = Instant::now();
    q.insert(2u64, ms(20)).unwrap();
    q.insert(1u64, ms(10)).unwrap();
    assert_eq!(block_on(q.take_async()), Some(1));
    assert!(start.elapsed() >= ms(10));
    assert_eq!(block_on(q.take_async()), Some(2));
    assert!(start.elapsed() >= ms(20));
}

#[test]
fn due_item_is_ready_on_first_poll() {
    let q = DelayQueue::new();
    q.insert("now", Duration::ZERO).unwrap();
    let (count, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(q.take_async());
    assert_eq!(f.as_mut().poll(&mut cx), Poll::Ready(Some("now")));
    assert_eq!(count.0.load(Ordering::SeqCst), 0);
}

#[test]
fn earlier_insert_wakes_async_taker() {
    let q = DelayQueue::new();
    q.insert("hour", Duration::from_secs(3600)).unwrap();
    thread::scope(|s| {
        let h = s.spawn(|| block_on(q.take_async()));
        thread::sleep(ms(30));
        q.insert("soon", ms(5)).unwrap();
        assert_eq!(h.join().unwrap(), Some("soon"));
    });
}

#[test]
fn close_wakes_async_taker() {
    let q = DelayQueue::<u8>::new();
    q.insert(1, Duration::from_secs(3600)).unwrap();
    thread::scope(|s| {
        let h = s.spawn(|| block_on(q.take_async()));
        thread::sleep(ms(30));
        q.close();
        assert_eq!(h.join().unwrap(), None);
    });
    assert_eq!(block_on(q.take_async()), None);
    assert_eq!(q.drain(), [1]);
}

#[test]
fn manual_clock_async() {
    let clock = ManualClock::new();
    let q = DelayQueue::builder().clock(clock.clone()).build().unwrap();
    q.insert("rated", Duration::from_secs(48 * 3600)).unwrap();
    let (count, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(q.take_async());
    assert_eq!(f.as_mut().poll(&mut cx), Poll::Pending);
    clock.advance(Duration::from_secs(47 * 3600));
    // The helper may wake us (it re-checks), but the item is not due.
    thread::sleep(ms(20));
    assert_eq!(f.as_mut().poll(&mut cx), Poll::Pending);
    let before = count.0.load(Ordering::SeqCst);
    clock.advance(Duration::from_secs(3600));
    wait_for("condition never became true", || {
        count.0.load(Ordering::SeqCst) > before
    });
    assert_eq!(f.as_mut().poll(&mut cx), Poll::Ready(Some("rated")));
}

#[test]
fn repoll_with_new_waker_wakes_the_new_one() {
    let q = DelayQueue::new();
    q.insert(9u8, ms(30)).unwrap();
    let (old, old_waker) = counting();
    let (new, new_waker) = counting();
    let mut f = pin!(q.take_async());
    assert_eq!(
        f.as_mut().poll(&mut Context::from_waker(&old_waker)),
        Poll::Pending
    );
    assert_eq!(
        f.as_mut().poll(&mut Context::from_waker(&new_waker)),
        Poll::Pending
    );
    wait_for("condition never became true", || {
        new.0.load(Ordering::SeqCst) > 0
    });
    assert_eq!(old.0.load(Ordering::SeqCst), 0, "stale waker woken");
    assert_eq!(
        f.as_mut().poll(&mut Context::from_waker(&new_waker)),
        Poll::Ready(Some(9))
    );
}

#[test]
fn dropped_future_withdraws_and_others_still_get_items() {
    let q = DelayQueue::new();
    q.insert(1u8, ms(20)).unwrap();
    let (count, waker) = counting();
    {
        let mut f = pin!(q.take_async());
        assert_eq!(
            f.as_mut().poll(&mut Context::from_waker(&waker)),
            Poll::Pending
        );
    } // dropped while registered
    assert_eq!(block_on(q.take_async()), Some(1));
    thread::sleep(ms(20));
    assert_eq!(count.0.load(Ordering::SeqCst), 0, "dropped future woken");
}

#[test]
fn many_registrations_do_not_pile_up() {
    // A select-style loop creates and drops a future per round; each must
    // withdraw, or the queue would wake an ever-growing list.
    let q = DelayQueue::<u8>::new();
    q.insert(1, Duration::from_secs(3600)).unwrap();
    let (_count, waker) = counting();
    for _ in 0..10_000 {
        let mut f = pin!(q.take_async());
        assert_eq!(
            f.as_mut().poll(&mut Context::from_waker(&waker)),
            Poll::Pending
        );
    }
    assert!(format!("{q:?}").contains("async_takers: 0"), "{q:?}");
    let mut f = pin!(q.take_async());
    assert_eq!(
        f.as_mut().poll(&mut Context::from_waker(&waker)),
        Poll::Pending
    );
    assert!(format!("{q:?}").contains("async_takers: 1"), "{q:?}");
    q.insert(2, Duration::ZERO).unwrap();
    assert_eq!(
        f.as_mut().poll(&mut Context::from_waker(&waker)),
        Poll::Ready(Some(2))
    );
    assert!(format!("{q:?}").contains("async_takers: 0"), "{q:?}");
}

#[test]
fn tokio_multi_thread_exactly_once() {
    const N: usize = 2_000;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let q = Arc::new(DelayQueue::new());
    let got = Arc::new(Mutex::new(Vec::new()));
    rt.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let q = Arc::clone(&q);
            let got = Arc::clone(&got);
            tasks.push(tokio::spawn(async move {
                while let Some((i, due)) = q.take_async().await {
                    assert!(Instant::now() >= due, "item {i} early");
                    got.lock().unwrap().push(i);
                }
            }));
        }
        for i in 0..N {
            let delay = Duration::from_micros((i as u64 * 7919) % 15_000);
            q.insert((i, Instant::now() + delay), delay).unwrap();
            if i % 200 == 0 {
                tokio::task::yield_now().await;
            }
        }
        let give_up = Instant::now() + LIVENESS;
        while got.lock().unwrap().len() < N {
            assert!(Instant::now() < give_up, "items not taken");
            tokio::time::sleep(ms(5)).await;
        }
        q.close();
        for t in tasks {
            t.await.unwrap();
        }
    });
    let mut all = got.lock().unwrap().clone();
    all.sort_unstable();
    assert_eq!(all, (0..N).collect::<Vec<_>>());
}

#[test]
fn tokio_current_thread_sync_and_async_takers_share() {
    // A blocking taker and an async taker (on a current-thread runtime)
    // share one queue; both take until the queue is closed, so neither can
    // wait for items the other already took. Every item comes out once.
    let q = Arc::new(DelayQueue::new());
    let blocking = {
        let q = Arc::clone(&q);
        thread::spawn(move || q.iter().collect::<Vec<u32>>())
    };
    let asynchronous = {
        let q = Arc::clone(&q);
        thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(async {
                let mut mine = Vec::new();
                while let Some(v) = q.take_async().await {
                    mine.push(v);
                }
                mine
            })
        })
    };
    for i in 0..100 {
        q.insert(i, ms(u64::from(i % 10))).unwrap();
    }
    wait_for("items were never all taken", || q.is_empty());
    q.close();
    let mut all = blocking.join().unwrap();
    all.extend(asynchronous.join().unwrap());
    all.sort_unstable();
    assert_eq!(all, (0..100).collect::<Vec<_>>());
}

/// `Pin<&mut TakeFuture>` is usable with plain `poll` (it is `Unpin`).
#[test]
fn take_future_is_unpin() {
    fn unpin<F: Unpin>(_: &F) {}
    let q = DelayQueue::<u8>::new();
    let f = q.take_async();
    unpin(&f);
    let mut f = f;
    let (_c, w) = counting();
    assert_eq!(
        Pin::new(&mut f).poll(&mut Context::from_waker(&w)),
        Poll::Pending
    );
}
