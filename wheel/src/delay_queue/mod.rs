//! [`DelayQueue`]: a multi-producer, multi-consumer queue of values that
//! each become available at their own deadline.
//!
//! # Design
//!
//! One mutex (the *state lock*) guards a core [`Wheel`] holding the items,
//! the `closed` flag and the bookkeeping of blocked consumers. Producers and
//! consumers take it once per operation; nothing is allocated per item once
//! the wheel's slab has grown to the working-set size.
//!
//! Blocked consumers sleep on a condition variable of the type-free
//! [`signal`] part (see its docs for the wake-up protocol). To avoid a
//! thundering herd, one blocked consumer, the *leader*, sleeps with a
//! timeout until the earliest deadline; the others (*followers*) sleep
//! without a timeout. A producer wakes a consumer only if one is blocked
//! and the new item is due before the leader's planned wake-up (or there is
//! no leader). A leader that leaves while followers wait and items remain
//! hands leadership on by waking one follower.
//!
//! # Invariants
//!
//! - Deadlines are wheel ticks from the queue's origin: a deadline instant
//!   rounds *up* to a tick, the current instant rounds *down*, so an item is
//!   never handed out before its deadline. An instant at or before "now"
//!   maps to the current tick (due at once).
//! - Every item leaves the wheel exactly once, under the state lock, through
//!   `take*`, `remove` or `drain`.
//! - If a consumer is blocked and an item is pending, then either a leader
//!   is asleep with a wake-up no later than the earliest item's tick, or a
//!   notification is in flight (`epoch` was bumped under the state lock).
//! - `async_waiting`/`async_at` mirror the signal's async registrations:
//!   whenever an async taker is registered, `async_waiting` is true and
//!   `async_at` equals the helper's deadline, so a push that comes due
//!   earlier is always passed on to the helper.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::clock::{Clock, ManualClock, TickConv};
use crate::core::{TimerKey, Wheel};
use crate::error::BuildError;
use crate::sync::{lock, Arc, Mutex};

mod exclusive;
#[cfg(any(test, fuzzing))]
pub(crate) mod fuzz;
mod signal;

pub use exclusive::DelayQueueMut;
use signal::Signal;

/// The tick of [`DelayQueue::new`] and of a default builder: 1 ms.
const DEFAULT_TICK: Duration = Duration::from_millis(1);

/// The tick of a deadline that never comes (past the range of `Instant`).
pub(crate) const NEVER: u64 = u64::MAX;

/// The queue's clock and its tick conversion (shared with the helper).
#[derive(Clone)]
pub(crate) struct Time {
    clock: Clock,
    conv: TickConv,
    /// For a manual clock: its offset (nanoseconds since it started) at the
    /// origin, so that "nanoseconds since the origin" is `offset - base`.
    base: u64,
}

impl Time {
    /// A clock whose tick 0 starts now.
    fn new(clock: Clock, tick: Duration) -> Time {
        let (origin, base) = match &clock {
            Clock::System => (Instant::now(), 0),
            Clock::Manual(m) => m.now_and_offset(),
        };
        Time {
            clock,
            conv: TickConv::new(origin, tick),
            base,
        }
    }

    fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Nanoseconds from the origin to now (saturating at `u64::MAX`); for
    /// a manual clock, one atomic load.
    #[inline]
    fn now_nanos(&self) -> u64 {
        match &self.clock {
            Clock::System => self.conv.nanos_of(Instant::now()),
            Clock::Manual(m) => m.offset().saturating_sub(self.base),
        }
    }

    /// The tick an item due `delay` from now goes to: what
    /// `tick_for(now + delay, now)` gives (`NEVER` if the sum is past the
    /// range of `Instant`), in nanoseconds when [`fast_delay_tick`] can,
    /// else with `Instant`s.
    #[inline]
    fn delay_tick(&self, delay: Duration) -> u64 {
        match fast_delay_tick(&self.conv, self.now_nanos(), delay) {
            Some(tick) => tick,
            None => self.slow_delay_tick(delay),
        }
    }

    /// [`Time::delay_tick`] with `Instant`s (any delay).
    #[cold]
    #[inline(never)]
    fn slow_delay_tick(&self, delay: Duration) -> u64 {
        let now = self.now();
        match now.checked_add(delay) {
            Some(at) => self.tick_for(at, now),
            None => NEVER,
        }
    }

    fn now_tick(&self) -> u64 {
        current_tick(&self.conv, self.clock.now())
    }

    fn tick_at(&self, now: Instant) -> u64 {
        current_tick(&self.conv, now)
    }

    fn is_manual(&self) -> bool {
        self.clock.manual().is_some()
    }

    fn instant_of(&self, tick: u64) -> Option<Instant> {
        self.conv.instant_of(tick)
    }

    /// The tick an item due at `at` goes to, given the current instant.
    fn tick_for(&self, at: Instant, now: Instant) -> u64 {
        tick_for(&self.conv, at, now)
    }

    /// The tick an item due at `at` goes to, from a fresh clock reading
    /// (what `push_at` uses).
    fn at_tick(&self, at: Instant) -> u64 {
        self.tick_for(at, self.now())
    }
}

/// [`tick_for`]`(origin + now + delay, origin + now)` computed in
/// nanoseconds (`now` counts from the converter's origin), or `None` if the
/// due time is past [`TickConv::due_after`]'s limit. Below it each step
/// matches the `Instant` path exactly: a zero delay is the current tick, any
/// other rounds the due time up.
#[inline]
fn fast_delay_tick(conv: &TickConv, now: u64, delay: Duration) -> Option<u64> {
    let due = conv.due_after(now, delay)?;
    Some(if due == now {
        conv.floor_tick_of_nanos(now).min(NEVER - 1)
    } else {
        conv.tick_of_nanos(due)
    })
}

/// The tick containing `now`, rounded down, but never `NEVER`: that tick
/// means "never due" (a deadline past the range of `Instant` or rounding up
/// past the last tick), so the clock must not reach it even at the very end
/// of `Instant`'s range.
fn current_tick(conv: &TickConv, now: Instant) -> u64 {
    conv.now_tick(now).min(NEVER - 1)
}

/// The wheel tick for an item due at `at` when the clock reads `now`: the
/// current tick (due at once) if `at` has passed, else `at` rounded up.
fn tick_for(conv: &TickConv, at: Instant, now: Instant) -> u64 {
    if at <= now {
        current_tick(conv, now)
    } else {
        conv.deadline_tick(at)
    }
}

/// Identifies an item in a [`DelayQueue`], for [`remove`](DelayQueue::remove)
/// and [`reset`](DelayQueue::reset).
///
/// Keys are generational: once the item was taken, removed or drained, its
/// key answers `None`/`false` and never touches another item, even after
/// the slot was reused. A key must only be used with the queue that issued
/// it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::DelayQueue;
///
/// let q = DelayQueue::new();
/// let key = q.push("late", Duration::from_secs(60)).unwrap();
/// assert_eq!(q.remove(key), Some("late"));
/// assert_eq!(q.remove(key), None); // stale key
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DelayKey(TimerKey);

/// The error of a push into a closed [`DelayQueue`]; it gives the value back.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::{Closed, DelayQueue};
///
/// let q = DelayQueue::new();
/// q.close();
/// let err = q.push(7, Duration::ZERO).unwrap_err();
/// assert_eq!(err, Closed(7));
/// assert_eq!(err.to_string(), "the delay queue is closed");
/// assert_eq!(err.into_inner(), 7);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Closed<T>(pub T);

impl<T> Closed<T> {
    /// The value that could not be pushed.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = wheel::Closed("job");
    /// assert_eq!(err.into_inner(), "job");
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Display for Closed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the delay queue is closed")
    }
}

impl<T: fmt::Debug> std::error::Error for Closed<T> {}

struct State<T> {
    wheel: Wheel<T>,
    closed: bool,
    /// Blocking takers between deciding to sleep and re-taking the lock.
    waiters: usize,
    /// Token of the leader (0: none).
    leader: u64,
    /// The tick the leader plans to wake at.
    leader_at: u64,
    /// Last leader token handed out.
    tokens: u64,
    /// Mirror of "the signal has async takers registered".
    async_waiting: bool,
    /// Mirror of the helper's deadline while `async_waiting`.
    async_at: u64,
}

/// The operations that [`DelayQueue`] runs under its lock and
/// [`DelayQueueMut`] runs with no lock (its `&mut` borrow excludes every
/// other user), written once so that both behave alike. Those that can make
/// an item due earlier (`add`, `reset`) also return whether a blocked taker
/// must be woken; the caller wakes it, after releasing the lock.
impl<T> State<T> {
    /// Adds an item, or hands the value back in [`Closed`] if the queue
    /// was closed.
    #[inline]
    fn add(
        &mut self,
        signal: &Arc<Signal>,
        value: T,
        tick: u64,
    ) -> Result<(DelayKey, bool), Closed<T>> {
        if self.closed {
            return Err(Closed(value));
        }
        let key = self.wheel.insert(tick, value);
        let due = tick.max(self.wheel.now());
        Ok((DelayKey(key), self.came_earlier(signal, due)))
    }

    #[inline]
    fn remove(&mut self, key: DelayKey) -> Option<T> {
        self.wheel.cancel(key.0)
    }

    /// Returns whether `key` was found, and whether to wake a taker.
    fn reset(&mut self, signal: &Arc<Signal>, key: DelayKey, tick: u64) -> (bool, bool) {
        if !self.wheel.reset(key.0, tick) {
            return (false, false);
        }
        let due = tick.max(self.wheel.now());
        (true, !self.closed && self.came_earlier(signal, due))
    }

    fn try_take(&mut self, time: &Time) -> Option<T> {
        if self.closed {
            return None;
        }
        self.poll_due(time).ok()
    }

    /// Takes the earliest due item, or returns the instant read from the
    /// clock. Tries the tick the wheel already reached before reading the
    /// clock, so a backlog of due items is handed out without clock reads.
    fn poll_due(&mut self, time: &Time) -> Result<T, Instant> {
        let reached = self.wheel.now();
        if let Some(e) = self.wheel.poll(reached) {
            return Ok(e.value);
        }
        let now = time.now();
        match self.wheel.poll(time.tick_at(now)) {
            Some(e) => Ok(e.value),
            None => Err(now),
        }
    }

    /// An item is now due at `tick`: tells the helper if async takers wait
    /// for something later, and returns whether a blocked taker must be
    /// woken (then the leader is deposed and the epoch bumped).
    ///
    /// `signal` stays an `&Arc`, dereferenced only on those rare paths: as
    /// a `&Signal`, every push loaded the pointer up front, 4 more
    /// instructions per push (callgrind, `DelayQueue` push+remove at 10K).
    fn came_earlier(&mut self, signal: &Arc<Signal>, tick: u64) -> bool {
        if self.async_waiting && tick < self.async_at {
            match signal.lower_deadline(tick) {
                Some(d) => self.async_at = d,
                None => self.async_waiting = false,
            }
        }
        if self.waiters > 0 && (self.leader == 0 || tick < self.leader_at) {
            self.leader = 0;
            signal.bump();
            true
        } else {
            false
        }
    }
}

/// A queue of values that each become available at their own deadline.
///
/// Producers [`push`](Self::push) values with a delay (or
/// [`push_at`](Self::push_at) an instant); consumers [`take`](Self::take)
/// them once due, in deadline order (ties in push order), never before
/// their deadline, each exactly once, from any number of threads. Share it
/// by reference (scoped threads) or in an `Arc`; it is `Send + Sync` when
/// `T: Send`.
///
/// Deadlines have the resolution of the queue's tick (1 ms by default): an
/// item comes out at the first tick boundary at or after its deadline, and
/// items due within the same tick come out in push order.
///
/// A blocked consumer sleeps until the earliest deadline and is woken early
/// only when an earlier item arrives, an item is reset earlier, the queue is
/// closed, or its [`ManualClock`] advances. No polling loop.
///
/// # Closing
///
/// [`close`](Self::close) wakes every blocked consumer, which returns
/// `None`. From then on `take*`/`try_take`/`take_async` return `None` even
/// if items remain, `iter` ends, and `push` hands the value back in
/// [`Closed`]. [`drain`](Self::drain), [`remove`](Self::remove) and
/// [`reset`](Self::reset) keep working, so nothing is lost: `drain` returns
/// every item still inside, due or not.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel::DelayQueue;
///
/// let q = DelayQueue::new();
/// q.push("second", Duration::from_millis(20)).unwrap();
/// q.push("first", Duration::from_millis(10)).unwrap();
/// assert_eq!(q.take(), Some("first"));
/// assert_eq!(q.take(), Some("second"));
/// assert!(q.is_empty());
/// ```
pub struct DelayQueue<T> {
    state: Mutex<State<T>>,
    signal: Arc<Signal>,
    time: Time,
    /// Registered with the manual clock (held weakly there).
    _listener: Option<std::sync::Arc<dyn Fn() + Send + Sync>>,
}

impl<T> DelayQueue<T> {
    /// A queue with a 1 ms tick on the system's monotonic clock.
    ///
    /// # Examples
    ///
    /// ```
    /// let q: wheel::DelayQueue<u32> = wheel::DelayQueue::new();
    /// assert!(q.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::from_parts(DEFAULT_TICK, None, 0)
    }

    /// A builder to choose the tick, a [`ManualClock`] and the capacity.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{DelayQueue, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let q = DelayQueue::builder()
    ///     .tick(Duration::from_millis(10))
    ///     .clock(clock.clone())
    ///     .capacity(1024)
    ///     .build()
    ///     .unwrap();
    /// q.push("x", Duration::from_secs(1)).unwrap();
    /// assert_eq!(q.try_take(), None);
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(q.try_take(), Some("x"));
    /// ```
    pub fn builder() -> DelayQueueBuilder<T> {
        DelayQueueBuilder {
            tick: DEFAULT_TICK,
            clock: None,
            capacity: 0,
            _items: PhantomData,
        }
    }

    /// Builds a queue from a validated tick.
    fn from_parts(tick: Duration, manual: Option<ManualClock>, capacity: usize) -> Self {
        let clock = match manual {
            Some(m) => Clock::Manual(m),
            None => Clock::System,
        };
        let time = Time::new(clock, tick);
        let signal = Arc::new(Signal::new());
        let listener = time.clock.manual().map(|m| {
            let sig = Arc::clone(&signal);
            let l: std::sync::Arc<dyn Fn() + Send + Sync> =
                std::sync::Arc::new(move || sig.on_advance());
            m.on_advance(&l);
            l
        });
        DelayQueue {
            state: Mutex::new(State {
                wheel: Wheel::with_capacity(capacity),
                closed: false,
                waiters: 0,
                leader: 0,
                leader_at: NEVER,
                tokens: 0,
                async_waiting: false,
                async_at: NEVER,
            }),
            signal,
            time,
            _listener: listener,
        }
    }

    /// Adds `value`, due `delay` from now. A zero delay makes it due at
    /// once; a delay past the range of `Instant` means it never comes due
    /// (only `remove` or `drain` return it).
    ///
    /// # Errors
    ///
    /// [`Closed`] with the value if the queue was closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.push(1, Duration::ZERO).unwrap();
    /// assert_eq!(q.try_take(), Some(1));
    /// ```
    pub fn push(&self, value: T, delay: Duration) -> Result<DelayKey, Closed<T>> {
        self.insert(value, self.time.delay_tick(delay))
    }

    /// Adds `value`, due at `at` (at once if `at` has passed).
    ///
    /// # Errors
    ///
    /// [`Closed`] with the value if the queue was closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let q = wheel::DelayQueue::new();
    /// q.push_at("now", Instant::now()).unwrap();
    /// q.push_at("soon", Instant::now() + Duration::from_millis(5)).unwrap();
    /// assert_eq!(q.take(), Some("now"));
    /// assert_eq!(q.take(), Some("soon"));
    /// ```
    pub fn push_at(&self, value: T, at: Instant) -> Result<DelayKey, Closed<T>> {
        self.insert(value, self.time.at_tick(at))
    }

    fn insert(&self, value: T, tick: u64) -> Result<DelayKey, Closed<T>> {
        // The guard is dropped at the end of the statement: the taker is
        // woken after the lock is released.
        let (key, wake) = lock(&self.state).add(&self.signal, value, tick)?;
        if wake {
            self.signal.notify_taker();
        }
        Ok(key)
    }

    /// Removes the item of `key` and returns it, or `None` if it already
    /// left the queue. Works after [`close`](Self::close) too.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// let k = q.push("order-7", Duration::from_secs(3600)).unwrap();
    /// assert_eq!(q.remove(k), Some("order-7"));
    /// assert!(q.is_empty());
    /// ```
    pub fn remove(&self, key: DelayKey) -> Option<T> {
        lock(&self.state).remove(key)
    }

    /// Makes the item of `key` due `delay` from now instead; `false` if it
    /// already left the queue. Among items due in the same tick, a reset
    /// item counts as pushed now.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// let k = q.push("x", Duration::from_secs(3600)).unwrap();
    /// assert!(q.reset(k, Duration::ZERO));
    /// assert_eq!(q.take(), Some("x"));
    /// assert!(!q.reset(k, Duration::ZERO));
    /// ```
    pub fn reset(&self, key: DelayKey, delay: Duration) -> bool {
        let tick = self.time.delay_tick(delay);
        let (found, wake) = lock(&self.state).reset(&self.signal, key, tick);
        if wake {
            self.signal.notify_taker();
        }
        found
    }

    /// Returns the earliest due item, waiting as long as needed; `None`
    /// once the queue is closed (even if items remain: see
    /// [`drain`](Self::drain)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let q = wheel::DelayQueue::new();
    /// let start = Instant::now();
    /// q.push("ping", Duration::from_millis(15)).unwrap();
    /// assert_eq!(q.take(), Some("ping"));
    /// assert!(start.elapsed() >= Duration::from_millis(15));
    /// ```
    pub fn take(&self) -> Option<T> {
        self.take_until(None)
    }

    /// Like [`take`](Self::take), but gives up and returns `None` once
    /// `timeout` has passed on the queue's clock (with a [`ManualClock`],
    /// once the clock has been advanced by `timeout`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.push("later", Duration::from_secs(3600)).unwrap();
    /// assert_eq!(q.take_timeout(Duration::from_millis(5)), None);
    /// assert_eq!(q.len(), 1);
    /// ```
    pub fn take_timeout(&self, timeout: Duration) -> Option<T> {
        let limit = self.time.now().checked_add(timeout);
        self.take_until(limit)
    }

    /// Returns the earliest item if one is due now, without waiting; `None`
    /// if nothing is due or the queue is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// assert_eq!(q.try_take(), None::<u8>);
    /// q.push(3, Duration::ZERO).unwrap();
    /// assert_eq!(q.try_take(), Some(3));
    /// ```
    pub fn try_take(&self) -> Option<T> {
        lock(&self.state).try_take(&self.time)
    }

    /// Waits for the earliest due item without blocking a thread; `None`
    /// once the queue is closed. Works on any executor.
    ///
    /// The first `take_async` that has to wait starts one helper thread for
    /// this queue, which sleeps until the earliest deadline while async
    /// takers wait and wakes them then; it is joined when the queue is
    /// dropped. Dropping the future withdraws its registration. If several
    /// async takers wait, all are woken when an item comes due and one gets
    /// it; the others wait again.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # use std::sync::Arc;
    /// # use std::task::{Context, Poll, Wake, Waker};
    /// # struct Unpark(std::thread::Thread);
    /// # impl Wake for Unpark { fn wake(self: Arc<Self>) { self.0.unpark() } }
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     let mut f = std::pin::pin!(f);
    /// #     let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    /// #     let mut cx = Context::from_waker(&waker);
    /// #     loop {
    /// #         if let Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; }
    /// #         std::thread::park();
    /// #     }
    /// # }
    /// let q = wheel::DelayQueue::new();
    /// q.push("async", Duration::from_millis(5)).unwrap();
    /// // `block_on` is any executor, here a ten-line one.
    /// assert_eq!(block_on(q.take_async()), Some("async"));
    /// ```
    pub fn take_async(&self) -> TakeFuture<'_, T> {
        TakeFuture { queue: self, id: 0 }
    }

    /// A blocking iterator over the items as they come due; it ends when
    /// the queue is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// for i in 0..3 {
    ///     q.push(i, Duration::from_millis(3 - i)).unwrap();
    /// }
    /// let got: Vec<u64> = q.iter().take(3).collect();
    /// assert_eq!(got, [2, 1, 0]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.take())
    }

    /// Closes the queue: blocked and future takers get `None`, pushes are
    /// refused. Idempotent. Items inside stay there for
    /// [`drain`](Self::drain).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.push("kept", Duration::from_secs(60)).unwrap();
    /// std::thread::scope(|s| {
    ///     let taker = s.spawn(|| q.take());
    ///     q.close();
    ///     assert_eq!(taker.join().unwrap(), None);
    /// });
    /// assert_eq!(q.drain(), ["kept"]);
    /// ```
    pub fn close(&self) {
        let mut st = lock(&self.state);
        if st.closed {
            return;
        }
        st.closed = true;
        st.async_waiting = false;
        self.signal.bump();
        drop(st);
        self.signal.close();
    }

    /// `true` once [`close`](Self::close) was called.
    ///
    /// # Examples
    ///
    /// ```
    /// let q = wheel::DelayQueue::<()>::new();
    /// assert!(!q.is_closed());
    /// q.close();
    /// assert!(q.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// Removes and returns every item still inside, due or not, in
    /// deadline order (the order among items due in the same tick is
    /// unspecified). Works whether or not the queue is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.push("b", Duration::from_secs(20)).unwrap();
    /// q.push("a", Duration::from_secs(10)).unwrap();
    /// q.close();
    /// assert_eq!(q.drain(), ["a", "b"]);
    /// assert!(q.is_empty());
    /// ```
    pub fn drain(&self) -> Vec<T> {
        let mut all: Vec<(u64, T)> = {
            let mut st = lock(&self.state);
            st.wheel.drain().map(|e| (e.deadline, e.value)).collect()
        };
        all.sort_by_key(|e| e.0);
        all.into_iter().map(|e| e.1).collect()
    }

    /// The number of items inside, due or not.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let q = wheel::DelayQueue::new();
    /// q.push((), Duration::from_secs(1)).unwrap();
    /// assert_eq!(q.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        lock(&self.state).wheel.len()
    }

    /// `true` if no item is inside.
    ///
    /// # Examples
    ///
    /// ```
    /// let q = wheel::DelayQueue::<u8>::new();
    /// assert!(q.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        lock(&self.state).wheel.is_empty()
    }

    /// The tick to wake at for the earliest pending item, no earlier than
    /// the tick after `now` (nothing is due at `now`), `NEVER` if empty.
    fn wake_tick(&self, st: &State<T>, now: Instant) -> u64 {
        match st.wheel.next_expiration() {
            Some(t) => t.max(self.time.tick_at(now) + 1),
            None => NEVER,
        }
    }

    /// The blocking take: waits until an item is due, the queue is closed,
    /// or the clock reaches `limit`.
    fn take_until(&self, limit: Option<Instant>) -> Option<T> {
        let mut st = lock(&self.state);
        let mut token = 0;
        let out = loop {
            // Read before the clock (see `signal`).
            let epoch = self.signal.epoch();
            if st.closed {
                break None;
            }
            let now = match st.poll_due(&self.time) {
                Ok(v) => break Some(v),
                Err(now) => now,
            };
            if limit.is_some_and(|l| now >= l) {
                break None;
            }
            let mut until = None;
            if st.leader == 0 && !st.wheel.is_empty() {
                let at = self.wake_tick(&st, now);
                st.tokens += 1;
                token = st.tokens;
                st.leader = token;
                st.leader_at = at;
                until = self.time.instant_of(at);
            }
            until = match (until, limit) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            st.waiters += 1;
            drop(st);
            self.signal.wait_taker(epoch, until, self.time.is_manual());
            st = lock(&self.state);
            st.waiters -= 1;
            if token != 0 && st.leader == token {
                st.leader = 0;
            }
            token = 0;
        };
        // Hand leadership on if we leave followers behind with items inside.
        let handoff = st.waiters > 0 && st.leader == 0 && !st.closed && !st.wheel.is_empty();
        if handoff {
            self.signal.bump();
        }
        drop(st);
        if handoff {
            self.signal.notify_taker();
        }
        out
    }

    /// Withdraws the async registration `id` (if any).
    fn unregister(&self, st: &mut State<T>, id: &mut u64) {
        if *id != 0 {
            if self.signal.unregister(*id) {
                st.async_waiting = false;
            }
            *id = 0;
        }
    }
}

impl<T> Default for DelayQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for DelayQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = lock(&self.state);
        f.debug_struct("DelayQueue")
            .field("len", &st.wheel.len())
            .field("closed", &st.closed)
            .field("async_takers", &self.signal.registered())
            .field("tick", &self.time.conv.tick())
            .finish_non_exhaustive()
    }
}

impl<T> Drop for DelayQueue<T> {
    fn drop(&mut self) {
        self.signal.shutdown();
    }
}

/// The future of [`DelayQueue::take_async`]: resolves to the earliest due
/// item, or `None` once the queue is closed.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let q = wheel::DelayQueue::new();
///     q.push("hello", Duration::from_millis(2)).unwrap();
///     let fut: wheel::TakeFuture<'_, &str> = q.take_async();
///     assert_eq!(fut.await, Some("hello"));
/// }
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct TakeFuture<'a, T> {
    queue: &'a DelayQueue<T>,
    /// Registration id with the signal (0: not registered).
    id: u64,
}

impl<T> Future for TakeFuture<'_, T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        let q = this.queue;
        let mut st = lock(&q.state);
        if st.closed {
            q.unregister(&mut st, &mut this.id);
            return Poll::Ready(None);
        }
        let now = match st.poll_due(&q.time) {
            Ok(v) => {
                q.unregister(&mut st, &mut this.id);
                return Poll::Ready(Some(v));
            }
            Err(now) => now,
        };
        let at = q.wake_tick(&st, now);
        match Signal::register(&q.signal, &mut this.id, cx.waker(), at, &q.time) {
            Some(deadline) => {
                st.async_waiting = true;
                st.async_at = deadline;
            }
            // No helper thread: stay live by asking to be polled again.
            None => cx.waker().wake_by_ref(),
        }
        Poll::Pending
    }
}

impl<T> Drop for TakeFuture<'_, T> {
    fn drop(&mut self) {
        if self.id != 0 {
            let mut st = lock(&self.queue.state);
            self.queue.unregister(&mut st, &mut self.id);
        }
    }
}

impl<T> fmt::Debug for TakeFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TakeFuture")
            .field("registered", &(self.id != 0))
            .finish_non_exhaustive()
    }
}

/// Configures a [`DelayQueue`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let q = wheel::DelayQueue::<String>::builder()
///     .tick(Duration::from_micros(100))
///     .build()
///     .unwrap();
/// assert!(q.is_empty());
/// ```
pub struct DelayQueueBuilder<T> {
    tick: Duration,
    clock: Option<ManualClock>,
    capacity: usize,
    _items: PhantomData<fn() -> T>,
}

impl<T> DelayQueueBuilder<T> {
    /// The resolution of deadlines (default 1 ms). Items come out at the
    /// first tick boundary at or after their deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let err = wheel::DelayQueue::<u8>::builder().tick(Duration::ZERO).build();
    /// assert!(matches!(err, Err(wheel::BuildError::ZeroTick)));
    /// ```
    pub fn tick(self, tick: Duration) -> Self {
        DelayQueueBuilder { tick, ..self }
    }

    /// Uses `clock` instead of the system clock: items come due only when
    /// the clock is [advanced](ManualClock::advance), which also wakes
    /// blocked takers. The queue never reads the system clock then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{DelayQueue, ManualClock};
    /// let clock = ManualClock::new();
    /// let q = DelayQueue::builder().clock(clock.clone()).build().unwrap();
    /// q.push("rated", Duration::from_secs(48 * 3600)).unwrap();
    /// clock.advance(Duration::from_secs(48 * 3600));
    /// assert_eq!(q.try_take(), Some("rated"));
    /// ```
    pub fn clock(self, clock: ManualClock) -> Self {
        DelayQueueBuilder {
            clock: Some(clock),
            ..self
        }
    }

    /// Reserves room for `n` items up front (default 0: grow on demand).
    ///
    /// # Examples
    ///
    /// ```
    /// let q = wheel::DelayQueue::<u64>::builder().capacity(10_000).build().unwrap();
    /// assert_eq!(q.len(), 0);
    /// ```
    pub fn capacity(self, n: usize) -> Self {
        DelayQueueBuilder {
            capacity: n,
            ..self
        }
    }

    /// Builds the queue.
    ///
    /// # Errors
    ///
    /// [`BuildError::ZeroTick`] for a zero tick,
    /// [`BuildError::TickTooLong`] for a tick over `u64::MAX` nanoseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel::{BuildError, DelayQueue};
    /// let r = DelayQueue::<u8>::builder().tick(Duration::MAX).build();
    /// assert!(matches!(r, Err(BuildError::TickTooLong)));
    /// assert!(DelayQueue::<u8>::builder().build().is_ok());
    /// ```
    pub fn build(self) -> Result<DelayQueue<T>, BuildError> {
        if self.tick.is_zero() {
            return Err(BuildError::ZeroTick);
        }
        if !TickConv::validate(self.tick) {
            return Err(BuildError::TickTooLong);
        }
        Ok(DelayQueue::from_parts(self.tick, self.clock, self.capacity))
    }
}

impl<T> fmt::Debug for DelayQueueBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayQueueBuilder")
            .field("tick", &self.tick)
            .field("manual_clock", &self.clock.is_some())
            .field("capacity", &self.capacity)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn tick_for_boundaries() {
        let origin = Instant::now();
        let conv = TickConv::new(origin, Duration::from_millis(1));
        let ms = Duration::from_millis;
        // Past and present deadlines map to the current tick (due at once).
        assert_eq!(tick_for(&conv, origin, origin), 0);
        assert_eq!(tick_for(&conv, origin, origin + ms(5)), 5);
        assert_eq!(tick_for(&conv, origin + ms(5), origin + ms(5)), 5);
        let mid = origin + Duration::from_micros(5_500);
        assert_eq!(tick_for(&conv, mid, mid), 5);
        // Future deadlines round up.
        assert_eq!(tick_for(&conv, mid, origin), 6);
        assert_eq!(tick_for(&conv, origin + ms(6), origin), 6);
        assert_eq!(tick_for(&conv, origin + Duration::from_nanos(1), origin), 1);
        // Before the origin saturates to tick 0.
        if let Some(before) = origin.checked_sub(ms(3)) {
            assert_eq!(tick_for(&conv, before, origin), 0);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod delay_tick_tests {
    use super::*;
    use crate::clock::max_offset;
    use proptest::prelude::*;

    /// An origin `room` nanoseconds before the end of `Instant`'s range
    /// (or now, if `room` is `None`).
    fn origin_with_room(room: Option<u64>) -> Instant {
        let now = Instant::now();
        match room {
            None => now,
            Some(room) => now + max_offset(now).saturating_sub(Duration::from_nanos(room)),
        }
    }

    proptest! {
        /// The nanosecond path gives exactly the tick of the `Instant`
        /// path whenever it answers, near the origin and at the very end of
        /// `Instant`'s range, and it answers for every due time up to its
        /// limit.
        #[test]
        fn fast_path_matches_instant_path(
            tick_nanos in prop_oneof![Just(1u64), Just(7), Just(1_000_000), 1u64..=u64::MAX],
            room in prop_oneof![Just(None), (0u64..20_000_000_000).prop_map(Some)],
            now_frac in 0.0f64..=1.0,
            delays in proptest::collection::vec(
                prop_oneof![
                    Just(0u64),
                    0u64..5_000_000_000,
                    0u64..=u64::MAX,
                ],
                1..6,
            ),
            big in prop_oneof![Just(Duration::MAX), (0u64..=u64::MAX, 0u32..1_000_000_000)
                .prop_map(|(s, n)| Duration::new(s, n))],
        ) {
            let origin = origin_with_room(room);
            let conv = TickConv::new(origin, Duration::from_nanos(tick_nanos));
            let limit = conv.limit();
            if let Some(room) = room {
                // The limit really is the end of the range.
                prop_assert!(limit <= room);
                prop_assert!(origin.checked_add(Duration::from_nanos(limit)).is_some());
                prop_assert!(origin.checked_add(Duration::from_nanos(limit + 1)).is_none());
            }
            // A `now` inside the range (the clocks never read past it).
            let span = room.unwrap_or(10_000_000_000).min(limit);
            let now_n = (span as f64 * now_frac) as u64;
            let now = origin + Duration::from_nanos(now_n);
            let left = limit - now_n;
            let edge = [left.saturating_sub(1), left, left.saturating_add(1)];
            let all = delays
                .into_iter()
                .chain(edge)
                .map(Duration::from_nanos)
                .chain([big]);
            for d in all {
                let slow = match now.checked_add(d) {
                    Some(at) => tick_for(&conv, at, now),
                    None => NEVER,
                };
                let fast = fast_delay_tick(&conv, now_n, d);
                let due = u128::from(now_n) + d.as_nanos();
                if due <= u128::from(limit) {
                    prop_assert_eq!(fast, Some(slow), "delay {:?} now {}", d, now_n);
                } else {
                    prop_assert_eq!(fast, None, "delay {:?} now {}", d, now_n);
                }
            }
        }
    }

    #[test]
    fn push_and_reset_use_it_on_a_manual_clock() {
        let clock = ManualClock::new();
        let q = DelayQueue::builder().clock(clock.clone()).build().unwrap();
        clock.advance(Duration::from_micros(2_500));
        let a = q.push('a', Duration::from_micros(1_500)).unwrap(); // 4.0 ms: tick 4
        q.push('b', Duration::ZERO).unwrap(); // current tick 2
        q.push('c', Duration::MAX).unwrap(); // never
        let d = q.push('d', Duration::from_millis(10)).unwrap();
        assert!(q.reset(d, Duration::from_nanos(1))); // 2.500001 ms: tick 3
        assert_eq!(q.try_take(), Some('b'));
        assert_eq!(q.try_take(), None);
        clock.advance(Duration::from_micros(500)); // 3.0 ms
        assert_eq!(q.try_take(), Some('d'));
        clock.advance(Duration::from_micros(999)); // 3.999 ms
        assert_eq!(q.try_take(), None);
        clock.advance(Duration::from_nanos(1_000)); // 4.0 ms
        assert_eq!(q.try_take(), Some('a'));
        assert!(q.remove(a).is_none());
        clock.advance(Duration::MAX);
        assert_eq!(q.try_take(), None);
        assert_eq!(q.drain(), vec!['c']);
    }
}
