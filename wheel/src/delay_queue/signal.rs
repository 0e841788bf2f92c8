//! The wake-up side of a [`DelayQueue`](super::DelayQueue), free of the
//! item type `T`.
//!
//! The queue's items live behind the queue's *state lock*. Everything that
//! must wake a waiting consumer without knowing `T` lives here, behind the
//! *signal lock*: the [`ManualClock`](crate::ManualClock) listener (a
//! `'static` closure, which therefore cannot name `T`), and the helper thread
//! that times wake-ups for [`take_async`](super::DelayQueue::take_async).
//!
//! # Invariants
//!
//! - Lock order: state lock, then signal lock. The helper thread and the
//!   clock listener only ever take the signal lock.
//! - `epoch` changes only (a) under the state lock, after a state change
//!   that a blocked taker must see (earlier item, close, leader hand-off),
//!   or (b) in the clock listener, after the manual clock moved. A blocking
//!   taker reads `epoch` under the state lock *before* it reads the clock
//!   and decides to sleep; it then re-checks `epoch` under the signal lock
//!   and only sleeps if it is unchanged. Every notifier bumps `epoch` first
//!   and then notifies while holding the signal lock, so a notification
//!   either finds the taker asleep or the taker sees the new epoch: no lost
//!   wake-up.
//! - `wakers` holds the async takers that found nothing due: each
//!   [`TakeFuture`](super::TakeFuture) under its registration id (from 1),
//!   and each task that called
//!   [`poll_expired`](super::DelayQueue::poll_expired) under id 0, told
//!   apart by `Waker::will_wake` (one entry per task). They are woken
//!   (and the list emptied) by the helper thread once `deadline` has passed,
//!   and by `close`. `deadline` is a tick at or before the earliest pending
//!   deadline as of the latest registration or insert (`NEVER` when none).

use std::task::Waker;
use std::time::Instant;

use crate::clock::{NEVER, TimeBase};
use crate::sync::{Arc, AtomicU64, Condvar, Mutex, MutexGuard, Ordering, lock, thread, wait};

/// Name of the helper thread that times `take_async` wake-ups.
const HELPER_NAME: &str = "wheel-delay-queue";

/// The wake-up side of one queue (see the module docs).
pub(super) struct Signal {
    /// Bumped on every event a blocked taker must not miss.
    epoch: AtomicU64,
    /// The *signal lock*.
    inner: Mutex<Inner>,
    /// Where blocked `take`/`take_timeout`/`iter` callers sleep.
    takers_cv: Condvar,
    /// Where the helper thread sleeps.
    helper_cv: Condvar,
}

struct Inner {
    /// Async takers waiting for an item, by registration id.
    wakers: Vec<(u64, Waker)>,
    /// When the helper wakes `wakers` (a tick; `NEVER` = only on events).
    deadline: u64,
    /// Last registration id handed out (ids start at 1; 0 = unregistered).
    next_id: u64,
    /// Set by `close` and on drop: the helper exits, nobody registers.
    closed: bool,
    helper: Helper,
}

enum Helper {
    NotStarted,
    Running(thread::JoinHandle<()>),
    /// Joined, or exited because the queue was closed.
    Done,
}

/// Waits on `cv` until notified or until `until` (system time) has passed.
fn wait_until<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>, until: Instant) -> MutexGuard<'a, T> {
    let left = until.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return guard;
    }
    match cv.wait_timeout(guard, left) {
        Ok((g, _)) => g,
        Err(e) => e.into_inner().0,
    }
}

impl Signal {
    pub(super) fn new() -> Signal {
        Signal {
            epoch: AtomicU64::new(0),
            inner: Mutex::new(Inner {
                wakers: Vec::new(),
                deadline: NEVER,
                next_id: 0,
                closed: false,
                helper: Helper::NotStarted,
            }),
            takers_cv: Condvar::new(),
            helper_cv: Condvar::new(),
        }
    }

    /// The current epoch; read under the state lock before the clock.
    pub(super) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Marks an event; call under the state lock, then notify.
    pub(super) fn bump(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Sleeps a blocking taker unless `epoch` moved since it was read.
    ///
    /// `until` is the system instant to give up at (`None`: only an event
    /// ends the wait). With a manual clock the wait is never timed: only an
    /// event (including `ManualClock::advance`) ends it.
    pub(super) fn wait_taker(&self, epoch: u64, until: Option<Instant>, manual: bool) {
        let guard = lock(&self.inner);
        if self.epoch.load(Ordering::SeqCst) != epoch {
            return;
        }
        let _guard = match until {
            Some(at) if !manual => wait_until(&self.takers_cv, guard, at),
            _ => wait(&self.takers_cv, guard),
        };
    }

    /// Wakes one blocked taker (after a `bump`).
    pub(super) fn notify_taker(&self) {
        let _g = lock(&self.inner);
        self.takers_cv.notify_one();
    }

    /// The manual clock moved: every waiter re-reads it.
    pub(super) fn on_advance(&self) {
        self.bump();
        let _g = lock(&self.inner);
        self.takers_cv.notify_all();
        self.helper_cv.notify_one();
    }

    /// The queue was closed: wake every taker and async taker, stop the
    /// helper. Call after `bump` under the state lock, with it released.
    pub(super) fn close(&self) {
        let wakers = {
            let mut s = lock(&self.inner);
            s.closed = true;
            s.deadline = NEVER;
            self.takers_cv.notify_all();
            self.helper_cv.notify_one();
            std::mem::take(&mut s.wakers)
        };
        wake_all(wakers);
    }

    /// Stops and joins the helper thread (on drop of the queue).
    pub(super) fn stop_helper(&self) {
        let handle = {
            let mut s = lock(&self.inner);
            s.closed = true;
            self.helper_cv.notify_one();
            match std::mem::replace(&mut s.helper, Helper::Done) {
                Helper::Running(h) => Some(h),
                _ => None,
            }
        };
        if let Some(h) = handle {
            // A waker run by the helper may drop the last owner of the
            // queue; joining ourselves would never return.
            if h.thread().id() != thread::current().id() {
                let _ = h.join();
            }
        }
    }

    /// Registers (or refreshes) an async taker with `waker`, to be woken at
    /// `deadline` (a tick; `NEVER` for "only on an insert"). `id` is a
    /// future's registration id (0: not yet registered; the new id is
    /// written back); `None` registers a `poll_expired` caller, keyed by
    /// its waker.
    ///
    /// Call under the state lock. Returns the helper's new deadline, or
    /// `None` if the helper thread could not be started (the caller then
    /// has no timer and must wake itself).
    pub(super) fn register(
        this: &Arc<Signal>,
        id: Option<&mut u64>,
        waker: &Waker,
        deadline: u64,
        time: &TimeBase,
    ) -> Option<u64> {
        let mut s = lock(&this.inner);
        if matches!(s.helper, Helper::NotStarted) {
            let sig = Arc::clone(this);
            let t = time.clone();
            let spawned = thread::Builder::new()
                .name(HELPER_NAME.to_string())
                .spawn(move || helper_loop(&sig, &t));
            match spawned {
                Ok(h) => s.helper = Helper::Running(h),
                Err(_) => return None,
            }
        }
        let me = match id {
            Some(id) => {
                if *id == 0 {
                    s.next_id += 1;
                    *id = s.next_id;
                }
                *id
            }
            None => 0,
        };
        // Id 0 entries belong to different tasks: the waker tells them apart.
        let mine = |e: &&mut (u64, Waker)| e.0 == me && (me != 0 || e.1.will_wake(waker));
        match s.wakers.iter_mut().find(mine) {
            Some((_, w)) => {
                if !w.will_wake(waker) {
                    w.clone_from(waker);
                }
            }
            None => s.wakers.push((me, waker.clone())),
        }
        s.deadline = if s.wakers.len() == 1 {
            deadline
        } else {
            s.deadline.min(deadline)
        };
        this.helper_cv.notify_one();
        Some(s.deadline)
    }

    /// The number of async takers registered (for `Debug`).
    pub(super) fn registered(&self) -> usize {
        lock(&self.inner).wakers.len()
    }

    /// Removes the async taker `id`; `true` if no async taker is left.
    pub(super) fn unregister(&self, id: u64) -> bool {
        let mut s = lock(&self.inner);
        s.wakers.retain(|(i, _)| *i != id);
        s.wakers.is_empty()
    }

    /// Removes the `poll_expired` registration of `waker`'s task (if any);
    /// `true` if no async taker is left.
    pub(super) fn unregister_waker(&self, waker: &Waker) -> bool {
        let mut s = lock(&self.inner);
        s.wakers.retain(|(i, w)| *i != 0 || !w.will_wake(waker));
        s.wakers.is_empty()
    }

    /// An item now comes due at `tick`; returns the helper's (possibly
    /// earlier) deadline, or `None` if no async taker is waiting.
    pub(super) fn lower_deadline(&self, tick: u64) -> Option<u64> {
        let mut s = lock(&self.inner);
        if s.wakers.is_empty() {
            return None;
        }
        if tick < s.deadline {
            s.deadline = tick;
            self.helper_cv.notify_one();
        }
        Some(s.deadline)
    }
}

/// Wakes every waker, outside any lock; a panicking waker does not stop
/// the others (nor kill the helper thread).
fn wake_all(wakers: Vec<(u64, Waker)>) {
    for (_, w) in wakers {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.wake()));
    }
}

/// The helper thread: sleeps until the async takers' deadline, wakes them.
fn helper_loop(sig: &Signal, time: &TimeBase) {
    let mut s = lock(&sig.inner);
    loop {
        if s.closed {
            return;
        }
        if s.wakers.is_empty() {
            s = wait(&sig.helper_cv, s);
            continue;
        }
        if s.deadline <= time.now_tick() {
            let wakers = std::mem::take(&mut s.wakers);
            s.deadline = NEVER;
            drop(s);
            wake_all(wakers);
            s = lock(&sig.inner);
            continue;
        }
        s = match time.conv().instant_of(s.deadline) {
            Some(at) if !time.is_manual() => wait_until(&sig.helper_cv, s, at),
            _ => wait(&sig.helper_cv, s),
        };
    }
}
