//! A queue whose clock never moves, for telling the cost of firing from the
//! rest of a churn step (`examples/churn_interleaved.rs`, `frozen`).

use super::TimerQueue;

/// Wraps a queue and drops every call to [`advance`](TimerQueue::advance):
/// nothing ever fires, so a churn over it is its cancels and inserts alone,
/// with the workload's loop otherwise unchanged (its tick test and the call
/// stay; the call does nothing). Not a timer: the workloads do not check
/// its output, since the timers that come due are never fired.
///
/// # Examples
///
/// ```
/// use wheel_bench::peers::frozen::Frozen;
/// use wheel_bench::peers::wheel::OurWheel;
/// use wheel_bench::peers::TimerQueue;
///
/// let mut q = Frozen(OurWheel::with_capacity(4));
/// let h = q.insert(5, 1);
/// let mut fired = 0;
/// q.advance(100, |_| fired += 1);
/// assert_eq!(fired, 0);
/// assert_eq!(q.cancel(h), Some(1)); // still pending
/// ```
#[derive(Debug)]
pub struct Frozen<Q>(pub Q);

impl<Q: TimerQueue> TimerQueue for Frozen<Q> {
    type Handle = Q::Handle;

    #[inline]
    fn insert(&mut self, deadline: u64, id: u64) -> Self::Handle {
        self.0.insert(deadline, id)
    }

    #[inline]
    fn cancel(&mut self, handle: Self::Handle) -> Option<u64> {
        self.0.cancel(handle)
    }

    #[inline]
    fn advance<F: FnMut(u64)>(&mut self, _now: u64, _fire: F) {}

    fn is_timer(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::calendar::Calendar;
    use crate::workloads::single::{churn, Churn};
    use crate::workloads::Check;

    #[test]
    fn a_frozen_churn_fires_nothing() {
        // Short timeouts: over the plain calendar thousands fire.
        let p = Churn::short_timeouts(2_000, 30_000, 5);
        let moving = churn(Calendar::with_capacity(2_000), &p);
        assert_eq!(moving.check, Check::Passed);
        assert!(moving.fired > 1_000, "{}", moving.fired);
        let frozen = churn(Frozen(Calendar::with_capacity(2_000)), &p);
        assert_eq!((frozen.fired, frozen.check), (0, Check::NotApplicable));
    }
}
