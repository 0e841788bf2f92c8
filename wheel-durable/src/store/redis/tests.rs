//! Redis-specific tests; the differential tests in `store/tests.rs` also
//! run every sequence on this store when `redis-server` is available. The
//! skewed-clock test is here rather than in `wheel/tests/` because it sets
//! the store's clock through a crate-private builder method.
//!
//! Node state: none.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{Mode, Options, Part, RedisStore, Servers};
use crate::store::{Claimed, Due, NewTimer, Store, StoreClock};
use crate::sync::lock;
use crate::{AddMode, DurableError, DurableTimers, Fired, Listing, Outcome};
use wheel_testkit::{RedisServer, ServerOptions};

fn options(url: String, clock: StoreClock) -> Options {
    Options {
        servers: Servers::One(url),
        part: Part::WHOLE,
        namespace: "diff".into(),
        clock,
        window: 10,
        unavailable_after: Duration::from_secs(2),
        replicas: None,
    }
}

/// A store and its name in the differential harness's reports.
#[cfg(feature = "embedded")]
type NamedStore = (&'static str, Box<dyn Store>);

/// A fresh server and two stores on it, for one differential sequence:
/// one calling the function library, one the scripts (each in its own
/// namespace), so every sequence checks both forms of each body.
#[cfg(feature = "embedded")] // the differential harness runs beside the embedded store
pub(crate) fn store_for_differential(clock: StoreClock) -> Option<(RedisServer, [NamedStore; 2])> {
    let server = RedisServer::for_test(ServerOptions::default())?;
    let functions =
        RedisStore::open(options(server.url(), clock.clone())).expect("open the Redis store");
    assert_eq!(functions.mode(), Mode::Functions);
    let mut o = options(server.url(), clock);
    o.namespace = "diff-scripts".into();
    let scripts = RedisStore::open_scripts(o).expect("open the Redis store");
    Some((
        server,
        [
            ("redis", Box::new(functions)),
            ("redis-scripts", Box::new(scripts)),
        ],
    ))
}

/// Runs `test` once with a store of each mode.
fn in_both_modes(test: impl Fn(Mode)) {
    for mode in [Mode::Functions, Mode::Scripts] {
        test(mode);
    }
}

/// A store calling as `mode` says (the server offers both).
fn open_in(mode: Mode, options: Options) -> crate::store::StoreResult<RedisStore> {
    let store = match mode {
        Mode::Functions => RedisStore::open(options)?,
        Mode::Scripts => RedisStore::open_scripts(options)?,
    };
    assert_eq!(store.mode(), mode);
    Ok(store)
}

#[test]
fn an_unreachable_server_is_unavailable_not_waited_for() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut o = options(format!("redis://127.0.0.1:{port}/0"), StoreClock::Real);
    o.unavailable_after = Duration::from_millis(300);
    let started = std::time::Instant::now();
    let e = RedisStore::open(o).err().expect("nothing listens there");
    assert!(matches!(e, DurableError::Unavailable(_)), "{e:?}");
    // It gives up rather than waiting for the server: the bound (100x
    // `unavailable_after`) only turns a hang into a failure.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_restarted_server_is_reached_again_and_scripts_reload() {
    in_both_modes(|mode| {
        let Some(mut server) = RedisServer::for_test(ServerOptions { aof: true }) else {
            return;
        };
        let store = open_in(mode, options(server.url(), StoreClock::Real)).unwrap();
        let t = NewTimer {
            key: "k",
            due: Due::After(60_000),
            payload: b"p",
        };
        store.add(&[t], AddMode::Replace).unwrap();
        // AOF fsyncs every second: wait for the write to reach the file.
        std::thread::sleep(Duration::from_millis(1_200));
        server.restart().unwrap();
        // The pooled connection is broken and the scripts are gone (NOSCRIPT).
        let info = store
            .get("k")
            .unwrap()
            .expect("kept by the append-only file");
        assert_eq!(info.payload, b"p");
        assert!(store.cancel("k").unwrap());
    });
}

/// A store clock 2 s ahead of this machine's, then 2 s behind it, in a
/// thread that keeps it moving; all nodes and clients read it (as they
/// read a server's `TIME`), the nodes' own clocks stay the machine's.
struct SkewedClock {
    ms: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

impl SkewedClock {
    fn new(offset_ms: i64) -> SkewedClock {
        let ms = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let read = move || unix_ms(SystemTime::now()).saturating_add_signed(offset_ms);
        ms.store(read(), Ordering::SeqCst);
        let (m, s) = (ms.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                m.store(read(), Ordering::SeqCst);
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        SkewedClock {
            ms,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for SkewedClock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

/// A handler start: key, due time, the machine's clock and the store's
/// clock at the start.
struct Start {
    key: String,
    due: SystemTime,
    at: SystemTime,
    store_at: u64,
}

/// The handler starts of one node, with a wait for a count of them.
#[derive(Clone, Default)]
struct Starts(Arc<(Mutex<Vec<Start>>, Condvar)>);

impl Starts {
    fn record(&self, f: &Fired, store_at: u64) {
        let at = SystemTime::now();
        let (starts, cond) = &*self.0;
        starts.lock().unwrap().push(Start {
            key: f.key.clone(),
            due: f.due,
            at,
            store_at,
        });
        cond.notify_all();
    }

    /// Waits until `n` starts are recorded; a liveness bound of 30 s, far
    /// above the few seconds the test needs, so that a lost timer fails
    /// instead of hanging.
    fn wait_for(&self, n: usize) -> std::sync::MutexGuard<'_, Vec<Start>> {
        let (starts, cond) = &*self.0;
        let until = Instant::now() + Duration::from_secs(30);
        let mut guard = starts.lock().unwrap();
        while guard.len() < n {
            let now = Instant::now();
            assert!(now < until, "only {} of {n} timers ran", guard.len());
            guard = cond.wait_timeout(guard, until - now).unwrap().0;
        }
        guard
    }
}

/// The store's clock is ahead of (or behind) the nodes' by 2 s: due times
/// and delays are read on the store's clock, so nothing starts before its
/// due time by that clock, whatever the nodes' clocks say.
///
/// The store-clock checks compare readings of the store's own clock (taken
/// before the add and in the handler), not the machine's clock plus the
/// offset: the thread that moves the store's clock may be descheduled for
/// a while on a busy machine, and a stale reading at the add would make a
/// correct node look early by the machine's clock.
#[test]
fn a_store_clock_off_by_two_seconds_decides_and_nothing_starts_early_by_it() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let ms = Duration::from_millis;
    for offset in [2_000i64, -2_000] {
        let clock = SkewedClock::new(offset);
        let starts = Starts::default();
        let (recorder, store_clock) = (starts.clone(), clock.ms.clone());
        let n = DurableTimers::builder()
            .redis(&server.url())
            .namespace(&format!("skew{offset}"))
            .manual_store_clock(clock.ms.clone())
            .handler(move |f: &Fired| {
                recorder.record(f, store_clock.load(Ordering::SeqCst));
                Outcome::Done
            })
            .build()
            .unwrap();
        let added = SystemTime::now();
        // Due 1 s after the machine's now: by the store's clock 3 s ahead,
        // or already 1 s ago.
        n.add_at("absolute", added + ms(1_000), b"").unwrap();
        // 500 ms after the store's now, whatever the machine's clock says.
        let store_added = clock.ms.load(Ordering::SeqCst);
        n.add("relative", ms(500), b"").unwrap();
        let runs = starts.wait_for(2);
        for r in runs.iter() {
            assert!(
                r.store_at >= unix_ms(r.due),
                "{} started {} ms early by the store's clock",
                r.key,
                unix_ms(r.due) - r.store_at
            );
        }
        let run = |key: &str| runs.iter().find(|r| r.key == key).unwrap();
        assert!(
            run("relative").store_at >= store_added + 500,
            "the delay ran on a node clock"
        );
        let absolute = run("absolute");
        if offset > 0 {
            // Already due by the store's clock: it does not wait for the
            // machine's clock to reach its due time.
            assert!(absolute.at < absolute.due, "store time decides");
        } else {
            let after = absolute.at.duration_since(added).unwrap();
            assert!(after >= ms(3_000), "store time decides: {after:?}");
        }
        drop(runs);
        n.shutdown().unwrap();
    }
}

/// A timer record whose state byte says a first due time follows, without
/// its eight bytes: the scripts refuse it, nothing is claimed from it.
#[test]
fn a_flagged_record_missing_its_first_due_time_is_an_error_not_a_timer() {
    in_both_modes(|mode| {
        let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
            return;
        };
        let store = open_in(
            mode,
            options(server.url(), StoreClock::Manual(Default::default())),
        )
        .unwrap();
        let mut record = vec![0u8; 29];
        record[28] = 0x80; // pending, flagged
        let mut conn = redis::Client::open(server.url())
            .unwrap()
            .get_connection()
            .unwrap();
        redis::cmd("HSET")
            .arg("{diff}:t")
            .arg("k")
            .arg(record)
            .exec(&mut conn)
            .unwrap();
        redis::cmd("ZADD")
            .arg("{diff}:due")
            .arg(0)
            .arg("k")
            .exec(&mut conn)
            .unwrap();
        let e = store.get("k").unwrap_err();
        assert!(matches!(e, DurableError::Store(_)), "{e:?}");
        let req = crate::store::ClaimRequest {
            window: 0,
            lease: 1_000,
            max: 10,
            max_attempts: 3,
        };
        let e = store.claim(&req).unwrap_err();
        assert!(matches!(e, DurableError::Store(_)), "{e:?}");
        let source = std::error::Error::source(&e).expect("the script's error");
        assert!(source.is::<redis::RedisError>(), "{source:?}");
    });
}

#[test]
fn a_chain_step_planned_from_the_claim_s_record_is_the_fresh_read_s_or_refused() {
    in_both_modes(|mode| {
        use crate::schedule::{Schedule, Spec};
        use crate::schedule_store::{advances, upsert};
        use crate::store::{ClaimRequest, Start};
        let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
            return;
        };
        let clock = Arc::new(AtomicU64::new(1_700_000_000_500));
        let store = open_in(
            mode,
            options(server.url(), StoreClock::Manual(clock.clone())),
        )
        .expect("open the Redis store");
        let every = |_| {
            Schedule::builder(Spec::every(Duration::from_secs(1)).unwrap())
                .build()
                .unwrap()
        };
        upsert(&store, "a", &every(()), b"p").unwrap();
        let claim = |store: &RedisStore| {
            let req = ClaimRequest {
                window: 0,
                lease: 60_000,
                max: 10,
                max_attempts: 3,
            };
            store.claim(&req).unwrap().timers
        };
        clock.store(1_700_000_001_000, Ordering::SeqCst);
        let claimed = claim(&store);
        let key = "sched:a:1700000001000";
        assert_eq!(
            claimed.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(),
            [key]
        );
        // The claim's copy is what a read gives now; taken, the next ask reads.
        let fresh = store.schedules(&["a"]).unwrap();
        assert_eq!(store.schedules_to_start(&[(key, "a")]).unwrap(), fresh);
        assert_eq!(store.schedules_to_start(&[(key, "a")]).unwrap(), fresh);
        let steps = advances(&store, &[key]).unwrap();
        let fenced = [claimed[0].fenced()];
        let started = store.start_runs(&fenced, &steps, &[], 60_000).unwrap();
        assert!(matches!(started[0], Start::Started { .. }), "{started:?}");
        let next = "sched:a:1700000002000";
        let (_, r) = store.schedules(&["a"]).unwrap();
        assert_eq!(r[0].as_ref().unwrap().next.as_deref(), Some(next));

        // The schedule changes between the next run's claim and its start:
        // the step planned from the claim's copy is refused with the run, and
        // the chain keeps exactly the one pending run of the new definition.
        clock.store(1_700_000_002_000, Ordering::SeqCst);
        let claimed = claim(&store);
        assert_eq!(claimed[0].key, next);
        upsert(&store, "a", &every(()), b"changed").unwrap();
        let steps = advances(&store, &[next]).unwrap();
        assert!(steps[0].is_some(), "planned from the claim's copy");
        let started = store
            .start_runs(&[claimed[0].fenced()], &steps, &[], 60_000)
            .unwrap();
        assert_eq!(started, [Start::Stale]);
        let (_, r) = store.schedules(&["a"]).unwrap();
        let r = r[0].clone().unwrap();
        assert_eq!(
            r.next.as_deref(),
            Some(next),
            "the new definition's first run"
        );
        assert!(!r.unplanned);
        assert_eq!(store.get(next).unwrap().unwrap().payload, b"changed");
    });
}

#[test]
fn expired_memories_are_deleted_by_a_claim() {
    in_both_modes(|mode| {
        let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
            return;
        };
        let ms = Arc::new(AtomicU64::new(1_000_000));
        let store = open_in(mode, options(server.url(), StoreClock::Manual(ms.clone()))).unwrap();
        store.set_dedup_window(100);
        for key in ["a", "b", "c"] {
            let t = NewTimer {
                key,
                due: Due::After(50),
                payload: b"",
            };
            store.add(&[t], AddMode::Replace).unwrap();
            assert!(store.cancel(key).unwrap());
        }
        let mut c = redis::Client::open(server.url())
            .unwrap()
            .get_connection()
            .unwrap();
        let sizes = |c: &mut redis::Connection| -> (u64, u64) {
            let h = redis::cmd("HLEN").arg("{diff}:ended").query(c).unwrap();
            let z = redis::cmd("ZCARD").arg("{diff}:endedq").query(c).unwrap();
            (h, z)
        };
        assert_eq!(sizes(&mut c), (3, 3));
        ms.fetch_add(100, Ordering::SeqCst);
        assert_eq!(store.ended("a").unwrap(), None);
        assert_eq!(sizes(&mut c), (3, 3));
        let req = crate::store::ClaimRequest {
            window: 0,
            lease: 1_000,
            max: 10,
            max_attempts: 1,
        };
        store.claim(&req).unwrap();
        assert_eq!(sizes(&mut c), (0, 0));
    });
}

/// Parks `n` timers under each flow key of `flows` (keys `<flow>-<i>`,
/// due times with ties), in `store` as in `model`, then resumes the keys in
/// the order given: more than `UNPARK_BATCH` are left parked, and the
/// claims that follow make them pending as the model does.
#[test]
fn a_resume_of_more_than_a_batch_continues_in_the_claims_as_the_model_does() {
    in_both_modes(|mode| {
        use crate::store::model::Model;
        use crate::store::{ClaimRequest, Fenced, Start, UNPARK_BATCH};
        let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
            return;
        };
        let clock = Arc::new(AtomicU64::new(1_000));
        let manual = StoreClock::Manual(clock.clone());
        let redis = open_in(mode, options(server.url(), manual.clone())).unwrap();
        let model = Model::new(manual);
        let stores: [&dyn Store; 2] = [&model, &redis];
        // Each answer of the Redis store is the model's.
        let both = |f: &dyn Fn(&dyn Store) -> String| {
            let (m, r) = (f(stores[0]), f(stores[1]));
            assert_eq!(m, r);
            m
        };
        let flows = [("b", 1_300), ("a", 1_200), ("c", 2_500)];
        let keys: Vec<(String, &str)> = flows
            .iter()
            .flat_map(|&(f, n)| (0..n).map(move |i| (format!("{f}-{i:05}"), f)))
            .collect();
        let timers: Vec<NewTimer<'_>> = keys
            .iter()
            .enumerate()
            .map(|(i, (k, _))| NewTimer {
                key: k,
                due: Due::At(900 + (i as u64 * 7) % 50),
                payload: b"",
            })
            .collect();
        let req = ClaimRequest {
            window: 0,
            lease: 10_000,
            max: 10_000,
            max_attempts: 3,
        };
        both(&|s| format!("{:?}", s.add(&timers, AddMode::Replace).unwrap()));
        for (f, _) in flows {
            both(&|s| format!("{:?}", s.set_paused(Some(f), true).unwrap()));
        }
        let starts = both(&|s| {
            let claimed = s.claim(&req).unwrap().timers;
            let held: Vec<Fenced<'_>> = claimed.iter().map(Claimed::fenced).collect();
            let of: Vec<&str> = claimed
                .iter()
                .map(|c| keys.iter().find(|(k, _)| *k == c.key).unwrap().1)
                .collect();
            let started = s.start_runs(&held, &[], &of, 100).unwrap();
            assert!(started.iter().all(|a| matches!(a, Start::Paused { .. })));
            format!("{started:?}")
        });
        assert!(!starts.is_empty());
        let look = |s: &dyn Store| {
            let parked = s.list(Listing::Parked, None, 3).unwrap();
            let pending = s.list(Listing::Pending, None, 3).unwrap();
            format!(
                "{:?} {:?} {parked:?} {pending:?}",
                s.counts().unwrap(),
                s.flows().unwrap()
            )
        };
        both(&look);
        for (f, _) in flows {
            both(&|s| format!("{:?}", s.set_paused(Some(f), false).unwrap()));
            both(&look);
        }
        // Left parked: 300 of b, 200 of a, 1500 of c; the first claim takes
        // a's and b's rest and 500 of c, the second c's last 1000.
        let counts = redis.counts().unwrap();
        assert_eq!(counts.parked, 2_000);
        assert_eq!(counts.pending, 3 * UNPARK_BATCH as u64);
        let none = ClaimRequest { max: 0, ..req };
        for left in [1_000, 0] {
            both(&|s| format!("{:?}", s.claim(&none).unwrap()));
            both(&look);
            assert_eq!(redis.counts().unwrap().parked, left);
        }
        both(&|s| format!("{:?}", s.claim(&req).unwrap()));
        assert!(redis.flows().unwrap().keys.is_empty());
        // Nothing of the flow control is left behind in Redis.
        let mut c = redis::Client::open(server.url())
            .unwrap()
            .get_connection()
            .unwrap();
        for key in [
            "paused", "parked", "pflow", "pflows", "wakeups", "parked:a", "breakers", "inflight",
        ] {
            let n: u64 = redis::cmd("EXISTS")
                .arg(format!("{{diff}}:{key}"))
                .query(&mut c)
                .unwrap();
            assert_eq!(n, 0, "{key}");
        }
    });
}

/// Resuming a flow key whose parked timers come due, and resuming the
/// namespace, announce the earliest due time on the wake channel, as an
/// add of a due timer does.
#[test]
fn resumes_wake_the_nodes() {
    use crate::store::{ClaimRequest, Claimed, Start};
    use std::sync::mpsc;
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let clock = Arc::new(AtomicU64::new(5_000));
    let store = RedisStore::open(options(server.url(), StoreClock::Manual(clock))).unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    store
        .watch(Arc::new(move |due| {
            let _ = lock(&tx).send(due);
        }))
        .unwrap();
    // The watcher wakes once (0) when subscribed: from then on nothing
    // published is missed.
    let wait_for = |want: u64| loop {
        let got = rx.recv_timeout(Duration::from_secs(30)).expect("a wake-up");
        if got == want {
            break;
        }
    };
    wait_for(0);
    let add = |key, at| {
        let t = NewTimer {
            key,
            due: Due::At(at),
            payload: b"",
        };
        store.add(&[t], AddMode::Replace).unwrap();
    };
    add("k", 4_990);
    let req = ClaimRequest {
        window: 0,
        lease: 1_000,
        max: 10,
        max_attempts: 3,
    };
    let start = |flow: &str| {
        let claimed = store.claim(&req).unwrap().timers;
        let held: Vec<_> = claimed.iter().map(Claimed::fenced).collect();
        store.start_runs(&held, &[], &[flow], 1_000).unwrap()
    };
    assert!(store.set_paused(Some("f"), true).unwrap());
    assert_eq!(start("f"), [Start::Paused { now: 5_000 }]);
    add("marker", 4_991);
    wait_for(4_991);
    assert!(store.set_paused(Some("f"), false).unwrap());
    wait_for(4_990);

    assert!(store.set_paused(None, true).unwrap());
    let claimed = store.claim(&req).unwrap();
    assert!(claimed.timers.is_empty());
    assert_eq!(claimed.next_due, None, "a paused namespace reports none");
    assert!(store.set_paused(None, false).unwrap());
    wait_for(4_990);
}

/// The store's clock stands still (a manual clock), so the dead letters
/// failed in the very millisecond the replay reads as its start: they
/// failed before the call, and the replay takes every one of them.
#[test]
fn a_replay_takes_the_letters_that_failed_in_its_starting_millisecond() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let store_ms = Arc::new(AtomicU64::new(unix_ms(SystemTime::now())));
    let fail = Arc::new(AtomicBool::new(true));
    let ran = Arc::new(Mutex::new(Vec::new()));
    let (f, r) = (fail.clone(), ran.clone());
    let n = DurableTimers::builder()
        .redis(&server.url())
        .namespace("replay-ms")
        .manual_store_clock(store_ms.clone())
        .handler(move |t: &Fired| {
            if f.load(Ordering::SeqCst) {
                return Outcome::Fail("down".into());
            }
            lock(&r).push(t.key.clone());
            Outcome::Done
        })
        .build()
        .unwrap();
    for i in 0..20 {
        n.add(&format!("k{i}"), Duration::ZERO, b"").unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while n.list(Listing::Dead, 100).unwrap().timers.len() < 20 {
        assert!(Instant::now() < deadline, "the letters did not die");
        std::thread::sleep(Duration::from_millis(5));
    }
    fail.store(false, Ordering::SeqCst);
    let end = n
        .replay_dead(&crate::DeadFilter::default(), 1_000.0, None)
        .unwrap()
        .wait();
    assert_eq!((end.matched, end.revived, end.skipped), (20, 20, 0));
    while lock(&ran).len() < 20 {
        assert!(Instant::now() < deadline, "the revived letters did not run");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut keys = lock(&ran).clone();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 20, "each revived letter runs once");
    n.shutdown().unwrap();
}
