//! A namespace split into partitions: one store per part, timers placed by
//! a hash of their key, every operation sent to the parts it concerns.
//!
//! On Redis each part's keys share one hash tag of their own
//! (`redis/route.rs`, `Part::tag`), so in a Redis Cluster the parts of one
//! namespace spread over the masters and so does the work of firing it.
//!
//! Placement: a timer lives in part `fnv1a(placement(key)) % count`. A
//! schedule's runs (`sched:<id>:<ms>`, `sched-trigger:<id>:<ms>`) are
//! placed by the schedule id, so a schedule and its runs share a part and
//! the steps that tie them stay atomic. The hash is FNV-1a, fixed here:
//! every process, of every version, must place a key in the same part.
//!
//! What each operation does:
//! - by key (`cancel`, `reschedule`, `get`, `ended`, `retry_dead`, a
//!   schedule's calls): the key's part only, as atomic as on one store;
//! - batches (`add`, `start_runs`, `renew`, `finish`, `release`, `defer`):
//!   split by part, one call per part, answers put back in order. Each
//!   part's share is atomic; the batch as a whole is not: when a part's
//!   call fails, the parts before it have stored their share and the
//!   caller sees the error (every such call is safe to repeat);
//! - `claim`: from the next part in turn, as many as it has, then the
//!   following parts while the batch has room; a busy namespace's batches
//!   each come from one part, so their starts and finishes stay one call
//!   each, and every part comes first once every `count` claims;
//! - listings (`list`, `dead_letters`, `list_schedules`, `unplanned`):
//!   the first `limit` of each part, merged in the listing's order, so one
//!   cursor (the last entry's position) pages through all of them;
//! - `counts`, `flows`: summed over the parts;
//! - `set_paused`: every part (a pause holds the whole namespace or the
//!   flow key everywhere);
//! - `set_limits`: refused ([`DurableError::Config`]) with limits to set.
//!   A flow key's rate, parallelism and breaker are checked atomically
//!   with each start; its timers lie in every part, so no one part could.
//!   Flows that need limits go in a namespace of their own, unpartitioned.
//!
//! Each part's store keeps its own clock reading (on Redis, its master's
//! `TIME`); a claim merged from several answers the earliest of their
//! clocks, so a node never believes a timer due before its own part does.
//!
//! Node state: none (below the node, above the parts).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::{
    BatchLimits, ClaimBatch, ClaimRequest, Counts, Due, EXPIRED_KEYS, Fenced, Finish, FlowOutcome,
    FlowsState, Limits, Listed, Memory, Millis, NewTimer, SchedAnswer, SchedOp, SchedRecord, Start,
    Store, StoreResult, Wake,
};
use crate::schedule::chain::Advance;
use crate::store::schedules::owner;
use crate::{AddMode, DeadLetter, DurableError, Listing, TimerInfo};

/// How soon the starts of a part whose call failed are tried again.
const RETRY_PART_MS: Millis = 100;

/// The most partitions a namespace may have.
pub(crate) const MAX_PARTITIONS: u32 = 256;

/// FNV-1a, 64 bits: small, fixed, and the same on every platform.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// What places `key`: its schedule's id for a schedule's run, else itself.
fn placement(key: &str) -> &str {
    owner(key).map_or(key, |(id, _, _)| id)
}

/// The part of `count` that holds timer `key`: its schedule's part for a
/// schedule's run.
pub(crate) fn part_of(key: &str, count: usize) -> usize {
    part_of_schedule(placement(key), count)
}

/// The part of `count` that holds schedule `id` and its runs. The id is
/// placed as it is: an id may itself look like a run key.
fn part_of_schedule(id: &str, count: usize) -> usize {
    let n = u64::try_from(count.max(1)).unwrap_or(u64::MAX);
    usize::try_from(fnv1a(id.as_bytes()) % n).unwrap_or(0)
}

/// A namespace over `parts`, each a store of its own.
pub(crate) struct Partitioned<S> {
    parts: Vec<S>,
    /// The part the next claim starts at.
    next: AtomicUsize,
}

impl<S: Store> Partitioned<S> {
    /// The namespace over these parts, in part order (at least one).
    pub(crate) fn new(parts: Vec<S>) -> Partitioned<S> {
        assert!(!parts.is_empty(), "a namespace has at least one part");
        Partitioned {
            parts,
            next: AtomicUsize::new(0),
        }
    }

    fn of(&self, key: &str) -> &S {
        &self.parts[part_of(key, self.parts.len())]
    }

    fn of_schedule(&self, id: &str) -> &S {
        &self.parts[part_of_schedule(id, self.parts.len())]
    }

    /// Splits `items` by the part `place(item, count)` names, calls `call` once per
    /// part that has some (with their positions), and puts the answers
    /// back in the items' order: `None` for the items of a part whose
    /// call failed, and the first such error. Every part is called, so a
    /// part that is down holds back none of the others.
    fn split_each<I, A: Clone>(
        &self,
        items: &[I],
        place: impl Fn(&I, usize) -> usize,
        mut call: impl FnMut(&S, &[usize]) -> StoreResult<Vec<A>>,
    ) -> (Vec<Option<A>>, Option<DurableError>) {
        let mut by_part: Vec<Vec<usize>> = vec![Vec::new(); self.parts.len()];
        for (i, item) in items.iter().enumerate() {
            by_part[place(item, self.parts.len())].push(i);
        }
        let mut answers: Vec<Option<A>> = vec![None; items.len()];
        let mut error = None;
        for (part, idx) in self.parts.iter().zip(&by_part) {
            if idx.is_empty() {
                continue;
            }
            match call(part, idx) {
                Ok(got) if got.len() == idx.len() => {
                    for (&i, a) in idx.iter().zip(got) {
                        answers[i] = Some(a);
                    }
                }
                Ok(_) => {
                    let short = DurableError::Store("a part answered a batch short".into());
                    error = error.or(Some(short));
                }
                Err(e) => error = error.or(Some(e)),
            }
        }
        (answers, error)
    }

    /// [`split_each`](Self::split_each), failing as a whole when a part
    /// failed (the other parts' shares are done: the call is safe to
    /// repeat).
    fn split<I, A: Clone>(
        &self,
        items: &[I],
        place: impl Fn(&I, usize) -> usize,
        call: impl FnMut(&S, &[usize]) -> StoreResult<Vec<A>>,
    ) -> StoreResult<Vec<A>> {
        match self.split_each(items, place, call) {
            (_, Some(e)) => Err(e),
            (answers, None) => Ok(answers.into_iter().flatten().collect()),
        }
    }

    /// The first `limit` entries of every part, merged by `order`.
    fn merged<T, K: Ord>(
        &self,
        limit: usize,
        each: impl Fn(&S) -> StoreResult<Vec<T>>,
        order: impl Fn(&T) -> K,
    ) -> StoreResult<Vec<T>> {
        let mut all = Vec::new();
        for part in &self.parts {
            all.extend(each(part)?);
        }
        all.sort_by_key(|t| order(t));
        all.truncate(limit);
        Ok(all)
    }
}

/// Picks the entries at `idx` out of `all`.
fn pick<T: Clone>(all: &[T], idx: &[usize]) -> Vec<T> {
    idx.iter().map(|&i| all[i].clone()).collect()
}

/// Picks the entries at `idx` out of `all`, or none when `all` is empty
/// (an optional per-entry list).
fn pick_opt<T: Clone>(all: &[T], idx: &[usize]) -> Vec<T> {
    if all.is_empty() {
        Vec::new()
    } else {
        pick(all, idx)
    }
}

/// Adds `b` (one part's claim) to `a` (the merge so far).
fn merge_claim(a: &mut ClaimBatch, b: ClaimBatch) {
    a.now = a.now.min(b.now);
    a.timers.extend(b.timers);
    a.next_due = min_opt(a.next_due, b.next_due);
    a.next_lease = min_opt(a.next_lease, b.next_lease);
    a.reclaimed += b.reclaimed;
    a.expired_dead += b.expired_dead;
    a.expired_keys.extend(b.expired_keys);
    a.expired_keys.truncate(EXPIRED_KEYS);
}

fn min_opt(a: Option<Millis>, b: Option<Millis>) -> Option<Millis> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Adds one part's flow-control state to the merge so far.
fn merge_flows(a: &mut FlowsState, b: FlowsState) {
    a.paused |= b.paused;
    a.defaults = a.defaults.take().or(b.defaults);
    for k in b.keys {
        match a.keys.binary_search_by(|e| e.key.cmp(&k.key)) {
            Ok(i) => {
                let e = &mut a.keys[i];
                e.paused |= k.paused;
                e.parked += k.parked;
                e.in_flight += k.in_flight;
                e.limits = e.limits.take().or(k.limits);
            }
            Err(i) => a.keys.insert(i, k),
        }
    }
}

impl<S: Store> Store for Partitioned<S> {
    fn add(&self, timers: &[NewTimer<'_>], mode: AddMode) -> StoreResult<Vec<bool>> {
        self.split(
            timers,
            |t, n| part_of(t.key, n),
            |p, idx| p.add(&pick(timers, idx), mode),
        )
    }

    fn cancel(&self, key: &str) -> StoreResult<bool> {
        self.of(key).cancel(key)
    }

    fn reschedule(&self, key: &str, due: Due) -> StoreResult<bool> {
        self.of(key).reschedule(key, due)
    }

    fn get(&self, key: &str) -> StoreResult<Option<TimerInfo>> {
        self.of(key).get(key)
    }

    fn ended(&self, key: &str) -> StoreResult<Option<Memory>> {
        self.of(key).ended(key)
    }

    fn set_dedup_window(&self, window: Millis) {
        self.parts.iter().for_each(|p| p.set_dedup_window(window));
    }

    fn claim(&self, req: &ClaimRequest) -> StoreResult<ClaimBatch> {
        let n = self.parts.len();
        let first = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut merged = ClaimBatch::empty(Millis::MAX);
        let (mut answered, mut failed) = (false, None);
        // From the next part in turn, as many as each has, moving on only
        // while the batch has room: a busy namespace's batch comes from one
        // part, so its starts and finishes are one call each, and every
        // part is first in turn once every `n` claims.
        for turn in 0..n {
            let left = req.max - merged.timers.len();
            if left == 0 && req.max > 0 && answered {
                break;
            }
            let part = &self.parts[(first + turn) % n];
            match part.claim(&ClaimRequest { max: left, ..*req }) {
                Ok(batch) => {
                    answered = true;
                    merge_claim(&mut merged, batch);
                }
                // A part that is down holds back only its own timers.
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        if let (false, Some(e)) = (answered, failed) {
            return Err(e);
        }
        merged
            .timers
            .sort_by(|a, b| (a.due, &a.key).cmp(&(b.due, &b.key)));
        Ok(merged)
    }

    fn start_runs(
        &self,
        claims: &[Fenced<'_>],
        advances: &[Option<Advance>],
        flows: &[&str],
        lease: Millis,
    ) -> StoreResult<Vec<Start>> {
        let (answers, error) = self.split_each(
            claims,
            |c, n| part_of(c.key, n),
            |p, idx| {
                let (a, f) = (pick_opt(advances, idx), pick_opt(flows, idx));
                p.start_runs(&pick(claims, idx), &a, &f, lease)
            },
        );
        let Some(error) = error else {
            return Ok(answers.into_iter().flatten().collect());
        };
        // The claims of a part that failed are tried again shortly, as not
        // yet due, by the clock of a part that answered; the others start.
        let Some(now) = answers.iter().flatten().find_map(Start::now) else {
            return Err(error);
        };
        let due = now.saturating_add(RETRY_PART_MS);
        Ok(answers
            .into_iter()
            .map(|a| a.unwrap_or(Start::NotYet { now, due }))
            .collect())
    }

    fn set_paused(&self, flow: Option<&str>, paused: bool) -> StoreResult<bool> {
        let mut changed = false;
        for p in &self.parts {
            changed |= p.set_paused(flow, paused)?;
        }
        Ok(changed)
    }

    fn defer(&self, claims: &[Fenced<'_>], flows: &[&str]) -> StoreResult<Vec<bool>> {
        self.split(
            claims,
            |c, n| part_of(c.key, n),
            |p, idx| p.defer(&pick(claims, idx), &pick(flows, idx)),
        )
    }

    fn set_limits(&self, flow: Option<&str>, limits: Option<&Limits>) -> StoreResult<()> {
        if limits.is_some() {
            return Err(DurableError::Config(
                "flow limits need an unpartitioned namespace: a partitioned one cannot check a \
                 flow key's limits atomically with each start"
                    .into(),
            ));
        }
        self.parts.iter().try_for_each(|p| p.set_limits(flow, None))
    }

    fn flows(&self) -> StoreResult<FlowsState> {
        let mut merged = self.parts[0].flows()?;
        for p in &self.parts[1..] {
            merge_flows(&mut merged, p.flows()?);
        }
        Ok(merged)
    }

    fn schedules(&self, ids: &[&str]) -> StoreResult<(Millis, Vec<Option<SchedRecord>>)> {
        if ids.is_empty() {
            return self.parts[0].schedules(ids);
        }
        let mut now = Millis::MAX;
        let records = self.split(
            ids,
            |id, n| part_of_schedule(id, n),
            |p, idx| {
                let (t, r) = p.schedules(&pick(ids, idx))?;
                now = now.min(t);
                Ok(r)
            },
        )?;
        Ok((now, records))
    }

    fn schedules_to_start(
        &self,
        runs: &[(&str, &str)],
    ) -> StoreResult<(Millis, Vec<Option<SchedRecord>>)> {
        if runs.is_empty() {
            return self.parts[0].schedules(&[]);
        }
        let mut now = Millis::MAX;
        let records = self.split(
            runs,
            |r, n| part_of_schedule(r.1, n),
            |p, idx| {
                let (t, r) = p.schedules_to_start(&pick(runs, idx))?;
                now = now.min(t);
                Ok(r)
            },
        )?;
        Ok((now, records))
    }

    fn schedule_write(&self, id: &str, op: &SchedOp) -> StoreResult<SchedAnswer> {
        self.of_schedule(id).schedule_write(id, op)
    }

    fn list_schedules(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, SchedRecord)>> {
        self.merged(
            limit,
            |p| p.list_schedules(after, limit),
            |(id, _)| id.clone(),
        )
    }

    fn unplanned(&self, limit: usize) -> StoreResult<Vec<String>> {
        self.merged(limit, |p| p.unplanned(limit), Clone::clone)
    }

    fn renew(&self, held: &[Fenced<'_>], lease: Millis) -> StoreResult<Vec<bool>> {
        self.split(
            held,
            |c, n| part_of(c.key, n),
            |p, idx| p.renew(&pick(held, idx), lease),
        )
    }

    fn finish(
        &self,
        runs: &[(Fenced<'_>, Finish)],
        flows: &[FlowOutcome<'_>],
    ) -> StoreResult<Vec<bool>> {
        self.split(
            runs,
            |r, n| part_of(r.0.key, n),
            |p, idx| p.finish(&pick(runs, idx), &pick_opt(flows, idx)),
        )
    }

    fn release(&self, claims: &[Fenced<'_>]) -> StoreResult<Vec<bool>> {
        self.split(
            claims,
            |c, n| part_of(c.key, n),
            |p, idx| p.release(&pick(claims, idx)),
        )
    }

    fn dead_letters(&self, limit: usize) -> StoreResult<Vec<DeadLetter>> {
        self.merged(
            limit,
            |p| p.dead_letters(limit),
            |d| (d.failed_at, d.key.clone()),
        )
    }

    fn retry_dead(&self, key: &str, due: Due) -> StoreResult<bool> {
        self.of(key).retry_dead(key, due)
    }

    fn list(
        &self,
        which: Listing,
        after: Option<(Millis, &str)>,
        limit: usize,
    ) -> StoreResult<Vec<Listed>> {
        self.merged(
            limit,
            |p| p.list(which, after, limit),
            |l| (l.score, l.info.key.clone()),
        )
    }

    fn counts(&self) -> StoreResult<Counts> {
        let mut c = self.parts[0].counts()?;
        for p in &self.parts[1..] {
            let d = p.counts()?;
            c.now = c.now.min(d.now);
            c.pending += d.pending;
            c.claimed += d.claimed;
            c.dead += d.dead;
            c.parked += d.parked;
            c.next_due = min_opt(c.next_due, d.next_due);
        }
        Ok(c)
    }

    fn watch(&self, wake: Wake) -> StoreResult<()> {
        // Every part announces on the namespace's one channel (Redis) or
        // calls the wake-up it was given: one watcher serves them all
        // where they share a channel, each part its own otherwise.
        if self.parts[0].shares_wake_channel() {
            return self.parts[0].watch(wake);
        }
        self.parts.iter().try_for_each(|p| p.watch(wake.clone()))
    }

    fn close(&self) -> StoreResult<()> {
        let mut first = Ok(());
        for p in &self.parts {
            if let Err(e) = p.close() {
                first = first.and(Err(e));
            }
        }
        first
    }

    fn reachable(&self) -> bool {
        self.parts.iter().all(Store::reachable)
    }

    fn batch_limits(&self) -> BatchLimits {
        self.parts[0].batch_limits()
    }
}

#[cfg(test)]
#[path = "partitioned_tests.rs"]
mod tests;
