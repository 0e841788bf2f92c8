//! [`ManualClock`]: a clock that moves only when told to.

use std::time::{Duration, Instant};

use super::max_offset;
use crate::sync::{AtomicU64, Mutex, Ordering, lock};

/// A clock that only moves when told to, for tests and simulations.
///
/// Clones share one time line. Every [`Scheduler`](crate::Scheduler) and
/// [`DelayQueue`](crate::DelayQueue) built with a clone is woken by
/// [`advance`](ManualClock::advance), so a test can run "48 hours later" in
/// microseconds.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::ManualClock;
///
/// let clock = ManualClock::new();
/// let start = clock.now();
/// clock.advance(Duration::from_secs(48 * 3600));
/// assert_eq!(clock.now() - start, Duration::from_secs(48 * 3600));
/// ```
#[derive(Clone)]
pub struct ManualClock {
    inner: std::sync::Arc<ManualInner>,
}

struct ManualInner {
    start: Instant,
    /// Nanoseconds since `start`: read without a lock (`now` is on the hot
    /// path of every insert and schedule), written only under `state`.
    offset_nanos: AtomicU64,
    /// The largest offset that keeps `start + offset` representable.
    max_nanos: u64,
    state: Mutex<ManualState>,
}

struct ManualState {
    listeners: Vec<std::sync::Weak<dyn Fn() + Send + Sync>>,
}

impl ManualClock {
    /// Creates a clock that starts at the current instant and stays there
    /// until [`advance`](ManualClock::advance) is called.
    ///
    /// # Examples
    ///
    /// ```
    /// let clock = wheel::ManualClock::new();
    /// assert_eq!(clock.now(), clock.now());
    /// ```
    pub fn new() -> ManualClock {
        let start = Instant::now();
        let max_nanos = u64::try_from(max_offset(start).as_nanos()).unwrap_or(u64::MAX);
        ManualClock {
            inner: std::sync::Arc::new(ManualInner {
                start,
                offset_nanos: AtomicU64::new(0),
                max_nanos,
                state: Mutex::new(ManualState {
                    listeners: Vec::new(),
                }),
            }),
        }
    }

    /// The clock's current instant.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = wheel::ManualClock::new();
    /// let t0 = clock.now();
    /// clock.advance(Duration::from_millis(5));
    /// assert_eq!(clock.now(), t0 + Duration::from_millis(5));
    /// ```
    pub fn now(&self) -> Instant {
        self.now_and_offset().0
    }

    /// The current instant and the nanoseconds since the clock started,
    /// from one read: `now == start + offset`.
    pub(crate) fn now_and_offset(&self) -> (Instant, u64) {
        let offset = self.offset();
        (self.inner.start + Duration::from_nanos(offset), offset)
    }

    /// Nanoseconds since the clock started (one atomic load, no `Instant`
    /// arithmetic: the fast path of
    /// [`DelayQueue::insert`](crate::DelayQueue::insert)).
    #[inline]
    pub(crate) fn offset(&self) -> u64 {
        self.inner.offset_nanos.load(Ordering::SeqCst)
    }

    /// Moves time forward by `by` and wakes every scheduler and delay queue
    /// that uses this clock. Saturates instead of overflowing: the clock
    /// stops at the end of `Instant`'s range or about 584 years after it
    /// started, whichever comes first.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = wheel::ManualClock::new();
    /// let t0 = clock.now();
    /// clock.advance(Duration::from_secs(1));
    /// clock.advance(Duration::from_secs(2));
    /// assert_eq!(clock.now() - t0, Duration::from_secs(3));
    /// ```
    pub fn advance(&self, by: Duration) {
        let listeners: Vec<_> = {
            // The lock serializes advances and the listener list.
            let mut state = lock(&self.inner.state);
            let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
            let old = self.inner.offset_nanos.load(Ordering::SeqCst);
            let new = old.saturating_add(by).min(self.inner.max_nanos);
            self.inner.offset_nanos.store(new, Ordering::SeqCst);
            state.listeners.retain(|w| w.strong_count() > 0);
            state.listeners.iter().filter_map(|w| w.upgrade()).collect()
        };
        // Call outside the lock: a listener may read the clock.
        for wake in listeners {
            wake();
        }
    }

    /// Registers a function called after every [`advance`](Self::advance).
    /// The clock holds it weakly: dropping the `Arc` unregisters it.
    pub(crate) fn on_advance(&self, wake: &std::sync::Arc<dyn Fn() + Send + Sync>) {
        lock(&self.inner.state)
            .listeners
            .push(std::sync::Arc::downgrade(wake));
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl std::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManualClock")
            .field("now", &self.now())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_saturates_and_notifies() {
        let clock = ManualClock::new();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let h = hits.clone();
        let listener: std::sync::Arc<dyn Fn() + Send + Sync> = std::sync::Arc::new(move || {
            h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        clock.on_advance(&listener);
        let t0 = clock.now();
        clock.advance(Duration::from_secs(1));
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
        clock.advance(Duration::MAX);
        assert!(clock.now() > t0);
        drop(listener);
        clock.advance(Duration::from_secs(1));
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
