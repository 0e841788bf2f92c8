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
//! request at once: nothing waits for company. The lane is handed on
//! however the round ends: a round that panics (a bug in `round`) panics
//! its leader, and its followers get [`Rounds::abandoned`] (`Lane`).
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
    /// The answer for a request whose round panicked before answering it
    /// (a bug in `round`): its caller gets this rather than waiting for
    /// ever.
    fn abandoned(&self) -> Self::Ans;
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
        let (reqs, slots) = self.take(own);
        let n = reqs.len();
        // From here the lane is given back (or on) however the round ends,
        // a panic included, and every follower is answered.
        let mut lane = Lane {
            comb: self,
            rounds,
            followers: slots
                .into_iter()
                .map(|s| (!Arc::ptr_eq(&s, own)).then_some(s))
                .collect(),
            handed: false,
        };
        let answers = rounds.round(reqs);
        debug_assert_eq!(answers.len(), n, "a round answers every request");
        let mut mine = None;
        for (i, a) in answers.into_iter().enumerate() {
            // Each position is taken once: `None` there is the leader's.
            match lane.followers.get_mut(i).map(Option::take) {
                Some(Some(slot)) => slot.set(Outcome::Done(a)),
                Some(None) => mine = Some(a),
                None => {}
            }
        }
        // The round answers every request, the leader's among them; a
        // round that broke that promise is a bug, reported as a panic in
        // the leader (its followers get `abandoned` from the lane) rather
        // than as a caller waiting for ever.
        let mine = mine.expect("the leader's request is in its round");
        lane.hand_on(Some(&mine));
        mine
    }

    /// Takes this leader's round from the queue: its own request, and
    /// others not chosen by another leader, up to the cap.
    fn take(&self, own: &Arc<Slot<A>>) -> (Vec<Q>, Vec<Arc<Slot<A>>>) {
        let mut st = lock(&self.state);
        let (mut taken, mut others) = (Vec::new(), 0);
        let mut left = VecDeque::with_capacity(st.queue.len());
        for q in st.queue.drain(..) {
            // Our own request always (it may lie past the cap), others up
            // to the cap, other leaders' chosen requests never.
            let ours = Arc::ptr_eq(&q.slot, own);
            if ours || (!q.chosen && others + 1 < self.cap) {
                others += usize::from(!ours);
                taken.push((q.req, q.slot));
            } else {
                left.push_back(q);
            }
        }
        st.queue = left;
        taken.into_iter().unzip()
    }
}

/// A leader's lane while its round runs. [`Lane::hand_on`] ends it after
/// a round; dropped without that (the round panicked), it answers the
/// followers still waiting with [`Rounds::abandoned`] and hands the lane
/// on all the same, so that a panic costs neither a caller nor a lane.
struct Lane<'c, 'r, Q, A, R: Rounds<Req = Q, Ans = A>> {
    comb: &'c Combiner<Q, A>,
    rounds: &'r R,
    /// The round's followers not yet answered, by position in the round
    /// (`None`: the leader's own request, or answered).
    followers: Vec<Option<Arc<Slot<A>>>>,
    /// Given back or on already.
    handed: bool,
}

impl<Q, A, R: Rounds<Req = Q, Ans = A>> Lane<'_, '_, Q, A, R> {
    /// Answers the queued requests that `last` (the leader's answer, if
    /// its round finished) expires, then gives the lane to the first
    /// request still waiting unchosen, or back when there is none.
    fn hand_on(&mut self, last: Option<&A>) {
        // Once only, even if something below panics: a second pass from
        // the drop could free a lane that another leader now holds.
        if std::mem::replace(&mut self.handed, true) {
            return;
        }
        for slot in self.followers.drain(..).flatten() {
            slot.set(Outcome::Done(self.rounds.abandoned()));
        }
        let mut st = lock(&self.comb.state);
        let now = Instant::now();
        let mut kept = VecDeque::with_capacity(st.queue.len());
        for q in st.queue.drain(..) {
            // A chosen request holds a lane: only its own round answers it.
            let waited = now.saturating_duration_since(q.since);
            let expired = match last {
                Some(last) if !q.chosen => self.rounds.expired(last, waited),
                _ => None,
            };
            match expired {
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
    }
}

impl<Q, A, R: Rounds<Req = Q, Ans = A>> Drop for Lane<'_, '_, Q, A, R> {
    fn drop(&mut self) {
        self.hand_on(None);
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
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    type Comb = Combiner<u64, Result<u64, &'static str>>;

    /// What the first round waits for before it runs. Each is sure to
    /// come while that round holds its lane, so no wait can outlast the
    /// other callers: with `Queued`, every other caller of a one-lane
    /// combiner can only queue; with `Overlap`, a free lane lets the next
    /// caller lead at once.
    #[derive(Clone, Copy)]
    enum Gate {
        Open,
        /// Until this many requests are queued, so that later rounds
        /// surely have company (one lane only: with a free lane the
        /// others could run instead of queueing, and never all queue).
        Queued(usize),
        /// Until another round runs beside it.
        Overlap,
    }

    /// Rounds that answer each request with itself doubled (or with an
    /// error when `down`), record their sizes and the most in flight at
    /// once, and hold the first round at `gate`.
    struct Rec<'a> {
        comb: &'a Comb,
        gate: Gate,
        down: bool,
        sizes: Mutex<Vec<usize>>,
        started: AtomicUsize,
        busy: AtomicUsize,
        most: AtomicUsize,
        overlapped: AtomicBool,
    }

    impl<'a> Rec<'a> {
        fn new(comb: &'a Comb, gate: Gate, down: bool) -> Rec<'a> {
            Rec {
                comb,
                gate,
                down,
                sizes: Mutex::new(Vec::new()),
                started: AtomicUsize::new(0),
                busy: AtomicUsize::new(0),
                most: AtomicUsize::new(0),
                overlapped: AtomicBool::new(false),
            }
        }

        /// Holds the first round until its gate opens.
        fn hold(&self) {
            let first = self.started.fetch_add(1, Ordering::SeqCst) == 0;
            let busy = self.busy.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(busy, Ordering::SeqCst);
            if busy > 1 {
                self.overlapped.store(true, Ordering::SeqCst);
            }
            match self.gate {
                Gate::Queued(n) if first => {
                    while self.comb.queued() < n {
                        std::thread::yield_now();
                    }
                }
                Gate::Overlap if first => {
                    while !self.overlapped.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                }
                _ => {}
            }
        }
    }

    impl Rounds for Rec<'_> {
        type Req = u64;
        type Ans = Result<u64, &'static str>;
        fn round(&self, reqs: Vec<u64>) -> Vec<Self::Ans> {
            self.hold();
            lock(&self.sizes).push(reqs.len());
            self.busy.fetch_sub(1, Ordering::SeqCst);
            let answer = |r: u64| if self.down { Err("down") } else { Ok(r * 2) };
            reqs.into_iter().map(answer).collect()
        }
        fn expired(&self, last: &Self::Ans, _: Duration) -> Option<Self::Ans> {
            last.is_err().then_some(Err("down"))
        }
        fn abandoned(&self) -> Self::Ans {
            Err("abandoned")
        }
    }

    #[test]
    fn every_caller_gets_its_own_answer_and_rounds_group_them() {
        let c = Combiner::new(8, 1);
        let d = Rec::new(&c, Gate::Queued(15), false);
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
        let d = Rec::new(&c, Gate::Overlap, false);
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
        // The first round waited for a second beside it: both lanes ran.
        assert_eq!(d.most.load(Ordering::SeqCst), 2);
        assert_eq!(lock(&c.state).in_flight, 0, "every lane given back");
    }

    #[test]
    fn a_lone_caller_runs_its_round_alone() {
        let c = Combiner::new(8, 2);
        let d = Rec::new(&c, Gate::Open, false);
        assert_eq!(c.call(&d, 3), Ok(6));
        assert_eq!(c.call(&d, 4), Ok(8));
        assert_eq!(*lock(&d.sizes), vec![1, 1]);
    }

    #[test]
    fn requests_behind_a_failed_round_get_its_failure() {
        let c = Combiner::new(1, 1);
        let d = Rec::new(&c, Gate::Queued(7), true);
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

    /// Rounds that panic when they carry three requests: the round of
    /// request 100 says it has begun (`entered`) and holds until three are
    /// queued, and the next, led by one of them, takes all three.
    struct Boom<'a> {
        comb: &'a Comb,
        entered: AtomicBool,
    }

    impl Rounds for Boom<'_> {
        type Req = u64;
        type Ans = Result<u64, &'static str>;
        fn round(&self, reqs: Vec<u64>) -> Vec<Self::Ans> {
            assert_ne!(reqs.len(), 3, "a round of three panics");
            if reqs == [100] {
                self.entered.store(true, Ordering::SeqCst);
                while self.comb.queued() < 3 {
                    std::thread::yield_now();
                }
            }
            reqs.into_iter().map(|r| Ok(r * 2)).collect()
        }
        fn expired(&self, _: &Self::Ans, _: Duration) -> Option<Self::Ans> {
            None
        }
        fn abandoned(&self) -> Self::Ans {
            Err("abandoned")
        }
    }

    #[test]
    fn a_round_that_panics_answers_its_followers_and_gives_its_lane_back() {
        let c = Combiner::new(8, 1);
        let boom = Boom {
            comb: &c,
            entered: AtomicBool::new(false),
        };
        let outcomes: Vec<_> = std::thread::scope(|s| {
            let (c, boom) = (&c, &boom);
            let first = s.spawn(move || c.call(boom, 100));
            // Its round holds the only lane: the three below all queue.
            while !boom.entered.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            let rest: Vec<_> = (1..=3).map(|r| s.spawn(move || c.call(boom, r))).collect();
            assert_eq!(first.join().unwrap(), Ok(200));
            rest.into_iter().map(|h| h.join()).collect()
        });
        // The round's leader panicked; its two followers were told so.
        assert_eq!(outcomes.iter().filter(|o| o.is_err()).count(), 1);
        let answered: Vec<_> = outcomes.into_iter().filter_map(Result::ok).collect();
        assert_eq!(answered, [Err("abandoned"), Err("abandoned")]);
        assert_eq!(lock(&c.state).in_flight, 0, "the lane given back");
        assert_eq!(c.call(&boom, 5), Ok(10), "the next caller leads");
    }
}
