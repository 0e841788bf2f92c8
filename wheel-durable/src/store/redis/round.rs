//! One round of combined single calls (`combine.rs`) on Redis: the
//! round's adds of one mode go to the server as one call of the `add`
//! operation (`FCALL` of its function, or `EVALSHA` of its script: the
//! store's [`Mode`](super::Mode)), its cancels as one `cancel` call and its
//! reschedules as one `reschedule` call, and those calls travel in one
//! pipeline, one round trip.
//!
//! Invariants: each request gets the flags of its own entries, in order,
//! or its own error. A call that fails as a whole for a group of
//! several requests is run again once per request, so that one request's
//! bad entry fails only that request. A group answered once is never sent
//! again: after a transient failure (the connection broke, the server is
//! loading) only the unanswered groups are retried, on a new connection,
//! under `with_conn`'s deadline; a group whose function or script the
//! server lost ("Function not found", `NOSCRIPT`) is sent again, once,
//! after loading it (the library once for all such groups).
//!
//! Node state: none: it is below the node.

use std::sync::atomic::Ordering;
use std::time::Duration;

use redis::{FromRedisValue, RedisResult, Value};

use super::call::Call;
use super::combine::Rounds;
use super::replication;
use super::{RedisStore, bad_reply, due_args};
use crate::store::{Due, NewTimer, StoreResult};
use crate::{AddMode, DurableError, ErrorDetail};

/// Requests in one round at most.
pub(super) const ROUND_CAP: usize = 512;

/// Rounds in flight at once at most: while one travels, the next forms
/// and goes, so the server does not idle while a leader wakes the next.
pub(super) const ROUND_LANES: usize = 2;

/// An add of at most this many timers joins a round; a larger one is
/// sent alone (it is a batch already, and copying it would cost more than
/// it saves).
pub(super) const COMBINED_ADD: usize = 64;

/// A timer of an add, owned so that a round's leader can send it.
pub(crate) struct Timer {
    key: String,
    due: Due,
    payload: Vec<u8>,
}

/// One caller's call.
pub(crate) enum Single {
    Add(AddMode, Vec<Timer>),
    Cancel(String),
    Reschedule(String, Due),
}

impl Single {
    pub(super) fn add(timers: &[NewTimer<'_>], mode: AddMode) -> Single {
        let own = |t: &NewTimer<'_>| Timer {
            key: t.key.to_owned(),
            due: t.due,
            payload: t.payload.to_vec(),
        };
        Single::Add(mode, timers.iter().map(own).collect())
    }

    /// Which call of a round carries it.
    fn group(&self) -> usize {
        match self {
            Single::Add(AddMode::Replace, _) => 0,
            Single::Add(AddMode::IfAbsent, _) => 1,
            Single::Cancel(_) => 2,
            Single::Reschedule(..) => 3,
        }
    }

    fn entries(&self) -> usize {
        match self {
            Single::Add(_, ts) => ts.len(),
            Single::Cancel(_) | Single::Reschedule(..) => 1,
        }
    }
}

/// Each request's answer: the flags of its entries.
pub(crate) type Answer = StoreResult<Vec<bool>>;

/// The requests (indexes into the round) that one call carries.
type Group = Vec<usize>;

impl Rounds for RedisStore {
    type Req = Single;
    type Ans = Answer;

    fn round(&self, reqs: Vec<Single>) -> Vec<Answer> {
        let mut groups: Vec<Group> = vec![Vec::new(); 4];
        for (i, r) in reqs.iter().enumerate() {
            groups[r.group()].push(i);
        }
        groups.retain(|g| !g.is_empty());
        let mut answers: Vec<Option<Answer>> = reqs.iter().map(|_| None).collect();
        let mut alone = Vec::new();
        match self.send(&reqs, &groups) {
            Err(e) => return reqs.iter().map(|_| Err(e.clone())).collect(),
            Ok(replies) => {
                for (g, (reply, refused)) in groups.iter().zip(replies) {
                    if refused && g.len() > 1 {
                        alone.extend(g);
                    } else {
                        split(&reqs, g, reply, &mut answers);
                    }
                }
            }
        }
        if !alone.is_empty() {
            let singles: Vec<Group> = alone.iter().map(|&i| vec![i]).collect();
            match self.send(&reqs, &singles) {
                Err(e) => alone
                    .iter()
                    .for_each(|&i| answers[i] = Some(Err(e.clone()))),
                Ok(replies) => {
                    for (g, (reply, _)) in singles.iter().zip(replies) {
                        split(&reqs, g, reply, &mut answers);
                    }
                }
            }
        }
        answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(bad_reply("a combined call"))))
            .collect()
    }

    fn expired(&self, last: &Answer, waited: Duration) -> Option<Answer> {
        match last {
            Err(DurableError::Closed) => Some(Err(DurableError::Closed)),
            Err(e @ DurableError::Unavailable(_)) if waited >= self.options.unavailable_after => {
                Some(Err(e.clone()))
            }
            _ => None,
        }
    }

    fn abandoned(&self) -> Answer {
        let detail = ErrorDetail::new("the combined call carrying this one panicked");
        Err(DurableError::Store(detail))
    }
}

/// Hands each request of group `g` its own slice of the group's `reply`.
fn split(reqs: &[Single], g: &Group, reply: Answer, answers: &mut [Option<Answer>]) {
    let mut flags = match reply {
        Ok(flags) => flags.into_iter(),
        Err(e) => {
            g.iter().for_each(|&i| answers[i] = Some(Err(e.clone())));
            return;
        }
    };
    for &i in g {
        answers[i] = Some(Ok(flags.by_ref().take(reqs[i].entries()).collect()));
    }
}

impl RedisStore {
    /// Sends one call (`FCALL` or `EVALSHA`) per group in one pipeline; the outer error
    /// is `with_conn`'s (the store is unavailable or closed), each inner
    /// answer the server's to that group, with whether the server refused
    /// it with an error (then its body stopped before writing its
    /// records, and its requests may be sent again one by one).
    fn send(&self, reqs: &[Single], groups: &[Group]) -> StoreResult<Vec<(Answer, bool)>> {
        let mut got: Vec<Option<RedisResult<Value>>> = groups.iter().map(|_| None).collect();
        let wait = self.options.replicas;
        // What the last `WAIT` counted: it covers every write the master
        // made before it, the earlier passes' included.
        let mut confirmed: Option<i64> = None;
        self.with_conn(|c| {
            // A second pass sends the groups whose function or script the
            // server had lost, once it is loaded again.
            for _ in 0..2 {
                let todo: Vec<usize> = (0..groups.len()).filter(|&i| got[i].is_none()).collect();
                if todo.is_empty() {
                    break;
                }
                let op = |i: usize| match reqs[groups[i][0]].group() {
                    0 | 1 => &self.scripts.add,
                    2 => &self.scripts.cancel,
                    _ => &self.scripts.reschedule,
                };
                let calls: Vec<_> = todo
                    .iter()
                    .map(|&i| {
                        let mut call = self.invocation(op(i));
                        self.group_args(&mut call, reqs, &groups[i]);
                        call
                    })
                    .collect();
                let mut pipe = redis::pipe();
                pipe.ignore_errors();
                calls.iter().for_each(|call| {
                    pipe.add_command(call.cmd().clone());
                });
                if let Some(w) = wait {
                    w.append(&mut pipe);
                }
                let mut replies: Vec<RedisResult<Value>> = pipe.query(c)?;
                // Taken off before the groups' replies are read, and judged
                // after: a failed `WAIT` must not cost the answers.
                let waited = wait.and_then(|_| replies.pop());
                let (mut retry, mut library_loaded) = (None, false);
                for ((&i, call), reply) in todo.iter().zip(&calls).zip(replies) {
                    match reply {
                        // Left unanswered, so sent again on the next pass.
                        Err(e) if call.missing(&e) => {
                            // One library load brings back every function.
                            if !(library_loaded && call.loads_library()) {
                                call.load(c, &self.scripts)?;
                                library_loaded = call.loads_library();
                            }
                        }
                        // A change of the cluster too: `with_conn` follows it.
                        Err(e) if self.retryable(&e) => {
                            retry = Some(e);
                        }
                        reply => got[i] = Some(reply),
                    }
                }
                if let Some(e) = retry {
                    return Err(e); // with_conn retries the unanswered groups
                }
                confirmed = match waited {
                    Some(Ok(Value::Int(n))) => Some(n),
                    _ => None,
                };
            }
            // Every group was answered but no `WAIT` counted: ask alone.
            if let (Some(w), None) = (wait, confirmed) {
                confirmed = Some(w.wait(c)?);
            }
            Ok(())
        })?;
        let short = replication::shortfall(wait, confirmed.unwrap_or(0));
        let answers = groups.iter().zip(got).map(|(g, reply)| {
            let n: usize = g.iter().map(|&i| reqs[i].entries()).sum();
            match (reply, &short) {
                // Written on the master, not confirmed by its replicas.
                (Some(Ok(_)), Some(e)) => (Err(e.clone()), false),
                (Some(Ok(v)), None) => (flags(&v, n), false),
                (Some(Err(e)), _) => {
                    let detail = ErrorDetail::new("the server answered with an error");
                    (Err(DurableError::Store(detail.with_source(e))), true)
                }
                (None, _) => (Err(bad_reply("a call loaded twice")), false),
            }
        });
        Ok(answers.collect())
    }

    /// The operation's own arguments for the requests of one group.
    fn group_args(&self, inv: &mut Call<'_>, reqs: &[Single], g: &Group) {
        match &reqs[g[0]] {
            Single::Add(mode, _) => inv.arg(match mode {
                AddMode::Replace => "r",
                AddMode::IfAbsent => "i",
            }),
            Single::Cancel(_) => inv.arg(self.dedup.load(Ordering::Relaxed)),
            Single::Reschedule(..) => inv,
        };
        for &i in g {
            match &reqs[i] {
                Single::Add(_, timers) => {
                    for t in timers {
                        inv.arg(&t.key);
                        due_args(inv, t.due);
                        inv.arg(&t.payload);
                    }
                }
                Single::Cancel(key) => {
                    inv.arg(key);
                }
                Single::Reschedule(key, due) => {
                    inv.arg(key);
                    due_args(inv, *due);
                }
            }
        }
    }
}

/// A batch call's reply: one 0 or 1 for each of its `n` entries.
fn flags(v: &Value, n: usize) -> Answer {
    let reply = Vec::<i64>::from_redis_value(v.clone()).map_err(|_| bad_reply("a batch"))?;
    if reply.len() != n {
        return Err(bad_reply("a batch"));
    }
    Ok(reply.into_iter().map(|v| v == 1).collect())
}
