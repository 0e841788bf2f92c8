//! The plain heap timer thread, "the simplest thing a user would write": one
//! `Mutex` over a `BinaryHeap` of (deadline, slot, generation) and a slab of
//! boxed closures with a free list, one timer thread sleeping on a `Condvar`.
//!
//! Invariants (all under the one lock):
//! - a slab slot holds a closure iff its timer is pending; its generation
//!   changes every time it is emptied (cancel or fire), so a handle or heap
//!   entry naming an older generation is stale;
//! - a slot is on the free list iff it is empty;
//! - every pending timer has exactly one heap entry with its generation;
//!   cancel leaves the entry in the heap, and the timer thread discards it
//!   when it surfaces (generation mismatch).
//!
//! Schedule and cancel each take the lock once and allocate nothing but the
//! boxed closure (the slab, free list and heap grow and are reused). The
//! producer notifies the thread only when the new timer is the earliest.

use super::{ThreadedTimer, TimerProducer};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

type Callback = Box<dyn FnOnce() + Send>;

/// A slab slot: the pending closure, if any, and the generation that names it.
struct Slot {
    generation: u32,
    f: Option<Callback>,
}

struct State {
    /// Earliest deadline on top; entries of cancelled timers stay until due.
    heap: BinaryHeap<Reverse<(Instant, u32, u32)>>,
    slab: Vec<Slot>,
    free: Vec<u32>,
    shutdown: bool,
}

impl State {
    /// Empties slot `index` if it still holds generation `generation`, and
    /// returns its closure; the slot goes back on the free list.
    fn take(&mut self, index: u32, generation: u32) -> Option<Callback> {
        let slot = self.slab.get_mut(index as usize)?;
        if slot.generation != generation {
            return None;
        }
        let f = slot.f.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(index);
        Some(f)
    }
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

/// The plain heap timer thread.
pub struct HeapPlain {
    shared: Arc<Shared>,
    thread: JoinHandle<()>,
}

/// A producer of the plain heap timer thread.
pub struct HeapPlainProducer {
    shared: Arc<Shared>,
}

/// Names one scheduled timer: its slab slot and that slot's generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainHandle {
    index: u32,
    generation: u32,
}

fn run(shared: &Shared) {
    let mut due: Vec<Callback> = Vec::new();
    let mut state = shared.state.lock().unwrap();
    loop {
        if state.shutdown {
            return;
        }
        let now = Instant::now();
        while let Some(&Reverse((at, index, generation))) = state.heap.peek() {
            if at > now {
                break;
            }
            state.heap.pop();
            // `None`: the timer was cancelled (its slot may be reused already).
            if let Some(f) = state.take(index, generation) {
                due.push(f);
            }
        }
        if !due.is_empty() {
            // Callbacks run without the lock, so they may schedule and cancel.
            drop(state);
            for f in due.drain(..) {
                f();
            }
            state = shared.state.lock().unwrap();
            continue;
        }
        state = match state.heap.peek() {
            Some(&Reverse((at, _, _))) => {
                let wait = at - now;
                shared.wake.wait_timeout(state, wait).unwrap().0
            }
            None => shared.wake.wait(state).unwrap(),
        };
    }
}

#[cfg(test)]
impl HeapPlain {
    /// Slots in the slab (pending plus free): stays near the most timers
    /// ever pending at once, because emptied slots are reused.
    fn slab_len(&self) -> usize {
        self.shared.state.lock().unwrap().slab.len()
    }
}

impl ThreadedTimer for HeapPlain {
    type Producer = HeapPlainProducer;

    fn start() -> HeapPlain {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                heap: BinaryHeap::new(),
                slab: Vec::new(),
                free: Vec::new(),
                shutdown: false,
            }),
            wake: Condvar::new(),
        });
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("heap-plain-timer".into())
            .spawn(move || run(&for_thread))
            .expect("spawn the plain heap timer thread");
        HeapPlain { shared, thread }
    }

    fn producer(&self) -> HeapPlainProducer {
        HeapPlainProducer {
            shared: Arc::clone(&self.shared),
        }
    }

    fn shutdown(self) {
        let pending = {
            let mut state = self.shared.state.lock().unwrap();
            state.shutdown = true;
            state.heap.clear();
            std::mem::take(&mut state.slab)
        };
        self.shared.wake.notify_one();
        self.thread
            .join()
            .expect("plain heap timer thread panicked");
        // Pending closures are dropped unrun, outside the lock.
        drop(pending);
    }
}

impl TimerProducer for HeapPlainProducer {
    type Handle = PlainHandle;

    fn schedule<F: FnOnce() + Send + 'static>(&mut self, delay: Duration, f: F) -> PlainHandle {
        let at = Instant::now() + delay;
        let f: Callback = Box::new(f);
        let (handle, earliest) = {
            let mut state = self.shared.state.lock().unwrap();
            let index = match state.free.pop() {
                Some(index) => index,
                None => {
                    let index = u32::try_from(state.slab.len()).expect("under 2^32 pending timers");
                    state.slab.push(Slot {
                        generation: 0,
                        f: None,
                    });
                    index
                }
            };
            let slot = &mut state.slab[index as usize];
            slot.f = Some(f);
            let generation = slot.generation;
            let earliest = state.heap.peek().is_none_or(|Reverse(top)| at < top.0);
            state.heap.push(Reverse((at, index, generation)));
            (PlainHandle { index, generation }, earliest)
        };
        if earliest {
            self.shared.wake.notify_one();
        }
        handle
    }

    fn cancel(&mut self, handle: PlainHandle) -> Option<bool> {
        let f = self
            .shared
            .state
            .lock()
            .unwrap()
            .take(handle.index, handle.generation);
        // `Some(true)` iff this call took the closure: it will never run.
        // Dropped here, outside the lock.
        Some(f.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    /// Liveness bound for callbacks due within milliseconds.
    const EVENTUALLY: Duration = Duration::from_secs(10);

    #[test]
    fn due_closures_run_once_not_before_their_deadline() {
        let timer = HeapPlain::start();
        let mut p = timer.producer();
        let (tx, rx) = mpsc::channel();
        let runs = Arc::new(AtomicUsize::new(0));
        for ms in [150u64, 0, 50, 100] {
            let (tx, runs) = (tx.clone(), Arc::clone(&runs));
            let at = Instant::now() + Duration::from_millis(ms);
            p.schedule(Duration::from_millis(ms), move || {
                runs.fetch_add(1, Ordering::SeqCst);
                tx.send((ms, at, Instant::now())).unwrap();
            });
        }
        let mut order = Vec::new();
        for _ in 0..4 {
            let (ms, at, ran) = rx.recv_timeout(EVENTUALLY).expect("callback ran");
            assert!(ran >= at, "timer {ms} ms ran early");
            order.push(ms);
        }
        assert_eq!(order, [0, 50, 100, 150]);
        timer.shutdown();
        // After shutdown nothing more runs; each ran exactly once.
        assert_eq!(runs.load(Ordering::SeqCst), 4);
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn cancelled_closures_never_run_and_a_second_cancel_fails() {
        let timer = HeapPlain::start();
        let mut p = timer.producer();
        let fired = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let f = Arc::clone(&fired);
        let h = p.schedule(Duration::from_millis(5), move || {
            f.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(p.cancel(h), Some(true));
        assert_eq!(p.cancel(h), Some(false));
        // The cancelled closure was dropped: only the test holds the counter.
        assert_eq!(Arc::strong_count(&fired), 1);
        // A later timer runs, so the cancelled one's deadline has passed.
        p.schedule(Duration::from_millis(20), move || tx.send(()).unwrap());
        rx.recv_timeout(EVENTUALLY).expect("the later timer ran");
        assert_eq!(fired.load(Ordering::SeqCst), 0);
        timer.shutdown();
    }

    #[test]
    fn slots_are_reused_and_stale_handles_do_not_cancel_new_timers() {
        let timer = HeapPlain::start();
        let mut p = timer.producer();
        let first = p.schedule(Duration::from_secs(60), || {});
        assert_eq!(p.cancel(first), Some(true));
        let second = p.schedule(Duration::from_secs(60), || {});
        assert_eq!(second.index, first.index, "the emptied slot is reused");
        assert_ne!(second.generation, first.generation);
        // The old handle names the old generation: it cancels nothing.
        assert_eq!(p.cancel(first), Some(false));
        assert_eq!(p.cancel(second), Some(true));
        // A lagged schedule+cancel stream keeps the slab at the lag.
        let mut ring = std::collections::VecDeque::new();
        for _ in 0..10_000 {
            ring.push_back(p.schedule(Duration::from_secs(60), || {}));
            if ring.len() > 100 {
                assert_eq!(p.cancel(ring.pop_front().unwrap()), Some(true));
            }
        }
        assert!(timer.slab_len() <= 101, "slab grew to {}", timer.slab_len());
        timer.shutdown();
    }

    #[test]
    fn shutdown_drops_pending_closures_unrun() {
        let timer = HeapPlain::start();
        let mut p = timer.producer();
        let fired = Arc::new(AtomicUsize::new(0));
        for _ in 0..10 {
            let f = Arc::clone(&fired);
            p.schedule(Duration::from_secs(60), move || {
                f.fetch_add(1, Ordering::SeqCst);
            });
        }
        timer.shutdown();
        assert_eq!(Arc::strong_count(&fired), 1);
        assert_eq!(fired.load(Ordering::SeqCst), 0);
    }
}
