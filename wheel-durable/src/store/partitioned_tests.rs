//! A namespace of 3 model stores against one model store: the same
//! operations give the same answers (fences aside: each part counts its
//! own), listings merge into one order with one cursor, and every timer
//! is claimed and fired once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Partitioned, fnv1a, part_of, part_of_schedule, placement};
use crate::store::model::Model;
use crate::store::{
    ClaimRequest, Due, Fenced, Finish, Limits, Millis, NewTimer, Start, Store, StoreClock,
};
use crate::{AddMode, DurableError, Listing};

const T0: Millis = 1_700_000_000_000;

fn pair() -> (Arc<AtomicU64>, Model, Partitioned<Model>) {
    let ms = Arc::new(AtomicU64::new(T0));
    let clock = StoreClock::Manual(ms.clone());
    let parts = (0..3).map(|_| Model::new(clock.clone())).collect();
    (ms, Model::new(clock.clone()), Partitioned::new(parts))
}

fn keys() -> Vec<String> {
    (0..60).map(|i| format!("k{i}")).collect()
}

/// Every page of `which`, `page` at a time, from the cursor of the last.
fn listing(s: &dyn Store, which: Listing, page: usize) -> Vec<(Millis, String)> {
    let mut all: Vec<(Millis, String)> = Vec::new();
    loop {
        let after = all.last().map(|(m, k)| (*m, k.as_str()));
        let got = s.list(which, after, page).unwrap();
        let n = got.len();
        all.extend(got.into_iter().map(|l| (l.score, l.info.key)));
        if n < page {
            return all;
        }
    }
}

#[test]
fn the_hash_is_fixed_fnv1a() {
    // FNV-1a's published test vectors: a change here moves every timer.
    assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    assert_eq!(part_of("anything", 1), 0);
    assert_eq!(part_of("k", 0), 0, "no parts means one");
}

#[test]
fn a_schedules_runs_live_with_the_schedule() {
    assert_eq!(placement("sched:reports:1800000000000"), "reports");
    assert_eq!(placement("sched-trigger:reports:17"), "reports");
    assert_eq!(placement("sched:a:b:1"), "a:b");
    assert_eq!(placement("order:17"), "order:17");
    assert_eq!(placement("sched:x"), "sched:x", "not a run key");
    for n in [2, 3, 7, 64] {
        assert_eq!(
            part_of("sched:reports:5", n),
            part_of_schedule("reports", n)
        );
        // An id that looks like a run key is placed as it is, as its runs
        // are placed by it.
        let id = "sched:a:1";
        assert_eq!(
            part_of(&format!("sched:{id}:5"), n),
            part_of_schedule(id, n)
        );
    }
    assert_ne!(
        (0..64)
            .map(|n| part_of_schedule("sched:a:1", n + 1))
            .collect::<Vec<_>>(),
        (0..64)
            .map(|n| part_of_schedule("a", n + 1))
            .collect::<Vec<_>>(),
        "the id is not read as a run key"
    );
}

#[test]
fn keys_spread_over_the_parts() {
    let mut per = [0usize; 3];
    for k in keys() {
        per[part_of(&k, 3)] += 1;
    }
    assert!(per.iter().all(|&n| n >= 10), "{per:?}");
}

#[test]
fn answers_and_listings_match_one_store() {
    let (ms, one, split) = pair();
    let keys = keys();
    let mut rng = fastrand::Rng::with_seed(7);
    for round in 0..40u64 {
        let batch: Vec<NewTimer<'_>> = (0..rng.usize(1..12))
            .map(|_| NewTimer {
                key: &keys[rng.usize(..keys.len())],
                due: Due::At(T0 + rng.u64(0..5_000)),
                payload: b"p",
            })
            .collect();
        let mode = if round % 2 == 0 {
            AddMode::Replace
        } else {
            AddMode::IfAbsent
        };
        let k = &keys[rng.usize(..keys.len())];
        let due = Due::After(rng.u64(0..3_000));
        assert_eq!(
            one.add(&batch, mode).unwrap(),
            split.add(&batch, mode).unwrap()
        );
        assert_eq!(one.cancel(k).unwrap(), split.cancel(k).unwrap());
        assert_eq!(
            one.reschedule(k, due).unwrap(),
            split.reschedule(k, due).unwrap()
        );
        assert_eq!(one.get(k).unwrap(), split.get(k).unwrap());
        ms.fetch_add(rng.u64(0..50), Ordering::SeqCst);
    }
    for page in [1, 4, 50, 1000] {
        assert_eq!(
            listing(&one, Listing::Pending, page),
            listing(&split, Listing::Pending, page)
        );
    }
    let (a, b) = (one.counts().unwrap(), split.counts().unwrap());
    assert_eq!((a.pending, a.next_due), (b.pending, b.next_due));
}

/// Claims, starts and finishes until nothing is left: every timer once.
fn fire_all(s: &dyn Store, ms: &AtomicU64, max: usize) -> Vec<String> {
    let mut fired = Vec::new();
    let req = ClaimRequest {
        window: 0,
        lease: 60_000,
        max,
        max_attempts: 5,
    };
    for _ in 0..1_000 {
        let batch = s.claim(&req).unwrap();
        assert!(batch.timers.len() <= max);
        if batch.timers.is_empty() {
            if s.counts().unwrap().pending == 0 {
                return fired;
            }
            ms.fetch_add(100, Ordering::SeqCst);
            continue;
        }
        // Earliest due first across the parts, ties by key.
        let order: Vec<_> = batch.timers.iter().map(|c| (c.due, &c.key)).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]));
        let held: Vec<Fenced<'_>> = batch.timers.iter().map(|c| c.fenced()).collect();
        let starts = s.start_runs(&held, &[], &[], 60_000).unwrap();
        assert!(starts.iter().all(|a| matches!(a, Start::Started { .. })));
        let runs: Vec<_> = held.iter().map(|f| (*f, Finish::Done)).collect();
        assert!(s.finish(&runs, &[]).unwrap().iter().all(|&ok| ok));
        fired.extend(batch.timers.into_iter().map(|c| c.key));
    }
    panic!("timers left after 1 000 claims");
}

#[test]
fn every_timer_fires_once_across_the_parts() {
    let (ms, one, split) = pair();
    let keys = keys();
    let timers: Vec<NewTimer<'_>> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| NewTimer {
            key: k,
            due: Due::At(T0 + (i as u64 % 7) * 100),
            payload: b"",
        })
        .collect();
    for s in [&one as &dyn Store, &split] {
        s.add(&timers, AddMode::Replace).unwrap();
    }
    for max in [5, 1] {
        let start = ms.load(Ordering::SeqCst);
        let mut a = fire_all(&split, &ms, max);
        ms.store(start, Ordering::SeqCst);
        let mut b = fire_all(&one, &ms, max);
        a.sort();
        b.sort();
        assert_eq!(a, b);
        assert_eq!(a.len(), keys.len());
        a.dedup();
        assert_eq!(a.len(), keys.len(), "a timer fired twice");
        for s in [&one as &dyn Store, &split] {
            s.add(&timers, AddMode::Replace).unwrap();
        }
    }
}

/// Each of `keys` due at `T0`, without a payload.
fn due_at_t0(keys: &[String]) -> Vec<NewTimer<'_>> {
    keys.iter()
        .map(|k| NewTimer {
            key: k,
            due: Due::At(T0),
            payload: b"",
        })
        .collect()
}

#[test]
fn a_batch_fills_from_a_busy_part() {
    let (ms, _, split) = pair();
    // Every timer in one part: the others have nothing to give.
    let keys: Vec<String> = keys().into_iter().filter(|k| part_of(k, 3) == 1).collect();
    split.add(&due_at_t0(&keys), AddMode::Replace).unwrap();
    ms.store(T0 + 1, Ordering::SeqCst);
    let req = ClaimRequest {
        window: 0,
        lease: 1_000,
        max: 9,
        max_attempts: 1,
    };
    // Full batches, whichever part each claim starts at, until it is dry.
    let mut left = keys.len();
    while left > 0 {
        let got = split.claim(&req).unwrap().timers.len();
        assert_eq!(got, left.min(9));
        left -= got;
    }
}

#[test]
fn busy_parts_take_turns_a_whole_batch_each() {
    let (ms, _, split) = pair();
    let keys = keys();
    split.add(&due_at_t0(&keys), AddMode::Replace).unwrap();
    ms.store(T0 + 1, Ordering::SeqCst);
    let req = ClaimRequest {
        window: 0,
        lease: 1_000,
        max: 5,
        max_attempts: 1,
    };
    let mut firsts = Vec::new();
    for _ in 0..3 {
        let batch = split.claim(&req).unwrap();
        let parts: std::collections::HashSet<usize> =
            batch.timers.iter().map(|c| part_of(&c.key, 3)).collect();
        assert_eq!(parts.len(), 1, "one part per full batch");
        firsts.extend(parts);
    }
    firsts.sort_unstable();
    assert_eq!(firsts, [0, 1, 2], "each part first in turn");
}

#[test]
fn dead_letters_merge_by_failure_time() {
    let (ms, one, split) = pair();
    let keys = keys();
    for (i, k) in keys.iter().take(12).enumerate() {
        for s in [&one as &dyn Store, &split] {
            let t = NewTimer {
                key: k,
                due: Due::At(T0),
                payload: b"",
            };
            s.add(&[t], AddMode::Replace).unwrap();
            let req = ClaimRequest {
                window: 0,
                lease: 1_000,
                max: 1,
                max_attempts: 1,
            };
            let c = s.claim(&req).unwrap().timers.remove(0);
            s.start_runs(&[c.fenced()], &[], &[], 1_000).unwrap();
            let reason = format!("r{i}");
            let runs = [(c.fenced(), Finish::Dead { reason })];
            assert_eq!(s.finish(&runs, &[]).unwrap(), [true]);
        }
        ms.fetch_add(10, Ordering::SeqCst);
    }
    let names = |s: &dyn Store, n| {
        s.dead_letters(n)
            .unwrap()
            .into_iter()
            .map(|d| d.key)
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&one, 5), names(&split, 5));
    assert_eq!(names(&one, 100), names(&split, 100));
    assert_eq!(
        listing(&one, Listing::Dead, 3),
        listing(&split, Listing::Dead, 3)
    );
}

#[test]
fn pauses_reach_every_part_and_limits_are_refused() {
    let (_, _, split) = pair();
    assert!(split.set_paused(None, true).unwrap());
    assert!(split.flows().unwrap().paused);
    assert!(!split.set_paused(None, true).unwrap(), "already paused");
    assert!(split.set_paused(Some("acme"), true).unwrap());
    let flows = split.flows().unwrap();
    assert_eq!(flows.keys.len(), 1, "one key, merged");
    let limits = Limits::default();
    let refused = split.set_limits(Some("acme"), Some(&limits));
    assert!(matches!(refused, Err(DurableError::Config(_))));
    split.set_limits(Some("acme"), None).unwrap();
}
