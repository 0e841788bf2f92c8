//! Scenarios about keys and memory: `peek`, `deadline`, `shrink_to_fit`
//! (tokio-util's `compact`) and stale keys.

use super::{Taker, Way, setup};
use crate::common::ms;

#[test]
fn remove_expired_item() {
    let (clock, q, start) = setup();
    clock.advance(ms(10));
    let key = q.insert_at("foo", start).unwrap();
    assert_eq!(q.remove(key), Some("foo"));
    assert!(q.is_empty());
}

pub(crate) fn shrink_after_expiry_releases_everything(way: Way) {
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

pub(crate) fn keys_stay_valid_across_shrink(way: Way) {
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

pub(crate) fn reset_after_shrink(way: Way) {
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

pub(crate) fn taken_key_after_shrink_is_none(way: Way) {
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

pub(crate) fn peek(way: Way) {
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

pub(crate) fn peek_entries_sharing_a_wheel_slot(way: Way) {
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
