//! tokio-util's `DelayQueue` test suite (`tests/time_delay_queue.rs`,
//! tokio-util 0.7), its scenarios restated against our API and run every
//! way of taking: `poll_expired`, `try_take_expired`, the blocking
//! `take_expired`, the future of `take_async_expired`, and the `Stream`
//! (feature `stream`). Time is a [`ManualClock`] where tokio-util pauses
//! tokio's clock and sleeps.
//!
//! How the scenarios translate (the queue's documented differences):
//!
//! - End of the queue: tokio-util's `poll_expired` answers `Ready(None)`
//!   as soon as its queue is empty; ours stays `Pending` while open (other
//!   producers may insert) and answers `None` once closed. Where a
//!   tokio-util test expects `None` on an empty queue, ours checks that
//!   nothing is handed out, then closes the queue and checks the end.
//! - "Is the task woken": where tokio-util expects a wake-up, the async
//!   ways check that the task registered by the last `Pending` poll is
//!   woken (bounded wait) and the item then handed out; the blocking way
//!   checks that a blocking take returns it. Where tokio-util expects *no*
//!   wake-up, ours checks that nothing is handed out early: our helper may
//!   wake a task early at a slot boundary, like tokio-util's own cascade
//!   wake-ups, and the task just finds nothing due.
//! - Items due in the same tick come out in insert/reset order, so where
//!   tokio-util sorts what it got, ours checks the exact order.
//! - An item inserted at "now" is due at once (the current tick), so the
//!   1 ms tokio-util sleeps "for rounding" is not needed.
//! - `compact` is our `shrink_to_fit`, which keeps keys valid instead of
//!   re-mapping them; `remove` and `deadline` answer `None` for a stale
//!   key where tokio-util panics.
//!
//! tokio-util test → scenario here (each a module with one test per way,
//! except the three that take nothing, which are single tests):
//!
//! | tokio-util | here |
//! | --- | --- |
//! | `single_immediate_delay` | `single_immediate_delay` |
//! | `multi_immediate_delays` | `multi_immediate_delays` (exact order) |
//! | `single_short_delay` | `single_short_delay` |
//! | `multi_delay_at_start` | `multi_delay_at_start` (each item exactly at its ms) |
//! | `insert_in_past_fires_immediately` | `insert_in_past_fires_immediately` |
//! | `remove_entry` | `remove_entry` (end by `close`) |
//! | `reset_entry` | `reset_entry` |
//! | `reset_to_past_wakes_pending_queue` | `reset_to_past_wakes_pending_queue` |
//! | `reset_much_later` | `reset_much_later` |
//! | `reset_twice` | `reset_twice` |
//! | `repeatedly_reset_entry_inserted_as_expired` | `repeatedly_reset_entry_inserted_as_expired` |
//! | `remove_expired_item` | `remove_expired_item` |
//! | `remove_at_timer_wheel_threshold` | `remove_at_timer_wheel_threshold` (exact order) |
//! | `expires_before_last_insert` | `expires_before_last_insert` |
//! | `multi_reset` | `multi_reset` |
//! | `expire_first_key_when_reset_to_expire_earlier` | `expire_first_key_when_reset_to_expire_earlier` |
//! | `expire_second_key_when_reset_to_expire_earlier` | `expire_second_key_when_reset_to_expire_earlier` |
//! | `reset_first_expiring_item_to_expire_later` | `reset_first_expiring_item_to_expire_later` |
//! | `insert_before_first_after_poll` | `insert_before_first_after_poll` |
//! | `insert_after_ready_poll` | `insert_after_ready_poll` (exact order) |
//! | `reset_later_after_slot_starts` | `reset_later_after_slot_starts` |
//! | `reset_inserted_expired` | `reset_inserted_expired` |
//! | `reset_earlier_after_slot_starts` | `reset_earlier_after_slot_starts` |
//! | `insert_in_past_after_poll_fires_immediately` | `insert_in_past_after_poll_fires_immediately` |
//! | `delay_queue_poll_expired_when_empty` | `poll_when_emptied_ends_only_on_close` (semantic difference) |
//! | `compact_expire_empty` | `shrink_after_expiry_releases_everything` |
//! | `compact_remove_empty` | `shrink_after_removal_releases_everything` |
//! | `compact_remove_remapped_keys` | `keys_stay_valid_across_shrink` |
//! | `compact_change_deadline` | `reset_after_shrink` |
//! | `item_expiry_greater_than_wheel` | `item_expiry_greater_than_wheel` |
//! | `remove_after_compact` | `stale_key_after_shrink_is_none` (ours: `None`, no panic) |
//! | `remove_after_compact_poll` | `taken_key_after_shrink_is_none` (ours: `None`, no panic) |
//! | `peek` | `peek` |
//! | `peek_entries_sharing_a_wheel_slot` | `peek_entries_sharing_a_wheel_slot` |
//! | `wake_after_remove_last` | `removing_the_last_item_then_close_wakes` (semantic difference) |
//! | `wake_after_clear` | `clear_then_close_wakes` (semantic difference) |
//!
//! Beyond the port: `stream_next_await_on_tokio` drives the `Stream` with
//! `StreamExt::next` on tokio, and `two_streams_share_one_queue` runs two
//! consumer tasks on one shared queue.
#![cfg(not(loom))]

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use wheel::{DelayExpired, DelayQueue, ManualClock, TakeExpiredFuture};

mod common;
use common::{Count, LIVENESS, counting, ms, wait_for};

/// One way of taking items out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// `DelayQueue::poll_expired` with a counting waker.
    Poll,
    /// `DelayQueue::try_take_expired`.
    Try,
    /// `take_timeout_expired(0)` to find nothing due, `take_expired` (on a
    /// thread, bounded) to take.
    Blocking,
    /// One `take_async_expired` future, kept while it is pending.
    Future,
    /// `Stream::poll_next` on `&DelayQueue`.
    #[cfg(feature = "stream")]
    Stream,
}

/// Takes from a queue one way, and remembers the wake-ups of its waker.
struct Taker<'q, T> {
    q: &'q DelayQueue<T>,
    way: Way,
    wakes: Arc<Count>,
    waker: Waker,
    /// Wake-ups counted when the last `Pending` poll was made.
    seen: usize,
    fut: Option<Pin<Box<TakeExpiredFuture<'q, T>>>>,
}

impl<'q, T: Send + Debug> Taker<'q, T> {
    fn new(q: &'q DelayQueue<T>, way: Way) -> Self {
        let (wakes, waker) = counting();
        Taker {
            q,
            way,
            wakes,
            waker,
            seen: 0,
            fut: None,
        }
    }

    fn wakes(&self) -> usize {
        self.wakes.0.load(Ordering::SeqCst)
    }

    /// One non-blocking attempt, as a poll.
    fn poll(&mut self) -> Poll<Option<DelayExpired<T>>> {
        let mut cx = Context::from_waker(&self.waker);
        match self.way {
            Way::Poll => self.q.poll_expired(&mut cx),
            Way::Try => match self.q.try_take_expired() {
                Some(e) => Poll::Ready(Some(e)),
                None if self.q.is_closed() => Poll::Ready(None),
                None => Poll::Pending,
            },
            Way::Blocking => match self.q.take_timeout_expired(Duration::ZERO) {
                Some(e) => Poll::Ready(Some(e)),
                None if self.q.is_closed() => Poll::Ready(None),
                None => Poll::Pending,
            },
            Way::Future => {
                let q = self.q;
                let fut = self
                    .fut
                    .get_or_insert_with(|| Box::pin(q.take_async_expired()));
                let got = fut.as_mut().poll(&mut cx);
                if got.is_ready() {
                    self.fut = None;
                }
                got
            }
            #[cfg(feature = "stream")]
            Way::Stream => {
                let mut items = self.q;
                futures_core::Stream::poll_next(Pin::new(&mut items), &mut cx)
            }
        }
    }

    /// Nothing is due: the take finds nothing (and the async ways register).
    #[track_caller]
    fn pending(&mut self) {
        self.seen = self.wakes();
        let got = self.poll();
        assert!(
            got.is_pending(),
            "{:?}: expected nothing due, got {got:?}",
            self.way
        );
    }

    /// The async ways: the task registered by the last `Pending` poll is
    /// woken (the other ways have no task to wake).
    #[track_caller]
    fn woken(&self) {
        if matches!(self.way, Way::Try | Way::Blocking) {
            return;
        }
        wait_for("the pending task to be woken", || self.wakes() > self.seen);
    }

    /// An item is due: the take hands it out.
    #[track_caller]
    fn ready(&mut self) -> DelayExpired<T> {
        let got = if self.way == Way::Blocking {
            self.blocking_take()
        } else {
            match self.poll() {
                Poll::Ready(got) => got,
                Poll::Pending => panic!("{:?}: expected an item, got Pending", self.way),
            }
        };
        got.unwrap_or_else(|| panic!("{:?}: expected an item, got the end", self.way))
    }

    /// The queue is closed: the take reports the end.
    #[track_caller]
    fn ended(&mut self) {
        let got = if self.way == Way::Blocking {
            self.blocking_take().map(|_| ())
        } else {
            match self.poll() {
                Poll::Ready(got) => got.map(|_| ()),
                Poll::Pending => panic!("{:?}: expected the end, got Pending", self.way),
            }
        };
        assert_eq!(got, None, "{:?}: expected the end", self.way);
    }

    /// `take_expired` on a thread; fails (closing the queue to free the
    /// thread) if it has not returned within the liveness bound.
    fn blocking_take(&self) -> Option<DelayExpired<T>> {
        let q = self.q;
        thread::scope(|s| {
            let h = s.spawn(|| q.take_expired());
            let give_up = Instant::now() + LIVENESS;
            while !h.is_finished() {
                if Instant::now() > give_up {
                    q.close();
                    panic!("a blocking take never returned");
                }
                thread::sleep(ms(1));
            }
            h.join().unwrap()
        })
    }
}

/// A queue on a manual clock, and the instant its clock started at.
fn setup<T>() -> (ManualClock, DelayQueue<T>, Instant) {
    let clock = ManualClock::new();
    let q = DelayQueue::builder().clock(clock.clone()).build().unwrap();
    let start = clock.now();
    (clock, q, start)
}

/// Moves the clock forward to `at`.
fn advance_to(clock: &ManualClock, at: Instant) {
    clock.advance(at.saturating_duration_since(clock.now()));
}

/// One test per way of taking for each scenario `fn name(way: Way)`.
macro_rules! every_way {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::Way;

            #[test]
            fn poll_expired() {
                super::$name(Way::Poll);
            }

            #[test]
            fn try_take_expired() {
                super::$name(Way::Try);
            }

            #[test]
            fn blocking() {
                super::$name(Way::Blocking);
            }

            #[test]
            fn future() {
                super::$name(Way::Future);
            }

            #[cfg(feature = "stream")]
            #[test]
            fn stream() {
                super::$name(Way::Stream);
            }
        }
    )*};
}

every_way!(
    single_immediate_delay,
    multi_immediate_delays,
    single_short_delay,
    multi_delay_at_start,
    insert_in_past_fires_immediately,
    remove_entry,
    reset_entry,
    reset_to_past_wakes_pending_queue,
    reset_much_later,
    reset_twice,
    repeatedly_reset_entry_inserted_as_expired,
    remove_at_timer_wheel_threshold,
    expires_before_last_insert,
    multi_reset,
    expire_first_key_when_reset_to_expire_earlier,
    expire_second_key_when_reset_to_expire_earlier,
    reset_first_expiring_item_to_expire_later,
    insert_before_first_after_poll,
    insert_after_ready_poll,
    reset_later_after_slot_starts,
    reset_inserted_expired,
    reset_earlier_after_slot_starts,
    insert_in_past_after_poll_fires_immediately,
    poll_when_emptied_ends_only_on_close,
    shrink_after_expiry_releases_everything,
    keys_stay_valid_across_shrink,
    reset_after_shrink,
    item_expiry_greater_than_wheel,
    taken_key_after_shrink_is_none,
    peek,
    peek_entries_sharing_a_wheel_slot,
    removing_the_last_item_then_close_wakes,
    clear_then_close_wakes,
);

fn single_immediate_delay(way: Way) {
    let (_clock, q, start) = setup();
    let key = q.insert_at("foo", start).unwrap();
    let mut t = Taker::new(&q, way);
    let e = t.ready();
    assert_eq!((e.key(), e.deadline(), e.into_inner()), (key, start, "foo"));
    t.pending();
    q.close();
    t.woken();
    t.ended();
}

fn multi_immediate_delays(way: Way) {
    let (_clock, q, start) = setup();
    for v in ["1", "2", "3"] {
        q.insert_at(v, start).unwrap();
    }
    let mut t = Taker::new(&q, way);
    let got: Vec<_> = (0..3).map(|_| t.ready().into_inner()).collect();
    assert_eq!(got, ["1", "2", "3"]);
    t.pending();
    q.close();
    t.ended();
}

fn single_short_delay(way: Way) {
    let (clock, q, start) = setup();
    q.insert_at("foo", start + ms(5)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    clock.advance(ms(1));
    t.pending();
    clock.advance(ms(5));
    t.woken();
    let e = t.ready();
    assert_eq!((*e.get_ref(), e.deadline()), ("foo", start + ms(5)));
    t.pending();
}

fn multi_delay_at_start(way: Way) {
    let (clock, q, start) = setup();
    let long = 262_144 + 9 * 4096;
    let delays = [1000, 2, 234, long, 60, 10];
    for i in delays {
        q.insert_at(i, start + ms(i)).unwrap();
    }
    let mut t = Taker::new(&q, way);
    t.pending();
    for elapsed in 1..=1200 {
        advance_to(&clock, start + ms(elapsed));
        if delays.contains(&elapsed) {
            t.woken();
            assert_eq!(t.ready().into_inner(), elapsed);
        }
        t.pending();
    }
    assert_eq!(q.len(), 1);
    assert_eq!(q.deadline(q.peek().unwrap()), Some(start + ms(long)));
}

fn insert_in_past_fires_immediately(way: Way) {
    let (clock, q, start) = setup();
    clock.advance(ms(10));
    q.insert_at("foo", start).unwrap();
    let e = Taker::new(&q, way).ready();
    // Due at the tick current when it was inserted.
    assert_eq!((e.deadline(), e.into_inner()), (start + ms(10), "foo"));
}

fn remove_entry(way: Way) {
    let (clock, q, start) = setup();
    let key = q.insert_at("foo", start + ms(5)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    assert_eq!(q.remove(key), Some("foo"));
    clock.advance(ms(10));
    t.pending();
    q.close();
    t.ended();
}

fn reset_entry(way: Way) {
    let (clock, q, start) = setup();
    let key = q.insert_at("foo", start + ms(5)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    clock.advance(ms(1));
    assert!(q.reset_at(key, start + ms(10)));
    t.pending();
    clock.advance(ms(7));
    t.pending();
    clock.advance(ms(3));
    t.woken();
    let e = t.ready();
    assert_eq!((e.deadline(), e.into_inner()), (start + ms(10), "foo"));
    t.pending();
}

fn reset_to_past_wakes_pending_queue(way: Way) {
    let (_clock, q, start) = setup();
    let key = q.insert("foo", ms(10_000)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    assert!(q.reset_at(key, start - ms(100)));
    t.woken();
    let e = t.ready();
    assert_eq!((e.deadline(), e.into_inner()), (start, "foo"));
    t.pending();
}

fn reset_much_later(way: Way) {
    let (clock, q, start) = setup();
    clock.advance(ms(1));
    let key = q.insert_at("foo", start + ms(200)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    clock.advance(ms(3));
    assert!(q.reset_at(key, start + ms(10)));
    clock.advance(ms(20));
    t.woken();
    assert_eq!(t.ready().into_inner(), "foo");
}

fn reset_twice(way: Way) {
    let (clock, q, start) = setup();
    clock.advance(ms(1));
    let key = q.insert_at("foo", start + ms(200)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    clock.advance(ms(3));
    assert!(q.reset_at(key, start + ms(50)));
    clock.advance(ms(20));
    assert!(q.reset_at(key, start + ms(40)));
    t.pending();
    clock.advance(ms(20));
    t.woken();
    let e = t.ready();
    assert_eq!((e.deadline(), e.into_inner()), (start + ms(40), "foo"));
}

fn repeatedly_reset_entry_inserted_as_expired(way: Way) {
    let (clock, q, _start) = setup();
    clock.advance(ms(1000));
    let now = clock.now();
    let key = q.insert_at("foo", now - ms(100)).unwrap();
    assert!(q.reset_at(key, now + ms(100)));
    assert!(q.reset_at(key, now + ms(50)));
    let mut t = Taker::new(&q, way);
    t.pending();
    advance_to(&clock, now + ms(60));
    t.woken();
    assert_eq!(t.ready().into_inner(), "foo");
    t.pending();
}

#[test]
fn remove_expired_item() {
    let (clock, q, start) = setup();
    clock.advance(ms(10));
    let key = q.insert_at("foo", start).unwrap();
    assert_eq!(q.remove(key), Some("foo"));
    assert!(q.is_empty());
}

fn remove_at_timer_wheel_threshold(way: Way) {
    let (clock, q, start) = setup();
    q.insert_at("foo", start + ms(64)).unwrap();
    let bar_key = q.insert_at("bar", start + ms(64)).unwrap();
    clock.advance(ms(80));
    assert_eq!(Taker::new(&q, way).ready().into_inner(), "foo");
    assert_eq!(q.remove(bar_key), Some("bar"));
    assert!(q.is_empty());
}

fn expires_before_last_insert(way: Way) {
    let (clock, q, start) = setup();
    q.insert_at("foo", start + ms(10_000)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    q.insert_at("bar", start + ms(600)).unwrap();
    t.pending();
    clock.advance(ms(600));
    t.woken();
    assert_eq!(t.ready().into_inner(), "bar");
    t.pending();
}

fn multi_reset(way: Way) {
    let (clock, q, start) = setup();
    let one = q.insert_at("one", start + ms(200)).unwrap();
    let two = q.insert_at("two", start + ms(250)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    assert!(q.reset_at(one, start + ms(300)));
    assert!(q.reset_at(two, start + ms(350)));
    assert!(q.reset_at(one, start + ms(400)));
    clock.advance(ms(310));
    t.pending();
    clock.advance(ms(50));
    t.woken();
    assert_eq!(*t.ready().get_ref(), "two");
    t.pending();
    clock.advance(ms(50));
    t.woken();
    assert_eq!(*t.ready().get_ref(), "one");
    t.pending();
    q.close();
    t.ended();
}

fn expire_first_key_when_reset_to_expire_earlier(way: Way) {
    let (clock, q, start) = setup();
    let one = q.insert_at("one", start + ms(200)).unwrap();
    q.insert_at("two", start + ms(250)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    assert!(q.reset_at(one, start + ms(100)));
    clock.advance(ms(100));
    t.woken();
    assert_eq!(t.ready().into_inner(), "one");
    t.pending();
}

fn expire_second_key_when_reset_to_expire_earlier(way: Way) {
    let (clock, q, start) = setup();
    q.insert_at("one", start + ms(200)).unwrap();
    let two = q.insert_at("two", start + ms(250)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    assert!(q.reset_at(two, start + ms(100)));
    clock.advance(ms(100));
    t.woken();
    assert_eq!(t.ready().into_inner(), "two");
    t.pending();
}

fn reset_first_expiring_item_to_expire_later(way: Way) {
    let (clock, q, start) = setup();
    let one = q.insert_at("one", start + ms(200)).unwrap();
    q.insert_at("two", start + ms(250)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    assert!(q.reset_at(one, start + ms(300)));
    clock.advance(ms(250));
    t.woken();
    assert_eq!(t.ready().into_inner(), "two");
    t.pending();
}

fn insert_before_first_after_poll(way: Way) {
    let (clock, q, start) = setup();
    q.insert_at("one", start + ms(200)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    q.insert_at("two", start + ms(100)).unwrap();
    clock.advance(ms(99));
    t.pending();
    clock.advance(ms(1));
    t.woken();
    assert_eq!(t.ready().into_inner(), "two");
    t.pending();
}

fn insert_after_ready_poll(way: Way) {
    let (clock, q, start) = setup();
    for v in ["1", "2", "3"] {
        q.insert_at(v, start + ms(100)).unwrap();
    }
    let mut t = Taker::new(&q, way);
    t.pending();
    clock.advance(ms(100));
    t.woken();
    let mut got = Vec::new();
    while got.len() < 3 {
        got.push(t.ready().into_inner());
        q.insert_at("foo", start + ms(500)).unwrap();
    }
    assert_eq!(got, ["1", "2", "3"]);
    t.pending();
    assert_eq!(q.len(), 3);
}

fn reset_later_after_slot_starts(way: Way) {
    let (clock, q, start) = setup();
    let foo_key = q.insert_at("foo", start + ms(100)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    advance_to(&clock, start + ms(80));
    t.pending();
    assert!(q.reset_at(foo_key, start + ms(120)));
    t.pending();
    advance_to(&clock, start + ms(119));
    t.pending();
    clock.advance(ms(1));
    t.woken();
    let e = t.ready();
    assert_eq!((e.deadline(), e.into_inner()), (start + ms(120), "foo"));
}

fn reset_inserted_expired(way: Way) {
    let (clock, q, _start) = setup();
    clock.advance(ms(1000));
    let now = clock.now();
    let key = q.insert_at("foo", now - ms(100)).unwrap();
    assert!(q.reset_at(key, now + ms(100)));
    assert_eq!(q.len(), 1);
    let mut t = Taker::new(&q, way);
    t.pending();
    clock.advance(ms(200));
    t.woken();
    assert_eq!(t.ready().into_inner(), "foo");
    assert_eq!(q.len(), 0);
}

fn reset_earlier_after_slot_starts(way: Way) {
    let (clock, q, start) = setup();
    let foo_key = q.insert_at("foo", start + ms(200)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    advance_to(&clock, start + ms(80));
    t.pending();
    assert!(q.reset_at(foo_key, start + ms(120)));
    t.pending();
    advance_to(&clock, start + ms(119));
    t.pending();
    clock.advance(ms(1));
    t.woken();
    let e = t.ready();
    assert_eq!((e.deadline(), e.into_inner()), (start + ms(120), "foo"));
}

fn insert_in_past_after_poll_fires_immediately(way: Way) {
    let (clock, q, start) = setup();
    q.insert_at("foo", start + ms(200)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    clock.advance(ms(80));
    t.pending();
    q.insert_at("bar", start + ms(40)).unwrap();
    t.woken();
    let e = t.ready();
    assert_eq!((e.deadline(), e.into_inner()), (start + ms(80), "bar"));
}

fn poll_when_emptied_ends_only_on_close(way: Way) {
    let (_clock, q, _start) = setup();
    let key = q.insert(0, Duration::from_secs(10)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    assert_eq!(q.remove(key), Some(0));
    // Empty but open: another producer may still insert.
    t.pending();
    q.close();
    t.woken();
    t.ended();
}

fn shrink_after_expiry_releases_everything(way: Way) {
    let (clock, q, start) = setup();
    q.insert_at("foo1", start + ms(10)).unwrap();
    q.insert_at("foo2", start + ms(10)).unwrap();
    clock.advance(ms(10));
    let mut t = Taker::new(&q, way);
    let got: Vec<_> = (0..2).map(|_| t.ready().into_inner()).collect();
    assert_eq!(got, ["foo1", "foo2"]);
    q.shrink_to_fit();
    assert_eq!(q.len(), 0);
    assert_eq!(q.capacity(), 0);
}

#[test]
fn shrink_after_removal_releases_everything() {
    let (_clock, q, start) = setup();
    let key1 = q.insert_at("foo1", start + ms(10)).unwrap();
    let key2 = q.insert_at("foo2", start + ms(10)).unwrap();
    assert_eq!(q.remove(key1), Some("foo1"));
    assert_eq!(q.remove(key2), Some("foo2"));
    q.shrink_to_fit();
    assert_eq!(q.len(), 0);
    assert_eq!(q.capacity(), 0);
}

fn keys_stay_valid_across_shrink(way: Way) {
    let (clock, q, start) = setup();
    q.insert_at("foo1", start + ms(10)).unwrap();
    q.insert_at("foo2", start + ms(10)).unwrap();
    let key3 = q.insert_at("foo3", start + ms(20)).unwrap();
    let key4 = q.insert_at("foo4", start + ms(20)).unwrap();
    clock.advance(ms(10));
    let mut t = Taker::new(&q, way);
    let got: Vec<_> = (0..2).map(|_| t.ready().into_inner()).collect();
    assert_eq!(got, ["foo1", "foo2"]);
    q.shrink_to_fit();
    q.insert_at("foo5", start + ms(10)).unwrap();
    assert_eq!(q.remove(key3), Some("foo3"));
    assert_eq!(q.remove(key4), Some("foo4"));
    q.shrink_to_fit();
    assert_eq!(q.len(), 1);
    assert_eq!(q.capacity(), 1);
    assert_eq!(t.ready().into_inner(), "foo5");
}

fn reset_after_shrink(way: Way) {
    let (clock, q, start) = setup();
    q.insert_at("foo1", start + ms(10)).unwrap();
    q.insert_at("foo2", start + ms(10)).unwrap();
    q.insert_at("foo3", start + ms(20)).unwrap();
    let key4 = q.insert_at("foo4", start + ms(20)).unwrap();
    clock.advance(ms(10));
    let mut t = Taker::new(&q, way);
    let mut got: Vec<_> = (0..2).map(|_| t.ready().into_inner()).collect();
    q.shrink_to_fit();
    let now = clock.now();
    q.insert_at("foo5", now + ms(10)).unwrap();
    let key6 = q.insert_at("foo6", now + ms(10)).unwrap();
    assert!(q.reset_at(key4, now + ms(20)));
    assert!(q.reset_at(key6, now + ms(20)));
    clock.advance(ms(10));
    got.extend((0..2).map(|_| t.ready().into_inner()));
    t.pending();
    clock.advance(ms(10));
    got.extend((0..2).map(|_| t.ready().into_inner()));
    assert_eq!(got, ["foo1", "foo2", "foo3", "foo5", "foo4", "foo6"]);
    t.pending();
    q.close();
    t.ended();
}

fn item_expiry_greater_than_wheel(way: Way) {
    let (clock, q, _start) = setup();
    let mut t = Taker::new(&q, way);
    for _ in 0..2 {
        clock.advance(ms(1 << 35));
        q.insert(0, Duration::ZERO).unwrap();
        assert_eq!(t.ready().into_inner(), 0);
    }
    let key = q.insert(1, ms(1)).unwrap();
    assert_eq!(q.deadline(key), Some(clock.now() + ms(1)));
    clock.advance(ms(1));
    assert_eq!(t.ready().into_inner(), 1);
}

#[test]
fn stale_key_after_shrink_is_none() {
    let (_clock, q, start) = setup();
    let foo_key = q.insert_at("foo", start + ms(10)).unwrap();
    q.insert_at("bar", start + ms(20)).unwrap();
    assert_eq!(q.remove(foo_key), Some("foo"));
    q.shrink_to_fit();
    assert_eq!(q.remove(foo_key), None);
    assert_eq!(q.deadline(foo_key), None);
    assert_eq!(q.len(), 1);
}

fn taken_key_after_shrink_is_none(way: Way) {
    let (clock, q, start) = setup();
    let foo_key = q.insert_at("foo", start + ms(10)).unwrap();
    q.insert_at("bar", start + ms(20)).unwrap();
    clock.advance(ms(10));
    assert_eq!(Taker::new(&q, way).ready().key(), foo_key);
    q.shrink_to_fit();
    assert_eq!(q.remove(foo_key), None);
    assert!(!q.reset(foo_key, ms(1)));
    assert_eq!(q.len(), 1);
}

fn peek(way: Way) {
    let (clock, q, start) = setup();
    let foo_key = q.insert_at("foo", start + ms(5)).unwrap();
    let bar_key = q.insert_at("bar", start).unwrap();
    let baz_key = q.insert_at("baz", start + ms(10)).unwrap();
    assert_eq!(q.peek(), Some(bar_key));
    clock.advance(ms(6));
    assert_eq!(q.peek(), Some(bar_key));
    let mut t = Taker::new(&q, way);
    assert_eq!(t.ready().into_inner(), "bar");
    assert_eq!(q.peek(), Some(foo_key));
    assert_eq!(t.ready().into_inner(), "foo");
    assert_eq!(q.peek(), Some(baz_key));
    t.pending();
    clock.advance(ms(5));
    assert_eq!(q.peek(), Some(baz_key));
    assert_eq!(t.ready().into_inner(), "baz");
    assert_eq!(q.peek(), None);
}

fn peek_entries_sharing_a_wheel_slot(way: Way) {
    let (clock, q, start) = setup();
    let early = q.insert_at("early", start + ms(100)).unwrap();
    let late = q.insert_at("late", start + ms(120)).unwrap();
    assert_eq!(q.peek(), Some(early));
    clock.advance(ms(105));
    assert_eq!(q.peek(), Some(early));
    let mut t = Taker::new(&q, way);
    let e = t.ready();
    assert_eq!((e.key(), *e.get_ref()), (early, "early"));
    assert_eq!(q.peek(), Some(late));
    clock.advance(ms(20));
    assert_eq!(t.ready().key(), late);
    assert_eq!(q.peek(), None);
}

fn removing_the_last_item_then_close_wakes(way: Way) {
    let (_clock, q, _start) = setup();
    let key = q.insert("foo", ms(1000)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    assert_eq!(q.remove(key), Some("foo"));
    t.pending();
    q.close();
    t.woken();
    t.ended();
}

fn clear_then_close_wakes(way: Way) {
    let (_clock, q, _start) = setup();
    let key = q.insert("foo", ms(1000)).unwrap();
    let mut t = Taker::new(&q, way);
    t.pending();
    q.clear();
    assert!(q.is_empty());
    assert_eq!(q.remove(key), None);
    t.pending();
    q.close();
    t.woken();
    t.ended();
}

/// `while let Some(e) = q.next().await` on tokio, the clock moved by
/// another thread; the stream ends when the queue is closed.
#[cfg(feature = "stream")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_next_await_on_tokio() {
    use futures_util::StreamExt;

    let (clock, q, start) = setup();
    q.insert_at(2, start + ms(20)).unwrap();
    q.insert_at(1, start + ms(10)).unwrap();
    let q = Arc::new(q);
    let mover = {
        let q = Arc::clone(&q);
        thread::spawn(move || {
            clock.advance(ms(10));
            wait_for("the first item taken", || q.len() == 1);
            clock.advance(ms(10));
            wait_for("the second item taken", || q.is_empty());
            q.close();
        })
    };
    let mut items = &*q;
    let mut got = Vec::new();
    while let Some(e) = items.next().await {
        got.push((e.deadline() - start, e.into_inner()));
    }
    mover.join().unwrap();
    assert_eq!(got, [(ms(10), 1), (ms(20), 2)]);

    // The owned queue is a stream too.
    let (clock, mut q, _start) = setup();
    q.insert(3, ms(5)).unwrap();
    clock.advance(ms(5));
    assert_eq!(q.next().await.map(|e| e.into_inner()), Some(3));
    q.close();
    assert!(q.next().await.is_none());
}

/// Two tasks stream from one shared queue: each item goes to exactly one.
#[cfg(feature = "stream")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_streams_share_one_queue() {
    use futures_util::StreamExt;

    let (clock, q, _start) = setup::<u32>();
    let q = Arc::new(q);
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let q = Arc::clone(&q);
            tokio::spawn(async move {
                let mut items = &*q;
                let mut got = Vec::new();
                while let Some(e) = items.next().await {
                    got.push(e.into_inner());
                }
                got
            })
        })
        .collect();
    for i in 0..100 {
        q.insert(i, ms(u64::from(i % 10))).unwrap();
    }
    for _ in 0..10 {
        clock.advance(ms(1));
    }
    let waiter = Arc::clone(&q);
    tokio::task::spawn_blocking(move || wait_for("every item taken", || waiter.is_empty()))
        .await
        .unwrap();
    q.close();
    let mut all = Vec::new();
    for c in consumers {
        all.extend(c.await.unwrap());
    }
    all.sort_unstable();
    assert_eq!(all, (0..100).collect::<Vec<_>>());
}
