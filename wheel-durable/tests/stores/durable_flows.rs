//! Pause and resume on both stores, through the library: a paused flow
//! key parks its timers that come due (listed `Parked`, no attempt spent)
//! while other keys fire, and its resume fires each once, in due order; a
//! paused namespace claims nothing and parks nothing; a pause made through
//! one handle holds on another handle's node of the same Redis namespace;
//! bad flow keys are refused, and a rule's bad answer counts as none;
//! cancel, reschedule and a replacing add of a parked timer. The stats'
//! `parked` (store) and `paused` (node) counts are checked along the way.
//!
//! The store's clock cannot be set from outside the crate, so these run
//! on the real clock with dues a few hundred milliseconds ahead; the
//! store rules themselves (batches of resume, the model's answers) are
//! tested inside the crate (`store::tests`).

use crate::durable_common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use durable_common::{Recorder, Run, eventually};
use wheel_durable::{
    BreakerState, DurableError, DurableTimers, DurableTimersBuilder, FlowStatus, Flows, Listing,
    Outcome, TimerState,
};
use wheel_testkit::{RedisServer, ServerOptions};

pub(crate) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `ms` from now, in whole milliseconds: the stores keep due times to
/// the millisecond, so such a time reads back equal.
pub(crate) fn in_ms(n: u64) -> SystemTime {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    UNIX_EPOCH + ms(u64::try_from(now.as_millis()).unwrap() + n)
}

/// Runs `test` on a fresh embedded store, then on a fresh Redis server
/// when one can be started.
pub(crate) fn on_both_stores(test: impl Fn(DurableTimersBuilder)) {
    let dir = tempfile::tempdir().unwrap();
    test(DurableTimers::builder().embedded(dir.path().join("timers")));
    if let Some(server) = RedisServer::for_test(ServerOptions::default()) {
        test(
            DurableTimers::builder()
                .redis(&server.url())
                .namespace("flows"),
        );
    }
}

/// A node whose plain timers `tenant:...` have the flow key `tenant`, one
/// worker (so that its runs start in the order it starts them), polling
/// often.
fn node(builder: DurableTimersBuilder, rec: &Recorder) -> DurableTimers {
    builder
        .flow_key(|key, _| key.split_once(':').map(|(tenant, _)| tenant.to_owned()))
        .workers(1)
        .poll(ms(50))
        .handler(rec.handler(0, |_| Outcome::Done))
        .build()
        .unwrap()
}

/// Waits until `key` has exactly `parked` parked timers, as `flows` says.
fn wait_parked(timers: &DurableTimers, key: &str, parked: u64) {
    eventually(&format!("{parked} timers of {key} to be parked"), || {
        timers
            .flows()
            .unwrap()
            .keys
            .iter()
            .any(|k| k.key == key && k.parked == parked)
    });
}

/// The keys `flows` lists for what the store holds of them: without
/// those this node lists only for the lateness of its runs here.
pub(crate) fn held_keys(flows: &Flows) -> Vec<&FlowStatus> {
    flows
        .keys
        .iter()
        .filter(|k| {
            k.paused
                || k.parked > 0
                || k.limits.is_some()
                || k.in_flight > 0
                || k.waiting > 0
                || k.breaker.state != BreakerState::Closed
                || k.breaker.failures > 0
        })
        .collect()
}

/// The keys of `runs` whose key starts with `prefix`, in run order.
fn keys_of(runs: &[Run], prefix: &str) -> Vec<String> {
    runs.iter()
        .filter(|r| r.key.starts_with(prefix))
        .map(|r| r.key.clone())
        .collect()
}

#[test]
fn a_paused_key_parks_its_timers_and_its_resume_fires_each_once_in_due_order() {
    on_both_stores(|builder| {
        let rec = Recorder::new();
        let timers = node(builder, &rec);
        assert!(timers.pause_flow("a").unwrap());
        let base = in_ms(300);
        // Keys of `a` in an order other than their dues', so that due
        // order is not key order.
        let a: Vec<(String, SystemTime)> = (0..10u64)
            .map(|i| (format!("a:{}", 9 - i), base + ms(i * 20)))
            .collect();
        for (key, due) in &a {
            timers.add_at(key, *due, b"").unwrap();
        }
        for i in 0..5u64 {
            timers
                .add_at(&format!("b:{i}"), base + ms(i * 20), b"")
                .unwrap();
        }
        timers.add_at("plain", base, b"").unwrap();

        // The other key and the timer without a key fire; `a` parks.
        rec.wait_for(6);
        wait_parked(&timers, "a", 10);
        assert_eq!(keys_of(&rec.runs(), "a:"), Vec::<String>::new());
        let flows = timers.flows().unwrap();
        assert!(!flows.paused);
        let held = held_keys(&flows);
        assert_eq!(held.len(), 1, "{flows:?}");
        assert_eq!((held[0].key.as_str(), held[0].paused), ("a", true));
        for (key, due) in &a {
            let info = timers.get(key).unwrap().unwrap();
            assert_eq!(
                (info.state, info.attempts),
                (TimerState::Parked, 0),
                "{key}"
            );
            assert_eq!(info.due, *due, "{key} keeps its due time");
        }
        let listed: Vec<String> = timers
            .list(Listing::Parked, 100)
            .unwrap()
            .timers
            .into_iter()
            .map(|t| t.key)
            .collect();
        let by_due: Vec<String> = a.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(listed, by_due, "the parked listing is in due order");
        assert!(
            timers
                .list(Listing::Pending, 100)
                .unwrap()
                .timers
                .is_empty()
        );
        eventually("the stats to count the parked timers", || {
            timers.stats().parked == Some(10)
        });
        // Each parked timer was refused once, at its start, by this node
        // (which claimed it ahead of its due time); parked, it is claimed
        // no more. The node counts the refusal just after the store's
        // answer, so the count may lag the store's for a moment.
        eventually("the node to count the refused starts", || {
            timers.stats().paused >= 10
        });
        assert_eq!(timers.stats().paused, 10);

        assert!(timers.resume_flow("a").unwrap());
        assert!(!timers.resume_flow("a").unwrap(), "no longer paused");
        let runs = rec.wait_for(16);
        assert_eq!(keys_of(&runs, "a:"), by_due, "once each, in due order");
        for r in runs.iter().filter(|r| r.key.starts_with("a:")) {
            assert_eq!(r.attempt, 1, "{}: parking spent no attempt", r.key);
        }
        eventually("the store to be empty", || {
            let s = timers.stats();
            (s.pending, s.claimed, s.parked) == (Some(0), Some(0), Some(0))
        });
        let flows = timers.flows().unwrap();
        assert!(held_keys(&flows).is_empty(), "{flows:?}");
        assert_eq!(rec.runs().len(), 16, "nothing fired twice");
        timers.shutdown().unwrap();
    });
}

#[test]
fn a_paused_namespace_fires_nothing_parks_nothing_and_its_resume_fires_in_due_order() {
    on_both_stores(|builder| {
        let rec = Recorder::new();
        let timers = node(builder.claim_ahead(ms(10_000)), &rec);
        // Far enough ahead that the pause below comes before the dues on a
        // loaded machine; the node claims them at once (its window is
        // 10 s) and holds them.
        let base = in_ms(2_000);
        let keys: Vec<String> = (0..10u64)
            .map(|i| format!("t{}", 9 - i))
            .chain(["a:0".to_owned()])
            .collect();
        for (i, key) in keys.iter().enumerate() {
            timers.add_at(key, base + ms(i as u64 * 20), b"").unwrap();
        }
        eventually("the node to hold every timer", || timers.stats().held == 11);
        assert!(timers.pause_all().unwrap());
        assert!(!timers.pause_all().unwrap(), "already paused");
        // At its due time each held timer is refused and handed back.
        eventually("every start to be refused", || timers.stats().paused >= 11);
        assert_eq!(
            timers.stats().paused,
            11,
            "each refused once: not claimed again"
        );
        // Pending and due now: a node that claimed them would fire them
        // within its next polls (every 50 ms). None does.
        std::thread::sleep(ms(500));
        assert!(rec.runs().is_empty(), "{:?}", rec.runs());
        let flows = timers.flows().unwrap();
        assert!(flows.paused && flows.keys.is_empty(), "{flows:?}");
        let pending: Vec<String> = timers
            .list(Listing::Pending, 100)
            .unwrap()
            .timers
            .into_iter()
            .map(|t| t.key)
            .collect();
        assert_eq!(
            pending, keys,
            "handed back as they were: pending, not parked"
        );
        assert!(timers.list(Listing::Parked, 100).unwrap().timers.is_empty());
        for key in &keys {
            let info = timers.get(key).unwrap().unwrap();
            assert_eq!(
                (info.state, info.attempts),
                (TimerState::Pending, 0),
                "{key}"
            );
        }
        eventually("the stats to show them pending", || {
            let s = timers.stats();
            (s.pending, s.parked) == (Some(11), Some(0))
        });

        assert!(timers.resume_all().unwrap());
        let runs = rec.wait_for(11);
        let order: Vec<String> = runs.iter().map(|r| r.key.clone()).collect();
        assert_eq!(order, keys, "in due order");
        assert!(runs.iter().all(|r| r.attempt == 1), "{runs:?}");
        assert!(!timers.flows().unwrap().paused);
        timers.shutdown().unwrap();
    });
}

#[test]
fn a_pause_through_one_handle_holds_on_another_handle_s_node() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let builder = || {
        DurableTimers::builder()
            .redis(&server.url())
            .namespace("shared")
    };
    let client = builder().build().unwrap();
    let rec = Recorder::new();
    let firing = node(builder(), &rec);

    assert!(client.pause_flow("a").unwrap());
    assert!(!firing.pause_flow("a").unwrap(), "paused for every handle");
    let base = in_ms(300);
    let a: Vec<String> = (0..5u64).map(|i| format!("a:{i}")).collect();
    for (i, key) in a.iter().enumerate() {
        client.add_at(key, base + ms(i as u64 * 20), b"").unwrap();
    }
    client.add_at("b:0", base, b"").unwrap();
    rec.wait_for(1);
    wait_parked(&client, "a", 5);
    assert_eq!(keys_of(&rec.runs(), "a:"), Vec::<String>::new());
    assert!(client.resume_flow("a").unwrap());
    let runs = rec.wait_for(6);
    assert_eq!(keys_of(&runs, "a:"), a, "once each, in due order");

    assert!(client.pause_all().unwrap());
    assert!(firing.flows().unwrap().paused);
    client.add_at("c:0", in_ms(100), b"").unwrap();
    // Past its due time and many of the node's polls: not claimed.
    std::thread::sleep(ms(600));
    assert_eq!(rec.runs().len(), 6);
    assert_eq!(
        firing.get("c:0").unwrap().unwrap().state,
        TimerState::Pending
    );
    assert!(client.resume_all().unwrap());
    let runs = rec.wait_for(7);
    assert_eq!(runs[6].key, "c:0");
    firing.shutdown().unwrap();
    client.shutdown().unwrap();
}

#[test]
fn bad_flow_keys_are_refused_and_a_rule_s_bad_answer_counts_as_none() {
    on_both_stores(|builder| {
        let rec = Recorder::new();
        let timers = builder
            .flow_key(|key, _| {
                Some(match key {
                    "empty" => String::new(),
                    "control" => "a\n".to_owned(),
                    "long" => "a".repeat(513),
                    _ => "a".to_owned(),
                })
            })
            .poll(ms(50))
            .handler(rec.handler(0, |_| Outcome::Done))
            .build()
            .unwrap();
        for bad in ["", "a\n", "\u{7f}", &"a".repeat(513)] {
            for e in [
                timers.pause_flow(bad).unwrap_err(),
                timers.resume_flow(bad).unwrap_err(),
            ] {
                assert!(matches!(e, DurableError::InvalidFlow(_)), "{bad:?}: {e:?}");
                assert!(e.is_input(), "{e:?}");
            }
        }
        let longest = "é".repeat(256);
        assert!(timers.pause_flow(&longest).unwrap(), "512 bytes is a key");
        assert!(timers.resume_flow(&longest).unwrap());

        assert!(timers.pause_flow("a").unwrap());
        let due = in_ms(200);
        for key in ["empty", "control", "long", "held"] {
            timers.add_at(key, due, b"").unwrap();
        }
        let runs = rec.wait_for(3);
        wait_parked(&timers, "a", 1);
        let mut fired: Vec<String> = runs.iter().map(|r| r.key.clone()).collect();
        fired.sort();
        assert_eq!(fired, ["control", "empty", "long"], "no flow key: not held");
        assert_eq!(
            timers.get("held").unwrap().unwrap().state,
            TimerState::Parked
        );
        let flows = timers.flows().unwrap();
        assert_eq!(
            flows.keys.len(),
            1,
            "the bad answers named no key: {flows:?}"
        );
        timers.shutdown().unwrap();
    });
}

#[cfg(feature = "http")]
#[test]
fn a_callback_naming_a_bad_flow_key_is_refused_when_added() {
    use wheel_durable::http::{HttpCallback, Method};
    let dir = tempfile::tempdir().unwrap();
    let timers = DurableTimers::builder()
        .embedded(dir.path().join("timers"))
        .build()
        .unwrap();
    let due = in_ms(60_000);
    for bad in ["", "a\u{0}b", &"a".repeat(513)] {
        let cb = HttpCallback::new(Method::Post, "https://shop.example/hook").flow(bad);
        let e = timers.add_callback_at("cb", due, &cb).unwrap_err();
        assert!(matches!(e, DurableError::InvalidFlow(_)), "{bad:?}: {e:?}");
    }
    assert_eq!(timers.get("cb").unwrap(), None, "nothing was added");
    timers.shutdown().unwrap();
}

#[test]
fn a_parked_timer_can_be_cancelled_rescheduled_or_replaced() {
    on_both_stores(|builder| {
        let rec = Recorder::new();
        let timers = node(builder, &rec);
        assert!(timers.pause_flow("a").unwrap());
        let due = in_ms(200);
        for key in ["a:cancel", "a:move", "a:replace", "a:again"] {
            timers.add_at(key, due, b"old").unwrap();
        }
        wait_parked(&timers, "a", 4);

        assert!(
            timers.cancel("a:cancel").unwrap(),
            "a parked timer never started"
        );
        assert_eq!(timers.get("a:cancel").unwrap(), None);
        assert!(!timers.cancel("a:cancel").unwrap());

        let later = in_ms(600_000);
        assert!(timers.reset_at("a:move", later).unwrap());
        let moved = timers.get("a:move").unwrap().unwrap();
        assert_eq!(
            (moved.state, moved.due, moved.attempts),
            (TimerState::Pending, later, 0)
        );

        timers.add_at("a:replace", later, b"new").unwrap();
        let replaced = timers.get("a:replace").unwrap().unwrap();
        assert_eq!(replaced.state, TimerState::Pending);
        assert_eq!(replaced.payload, b"new");

        // Due again while its key is still paused: parked again, at its
        // new due time.
        let again = in_ms(100);
        assert!(timers.reset_at("a:again", again).unwrap());
        eventually("a:again to be parked again", || {
            let info = timers.get("a:again").unwrap().unwrap();
            info.state == TimerState::Parked && info.due == again
        });
        let flows = timers.flows().unwrap();
        assert_eq!(flows.keys.len(), 1);
        assert_eq!((flows.keys[0].paused, flows.keys[0].parked), (true, 1));
        assert!(rec.runs().is_empty());

        assert!(timers.resume_flow("a").unwrap());
        let runs = rec.wait_for(1);
        assert_eq!((runs[0].key.as_str(), runs[0].attempt), ("a:again", 1));
        // The moved and the replaced timers wait for their own due time.
        let pending: Vec<String> = timers
            .list(Listing::Pending, 10)
            .unwrap()
            .timers
            .into_iter()
            .map(|t| t.key)
            .collect();
        assert_eq!(pending, ["a:move", "a:replace"]);
        timers.shutdown().unwrap();
    });
}
