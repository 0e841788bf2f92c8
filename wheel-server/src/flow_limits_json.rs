//! The JSON of a flow key's limits (a rate, a parallelism, a circuit
//! breaker), read into the library's [`FlowLimits`] and written back from
//! it.
//!
//! Every part is optional; a part left out does not apply, and an empty
//! object is no limit at all. Durations are whole milliseconds. The
//! checks here are the library's ranges, made first so that a refusal
//! names the field at fault (`limits.rate.count`); the library checks
//! again, and anything it still refuses is a 422 naming `limits`.
//!
//! Invariant: `LimitsOut::of(&LimitsIn::check(x)?)` writes every field `x`
//! gave with the value `x` gave, and the library's default for the rest,
//! so a client reads back what it set.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wheel_durable::{
    CircuitBreaker, FlowLimits, MAX_FLOW_PARALLELISM, MAX_FLOW_PERIOD, MAX_FLOW_RATE,
};

use crate::error::Problem;

/// The most failures a breaker may count before it opens.
pub(crate) const MAX_BREAKER_FAILURES: u32 = 1000;

/// A flow key's limits, each part optional (`{}`: none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsIn {
    /// At most `count` starts per `period_ms`, across all servers.
    pub(crate) rate: Option<RateIn>,
    /// At most this many runs in flight at once, across all servers (1
    /// to 1000000).
    pub(crate) parallelism: Option<u32>,
    /// A circuit breaker (`{}`: the default one).
    pub(crate) breaker: Option<BreakerIn>,
}

/// A rate: `count` starts per `period_ms`, spread evenly.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RateIn {
    /// Starts per period (1 to 1000000).
    pub(crate) count: u32,
    /// The period, in milliseconds (1 ms to 7 days).
    pub(crate) period_ms: u64,
    /// Starts that may go at once after a quiet time (1 to `count`; 1
    /// when absent).
    pub(crate) burst: Option<u32>,
}

/// A circuit breaker: after `failures` consecutive failed runs nothing
/// of the key starts for a cool-down, doubling at each failed probe.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BreakerIn {
    /// Consecutive failures that open it (1 to 1000; 5 when absent).
    pub(crate) failures: Option<u32>,
    /// The first cool-down, in milliseconds (1 ms to 7 days; 5000 when
    /// absent).
    pub(crate) cooldown_ms: Option<u64>,
    /// The longest cool-down, in milliseconds (at least the first, at
    /// most 7 days; 300000 when absent).
    pub(crate) max_cooldown_ms: Option<u64>,
    /// Pause the key once it has been open this long without a successful
    /// probe, in milliseconds (1 ms to 7 days; absent or null: never).
    pub(crate) pause_after_ms: Option<u64>,
}

/// A flow key's limits as the store keeps them: the parts not set are
/// null.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct LimitsOut {
    /// The rate, if set.
    pub(crate) rate: Option<RateOut>,
    /// The parallelism, if set.
    pub(crate) parallelism: Option<u32>,
    /// The circuit breaker, if set.
    pub(crate) breaker: Option<BreakerOut>,
}

/// A rate as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct RateOut {
    /// Starts per period.
    pub(crate) count: u32,
    /// The period, in milliseconds.
    pub(crate) period_ms: u64,
    /// Starts that may go at once after a quiet time.
    pub(crate) burst: u32,
}

/// A circuit breaker as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct BreakerOut {
    /// Consecutive failures that open it.
    pub(crate) failures: u32,
    /// The first cool-down, in milliseconds.
    pub(crate) cooldown_ms: u64,
    /// The longest cool-down, in milliseconds.
    pub(crate) max_cooldown_ms: u64,
    /// How long it stays open before the key is paused, in milliseconds
    /// (null: never).
    pub(crate) pause_after_ms: Option<u64>,
}

/// The longest period, cool-down or pause delay, in milliseconds.
pub(crate) fn max_period_ms() -> u64 {
    u64::try_from(MAX_FLOW_PERIOD.as_millis()).unwrap_or(u64::MAX)
}

/// `value` when it lies in `range`, else a 422 naming `field`.
fn within(
    value: u64,
    range: std::ops::RangeInclusive<u64>,
    field: String,
    what: &str,
) -> Result<u64, Problem> {
    if range.contains(&value) {
        return Ok(value);
    }
    Err(Problem::invalid(
        field,
        format!("{what} must be {} to {}", range.start(), range.end()),
    ))
}

/// A count that [`within`] bounded to a `u32` range.
fn narrow(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl LimitsIn {
    /// The library's limits, each part in range; `prefix` names the
    /// object in the request (`limits`) for the refusal's field.
    pub(crate) fn check(&self, prefix: &str) -> Result<FlowLimits, Problem> {
        let at = |field: &str| format!("{prefix}{field}");
        let mut limits = FlowLimits::new();
        if let Some(r) = &self.rate {
            let count = narrow(within(
                r.count.into(),
                1..=MAX_FLOW_RATE.into(),
                at("rate.count"),
                "a rate's count",
            )?);
            let period = within(
                r.period_ms,
                1..=max_period_ms(),
                at("rate.period_ms"),
                "a rate's period (ms)",
            )?;
            limits = limits.rate(count, Duration::from_millis(period));
            if let Some(b) = r.burst {
                let burst = within(b.into(), 1..=count.into(), at("rate.burst"), "a burst")?;
                limits = limits.burst(narrow(burst));
            }
        }
        if let Some(p) = self.parallelism {
            let p = within(
                p.into(),
                1..=MAX_FLOW_PARALLELISM.into(),
                at("parallelism"),
                "a parallelism",
            )?;
            limits = limits.parallelism(narrow(p));
        }
        if let Some(b) = &self.breaker {
            limits = limits.breaker(b.check(&at("breaker."))?);
        }
        Ok(limits)
    }
}

impl BreakerIn {
    /// The library's breaker, each field in range.
    fn check(&self, prefix: &str) -> Result<CircuitBreaker, Problem> {
        let at = |field: &str| format!("{prefix}{field}");
        let max = max_period_ms();
        let mut b = CircuitBreaker::new();
        if let Some(n) = self.failures {
            let n = within(
                n.into(),
                1..=MAX_BREAKER_FAILURES.into(),
                at("failures"),
                "a breaker's failures",
            )?;
            b = b.failures(narrow(n));
        }
        let cooldown = match self.cooldown_ms {
            Some(ms) => within(ms, 1..=max, at("cooldown_ms"), "a cool-down (ms)")?,
            None => ms_of(b.first_cooldown()),
        };
        // The longest cool-down defaults to the library's, which a long
        // first cool-down can exceed: the refusal then names the field
        // to give.
        let longest = self.max_cooldown_ms.unwrap_or(ms_of(b.longest_cooldown()));
        let longest = within(
            longest,
            cooldown..=max,
            at("max_cooldown_ms"),
            "the longest cool-down (ms)",
        )?;
        b = b
            .cooldown(Duration::from_millis(cooldown))
            .max_cooldown(Duration::from_millis(longest));
        if let Some(ms) = self.pause_after_ms {
            let ms = within(ms, 1..=max, at("pause_after_ms"), "a pause delay (ms)")?;
            b = b.pause_after(Duration::from_millis(ms));
        }
        Ok(b)
    }
}

/// Whole milliseconds of a duration the store kept (whole already).
fn ms_of(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl LimitsOut {
    /// The JSON of `l`.
    pub(crate) fn of(l: &FlowLimits) -> LimitsOut {
        LimitsOut {
            rate: l.rate_limit().map(|(count, period)| RateOut {
                count,
                period_ms: ms_of(period),
                burst: l.burst_limit(),
            }),
            parallelism: l.parallelism_limit(),
            breaker: l.breaker_settings().map(|b| BreakerOut {
                failures: b.failures_to_open(),
                cooldown_ms: ms_of(b.first_cooldown()),
                max_cooldown_ms: ms_of(b.longest_cooldown()),
                pause_after_ms: b.pause_delay().map(ms_of),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: serde_json::Value) -> LimitsIn {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn limits_come_back_as_given_with_the_defaults_filled_in() {
        let given = read(serde_json::json!({
            "rate": { "count": 500, "period_ms": 1000, "burst": 10 },
            "parallelism": 20,
            "breaker": { "failures": 3, "pause_after_ms": 60000 },
        }));
        let out = serde_json::to_value(LimitsOut::of(&given.check("limits.").unwrap())).unwrap();
        assert_eq!(
            out,
            serde_json::json!({
                "rate": { "count": 500, "period_ms": 1000, "burst": 10 },
                "parallelism": 20,
                "breaker": { "failures": 3, "cooldown_ms": 5000, "max_cooldown_ms": 300000, "pause_after_ms": 60000 },
            })
        );
        let none = LimitsOut::of(&LimitsIn::default().check("").unwrap());
        assert_eq!(
            serde_json::to_value(none).unwrap(),
            serde_json::json!({ "rate": null, "parallelism": null, "breaker": null })
        );
    }

    #[test]
    fn each_value_out_of_range_names_its_field() {
        let week = max_period_ms();
        for (json, field) in [
            (
                serde_json::json!({ "rate": { "count": 0, "period_ms": 1 } }),
                "limits.rate.count",
            ),
            (
                serde_json::json!({ "rate": { "count": 1_000_001, "period_ms": 1 } }),
                "limits.rate.count",
            ),
            (
                serde_json::json!({ "rate": { "count": 1, "period_ms": 0 } }),
                "limits.rate.period_ms",
            ),
            (
                serde_json::json!({ "rate": { "count": 1, "period_ms": week + 1 } }),
                "limits.rate.period_ms",
            ),
            (
                serde_json::json!({ "rate": { "count": 5, "period_ms": 1, "burst": 6 } }),
                "limits.rate.burst",
            ),
            (
                serde_json::json!({ "rate": { "count": 5, "period_ms": 1, "burst": 0 } }),
                "limits.rate.burst",
            ),
            (
                serde_json::json!({ "parallelism": 0 }),
                "limits.parallelism",
            ),
            (
                serde_json::json!({ "breaker": { "failures": 0 } }),
                "limits.breaker.failures",
            ),
            (
                serde_json::json!({ "breaker": { "failures": 1001 } }),
                "limits.breaker.failures",
            ),
            (
                serde_json::json!({ "breaker": { "cooldown_ms": 0 } }),
                "limits.breaker.cooldown_ms",
            ),
            (
                serde_json::json!({ "breaker": { "cooldown_ms": 400_000 } }),
                "limits.breaker.max_cooldown_ms",
            ),
            (
                serde_json::json!({ "breaker": { "max_cooldown_ms": 10 } }),
                "limits.breaker.max_cooldown_ms",
            ),
            (
                serde_json::json!({ "breaker": { "pause_after_ms": 0 } }),
                "limits.breaker.pause_after_ms",
            ),
        ] {
            let p = read(json.clone()).check("limits.").unwrap_err();
            assert_eq!((p.status, p.field.as_deref()), (422, Some(field)), "{json}");
        }
    }
}
