//! Durable timers on the embedded store, end to end: firing, cancel and
//! reschedule, retries and dead letters, restart, shutdown, bad input.

use crate::durable_common;
use crate::durable_listing;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use durable_common::{Recorder, assert_none_early, eventually};
use wheel_durable::{DurableError, DurableTimers, Outcome, RetryPolicy, TimerState};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn path(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("timers")
}

#[test]
fn every_timer_fires_once_and_never_early() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new();
    let timers = DurableTimers::builder()
        .embedded(path(&dir))
        .handler(rec.handler(0, |_| Outcome::Done))
        .build()
        .unwrap();
    let start = SystemTime::now();
    for i in 0..200u64 {
        let due = start + ms(5 * i % 700);
        timers
            .add_at(&format!("t{i}"), due, &i.to_le_bytes())
            .unwrap();
    }
    timers.add("soon", ms(50), b"").unwrap();
    let runs = rec.wait_for(201);
    assert_none_early(&runs);
    let by_key = rec.by_key();
    assert_eq!(by_key.len(), 201);
    assert!(by_key.values().all(|r| r.len() == 1 && r[0].attempt == 1));
    assert_eq!(by_key["t7"][0].payload, 7u64.to_le_bytes());
    eventually("the store to be empty", || {
        let s = timers.stats();
        s.pending == Some(0) && s.claimed == Some(0)
    });
    let s = timers.stats();
    assert_eq!((s.fired, s.retried, s.failed), (201, 0, 0));
    assert!(s.lateness_max >= s.lateness_p99 && s.lateness_p99 >= s.lateness_p50);
    timers.shutdown().unwrap();
}

#[test]
fn cancel_and_reschedule_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new();
    let timers = DurableTimers::builder()
        .embedded(path(&dir))
        .claim_ahead(ms(1_000))
        .handler(rec.handler(0, |_| Outcome::Done))
        .build()
        .unwrap();
    timers.add("cancelled", ms(300), b"").unwrap();
    timers.add("moved", ms(300), b"").unwrap();
    timers.add("marker", ms(600), b"").unwrap();
    // Both are claimed into memory at once (due within the claim window).
    eventually("the node to hold the timers", || timers.stats().held == 3);
    assert!(timers.cancel("cancelled").unwrap());
    assert!(!timers.cancel("cancelled").unwrap());
    let later = SystemTime::now() + ms(900);
    assert!(timers.reset_at("moved", later).unwrap());
    assert_eq!(
        timers.get("moved").unwrap().unwrap().state,
        TimerState::Pending
    );
    let runs = rec.wait_for(2);
    assert_eq!(runs[0].key, "marker");
    assert_eq!(runs[1].key, "moved");
    assert!(runs[1].at >= later);
    assert_eq!(timers.get("cancelled").unwrap(), None);
    // The cancelled claim's start is refused; the moved one's old claim was
    // replaced in memory by its new claim, or refused the same way.
    eventually("the stale claim to be refused", || {
        timers.stats().stale >= 1
    });
    timers.shutdown().unwrap();
    assert_eq!(rec.runs().len(), 2);
}

#[test]
fn retries_back_off_then_dead_letter_and_revive() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new();
    let healed = Arc::new(AtomicU32::new(0));
    let h = healed.clone();
    let timers = DurableTimers::builder()
        .embedded(path(&dir))
        .retry(
            RetryPolicy::new()
                .initial(ms(20))
                .jitter(0.0)
                .max_attempts(3),
        )
        .handler(rec.handler(0, move |f| match f.key.as_str() {
            "flaky" if h.load(Ordering::SeqCst) == 0 => Outcome::Retry,
            "later" if f.attempt == 1 => Outcome::RetryAfter(ms(150)),
            "bad" => Outcome::Fail("the order does not exist".into()),
            "panics" if f.attempt == 1 => panic!("a handler bug"),
            _ => Outcome::Done,
        }))
        .build()
        .unwrap();
    for key in ["flaky", "later", "bad", "panics"] {
        timers.add(key, ms(10), key.as_bytes()).unwrap();
    }
    eventually("two dead letters", || {
        timers.dead_letters(10).unwrap().len() == 2
    });
    let dead = timers.dead_letters(10).unwrap();
    let bad = dead.iter().find(|d| d.key == "bad").unwrap();
    assert_eq!(
        (bad.attempts, bad.reason.as_str()),
        (1, "the order does not exist")
    );
    let flaky = dead.iter().find(|d| d.key == "flaky").unwrap();
    assert_eq!(flaky.attempts, 3);
    assert!(
        flaky.reason.starts_with("gave up after 3 attempts"),
        "{}",
        flaky.reason
    );
    assert_eq!(flaky.payload, b"flaky");
    assert_eq!(
        timers.get("flaky").unwrap().unwrap().state,
        TimerState::Dead
    );
    let runs = rec.by_key();
    // Back-off: 20 ms after the first run, 40 ms after the second. The
    // store keeps whole milliseconds: a retry is due its delay after the
    // millisecond the run ended in, so up to 1 ms less after the run's
    // start by this clock's finer reading.
    let f = &runs["flaky"];
    assert!(f[1].at.duration_since(f[0].at).unwrap() >= ms(19));
    assert!(f[2].at.duration_since(f[1].at).unwrap() >= ms(39));
    let l = &runs["later"];
    eventually("the retried timer", || rec.by_key()["later"].len() == 2);
    let l2 = &rec.by_key()["later"];
    assert!(
        l2[1].at.duration_since(l[0].at).unwrap() >= ms(149),
        "{l2:?}"
    );
    eventually("the panicking timer's second run", || {
        rec.by_key().get("panics").is_some_and(|r| r.len() == 2)
    });
    // Revived, it runs again from attempt 1 and succeeds.
    healed.store(1, Ordering::SeqCst);
    assert!(timers.retry_dead("flaky", SystemTime::now()).unwrap());
    assert!(!timers.retry_dead("flaky", SystemTime::now()).unwrap());
    eventually("the revived timer", || rec.by_key()["flaky"].len() == 4);
    assert_eq!(rec.by_key()["flaky"][3].attempt, 1);
    eventually("one dead letter left", || {
        timers.dead_letters(10).unwrap().len() == 1
    });
    assert!(!timers.cancel("bad").unwrap());
    assert!(timers.dead_letters(10).unwrap().is_empty());
    timers.shutdown().unwrap();
}

#[test]
fn overdue_timers_fire_at_once_after_a_restart_earliest_first() {
    let dir = tempfile::tempdir().unwrap();
    let client = DurableTimers::builder()
        .embedded(path(&dir))
        .build()
        .unwrap();
    let base = SystemTime::now() - Duration::from_secs(60);
    // More than one claim batch and more than one start call's room.
    let keys: Vec<String> = (0..300).map(|i| format!("k{i:03}")).collect();
    // Added in reverse order: the run order must follow the due times.
    for (i, k) in keys.iter().enumerate().rev() {
        client.add_at(k, base + ms(i as u64), b"").unwrap();
    }
    client.shutdown().unwrap();
    let rec = Recorder::new();
    let node = DurableTimers::builder()
        .embedded(path(&dir))
        .workers(1)
        .handler(rec.handler(0, |_| Outcome::Done))
        .build()
        .unwrap();
    let runs = rec.wait_for(300);
    let order: Vec<&str> = runs.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(
        order,
        keys.iter().map(String::as_str).collect::<Vec<_>>(),
        "{runs:?}"
    );
    node.shutdown().unwrap();
}

#[test]
fn a_shared_node_shuts_down_once_and_a_second_caller_waits_for_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let release_rx = std::sync::Mutex::new(release_rx);
    let finished = Arc::new(AtomicU32::new(0));
    let f = finished.clone();
    let node = Arc::new(
        DurableTimers::builder()
            .embedded(path(&dir))
            .handler(move |_| {
                started_tx.send(()).unwrap();
                // Runs until the test lets it end: shutdown must wait.
                release_rx.lock().unwrap().recv().unwrap();
                f.fetch_add(1, Ordering::SeqCst);
                Outcome::Done
            })
            .build()
            .unwrap(),
    );
    node.add("slow", ms(0), b"").unwrap();
    started_rx
        .recv_timeout(durable_common::LIVENESS)
        .expect("the run started");
    let callers: Vec<_> = (0..2)
        .map(|_| {
            let n = node.clone();
            let f = finished.clone();
            std::thread::spawn(move || {
                n.shutdown().unwrap();
                // Whichever call returns, the run had ended and reported.
                f.load(Ordering::SeqCst)
            })
        })
        .collect();
    std::thread::sleep(ms(100));
    assert!(
        callers.iter().all(|c| !c.is_finished()),
        "returned while the run was going"
    );
    release_tx.send(()).unwrap();
    for c in callers {
        assert_eq!(c.join().unwrap(), 1);
    }
    // The outcome was recorded before the store closed; calls now answer Closed.
    assert!(matches!(node.get("slow"), Err(DurableError::Closed)));
    let store = DurableTimers::builder()
        .embedded(path(&dir))
        .build()
        .unwrap();
    assert_eq!(store.get("slow").unwrap(), None, "done, so gone");
    store.shutdown().unwrap();
}

#[test]
fn shutdown_hands_back_claimed_timers() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new();
    let node = DurableTimers::builder()
        .embedded(path(&dir))
        .claim_ahead(ms(5_000))
        .lease(ms(60_000))
        .handler(rec.handler(0, |_| Outcome::Done))
        .build()
        .unwrap();
    node.add("held", ms(1_500), b"").unwrap();
    eventually("the claim", || node.stats().held == 1);
    assert_eq!(
        node.get("held").unwrap().unwrap().state,
        TimerState::Claimed
    );
    node.shutdown().unwrap();
    assert!(rec.runs().is_empty());
    // Pending again, not waiting out the 60 s lease (looked at without a
    // node, which would claim it at once).
    let store = DurableTimers::builder()
        .embedded(path(&dir))
        .build()
        .unwrap();
    assert_eq!(
        store.get("held").unwrap().unwrap().state,
        TimerState::Pending
    );
    store.shutdown().unwrap();
    // A new node fires it.
    let node = DurableTimers::builder()
        .embedded(path(&dir))
        .handler(rec.handler(1, |_| Outcome::Done))
        .build()
        .unwrap();
    let runs = rec.wait_for(1);
    assert_eq!((runs[0].key.as_str(), runs[0].node), ("held", 1));
    assert_none_early(&runs);
    node.shutdown().unwrap();
}

#[test]
fn bad_input_gets_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let timers = DurableTimers::builder()
        .embedded(path(&dir))
        .max_payload(8)
        .build()
        .unwrap();
    let now = SystemTime::now();
    assert_eq!(timers.add_at("", now, b""), Err(DurableError::InvalidKey));
    let long = "k".repeat(wheel_durable::MAX_KEY_LEN + 1);
    assert_eq!(
        timers.add_at(&long, now, b""),
        Err(DurableError::InvalidKey)
    );
    assert_eq!(timers.cancel(""), Err(DurableError::InvalidKey));
    assert_eq!(
        timers.add_at("k", now, &[0; 9]),
        Err(DurableError::PayloadTooLarge { len: 9, max: 8 })
    );
    let before_epoch = UNIX_EPOCH - ms(1);
    assert_eq!(
        timers.add_at("k", before_epoch, b""),
        Err(DurableError::InvalidTime)
    );
    let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 1_000);
    assert_eq!(timers.reset_at("k", far), Err(DurableError::InvalidTime));
    assert_eq!(
        timers.add("k", Duration::MAX, b""),
        Err(DurableError::InvalidTime)
    );
    // One bad timer in a batch: nothing is added.
    let batch = [("a", now, b"".as_slice()), ("", now, b"".as_slice())];
    assert_eq!(timers.add_many(&batch), Err(DurableError::InvalidKey));
    assert_eq!(timers.get("a").unwrap(), None);
    timers.shutdown().unwrap();
}

#[test]
fn a_missing_directory_or_a_corrupt_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/timers");
    let e = DurableTimers::builder()
        .embedded(&missing)
        .build()
        .unwrap_err();
    assert!(matches!(e, DurableError::Io(_)), "{e:?}");
    let junk = dir.path().join("junk");
    std::fs::write(&junk, vec![0x5a; 64 * 1024]).unwrap();
    let e = DurableTimers::builder()
        .embedded(&junk)
        .build()
        .unwrap_err();
    assert!(matches!(e, DurableError::Corrupt(_)), "{e:?}");
    // A real store with one byte of a timer's payload changed in its
    // journal: the journal's checksums catch it.
    let good = path(&dir);
    let t = DurableTimers::builder().embedded(&good).build().unwrap();
    for i in 0..2_000 {
        t.add(&format!("k{i}"), Duration::from_secs(60), &[7; 100])
            .unwrap();
    }
    t.shutdown().unwrap();
    let mut damaged = 0;
    for file in files_under(&good) {
        let mut bytes = std::fs::read(&file).unwrap();
        let payloads: Vec<usize> = bytes
            .windows(100)
            .enumerate()
            .filter(|(_, w)| w.iter().all(|b| *b == 7))
            .map(|(i, _)| i)
            .collect();
        if let Some(at) = payloads.get(payloads.len() / 2) {
            bytes[at + 50] = 8;
            std::fs::write(&file, bytes).unwrap();
            damaged += 1;
        }
    }
    assert!(damaged > 0, "no file holds a payload");
    let e = DurableTimers::builder()
        .embedded(&good)
        .build()
        .unwrap_err();
    assert!(matches!(e, DurableError::Corrupt(_)), "{e:?}");
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn settings_that_cannot_work_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = |b: wheel_durable::DurableTimersBuilder| {
        matches!(b.build().unwrap_err(), DurableError::Config(_))
    };
    let b = || DurableTimers::builder().embedded(path(&dir));
    assert!(config(DurableTimers::builder()));
    assert!(config(b().redis("redis://127.0.0.1:1/0")));
    assert!(config(b().workers(0)));
    assert!(config(b().max_claimed(0)));
    assert!(config(b().lease(Duration::ZERO)));
    assert!(config(b().poll(ms(500)).claim_ahead(ms(100))));
    assert!(config(b().namespace("")));
    assert!(config(b().namespace("{x}")));
    assert!(config(DurableTimers::builder().redis("not a url")));
}

/// The `std::io::Error` under a store failure.
fn io_cause(e: &DurableError) -> &std::io::Error {
    use std::error::Error;
    e.source()
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .unwrap_or_else(|| panic!("no I/O cause under {e:?}"))
}

fn open(path: &std::path::Path) -> Result<DurableTimers, DurableError> {
    DurableTimers::builder().embedded(path).build()
}

#[test]
// The durable feature needs a newer Rust than the crate's MSRV anyway
// (fjall's), so the newer `ErrorKind`s are fine here.
#[allow(clippy::incompatible_msrv)]
fn a_path_under_a_regular_file_fails_with_its_io_cause_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let store = file.join("timers");
    let Err(e) = open(&store) else {
        panic!("its parent is a file")
    };
    assert!(matches!(e, DurableError::Io(_)), "{e:?}");
    assert_eq!(io_cause(&e).kind(), std::io::ErrorKind::NotADirectory);
    let text = e.to_string();
    assert!(
        text.contains(&format!("cannot create {}", store.display())),
        "{text}"
    );
    assert!(text.contains("Not a directory"), "{text}");
    assert_eq!(e.detail().and_then(|d| d.path()), Some(store.as_path()));
    // A parent that does not exist: the same, with its own kind.
    let Err(e) = open(&dir.path().join("no/such/timers")) else {
        panic!("refused")
    };
    assert_eq!(io_cause(&e).kind(), std::io::ErrorKind::NotFound);
}

#[test]
// The durable feature needs a newer Rust than the crate's MSRV anyway
// (fjall's), so the newer `ErrorKind`s are fine here.
#[allow(clippy::incompatible_msrv)]
fn a_regular_file_where_the_store_should_be_is_refused_whatever_its_size() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [("empty", &b""[..]), ("short", &b"FJL"[..])] {
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let Err(e) = open(&file) else {
            panic!("a file is not a store")
        };
        assert!(matches!(e, DurableError::Corrupt(_)), "{e:?}");
        assert_eq!(io_cause(&e).kind(), std::io::ErrorKind::NotADirectory);
        let text = e.to_string();
        assert!(text.contains(&file.display().to_string()), "{text}");
        assert!(text.contains("is a file"), "{text}");
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "left as it was");
    }
}

#[test]
// The durable feature needs a newer Rust than the crate's MSRV anyway
// (fjall's), so the newer `ErrorKind`s are fine here.
#[allow(clippy::incompatible_msrv)]
fn a_foreign_directory_is_refused_and_an_empty_one_becomes_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("photos");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("cat.jpg"), b"meow").unwrap();
    let Err(e) = open(&foreign) else {
        panic!("not a store of ours")
    };
    assert!(matches!(e, DurableError::Corrupt(_)), "{e:?}");
    let text = e.to_string();
    assert!(text.contains(&foreign.display().to_string()), "{text}");
    assert!(text.contains("not a wheel store"), "{text}");
    let left: Vec<_> = std::fs::read_dir(&foreign).unwrap().collect();
    assert_eq!(left.len(), 1, "nothing was written into it");
    // A `version` file that is a directory: the read fails, naming it.
    let odd = dir.path().join("odd");
    std::fs::create_dir_all(odd.join("version")).unwrap();
    let Err(e) = open(&odd) else {
        panic!("refused")
    };
    assert_eq!(io_cause(&e).kind(), std::io::ErrorKind::IsADirectory);
    assert!(e.to_string().contains("odd/version"), "{e}");
    // An empty directory (a fresh volume) is a new store, kept on reopen.
    let empty = dir.path().join("volume");
    std::fs::create_dir(&empty).unwrap();
    let t = open(&empty).unwrap();
    t.add("k", Duration::from_secs(60), b"p").unwrap();
    t.shutdown().unwrap();
    let t = open(&empty).unwrap();
    assert_eq!(t.get("k").unwrap().unwrap().payload, b"p");
    t.shutdown().unwrap();
}

#[test]
fn a_second_open_in_this_process_says_so_until_the_first_shuts_down() {
    let dir = tempfile::tempdir().unwrap();
    let first = open(&path(&dir)).unwrap();
    // Another spelling of the same directory is the same store.
    let again = dir.path().join(".").join("timers");
    let Err(e) = open(&again) else {
        panic!("already open")
    };
    assert!(matches!(e, DurableError::Locked(_)), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("already open in this process"), "{text}");
    assert!(text.contains(&again.display().to_string()), "{text}");
    first.shutdown().unwrap();
    open(&again).unwrap().shutdown().unwrap();
}

#[test]
fn a_retried_timer_keeps_its_first_due_time_while_its_due_time_grows() {
    let dir = tempfile::tempdir().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let timers = DurableTimers::builder()
        .embedded(path(&dir))
        .retry(RetryPolicy::new().initial(ms(20)).jitter(0.0))
        .handler(move |f| {
            s.lock().unwrap().push(f.clone());
            if f.attempt < 3 {
                Outcome::Retry
            } else {
                Outcome::Done
            }
        })
        .build()
        .unwrap();
    let due = SystemTime::now() + ms(30);
    timers.add_at("flaky", due, b"").unwrap();
    eventually("three runs", || seen.lock().unwrap().len() == 3);
    let runs = seen.lock().unwrap().clone();
    // Stored in whole milliseconds, rounded up.
    let first = runs[0].first_due;
    assert!(first >= due && first < due + ms(1), "{first:?} for {due:?}");
    for f in &runs {
        assert_eq!(f.first_due, first, "run {}", f.attempt);
    }
    assert_eq!(
        runs.iter().map(|f| f.attempt).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(runs[0].due, first);
    // Each retry is due its back-off after the run before it asked.
    assert!(runs[1].due >= runs[0].due + ms(20), "{runs:?}");
    assert!(runs[2].due >= runs[1].due + ms(40), "{runs:?}");
    timers.shutdown().unwrap();
}

#[test]
fn pages_of_10_000_timers_are_stable_while_timers_come_and_go() {
    let dir = tempfile::tempdir().unwrap();
    let timers = DurableTimers::builder()
        .embedded(path(&dir))
        .build()
        .unwrap();
    durable_listing::pages_are_stable_while_timers_come_and_go(&[&timers]);
    timers.shutdown().unwrap();
}

#[test]
fn get_reports_the_first_due_time_of_a_timer_waiting_to_retry() {
    let dir = tempfile::tempdir().unwrap();
    let timers = DurableTimers::builder()
        .embedded(path(&dir))
        .retry(RetryPolicy::new().initial(Duration::from_secs(3600)))
        .handler(|_| Outcome::Retry)
        .build()
        .unwrap();
    let due = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
    timers.add_at("k", due, b"").unwrap();
    eventually("the first run's retry", || {
        timers
            .get("k")
            .unwrap()
            .is_some_and(|i| i.attempts == 1 && i.state == TimerState::Pending)
    });
    let info = timers.get("k").unwrap().unwrap();
    assert_eq!(info.first_due, due);
    assert!(info.due > SystemTime::now(), "{info:?}");
    // Rescheduling is the user's new intent: both move.
    let later = SystemTime::now() + Duration::from_secs(7200);
    assert!(timers.reset_at("k", later).unwrap());
    let info = timers.get("k").unwrap().unwrap();
    assert_eq!(info.first_due, info.due);
    timers.shutdown().unwrap();
}

#[test]
fn one_of_8_threads_adding_one_key_if_absent_wins() {
    let dir = tempfile::tempdir().unwrap();
    let timers = DurableTimers::builder()
        .embedded(path(&dir))
        .build()
        .unwrap();
    durable_listing::one_of_racing_adds_if_absent_wins(&[Arc::new(timers)]);
}

#[test]
fn dead_letters_are_listed_with_their_failure() {
    let dir = tempfile::tempdir().unwrap();
    let timers = DurableTimers::builder()
        .embedded(path(&dir))
        .handler(durable_listing::failing)
        .build()
        .unwrap();
    durable_listing::dead_letters_are_listed_with_their_failure(&timers);
    timers.shutdown().unwrap();
}
