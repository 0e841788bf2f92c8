//! Ours: `wheel::Wheel<u64>`.

use super::TimerQueue;
use wheel::{TimerKey, Wheel, WheelConfig};

/// `wheel::Wheel<u64>` behind [`TimerQueue`].
pub struct OurWheel {
    wheel: Wheel<u64>,
}

impl OurWheel {
    /// The default layout, pre-sized for `capacity` timers.
    pub fn with_capacity(capacity: usize) -> OurWheel {
        OurWheel {
            wheel: Wheel::with_capacity(capacity),
        }
    }

    /// A given layout (for the layout comparison).
    pub fn with_config(config: WheelConfig) -> OurWheel {
        OurWheel {
            wheel: Wheel::with_config(config),
        }
    }
}

impl TimerQueue for OurWheel {
    type Handle = TimerKey;

    #[inline]
    fn insert(&mut self, deadline: u64, id: u64) -> TimerKey {
        self.wheel.insert(deadline, id)
    }

    #[inline]
    fn cancel(&mut self, handle: TimerKey) -> Option<u64> {
        self.wheel.cancel(handle)
    }

    #[inline]
    fn advance<F: FnMut(u64)>(&mut self, now: u64, mut fire: F) {
        while let Some(e) = self.wheel.poll(now) {
            fire(e.value);
        }
    }
}
