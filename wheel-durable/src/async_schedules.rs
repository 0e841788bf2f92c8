//! [`AsyncTimers`]' schedule calls: [`DurableTimers`]' own, each run on
//! tokio's blocking pool and awaited (feature `tokio`).
//!
//! Node state: none (thin wrappers).

#[cfg(doc)]
use crate::DurableTimers;
use crate::schedule::Schedule;
use crate::{AsyncTimers, DurableError, ScheduleInfo, SchedulePage, Upserted};

impl AsyncTimers {
    /// [`DurableTimers::upsert_schedule`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::upsert_schedule`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::schedule::{Schedule, Spec};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(std::sync::Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?));
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(60))?).build()?;
    /// timers.upsert_schedule("cleanup", &s, b"").await?;
    /// assert!(timers.schedule("cleanup").await?.is_some());
    /// # Ok(()) }
    /// ```
    pub async fn upsert_schedule(
        &self,
        id: &str,
        schedule: &Schedule,
        payload: &[u8],
    ) -> Result<Upserted, DurableError> {
        let (id, s, payload) = (id.to_owned(), schedule.clone(), payload.to_vec());
        self.call(move |t| t.upsert_schedule(&id, &s, &payload))
            .await
    }

    /// [`DurableTimers::upsert_callback_schedule`], awaited (feature `http`).
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::upsert_callback_schedule`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::http::{HttpCallback, Method};
    /// use wheel_durable::schedule::{Schedule, Spec};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(std::sync::Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?));
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(60))?).build()?;
    /// let cb = HttpCallback::new(Method::Post, "http://127.0.0.1:8080/tick");
    /// timers.upsert_callback_schedule("tick", &s, &cb).await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "http")]
    pub async fn upsert_callback_schedule(
        &self,
        id: &str,
        schedule: &Schedule,
        cb: &crate::http::HttpCallback,
    ) -> Result<Upserted, DurableError> {
        let (id, s, cb) = (id.to_owned(), schedule.clone(), cb.clone());
        self.call(move |t| t.upsert_callback_schedule(&id, &s, &cb))
            .await
    }

    /// [`DurableTimers::schedule`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::schedule`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(std::sync::Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?));
    /// assert!(timers.schedule("nobody").await?.is_none());
    /// # Ok(()) }
    /// ```
    pub async fn schedule(&self, id: &str) -> Result<Option<ScheduleInfo>, DurableError> {
        let id = id.to_owned();
        self.call(move |t| t.schedule(&id)).await
    }

    /// [`DurableTimers::schedules`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::schedules`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(std::sync::Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?));
    /// assert!(timers.schedules(10).await?.schedules.is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn schedules(&self, limit: usize) -> Result<SchedulePage, DurableError> {
        self.call(move |t| t.schedules(limit)).await
    }

    /// [`DurableTimers::schedules_after`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::schedules_after`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(std::sync::Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?));
    /// assert!(timers.schedules_after("a", 10).await?.next.is_none());
    /// # Ok(()) }
    /// ```
    pub async fn schedules_after(
        &self,
        after: &str,
        limit: usize,
    ) -> Result<SchedulePage, DurableError> {
        let after = after.to_owned();
        self.call(move |t| t.schedules_after(&after, limit)).await
    }

    /// [`DurableTimers::delete_schedule`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::delete_schedule`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(std::sync::Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?));
    /// assert!(!timers.delete_schedule("nobody").await?);
    /// # Ok(()) }
    /// ```
    pub async fn delete_schedule(&self, id: &str) -> Result<bool, DurableError> {
        let id = id.to_owned();
        self.call(move |t| t.delete_schedule(&id)).await
    }

    /// [`DurableTimers::pause_schedule`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::pause_schedule`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(std::sync::Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?));
    /// assert!(!timers.pause_schedule("nobody").await?);
    /// # Ok(()) }
    /// ```
    pub async fn pause_schedule(&self, id: &str) -> Result<bool, DurableError> {
        let id = id.to_owned();
        self.call(move |t| t.pause_schedule(&id)).await
    }

    /// [`DurableTimers::resume_schedule`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::resume_schedule`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(std::sync::Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?));
    /// assert!(!timers.resume_schedule("nobody").await?);
    /// # Ok(()) }
    /// ```
    pub async fn resume_schedule(&self, id: &str) -> Result<bool, DurableError> {
        let id = id.to_owned();
        self.call(move |t| t.resume_schedule(&id)).await
    }

    /// [`DurableTimers::trigger_schedule`], awaited.
    ///
    /// # Errors
    ///
    /// As for [`DurableTimers::trigger_schedule`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let timers = wheel_durable::AsyncTimers::new(std::sync::Arc::new(wheel_durable::DurableTimers::builder().embedded(dir.path().join("t")).build()?));
    /// assert_eq!(timers.trigger_schedule("nobody").await?, None);
    /// # Ok(()) }
    /// ```
    pub async fn trigger_schedule(&self, id: &str) -> Result<Option<String>, DurableError> {
        let id = id.to_owned();
        self.call(move |t| t.trigger_schedule(&id)).await
    }
}
