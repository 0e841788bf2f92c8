//! Listing and add-if-absent checks shared by the embedded and the Redis
//! tests: each store's test file opens its clients and calls these.
#![allow(dead_code)] // each test file uses a different subset

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime};

use wheel_durable::{AddOrGet, Cursor, DurableTimers, Listing, Outcome, TimerState};

/// Timers added before the first page.
const TIMERS: usize = 10_000;

/// Of them, how many share one due time.
const SHARED: usize = 4_000;

const PAGE: usize = 250;

/// The i-th original timer's key and due time: the first `SHARED` all due
/// at `base`, the rest spread after it, 7 per millisecond, so that many
/// pages start and end inside a run of equal due times.
fn original(i: usize, base: SystemTime) -> (String, SystemTime) {
    let due = if i < SHARED {
        base
    } else {
        base + Duration::from_millis(1 + (i / 7) as u64)
    };
    (format!("t{:05}", (i * 7_919) % TIMERS), due)
}

/// Adds `TIMERS` timers in one `add_many` (ten times the chunk bound),
/// then pages through the pending ones `PAGE` at a time. Between pages it
/// adds timers before, among and after the ones still to come, and cancels
/// a few originals still to come and a few already seen. Each page is read
/// through a cursor that went through its text form, alternately by each
/// of `clients` (all on one store). Asserts: the listing's order is
/// strictly increasing in (due, key); no key comes twice; every original
/// not cancelled comes exactly once; no cancelled key comes after its
/// cancel.
pub fn pages_are_stable_while_timers_come_and_go(clients: &[&DurableTimers]) {
    let base = SystemTime::now() + Duration::from_secs(3_600);
    let originals: Vec<(String, SystemTime)> = (0..TIMERS).map(|i| original(i, base)).collect();
    let batch: Vec<(&str, SystemTime, &[u8])> = originals
        .iter()
        .map(|(k, due)| (k.as_str(), *due, b"o".as_slice()))
        .collect();
    clients[0].add_many(&batch).unwrap();
    // The counts are unknown until the first read of them finishes: wait
    // for it (each call waits up to 25 ms), then the count is exact.
    let pending = (0..2_000).find_map(|_| clients[0].stats().pending);
    assert_eq!(pending, Some(TIMERS as u64));

    let mut seen: HashSet<String> = HashSet::new();
    let mut cancelled: HashSet<String> = HashSet::new();
    let mut last: Option<(SystemTime, String)> = None;
    let mut page = clients[0].list(Listing::Pending, PAGE).unwrap();
    for round in 0.. {
        assert!(page.timers.len() <= PAGE);
        for t in &page.timers {
            assert_eq!(t.state, TimerState::Pending);
            assert!(
                !cancelled.contains(&t.key),
                "{} listed after its cancel",
                t.key
            );
            let pos = (t.due, t.key.clone());
            assert!(last.as_ref() < Some(&pos), "{pos:?} out of order");
            last = Some(pos);
            assert!(seen.insert(t.key.clone()), "{} listed twice", t.key);
        }
        let Some(next) = page.next else { break };
        let client = clients[round % clients.len()];
        change_between_pages(client, round, &originals, &mut cancelled);
        let token = next.to_string();
        let cursor: Cursor = token.parse().unwrap();
        assert_eq!(cursor, next);
        page = client.list_after(&cursor, PAGE).unwrap();
    }
    for (key, _) in &originals {
        if !cancelled.contains(key) {
            assert!(
                seen.contains(key),
                "{key} existed throughout and was skipped"
            );
        }
    }
    assert!(seen.len() >= TIMERS - cancelled.len());
}

/// Adds 12 timers (due before all, inside the shared due time, among the
/// spread ones, after all) and cancels 3 originals spread over the list.
fn change_between_pages(
    client: &DurableTimers,
    round: usize,
    originals: &[(String, SystemTime)],
    cancelled: &mut HashSet<String>,
) {
    let base = originals[0].1;
    for j in 0..12u64 {
        let due = match j % 4 {
            0 => base - Duration::from_secs(1),
            1 => base,
            2 => base + Duration::from_millis(j * 97 + round as u64),
            _ => base + Duration::from_secs(3_600),
        };
        // Among the originals' keys, not one of them.
        let near = (round * 37 + j as usize * 1_009) % TIMERS;
        let key = format!("t{near:05}-n{round}-{j}");
        assert!(client.add_at_or_get(&key, due, b"n").unwrap().is_added());
    }
    for j in 0..3 {
        let (key, _) = &originals[(round * 211 + j * 3_331) % originals.len()];
        if cancelled.insert(key.clone()) {
            assert!(client.cancel(key).unwrap());
        }
    }
}

/// Eight threads, each on its own client (or the same one), add one key
/// if absent at the same moment, with different payloads, 20 times over:
/// exactly one adds each time, and the stored payload is the winner's.
pub fn one_of_racing_adds_if_absent_wins(clients: &[Arc<DurableTimers>]) {
    const THREADS: usize = 8;
    let due = SystemTime::now() + Duration::from_secs(3_600);
    for round in 0..20 {
        let key = format!("race:{round}");
        let barrier = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|i| {
                let client = clients[i % clients.len()].clone();
                let (key, barrier) = (key.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let payload = format!("thread {i}");
                    barrier.wait();
                    client
                        .add_at_or_get(&key, due, payload.as_bytes())
                        .unwrap()
                        .is_added()
                })
            })
            .collect();
        let won: Vec<usize> = threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .enumerate()
            .filter_map(|(i, added)| added.then_some(i))
            .collect();
        assert_eq!(won.len(), 1, "round {round}: {won:?} added");
        let stored = clients[0].get(&key).unwrap().unwrap();
        assert_eq!(stored.payload, format!("thread {}", won[0]).as_bytes());
    }
}

/// The handler of a node for [`dead_letters_are_listed_with_their_failure`].
pub fn failing(f: &wheel_durable::Fired) -> Outcome {
    Outcome::Fail(format!("no such order: {}", f.key))
}

/// `timers` fires with [`failing`]: its timers become dead letters, which
/// the dead listing pages through by failure time with their reason, and
/// which an add if absent leaves alone.
pub fn dead_letters_are_listed_with_their_failure(timers: &DurableTimers) {
    let at = SystemTime::now();
    let keys = ["d1", "d2", "d3", "d4", "d5"];
    for key in keys {
        timers.add_at(key, at, b"x").unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while timers.stats().dead < Some(keys.len() as u64) {
        assert!(std::time::Instant::now() < deadline, "timers did not fail");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut listed = Vec::new();
    let mut page = timers.list(Listing::Dead, 2).unwrap();
    loop {
        listed.extend(page.timers);
        match page.next {
            Some(next) => page = timers.list_after(&next, 2).unwrap(),
            None => break,
        }
    }
    let mut got: Vec<&str> = listed.iter().map(|t| t.key.as_str()).collect();
    got.sort_unstable();
    assert_eq!(got, keys);
    let order: Vec<(SystemTime, &str)> = listed
        .iter()
        .map(|t| {
            (
                t.failed_at.expect("a dead letter's failure time"),
                t.key.as_str(),
            )
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    for t in &listed {
        assert_eq!(t.state, TimerState::Dead);
        assert_eq!(
            t.reason.as_deref(),
            Some(format!("no such order: {}", t.key).as_str())
        );
        assert!(t.failed_at.unwrap() >= t.due);
    }
    let again = [
        ("d1", at, b"y".as_slice()),
        ("d6", at + Duration::from_secs(60), b"y".as_slice()),
    ];
    assert_eq!(
        timers
            .add_many_or_get(&again)
            .unwrap()
            .iter()
            .map(AddOrGet::is_added)
            .collect::<Vec<_>>(),
        [false, true]
    );
    let d1 = timers.get("d1").unwrap().unwrap();
    assert_eq!(
        (d1.state, d1.payload.as_slice()),
        (TimerState::Dead, b"x".as_slice())
    );
    assert_eq!(d1.reason.as_deref(), Some("no such order: d1"));
    assert!(timers.list(Listing::Claimed, 10).unwrap().timers.is_empty());
}
