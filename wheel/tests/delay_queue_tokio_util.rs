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
//! The harness and the scenarios live in `tokio_util_port/` (`take.rs`,
//! `reset.rs`, `keys.rs`); this file runs each scenario every way.
//!
//! tokio-util test → scenario here (each a module with one test per way,
//! except the three that take nothing, which are single tests in
//! `keys.rs`):
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

mod common;
mod tokio_util_port;

use tokio_util_port::Way;
use tokio_util_port::keys::*;
use tokio_util_port::reset::*;
use tokio_util_port::take::*;

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

/// The `Stream` driven by `StreamExt::next` on tokio.
#[cfg(feature = "stream")]
mod stream {
    use std::sync::Arc;
    use std::thread;

    use futures_util::StreamExt;

    use crate::common::{ms, wait_for};
    use crate::tokio_util_port::setup;

    /// `while let Some(e) = q.next().await` on tokio, the clock moved by
    /// another thread; the stream ends when the queue is closed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stream_next_await_on_tokio() {
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
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_streams_share_one_queue() {
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
}
