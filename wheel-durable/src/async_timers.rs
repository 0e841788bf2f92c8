//! [`AsyncTimers`]: the calls of [`DurableTimers`] for callers inside a
//! tokio runtime (feature `tokio`).
//!
//! Every store call blocks its thread until the store answers: the
//! embedded store's writer answers once its group is fsynced, and reads
//! run on the caller's thread; the Redis store's client waits on its
//! socket. So each call here runs the blocking call on the runtime's
//! blocking pool (`spawn_blocking`) and awaits it: the runtime's worker
//! threads stay free for I/O, and a caller makes no `spawn_blocking` of its
//! own. The arguments are copied into the call (a key, a payload), since
//! the blocking thread may outlive the caller's borrow when the caller's
//! future is dropped; a call whose future is dropped still completes.
//!
//! Invariants: an `AsyncTimers` only shares its [`DurableTimers`] (an
//! `Arc`); it keeps no state of its own, so any number of clones may call
//! at once, and the sync calls on the same `DurableTimers` stay usable
//! beside it. A panic inside a store call resumes in the awaiting task,
//! as it would in a sync caller; a call the runtime dropped before it ran
//! (the runtime shutting down) answers [`DurableError::Closed`].
//!
//! Node state: none. It holds an `Arc` of the [`DurableTimers`] and hands
//! each call to the runtime's blocking pool.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::{
    AddOrGet, Cursor, DeadFilter, DeadLetter, DurableError, DurableStats, DurableTimers, Listing,
    Page, Replay, TimerInfo,
};

/// The calls of [`DurableTimers`] as futures, for callers on a tokio
/// runtime (feature `tokio`): the same names, arguments and answers, each
/// awaited instead of blocking the caller's thread. Cheap to clone: every
/// clone shares one [`DurableTimers`].
///
/// Each call must be awaited inside a tokio runtime (it runs on the
/// runtime's blocking pool; see the module docs for why).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use wheel_durable::{AsyncTimers, DurableTimers};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), wheel_durable::DurableError> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = Arc::new(DurableTimers::builder().embedded(dir.path().join("timers")).build()?);
/// let async_timers = AsyncTimers::new(timers.clone());
/// async_timers.add("order:17", Duration::from_secs(1800), b"close").await?;
/// assert!(async_timers.get("order:17").await?.is_some());
/// assert!(async_timers.cancel("order:17").await?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct AsyncTimers {
    timers: Arc<DurableTimers>,
}

impl From<Arc<DurableTimers>> for AsyncTimers {
    fn from(timers: Arc<DurableTimers>) -> AsyncTimers {
        AsyncTimers::new(timers)
    }
}

impl AsyncTimers {
    /// The async calls of `timers`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let async_timers = wheel_durable::AsyncTimers::new(Arc::new(timers));
    /// # drop(async_timers);
    /// # Ok(()) }
    /// ```
    pub fn new(timers: Arc<DurableTimers>) -> AsyncTimers {
        AsyncTimers { timers }
    }

    /// The [`DurableTimers`] these calls go to, for its sync calls.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?);
    /// let async_timers = wheel_durable::AsyncTimers::new(timers.clone());
    /// assert!(Arc::ptr_eq(async_timers.timers(), &timers));
    /// # Ok(()) }
    /// ```
    pub fn timers(&self) -> &Arc<DurableTimers> {
        &self.timers
    }

    /// Runs `f` on the runtime's blocking pool and awaits its answer.
    pub(crate) async fn call<T, F>(&self, f: F) -> Result<T, DurableError>
    where
        F: FnOnce(&DurableTimers) -> Result<T, DurableError> + Send + 'static,
        T: Send + 'static,
    {
        let timers = self.timers.clone();
        match tokio::task::spawn_blocking(move || f(&timers)).await {
            Ok(answer) => answer,
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // Only a runtime shutting down drops a blocking task
                // before it runs.
                Err(_) => Err(DurableError::Closed),
            },
        }
    }

    /// [`DurableTimers::add`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::add`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use std::time::Duration;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// timers.add("heartbeat:7", Duration::from_secs(30), b"").await?;
    /// # Ok(()) }
    /// ```
    pub async fn add(
        &self,
        key: &str,
        delay: Duration,
        payload: &[u8],
    ) -> Result<(), DurableError> {
        let (key, payload) = (key.to_owned(), payload.to_vec());
        self.call(move |t| t.add(&key, delay, &payload)).await
    }

    /// [`DurableTimers::add_at`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::add_at`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use std::time::{Duration, SystemTime};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// let tomorrow = SystemTime::now() + Duration::from_secs(24 * 3600);
    /// timers.add_at("rate:order:17", tomorrow, b"auto-rate").await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_at(
        &self,
        key: &str,
        due: SystemTime,
        payload: &[u8],
    ) -> Result<(), DurableError> {
        let (key, payload) = (key.to_owned(), payload.to_vec());
        self.call(move |t| t.add_at(&key, due, &payload)).await
    }

    /// [`DurableTimers::add_at_or_get`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::add_at_or_get`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use std::time::{Duration, SystemTime};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// let at = SystemTime::now() + Duration::from_secs(3600);
    /// assert!(timers.add_at_or_get("invoice:5", at, b"first").await?.is_added());
    /// assert!(!timers.add_at_or_get("invoice:5", at, b"second").await?.is_added());
    /// # Ok(()) }
    /// ```
    pub async fn add_at_or_get(
        &self,
        key: &str,
        due: SystemTime,
        payload: &[u8],
    ) -> Result<AddOrGet, DurableError> {
        let (key, payload) = (key.to_owned(), payload.to_vec());
        self.call(move |t| t.add_at_or_get(&key, due, &payload))
            .await
    }

    /// [`DurableTimers::add_many`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::add_many`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use std::time::{Duration, SystemTime};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// let at = SystemTime::now() + Duration::from_secs(60);
    /// timers.add_many(&[("a", at, b"1".as_slice()), ("b", at, b"2".as_slice())]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_many(&self, timers: &[(&str, SystemTime, &[u8])]) -> Result<(), DurableError> {
        let owned = owned(timers);
        self.call(move |t| t.add_many(&borrowed(&owned))).await
    }

    /// [`DurableTimers::add_many_or_get`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::add_many_or_get`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::AddOrGet;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// let at = SystemTime::now() + Duration::from_secs(60);
    /// let batch = [("a", at, b"1".as_slice()), ("a", at, b"2".as_slice())];
    /// let answers = timers.add_many_or_get(&batch).await?;
    /// assert_eq!(answers[0], AddOrGet::Added);
    /// assert!(matches!(&answers[1], AddOrGet::Existing(info) if info.payload == b"1"));
    /// # Ok(()) }
    /// ```
    pub async fn add_many_or_get(
        &self,
        timers: &[(&str, SystemTime, &[u8])],
    ) -> Result<Vec<AddOrGet>, DurableError> {
        let owned = owned(timers);
        self.call(move |t| t.add_many_or_get(&borrowed(&owned)))
            .await
    }

    /// [`DurableTimers::add_callback_at`], awaited (feature `http`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::add_callback_at`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::http::{HttpCallback, Method};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// let at = SystemTime::now() + Duration::from_secs(3600);
    /// let cb = HttpCallback::new(Method::Post, "http://127.0.0.1:8080/remind/9");
    /// timers.add_callback_at("remind:9", at, &cb).await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "http")]
    pub async fn add_callback_at(
        &self,
        key: &str,
        due: SystemTime,
        cb: &crate::http::HttpCallback,
    ) -> Result<(), DurableError> {
        let (key, cb) = (key.to_owned(), cb.clone());
        self.call(move |t| t.add_callback_at(&key, due, &cb)).await
    }

    /// [`DurableTimers::add_callback_at_or_get`], awaited (feature `http`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::add_callback_at_or_get`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::http::{HttpCallback, Method};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// let at = SystemTime::now() + Duration::from_secs(3600);
    /// let cb = HttpCallback::new(Method::Post, "http://127.0.0.1:8080/remind/9");
    /// assert!(timers.add_callback_at_or_get("remind:9", at, &cb).await?.is_added());
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "http")]
    pub async fn add_callback_at_or_get(
        &self,
        key: &str,
        due: SystemTime,
        cb: &crate::http::HttpCallback,
    ) -> Result<AddOrGet, DurableError> {
        let (key, cb) = (key.to_owned(), cb.clone());
        self.call(move |t| t.add_callback_at_or_get(&key, due, &cb))
            .await
    }

    /// [`DurableTimers::add_callbacks_or_get`], awaited (feature `http`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::add_callbacks_or_get`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::http::{HttpCallback, Method};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// let at = SystemTime::now() + Duration::from_secs(3600);
    /// let cb = HttpCallback::new(Method::Post, "http://127.0.0.1:8080/remind");
    /// let answers = timers.add_callbacks_or_get(&[("a", at, &cb), ("b", at, &cb)]).await?;
    /// assert!(answers.iter().all(|a| a.is_added()));
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "http")]
    pub async fn add_callbacks_or_get(
        &self,
        timers: &[(&str, SystemTime, &crate::http::HttpCallback)],
    ) -> Result<Vec<AddOrGet>, DurableError> {
        let owned: Vec<(String, SystemTime, crate::http::HttpCallback)> = timers
            .iter()
            .map(|&(key, due, cb)| (key.to_owned(), due, cb.clone()))
            .collect();
        self.call(move |t| {
            let batch: Vec<_> = owned
                .iter()
                .map(|(k, due, cb)| (k.as_str(), *due, cb))
                .collect();
            t.add_callbacks_or_get(&batch)
        })
        .await
    }

    /// [`DurableTimers::cancel`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::cancel`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// assert!(!timers.cancel("nothing").await?);
    /// # Ok(()) }
    /// ```
    pub async fn cancel(&self, key: &str) -> Result<bool, DurableError> {
        let key = key.to_owned();
        self.call(move |t| t.cancel(&key)).await
    }

    /// [`DurableTimers::reset_at`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::reset_at`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use std::time::{Duration, SystemTime};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// timers.add("session:9", Duration::from_secs(60), b"").await?;
    /// let later = SystemTime::now() + Duration::from_secs(600);
    /// assert!(timers.reset_at("session:9", later).await?);
    /// # Ok(()) }
    /// ```
    pub async fn reset_at(&self, key: &str, due: SystemTime) -> Result<bool, DurableError> {
        let key = key.to_owned();
        self.call(move |t| t.reset_at(&key, due)).await
    }

    /// [`DurableTimers::get`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::get`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// assert_eq!(timers.get("nothing").await?, None);
    /// # Ok(()) }
    /// ```
    pub async fn get(&self, key: &str) -> Result<Option<TimerInfo>, DurableError> {
        let key = key.to_owned();
        self.call(move |t| t.get(&key)).await
    }

    /// [`DurableTimers::list`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::list`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use wheel_durable::Listing;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// let page = timers.list(Listing::Pending, 100).await?;
    /// assert!(page.timers.is_empty() && page.next.is_none());
    /// # Ok(()) }
    /// ```
    pub async fn list(&self, which: Listing, limit: usize) -> Result<Page, DurableError> {
        self.call(move |t| t.list(which, limit)).await
    }

    /// [`DurableTimers::list_after`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::list_after`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use std::time::Duration;
    /// use wheel_durable::Listing;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// timers.add("a", Duration::from_secs(60), b"").await?;
    /// timers.add("b", Duration::from_secs(90), b"").await?;
    /// let first = timers.list(Listing::Pending, 1).await?;
    /// let second = timers.list_after(&first.next.unwrap(), 1).await?;
    /// assert_eq!(second.timers[0].key, "b");
    /// # Ok(()) }
    /// ```
    pub async fn list_after(&self, cursor: &Cursor, limit: usize) -> Result<Page, DurableError> {
        let cursor = cursor.clone();
        self.call(move |t| t.list_after(&cursor, limit)).await
    }

    /// [`DurableTimers::dead_letters`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::dead_letters`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// assert!(timers.dead_letters(100).await?.is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn dead_letters(&self, limit: usize) -> Result<Vec<DeadLetter>, DurableError> {
        self.call(move |t| t.dead_letters(limit)).await
    }

    /// [`DurableTimers::retry_dead`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::retry_dead`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use std::time::SystemTime;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// assert!(!timers.retry_dead("hook:3", SystemTime::now()).await?);
    /// # Ok(()) }
    /// ```
    pub async fn retry_dead(&self, key: &str, due: SystemTime) -> Result<bool, DurableError> {
        let key = key.to_owned();
        self.call(move |t| t.retry_dead(&key, due)).await
    }

    /// [`DurableTimers::replay_dead`], awaited (only its start: the replay
    /// runs on its own thread; [`Replay::wait_async`] awaits its end).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::replay_dead`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// let filter = wheel_durable::DeadFilter::default().reason("HTTP 503");
    /// let replay = timers.replay_dead(&filter, 200.0, None).await?;
    /// assert_eq!(replay.wait_async().await.revived, 0);
    /// # Ok(()) }
    /// ```
    pub async fn replay_dead(
        &self,
        filter: &DeadFilter,
        rate: f64,
        limit: Option<u64>,
    ) -> Result<Replay, DurableError> {
        let filter = filter.clone();
        self.call(move |t| t.replay_dead(&filter, rate, limit))
            .await
    }

    /// [`DurableTimers::shutdown`], awaited: hands the claims back, waits
    /// for running handlers and closes the store, on the blocking pool.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::shutdown`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// timers.shutdown().await?;
    /// assert!(matches!(timers.get("k").await, Err(wheel_durable::DurableError::Closed)));
    /// # Ok(()) }
    /// ```
    pub async fn shutdown(&self) -> Result<(), DurableError> {
        self.call(|t| t.shutdown()).await
    }

    /// [`DurableTimers::stats`], awaited: waits at most 25 ms for the
    /// store, as it does. At a runtime's shutdown, the stats of nothing
    /// known ([`DurableStats::default`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("timers")).build()?));
    /// let s = timers.stats().await;
    /// assert_eq!(s.fired, 0);
    /// # Ok(()) }
    /// ```
    pub async fn stats(&self) -> DurableStats {
        self.call(|t| Ok(t.stats())).await.unwrap_or_default()
    }
}

/// Owned copies of a batch's keys and payloads, for the blocking thread.
fn owned(timers: &[(&str, SystemTime, &[u8])]) -> Vec<(String, SystemTime, Vec<u8>)> {
    timers
        .iter()
        .map(|&(key, due, payload)| (key.to_owned(), due, payload.to_vec()))
        .collect()
}

/// The batch of [`owned`] as the sync calls take it.
fn borrowed(owned: &[(String, SystemTime, Vec<u8>)]) -> Vec<(&str, SystemTime, &[u8])> {
    owned
        .iter()
        .map(|(key, due, payload)| (key.as_str(), *due, payload.as_slice()))
        .collect()
}
