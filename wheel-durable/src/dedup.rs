//! The dedup window: a key stays remembered for a while after its timer
//! ended, so that a producer's retry within that time adds nothing and is
//! told how the timer ended ([`AddOrGet::Ended`](crate::AddOrGet::Ended)).
//!
//! Invariants every store keeps (the model states them on its own):
//! - A key is remembered only when the timer left the store: `finish(Done)`
//!   ([`EndedHow::Done`]), `cancel` of a timer in any live state
//!   ([`EndedHow::Cancelled`]), `cancel` of a dead letter
//!   ([`EndedHow::Dead`], at its failure time). A dead letter itself is not
//!   remembered: it is still in the store, and an add-or-get answers it as
//!   [`AddOrGet::Existing`](crate::AddOrGet::Existing).
//! - The memory records when it expires: the store's clock at the end
//!   plus the window of the node that ended it. Nothing is remembered by a
//!   node whose window is zero (the default); the schedules' runs are never
//!   remembered (their keys cannot be added by hand).
//! - A key is never both remembered and a timer or dead letter: every add
//!   that writes the key forgets it in the same atomic step. An add in
//!   [`AddMode::IfAbsent`](crate::AddMode) treats a remembered key whose
//!   memory has not expired by the store's clock as taken.
//! - Expired memories are answered by nothing and deleted a bounded number
//!   per store operation (see the stores), so memory stays bounded with no
//!   background task.
//!
//! Node state: none. It owns nothing of the node's stages; the memory lives
//! in the store.

use std::time::{Duration, SystemTime};

use super::store::Millis;
use super::time::system_time_of;
use super::{DurableError, DurableTimers, check_input};

/// How a remembered timer ended.
///
/// # Examples
///
/// ```
/// use wheel_durable::EndedHow;
/// assert_eq!(EndedHow::Done.as_str(), "done");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EndedHow {
    /// Its run finished with [`Outcome::Done`](crate::Outcome::Done).
    Done,
    /// It was cancelled before or during its run.
    Cancelled,
    /// It became a dead letter, which was then cancelled.
    Dead,
}

impl EndedHow {
    /// The name used in logs and by the server: `done`, `cancelled` or `dead`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_durable::EndedHow::Cancelled.as_str(), "cancelled");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            EndedHow::Done => "done",
            EndedHow::Cancelled => "cancelled",
            EndedHow::Dead => "dead",
        }
    }

    /// The byte a store records.
    pub(crate) fn code(self) -> u8 {
        match self {
            EndedHow::Done => 0,
            EndedHow::Cancelled => 1,
            EndedHow::Dead => 2,
        }
    }

    /// The outcome a store's byte records.
    pub(crate) fn from_code(code: u8) -> Option<EndedHow> {
        match code {
            0 => Some(EndedHow::Done),
            1 => Some(EndedHow::Cancelled),
            2 => Some(EndedHow::Dead),
            _ => None,
        }
    }
}

/// A timer that ended within the dedup window: its key, how it ended and
/// when (the store's clock; a dead letter's failure time).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use wheel_durable::{AddOrGet, DurableTimers, EndedHow};
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = DurableTimers::builder()
///     .embedded(dir.path().join("timers"))
///     .dedup_window(Duration::from_secs(600))
///     .build()?;
/// let at = SystemTime::now() + Duration::from_secs(60);
/// timers.add_at("invoice:5", at, b"")?;
/// timers.cancel("invoice:5")?;
/// let AddOrGet::Ended(ended) = timers.add_at_or_get("invoice:5", at, b"")? else {
///     panic!("remembered");
/// };
/// assert_eq!((ended.key.as_str(), ended.how), ("invoice:5", EndedHow::Cancelled));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndedTimer {
    /// The timer's key.
    pub key: String,
    /// How it ended.
    pub how: EndedHow,
    /// When it ended (a dead letter: when it failed).
    pub at: SystemTime,
}

/// A memory as a store keeps it: how and when (store time) the timer
/// ended, and when the memory expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Memory {
    pub(crate) how: EndedHow,
    pub(crate) at: Millis,
    pub(crate) expires: Millis,
}

impl Memory {
    /// The bytes the embedded store keeps: how (1), at and expires (8 each,
    /// little-endian).
    #[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(17);
        v.push(self.how.code());
        v.extend_from_slice(&self.at.to_le_bytes());
        v.extend_from_slice(&self.expires.to_le_bytes());
        v
    }

    #[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's
    pub(crate) fn decode(v: &[u8]) -> Option<Memory> {
        let (&how, rest) = v.split_first()?;
        let at = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
        let expires = u64::from_le_bytes(rest.get(8..16)?.try_into().ok()?);
        Some(Memory {
            how: EndedHow::from_code(how)?,
            at,
            expires,
        })
    }

    /// The memory as answered for `key`.
    pub(crate) fn ended(&self, key: &str) -> EndedTimer {
        EndedTimer {
            key: key.to_owned(),
            how: self.how,
            at: system_time_of(self.at),
        }
    }
}

/// Whether a timer ending under `key` is remembered at all.
#[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
pub(crate) fn rememberable(key: &str, window: Millis) -> bool {
    window > 0 && !crate::schedule::is_reserved_key(key)
}

/// The window in store milliseconds (rounded up, at most `u64::MAX`).
pub(crate) fn window_ms(window: Duration) -> Millis {
    super::time::millis_ceil(window).unwrap_or(u64::MAX)
}

impl DurableTimers {
    /// The timer with this key that ended within the dedup window (see
    /// [`DurableTimersBuilder::dedup_window`](crate::DurableTimersBuilder::dedup_window)),
    /// or `None`: never ended, ended longer ago, or a timer or dead letter
    /// holds the key now ([`get`](Self::get) answers those; it answers
    /// `None` for a remembered key).
    ///
    /// # Errors
    ///
    /// [`DurableError::InvalidKey`] for an empty or too long key; the
    /// store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::{DurableTimers, EndedHow};
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = DurableTimers::builder()
    ///     .embedded(dir.path().join("timers"))
    ///     .dedup_window(Duration::from_secs(600))
    ///     .build()?;
    /// timers.add("a", Duration::from_secs(60), b"")?;
    /// assert_eq!(timers.ended("a")?, None);
    /// timers.cancel("a")?;
    /// assert_eq!(timers.ended("a")?.map(|e| e.how), Some(EndedHow::Cancelled));
    /// assert_eq!(timers.get("a")?, None);
    /// # Ok(()) }
    /// ```
    pub fn ended(&self, key: &str) -> Result<Option<EndedTimer>, DurableError> {
        check_input(key, &[], 0)?;
        Ok(self.store.ended(key)?.map(|m| m.ended(key)))
    }
}

#[cfg(feature = "tokio")]
impl crate::AsyncTimers {
    /// [`DurableTimers::ended`], awaited (feature `tokio`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::ended`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use wheel_durable::{AsyncTimers, DurableTimers, EndedHow};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = AsyncTimers::new(Arc::new(
    ///     DurableTimers::builder()
    ///         .embedded(dir.path().join("timers"))
    ///         .dedup_window(Duration::from_secs(600))
    ///         .build()?,
    /// ));
    /// timers.add("a", Duration::from_secs(60), b"").await?;
    /// timers.cancel("a").await?;
    /// assert_eq!(timers.ended("a").await?.map(|e| e.how), Some(EndedHow::Cancelled));
    /// # Ok(()) }
    /// ```
    pub async fn ended(&self, key: &str) -> Result<Option<EndedTimer>, DurableError> {
        let key = key.to_owned();
        self.call(move |t| t.ended(&key)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_reads_back_and_bad_bytes_are_refused() {
        for how in [EndedHow::Done, EndedHow::Cancelled, EndedHow::Dead] {
            let m = Memory {
                how,
                at: 7,
                expires: u64::MAX,
            };
            assert_eq!(Memory::decode(&m.encode()), Some(m));
            assert_eq!(EndedHow::from_code(how.code()), Some(how));
        }
        assert_eq!(Memory::decode(&[]), None);
        assert_eq!(Memory::decode(&[3; 17]), None);
        assert_eq!(Memory::decode(&[0; 16]), None);
        assert!(!rememberable("a", 0));
        assert!(rememberable("a", 1));
        assert!(!rememberable("sched:x:1", 1));
    }
}
