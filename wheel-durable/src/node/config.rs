//! How a node runs: what the builder configures (the size of each store
//! call is the store's, `store/batch_limits.rs`). Set before the node
//! starts, read-only after.
//!
//! Owns no changing state: the settings every stage reads.

use std::sync::Arc;
use std::time::Duration;

use crate::flow_key::FlowKeys;
use crate::store::Millis;
use crate::{Fired, Outcome, RetryPolicy};

/// The user's handler.
pub(crate) type Handler = Arc<dyn Fn(&Fired) -> Outcome + Send + Sync>;

/// How a node runs.
#[derive(Clone)]
pub(crate) struct NodeConfig {
    /// For the logs: which timers these are.
    pub(crate) namespace: Arc<str>,
    pub(crate) handler: Handler,
    pub(crate) workers: usize,
    pub(crate) lease: Duration,
    pub(crate) window: Duration,
    pub(crate) poll: Duration,
    pub(crate) max_held: usize,
    pub(crate) retry: RetryPolicy,
    /// How each timer's flow key is found.
    pub(crate) flows: FlowKeys,
    /// Async handlers: run as tasks instead of on `workers` threads (which
    /// then size the runtime the node owns).
    #[cfg(feature = "tokio")]
    pub(crate) tasks: Option<TaskConfig>,
}

impl NodeConfig {
    /// Threads for blocking handlers: none when the handler is async.
    pub(super) fn blocking_workers(&self) -> usize {
        #[cfg(feature = "tokio")]
        if self.tasks.is_some() {
            return 0;
        }
        self.workers
    }
}

/// The boxed future of an async handler.
#[cfg(feature = "tokio")]
pub(crate) type HandlerFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send + 'static>>;

/// An async handler, boxed.
#[cfg(feature = "tokio")]
pub(crate) type AsyncHandler = Arc<dyn Fn(Fired) -> HandlerFuture + Send + Sync>;

/// How a node runs async handlers (see `tasks.rs`).
#[cfg(feature = "tokio")]
#[derive(Clone)]
pub(crate) struct TaskConfig {
    pub(crate) handler: AsyncHandler,
    /// The user's runtime, or `None` for one the node owns.
    pub(crate) runtime: Option<tokio::runtime::Handle>,
    pub(crate) max_in_flight: usize,
    pub(crate) run_timeout: Duration,
    pub(crate) grace: Duration,
}

/// A duration in whole milliseconds, for the store.
pub(super) fn millis(d: Duration) -> Millis {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
