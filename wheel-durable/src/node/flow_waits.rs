//! Flow waits: claims the store did not start yet because their flow
//! key's parallelism or rate holds them back ([`Start::Wait`]), kept by
//! key until it is their turn.
//!
//! Owns `keys` (each key's waiting claims, earliest `(due, key)` first,
//! and when its next retry is scheduled) and the count of claims in all.
//! Who touches what: the starter leaves claims ([`FlowWaits::wait`]) and
//! takes a key's next ones at its retry ([`FlowWaits::take`]); the
//! finisher asks for an early retry when a run of the key ended on this
//! node ([`FlowWaits::nudge`]: its permit came back); the claimer renews
//! their claims' leases ([`FlowWaits::to_renew`], [`FlowWaits::renewed`])
//! and counts them with the claims the node holds ([`FlowWaits::len`]);
//! shutdown takes what is left to hand back ([`FlowWaits::close`]).
//!
//! A claim here is still claimed in the store with its fence: a retry
//! starts it through the same fenced start as any claim, so a claim the
//! store took back meanwhile (its lease passed) is only refused. No lock
//! is held while anything else is called.
//!
//! [`Start::Wait`]: crate::store::Start::Wait

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::store::{Claimed, Millis};
use crate::sync::{Mutex, lock};

/// Claims offered per retry of one key at most.
pub(super) const RETRY_BATCH: usize = 64;

/// Claims offered at a key's first retry. Then as many as its last start
/// call started, plus one, doubling while all start: the store reserves a
/// rate's slots for a short horizon only, and each claim offered beyond
/// what it grants costs a refusal in the store.
const FIRST_ASK: usize = 4;

/// Claims of one key a node holds back at most; past that it defers the
/// latest-due ones to the store (`Store::defer`), which hands them out
/// again at the key's rate, so that one key's backlog neither fills the
/// node nor keeps it from claiming other keys' timers.
pub(super) const MOST_PER_KEY: usize = 512;

/// The longest a key waits between two retries: other nodes' runs give
/// permits back without this node hearing of it.
pub(super) const RETRY_AT_MOST: Duration = Duration::from_millis(50);

struct Waiting {
    claim: Claimed,
    renewed: Instant,
}

#[derive(Default)]
struct Key {
    /// By `(due, key)`.
    waiting: BTreeMap<(Millis, String), Waiting>,
    /// When the retry already scheduled for this key comes, if one is.
    retry: Option<Instant>,
    /// Claims its next retry offers.
    ask: usize,
}

#[derive(Default)]
struct Inner {
    keys: HashMap<String, Key>,
    len: usize,
    closed: bool,
}

/// The claims waiting for their flow key's turn.
#[derive(Default)]
pub(super) struct FlowWaits {
    inner: Mutex<Inner>,
}

impl FlowWaits {
    /// Leaves a claim of `flow` to be retried at `at` (at most
    /// [`RETRY_AT_MOST`] from now). Answers the instant the caller must
    /// schedule the key's retry at, if no retry as early is scheduled yet,
    /// and the key's latest-due claims past [`MOST_PER_KEY`], for the
    /// caller to defer; gives the claim back once the waits are closed.
    pub(super) fn wait(
        &self,
        claim: Claimed,
        flow: &str,
        at: Instant,
        now: Instant,
    ) -> Result<(Option<Instant>, Vec<Claimed>), Claimed> {
        self.enter(claim, flow, at, now, MOST_PER_KEY)
    }

    /// Takes back claims a deferral could not hand to the store: they
    /// wait like any other, beyond [`MOST_PER_KEY`] if need be.
    pub(super) fn keep(&self, claims: Vec<Claimed>, flow: &str, now: Instant) -> Vec<Claimed> {
        let mut refused = Vec::new();
        for c in claims {
            if let Err(c) = self.enter(c, flow, now + RETRY_AT_MOST, now, usize::MAX) {
                refused.push(c);
            }
        }
        refused
    }

    fn enter(
        &self,
        claim: Claimed,
        flow: &str,
        at: Instant,
        now: Instant,
        most: usize,
    ) -> Result<(Option<Instant>, Vec<Claimed>), Claimed> {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return Err(claim);
        }
        let at = at.min(now + RETRY_AT_MOST);
        let key = inner.keys.entry(flow.to_owned()).or_insert_with(|| Key {
            ask: FIRST_ASK,
            ..Key::default()
        });
        let w = Waiting {
            renewed: now,
            claim,
        };
        if key
            .waiting
            .insert((w.claim.due, w.claim.key.clone()), w)
            .is_none()
        {
            inner.len += 1;
        }
        let key = inner.keys.get_mut(flow).expect("entered above");
        let mut over = Vec::new();
        while key.waiting.len() > most {
            let (_, w) = key.waiting.pop_last().expect("over the limit");
            over.push(w.claim);
        }
        let retry = schedule(key, at);
        inner.len -= over.len();
        Ok((retry, over))
    }

    /// Takes the next claims of `flow` (earliest first) for its retry, and
    /// forgets the retry scheduled.
    pub(super) fn take(&self, flow: &str) -> Vec<Claimed> {
        let mut inner = lock(&self.inner);
        let Some(key) = inner.keys.get_mut(flow) else {
            return Vec::new();
        };
        key.retry = None;
        let mut out = Vec::new();
        while out.len() < key.ask {
            let Some((_, w)) = key.waiting.pop_first() else {
                break;
            };
            out.push(w.claim);
        }
        if key.waiting.is_empty() {
            inner.keys.remove(flow);
        }
        inner.len -= out.len();
        out
    }

    /// A run of `flow` ended here: its permit is back, so its waiting
    /// claims are retried now. Answers the instant to schedule the retry
    /// at, unless none waits or one is scheduled already by then.
    pub(super) fn nudge(&self, flow: &str, now: Instant) -> Option<Instant> {
        let mut inner = lock(&self.inner);
        let key = inner.keys.get_mut(flow)?;
        schedule(key, now)
    }

    /// Learns from a start call how many claims of `flow` started and how
    /// many were held back, to size its next retry.
    pub(super) fn answered(&self, flow: &str, started: usize, held: usize) {
        let mut inner = lock(&self.inner);
        if let Some(key) = inner.keys.get_mut(flow) {
            key.ask = if held == 0 {
                (key.ask * 2).min(RETRY_BATCH)
            } else {
                (started + 1).min(RETRY_BATCH)
            };
        }
    }

    /// Claims waiting for each key.
    pub(super) fn by_key(&self) -> HashMap<String, usize> {
        let inner = lock(&self.inner);
        let counts = inner.keys.iter().map(|(k, w)| (k.clone(), w.waiting.len()));
        counts.collect()
    }

    /// Claims waiting in all.
    pub(super) fn len(&self) -> usize {
        lock(&self.inner).len
    }

    /// The waiting claims last renewed at least `every` before `now`.
    pub(super) fn to_renew(&self, every: Duration, now: Instant) -> Vec<(String, u64)> {
        let inner = lock(&self.inner);
        let all = inner.keys.values().flat_map(|k| k.waiting.values());
        all.filter(|w| now.duration_since(w.renewed) >= every)
            .map(|w| (w.claim.key.clone(), w.claim.fence))
            .collect()
    }

    /// Records the store's answers to renewing `claims` at `at`: a claim
    /// renewed is kept, one refused (taken back, cancelled) is dropped.
    pub(super) fn renewed(&self, claims: &[(String, u64)], kept: &[bool], at: Instant) {
        let mut inner = lock(&self.inner);
        let inner = &mut *inner;
        for ((key, fence), kept) in claims.iter().zip(kept) {
            for k in inner.keys.values_mut() {
                let found = k
                    .waiting
                    .iter()
                    .find(|(_, w)| w.claim.key == *key && w.claim.fence == *fence)
                    .map(|(pos, _)| pos.clone());
                let Some(pos) = found else { continue };
                if *kept {
                    k.waiting.get_mut(&pos).expect("found above").renewed = at;
                } else {
                    k.waiting.remove(&pos);
                    inner.len -= 1;
                }
                break;
            }
        }
        inner.keys.retain(|_, k| !k.waiting.is_empty());
    }

    /// Refuses further claims and takes every claim left (at shutdown).
    pub(super) fn close(&self) -> Vec<Claimed> {
        let mut inner = lock(&self.inner);
        inner.closed = true;
        inner.len = 0;
        let keys = std::mem::take(&mut inner.keys);
        keys.into_values()
            .flat_map(|k| k.waiting.into_values().map(|w| w.claim))
            .collect()
    }
}

/// Records a retry of `key` at `at` unless one as early is scheduled;
/// answers `at` when the caller must schedule it.
fn schedule(key: &mut Key, at: Instant) -> Option<Instant> {
    if key.retry.is_some_and(|r| r <= at) {
        return None;
    }
    key.retry = Some(at);
    Some(at)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn claim(key: &str, due: Millis, fence: u64) -> Claimed {
        Claimed::fresh(key, due, fence)
    }

    #[test]
    fn claims_wait_by_key_in_due_order_and_one_retry_is_scheduled() {
        let waits = FlowWaits::default();
        let now = Instant::now();
        let later = now + Duration::from_millis(30);
        assert_eq!(
            waits.wait(claim("b", 5, 1), "f", later, now).unwrap().0,
            Some(later)
        );
        assert_eq!(
            waits.wait(claim("a", 9, 2), "f", later, now).unwrap().0,
            None,
            "scheduled"
        );
        let sooner = now + Duration::from_millis(10);
        assert_eq!(
            waits.wait(claim("c", 1, 3), "f", sooner, now).unwrap().0,
            Some(sooner)
        );
        let far = now + Duration::from_secs(9);
        assert_eq!(
            waits.wait(claim("d", 1, 4), "g", far, now).unwrap().0,
            Some(now + RETRY_AT_MOST),
            "never longer than the cap"
        );
        assert_eq!(waits.len(), 4);
        let keys: Vec<String> = waits.take("f").into_iter().map(|c| c.key).collect();
        assert_eq!(keys, ["c", "b", "a"]);
        assert_eq!(waits.len(), 1);
        assert_eq!(waits.nudge("f", now), None, "nothing waits");
        assert_eq!(waits.nudge("g", now), Some(now));
    }

    #[test]
    fn past_the_most_per_key_the_latest_due_are_given_back_to_defer() {
        let waits = FlowWaits::default();
        let now = Instant::now();
        for i in 0..MOST_PER_KEY as u64 {
            let (_, over) = waits
                .wait(claim(&format!("k{i}"), 1, i + 10), "f", now, now)
                .unwrap();
            assert!(over.is_empty());
        }
        let (_, over) = waits.wait(claim("early", 1, 1), "f", now, now).unwrap();
        assert_eq!(over.len(), 1);
        assert_ne!(over[0].key, "early", "the latest due goes");
        assert_eq!(waits.len(), MOST_PER_KEY);
        assert!(waits.keep(over, "f", now).is_empty());
        assert_eq!(waits.len(), MOST_PER_KEY + 1, "kept beyond the most");
    }

    #[test]
    fn a_refused_renewal_drops_the_claim_and_close_gives_back_the_rest() {
        let waits = FlowWaits::default();
        let now = Instant::now();
        waits.wait(claim("a", 1, 1), "f", now, now).unwrap();
        waits.wait(claim("b", 2, 2), "f", now, now).unwrap();
        let later = now + Duration::from_secs(2);
        let due = waits.to_renew(Duration::from_secs(1), later);
        assert_eq!(due.len(), 2);
        let kept: Vec<bool> = due.iter().map(|(k, _)| k == "b").collect();
        waits.renewed(&due, &kept, later);
        assert_eq!(waits.len(), 1);
        assert!(waits.to_renew(Duration::from_secs(1), later).is_empty());
        let left: Vec<String> = waits.close().into_iter().map(|c| c.key).collect();
        assert_eq!(left, ["b"]);
        assert!(waits.wait(claim("c", 1, 3), "f", now, now).is_err());
    }
}
