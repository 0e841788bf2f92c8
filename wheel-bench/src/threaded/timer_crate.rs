//! The `timer` crate (0.2): a `BinaryHeap` scheduler thread behind a channel and a
//! forwarding thread; callbacks run on the scheduler thread. Its API takes
//! `chrono::Duration`; dropping the returned `Guard` cancels the timer.

use super::{ThreadedTimer, TimerProducer};
use std::sync::Arc;
use std::time::Duration;

/// The `timer` crate's `Timer`.
pub struct TimerCrate {
    timer: Arc<timer::Timer>,
}

/// A producer: the shared `Timer` (it is `Sync`).
pub struct TimerCrateProducer {
    timer: Arc<timer::Timer>,
}

impl ThreadedTimer for TimerCrate {
    type Producer = TimerCrateProducer;

    fn start() -> TimerCrate {
        TimerCrate {
            timer: Arc::new(timer::Timer::new()),
        }
    }

    fn producer(&self) -> TimerCrateProducer {
        TimerCrateProducer {
            timer: Arc::clone(&self.timer),
        }
    }

    /// Dropping the last `Timer` stops its threads (they are not joinable).
    fn shutdown(self) {}
}

impl TimerProducer for TimerCrateProducer {
    type Handle = timer::Guard;

    fn schedule<F: FnOnce() + Send + 'static>(&mut self, delay: Duration, f: F) -> timer::Guard {
        let delay = chrono::Duration::from_std(delay).expect("delay fits chrono::Duration");
        // The crate wants `FnMut`; the callback runs at most once.
        let mut f = Some(f);
        self.timer.schedule_with_delay(delay, move || {
            if let Some(f) = f.take() {
                f();
            }
        })
    }

    fn cancel(&mut self, guard: timer::Guard) -> Option<bool> {
        drop(guard);
        None
    }
}
