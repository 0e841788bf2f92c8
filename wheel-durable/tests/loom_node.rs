//! loom model of the node's start hand-off (`src/node/starts.rs`): the
//! threads that offer claims at their instant, the one start pass that
//! takes them (at most `START_CALLS` at once), and the pass a handler
//! schedules when it frees room.
//!
//! The model compiles the node's own `starts.rs`, `queue.rs` and `sync.rs`
//! (which name nothing else), so under `cfg(loom)` it checks the real
//! protocol on loom's atomics, mutexes and condition variables, without
//! widening the crate's API. Around them it drives `Starts` as
//! `src/node/starter.rs` does: an offer leaves the claim and runs a pass
//! (`offer`), a pass starts what the handlers' queue has room for
//! (`drain`), and whoever takes a run for a handler asks for a pass on
//! another thread (`resume`; the scheduler worker is a model thread).
//!
//! What every model checks, in every interleaving: no claim starts twice;
//! no two start calls run at once; and nothing is stranded: once every
//! thread is done, a claim still waiting has no room to start.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" cargo test --release -p wheel-durable --test loom_node`
// The node's files carry more than the model uses (timed waits, the
// handlers' blocking takes).
#![allow(dead_code, unused_imports)]

#[path = "../src/node/queue.rs"]
mod queue;
#[path = "../src/node/starts.rs"]
mod starts;
#[path = "../src/sync.rs"]
mod sync;

use wheel_testkit::model::sync::atomic::{AtomicUsize, Ordering};
use wheel_testkit::model::sync::{Arc, Mutex};
use wheel_testkit::model::thread::{self, JoinHandle};

use queue::Queue;
use starts::{START_CALLS, Starts};

/// Preemption bound: with 3 the four models take about 4 s in release; 4
/// takes about 50 s and has found nothing more.
const PREEMPTIONS: usize = 3;

/// Runs a model with this file's bound (see `wheel_testkit::model`:
/// loom under `--cfg loom`, a std-thread stress test otherwise).
fn check(f: impl Fn() + Sync + Send + 'static) {
    wheel_testkit::model::check(PREEMPTIONS, f);
}

/// One node's start hand-off as the starter drives it.
struct Node {
    starts: Starts<u32>,
    /// Started runs waiting for a handler (the node's `Runs`).
    runs: Queue<u32>,
    /// How many runs may wait for a handler (the node's `RUN_AHEAD`).
    cap: usize,
    /// Start calls running now.
    calls: AtomicUsize,
    /// Every claim started, in order.
    started: Mutex<Vec<u32>>,
}

impl Node {
    /// A node whose handlers' queue holds `cap` runs, `waiting` of them
    /// already there.
    fn new(cap: usize, waiting: &[u32]) -> Arc<Node> {
        let runs = Queue::new();
        for &r in waiting {
            runs.push(r).unwrap();
        }
        Arc::new(Node {
            starts: Starts::new(),
            runs,
            cap,
            calls: AtomicUsize::new(0),
            started: Mutex::new(Vec::new()),
        })
    }

    fn room(&self) -> usize {
        self.cap.saturating_sub(self.runs.len())
    }

    /// `starter::drain`: the start call is the closure.
    fn drain(&self) {
        self.starts.pass(
            || self.room(),
            |batch| {
                let calls = self.calls.fetch_add(1, Ordering::SeqCst);
                assert!(calls < START_CALLS, "two start calls at once");
                for c in batch {
                    self.started.lock().unwrap().push(c);
                    self.runs.push(c).unwrap();
                }
                self.calls.fetch_sub(1, Ordering::SeqCst);
            },
        );
    }

    /// `starter::offer`, on a scheduler worker at the claim's instant.
    fn offer(&self, c: u32) {
        self.starts.offer(c).unwrap();
        self.drain();
    }

    /// The checks every model ends with, once every thread is done.
    fn assert_settled(&self, offered: &[u32]) {
        let mut started = self.started.lock().unwrap().clone();
        started.sort_unstable();
        let mut unique = started.clone();
        unique.dedup();
        assert_eq!(started, unique, "a claim started twice");
        assert!(started.iter().all(|c| offered.contains(c)));
        let waiting = self.starts.len();
        assert_eq!(started.len() + waiting, offered.len(), "a claim lost");
        assert!(
            waiting == 0 || self.room() == 0,
            "{waiting} claims stranded with room for {}",
            self.room()
        );
    }
}

/// A handler takes a run, then `starter::resume`: the pass it schedules
/// runs on a thread of its own, returned to be joined.
fn take_and_resume(node: &Arc<Node>) -> Option<JoinHandle<()>> {
    node.runs.try_take_up_to(1);
    if !node.starts.resume_wanted(|| node.room() >= node.cap / 2) {
        return None;
    }
    let node = node.clone();
    Some(thread::spawn(move || {
        node.starts.resumed();
        node.drain();
    }))
}

fn join(handles: Vec<JoinHandle<()>>) {
    for h in handles {
        h.join().unwrap();
    }
}

/// Two scheduler workers offer a claim each while a third runs the pass
/// that starts claims already due at the claim (`starter::offer_due`):
/// whichever pass is finishing when a claim arrives, the claim starts,
/// once.
#[test]
fn offers_racing_a_pass_start_every_claim_once() {
    check(|| {
        let node = Node::new(8, &[]);
        let offers: Vec<_> = [1, 2]
            .into_iter()
            .map(|c| {
                let node = node.clone();
                thread::spawn(move || node.offer(c))
            })
            .collect();
        node.starts.offer(3).unwrap();
        node.drain();
        join(offers);
        node.assert_settled(&[1, 2, 3]);
        assert_eq!(node.started.lock().unwrap().len(), 3);
    });
}

/// The handlers' queue is full: a claim offered meanwhile waits. Two
/// handlers each take a run and resume the starts: the claim starts
/// (once) whichever way the offer, the takes and the scheduled passes
/// interleave.
#[test]
fn freed_room_resumes_a_waiting_claim() {
    check(|| {
        let node = Node::new(2, &[10, 11]);
        let offer = {
            let node = node.clone();
            thread::spawn(move || node.offer(1))
        };
        let handler = {
            let node = node.clone();
            thread::spawn(move || join(take_and_resume(&node).into_iter().collect()))
        };
        // The main thread is the other handler (loom runs five threads at
        // most, the scheduled passes included).
        join(take_and_resume(&node).into_iter().collect());
        join(vec![offer, handler]);
        node.assert_settled(&[1]);
        assert_eq!(*node.started.lock().unwrap(), [1]);
    });
}

/// Two claims wait for room that frees one place: exactly one starts, the
/// other waits with no room left (no pass gives up on a place that is
/// free).
#[test]
fn one_freed_place_starts_exactly_one_of_two_claims() {
    check(|| {
        let node = Node::new(2, &[10, 11]);
        let mut threads: Vec<_> = [1, 2]
            .into_iter()
            .map(|c| {
                let node = node.clone();
                thread::spawn(move || node.offer(c))
            })
            .collect();
        threads.extend(take_and_resume(&node));
        join(threads);
        node.assert_settled(&[1, 2]);
        assert_eq!(node.started.lock().unwrap().len(), 1);
    });
}

/// Claims wait for a full handlers' queue; a handler frees one place,
/// then another, resuming the starts after each. Whether the pass
/// scheduled for the first place has run, is running or has not begun
/// when the second is freed, both claims start: a pass that begins lets
/// the next freed place schedule another.
#[test]
fn each_freed_place_resumes_the_starts() {
    check(|| {
        let node = Node::new(2, &[10, 11]);
        node.offer(1);
        node.offer(2);
        assert!(node.started.lock().unwrap().is_empty(), "no room yet");
        let mut passes: Vec<_> = take_and_resume(&node).into_iter().collect();
        passes.extend(take_and_resume(&node));
        join(passes);
        node.assert_settled(&[1, 2]);
        assert_eq!(node.started.lock().unwrap().len(), 2);
    });
}
