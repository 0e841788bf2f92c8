//! Loom models of `DelayQueue`: insert/take/remove/reset/close/advance races,
//! for blocking takes, take futures and `poll_expired`.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test --release -p wheel --test loom_delay_queue`
//!
//! Time is a `ManualClock`, so every wait in the queue is untimed and only
//! an event (insert, reset, close, advance, leader hand-off) can end it: a
//! lost wake-up shows up as a loom deadlock.
//!
//! Not covered here: the hand-off from a *timed* leader to followers when
//! its timeout ends (loom's `wait_timeout` never times out, and with a
//! manual clock every `advance` wakes all takers). That path is covered by
//! `leader_hands_off_to_followers` in `tests/delay_queue.rs`, which fails
//! if the hand-off is removed.

use std::time::Duration;

use wheel::{Closed, DelayQueue, ManualClock};
use wheel_testkit::model::sync::Arc;
use wheel_testkit::model::thread;

/// Preemptions explored per execution (keeps each model well under a minute).
const PREEMPTIONS: usize = 3;

/// Runs a model with this file's bound (see `wheel_testkit::model`:
/// loom under `--cfg loom`, a std-thread stress test otherwise).
fn model(f: impl Fn() + Sync + Send + 'static) {
    wheel_testkit::model::check(PREEMPTIONS, f);
}

fn queue() -> (ManualClock, Arc<DelayQueue<u32>>) {
    let clock = ManualClock::new();
    let q = DelayQueue::builder().clock(clock.clone()).build().unwrap();
    (clock, Arc::new(q))
}

const LATER: Duration = Duration::from_secs(1);

/// A taker blocks on an empty queue while a due item is inserted.
#[test]
fn insert_wakes_blocked_taker() {
    model(|| {
        let (_clock, q) = queue();
        let q2 = q.clone();
        let t = thread::spawn(move || q2.take());
        q.insert(1, Duration::ZERO).unwrap();
        assert_eq!(t.join().unwrap(), Some(1));
        assert!(q.is_empty());
    });
}

/// A taker sleeps for a later item; an earlier, due item must wake it.
#[test]
fn earlier_insert_deposes_leader() {
    model(|| {
        let (_clock, q) = queue();
        q.insert(1, LATER).unwrap();
        let q2 = q.clone();
        let t = thread::spawn(move || q2.take());
        q.insert(2, Duration::ZERO).unwrap();
        assert_eq!(t.join().unwrap(), Some(2));
        assert_eq!(q.len(), 1);
    });
}

/// Reset to "now" of a pending item wakes a sleeping taker.
#[test]
fn reset_earlier_wakes_taker() {
    model(|| {
        let (_clock, q) = queue();
        let k = q.insert(1, LATER).unwrap();
        let q2 = q.clone();
        let t = thread::spawn(move || q2.take());
        assert!(q.reset(k, Duration::ZERO));
        assert_eq!(t.join().unwrap(), Some(1));
    });
}

/// Advancing the manual clock wakes a taker whose item came due.
#[test]
fn advance_wakes_taker() {
    model(|| {
        let (clock, q) = queue();
        q.insert(1, LATER).unwrap();
        let q2 = q.clone();
        let t = thread::spawn(move || q2.take());
        clock.advance(LATER);
        assert_eq!(t.join().unwrap(), Some(1));
    });
}

/// Close while a taker waits for an item that is not due: the taker
/// returns `None` and `drain` still hands the item back.
#[test]
fn close_while_taking() {
    model(|| {
        let (_clock, q) = queue();
        q.insert(1, LATER).unwrap();
        let q2 = q.clone();
        let t = thread::spawn(move || q2.take());
        q.close();
        assert_eq!(t.join().unwrap(), None);
        assert_eq!(q.drain(), [1]);
    });
}

/// Insert of a due item, a blocked take and close all race: the item is
/// either taken or drained (exactly once), or refused with `Closed`.
#[test]
fn insert_take_close_race() {
    model(|| {
        let (_clock, q) = queue();
        let (qa, qb) = (q.clone(), q.clone());
        let taker = thread::spawn(move || qa.take());
        let inserter = thread::spawn(move || qb.insert(7, Duration::ZERO));
        q.close();
        let inserted = inserter.join().unwrap();
        let taken = taker.join().unwrap();
        let drained = q.drain();
        match inserted {
            Ok(_) => match taken {
                Some(v) => {
                    assert_eq!(v, 7);
                    assert!(drained.is_empty());
                }
                None => assert_eq!(drained, [7]),
            },
            Err(Closed(v)) => {
                assert_eq!(v, 7);
                assert_eq!(taken, None);
                assert!(drained.is_empty());
            }
        }
    });
}

/// Remove races a take of the same due item: exactly one gets it.
#[test]
fn remove_races_take() {
    model(|| {
        let (_clock, q) = queue();
        let k = q.insert(5, Duration::ZERO).unwrap();
        let q2 = q.clone();
        let t = thread::spawn(move || q2.try_take());
        let removed = q.remove(k);
        let taken = t.join().unwrap();
        assert!(
            removed.is_some() != taken.is_some(),
            "{removed:?} {taken:?}"
        );
        assert_eq!(removed.or(taken), Some(5));
        assert!(q.is_empty());
    });
}

/// Two blocked takers, two due items inserted one after the other: the
/// leader hand-off must get both taken (no follower left asleep).
#[test]
fn two_takers_two_items() {
    model(|| {
        let (_clock, q) = queue();
        let (qa, qb) = (q.clone(), q.clone());
        let a = thread::spawn(move || qa.take());
        let b = thread::spawn(move || qb.take());
        q.insert(1, Duration::ZERO).unwrap();
        q.insert(2, Duration::ZERO).unwrap();
        let mut got = [a.join().unwrap().unwrap(), b.join().unwrap().unwrap()];
        got.sort_unstable();
        assert_eq!(got, [1, 2]);
    });
}

/// Two takers wait for a later item; the clock advances: the one item is
/// taken once, and close then releases the other taker.
#[test]
fn two_takers_advance_then_close() {
    model(|| {
        let (clock, q) = queue();
        q.insert(1, LATER).unwrap();
        let (qa, qb) = (q.clone(), q.clone());
        let a = thread::spawn(move || qa.take());
        let b = thread::spawn(move || qb.take());
        clock.advance(LATER);
        // Wait until the item is gone, then release the other taker.
        while !q.is_empty() {
            thread::yield_now();
        }
        q.close();
        let (ra, rb) = (a.join().unwrap(), b.join().unwrap());
        assert!(ra.is_some() != rb.is_some(), "{ra:?} {rb:?}");
        assert_eq!(ra.or(rb), Some(1));
    });
}

/// An async taker registers while a due item is inserted: the helper thread
/// (or the poll itself) must deliver the item; no lost wake-up.
#[test]
fn insert_wakes_async_taker() {
    use std::future::Future;
    use std::task::{Context, Poll, Wake, Waker};

    /// Unparks the polling thread (park/unpark keep a token: no lost wake).
    struct Unpark(thread::Thread);
    impl Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }

    model(|| {
        let (_clock, q) = queue();
        let q2 = q.clone();
        let inserter = thread::spawn(move || q2.insert(3, Duration::ZERO).unwrap());
        let waker = Waker::from(std::sync::Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut fut = q.take_async();
        let got = loop {
            if let Poll::Ready(v) = std::pin::Pin::new(&mut fut).poll(&mut cx) {
                break v;
            }
            // Pending: only a wake-up may lead to a retry (else deadlock).
            thread::park();
        };
        assert_eq!(got, Some(3));
        drop(fut);
        inserter.join().unwrap();
    });
}

/// A task polls `poll_expired` (registered by its waker, not by a future's
/// id) while a due item is inserted, then the queue is closed: the item and
/// then the end are delivered; no lost wake-up.
#[test]
fn insert_wakes_poll_expired_caller() {
    use std::task::{Context, Poll, Wake, Waker};

    /// Unparks the polling thread (park/unpark keep a token: no lost wake).
    struct Unpark(thread::Thread);
    impl Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }

    model(|| {
        let (_clock, q) = queue();
        let q2 = q.clone();
        let producer = thread::spawn(move || {
            q2.insert(3, Duration::ZERO).unwrap();
            q2.close();
        });
        let waker = Waker::from(std::sync::Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut got = Vec::new();
        loop {
            match q.poll_expired(&mut cx) {
                Poll::Ready(Some(e)) => got.push(e.into_inner()),
                Poll::Ready(None) => break,
                // Pending: only a wake-up may lead to a retry (else deadlock).
                Poll::Pending => thread::park(),
            }
        }
        // The close may come before the item is taken: then it stays inside.
        assert!(
            got == [3] || (got.is_empty() && q.drain() == [3]),
            "{got:?}"
        );
        producer.join().unwrap();
    });
}
