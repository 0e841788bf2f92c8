//! tokio, "a task per timer": `spawn(async { sleep_until(at).await; f() })` on a
//! multi-threaded runtime (one worker per core, tokio's default), `abort()` to
//! cancel. The deadline is computed when scheduling, not when the task first
//! runs, so tokio is not charged for its spawn latency twice.

use super::{ThreadedTimer, TimerProducer};
use std::time::Duration;
use tokio::runtime::{Handle, Runtime};
use tokio::task::JoinHandle;

/// A multi-threaded tokio runtime.
pub struct TokioTasks {
    rt: Runtime,
}

/// A producer: a runtime handle.
pub struct TokioProducer {
    handle: Handle,
}

impl ThreadedTimer for TokioTasks {
    type Producer = TokioProducer;

    fn start() -> TokioTasks {
        TokioTasks {
            rt: tokio::runtime::Builder::new_multi_thread()
                .enable_time()
                .build()
                .expect("tokio multi-thread runtime"),
        }
    }

    fn producer(&self) -> TokioProducer {
        TokioProducer {
            handle: self.rt.handle().clone(),
        }
    }

    fn shutdown(self) {
        self.rt.shutdown_timeout(Duration::from_secs(10));
    }
}

impl TimerProducer for TokioProducer {
    type Handle = JoinHandle<()>;

    fn schedule<F: FnOnce() + Send + 'static>(&mut self, delay: Duration, f: F) -> JoinHandle<()> {
        let at = tokio::time::Instant::now() + delay;
        self.handle.spawn(async move {
            tokio::time::sleep_until(at).await;
            f();
        })
    }

    fn cancel(&mut self, task: JoinHandle<()>) -> Option<bool> {
        task.abort();
        None
    }
}
