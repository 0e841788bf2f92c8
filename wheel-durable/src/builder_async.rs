//! The builder's settings for async handlers (feature `tokio`): the
//! handler, the runtime its tasks run on, and their bounds.
//!
//! Node state: none. It owns the async settings until `build` hands them to
//! the async dispatcher (`node/tasks.rs`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;

use super::node::tasks::{AsyncHandler, HandlerFuture, TaskConfig};
use super::{DurableTimersBuilder, Fired, Outcome};

/// Async handler settings, until `build`.
#[derive(Clone)]
pub(super) struct AsyncOptions {
    handler: Option<AsyncHandler>,
    runtime: Option<Handle>,
    max_in_flight: usize,
    run_timeout: Duration,
    grace: Duration,
}

impl Default for AsyncOptions {
    fn default() -> Self {
        AsyncOptions {
            handler: None,
            runtime: None,
            max_in_flight: 4096,
            run_timeout: Duration::from_secs(60),
            grace: Duration::from_secs(10),
        }
    }
}

impl AsyncOptions {
    /// The node's task settings, if it has an async handler.
    pub(super) fn config(&self) -> Option<TaskConfig> {
        Some(self.config_with(self.handler.clone()?))
    }

    /// The node's task settings with `handler` (the HTTP one, which calls
    /// the user's for other timers).
    pub(super) fn config_with(&self, handler: AsyncHandler) -> TaskConfig {
        TaskConfig {
            handler,
            runtime: self.runtime.clone(),
            max_in_flight: self.max_in_flight,
            run_timeout: self.run_timeout,
            grace: self.grace,
        }
    }

    /// The user's async handler, if any (for the HTTP handler to call).
    #[cfg(feature = "http")]
    pub(super) fn handler(&self) -> Option<AsyncHandler> {
        self.handler.clone()
    }

    /// Why these settings cannot work with the rest, if so.
    pub(super) fn check(&self, blocking: bool, http: bool) -> Result<(), &'static str> {
        if self.handler.is_none() && !http {
            return Ok(());
        }
        if blocking && self.handler.is_some() {
            return Err("choose one handler: handler or handler_async");
        }
        if self.max_in_flight == 0 || self.run_timeout.is_zero() {
            return Err("max_in_flight and run_timeout must be non-zero");
        }
        Ok(())
    }
}

impl DurableTimersBuilder {
    /// Fires due timers with an async handler (feature `tokio`): each run
    /// is a task on a tokio runtime, so a node keeps thousands of runs in
    /// flight (a run waiting on the network costs a task, not a thread).
    /// Leases, fences, retries, dead letters and shutdown work as for
    /// [`handler`](Self::handler); a future that panics counts as
    /// [`Outcome::Retry`], and one still pending after
    /// [`run_timeout`](Self::run_timeout) is cancelled (dropped) and counts
    /// as `Retry` too.
    ///
    /// The tasks run on the runtime given to [`runtime`](Self::runtime),
    /// or on one the node owns with [`workers`](Self::workers) threads.
    /// At most [`max_in_flight`](Self::max_in_flight) run at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::{DurableTimers, Outcome};
    ///
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let (tx, rx) = std::sync::mpsc::sync_channel(1);
    /// let timers = DurableTimers::builder()
    ///     .embedded(dir.path().join("timers"))
    ///     .handler_async(move |t| {
    ///         let tx = tx.clone();
    ///         async move {
    ///             // An HTTP call or a database write would be awaited here.
    ///             tx.send(t.key).unwrap();
    ///             Outcome::Done
    ///         }
    ///     })
    ///     .build()?;
    /// timers.add("reminder:1", Duration::from_millis(20), b"")?;
    /// assert_eq!(rx.recv().unwrap(), "reminder:1");
    /// timers.shutdown()?;
    /// # Ok(()) }
    /// ```
    pub fn handler_async<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Fired) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Outcome> + Send + 'static,
    {
        self.tasks.handler = Some(Arc::new(move |t: Fired| -> HandlerFuture {
            Box::pin(f(t))
        }));
        self
    }

    /// Runs [`handler_async`](Self::handler_async)'s tasks on this
    /// runtime instead of one the node owns (feature `tokio`). The node
    /// never shuts it down.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let rt = tokio::runtime::Runtime::new().unwrap();
    /// let timers = wheel_durable::DurableTimers::builder()
    ///     .embedded(dir.path().join("timers"))
    ///     .runtime(rt.handle().clone())
    ///     .handler_async(|_| async { wheel_durable::Outcome::Done })
    ///     .build()
    ///     .unwrap();
    /// timers.shutdown().unwrap();
    /// ```
    pub fn runtime(mut self, handle: Handle) -> Self {
        self.tasks.runtime = Some(handle);
        self
    }

    /// Async runs in flight at most (feature `tokio`; default 4096, at
    /// least 1). Started timers past it wait in the node's queue.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = wheel_durable::DurableTimers::builder().max_in_flight(10_000);
    /// # drop(b);
    /// ```
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.tasks.max_in_flight = n;
        self
    }

    /// How long an async run may take (feature `tokio`; default 60 s): a
    /// future still pending then is cancelled (dropped) and the run counts
    /// as [`Outcome::Retry`]. Without it a future that never finishes
    /// would hold its timer, renewed, forever.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::DurableTimers::builder().run_timeout(Duration::from_secs(10));
    /// # drop(b);
    /// ```
    pub fn run_timeout(mut self, d: Duration) -> Self {
        self.tasks.run_timeout = d;
        self
    }

    /// How long [`shutdown`](super::DurableTimers::shutdown) waits for
    /// async runs in flight (feature `tokio`; default 10 s). Runs still
    /// going then are cancelled and their timers handed back to the store,
    /// due at once, so another node runs them again.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = wheel_durable::DurableTimers::builder().shutdown_grace(Duration::from_secs(2));
    /// # drop(b);
    /// ```
    pub fn shutdown_grace(mut self, d: Duration) -> Self {
        self.tasks.grace = d;
        self
    }
}
