//! The embedded store's own tests: opening, claims past fired timers,
//! wake-ups.

use super::*;
use crate::store::Claimed;

/// Adds one timer per key, the i-th due at `due(i)`, with no payload.
fn add_each(store: &Embedded, keys: &[String], due: impl Fn(usize) -> Millis) {
    let timers: Vec<NewTimer<'_>> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| NewTimer {
            key,
            due: Due::At(due(i)),
            payload: b"",
        })
        .collect();
    store.add(&timers, AddMode::Replace).unwrap();
}

/// A claim of what is due now, up to `max` timers.
fn claim_up_to(max: usize) -> ClaimRequest {
    ClaimRequest {
        window: 0,
        lease: 60_000,
        max,
        max_attempts: 3,
    }
}

fn open(path: &Path) -> StoreResult<Embedded> {
    Embedded::open(path, StoreClock::Real, 1_000)
}

#[test]
fn a_second_open_in_the_same_process_is_locked_until_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let first = open(&path).unwrap();
    assert!(matches!(open(&path), Err(DurableError::Locked(_))));
    first.close().unwrap();
    open(&path).unwrap().close().unwrap();
}

#[test]
fn another_program_s_fjall_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("theirs");
    let db = Database::builder(&path).open().unwrap();
    db.keyspace("photos", fjall::KeyspaceCreateOptions::default)
        .unwrap();
    drop(db);
    let Err(e) = open(&path) else {
        panic!("not ours")
    };
    assert!(matches!(e, DurableError::Corrupt(_)), "{e:?}");
    assert!(e.to_string().contains("not a wheel store"), "{e}");
    let db = Database::builder(&path).open().unwrap();
    assert!(
        !db.keyspace_exists(spaces::NAMES[0]),
        "nothing of ours added"
    );
    // A fresh fjall database with no keyspace yet is taken.
    let fresh = dir.path().join("fresh");
    drop(Database::builder(&fresh).open().unwrap());
    open(&fresh).unwrap().close().unwrap();
}

#[test]
fn claims_resume_after_fired_timers_and_still_see_earlier_adds() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("store")).unwrap();
    let keys: Vec<String> = (0..50).map(|i| format!("k{i:02}")).collect();
    add_each(&store, &keys, |i| 1_000 + i as u64);
    let req = claim_up_to(10);
    let mut claimed = Vec::new();
    for _ in 0..3 {
        let batch = store.claim(&req).unwrap();
        let held: Vec<Fenced<'_>> = batch.timers.iter().map(Claimed::fenced).collect();
        let started = store.start(&held, 60_000).unwrap();
        assert!(
            started
                .iter()
                .all(|s| matches!(s, Start::Started { attempt: 1, .. }))
        );
        let done: Vec<(Fenced<'_>, Finish)> = held.iter().map(|h| (*h, Finish::Done)).collect();
        assert!(store.finish(&done).unwrap().iter().all(|d| *d));
        claimed.extend(batch.timers.iter().map(|c| c.key.clone()));
    }
    assert_eq!(claimed, keys[..30]);
    // Due before everything fired so far: the claim still finds it.
    store
        .add(
            &[NewTimer {
                key: "early",
                due: Due::At(5),
                payload: b"",
            }],
            AddMode::Replace,
        )
        .unwrap();
    let batch = store.claim(&req).unwrap();
    let got: Vec<&str> = batch.timers.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(got[0], "early");
    assert_eq!(
        got[1..],
        keys[30..39].iter().map(String::as_str).collect::<Vec<_>>()[..]
    );
    assert_eq!(batch.next_due, Some(1_039));
    let counts = store.counts().unwrap();
    assert_eq!((counts.pending, counts.claimed), (11, 10));
    store.close().unwrap();
}

/// Many timers due at the same millisecond: each claim goes on after
/// the last one claimed (the scans start at an index key, not a time),
/// and a timer added later with a key before them is still found.
#[test]
fn claims_of_timers_sharing_a_due_time_resume_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("store")).unwrap();
    let keys: Vec<String> = (0..300).map(|i| format!("k{i:03}")).collect();
    add_each(&store, &keys, |_| 1_000);
    let req = claim_up_to(64);
    let mut claimed: Vec<String> = Vec::new();
    for round in 0..5 {
        if round == 2 {
            let early = NewTimer {
                key: "a",
                due: Due::At(1_000),
                payload: b"",
            };
            store.add(&[early], AddMode::Replace).unwrap();
        }
        let batch = store.claim(&req).unwrap();
        claimed.extend(batch.timers.iter().map(|c| c.key.clone()));
    }
    let mut want: Vec<String> = keys[..128].to_vec();
    want.push("a".into());
    want.extend(keys[128..].iter().cloned());
    assert_eq!(claimed, want[..claimed.len()]);
    assert_eq!(claimed.len(), 301);
}

/// Only a timer actually added wakes the watchers: an add if absent
/// that finds the key taken announces nothing.
#[test]
fn an_add_kept_out_by_an_existing_timer_wakes_nobody() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("store")).unwrap();
    let woken = Arc::new(AtomicUsize::new(0));
    let w = woken.clone();
    store
        .watch(Arc::new(move |_| {
            w.fetch_add(1, Ordering::SeqCst);
        }))
        .unwrap();
    let t = |payload: &'static [u8]| NewTimer {
        key: "k",
        due: Due::After(0),
        payload,
    };
    // The writer wakes the watchers of a group before it runs the next
    // one, so a later call's answer means the earlier wakes happened.
    let added = |mode, payload| {
        let a = store.add(&[t(payload)], mode).unwrap();
        store.counts().unwrap();
        (a, woken.load(Ordering::SeqCst))
    };
    assert_eq!(added(AddMode::IfAbsent, b"1"), (vec![true], 1));
    assert_eq!(added(AddMode::IfAbsent, b"2"), (vec![false], 1));
    assert_eq!(added(AddMode::Replace, b"3"), (vec![true], 2));
    assert_eq!(store.get("k").unwrap().unwrap().payload, b"3");
}
