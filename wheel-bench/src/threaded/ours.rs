//! Ours: `wheel::Scheduler` at its default settings (a tick thread over the
//! wheel fed by lock-free queues, callbacks on a worker pool, slot handles).

use super::{ThreadedTimer, TimerProducer};
use std::time::Duration;
use wheel::{Scheduler, TimerHandle};

/// `wheel::Scheduler` behind [`ThreadedTimer`].
pub struct OurScheduler {
    scheduler: Scheduler,
}

/// A producer: a clone of the scheduler (clones share one engine).
pub struct OurProducer {
    scheduler: Scheduler,
}

impl ThreadedTimer for OurScheduler {
    type Producer = OurProducer;

    fn start() -> OurScheduler {
        OurScheduler {
            scheduler: Scheduler::new(),
        }
    }

    fn producer(&self) -> OurProducer {
        OurProducer {
            scheduler: self.scheduler.clone(),
        }
    }

    fn shutdown(self) {
        self.scheduler.shutdown();
    }
}

impl TimerProducer for OurProducer {
    type Handle = TimerHandle;

    fn schedule<F: FnOnce() + Send + 'static>(&mut self, delay: Duration, f: F) -> TimerHandle {
        self.scheduler
            .schedule(delay, f)
            .expect("the scheduler is running and unbounded")
    }

    fn cancel(&mut self, handle: TimerHandle) -> Option<bool> {
        Some(handle.cancel())
    }
}
