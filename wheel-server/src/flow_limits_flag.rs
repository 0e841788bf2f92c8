//! `--flow-limits` and `--flow-defaults`: flow limits written on the
//! command line, set once the store is open, at every start.
//!
//! A spec is a comma-separated list of items: `rate=COUNT/PERIOD`,
//! `burst=N`, `parallelism=N`, `breaker` (the default breaker), the
//! breaker's own `breaker.failures=N`, `breaker.cooldown=D`,
//! `breaker.max_cooldown=D`, `breaker.pause_after=D` (each turns the
//! breaker on), or `none` alone (no limit). Periods and durations are
//! delays as the API writes them (`1s`, `500ms`, `2m`, or milliseconds).
//! `--flow-limits` is `KEY=SPEC`: the key is everything before the first
//! `=`, so a key holding `=` (or `;`, the separator of repeated values in
//! the environment variable) is set through the API instead.
//!
//! Each spec is read into the API's [`LimitsIn`] and checked as a request
//! is, so the flags and the API refuse the same values.

use crate::flow_limits_json::{BreakerIn, LimitsIn, RateIn};
use crate::json::parse_delay;

/// One `--flow-limits` value: a flow key and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyLimits {
    /// The flow key.
    pub(crate) key: String,
    /// Its limits.
    pub(crate) limits: LimitsIn,
}

/// Reads a `--flow-limits` value, `KEY=SPEC`.
pub(crate) fn key_limits(text: &str) -> Result<KeyLimits, String> {
    let Some((key, spec)) = text.split_once('=') else {
        return Err(format!(
            "{text:?} is not KEY=LIMITS (e.g. https://api.example.com=rate=500/1s,parallelism=20)"
        ));
    };
    if key.is_empty() {
        return Err(format!("{text:?} names no flow key before its '='"));
    }
    Ok(KeyLimits {
        key: key.to_owned(),
        limits: limits(spec)?,
    })
}

/// Reads a spec (a `--flow-defaults` value), checked as the API checks
/// a request's limits.
pub(crate) fn limits(spec: &str) -> Result<LimitsIn, String> {
    let mut l = LimitsIn::default();
    if spec.trim() == "none" {
        return Ok(l);
    }
    for item in spec.split(',').map(str::trim) {
        let (name, value) = match item.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (item, None),
        };
        item_into(&mut l, name, value).map_err(|why| format!("{item:?}: {why}"))?;
    }
    l.check("")
        .map_err(|p| format!("{}: {}", p.field.unwrap_or_default(), p.detail))?;
    Ok(l)
}

/// Sets one item of a spec.
fn item_into(l: &mut LimitsIn, name: &str, value: Option<&str>) -> Result<(), String> {
    let need = || value.ok_or_else(|| format!("{name} needs a value ({name}=...)"));
    let number = |v: &str| {
        v.parse::<u32>()
            .map_err(|_| format!("{v:?} is not a whole number"))
    };
    let ms = |v: &str| parse_delay(v).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    match name {
        "rate" => {
            let v = need()?;
            let (count, period) = v
                .split_once('/')
                .ok_or_else(|| format!("{v:?} is not COUNT/PERIOD (e.g. 500/1s)"))?;
            let burst = l.rate.as_ref().and_then(|r| r.burst);
            l.rate = Some(RateIn {
                count: number(count)?,
                period_ms: ms(period)?,
                burst,
            });
        }
        "burst" => {
            let burst = Some(number(need()?)?);
            match &mut l.rate {
                Some(r) => r.burst = burst,
                None => return Err("a burst follows its rate (rate=500/1s,burst=10)".into()),
            }
        }
        "parallelism" => l.parallelism = Some(number(need()?)?),
        "breaker" if value.is_none() => {
            l.breaker.get_or_insert_with(BreakerIn::default);
        }
        "breaker.failures" => breaker(l).failures = Some(number(need()?)?),
        "breaker.cooldown" => breaker(l).cooldown_ms = Some(ms(need()?)?),
        "breaker.max_cooldown" => breaker(l).max_cooldown_ms = Some(ms(need()?)?),
        "breaker.pause_after" => breaker(l).pause_after_ms = Some(ms(need()?)?),
        _ => {
            return Err(
                "not one of rate=, burst=, parallelism=, breaker, breaker.failures=, breaker.cooldown=, breaker.max_cooldown=, breaker.pause_after=, none"
                    .into(),
            );
        }
    }
    Ok(())
}

/// The spec's breaker, turned on.
fn breaker(l: &mut LimitsIn) -> &mut BreakerIn {
    l.breaker.get_or_insert_with(BreakerIn::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_sets_each_part_it_names() {
        let k =
            key_limits("https://api.example.com:8443=rate=500/1s,burst=10,parallelism=20,breaker")
                .unwrap();
        assert_eq!(k.key, "https://api.example.com:8443");
        assert_eq!(
            k.limits,
            LimitsIn {
                rate: Some(RateIn {
                    count: 500,
                    period_ms: 1000,
                    burst: Some(10)
                }),
                parallelism: Some(20),
                breaker: Some(BreakerIn::default()),
            }
        );
        let d = limits("breaker.failures=3, breaker.cooldown=2s, breaker.pause_after=1d").unwrap();
        assert_eq!(
            d.breaker,
            Some(BreakerIn {
                failures: Some(3),
                cooldown_ms: Some(2000),
                max_cooldown_ms: None,
                pause_after_ms: Some(86_400_000),
            })
        );
        assert_eq!(limits("none").unwrap(), LimitsIn::default());
    }

    #[test]
    fn a_bad_spec_says_what_is_wrong() {
        for (text, says) in [
            ("no-equals", "is not KEY=LIMITS"),
            ("=parallelism=2", "names no flow key"),
            ("k=speed=9", "not one of"),
            ("k=rate=500", "COUNT/PERIOD"),
            ("k=rate=x/1s", "not a whole number"),
            ("k=rate=5/1x", "1x"),
            ("k=burst=2", "follows its rate"),
            ("k=parallelism", "needs a value"),
            ("k=parallelism=0", "parallelism: a parallelism must be 1 to"),
            ("k=rate=5/1s,burst=6", "rate.burst"),
            ("k=breaker.cooldown=10m", "breaker.max_cooldown_ms"),
            ("k=", "not one of"),
        ] {
            let err = key_limits(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
