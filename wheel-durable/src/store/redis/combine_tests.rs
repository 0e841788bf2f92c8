//! Tests of combined single calls (`combine.rs`, `round.rs`): concurrent
//! adds, cancels and reschedules of overlapping keys answer as some
//! sequential order of them would, and a script error for one request of
//! a round fails only that request.
//!
//! Node state: none.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::combine::Rounds;
use super::round::Single;
use super::{Mode, Options, Part, RedisStore, Servers};
use crate::store::{Due, NewTimer, Store, StoreClock};
use crate::sync::lock;
use crate::{AddMode, DurableError};
use wheel_testkit::{RedisServer, ServerOptions};

fn open_options(server: &RedisServer) -> Options {
    Options {
        servers: Servers::One(server.url()),
        part: Part::WHOLE,
        namespace: "comb".into(),
        clock: StoreClock::Real,
        window: 10,
        unavailable_after: Duration::from_secs(2),
        replicas: None,
    }
}

fn open(server: &RedisServer) -> RedisStore {
    RedisStore::open(open_options(server)).expect("open the Redis store")
}

/// A call as the history records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    /// An add of this payload id, `true` if only absent.
    Add(u32, bool),
    Cancel,
    Reschedule,
    /// The final read: the payload id found, if any.
    Read(Option<u32>),
}

/// One call of the history: when it began and ended (ticks of one shared
/// counter), what it was and what it answered.
#[derive(Debug, Clone, Copy)]
struct Op {
    start: u64,
    end: u64,
    call: Call,
    answer: bool,
}

/// The state after `call` from `state` (a key's payload id, if a timer is
/// there), or `None` if a sequential store could not have answered
/// `answer`.
fn step(state: Option<u32>, call: Call, answer: bool) -> Option<Option<u32>> {
    let (ok, next) = match call {
        Call::Add(id, false) => (answer, Some(id)),
        Call::Add(id, true) => match state {
            Some(_) => (!answer, state),
            None => (answer, Some(id)),
        },
        Call::Cancel => (answer == state.is_some(), None),
        Call::Reschedule => (answer == state.is_some(), state),
        Call::Read(found) => (found == state, state),
    };
    ok.then_some(next)
}

/// Whether some order of `ops` that keeps every call after those that
/// ended before it began explains every answer (Wing and Gong's search,
/// remembering the configurations that failed).
fn linearizable(ops: &[Op]) -> bool {
    fn search(
        ops: &[Op],
        done: &mut Vec<bool>,
        left: usize,
        state: Option<u32>,
        failed: &mut HashSet<(Vec<bool>, Option<u32>)>,
    ) -> bool {
        if left == 0 {
            return true;
        }
        if failed.contains(&(done.clone(), state)) {
            return false;
        }
        let first_end = (0..ops.len())
            .filter(|&i| !done[i])
            .map(|i| ops[i].end)
            .min()
            .unwrap_or(u64::MAX);
        for i in 0..ops.len() {
            if done[i] || ops[i].start > first_end {
                continue;
            }
            if let Some(next) = step(state, ops[i].call, ops[i].answer) {
                done[i] = true;
                if search(ops, done, left - 1, next, failed) {
                    return true;
                }
                done[i] = false;
            }
        }
        failed.insert((done.clone(), state));
        false
    }
    let mut done = vec![false; ops.len()];
    search(ops, &mut done, ops.len(), None, &mut HashSet::new())
}

#[test]
fn the_checker_refuses_an_impossible_history() {
    let op = |start, end, call, answer| Op {
        start,
        end,
        call,
        answer,
    };
    // Two sequential cancels of one added timer cannot both remove it.
    let bad = [
        op(0, 1, Call::Add(1, false), true),
        op(2, 3, Call::Cancel, true),
        op(4, 5, Call::Cancel, true),
    ];
    assert!(!linearizable(&bad));
    // Concurrent, an if-absent add may land before or after the cancel.
    let good = [
        op(0, 1, Call::Add(1, false), true),
        op(2, 5, Call::Cancel, true),
        op(3, 4, Call::Add(2, true), false),
        op(6, 7, Call::Read(None), true),
    ];
    assert!(linearizable(&good));
}

const KEYS: usize = 6;
const THREADS: u64 = 16;
const CALLS: u64 = 120;

/// 16 threads add, cancel and reschedule 6 keys at once; each key's
/// answers and final timer fit one sequential order of its calls.
#[test]
fn concurrent_calls_on_overlapping_keys_answer_as_a_sequential_history() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let store = open(&server);
    let tick = AtomicU64::new(0);
    let history: Vec<Mutex<Vec<Op>>> = (0..KEYS).map(|_| Mutex::new(Vec::new())).collect();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (store, tick, history) = (&store, &tick, &history);
            s.spawn(move || {
                let mut rng = t.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for n in 0..CALLS {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let k = usize::try_from(rng % KEYS as u64).unwrap();
                    let key = format!("k{k}");
                    let id = u32::try_from(t * 1000 + n).unwrap();
                    let start = tick.fetch_add(1, Ordering::SeqCst);
                    let (call, answer) = match (rng >> 8) % 4 {
                        0 | 1 => {
                            let only_absent = (rng >> 16) % 2 == 0;
                            let mode = if only_absent {
                                AddMode::IfAbsent
                            } else {
                                AddMode::Replace
                            };
                            let payload = id.to_le_bytes();
                            let timer = NewTimer {
                                key: &key,
                                due: Due::After(3_600_000),
                                payload: &payload,
                            };
                            let flags = store.add(&[timer], mode).unwrap();
                            (Call::Add(id, only_absent), flags == [true])
                        }
                        2 => (Call::Cancel, store.cancel(&key).unwrap()),
                        _ => {
                            let due = Due::After(3_600_000 + rng % 1000);
                            (Call::Reschedule, store.reschedule(&key, due).unwrap())
                        }
                    };
                    let end = tick.fetch_add(1, Ordering::SeqCst);
                    lock(&history[k]).push(Op {
                        start,
                        end,
                        call,
                        answer,
                    });
                }
            });
        }
    });
    for (k, h) in history.iter().enumerate() {
        let mut ops = lock(h).clone();
        let found = store.get(&format!("k{k}")).unwrap().map(|info| {
            let bytes: [u8; 4] = info.payload.as_slice().try_into().expect("a 4-byte id");
            u32::from_le_bytes(bytes)
        });
        let at = tick.fetch_add(2, Ordering::SeqCst);
        ops.push(Op {
            start: at,
            end: at + 1,
            call: Call::Read(found),
            answer: true,
        });
        assert!(
            linearizable(&ops),
            "key k{k}: no sequential order explains {ops:?}"
        );
    }
}

/// A round whose add for several callers fails on one bad record answers
/// the others, each as if alone, and fails only the caller of that key.
#[test]
fn a_script_error_for_one_request_fails_only_that_request() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let store = open(&server);
    // A record too short to decode: reading it stops the script.
    store
        .with_conn(|c| {
            redis::cmd("HSET")
                .arg("{comb}:t")
                .arg("bad")
                .arg("x")
                .query::<i64>(c)
        })
        .unwrap();
    let add = |key: &str| {
        let t = NewTimer {
            key,
            due: Due::After(60_000),
            payload: b"p",
        };
        Single::add(&[t], AddMode::IfAbsent)
    };
    let answers = store.round(vec![
        add("a"),
        add("bad"),
        add("b"),
        Single::Cancel("a".into()),
        Single::Reschedule("missing".into(), Due::After(1)),
    ]);
    assert!(
        matches!(answers[0], Ok(ref f) if f == &[true]),
        "{answers:?}"
    );
    assert!(
        matches!(answers[1], Err(DurableError::Store(_))),
        "{answers:?}"
    );
    assert!(
        matches!(answers[2], Ok(ref f) if f == &[true]),
        "{answers:?}"
    );
    // The cancel ran in its own script call of the round, after or before
    // the add: either answer is a sequential one, and the record agrees.
    let cancelled = matches!(answers[3], Ok(ref f) if f == &[true]);
    assert_eq!(store.get("a").unwrap().is_some(), !cancelled);
    assert!(
        matches!(answers[4], Ok(ref f) if f == &[false]),
        "{answers:?}"
    );
    assert!(store.get("b").unwrap().is_some());
}

/// A server that lost the code (`FUNCTION FLUSH`, `SCRIPT FLUSH`) answers
/// a round of all four kinds after one reload: every group is sent again
/// and answered, in either call mode.
#[test]
fn a_round_reloads_lost_code_and_answers_every_group() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let mut c = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    for mode in [Mode::Functions, Mode::Scripts] {
        let options = Options {
            namespace: format!("{mode:?}"),
            ..open_options(&server)
        };
        let store = match mode {
            Mode::Functions => RedisStore::open(options),
            Mode::Scripts => RedisStore::open_scripts(options),
        }
        .unwrap();
        assert_eq!(store.mode(), mode);
        let add = |key: &str, how| {
            let t = NewTimer {
                key,
                due: Due::After(60_000),
                payload: b"p",
            };
            Single::add(&[t], how)
        };
        assert!(matches!(&store.round(vec![add("c", AddMode::Replace)])[0], Ok(f) if f == &[true]));
        let what = match mode {
            Mode::Functions => "FUNCTION",
            Mode::Scripts => "SCRIPT",
        };
        redis::cmd(what).arg("FLUSH").exec(&mut c).unwrap();
        let answers = store.round(vec![
            add("a", AddMode::Replace),
            add("b", AddMode::IfAbsent),
            Single::Cancel("c".into()),
            Single::Reschedule("a".into(), Due::After(1_000)),
        ]);
        let flags: Vec<Vec<bool>> = answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|e| panic!("{mode:?}: {e}")))
            .collect();
        // The reschedule may land before or after the add of "a" (separate
        // calls of one round): either answer is a sequential one.
        assert_eq!(&flags[..3], [[true], [true], [true]], "{mode:?}");
        assert_eq!(flags[3].len(), 1, "{mode:?}");
        assert!(store.get("a").unwrap().is_some());
        assert!(store.get("b").unwrap().is_some());
        assert!(store.get("c").unwrap().is_none());
    }
}
