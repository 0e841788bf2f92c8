//! The queues between a node's threads: any thread pushes, the consumer
//! takes everything waiting at once (a worker making a start call and the finisher,
//! which turn what piled up during their last store call into their next
//! batch) or one item at a time (the handler workers).
//!
//! Closing wakes every consumer; they take what is left, then see `None`.
//! A push after the close is refused and hands the item back to the caller.
//!
//! Each queue's owner (a stage type: `Starts`, `Runs`, `Finishes`) says
//! who pushes and who takes. The start hand-off's loom model compiles this
//! file too, so it names nothing but `crate::sync`.

use std::collections::VecDeque;
use std::time::Instant;

use crate::sync::{Condvar, Mutex, lock, wait, wait_until};

struct State<T> {
    items: VecDeque<T>,
    closed: bool,
}

/// A closable queue with blocking takes.
pub(super) struct Queue<T> {
    state: Mutex<State<T>>,
    cond: Condvar,
}

impl<T> Queue<T> {
    pub(super) fn new() -> Queue<T> {
        Queue {
            state: Mutex::new(State {
                items: VecDeque::new(),
                closed: false,
            }),
            cond: Condvar::new(),
        }
    }

    /// Adds an item, or gives it back if the queue is closed.
    pub(super) fn push(&self, item: T) -> Result<(), T> {
        let mut s = lock(&self.state);
        if s.closed {
            return Err(item);
        }
        s.items.push_back(item);
        drop(s);
        self.cond.notify_one();
        Ok(())
    }

    /// Waits for at least one item, then takes up to `max`; `None` once the
    /// queue is closed and empty.
    pub(super) fn take_up_to(&self, max: usize) -> Option<Vec<T>> {
        let mut s = lock(&self.state);
        while s.items.is_empty() {
            if s.closed {
                return None;
            }
            s = wait(&self.cond, s);
        }
        let n = s.items.len().min(max.max(1));
        Some(s.items.drain(..n).collect())
    }

    /// Takes up to `max` items waiting now, without blocking.
    pub(super) fn try_take_up_to(&self, max: usize) -> Vec<T> {
        let mut s = lock(&self.state);
        let n = s.items.len().min(max);
        s.items.drain(..n).collect()
    }

    /// How many items are waiting.
    pub(super) fn len(&self) -> usize {
        lock(&self.state).items.len()
    }

    /// Whether nothing is waiting.
    pub(super) fn is_empty(&self) -> bool {
        lock(&self.state).items.is_empty()
    }

    /// Waits for one item; `None` once the queue is closed and empty.
    pub(super) fn take_one(&self) -> Option<T> {
        self.take_up_to(1).and_then(|mut v| v.pop())
    }

    /// Waits until `until` or until an item is pushed (or the queue
    /// closes), whichever comes first.
    pub(super) fn wait_until(&self, until: Instant) {
        let s = lock(&self.state);
        if s.items.is_empty() && !s.closed {
            drop(wait_until(&self.cond, s, until));
        }
    }

    /// Refuses further pushes and wakes every consumer.
    pub(super) fn close(&self) {
        lock(&self.state).closed = true;
        self.cond.notify_all();
    }
}

// The loom model compiles this file into its test, where loom's locks
// work only inside a model: these tests are std's.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn takes_what_is_waiting_in_order_then_none_after_close() {
        let q = Queue::new();
        for i in 0..5 {
            q.push(i).unwrap();
        }
        assert_eq!(q.take_up_to(3), Some(vec![0, 1, 2]));
        assert_eq!(q.try_take_up_to(10), vec![3, 4]);
        assert!(q.try_take_up_to(10).is_empty());
        q.push(5).unwrap();
        q.close();
        assert_eq!(q.push(6), Err(6));
        assert_eq!(q.take_one(), Some(5));
        assert_eq!(q.take_up_to(10), None);
    }

    #[test]
    fn a_blocked_consumer_wakes_for_a_push_and_for_the_close() {
        let q = Arc::new(Queue::new());
        let consumer = {
            let q = q.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                while let Some(v) = q.take_one() {
                    got.push(v);
                }
                got
            })
        };
        for i in 0..100 {
            q.push(i).unwrap();
        }
        q.close();
        assert_eq!(consumer.join().unwrap(), (0..100).collect::<Vec<_>>());
    }
}
