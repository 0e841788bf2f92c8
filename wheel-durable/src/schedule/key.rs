//! Run keys: the durable timer key of a schedule's run, a pure function of
//! the schedule id and the run's nominal time.
//!
//! The form is `sched:{id}:{ms}`, `ms` the nominal time in Unix
//! milliseconds, in decimal without padding. Two creations of the same run
//! (a retried transaction, two nodes advancing one chain) name the same
//! timer, so the store's add-or-get keeps one: no period runs twice. The id
//! is any string of 1 to [`MAX_SCHEDULE_ID_LEN`] bytes (`:` included: the
//! time is after the *last* colon), so a key is at most 6 + 512 + 1 + 16 =
//! 535 bytes, within [`MAX_KEY_LEN`](crate::MAX_KEY_LEN) with room to
//! spare for other key forms of a schedule.
//!
//! Node state: none (pure functions).

use std::time::SystemTime;

use super::SpecError;
use super::instant::{bound_ms, system_time};

/// The longest schedule id, in bytes.
///
/// # Examples
///
/// ```
/// use std::time::UNIX_EPOCH;
/// use wheel_durable::schedule::{MAX_SCHEDULE_ID_LEN, SpecError, run_key};
///
/// let long = "s".repeat(MAX_SCHEDULE_ID_LEN + 1);
/// assert_eq!(run_key(&long, UNIX_EPOCH), Err(SpecError::InvalidId));
/// ```
pub const MAX_SCHEDULE_ID_LEN: usize = 512;

/// The prefix of every run key.
const PREFIX: &str = "sched:";

/// The prefix of a triggered run's key (the stores make those).
pub(crate) const TRIGGER_PREFIX: &str = "sched-trigger:";

/// Whether `key` starts with a prefix of schedule runs (`sched:` or
/// `sched-trigger:`): only the stores make such timers, and adding one
/// answers [`InvalidKey`](crate::DurableError::InvalidKey).
///
/// # Examples
///
/// ```
/// use wheel_durable::schedule::is_reserved_key;
///
/// assert!(is_reserved_key("sched:reports:1800000000000"));
/// assert!(is_reserved_key("sched-trigger:reports:1"));
/// assert!(!is_reserved_key("schedule:17"));
/// ```
pub fn is_reserved_key(key: &str) -> bool {
    key.starts_with(PREFIX) || key.starts_with(TRIGGER_PREFIX)
}

/// The timer key of schedule `id`'s run at `nominal` (rounded up to the
/// millisecond, as store times are): `sched:{id}:{ms}`.
///
/// # Errors
///
/// [`SpecError::InvalidId`] for an empty id or one over
/// [`MAX_SCHEDULE_ID_LEN`] bytes; [`SpecError::TimeOutOfRange`] for a
/// nominal time outside the store's range.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use wheel_durable::schedule::run_key;
///
/// let nominal = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
/// assert_eq!(run_key("reports:daily", nominal)?, "sched:reports:daily:1800000000000");
/// # Ok::<(), wheel_durable::schedule::SpecError>(())
/// ```
pub fn run_key(id: &str, nominal: SystemTime) -> Result<String, SpecError> {
    if id.is_empty() || id.len() > MAX_SCHEDULE_ID_LEN {
        return Err(SpecError::InvalidId);
    }
    let ms = bound_ms(nominal, "nominal")?;
    Ok(format!("{PREFIX}{id}:{ms}"))
}

/// The schedule id and nominal time of a run key; `None` for a key that
/// [`run_key`] does not make.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use wheel_durable::schedule::{parse_run_key, run_key};
///
/// let nominal = UNIX_EPOCH + Duration::from_millis(1_500);
/// let key = run_key("a:b", nominal)?;
/// assert_eq!(parse_run_key(&key), Some(("a:b", nominal)));
/// assert_eq!(parse_run_key("order:17"), None);
/// # Ok::<(), wheel_durable::schedule::SpecError>(())
/// ```
pub fn parse_run_key(key: &str) -> Option<(&str, SystemTime)> {
    let (id, ms) = key.strip_prefix(PREFIX)?.rsplit_once(':')?;
    // Exactly the digits `run_key` writes: no sign, no leading zero.
    let canonical = !ms.is_empty()
        && ms.bytes().all(|b| b.is_ascii_digit())
        && (ms == "0" || !ms.starts_with('0'));
    let ms: i64 = ms.parse().ok().filter(|_| canonical)?;
    let at = system_time(ms);
    let valid = !id.is_empty() && id.len() <= MAX_SCHEDULE_ID_LEN;
    (valid && bound_ms(at, "nominal") == Ok(ms)).then_some((id, at))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::MAX_KEY_LEN;
    use crate::time::MAX_MILLIS;

    #[test]
    fn keys_fit_the_store_at_every_edge() {
        let id = "i".repeat(MAX_SCHEDULE_ID_LEN);
        let last = UNIX_EPOCH + Duration::from_millis(MAX_MILLIS);
        let key = run_key(&id, last).unwrap();
        assert!(key.len() <= MAX_KEY_LEN, "{}", key.len());
        assert!(crate::check_input(&key, &[], 0).is_ok());
        assert_eq!(parse_run_key(&key), Some((&*id, last)));
        assert_eq!(run_key("", UNIX_EPOCH), Err(SpecError::InvalidId));
        assert_eq!(
            run_key(&format!("{id}i"), UNIX_EPOCH),
            Err(SpecError::InvalidId)
        );
        let past = last + Duration::from_millis(1);
        assert_eq!(
            run_key("s", past),
            Err(SpecError::TimeOutOfRange { field: "nominal" })
        );
        assert_eq!(
            run_key("s", UNIX_EPOCH - Duration::from_millis(1)),
            Err(SpecError::TimeOutOfRange { field: "nominal" })
        );
    }

    #[test]
    fn keys_round_trip_and_strangers_are_refused() {
        for (id, ms) in [("s", 0), ("a:b:", 1), ("ünï", 1_700_000_000_123)] {
            let at = UNIX_EPOCH + Duration::from_millis(ms);
            let key = run_key(id, at).unwrap();
            assert_eq!(parse_run_key(&key), Some((id, at)), "{key}");
        }
        let sub_ms = UNIX_EPOCH + Duration::from_micros(1_001);
        assert_eq!(run_key("s", sub_ms).unwrap(), "sched:s:2");
        for stranger in [
            "order:17",
            "sched:",
            "sched:s",
            "sched::5",
            "sched:s:",
            "sched:s:05",
            "sched:s:-5",
            "sched:s:+5",
            "sched:s:5x",
            "sched:s:9007199254740992",
            "sched:s:99999999999999999999",
        ] {
            assert_eq!(parse_run_key(stranger), None, "{stranger}");
        }
    }
}
