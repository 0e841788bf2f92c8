//! Groups concurrent single calls into rounds: a leader/follower
//! combiner.
//!
//! A caller queues its request. If no round is in flight it becomes the
//! leader: it takes what is queued (its own request first, up to
//! [`Combiner::cap`] requests), runs them as one round, hands each
//! follower its own answer and wakes it, then hands the lead to the first
//! request still queued, if any, and returns its own answer. A caller that
//! finds a round in flight waits until it is answered or made the next
//! leader.
//!
//! Invariants: at most one round runs at a time; `busy` is false only
//! while the queue is empty (a leader that ends with requests queued hands
//! the lead on rather than clearing it), so no request waits without a
//! leader to come; the leader's own request is in its round (a fresh
//! leader's is the only one queued, a handed-on lead goes to the front);
//! each request is answered exactly once. A lone caller runs its request
//! at once: nothing waits for company.
//!
//! Rounds run one after another, so a caller's calls, which are sequential,
//! land in the order it made them; requests of one round were concurrent
//! and may be applied in any order.
//!
//! Node state: none: it is below the node, a queue of the store's callers.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::sync::lock;

/// How one round runs, and what a request left waiting behind a failed
/// round is told.
pub(crate) trait Rounds {
    /// One caller's request.
    type Req: Send;
    /// Its answer.
    type Ans: Send;
    /// Runs `reqs` as one round: one answer for each, in order.
    fn round(&self, reqs: Vec<Self::Req>) -> Vec<Self::Ans>;
    /// The answer for a request that has waited `waited` behind a round
    /// whose leader got `last`, or `None` to keep it queued for the next
    /// round (a store that has been down for the request's whole patience
    /// answers it now rather than after one more round).
    fn expired(&self, last: &Self::Ans, waited: Duration) -> Option<Self::Ans>;
}

/// What a waiting caller is told.
enum Outcome<A> {
    /// Run the next round.
    Lead,
    Done(A),
}

/// Where a waiting caller's outcome arrives.
struct Slot<A> {
    outcome: Mutex<Option<Outcome<A>>>,
    ready: Condvar,
}

impl<A> Slot<A> {
    fn set(&self, o: Outcome<A>) {
        *lock(&self.outcome) = Some(o);
        self.ready.notify_one();
    }

    fn wait(&self) -> Outcome<A> {
        let mut g = lock(&self.outcome);
        loop {
            if let Some(o) = g.take() {
                return o;
            }
            g = self.ready.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

struct Queued<Q, A> {
    req: Q,
    since: Instant,
    slot: Arc<Slot<A>>,
}

struct State<Q, A> {
    queue: VecDeque<Queued<Q, A>>,
    /// A round is in flight or its lead is being handed on.
    busy: bool,
}

/// The queue of one store's single calls.
pub(crate) struct Combiner<Q, A> {
    state: Mutex<State<Q, A>>,
    cap: usize,
}

impl<Q, A> Combiner<Q, A> {
    /// A combiner that runs up to `cap` (at least 1) requests a round.
    pub(crate) fn new(cap: usize) -> Combiner<Q, A> {
        Combiner {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                busy: false,
            }),
            cap: cap.max(1),
        }
    }

    /// Runs `req` in a round (led by this caller or another) and returns
    /// its answer once that round is done.
    pub(crate) fn call<R: Rounds<Req = Q, Ans = A>>(&self, rounds: &R, req: Q) -> A {
        let slot = Arc::new(Slot {
            outcome: Mutex::new(None),
            ready: Condvar::new(),
        });
        {
            let mut st = lock(&self.state);
            st.queue.push_back(Queued {
                req,
                since: Instant::now(),
                slot: slot.clone(),
            });
            if st.busy {
                drop(st);
                if let Outcome::Done(a) = slot.wait() {
                    return a;
                }
                // Made the leader: our request is at the front.
            } else {
                st.busy = true;
            }
        }
        self.lead(rounds, &slot)
    }

    /// Runs one round, answers its followers and hands the lead on.
    fn lead<R: Rounds<Req = Q, Ans = A>>(&self, rounds: &R, own: &Arc<Slot<A>>) -> A {
        let taken: Vec<Queued<Q, A>> = {
            let mut st = lock(&self.state);
            let n = st.queue.len().min(self.cap);
            st.queue.drain(..n).collect()
        };
        let (reqs, slots): (Vec<Q>, Vec<Arc<Slot<A>>>) =
            taken.into_iter().map(|q| (q.req, q.slot)).unzip();
        let n = reqs.len();
        let answers = rounds.round(reqs);
        debug_assert_eq!(answers.len(), n, "a round answers every request");
        let mut mine = None;
        for (slot, a) in slots.into_iter().zip(answers) {
            if Arc::ptr_eq(&slot, own) {
                mine = Some(a);
            } else {
                slot.set(Outcome::Done(a));
            }
        }
        // The round answers every request, the leader's among them; a
        // round that broke that promise is a bug, reported as a panic in
        // the leader rather than as a caller waiting for ever.
        let mine = mine.expect("the leader's request is in its round");
        let mut st = lock(&self.state);
        let now = Instant::now();
        let mut kept = VecDeque::with_capacity(st.queue.len());
        for q in st.queue.drain(..) {
            match rounds.expired(&mine, now.saturating_duration_since(q.since)) {
                Some(a) => q.slot.set(Outcome::Done(a)),
                None => kept.push_back(q),
            }
        }
        st.queue = kept;
        match st.queue.front() {
            Some(next) => next.slot.set(Outcome::Lead),
            None => st.busy = false,
        }
        mine
    }
}

#[cfg(test)]
impl<Q, A> Combiner<Q, A> {
    /// Requests waiting for a round.
    fn queued(&self) -> usize {
        lock(&self.state).queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    type Comb = Combiner<u64, Result<u64, &'static str>>;

    /// Rounds that answer each request with itself doubled (or with an
    /// error when `down`), record their sizes, and hold the first round
    /// until `gate` more requests are queued, so that later rounds surely
    /// have company.
    struct Rec<'a> {
        comb: &'a Comb,
        gate: usize,
        down: bool,
        sizes: Mutex<Vec<usize>>,
        busy: AtomicUsize,
    }

    impl<'a> Rec<'a> {
        fn new(comb: &'a Comb, gate: usize, down: bool) -> Rec<'a> {
            let (sizes, busy) = (Mutex::new(Vec::new()), AtomicUsize::new(0));
            Rec {
                comb,
                gate,
                down,
                sizes,
                busy,
            }
        }
    }

    impl Rounds for Rec<'_> {
        type Req = u64;
        type Ans = Result<u64, &'static str>;
        fn round(&self, reqs: Vec<u64>) -> Vec<Self::Ans> {
            assert_eq!(
                self.busy.fetch_add(1, Ordering::SeqCst),
                0,
                "one round at a time"
            );
            if lock(&self.sizes).is_empty() {
                while self.comb.queued() < self.gate {
                    std::thread::yield_now();
                }
            }
            lock(&self.sizes).push(reqs.len());
            self.busy.fetch_sub(1, Ordering::SeqCst);
            let answer = |r: u64| if self.down { Err("down") } else { Ok(r * 2) };
            reqs.into_iter().map(answer).collect()
        }
        fn expired(&self, last: &Self::Ans, _: Duration) -> Option<Self::Ans> {
            last.is_err().then_some(Err("down"))
        }
    }

    #[test]
    fn every_caller_gets_its_own_answer_and_rounds_group_them() {
        let c = Combiner::new(8);
        let d = Rec::new(&c, 15, false);
        std::thread::scope(|s| {
            for t in 0..16u64 {
                let (c, d) = (&c, &d);
                s.spawn(move || {
                    for i in 0..50 {
                        let r = t * 1000 + i;
                        assert_eq!(c.call(d, r), Ok(r * 2));
                    }
                });
            }
        });
        let sizes = lock(&d.sizes);
        assert_eq!(sizes.iter().sum::<usize>(), 16 * 50);
        assert!(sizes.iter().all(|&n| (1..=8).contains(&n)));
        // The first round held until 15 others queued: the next took 8.
        assert_eq!(sizes[1], 8);
    }

    #[test]
    fn a_lone_caller_runs_its_round_alone() {
        let c = Combiner::new(8);
        let d = Rec::new(&c, 0, false);
        assert_eq!(c.call(&d, 3), Ok(6));
        assert_eq!(c.call(&d, 4), Ok(8));
        assert_eq!(*lock(&d.sizes), vec![1, 1]);
    }

    #[test]
    fn requests_behind_a_failed_round_get_its_failure() {
        let c = Combiner::new(1);
        let d = Rec::new(&c, 7, true);
        std::thread::scope(|s| {
            for r in 0..8 {
                let (c, d) = (&c, &d);
                s.spawn(move || assert_eq!(c.call(d, r), Err("down")));
            }
        });
        // The seven queued behind the first (failed) round were answered
        // by it, without a round of their own.
        assert_eq!(*lock(&d.sizes), vec![1]);
    }
}
