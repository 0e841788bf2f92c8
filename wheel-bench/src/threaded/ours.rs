//! Ours: `wheel::Scheduler` at its default settings (a tick thread over the
//! wheel fed by lock-free queues, callbacks on a worker pool, slot handles).

use super::{ThreadedTimer, TimerProducer};
use std::time::Duration;
use wheel::{Scheduler, TimerHandle};

/// `wheel::Scheduler` behind [`ThreadedTimer`].
pub struct OurScheduler(Scheduler);

impl ThreadedTimer for OurScheduler {
    /// A clone of the scheduler: clones share one engine.
    type Producer = Scheduler;

    fn start() -> OurScheduler {
        OurScheduler(Scheduler::new())
    }

    fn producer(&self) -> Scheduler {
        self.0.clone()
    }

    fn shutdown(self) {
        self.0.shutdown();
    }

    fn wakeups(&self) -> Option<u64> {
        Some(self.0.stats().wakeups)
    }
}

impl TimerProducer for Scheduler {
    type Handle = TimerHandle;

    fn schedule<F: FnOnce() + Send + 'static>(&mut self, delay: Duration, f: F) -> TimerHandle {
        Scheduler::schedule(self, delay, f).expect("the scheduler is running and unbounded")
    }

    fn cancel(&mut self, handle: TimerHandle) -> Option<bool> {
        Some(handle.cancel())
    }
}
