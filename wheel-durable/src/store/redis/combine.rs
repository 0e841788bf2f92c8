//! Groups concurrent single calls into rounds: a leader/follower
//! combiner.
//!
//! A caller queues its request. If fewer than `lanes` rounds are in
//! flight it becomes a leader: it takes its own request and what else is
//! queued (up to `cap` requests), runs them as one round, hands each
//! follower its own answer and wakes it, then hands its lane to the first
//! request still queued and not yet chosen to lead, if any, and returns its
//! own answer. A caller that finds every lane busy waits until it is
//! answered or chosen to lead. Two lanes let one round travel while the
//! next is being formed: with one, the server idles while a finished
//! leader wakes the next.
//!
//! Invariants: at most `lanes` rounds are in flight or being handed on
//! (`in_flight`); a request waits unchosen only while every lane is taken
//! (a leader that ends with such a request queued chooses it rather than
//! freeing its lane), so no request waits without a leader to come; a
//! chosen request is taken by its own leader only, who finds it in the
//! queue; each request is answered exactly once. A lone caller runs its
//! request at once: nothing waits for company.
//!
//! A caller's calls are sequential (each returns before the next is made),
//! so they land in the order it made them whatever the lanes; requests in
//! flight at once were concurrent and may be applied in any order.
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
    /// Told to lead; its leader takes it.
    chosen: bool,
}

struct State<Q, A> {
    queue: VecDeque<Queued<Q, A>>,
    /// Lanes taken: rounds in flight and leads being handed on.
    in_flight: usize,
}

/// The queue of one store's single calls.
pub(crate) struct Combiner<Q, A> {
    state: Mutex<State<Q, A>>,
    cap: usize,
    lanes: usize,
}

impl<Q, A> Combiner<Q, A> {
    /// A combiner that runs up to `cap` requests a round and up to
    /// `lanes` rounds at once (each at least 1).
    pub(crate) fn new(cap: usize, lanes: usize) -> Combiner<Q, A> {
        Combiner {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                in_flight: 0,
            }),
            cap: cap.max(1),
            lanes: lanes.max(1),
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
            let lead = st.in_flight < self.lanes;
            // A caller that leads at once is chosen too, so that no other
            // leader takes its request before it runs its own round.
            st.queue.push_back(Queued {
                req,
                since: Instant::now(),
                slot: slot.clone(),
                chosen: lead,
            });
            if !lead {
                drop(st);
                if let Outcome::Done(a) = slot.wait() {
                    return a;
                }
                // Chosen to lead: our request is still queued.
            } else {
                st.in_flight += 1;
            }
        }
        self.lead(rounds, &slot)
    }

    /// Runs one round, answers its followers and hands the lead on.
    fn lead<R: Rounds<Req = Q, Ans = A>>(&self, rounds: &R, own: &Arc<Slot<A>>) -> A {
        let taken: Vec<Queued<Q, A>> = {
            let mut st = lock(&self.state);
            let (mut taken, mut others) = (Vec::new(), 0);
            let mut left = VecDeque::with_capacity(st.queue.len());
            for q in st.queue.drain(..) {
                // Our own request always (it may lie past the cap), others
                // up to the cap, other leaders' chosen requests never.
                let ours = Arc::ptr_eq(&q.slot, own);
                if ours || (!q.chosen && others + 1 < self.cap) {
                    others += usize::from(!ours);
                    taken.push(q);
                } else {
                    left.push_back(q);
                }
            }
            st.queue = left;
            taken
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
            // A chosen request holds a lane: only its own round answers it.
            let waited = now.saturating_duration_since(q.since);
            match (!q.chosen).then(|| rounds.expired(&mine, waited)).flatten() {
                Some(a) => q.slot.set(Outcome::Done(a)),
                None => kept.push_back(q),
            }
        }
        st.queue = kept;
        match st.queue.iter_mut().find(|q| !q.chosen) {
            Some(next) => {
                next.chosen = true;
                next.slot.set(Outcome::Lead);
            }
            None => st.in_flight -= 1,
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
    /// error when `down`), record their sizes and the most in flight at
    /// once, and hold the first round until `gate` more requests are
    /// queued, so that later rounds surely have company.
    struct Rec<'a> {
        comb: &'a Comb,
        gate: usize,
        down: bool,
        sizes: Mutex<Vec<usize>>,
        busy: AtomicUsize,
        most: AtomicUsize,
    }

    impl<'a> Rec<'a> {
        fn new(comb: &'a Comb, gate: usize, down: bool) -> Rec<'a> {
            let sizes = Mutex::new(Vec::new());
            let (busy, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
            Rec {
                comb,
                gate,
                down,
                sizes,
                busy,
                most,
            }
        }
    }

    impl Rounds for Rec<'_> {
        type Req = u64;
        type Ans = Result<u64, &'static str>;
        fn round(&self, reqs: Vec<u64>) -> Vec<Self::Ans> {
            let busy = self.busy.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(busy, Ordering::SeqCst);
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
        let c = Combiner::new(8, 1);
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
        assert_eq!(
            d.most.load(Ordering::SeqCst),
            1,
            "one lane: one round at a time"
        );
    }

    #[test]
    fn two_lanes_run_at_most_two_rounds_at_once_and_answer_everyone() {
        let c = Combiner::new(4, 2);
        let d = Rec::new(&c, 14, false);
        std::thread::scope(|s| {
            for t in 0..16u64 {
                let (c, d) = (&c, &d);
                s.spawn(move || {
                    for i in 0..100 {
                        let r = t * 1000 + i;
                        assert_eq!(c.call(d, r), Ok(r * 2));
                    }
                });
            }
        });
        let sizes = lock(&d.sizes);
        assert_eq!(sizes.iter().sum::<usize>(), 16 * 100);
        assert!(sizes.iter().all(|&n| (1..=4).contains(&n)));
        assert!(d.most.load(Ordering::SeqCst) <= 2);
        assert_eq!(lock(&c.state).in_flight, 0, "every lane given back");
    }

    #[test]
    fn a_lone_caller_runs_its_round_alone() {
        let c = Combiner::new(8, 2);
        let d = Rec::new(&c, 0, false);
        assert_eq!(c.call(&d, 3), Ok(6));
        assert_eq!(c.call(&d, 4), Ok(8));
        assert_eq!(*lock(&d.sizes), vec![1, 1]);
    }

    #[test]
    fn requests_behind_a_failed_round_get_its_failure() {
        let c = Combiner::new(1, 1);
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
