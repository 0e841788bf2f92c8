//! What a store keeps of flow control: which flow keys (and whether the
//! whole namespace) are paused, each key's limits (rate, parallelism,
//! circuit breaker) and the state they need (the rate's next slot, the
//! permits in flight, the breaker), and the timers parked while a key is
//! paused or its breaker is open.
//!
//! A start names each claim's flow key (the node derives it: see
//! `crate::flow_key`); the empty key means none, and a timer without one
//! is held back only by a pause of the whole namespace. A key's limits are
//! its own ([`Store::set_limits`](super::Store::set_limits) with the key),
//! else the namespace's default ones (with `None`), else none.
//!
//! # The gate of a start
//!
//! A claim that is due and still held with its fence goes through these
//! steps, in order; the first that holds it back answers, and nothing of
//! a later step is touched:
//! 1. The namespace is paused: the claim is handed back (pending again,
//!    same due), answer [`Start::Paused`].
//! 2. Its key is paused: the timer is **parked** (state
//!    [`TimerState::Parked`], out of the due index, in its key's parked
//!    index by `(due, key)`), answer `Paused`. No attempt is counted.
//! 3. Its key's breaker is open, or half-open with a valid probe (below):
//!    parked, answer `Paused`.
//! 4. Its key has a parallelism `p` and `p` valid permits are held: answer
//!    [`Start::Wait`] until the earliest lease end among them (the latest a
//!    permit can come back without a finish). The claim stays claimed.
//! 5. Its key has a rate: its next slot is `max(now, tat - tolerance)` (in
//!    µs, below). A slot more than [`RATE_HORIZON`] ahead answers `Wait`
//!    until the slot less the horizon, rounded up to the ms.
//! 6. The schedule rules (`schedule_steps.rs`) refuse it: `Stale`.
//!
//! A claim that passes starts as without flow control (state `Running`,
//! attempts + 1, the run's lease) and, in the same step: it takes a permit
//! of its key if the key has a parallelism; it takes the slot if the key
//! has a rate (`tat = max(tat, now) + interval`); it becomes the key's
//! probe if the breaker is half-open. A start whose slot is later than
//! `now` answers [`Start::Reserved`] with the slot, rounded up to the ms:
//! the node sends it then, never before.
//!
//! **Rate** `count` per `period` ms with a `burst` (at least 1): the
//! interval is `ceil(period * 1000 / count)` µs, the tolerance
//! `(burst - 1) * interval` µs; `tat` (theoretical arrival time, µs,
//! starting at 0) is per key. This is GCRA: over any stretch of time, at
//! most `burst` slots more than the rate allows.
//!
//! **Permits.** A permit is valid while the run that took it is `Running`
//! with the fence it started with and its lease has not passed by the
//! store's clock. So a finish, a lease taken back, or a node that died
//! (its lease passes) gives it back; a renewal keeps it.
//!
//! **Breaker** (`failures`, `cooldown`, `max_cooldown`, `pause_after`):
//! closed, open until a time, or half-open. A finish of a run that passed
//! the gate reports its class with the flow key
//! ([`FlowOutcome`]); only a finish the store accepts counts:
//! - success: closed → the failure count is 0; half-open and this run is
//!   the probe → closed (count 0, step 0) and its parked timers are made
//!   pending again as by a resume;
//! - failure: closed → count + 1, and at `failures` the breaker opens at
//!   step 0; half-open and this run is the probe → open at the next step.
//!   Opening sets the time it ends: `now + max(cooldown * 2^step capped at
//!   max_cooldown, retry_after capped at MAX_RETRY_AFTER)`; the first
//!   opening after a close records `opened_at`. If `pause_after` is set and
//!   `now - opened_at >= pause_after` when it opens, the key is paused too;
//! - neutral: nothing.
//!
//! A probe is valid while its run is `Running` with its fence and lease.
//!
//! # Wake-ups: the claim's first step
//!
//! Each key may have a wake time. Each `claim`, once it has taken expired
//! leases back and before it claims, visits the keys whose wake time has
//! come, in byte order, with a budget of [`UNPARK_BATCH`] timers made
//! pending in all:
//! - a paused key loses its wake time (a resume sets it again);
//! - a key whose breaker is open: the breaker turns half-open, one parked
//!   timer (the earliest) is made pending (the probe's candidate), and, if
//!   parked timers are left, the wake time becomes `now + ` the current
//!   cooldown (so that a candidate cancelled meanwhile is followed by
//!   another), else it loses its wake time (a timer coming due then is the
//!   probe);
//! - a key whose breaker is half-open: the same, without the turn;
//! - any other key: its parked timers are made pending, earliest
//!   `(due, key)` first, within the budget and, if its limits have a rate
//!   or a parallelism, within its **allowance**: the starts its rate allows
//!   in [`WAKE_SPAN`] (`ceil(count * WAKE_SPAN / period)`) plus its
//!   parallelism, at least 1. If parked timers are left, a key limited by
//!   its allowance wakes again `WAKE_SPAN` later, any other key at the next
//!   claim (its wake time stays); once none is left it loses its wake
//!   time.
//!
//! # Deferring: claims a node cannot start soon
//!
//! A node holds the claims its key's limits hold back ([`Start::Wait`]);
//! past a few hundred of one key it hands the latest-due ones to the store
//! ([`Store::defer`](super::Store::defer)), so that a key with a large
//! backlog neither fills the node nor keeps it from claiming other keys'
//! timers. Deferring a claim still held with its fence parks it under the
//! key it names (answer true; any other state: false, nothing changes),
//! and gives the key a wake time `now + WAKE_SPAN` unless it has one; the
//! wake-ups above then hand the key's parked timers out at its rate.
//!
//! Resuming a key clears its pause, resets its breaker to closed (count 0,
//! step 0), makes up to `UNPARK_BATCH` of its parked timers pending at
//! once and, if more are left, sets its wake time to now. A breaker that
//! closes sets the wake time to now. Pausing a key removes its wake time.
//! Resuming the namespace clears its pause; its timers were never parked.
//! Both resumes, and a claim that made timers pending, wake the nodes (the
//! stores' notification, as for an add).
//!
//! While the namespace is paused, `claim` still takes expired leases back
//! and visits the wake-ups, but claims nothing and reports no next due
//! time.
//!
//! A parked timer is claimed by nobody. `cancel` removes it (true,
//! remembered as cancelled for the dedup window), `reschedule` makes it
//! pending at the new due time, an `add` that replaces it makes it
//! pending; `renew`, `finish`, `release` refuse it (it has no fence).
//!
//! [`FlowsState`] lists every key that is paused, has parked timers, has
//! its own limits, holds a valid permit, or whose breaker is not closed
//! with a count of 0, in byte order.
//!
//! [`Start::Paused`]: super::Start::Paused
//! [`Start::Wait`]: super::Start::Wait
//! [`Start::Reserved`]: super::Start::Reserved
//! [`TimerState::Parked`]: crate::TimerState::Parked
//!
//! Node state: none (what the store answers).

use super::Millis;

/// Timers made pending at most per resume and per claim.
pub(crate) const UNPARK_BATCH: usize = 1000;

/// Bytes a flow key may have at most.
pub(crate) const MAX_FLOW_KEY: usize = 512;

/// How far ahead of its slot a rate-limited run may start: a start call
/// reserves the slots of this much time at once, so that a node sends a
/// steady rate with a few calls a second instead of one per slot.
pub(crate) const RATE_HORIZON: Millis = 250;

/// How long a deferred key waits before its parked timers are handed out
/// again, and the span its allowance covers (see "Wake-ups").
pub(crate) const WAKE_SPAN: Millis = 1_000;

/// The longest `Retry-After` a breaker honours.
pub(crate) const MAX_RETRY_AFTER: Millis = 3_600_000;

/// A key's limits as the store keeps them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) rate: Option<Rate>,
    /// Runs in flight at most (at least 1).
    pub(crate) parallelism: Option<u32>,
    pub(crate) breaker: Option<BreakerLimits>,
}

/// `count` starts per `period` ms, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rate {
    /// At least 1.
    pub(crate) count: u32,
    /// At least 1 ms.
    pub(crate) period: Millis,
    /// At least 1.
    pub(crate) burst: u32,
}

/// When a breaker opens and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BreakerLimits {
    /// Consecutive failures that open it (at least 1).
    pub(crate) failures: u32,
    /// Its first cool-down, ms (at least 1).
    pub(crate) cooldown: Millis,
    /// The longest cool-down, ms (at least `cooldown`).
    pub(crate) max_cooldown: Millis,
    /// Pause the key once it has been open this long (ms), if set.
    pub(crate) pause_after: Option<Millis>,
}

#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
impl Rate {
    /// The GCRA emission interval, µs, rounded up (never faster than the
    /// rate).
    pub(crate) fn interval_us(&self) -> u64 {
        let period_us = u128::from(self.period) * 1000;
        let count = u128::from(self.count.max(1));
        u64::try_from(period_us.div_ceil(count)).unwrap_or(u64::MAX)
    }

    /// The GCRA tolerance, µs: the burst beyond the first start.
    pub(crate) fn tolerance_us(&self) -> u64 {
        self.interval_us()
            .saturating_mul(u64::from(self.burst.max(1) - 1))
    }
}

#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
impl Limits {
    /// The parked timers a wake-up may make pending at once, if the
    /// limits bound it: the rate's starts in [`WAKE_SPAN`] plus the
    /// parallelism, at least 1.
    pub(crate) fn allowance(&self) -> Option<u64> {
        if self.rate.is_none() && self.parallelism.is_none() {
            return None;
        }
        let by_rate = self.rate.map_or(0, |r| {
            let per_span = u128::from(r.count) * u128::from(WAKE_SPAN);
            u64::try_from(per_span.div_ceil(u128::from(r.period.max(1)))).unwrap_or(u64::MAX)
        });
        let by_parallelism = u64::from(self.parallelism.unwrap_or(0));
        Some(by_rate.saturating_add(by_parallelism).max(1))
    }
}

#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
impl BreakerLimits {
    /// The cool-down at `step` (doubling from `cooldown`, capped), or the
    /// `Retry-After` given, capped at [`MAX_RETRY_AFTER`], if longer.
    pub(crate) fn cooldown_at(&self, step: u32, retry_after: Millis) -> Millis {
        let doubled = self
            .cooldown
            .saturating_mul(1u64.checked_shl(step.min(63)).unwrap_or(u64::MAX));
        doubled
            .min(self.max_cooldown.max(self.cooldown))
            .max(retry_after.min(MAX_RETRY_AFTER))
    }
}

/// Where a breaker is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Phase {
    #[default]
    Closed,
    Open,
    HalfOpen,
}

/// A key's breaker as [`FlowsState`] reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BreakerView {
    pub(crate) phase: Phase,
    /// Consecutive failures counted while closed.
    pub(crate) failures: u32,
    /// Openings since it last closed, less one (the cool-down's step).
    pub(crate) step: u32,
    /// Open: when it turns half-open; half-open: when another candidate
    /// is made pending; closed: none.
    pub(crate) until: Option<Millis>,
}

/// How a finished run went, for its key's breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlowClass {
    /// The target took it (`Outcome::Done`).
    Success,
    /// The target failed or asked to wait (`Retry`, `RetryAfter`): a
    /// connection error, a timeout, a 5xx, a 429. `retry_after` is 0 when
    /// the target named no time.
    Failure { retry_after: Millis },
    /// Neither (`Fail`: the target answered, and refused).
    Neutral,
}

/// A finished run's flow key and class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlowOutcome<'a> {
    pub(crate) flow: &'a str,
    pub(crate) class: FlowClass,
}

/// What a store answers about flow control.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FlowsState {
    /// Whether the whole namespace is paused.
    pub(crate) paused: bool,
    /// The limits of keys without their own.
    pub(crate) defaults: Option<Limits>,
    /// Every key listed by the rule of the module doc, in byte order.
    pub(crate) keys: Vec<FlowEntry>,
}

/// One flow key as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlowEntry {
    pub(crate) key: String,
    pub(crate) paused: bool,
    /// Its parked timers.
    pub(crate) parked: u64,
    /// Its own limits, if set.
    pub(crate) limits: Option<Limits>,
    /// Valid permits.
    pub(crate) in_flight: u32,
    pub(crate) breaker: BreakerView,
}

/// The flags byte of an encoded [`Limits`].
const HAS_RATE: u8 = 1;
const HAS_PARALLELISM: u8 = 2;
const HAS_BREAKER: u8 = 4;
const HAS_PAUSE_AFTER: u8 = 8;

/// Bytes of an encoded [`Limits`]: flags, then every field, zero when
/// absent: rate count (u32), period (u64), burst (u32), parallelism
/// (u32), failures (u32), cooldown, max cooldown, pause after (u64 each);
/// little-endian. The Redis scripts read the same layout.
pub(crate) const LIMITS_LEN: usize = 1 + 4 + 8 + 4 + 4 + 4 + 8 + 8 + 8;

impl Limits {
    /// Whether no limit is set.
    pub(crate) fn is_none(&self) -> bool {
        *self == Limits::default()
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut flags = 0;
        let rate = self.rate.unwrap_or(Rate {
            count: 0,
            period: 0,
            burst: 0,
        });
        let b = self.breaker.unwrap_or(BreakerLimits {
            failures: 0,
            cooldown: 0,
            max_cooldown: 0,
            pause_after: None,
        });
        if self.rate.is_some() {
            flags |= HAS_RATE;
        }
        if self.parallelism.is_some() {
            flags |= HAS_PARALLELISM;
        }
        if self.breaker.is_some() {
            flags |= HAS_BREAKER;
        }
        if b.pause_after.is_some() {
            flags |= HAS_PAUSE_AFTER;
        }
        let mut out = Vec::with_capacity(LIMITS_LEN);
        out.push(flags);
        out.extend_from_slice(&rate.count.to_le_bytes());
        out.extend_from_slice(&rate.period.to_le_bytes());
        out.extend_from_slice(&rate.burst.to_le_bytes());
        out.extend_from_slice(&self.parallelism.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&b.failures.to_le_bytes());
        out.extend_from_slice(&b.cooldown.to_le_bytes());
        out.extend_from_slice(&b.max_cooldown.to_le_bytes());
        out.extend_from_slice(&b.pause_after.unwrap_or(0).to_le_bytes());
        out
    }

    /// The limits in `b`, or `None` for bytes of another length or with an
    /// unknown flag.
    pub(crate) fn decode(b: &[u8]) -> Option<Limits> {
        if b.len() != LIMITS_LEN
            || b[0] & !(HAS_RATE | HAS_PARALLELISM | HAS_BREAKER | HAS_PAUSE_AFTER) != 0
        {
            return None;
        }
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let flags = b[0];
        let has = |f: u8| flags & f != 0;
        Some(Limits {
            rate: has(HAS_RATE).then(|| Rate {
                count: u32_at(1),
                period: u64_at(5),
                burst: u32_at(13),
            }),
            parallelism: has(HAS_PARALLELISM).then(|| u32_at(17)),
            breaker: has(HAS_BREAKER).then(|| BreakerLimits {
                failures: u32_at(21),
                cooldown: u64_at(25),
                max_cooldown: u64_at(33),
                pause_after: has(HAS_PAUSE_AFTER).then(|| u64_at(41)),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_round_trip() {
        let all = Limits {
            rate: Some(Rate {
                count: 500,
                period: 1000,
                burst: 3,
            }),
            parallelism: Some(20),
            breaker: Some(BreakerLimits {
                failures: 5,
                cooldown: 5_000,
                max_cooldown: 600_000,
                pause_after: Some(u64::MAX),
            }),
        };
        for l in [Limits::default(), all] {
            let b = l.encode();
            assert_eq!(b.len(), LIMITS_LEN);
            assert_eq!(Limits::decode(&b), Some(l));
        }
        let mut bad = all.encode();
        bad[0] |= 16;
        assert_eq!(Limits::decode(&bad), None);
        assert_eq!(Limits::decode(&all.encode()[1..]), None);
    }

    #[test]
    fn the_rate_s_interval_rounds_up_and_the_burst_is_its_tolerance() {
        let r = |count, period, burst| Rate {
            count,
            period,
            burst,
        };
        assert_eq!(r(500, 1000, 1).interval_us(), 2_000);
        assert_eq!(r(3, 1000, 1).interval_us(), 333_334);
        assert_eq!(r(1, u64::MAX, 1).interval_us(), u64::MAX);
        assert_eq!(r(500, 1000, 1).tolerance_us(), 0);
        assert_eq!(r(500, 1000, 4).tolerance_us(), 6_000);
    }

    #[test]
    fn cooldowns_double_up_to_the_cap_and_retry_after_wins_when_longer() {
        let b = BreakerLimits {
            failures: 1,
            cooldown: 1_000,
            max_cooldown: 5_000,
            pause_after: None,
        };
        let steps: Vec<Millis> = (0..5).map(|s| b.cooldown_at(s, 0)).collect();
        assert_eq!(steps, [1_000, 2_000, 4_000, 5_000, 5_000]);
        assert_eq!(b.cooldown_at(200, 0), 5_000);
        assert_eq!(b.cooldown_at(0, 30_000), 30_000);
        assert_eq!(b.cooldown_at(0, u64::MAX), MAX_RETRY_AFTER);
    }
}
