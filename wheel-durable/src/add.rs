//! How an add treats a key that is taken ([`AddMode`], [`AddOrGet`]), and
//! how a large batch is cut into store operations of bounded size.
//!
//! One store operation holds at most [`MAX_CHUNK_TIMERS`] timers and
//! [`MAX_CHUNK_BYTES`] of keys and payloads (a single larger timer goes
//! alone), so that one call never blocks a Redis server for long or makes
//! one huge embedded write batch. Each chunk is atomic; a batch of several
//! chunks is not: a failure in a later chunk leaves the earlier ones
//! stored.
//!
//! An add-or-get ([`add_or_get`]) is the store's atomic add-if-absent,
//! then, for each timer it kept out, a read of the timer that kept it
//! out. The read is a second store call, so the timer may end between the
//! two (it ran, or was cancelled): the key is free again, and the add is
//! tried again, at most [`ADD_TRIES`] times, after which the answer is
//! [`AddOrGet::Churning`]. Nothing is ever overwritten: every add is the
//! atomic add-if-absent. A key kept out by the dedup window's memory
//! rather than a timer reads back as [`AddOrGet::Ended`] (`dedup.rs`).
//!
//! Node state: none. It owns nothing of the node's stages; an add reaches the
//! store through the store trait and wakes the nodes through the store's
//! notification.

use std::time::SystemTime;

use super::store::{NewTimer, Store, StoreResult};
use super::{DurableError, DurableTimers, EndedTimer, TimerInfo};

/// What an add does when a timer with the same key exists, in any state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(crate) enum AddMode {
    /// Replace the timer with this key, whatever its state (pending,
    /// claimed, running or a dead letter): a started run's outcome is then
    /// ignored.
    #[default]
    Replace,
    /// Leave an existing timer with this key untouched, whatever its state;
    /// add only when there is none.
    IfAbsent,
}

/// What an add-or-get came to: the timer was added, or a timer with its
/// key exists (in any state: pending, claimed, running or a dead letter)
/// and was left untouched, or one with its key ended within the dedup
/// window (see
/// [`DurableTimersBuilder::dedup_window`](crate::DurableTimersBuilder::dedup_window)).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use wheel_durable::{AddOrGet, DurableTimers};
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
/// let at = SystemTime::now() + Duration::from_secs(60);
/// assert_eq!(timers.add_at_or_get("a", at, b"1")?, AddOrGet::Added);
/// match timers.add_at_or_get("a", at, b"2")? {
///     AddOrGet::Existing(info) => assert_eq!(info.payload, b"1"),
///     other => panic!("{other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddOrGet {
    /// Added by this call.
    Added,
    /// Not added: this timer, as read back, has the key.
    Existing(TimerInfo),
    /// Not added: a timer with the key ended within the dedup window;
    /// this is how and when. Nothing was written.
    Ended(EndedTimer),
    /// Not added: a timer had the key each time this call tried to add,
    /// and had ended (it ran, or was cancelled) each time it tried to read
    /// it: timers under this key keep being added and ending. Nothing was
    /// written; the call may be made again.
    Churning,
}

impl AddOrGet {
    /// Whether this call added the timer.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::AddOrGet;
    /// assert!(AddOrGet::Added.is_added());
    /// assert!(!AddOrGet::Churning.is_added());
    /// ```
    pub fn is_added(&self) -> bool {
        matches!(self, AddOrGet::Added)
    }
}

/// How often an add-or-get tries while the key's timers keep ending
/// between its add and its read (bounded, so that churn cannot hold a
/// caller).
pub(crate) const ADD_TRIES: usize = 4;

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

/// The add-or-get calls (the other calls are in `timers.rs`).
impl DurableTimers {
    /// Adds a timer due at `due` unless a timer with this key exists, in
    /// any state (pending, claimed, running or a dead letter), which is
    /// then left untouched and answered: [`AddOrGet::Existing`] with the
    /// timer as read back. The check and the add are one atomic store
    /// operation: of concurrent calls for one key, from any nodes, exactly
    /// one adds. Reading the existing timer is a second store call; a
    /// timer that ends in between frees its key, and the add is tried
    /// again (see [`AddOrGet::Churning`]).
    ///
    /// # Errors
    ///
    /// As for [`add_at`](Self::add_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::AddOrGet;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let at = SystemTime::now() + Duration::from_secs(3600);
    /// assert!(timers.add_at_or_get("invoice:5", at, b"first")?.is_added());
    /// let AddOrGet::Existing(info) = timers.add_at_or_get("invoice:5", at, b"second")? else {
    ///     panic!("the first one is kept");
    /// };
    /// assert_eq!(info.payload, b"first");
    /// # Ok(()) }
    /// ```
    pub fn add_at_or_get(
        &self,
        key: &str,
        due: SystemTime,
        payload: &[u8],
    ) -> Result<AddOrGet, DurableError> {
        self.add_many_or_get(&[(key, due, payload)])
            .map(|mut answers| answers.pop().unwrap_or(AddOrGet::Churning))
    }

    /// Adds a callback timer like [`add_callback_at`](Self::add_callback_at),
    /// unless a timer with this key exists, in any state; answers as
    /// [`add_at_or_get`](Self::add_at_or_get) (feature `http`; the
    /// existing timer's callback is
    /// [`TimerInfo::callback`](crate::TimerInfo::callback)).
    ///
    /// # Errors
    ///
    /// As for [`add_callback_at`](Self::add_callback_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::http::{HttpCallback, Method};
    /// use wheel_durable::AddOrGet;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let at = SystemTime::now() + Duration::from_secs(3600);
    /// let cb = HttpCallback::new(Method::Post, "http://127.0.0.1:8080/remind/9");
    /// assert!(timers.add_callback_at_or_get("remind:9", at, &cb)?.is_added());
    /// let AddOrGet::Existing(info) = timers.add_callback_at_or_get("remind:9", at, &cb)? else {
    ///     panic!("added once");
    /// };
    /// assert_eq!(info.callback(), Some(cb));
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "http")]
    pub fn add_callback_at_or_get(
        &self,
        key: &str,
        due: SystemTime,
        cb: &super::http::HttpCallback,
    ) -> Result<AddOrGet, DurableError> {
        self.add_at_or_get(key, due, &cb.to_payload()?)
    }

    /// Adds many callback timers as
    /// [`add_callback_at_or_get`](Self::add_callback_at_or_get) each, in
    /// order, chunked as [`add_many`](Self::add_many) (each chunk one
    /// atomic store operation, the call not); one answer per timer. A key
    /// that comes twice is added by its first entry; the later one gets
    /// [`AddOrGet::Existing`]. Every callback and input is checked before
    /// anything is written (feature `http`).
    ///
    /// # Errors
    ///
    /// As for [`add_callback_at`](Self::add_callback_at), for the first bad
    /// timer (nothing added), or the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::http::{HttpCallback, Method};
    /// use wheel_durable::AddOrGet;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let at = SystemTime::now() + Duration::from_secs(3600);
    /// let cb = HttpCallback::new(Method::Post, "http://127.0.0.1:8080/remind");
    /// let answers = timers.add_callbacks_or_get(&[("a", at, &cb), ("a", at, &cb), ("b", at, &cb)])?;
    /// assert!(answers[0].is_added() && answers[2].is_added());
    /// assert!(matches!(&answers[1], AddOrGet::Existing(info) if info.key == "a"));
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "http")]
    pub fn add_callbacks_or_get(
        &self,
        timers: &[(&str, SystemTime, &super::http::HttpCallback)],
    ) -> Result<Vec<AddOrGet>, DurableError> {
        let payloads = timers
            .iter()
            .map(|(_, _, cb)| cb.to_payload())
            .collect::<Result<Vec<_>, _>>()?;
        let entries: Vec<(&str, SystemTime, &[u8])> = timers
            .iter()
            .zip(&payloads)
            .map(|(&(key, due, _), payload)| (key, due, payload.as_slice()))
            .collect();
        self.add_many_or_get(&entries)
    }

    /// Adds many timers as [`add_at_or_get`](Self::add_at_or_get) each, in
    /// order, chunked as [`add_many`](Self::add_many) (each chunk one
    /// atomic store operation, the call not); one answer per timer. A key
    /// that comes twice is added by its first entry; the later one gets
    /// [`AddOrGet::Existing`].
    ///
    /// # Errors
    ///
    /// As for [`add_many`](Self::add_many).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::AddOrGet;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let at = SystemTime::now() + Duration::from_secs(60);
    /// timers.add_at("a", at, b"old")?;
    /// let batch = [("a", at, b"new".as_slice()), ("b", at, b"new".as_slice())];
    /// let answers = timers.add_many_or_get(&batch)?;
    /// assert!(matches!(&answers[0], AddOrGet::Existing(info) if info.payload == b"old"));
    /// assert_eq!(answers[1], AddOrGet::Added);
    /// # Ok(()) }
    /// ```
    pub fn add_many_or_get(
        &self,
        timers: &[(&str, SystemTime, &[u8])],
    ) -> Result<Vec<AddOrGet>, DurableError> {
        let batch = self.checked(timers)?;
        add_or_get(self.store.as_ref(), &batch)
    }
}

/// Adds each of `timers` unless its key is taken, chunk by chunk, and
/// reads the timer that holds each taken key (see the module docs); one
/// answer per timer, in order.
pub(crate) fn add_or_get(store: &dyn Store, timers: &[NewTimer<'_>]) -> StoreResult<Vec<AddOrGet>> {
    let added = add_bounded(store, timers, AddMode::IfAbsent)?;
    let mut out = Vec::with_capacity(timers.len());
    for (t, added) in timers.iter().zip(added) {
        out.push(if added {
            AddOrGet::Added
        } else {
            existing(store, t)?
        });
    }
    Ok(out)
}

/// The timer holding `t`'s key, which an add just found; adds `t` after
/// all when that timer ended before the read.
fn existing(store: &dyn Store, t: &NewTimer<'_>) -> StoreResult<AddOrGet> {
    for _ in 0..ADD_TRIES {
        if let Some(info) = store.get(t.key)? {
            return Ok(AddOrGet::Existing(info));
        }
        if let Some(memory) = store.ended(t.key)? {
            return Ok(AddOrGet::Ended(memory.ended(t.key)));
        }
        if store
            .add(std::slice::from_ref(t), AddMode::IfAbsent)?
            .first()
            == Some(&true)
        {
            return Ok(AddOrGet::Added);
        }
    }
    Ok(AddOrGet::Churning)
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
