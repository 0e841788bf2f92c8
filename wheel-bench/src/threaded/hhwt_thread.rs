//! `hierarchical_hash_wheel_timer`'s `TimerWithThread`: a quad wheel ticked in
//! milliseconds by its own thread, fed through a crossbeam channel; callbacks run
//! on that thread; cancel is by id.

use super::{ThreadedTimer, TimerProducer};
use hierarchical_hash_wheel_timer::thread_timer::{TimerRef, TimerWithThread};
use hierarchical_hash_wheel_timer::{
    ClosureTimer, OneShotClosureState, PeriodicClosureState, Timer,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

type Core = TimerWithThread<u64, OneShotClosureState<u64>, PeriodicClosureState<u64>>;
type Ref = TimerRef<u64, OneShotClosureState<u64>, PeriodicClosureState<u64>>;

/// Bits of a timer id that count within one producer.
const PRODUCER_SHIFT: u32 = 40;

/// The hhwt thread timer.
pub struct HhwtThread {
    core: Core,
    producers: Arc<AtomicU64>,
}

/// One producer's `TimerRef` and id counter (ids are unique across producers).
pub struct HhwtProducer {
    timer: Ref,
    next_id: u64,
}

impl ThreadedTimer for HhwtThread {
    type Producer = HhwtProducer;

    fn start() -> HhwtThread {
        HhwtThread {
            core: Core::new().expect("start the hhwt timer thread"),
            producers: Arc::new(AtomicU64::new(0)),
        }
    }

    fn producer(&self) -> HhwtProducer {
        let p = self.producers.fetch_add(1, Ordering::Relaxed);
        HhwtProducer {
            timer: self.core.timer_ref(),
            next_id: p << PRODUCER_SHIFT,
        }
    }

    fn shutdown(self) {
        self.core.shutdown().expect("hhwt timer thread shutdown");
    }
}

impl TimerProducer for HhwtProducer {
    type Handle = u64;

    fn schedule<F: FnOnce() + Send + 'static>(&mut self, delay: Duration, f: F) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.timer.schedule_action_once(id, delay, move |_| f());
        id
    }

    fn cancel(&mut self, id: u64) -> Option<bool> {
        self.timer.cancel(&id);
        None
    }
}
