//! Behaviour of `DelayQueue` with blocking consumers.
#![cfg(not(loom))]

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use wheel::{BuildError, Closed, DelayKey, DelayQueue, ManualClock};

/// Generous bound for "eventually happens" (liveness, not speed).
const LIVENESS: Duration = Duration::from_secs(20);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Joins a taker that must finish: one still blocked after [`LIVENESS`]
/// missed its wake-up. Then the queue is closed, which wakes every taker,
/// so that the thread scope can end and the test fails with a message
/// instead of hanging.
fn join_taker<T, U>(q: &DelayQueue<U>, h: thread::ScopedJoinHandle<'_, T>, what: &str) -> T {
    let start = Instant::now();
    while !h.is_finished() {
        if start.elapsed() > LIVENESS {
            q.close();
            panic!("{what}: the taker was still blocked after {LIVENESS:?} (lost wake-up)");
        }
        thread::sleep(ms(1));
    }
    h.join().unwrap()
}

fn manual() -> (ManualClock, DelayQueue<u32>) {
    let clock = ManualClock::new();
    let q = DelayQueue::builder().clock(clock.clone()).build().unwrap();
    (clock, q)
}

#[test]
fn send_sync() {
    fn check<T: Send + Sync>() {}
    check::<DelayQueue<String>>();
    check::<DelayKey>();
    check::<wheel::TakeFuture<'static, String>>();
    check::<wheel::DelayQueueMut<'static, String>>();
}

#[test]
fn deadline_order_ties_fifo() {
    let (clock, q) = manual();
    q.insert(30, Duration::from_secs(3)).unwrap();
    q.insert(10, Duration::from_secs(1)).unwrap();
    q.insert(11, Duration::from_secs(1)).unwrap();
    q.insert(20, Duration::from_secs(2)).unwrap();
    q.insert(12, Duration::from_secs(1)).unwrap();
    q.insert(0, Duration::ZERO).unwrap();
    assert_eq!(q.try_take(), Some(0));
    assert_eq!(q.try_take(), None);
    clock.advance(Duration::from_secs(5));
    let got: Vec<u32> = std::iter::from_fn(|| q.try_take()).collect();
    assert_eq!(got, [10, 11, 12, 20, 30]);
    assert!(q.is_empty());
}

#[test]
fn manual_clock_exact_boundaries() {
    let clock = ManualClock::new();
    let q = DelayQueue::builder()
        .clock(clock.clone())
        .tick(ms(10))
        .build()
        .unwrap();
    // 25 ms rounds up to tick 3 (30 ms): not due at 25 ms, due at 30 ms.
    q.insert("a", ms(25)).unwrap();
    clock.advance(ms(24));
    assert_eq!(q.try_take(), None);
    clock.advance(ms(1));
    assert_eq!(q.try_take(), None, "tick resolution may only make it late");
    clock.advance(ms(5));
    assert_eq!(q.try_take(), Some("a"));
}

#[test]
fn manual_clock_ignores_real_time() {
    let (_clock, q) = manual();
    q.insert(1, ms(1)).unwrap();
    thread::sleep(ms(20));
    assert_eq!(q.try_take(), None);
    assert_eq!(q.len(), 1);
}

#[test]
fn never_early_system_clock() {
    let q = DelayQueue::new();
    let start = Instant::now();
    for d in [7u64, 0, 3, 15, 1, 9, 2] {
        q.insert_at(d, start + ms(d)).unwrap();
    }
    let mut last = 0;
    for _ in 0..7 {
        let d = q.take().unwrap();
        assert!(Instant::now() >= start + ms(d), "item {d} came early");
        assert!(d >= last, "out of order: {d} after {last}");
        last = d;
    }
}

#[test]
fn past_instants_are_due_at_once() {
    let q = DelayQueue::new();
    let now = Instant::now();
    let past = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
    q.insert_at("past", past).unwrap();
    q.insert("zero", Duration::ZERO).unwrap();
    assert_eq!(q.try_take(), Some("past"));
    assert_eq!(q.try_take(), Some("zero"));
}

#[test]
fn huge_delay_never_due_but_not_lost() {
    let (clock, q) = manual();
    let k = q.insert(1, Duration::MAX).unwrap();
    q.insert(2, Duration::from_secs(86_400 * 365 * 50)).unwrap();
    clock.advance(Duration::from_secs(86_400 * 365));
    assert_eq!(q.try_take(), None);
    assert_eq!(q.remove(k), Some(1));
    assert_eq!(q.drain(), [2]);
}

#[test]
fn remove_and_reset_with_stale_keys() {
    let (clock, q) = manual();
    let a = q.insert(1, Duration::from_secs(10)).unwrap();
    let b = q.insert(2, Duration::from_secs(20)).unwrap();
    assert!(q.reset(b, Duration::from_secs(5)));
    clock.advance(Duration::from_secs(5));
    assert_eq!(q.try_take(), Some(2));
    assert!(!q.reset(b, Duration::ZERO), "taken item's key is stale");
    assert_eq!(q.remove(b), None);
    assert_eq!(q.remove(a), Some(1));
    assert_eq!(q.remove(a), None);
    // The slot is reused: the stale keys must not touch the new item.
    let c = q.insert(3, Duration::from_secs(1)).unwrap();
    assert_eq!(q.remove(a), None);
    assert!(!q.reset(a, Duration::ZERO));
    assert_eq!(q.len(), 1);
    assert_ne!(a, c);
    assert_eq!(q.remove(c), Some(3));
}

#[test]
fn reset_later_delays_the_item() {
    let (clock, q) = manual();
    let k = q.insert(1, Duration::from_secs(1)).unwrap();
    assert!(q.reset(k, Duration::from_secs(10)));
    clock.advance(Duration::from_secs(9));
    assert_eq!(q.try_take(), None);
    clock.advance(Duration::from_secs(1));
    assert_eq!(q.try_take(), Some(1));
}

#[test]
fn reset_at_moves_the_item_to_an_instant() {
    let (clock, mut q) = manual();
    let start = clock.now();
    let a = q.insert(1, Duration::from_secs(10)).unwrap();
    let b = q.insert(2, Duration::from_secs(10)).unwrap();
    assert!(q.reset_at(a, start + Duration::from_secs(3)));
    // Through the exclusive handle too, and to an instant already past.
    assert!(q.exclusive().reset_at(b, start));
    assert_eq!(q.try_take(), Some(2), "a past deadline is due at once");
    assert!(!q.reset_at(b, start), "taken item's key is stale");
    assert!(!q.exclusive().reset_at(b, start));
    clock.advance(Duration::from_millis(2_999));
    assert_eq!(q.try_take(), None, "never before the new deadline");
    clock.advance(Duration::from_millis(1));
    assert_eq!(q.try_take(), Some(1));
    // After close the item stays, and can still be moved.
    let c = q.insert(3, Duration::from_secs(60)).unwrap();
    q.close();
    assert!(q.reset_at(c, clock.now()));
    assert_eq!(q.try_take(), None);
    assert_eq!(q.drain(), [3]);
}

#[test]
fn reset_at_earlier_wakes_sleeping_taker() {
    let q = DelayQueue::new();
    let k = q.insert("x", Duration::from_secs(3600)).unwrap();
    thread::scope(|s| {
        let h = s.spawn(|| q.take());
        thread::sleep(ms(30));
        let deadline = Instant::now() + ms(5);
        assert!(q.reset_at(k, deadline));
        assert_eq!(join_taker(&q, h, "reset_at earlier"), Some("x"));
        assert!(Instant::now() >= deadline);
    });
}

#[test]
fn take_timeout_gives_up_then_succeeds() {
    let q = DelayQueue::new();
    q.insert(1, Duration::from_secs(3600)).unwrap();
    let t0 = Instant::now();
    assert_eq!(q.take_timeout(ms(20)), None);
    assert!(t0.elapsed() >= ms(20));
    q.insert(2, ms(5)).unwrap();
    assert_eq!(q.take_timeout(LIVENESS), Some(2));
    assert_eq!(q.take_timeout(Duration::ZERO), None);
    q.insert(3, ms(1)).unwrap();
    // A timeout past the range of Instant waits like `take`.
    assert_eq!(q.take_timeout(Duration::MAX), Some(3));
}

#[test]
fn manual_take_timeout_counts_manual_time() {
    let (clock, q) = manual();
    q.insert(1, Duration::from_secs(100)).unwrap();
    thread::scope(|s| {
        let h = s.spawn(|| q.take_timeout(Duration::from_secs(10)));
        thread::sleep(ms(30));
        assert!(!h.is_finished(), "manual timeout must not follow real time");
        clock.advance(Duration::from_secs(10));
        assert_eq!(join_taker(&q, h, "timeout on the manual clock"), None);
    });
    assert_eq!(q.len(), 1);
}

#[test]
fn blocked_taker_woken_by_advance() {
    let (clock, q) = manual();
    q.insert(7, Duration::from_secs(48 * 3600)).unwrap();
    thread::scope(|s| {
        let h = s.spawn(|| q.take());
        thread::sleep(ms(30));
        assert!(!h.is_finished());
        clock.advance(Duration::from_secs(47 * 3600));
        thread::sleep(ms(30));
        assert!(!h.is_finished(), "woken early must not mean taken early");
        clock.advance(Duration::from_secs(3600));
        assert_eq!(join_taker(&q, h, "advance past the deadline"), Some(7));
    });
}

#[test]
fn earlier_insert_wakes_sleeping_taker() {
    let q = DelayQueue::new();
    q.insert("hour", Duration::from_secs(3600)).unwrap();
    thread::scope(|s| {
        let h = s.spawn(|| {
            let v = q.take();
            (v, Instant::now())
        });
        thread::sleep(ms(30));
        let inserted = Instant::now();
        q.insert("soon", ms(10)).unwrap();
        let (v, at) = join_taker(&q, h, "earlier insert");
        assert_eq!(v, Some("soon"));
        assert!(at >= inserted + ms(10));
        assert!(at < inserted + LIVENESS);
    });
}

#[test]
fn reset_earlier_wakes_sleeping_taker() {
    let q = DelayQueue::new();
    let k = q.insert("x", Duration::from_secs(3600)).unwrap();
    thread::scope(|s| {
        let h = s.spawn(|| q.take());
        thread::sleep(ms(30));
        assert!(q.reset(k, ms(5)));
        assert_eq!(join_taker(&q, h, "reset earlier"), Some("x"));
    });
}

#[test]
fn insert_into_empty_queue_wakes_taker() {
    let q = DelayQueue::new();
    thread::scope(|s| {
        let h = s.spawn(|| q.take());
        thread::sleep(ms(30));
        q.insert(5u8, Duration::ZERO).unwrap();
        assert_eq!(join_taker(&q, h, "insert into an empty queue"), Some(5));
    });
}

#[test]
fn close_wakes_every_taker_and_keeps_items() {
    let (_clock, q) = manual();
    q.insert(1, Duration::from_secs(1)).unwrap();
    q.insert(2, Duration::ZERO).unwrap();
    assert_eq!(q.try_take(), Some(2));
    thread::scope(|s| {
        let takers: Vec<_> = (0..4).map(|_| s.spawn(|| q.take())).collect();
        let iter = s.spawn(|| q.iter().count());
        thread::sleep(ms(30));
        q.close();
        q.close(); // idempotent
        for t in takers {
            assert_eq!(t.join().unwrap(), None);
        }
        assert_eq!(iter.join().unwrap(), 0);
    });
    assert!(q.is_closed());
    assert_eq!(q.insert(3, Duration::ZERO), Err(Closed(3)));
    assert_eq!(q.try_take(), None);
    assert_eq!(q.take(), None);
    assert_eq!(q.take_timeout(Duration::from_secs(1)), None);
    assert_eq!(q.drain(), [1]);
    assert!(q.is_empty());
}

#[test]
fn closed_queue_still_removes_and_drains_in_order() {
    let (_clock, q) = manual();
    let keys: Vec<DelayKey> = (0..5u32)
        .map(|i| q.insert(i, Duration::from_secs(u64::from(10 - i))).unwrap())
        .collect();
    q.close();
    assert_eq!(q.remove(keys[2]), Some(2));
    assert!(q.reset(keys[0], Duration::from_secs(1)));
    assert_eq!(q.drain(), [0, 4, 3, 1]);
}

#[test]
fn exclusive_and_shared_methods_share_one_queue() {
    let (clock, mut q) = manual();
    let k3 = q.insert(3, ms(30)).unwrap();
    let (k1, k2) = {
        let mut x = q.exclusive();
        let k1 = x.insert(1, ms(10)).unwrap();
        let k2 = x.insert_at(2, clock.now() + ms(20)).unwrap();
        // A key from either side works on the other.
        assert!(x.reset(k3, ms(10)));
        assert_eq!(x.len(), 3);
        (k1, k2)
    };
    assert_eq!(q.remove(k2), Some(2));
    clock.advance(ms(10));
    // Same tick: 1 was inserted first, 3 was reset after it.
    assert_eq!(q.exclusive().try_take(), Some(1));
    assert_eq!(q.try_take(), Some(3));
    assert!(q.exclusive().is_empty());
    assert_eq!(q.exclusive().remove(k1), None);
}

#[test]
fn exclusive_after_close_refuses_inserts_and_takes_but_removes() {
    let (clock, mut q) = manual();
    let k = q.insert(1, ms(5)).unwrap();
    q.insert(2, ms(5)).unwrap();
    q.close();
    clock.advance(ms(5));
    let mut x = q.exclusive();
    assert!(matches!(x.insert(9, ms(1)), Err(Closed(9))));
    assert!(matches!(x.insert_at(8, clock.now()), Err(Closed(8))));
    assert_eq!(x.try_take(), None, "closed: takes return None");
    assert!(x.reset(k, ms(1)));
    assert_eq!(x.remove(k), Some(1));
    assert_eq!(x.len(), 1);
    assert_eq!(q.drain(), [2], "nothing lost");
}

#[test]
fn drain_on_open_queue_keeps_it_usable() {
    let (clock, q) = manual();
    let old = q.insert(1, Duration::from_secs(5)).unwrap();
    clock.advance(Duration::from_secs(1));
    assert_eq!(q.drain(), [1]);
    assert_eq!(q.remove(old), None);
    q.insert(2, Duration::from_secs(1)).unwrap();
    assert_eq!(q.try_take(), None);
    clock.advance(Duration::from_secs(1));
    assert_eq!(q.try_take(), Some(2));
}

#[test]
fn builder_validates() {
    assert!(matches!(
        DelayQueue::<u8>::builder().tick(Duration::ZERO).build(),
        Err(BuildError::ZeroTick)
    ));
    assert!(matches!(
        DelayQueue::<u8>::builder().tick(Duration::MAX).build(),
        Err(BuildError::TickTooLong)
    ));
    let q = DelayQueue::<u8>::builder()
        .tick(Duration::from_nanos(1))
        .capacity(100)
        .build()
        .unwrap();
    q.insert(1, Duration::from_micros(50)).unwrap();
    assert_eq!(q.take(), Some(1));
    assert!(format!("{q:?}").contains("DelayQueue"));
}

#[test]
fn manual_many_takers_each_item_once() {
    let (clock, q) = manual();
    let got = Mutex::new(Vec::new());
    thread::scope(|s| {
        for _ in 0..6 {
            s.spawn(|| {
                while let Some(v) = q.take() {
                    got.lock().unwrap().push(v);
                }
            });
        }
        for i in 0..60 {
            q.insert(i, Duration::from_secs(u64::from(i % 7) + 1))
                .unwrap();
        }
        for _ in 0..8 {
            thread::sleep(ms(5));
            clock.advance(Duration::from_secs(1));
        }
        let deadline = Instant::now() + LIVENESS;
        while got.lock().unwrap().len() < 60 && Instant::now() < deadline {
            thread::sleep(ms(2));
        }
        // Closed before the check, so that a failure ends the scope (whose
        // takers would otherwise block forever) instead of hanging.
        q.close();
        assert_eq!(got.lock().unwrap().len(), 60, "items not taken");
    });
    let mut all = got.into_inner().unwrap();
    all.sort_unstable();
    assert_eq!(all, (0..60).collect::<Vec<_>>());
}

#[test]
fn leader_hands_off_to_followers() {
    // Several blocked takers; items come due one after another. Each must
    // be taken although only one taker sleeps with a timeout at a time.
    let q = DelayQueue::new();
    let start = Instant::now();
    thread::scope(|s| {
        // `take_timeout` so that a lost hand-off fails instead of hanging.
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| q.take_timeout(LIVENESS)))
            .collect();
        thread::sleep(ms(20));
        for i in 0..4u64 {
            q.insert(i, ms(10 * (i + 1))).unwrap();
        }
        let mut got: Vec<u64> = hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect();
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2, 3]);
    });
    assert!(start.elapsed() < LIVENESS);
}

#[test]
fn stress_mpmc_exactly_once_never_early() {
    const PRODUCERS: u64 = 4;
    const CONSUMERS: usize = 4;
    const PER: u64 = 5_000;
    let q: DelayQueue<(u64, Instant)> = DelayQueue::new();
    let taken = AtomicUsize::new(0);
    let seen = Mutex::new(HashSet::new());
    let early = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..CONSUMERS {
            s.spawn(|| {
                let mut local = Vec::new();
                while let Some((id, due)) = q.take() {
                    if Instant::now() < due {
                        early.fetch_add(1, Ordering::Relaxed);
                    }
                    local.push(id);
                    taken.fetch_add(1, Ordering::Relaxed);
                }
                let mut seen = seen.lock().unwrap();
                for id in local {
                    assert!(seen.insert(id), "item {id} taken twice");
                }
            });
        }
        for p in 0..PRODUCERS {
            let q = &q;
            s.spawn(move || {
                let mut x = p.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for i in 0..PER {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let delay = Duration::from_micros(x % 20_000);
                    let due = Instant::now() + delay;
                    let id = p * PER + i;
                    if i % 10 == 0 {
                        // A decoy removed before it is due: must never come out.
                        let far = Duration::from_secs(3600);
                        let k = q.insert((u64::MAX - id, due + far), far).unwrap();
                        assert_eq!(q.remove(k).map(|v| v.0), Some(u64::MAX - id));
                    }
                    q.insert((id, due), delay).unwrap();
                }
            });
        }
        let deadline = Instant::now() + LIVENESS;
        while taken.load(Ordering::Relaxed) < (PRODUCERS * PER) as usize {
            assert!(Instant::now() < deadline, "items not taken in time");
            thread::sleep(ms(5));
        }
        q.close();
    });
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), (PRODUCERS * PER) as usize);
    assert!(
        seen.iter().all(|&id| id < PRODUCERS * PER),
        "a removed item came out"
    );
    assert_eq!(early.load(Ordering::Relaxed), 0);
    assert!(q.drain().is_empty());
}

#[test]
fn arc_shared_across_threads() {
    let q = Arc::new(DelayQueue::new());
    let q2 = Arc::clone(&q);
    let h = thread::spawn(move || q2.iter().collect::<Vec<u32>>());
    let base = Instant::now() + ms(20);
    for i in 0..10 {
        q.insert_at(i, base + ms(2 * u64::from(10 - i))).unwrap();
    }
    thread::sleep(ms(60));
    q.close();
    let got = h.join().unwrap();
    // Whatever came out before close came out once, in deadline order.
    let mut sorted = got.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(got, sorted);
    let mut all = got;
    all.extend(q.drain());
    all.sort_unstable();
    assert_eq!(all, (0..10).collect::<Vec<_>>());
}

#[test]
fn end_of_time_never_items_stay_pending() {
    // At the very end of `Instant`'s range the current tick must stay below
    // the "never" tick, so an item inserted with an overflowing delay still
    // never comes due, and due items keep their order.
    let (clock, q) = manual();
    clock.advance(Duration::MAX);
    let never = q.insert(1, Duration::MAX).unwrap();
    q.insert(2, Duration::ZERO).unwrap();
    q.insert(3, Duration::ZERO).unwrap();
    clock.advance(Duration::from_secs(1));
    assert_eq!(q.try_take(), Some(2));
    assert_eq!(q.try_take(), Some(3));
    assert_eq!(q.try_take(), None);
    assert_eq!(q.remove(never), Some(1));
}
