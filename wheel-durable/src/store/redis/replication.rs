//! Acknowledged means replicated, when asked: with
//! `DurableTimersBuilder::replicas(n, timeout)`, every store call that can
//! write is followed on the same connection, in the same round trip, by
//! `WAIT n timeout`, and fails with [`DurableError::NotReplicated`] when
//! fewer than `n` replicas confirm.
//!
//! Invariants:
//! - The `WAIT` goes on the connection that ran the write: Redis counts the
//!   replicas that have reached that connection's offset, which is the
//!   master's whole replication offset when its last command ended (Redis
//!   7 sets it after every command, reads included). So a confirmed call
//!   confirms everything the master had written before it, by any client;
//!   a retry that finds its write already made confirms that write too.
//! - Only the operations that only read (flagged `reads` in `scripts.rs`,
//!   `no-writes` in the library) go without a `WAIT`; an operation added
//!   later waits unless it is flagged so.
//! - The timeout is at least 1 ms (`WAIT` with 0 would block for good), and
//!   the connection's read timeout is extended by it (`mod.rs`), so a
//!   `WAIT` that runs its whole course is answered, not cut off as a
//!   broken connection.
//!
//! Node state: none (the settings, copied into the store's options).

use std::time::Duration;

use redis::{Cmd, Connection, FromRedisValue, Pipeline, RedisResult};

use super::scripts::Op;
use crate::DurableError;
use crate::store::StoreResult;

/// How many replicas must confirm each write, and how long to wait for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Replicas {
    /// At least 1: zero replicas is no option at all.
    pub(crate) wanted: u32,
    /// At least 1 ms.
    pub(crate) timeout: Duration,
}

impl Replicas {
    /// The `WAIT` timeout in whole milliseconds, at least 1.
    fn timeout_ms(self) -> u64 {
        u64::try_from(self.timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// Runs `WAIT wanted timeout` alone: how many replicas have every
    /// write the master made so far.
    pub(super) fn wait(self, c: &mut Connection) -> RedisResult<i64> {
        redis::cmd("WAIT")
            .arg(self.wanted)
            .arg(self.timeout_ms())
            .query(c)
    }

    /// Appends `WAIT wanted timeout` to `pipe`.
    pub(super) fn append(self, pipe: &mut Pipeline) {
        pipe.cmd("WAIT").arg(self.wanted).arg(self.timeout_ms());
    }

    /// The `WAIT` to follow a call of `op`: none for the readers.
    pub(super) fn for_op(replicas: Option<Replicas>, op: &Op) -> Option<Replicas> {
        replicas.filter(|_| !op.reads)
    }
}

/// The error of a write that `confirmed` replicas confirmed, when `wait`
/// wanted more; none when it did not ask or they were enough.
pub(super) fn shortfall(wait: Option<Replicas>, confirmed: i64) -> Option<DurableError> {
    let w = wait?;
    (confirmed < i64::from(w.wanted)).then(|| DurableError::NotReplicated {
        wanted: w.wanted,
        confirmed: u32::try_from(confirmed.max(0)).unwrap_or(0),
    })
}

/// A reply, and how many replicas confirmed the write when some were
/// wanted.
pub(super) struct Replied<T> {
    reply: T,
    confirmed: Option<(Replicas, i64)>,
}

impl<T> Replied<T> {
    /// The reply, or [`DurableError::NotReplicated`] when fewer replicas
    /// confirmed than were wanted.
    pub(super) fn checked(self) -> StoreResult<T> {
        match self.confirmed.and_then(|(w, n)| shortfall(Some(w), n)) {
            Some(e) => Err(e),
            None => Ok(self.reply),
        }
    }
}

/// Runs the plain command `cmd`, then `WAIT` in the same round trip when
/// `wait` is set.
pub(super) fn query<T: FromRedisValue>(
    cmd: &Cmd,
    wait: Option<Replicas>,
    c: &mut Connection,
) -> RedisResult<Replied<T>> {
    let Some(w) = wait else {
        let reply = cmd.query(c)?;
        return Ok(Replied {
            reply,
            confirmed: None,
        });
    };
    let mut pipe = redis::pipe();
    pipe.add_command(cmd.clone());
    w.append(&mut pipe);
    let (reply, n) = pipe.query::<(T, i64)>(c)?;
    Ok(Replied {
        reply,
        confirmed: Some((w, n)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redis::scripts::Scripts;

    fn replicas(wanted: u32) -> Replicas {
        Replicas {
            wanted,
            timeout: Duration::from_micros(300),
        }
    }

    #[test]
    fn readers_go_without_a_wait_and_every_other_operation_waits() {
        let s = Scripts::new();
        let r = Some(replicas(1));
        for reader in [
            &s.get,
            &s.ended,
            &s.counts,
            &s.list,
            &s.dead_letters,
            &s.schedules,
        ] {
            assert_eq!(Replicas::for_op(r, reader), None);
        }
        for writer in [
            &s.add,
            &s.cancel,
            &s.reschedule,
            &s.claim,
            &s.start,
            &s.renew,
            &s.finish,
            &s.release,
            &s.retry_dead,
            &s.schedule_write,
            &s.pause,
            &s.defer,
        ] {
            assert_eq!(Replicas::for_op(r, writer), r);
            assert_eq!(Replicas::for_op(None, writer), None);
        }
    }

    #[test]
    fn fewer_confirmations_than_wanted_is_the_typed_error() {
        let replied = |n| Replied {
            reply: 7,
            confirmed: Some((replicas(2), n)),
        };
        assert_eq!(replied(2).checked(), Ok(7));
        assert_eq!(replied(3).checked(), Ok(7));
        assert_eq!(
            replied(1).checked(),
            Err(DurableError::NotReplicated {
                wanted: 2,
                confirmed: 1
            })
        );
        let unasked = Replied {
            reply: 7,
            confirmed: None,
        };
        assert_eq!(unasked.checked(), Ok(7));
    }

    #[test]
    fn a_timeout_under_a_millisecond_still_waits_one() {
        assert_eq!(replicas(1).timeout_ms(), 1);
        let long = Replicas {
            wanted: 1,
            timeout: Duration::from_millis(250),
        };
        assert_eq!(long.timeout_ms(), 250);
    }
}
