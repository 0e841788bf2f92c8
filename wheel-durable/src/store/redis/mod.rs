//! The Redis store: timers shared by any number of processes.
//!
//! Layout (every key carries the hash tag `{ns}`, so a namespace lives on
//! one shard of a Redis Cluster): `{ns}:t` hash key → timer record,
//! `{ns}:due` sorted set of pending keys by due time, `{ns}:lease` sorted
//! set of claimed and running keys by lease end, `{ns}:dead` hash key →
//! dead letter, `{ns}:deadq` sorted set of dead keys by failure time,
//! `{ns}:fence` the fence counter, `{ns}:ended` hash key → the dedup
//! window's memory and `{ns}:endedq` sorted set of remembered keys by
//! expiry (see `prelude.lua`), `{ns}:parts` the namespace's partition
//! count, and the channel `{ns}:wake`. A part of a namespace split into
//! partitions (`store/partitioned.rs`) has the same keys under its own tag
//! (`route.rs`, `Part::tag`) and publishes on the namespace's channel.
//!
//! Where the keys live, one server or the master of their slot in a
//! Redis Cluster, is `route.rs`'s: it follows reshards and failovers.
//!
//! Flow control keeps its own keys (`flows.rs`).
//!
//! Every operation is one Lua body (`*.lua` beside this file, run after
//! `prelude.lua`), so it is atomic and reads the clock once, with `TIME`,
//! on the server. The bodies are the functions of one library, loaded
//! when the store opens and called by `FCALL`, or on servers without
//! functions the same bodies as scripts called by `EVALSHA` (`scripts.rs`
//! builds both, `call.rs` chooses and reloads what the server lost). Each
//! touches only the keys of the timers it names and O(log n) entries of
//! the sorted sets (a listing page: O(log n) to find where it resumes,
//! then its entries); nothing runs `KEYS` or `SCAN`.
//! Concurrent callers' single adds, cancels and reschedules are combined
//! (`combine.rs`, `round.rs`): one call per kind for all of them, one
//! pipeline, one round trip.
//!
//! Connections come from a small pool. A call that fails because the
//! server is unreachable, restarting or still loading its data is retried
//! on a new connection with back-off until `unavailable_after` has passed,
//! then reported as [`DurableError::Unavailable`].
//!
//! Node state: none: the store is below the node. It owns its connection pool
//! and the subscriber thread (`watch.rs`).

mod budget;
mod call;
mod claimed_schedules;
mod combine;
mod flows;
mod replication;
mod round;
mod route;
mod schedules;
mod scripts;
mod watch;
mod wire;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redis::{Connection, RedisError, RedisResult, RetryMethod, Value};

pub(crate) use self::call::Mode;
use self::call::{Call, load_library};
use self::claimed_schedules::ClaimedSchedules;
use self::combine::Combiner;
pub(crate) use self::replication::Replicas;
use self::round::{Answer, COMBINED_ADD, ROUND_CAP, ROUND_LANES, Single};
pub(crate) use self::route::{Part, Servers};
use self::route::{Route, moved};
use self::schedules::encode_advance;
use self::scripts::{Op, Scripts};
use self::wire::{bytes, claim_batch, due_args, fenced_args, int, listed, millis};
use super::health::Health;
use super::record::DeadRecord;
use super::schedules::{SchedAnswer, SchedOp, SchedRecord};
use super::{
    BatchLimits, ClaimBatch, ClaimRequest, Counts, Due, EXPIRED_KEYS, Fenced, Finish, FlowOutcome,
    FlowsState, Limits, Listed, Memory, Millis, NewTimer, Start, Store, StoreClock, StoreResult,
    UNPARK_BATCH, Wake,
};
use crate::schedule::chain::Advance;
use crate::sync::lock;
use crate::time::{Backoff, system_time_of};
use crate::{AddMode, DeadLetter, DurableError, EndedHow, ErrorDetail, Listing, TimerInfo};

/// Expired leases taken back by one claim at most.
const EXPIRED_PER_CLAIM: usize = 10_000;

/// The longest a reply may take before the connection counts as broken.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// How to reach the server and run there.
pub(crate) struct Options {
    pub(crate) servers: Servers,
    pub(crate) namespace: String,
    /// Which part of the namespace this store holds (`route.rs`).
    pub(crate) part: Part,
    pub(crate) clock: StoreClock,
    /// A timer that becomes pending this close to now is announced.
    pub(crate) window: Millis,
    pub(crate) unavailable_after: Duration,
    /// Set: each write waits for these replicas (`replication.rs`).
    pub(crate) replicas: Option<Replicas>,
}

/// The Redis store.
pub(crate) struct RedisStore {
    route: Arc<Route>,
    /// Idle connections, each with the route epoch it was made at.
    pool: Mutex<Vec<(u64, Connection)>>,
    keys: [String; 21],
    channel: String,
    scripts: Scripts,
    /// How calls reach the server, chosen at open (`call.rs`).
    mode: Mode,
    options: Options,
    closed: Arc<AtomicBool>,
    watcher: Mutex<Option<JoinHandle<()>>>,
    health: Health,
    claimed_schedules: ClaimedSchedules,
    /// The dedup window in ms, passed to the scripts that end timers.
    dedup: AtomicU64,
    /// Concurrent single adds, cancels and reschedules, sent in rounds.
    combiner: Combiner<Single, Answer>,
}

/// Whether a failed call may succeed on a new connection after a wait.
fn transient(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_unrecoverable_error()
        || matches!(
            e.retry_method(),
            RetryMethod::WaitAndRetry | RetryMethod::RetryImmediately
        )
}

/// The error of a call the server refused. A redirect reaching a store
/// that was not told of a cluster says which option it needs.
fn answered(e: RedisError) -> DurableError {
    let what = if moved(&e)
        && e.kind() != redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
    {
        "the server is a Redis Cluster node that does not hold this namespace: name the cluster's nodes (redis_cluster), not one node"
    } else {
        "the server answered with an error"
    };
    DurableError::Store(ErrorDetail::new(what).with_source(e))
}

/// `SET key count NX`, then the key's value: the count it was marked with.
/// A read-only replica marks nothing; it answers the mark it holds.
fn mark_parts(c: &mut Connection, key: &str, count: u32) -> RedisResult<Option<u32>> {
    let marked: Option<u32> = redis::cmd("GET").arg(key).query(c)?;
    if marked.is_some() {
        return Ok(marked);
    }
    let set = redis::cmd("SET")
        .arg(key)
        .arg(count)
        .arg("NX")
        .query::<()>(c);
    match set {
        Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly) => {
            Ok(None)
        }
        Err(e) => Err(e),
        Ok(()) => redis::cmd("GET").arg(key).query(c),
    }
}

fn bad_reply(what: &str) -> DurableError {
    DurableError::Store(format!("unexpected reply to {what}").into())
}

impl RedisStore {
    /// Connects (within `unavailable_after`), checks that the server
    /// answers and loads the function library, or chooses the scripts
    /// where the server has no functions (`call.rs`).
    pub(crate) fn open(options: Options) -> StoreResult<RedisStore> {
        RedisStore::open_in(options, None)
    }

    /// A store that calls by `EVALSHA` whatever the server offers: the
    /// tests run the scripts on a server that has functions too.
    #[cfg(test)]
    pub(crate) fn open_scripts(options: Options) -> StoreResult<RedisStore> {
        RedisStore::open_in(options, Some(Mode::Scripts))
    }

    /// How this store's calls reach the server.
    #[cfg(test)]
    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    fn open_in(options: Options, forced: Option<Mode>) -> StoreResult<RedisStore> {
        let ns = options.namespace.clone();
        let tag = options.part.tag(&ns);
        let route = Arc::new(Route::new(&options.servers, &tag)?);
        let keys = [
            "t", "due", "lease", "dead", "deadq", "fence", "s", "sids", "splan", "ended", "endedq",
            "paused", "parked", "pflow", "pflows", "wakeups", "limits", "tat", "breakers",
            "inflight", "permits",
        ]
        .map(|k| format!("{{{tag}}}:{k}"));
        let health = Health::new(&tag);
        let mut store = RedisStore {
            route,
            pool: Mutex::new(Vec::new()),
            keys,
            // Every part publishes on the namespace's one channel: a node
            // listens once for all of them.
            channel: format!("{{{ns}}}:wake"),
            scripts: Scripts::new(),
            mode: Mode::Scripts,
            options,
            closed: Arc::new(AtomicBool::new(false)),
            watcher: Mutex::new(None),
            health,
            claimed_schedules: ClaimedSchedules::default(),
            dedup: AtomicU64::new(0),
            combiner: Combiner::new(ROUND_CAP, ROUND_LANES),
        };
        store.with_conn(|c| redis::cmd("PING").query::<String>(c))?;
        let count = store.options.part.count;
        store.check_parts(&format!("{{{tag}}}:parts"), count)?;
        if count > 1 && store.options.part.index == 0 {
            // The undivided namespace's own mark, so that a node opening
            // it whole later is refused too.
            let whole = format!("{{{ns}}}:parts");
            let route = Route::new(&store.options.servers, &ns)?;
            store.check_parts_on(&route, &whole, count)?;
        }
        store.mode = match forced {
            Some(mode) => mode,
            None => store.with_conn(|c| load_library(c, &store.scripts))?,
        };
        Ok(store)
    }

    /// Marks `key` with the namespace's partition count unless marked,
    /// and refuses a count other than the mark's: timers placed by one
    /// count are not where another would look for them.
    fn check_parts(&self, key: &str, count: u32) -> StoreResult<()> {
        let marked = self.with_conn(|c| mark_parts(c, key, count))?;
        self.judge_parts(marked, count)
    }

    /// [`check_parts`](Self::check_parts) at another route's node (the
    /// undivided namespace's slot), on one connection.
    fn check_parts_on(&self, route: &Route, key: &str, count: u32) -> StoreResult<()> {
        let marked = route
            .client()
            .and_then(|(_, client)| client.get_connection_with_timeout(IO_TIMEOUT))
            .and_then(|mut c| mark_parts(&mut c, key, count))
            .map_err(|e| {
                let detail = ErrorDetail::new("cannot mark the namespace's partition count");
                DurableError::Unavailable(detail.with_source(e))
            })?;
        self.judge_parts(marked, count)
    }

    fn judge_parts(&self, marked: Option<u32>, count: u32) -> StoreResult<()> {
        match marked {
            Some(m) if m != count => Err(DurableError::Config(format!(
                "namespace {:?} is split in {m} partitions, not {count}",
                self.options.namespace
            ))),
            _ => Ok(()),
        }
    }

    fn connect(&self, budget: Duration) -> RedisResult<(u64, Connection)> {
        let (epoch, client) = self.route.client()?;
        let c = client
            .get_connection_with_timeout(budget.clamp(Duration::from_millis(50), IO_TIMEOUT))?;
        // A `WAIT` may take its whole timeout before the reply comes.
        let wait = self.options.replicas.map_or(Duration::ZERO, |r| r.timeout);
        c.set_read_timeout(Some(IO_TIMEOUT.saturating_add(wait)))?;
        c.set_write_timeout(Some(IO_TIMEOUT))?;
        Ok((epoch, c))
    }

    /// A pooled connection of the route's current epoch, or a new one.
    fn checkout(&self, deadline: Instant) -> RedisResult<(u64, Connection)> {
        let epoch = self.route.epoch();
        loop {
            let pooled = lock(&self.pool).pop();
            match pooled {
                Some((e, c)) if e == epoch => return Ok((e, c)),
                Some(_) => {} // made for a master the route has left
                None => return self.connect(deadline.saturating_duration_since(Instant::now())),
            }
        }
    }

    /// Whether a call that failed with `e` may succeed if tried again: a
    /// transient failure, or in a cluster a change of the cluster
    /// (`route.rs`).
    pub(super) fn retryable(&self, e: &RedisError) -> bool {
        transient(e) || self.route.is_cluster() && moved(e)
    }

    /// Runs `f` on a pooled connection, retrying transient failures (and,
    /// in a cluster, calls that met a change of the cluster: `route.rs`)
    /// with back-off until `unavailable_after` has passed.
    fn with_conn<T>(&self, mut f: impl FnMut(&mut Connection) -> RedisResult<T>) -> StoreResult<T> {
        let deadline = Instant::now() + self.options.unavailable_after;
        let mut backoff = Backoff::new(Duration::from_millis(10), Duration::from_millis(500));
        loop {
            if self.closed.load(Ordering::SeqCst) {
                return Err(DurableError::Closed);
            }
            let error = match self.checkout(deadline) {
                Err(e) => e,
                Ok((epoch, mut c)) => match f(&mut c) {
                    Ok(v) => {
                        self.health.reached();
                        lock(&self.pool).push((epoch, c));
                        return Ok(v);
                    }
                    Err(e) if self.retryable(&e) => {
                        self.route.stale(epoch);
                        e // the connection is dropped
                    }
                    Err(e) => {
                        self.health.reached(); // it answered, with an error
                        lock(&self.pool).push((epoch, c));
                        return Err(answered(e));
                    }
                },
            };
            self.health.failed(&error);
            if !self.retryable(&error) {
                let detail = ErrorDetail::new("cannot connect");
                return Err(DurableError::Unavailable(detail.with_source(error)));
            }
            // The last wait ends at the deadline and one more try follows
            // it: a call reports `Unavailable` once the store has failed
            // for the whole `unavailable_after`, not a back-off step early.
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let detail = ErrorDetail::new(format!(
                    "still failing after {:?}",
                    self.options.unavailable_after
                ));
                return Err(DurableError::Unavailable(detail.with_source(error)));
            }
            std::thread::sleep(backoff.next().min(left));
        }
    }

    /// A call of `op` with the keys and the common arguments.
    fn invocation<'a>(&self, op: &'a Op) -> Call<'a> {
        let mut call = Call::new(op, self.mode, &self.keys);
        let clock = self
            .options
            .clock
            .manual()
            .map_or(String::new(), |ms| ms.to_string());
        call.arg(clock).arg(self.options.window).arg(&self.channel);
        call
    }

    fn run<T: redis::FromRedisValue>(
        &self,
        op: &Op,
        args: impl Fn(&mut Call<'_>),
    ) -> StoreResult<T> {
        let wait = Replicas::for_op(self.options.replicas, op);
        self.with_conn(|c| {
            let mut call = self.invocation(op);
            args(&mut call);
            call.invoke(c, &self.scripts, wait)
        })?
        .checked()
    }

    fn flag(&self, op: &Op, args: impl Fn(&mut Call<'_>)) -> StoreResult<bool> {
        self.run::<i64>(op, args).map(|n| n == 1)
    }

    /// A batch script's answer: one 0 or 1 for each of its `n` entries.
    fn flags(&self, op: &Op, n: usize, args: impl Fn(&mut Call<'_>)) -> StoreResult<Vec<bool>> {
        let reply: Vec<i64> = self.run(op, args)?;
        if reply.len() != n {
            return Err(bad_reply("a batch"));
        }
        Ok(reply.into_iter().map(|v| v == 1).collect())
    }
}

impl Store for RedisStore {
    fn add(&self, timers: &[NewTimer<'_>], mode: AddMode) -> StoreResult<Vec<bool>> {
        if timers.is_empty() {
            return Ok(Vec::new());
        }
        if timers.len() <= COMBINED_ADD {
            return self.combiner.call(self, Single::add(timers, mode));
        }
        self.flags(&self.scripts.add, timers.len(), |inv| {
            inv.arg(match mode {
                AddMode::Replace => "r",
                AddMode::IfAbsent => "i",
            });
            for t in timers {
                inv.arg(t.key);
                due_args(inv, t.due);
                inv.arg(t.payload);
            }
        })
    }

    fn cancel(&self, key: &str) -> StoreResult<bool> {
        let flags = self.combiner.call(self, Single::Cancel(key.to_owned()))?;
        flags.first().copied().ok_or_else(|| bad_reply("cancel"))
    }

    fn reschedule(&self, key: &str, due: Due) -> StoreResult<bool> {
        let flags = self
            .combiner
            .call(self, Single::Reschedule(key.to_owned(), due))?;
        flags
            .first()
            .copied()
            .ok_or_else(|| bad_reply("reschedule"))
    }

    fn get(&self, key: &str) -> StoreResult<Option<TimerInfo>> {
        let reply: Vec<Value> = self.run(&self.scripts.get, |inv| {
            inv.arg(key);
        })?;
        let parsed = match reply.as_slice() {
            [kind] if int(kind) == Some(0) => Some(None),
            [kind, rec] if int(kind) == Some(1) => listed(key, rec, false).map(|l| Some(l.info)),
            [kind, rec] if int(kind) == Some(2) => listed(key, rec, true).map(|l| Some(l.info)),
            _ => None,
        };
        parsed.ok_or_else(|| bad_reply("get"))
    }

    fn ended(&self, key: &str) -> StoreResult<Option<Memory>> {
        let reply: Vec<i64> = self.run(&self.scripts.ended, |inv| {
            inv.arg(key);
        })?;
        match reply.as_slice() {
            [] => Ok(None),
            &[how, at, expires] => {
                let how = u8::try_from(how).ok().and_then(EndedHow::from_code);
                let (at, expires) = (Millis::try_from(at).ok(), Millis::try_from(expires).ok());
                let (Some(how), Some(at), Some(expires)) = (how, at, expires) else {
                    return Err(bad_reply("ended"));
                };
                Ok(Some(Memory { how, at, expires }))
            }
            _ => Err(bad_reply("ended")),
        }
    }

    fn set_dedup_window(&self, window: Millis) {
        self.dedup.store(window, Ordering::Relaxed);
    }

    fn claim(&self, req: &ClaimRequest) -> StoreResult<ClaimBatch> {
        let reply: Vec<Value> = self.run(&self.scripts.claim, |inv| {
            inv.arg(req.window)
                .arg(req.lease)
                .arg(req.max)
                .arg(req.max_attempts)
                .arg(EXPIRED_PER_CLAIM)
                .arg(EXPIRED_KEYS)
                .arg(UNPARK_BATCH);
        })?;
        let (batch, records) = claim_batch(&reply).ok_or_else(|| bad_reply("claim"))?;
        self.claimed_schedules.keep(batch.now, records);
        Ok(batch)
    }

    fn set_paused(&self, flow: Option<&str>, paused: bool) -> StoreResult<bool> {
        self.set_flow_paused(flow, paused)
    }

    fn flows(&self) -> StoreResult<FlowsState> {
        self.read_flows()
    }

    fn start_runs(
        &self,
        claims: &[Fenced<'_>],
        advances: &[Option<Advance>],
        flows: &[&str],
        lease: Millis,
    ) -> StoreResult<Vec<Start>> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let steps: Vec<Vec<u8>> = (0..claims.len())
            .map(|i| {
                advances
                    .get(i)
                    .and_then(Option::as_ref)
                    .map_or_else(Vec::new, encode_advance)
            })
            .collect();
        let reply: Vec<i64> = self.run(&self.scripts.start, |inv| {
            inv.arg(lease);
            for (i, (f, step)) in claims.iter().zip(&steps).enumerate() {
                let flow = flows.get(i).copied().unwrap_or("");
                inv.arg(f.key).arg(f.fence).arg(step.as_slice()).arg(flow);
            }
        })?;
        flows::starts(&reply, claims.len()).ok_or_else(|| bad_reply("start"))
    }

    fn renew(&self, held: &[Fenced<'_>], lease: Millis) -> StoreResult<Vec<bool>> {
        if held.is_empty() {
            return Ok(Vec::new());
        }
        self.flags(&self.scripts.renew, held.len(), |inv| {
            inv.arg(lease);
            fenced_args(inv, held);
        })
    }

    fn defer(&self, claims: &[Fenced<'_>], flows: &[&str]) -> StoreResult<Vec<bool>> {
        self.defer_claims(claims, flows)
    }

    fn set_limits(&self, flow: Option<&str>, limits: Option<&Limits>) -> StoreResult<()> {
        self.write_limits(flow, limits)
    }

    fn finish(
        &self,
        runs: &[(Fenced<'_>, Finish)],
        flows: &[FlowOutcome<'_>],
    ) -> StoreResult<Vec<bool>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        self.flags(&self.scripts.finish, runs.len(), |inv| {
            inv.arg(self.dedup.load(Ordering::Relaxed));
            for (i, (run, how)) in runs.iter().enumerate() {
                inv.arg(run.key).arg(run.fence);
                match how {
                    Finish::Done => inv.arg("done").arg(0),
                    Finish::Retry { delay } => inv.arg("retry").arg(*delay),
                    Finish::Dead { reason } => inv.arg("dead").arg(reason.as_str()),
                };
                flows::outcome_args(inv, flows.get(i));
            }
        })
    }

    fn release(&self, claims: &[Fenced<'_>]) -> StoreResult<Vec<bool>> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        self.flags(&self.scripts.release, claims.len(), |inv| {
            fenced_args(inv, claims);
        })
    }

    fn dead_letters(&self, limit: usize) -> StoreResult<Vec<DeadLetter>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let last = i64::try_from(limit - 1).unwrap_or(-1);
        let reply: Vec<Value> = self.run(&self.scripts.dead_letters, |inv| {
            inv.arg(last);
        })?;
        let parse = |pair: &[Value]| {
            let key = String::from_utf8(bytes(&pair[0])?).ok()?;
            let d = DeadRecord::decode(&bytes(&pair[1])?)?;
            Some(DeadLetter {
                key,
                payload: d.payload,
                attempts: d.attempts,
                reason: d.reason,
                failed_at: system_time_of(d.failed_at),
            })
        };
        reply
            .chunks(2)
            .map(|pair| parse(pair).ok_or_else(|| bad_reply("dead_letters")))
            .collect()
    }

    fn retry_dead(&self, key: &str, due: Due) -> StoreResult<bool> {
        self.flag(&self.scripts.retry_dead, |inv| {
            inv.arg(key);
            due_args(inv, due);
        })
    }

    fn list(
        &self,
        which: Listing,
        after: Option<(Millis, &str)>,
        limit: usize,
    ) -> StoreResult<Vec<Listed>> {
        let reply: Vec<Value> = self.run(&self.scripts.list, |inv| {
            inv.arg(match which {
                Listing::Pending => "d",
                Listing::Claimed => "l",
                Listing::Dead => "q",
                Listing::Parked => "k",
            });
            match after {
                Some((score, key)) => inv.arg(score).arg(key),
                None => inv.arg("").arg(""),
            };
            inv.arg(limit);
        })?;
        let dead = which == Listing::Dead;
        let parse = |pair: &[Value]| {
            let key = String::from_utf8(bytes(pair.first()?)?).ok()?;
            listed(&key, pair.get(1)?, dead)
        };
        reply
            .chunks(2)
            .map(|pair| parse(pair).ok_or_else(|| bad_reply("list")))
            .collect()
    }

    fn counts(&self) -> StoreResult<Counts> {
        let reply: Vec<i64> = self.run(&self.scripts.counts, |_| {})?;
        let n = |v: i64| u64::try_from(v).ok();
        match reply.as_slice() {
            [now, pending, claimed, dead, next, parked] => Some(Counts {
                parked: n(*parked).unwrap_or(0),
                now: n(*now).ok_or_else(|| bad_reply("counts"))?,
                pending: n(*pending).unwrap_or(0),
                claimed: n(*claimed).unwrap_or(0),
                dead: n(*dead).unwrap_or(0),
                next_due: n(*next),
            }),
            _ => None,
        }
        .ok_or_else(|| bad_reply("counts"))
    }

    fn schedules(&self, ids: &[&str]) -> StoreResult<(Millis, Vec<Option<SchedRecord>>)> {
        self.read_schedules(ids)
    }

    fn schedules_to_start(
        &self,
        runs: &[(&str, &str)],
    ) -> StoreResult<(Millis, Vec<Option<SchedRecord>>)> {
        self.records_to_start(runs)
    }

    fn schedule_write(&self, id: &str, op: &SchedOp) -> StoreResult<SchedAnswer> {
        self.write_schedule(id, op)
    }

    fn list_schedules(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, SchedRecord)>> {
        self.list_schedule_records(after, limit)
    }

    fn unplanned(&self, limit: usize) -> StoreResult<Vec<String>> {
        self.unplanned_ids(limit)
    }

    fn watch(&self, wake: Wake) -> StoreResult<()> {
        let watcher = watch::Watcher {
            route: self.route.clone(),
            channel: self.channel.clone(),
            closed: self.closed.clone(),
            wake,
        };
        let thread = std::thread::Builder::new()
            .name("wheel-durable-watch".into())
            .spawn(move || watcher.run())
            .map_err(|e| {
                DurableError::Io(ErrorDetail::new("cannot start the watcher").with_source(e))
            })?;
        *lock(&self.watcher) = Some(thread);
        Ok(())
    }

    fn reachable(&self) -> bool {
        self.health.reachable()
    }

    fn batch_limits(&self) -> BatchLimits {
        budget::LIMITS
    }

    fn shares_wake_channel(&self) -> bool {
        true
    }

    fn close(&self) -> StoreResult<()> {
        self.closed.store(true, Ordering::SeqCst);
        if let Some(t) = lock(&self.watcher).take() {
            t.thread().unpark();
            let _ = t.join();
        }
        lock(&self.pool).clear();
        Ok(())
    }
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
mod call_tests;
#[cfg(test)]
mod combine_tests;
#[cfg(test)]
mod flow_tests;
#[cfg(test)]
pub(crate) mod tests;
