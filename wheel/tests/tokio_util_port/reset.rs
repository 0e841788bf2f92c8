//! Scenarios about `reset_at`: later, earlier, into the past, repeatedly,
//! and of items inserted already due.

use super::{Taker, Way, advance_to, setup};
use crate::common::ms;

pub(crate) fn reset_entry(way: Way) {
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

pub(crate) fn reset_to_past_wakes_pending_queue(way: Way) {
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

pub(crate) fn reset_much_later(way: Way) {
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

pub(crate) fn reset_twice(way: Way) {
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

pub(crate) fn repeatedly_reset_entry_inserted_as_expired(way: Way) {
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

pub(crate) fn multi_reset(way: Way) {
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

pub(crate) fn expire_first_key_when_reset_to_expire_earlier(way: Way) {
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

pub(crate) fn expire_second_key_when_reset_to_expire_earlier(way: Way) {
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

pub(crate) fn reset_first_expiring_item_to_expire_later(way: Way) {
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

pub(crate) fn reset_later_after_slot_starts(way: Way) {
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

pub(crate) fn reset_inserted_expired(way: Way) {
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

pub(crate) fn reset_earlier_after_slot_starts(way: Way) {
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
