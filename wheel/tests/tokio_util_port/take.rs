//! Scenarios about inserting and taking: immediate, short and long delays,
//! inserts before and after a poll, removal, and the end of the queue.

use std::time::Duration;

use super::{Taker, Way, advance_to, setup};
use crate::common::ms;

pub(crate) fn single_immediate_delay(way: Way) {
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

pub(crate) fn multi_immediate_delays(way: Way) {
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

pub(crate) fn single_short_delay(way: Way) {
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

pub(crate) fn multi_delay_at_start(way: Way) {
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

pub(crate) fn insert_in_past_fires_immediately(way: Way) {
    let (clock, q, start) = setup();
    clock.advance(ms(10));
    q.insert_at("foo", start).unwrap();
    let e = Taker::new(&q, way).ready();
    // Due at the tick current when it was inserted.
    assert_eq!((e.deadline(), e.into_inner()), (start + ms(10), "foo"));
}

pub(crate) fn remove_entry(way: Way) {
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

pub(crate) fn remove_at_timer_wheel_threshold(way: Way) {
    let (clock, q, start) = setup();
    q.insert_at("foo", start + ms(64)).unwrap();
    let bar_key = q.insert_at("bar", start + ms(64)).unwrap();
    clock.advance(ms(80));
    assert_eq!(Taker::new(&q, way).ready().into_inner(), "foo");
    assert_eq!(q.remove(bar_key), Some("bar"));
    assert!(q.is_empty());
}

pub(crate) fn expires_before_last_insert(way: Way) {
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

pub(crate) fn insert_before_first_after_poll(way: Way) {
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

pub(crate) fn insert_after_ready_poll(way: Way) {
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

pub(crate) fn insert_in_past_after_poll_fires_immediately(way: Way) {
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

pub(crate) fn poll_when_emptied_ends_only_on_close(way: Way) {
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

pub(crate) fn item_expiry_greater_than_wheel(way: Way) {
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

pub(crate) fn removing_the_last_item_then_close_wakes(way: Way) {
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

pub(crate) fn clear_then_close_wakes(way: Way) {
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
