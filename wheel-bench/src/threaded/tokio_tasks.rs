//! tokio, "a task per timer": `spawn(async { sleep_until(at).await; f() })` on a
//! multi-threaded runtime (one worker per core, tokio's default), `abort()` to
//! cancel. The deadline is computed when scheduling, not when the task first
//! runs, so tokio is not charged for its spawn latency twice.

use super::{ThreadedTimer, TimerProducer};
use std::time::Duration;
use tokio::runtime::{Handle, Runtime};
use tokio::task::JoinHandle;

/// A multi-threaded tokio runtime.
pub struct TokioTasks(Runtime);

impl ThreadedTimer for TokioTasks {
    /// A handle to the runtime, which spawns the timers' tasks.
    type Producer = Handle;

    fn start() -> TokioTasks {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_time()
            .build()
            .expect("tokio multi-thread runtime");
        TokioTasks(runtime)
    }

    fn producer(&self) -> Handle {
        self.0.handle().clone()
    }

    fn shutdown(self) {
        self.0.shutdown_timeout(Duration::from_secs(10));
    }
}

impl TimerProducer for Handle {
    type Handle = JoinHandle<()>;

    fn schedule<F: FnOnce() + Send + 'static>(&mut self, delay: Duration, f: F) -> JoinHandle<()> {
        let at = tokio::time::Instant::now() + delay;
        self.spawn(async move {
            tokio::time::sleep_until(at).await;
            f();
        })
    }

    fn cancel(&mut self, task: JoinHandle<()>) -> Option<bool> {
        task.abort();
        None
    }
}
