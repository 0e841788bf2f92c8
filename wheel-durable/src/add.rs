//! How an add treats a key that is taken ([`AddMode`]), and how a large
//! batch is cut into store operations of bounded size.
//!
//! One store operation holds at most [`MAX_CHUNK_TIMERS`] timers and
//! [`MAX_CHUNK_BYTES`] of keys and payloads (a single larger timer goes
//! alone), so that one call never blocks a Redis server for long or makes
//! one huge embedded write batch. Each chunk is atomic; a batch of several
//! chunks is not: a failure in a later chunk leaves the earlier ones
//! stored.

use super::store::{NewTimer, Store, StoreResult};

/// What an add does when a timer with the same key exists, in any state.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use wheel_durable::{AddMode, DurableTimers};
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
/// let at = SystemTime::now() + Duration::from_secs(60);
/// let batch = [("a", at, b"1".as_slice())];
/// assert_eq!(timers.add_many_with(&batch, AddMode::IfAbsent)?, [true]);
/// assert_eq!(timers.add_many_with(&batch, AddMode::IfAbsent)?, [false]);
/// assert_eq!(timers.add_many_with(&batch, AddMode::Replace)?, [true]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum AddMode {
    /// Replace the timer with this key, whatever its state (pending,
    /// claimed, running or a dead letter): a started run's outcome is then
    /// ignored.
    #[default]
    Replace,
    /// Leave an existing timer with this key untouched, whatever its state;
    /// add only when there is none.
    IfAbsent,
}

/// Timers per store operation at most.
pub(crate) const MAX_CHUNK_TIMERS: usize = 1_000;

/// Bytes of keys and payloads per store operation at most (unless one
/// timer alone is larger).
pub(crate) const MAX_CHUNK_BYTES: usize = 4 << 20;

/// The bounded chunks of `timers`, in order.
pub(crate) fn chunks<'b, 'a>(timers: &'b [NewTimer<'a>]) -> Vec<&'b [NewTimer<'a>]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, t) in timers.iter().enumerate() {
        let size = t.key.len() + t.payload.len();
        let full = i - start >= MAX_CHUNK_TIMERS || bytes + size > MAX_CHUNK_BYTES;
        if i > start && full {
            out.push(&timers[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < timers.len() {
        out.push(&timers[start..]);
    }
    out
}

/// Adds `timers` chunk by chunk; one answer per timer, in order.
pub(crate) fn add_bounded(
    store: &dyn Store,
    timers: &[NewTimer<'_>],
    mode: AddMode,
) -> StoreResult<Vec<bool>> {
    let mut added = Vec::with_capacity(timers.len());
    for chunk in chunks(timers) {
        added.extend(store.add(chunk, mode)?);
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Due;

    fn lens(timers: &[NewTimer<'_>]) -> Vec<usize> {
        chunks(timers).iter().map(|c| c.len()).collect()
    }

    #[test]
    fn batches_are_cut_by_count_and_by_bytes() {
        let keys: Vec<String> = (0..2_500).map(|i| format!("k{i}")).collect();
        let small: Vec<NewTimer<'_>> = keys
            .iter()
            .map(|key| NewTimer {
                key,
                due: Due::At(1),
                payload: b"",
            })
            .collect();
        assert_eq!(lens(&small), [1_000, 1_000, 500]);
        assert_eq!(lens(&small[..1_000]), [1_000]);
        assert!(chunks(&small[..0]).is_empty());

        let mib = vec![0u8; (1 << 20) - 2];
        let big: Vec<NewTimer<'_>> = keys[..10]
            .iter()
            .map(|key| NewTimer {
                key,
                due: Due::At(1),
                payload: &mib,
            })
            .collect();
        // Each timer is 1 MiB with its 2-byte key: four per chunk.
        assert_eq!(lens(&big), [4, 4, 2]);
        let huge = vec![0u8; MAX_CHUNK_BYTES + 1];
        let alone = [
            big[0],
            NewTimer {
                payload: &huge,
                ..big[1]
            },
            big[2],
        ];
        assert_eq!(lens(&alone), [1, 1, 1]);
    }
}
