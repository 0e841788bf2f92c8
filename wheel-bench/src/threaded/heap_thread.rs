//! The lazy heap thread: one timer thread sleeping on a `Condvar` over a
//! `Mutex<BinaryHeap>`, callbacks run on that thread, lazy cancel.
//!
//! Schedule locks, pushes, and notifies the thread only when the new timer is
//! the earliest. Cancel sets the timer's flag without locking; the entry (and its
//! closure) stays in the heap until its deadline, where it is dropped unrun.
//! The flag is an `Arc<AtomicBool>` allocated per timer; [`super::heap_plain`]
//! is the plainer design that cancels under the lock instead.

use super::{ThreadedTimer, TimerProducer};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

struct Item {
    at: Instant,
    seq: u64,
    cancelled: Arc<AtomicBool>,
    f: Box<dyn FnOnce() + Send>,
}

impl PartialEq for Item {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Item {
    /// Reversed: `BinaryHeap` is a max-heap and we want the earliest on top.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

struct State {
    heap: BinaryHeap<Item>,
    seq: u64,
    shutdown: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

/// The heap timer thread.
pub struct HeapThread {
    shared: Arc<Shared>,
    thread: JoinHandle<()>,
}

/// A producer of the heap timer thread.
pub struct HeapProducer {
    shared: Arc<Shared>,
}

fn run(shared: &Shared) {
    let mut due: Vec<Item> = Vec::new();
    let mut state = shared.state.lock().unwrap();
    loop {
        if state.shutdown {
            return;
        }
        let now = Instant::now();
        while state.heap.peek().is_some_and(|top| top.at <= now) {
            due.push(state.heap.pop().unwrap());
        }
        if !due.is_empty() {
            drop(state);
            for item in due.drain(..) {
                if !item.cancelled.load(Ordering::Acquire) {
                    (item.f)();
                }
            }
            state = shared.state.lock().unwrap();
            continue;
        }
        state = match state.heap.peek() {
            Some(top) => {
                let wait = top.at - now;
                shared.wake.wait_timeout(state, wait).unwrap().0
            }
            None => shared.wake.wait(state).unwrap(),
        };
    }
}

impl ThreadedTimer for HeapThread {
    type Producer = HeapProducer;

    fn start() -> HeapThread {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                heap: BinaryHeap::new(),
                seq: 0,
                shutdown: false,
            }),
            wake: Condvar::new(),
        });
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("heap-timer".into())
            .spawn(move || run(&for_thread))
            .expect("spawn the heap timer thread");
        HeapThread { shared, thread }
    }

    fn producer(&self) -> HeapProducer {
        HeapProducer {
            shared: Arc::clone(&self.shared),
        }
    }

    fn shutdown(self) {
        self.shared.state.lock().unwrap().shutdown = true;
        self.shared.wake.notify_one();
        self.thread.join().expect("heap timer thread panicked");
    }
}

impl TimerProducer for HeapProducer {
    type Handle = Arc<AtomicBool>;

    fn schedule<F: FnOnce() + Send + 'static>(&mut self, delay: Duration, f: F) -> Arc<AtomicBool> {
        let at = Instant::now() + delay;
        let cancelled = Arc::new(AtomicBool::new(false));
        let f: Box<dyn FnOnce() + Send> = Box::new(f);
        let flag = Arc::clone(&cancelled);
        let earliest = {
            let mut state = self.shared.state.lock().unwrap();
            state.seq += 1;
            let seq = state.seq;
            let earliest = state.heap.peek().is_none_or(|top| at < top.at);
            state.heap.push(Item {
                at,
                seq,
                cancelled: flag,
                f,
            });
            earliest
        };
        if earliest {
            self.shared.wake.notify_one();
        }
        cancelled
    }

    fn cancel(&mut self, handle: Arc<AtomicBool>) -> Option<bool> {
        handle.store(true, Ordering::Release);
        None
    }
}
