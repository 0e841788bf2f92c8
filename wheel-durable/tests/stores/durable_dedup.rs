//! The dedup window on both stores, end to end: keys whose timers finished
//! done, were cancelled, or whose dead letters were cancelled are answered
//! as ended within the window and added again after it; a replacing add
//! still adds; off by default. Expiry by a store clock set by hand is
//! tested inside the crate (`store::tests`), where the clock can be set;
//! here the window passes on the real clock, a short one.

use crate::durable_common;

use std::time::{Duration, SystemTime};

use durable_common::eventually;
use wheel_durable::{AddOrGet, DurableTimers, DurableTimersBuilder, EndedHow, Outcome, TimerState};
use wheel_testkit::{RedisServer, ServerOptions};

const LONG: Duration = Duration::from_secs(600);

/// Runs `test` on a fresh embedded store, then on a fresh Redis server
/// when one can be started.
fn on_both_stores(test: impl Fn(DurableTimersBuilder)) {
    let dir = tempfile::tempdir().unwrap();
    test(DurableTimers::builder().embedded(dir.path().join("timers")));
    if let Some(server) = RedisServer::for_test(ServerOptions::default()) {
        test(
            DurableTimers::builder()
                .redis(&server.url())
                .namespace("dedup"),
        );
    }
}

fn ended(answer: &AddOrGet) -> Option<(String, EndedHow)> {
    match answer {
        AddOrGet::Ended(e) => Some((e.key.clone(), e.how)),
        _ => None,
    }
}

#[test]
fn done_cancelled_and_dead_keys_are_remembered_within_the_window() {
    on_both_stores(|builder| {
        let started = SystemTime::now();
        let timers = builder
            .dedup_window(LONG)
            .handler(|f| match f.key.as_str() {
                "bad" => Outcome::Fail("refused".into()),
                _ => Outcome::Done,
            })
            .build()
            .unwrap();
        let soon = SystemTime::now();
        let later = soon + LONG;
        timers.add_at("ok", soon, b"1").unwrap();
        timers.add_at("bad", soon, b"2").unwrap();
        timers.add_at("gone", later, b"3").unwrap();
        eventually("ok to run and bad to fail", || {
            timers.ended("ok").unwrap().is_some()
                && timers.get("bad").unwrap().map(|i| i.state) == Some(TimerState::Dead)
        });
        // A dead letter is still a timer: answered as existing.
        assert!(matches!(
            timers.add_at_or_get("bad", later, b"").unwrap(),
            AddOrGet::Existing(info) if info.state == TimerState::Dead
        ));
        assert!(timers.cancel("gone").unwrap());
        assert!(!timers.cancel("bad").unwrap());

        let batch = [
            ("ok", later, &b"x"[..]),
            ("gone", later, b"x"),
            ("bad", later, b"x"),
        ];
        let answers = timers.add_many_or_get(&batch).unwrap();
        let got: Vec<_> = answers.iter().map(ended).collect();
        assert_eq!(
            got,
            [
                Some(("ok".into(), EndedHow::Done)),
                Some(("gone".into(), EndedHow::Cancelled)),
                Some(("bad".into(), EndedHow::Dead)),
            ]
        );
        let ok = timers.ended("ok").unwrap().unwrap();
        assert!(ok.at >= started && ok.at <= SystemTime::now());
        // Nothing was added: the keys hold no timer.
        for key in ["ok", "gone", "bad"] {
            assert_eq!(timers.get(key).unwrap(), None, "{key}");
        }
        // A replacing add adds, and the key is a timer again.
        timers.add_at("gone", later, b"4").unwrap();
        assert_eq!(timers.ended("gone").unwrap(), None);
        assert!(matches!(
            timers.add_at_or_get("gone", later, b"5").unwrap(),
            AddOrGet::Existing(info) if info.payload == b"4"
        ));
        timers.shutdown().unwrap();
    });
}

#[test]
fn a_remembered_key_is_added_again_after_the_window() {
    on_both_stores(|builder| {
        let window = Duration::from_millis(300);
        let timers = builder.dedup_window(window).build().unwrap();
        let due = SystemTime::now() + LONG;
        timers.add_at("k", due, b"1").unwrap();
        // Read before the cancel: the store stamps the window's start
        // somewhere inside the call, on its own reading of the clock.
        let cancelling = SystemTime::now();
        assert!(timers.cancel("k").unwrap());
        assert_eq!(
            ended(&timers.add_at_or_get("k", due, b"2").unwrap()),
            Some(("k".into(), EndedHow::Cancelled))
        );
        eventually("the window to pass", || {
            timers.add_at_or_get("k", due, b"3").unwrap().is_added()
        });
        // Not before the window passed by the machine's clock (the store's
        // for both stores here), which the stores read in whole
        // milliseconds: a start stamped at 10 ms stands for any instant
        // up to 11 ms, so the window may end up to 1 ms before the
        // exact instant of the cancel plus the window.
        let waited = SystemTime::now().duration_since(cancelling).unwrap();
        assert!(waited + Duration::from_millis(1) >= window, "{waited:?}");
        assert_eq!(timers.get("k").unwrap().unwrap().payload, b"3");
        assert_eq!(timers.ended("k").unwrap(), None);
        timers.shutdown().unwrap();
    });
}

#[test]
fn nothing_is_remembered_by_default() {
    on_both_stores(|builder| {
        let timers = builder.build().unwrap();
        let due = SystemTime::now() + LONG;
        timers.add_at("k", due, b"1").unwrap();
        assert!(timers.cancel("k").unwrap());
        assert_eq!(timers.ended("k").unwrap(), None);
        assert!(timers.add_at_or_get("k", due, b"2").unwrap().is_added());
        timers.shutdown().unwrap();
    });
}
