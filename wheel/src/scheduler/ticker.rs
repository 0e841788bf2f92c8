//! The tick thread: owns the [`Wheel`], applies commands, hands expired
//! timers to the workers, and sleeps until the next expiration.
//!
//! # Invariants (tick-thread private state)
//!
//! - `keys[i]` is `Some(key)` iff the wheel holds an entry for slot `i`, and
//!   then `key` names it. A slot is released only after its entry left the
//!   wheel, so `keys[i]` always belongs to the slot's current occupant.
//! - An entry in the wheel with `entry.seq` equal to its slot's current
//!   sequence sits at the deadline chosen by the last linearized operation
//!   (schedule, reset, or fixed-rate re-arm). An entry whose `seq` is older
//!   is *stale*: a `Reset` command carrying the newer sequence and deadline
//!   is on its way; if the stale entry expires first, its claim fails
//!   (`Claim::Stale`) and it is parked at `NEVER` until that command moves it.
//! - `stash[i]` keeps the latest `Reset` of a repeating timer that arrived
//!   while its entry was with a worker; the re-arm uses it if the slot still
//!   carries that sequence.
//! - The wheel is never advanced to `NEVER`, so `NEVER` entries never fire.
//!
//! # Sleep policy
//!
//! After each round the tick thread plans to wake at the wheel's next
//! expiration. If the round applied commands (a busy producer), it instead
//! wakes no later than [`FLUSH_INTERVAL`] and does not arm the wake plan, so
//! producers and cancellers make no system call and cancelled closures are
//! freed within about that interval. If the round was quiet and the sleep is
//! long, it arms the plan: the first command of any kind then wakes it
//! (one `unpark` per long sleep). With a [`ManualClock`](crate::ManualClock)
//! it never sleeps on a timeout: it parks until a command, a shutdown or
//! `ManualClock::advance` wakes it, and it never reads the system clock.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::core::{TimerKey, Wheel};
use crate::sync::{Arc, Ordering, Parker};

use super::handle::{
    gen_of, is_repeat, seq_of, state_of, Claim, CANCELLED, PENDING, QUEUED, RUNNING,
};
use super::submit::{next_fixed_rate, Command, Entry, NEVER};
use super::Shared;

/// Upper bound on the sleep of a tick thread that is receiving commands:
/// how long a cancelled closure may wait to be dropped, and how long an
/// insert may wait in the queue, while no timer is due sooner.
pub(crate) const FLUSH_INTERVAL: Duration = Duration::from_millis(1);

/// Commands applied per round before expired timers are fired again, so a
/// flood of producers cannot delay firing indefinitely.
const DRAIN_BATCH: usize = 4096;

/// Slots the tick thread retires before it hands them to the free lists
/// in one go (also at the end of every round).
const RECYCLE_BATCH: usize = 256;

/// The last tick the wheel may be advanced to (`NEVER` stays in the future).
const LAST_TICK: u64 = NEVER - 1;

/// Timer slack requested for the tick thread (Linux), in nanoseconds. The
/// default 50 µs slack would be added to every timed wake-up.
#[cfg(all(target_os = "linux", not(loom)))]
const TIMER_SLACK_NS: &str = "1000";

/// A reset that arrived while the repeating timer's entry was with a worker.
struct Stash {
    gen: u32,
    seq: u32,
    due: u64,
}

/// The tick thread's state.
pub(crate) struct Ticker {
    shared: Arc<Shared>,
    wheel: Wheel<Entry>,
    keys: Vec<Option<TimerKey>>,
    stash: HashMap<u32, Stash>,
    flush_ticks: u64,
    parker: Parker,
    /// The lane `drain` starts with.
    next_lane: usize,
    /// Retired slot indices not yet on the free lists (see `release`).
    retired: Vec<(u32, u32)>,
}

impl Ticker {
    pub(crate) fn new(shared: Arc<Shared>, wheel: Wheel<Entry>, parker: Parker) -> Ticker {
        let flush_ticks = shared
            .conv
            .tick_of_nanos(FLUSH_INTERVAL.as_nanos() as u64)
            .max(1);
        Ticker {
            shared,
            wheel,
            keys: Vec::new(),
            stash: HashMap::new(),
            flush_ticks,
            parker,
            next_lane: 0,
            retired: Vec::with_capacity(RECYCLE_BATCH),
        }
    }

    /// The tick thread's main loop; returns when shut down.
    pub(crate) fn run(mut self) {
        let me = self.parker.unparker().clone();
        // Held for the thread's lifetime; the clock keeps it weakly.
        let _listener = self.shared.clock.manual().map(|clock| {
            let wake: std::sync::Arc<dyn Fn() + Send + Sync> =
                std::sync::Arc::new(move || me.unpark());
            clock.on_advance(&wake);
            wake
        });
        #[cfg(all(target_os = "linux", not(loom)))]
        if self.shared.clock.manual().is_none() {
            // Best effort: fails harmlessly on kernels that do not allow it.
            let _ = std::fs::write("/proc/thread-self/timerslack_ns", TIMER_SLACK_NS);
        }
        let manual = self.shared.clock.manual().is_some();
        loop {
            if self.shared.shutdown.load(Ordering::SeqCst) {
                break;
            }
            self.shared.wake.awake();
            let now = self.shared.clock.now();
            let applied = self.drain(now);
            let now_tick = self.shared.conv.now_tick(now).min(LAST_TICK);
            self.fire(now_tick);
            self.recycle();
            self.shared
                .counters
                .reached_tick
                .store(now_tick, Ordering::Release);
            if applied == DRAIN_BATCH {
                continue;
            }
            let next = self.wheel.next_expiration().unwrap_or(NEVER);
            if next <= now_tick {
                continue;
            }
            let (wake_tick, arm) = if manual {
                (next, true)
            } else if applied > 0 {
                (next.min(now_tick.saturating_add(self.flush_ticks)), false)
            } else {
                (next, next - now_tick > self.flush_ticks)
            };
            self.shared.wake.publish(wake_tick, arm);
            if !self.shared.commands_empty() || self.shared.shutdown.load(Ordering::SeqCst) {
                continue;
            }
            self.sleep(wake_tick, manual);
        }
        let dropped = self.shutdown_drain();
        self.shared
            .counters
            .dropped
            .fetch_add(dropped as u64, Ordering::Relaxed);
        self.shared.ticker_done.store(true, Ordering::SeqCst);
        self.shared.pool.wake_all();
    }

    fn sleep(&self, wake_tick: u64, manual: bool) {
        if manual || wake_tick == NEVER {
            self.parker.park();
            return;
        }
        match self.shared.conv.instant_of(wake_tick) {
            None => self.parker.park(),
            Some(at) => {
                let d = at.saturating_duration_since(Instant::now());
                if !d.is_zero() {
                    self.parker.park_timeout(d);
                }
            }
        }
    }

    /// Applies up to `DRAIN_BATCH` commands, taken from the lanes in turn
    /// (each lane in its FIFO order); returns how many.
    fn drain(&mut self, now: Instant) -> usize {
        let now_nanos = self.shared.conv.nanos_of(now);
        let shared = self.shared.clone();
        let lanes = shared.lanes.len();
        let mut applied = 0;
        // Start where the previous round stopped, so no lane starves.
        for d in 0..lanes {
            let lane = (self.next_lane + d) % lanes;
            let queue = &shared.lanes[lane].commands;
            if queue.is_empty() {
                continue;
            }
            while let Some(cmd) = queue.pop() {
                self.apply(cmd, now_nanos);
                applied += 1;
                if applied == DRAIN_BATCH {
                    self.next_lane = lane;
                    return applied;
                }
            }
        }
        applied
    }

    /// Releases a slot whose entry the tick thread held: the generation is
    /// bumped now, the index reaches the free list with the next batch
    /// (at most `RECYCLE_BATCH` later, or at the end of the round).
    fn release(&mut self, index: u32) {
        let gen = self.shared.slots.retire(index);
        self.retired.push((index, gen));
        if self.retired.len() >= RECYCLE_BATCH {
            self.recycle();
        }
    }

    /// Puts the retired indices on their free lists.
    fn recycle(&mut self) {
        for (index, gen) in self.retired.drain(..) {
            self.shared.slots.recycle(index, gen);
        }
    }

    fn key_slot(&mut self, index: u32) -> &mut Option<TimerKey> {
        let i = index as usize;
        if i >= self.keys.len() {
            self.keys.resize(i + 1, None);
        }
        &mut self.keys[i]
    }

    fn arm(&mut self, entry: Entry) {
        let tick = self.shared.tick_of(entry.due);
        self.arm_at(entry, tick);
    }

    fn arm_at(&mut self, entry: Entry, tick: u64) {
        let index = entry.index;
        let key = self.wheel.insert(tick, entry);
        let old = self.key_slot(index).replace(key);
        debug_assert!(old.is_none(), "slot {index} armed twice");
    }

    fn apply(&mut self, cmd: Command, now_nanos: u64) {
        match cmd {
            Command::Insert(entry) => {
                let w = self.shared.slots.load(entry.index);
                if state_of(w) == CANCELLED {
                    self.release(entry.index);
                } else {
                    debug_assert_eq!(state_of(w), PENDING);
                    self.arm(entry);
                }
            }
            Command::Rearm(mut entry) => {
                let index = entry.index;
                let w = self.shared.slots.load(index);
                let stash = self.stash.remove(&index);
                if state_of(w) == CANCELLED {
                    self.release(index);
                    return;
                }
                debug_assert_eq!(state_of(w), PENDING);
                match stash {
                    Some(s) if s.gen == gen_of(w) && s.seq == seq_of(w) => {
                        entry.seq = s.seq;
                        entry.due = s.due;
                        self.arm(entry);
                    }
                    _ if entry.seq != seq_of(w) => {
                        // Reset while with a worker; its command is still on
                        // the way and will move the parked entry.
                        self.arm_at(entry, NEVER);
                    }
                    _ => {
                        let period = entry.task.period();
                        debug_assert!(period > 0, "only repeating timers come back unchanged");
                        entry.due = next_fixed_rate(entry.due, period.max(1), now_nanos);
                        self.arm(entry);
                    }
                }
            }
            Command::Cancel { index, gen } => {
                let w = self.shared.slots.load(index);
                if gen_of(w) != gen || state_of(w) != CANCELLED {
                    return;
                }
                if let Some(key) = self.key_slot(index).take() {
                    let entry = self.wheel.cancel(key);
                    debug_assert!(entry.is_some());
                    drop(entry);
                    self.release(index);
                }
            }
            Command::Reset {
                index,
                gen,
                seq,
                due,
            } => {
                let w = self.shared.slots.load(index);
                let live = match state_of(w) {
                    PENDING | QUEUED => true,
                    RUNNING => is_repeat(w),
                    _ => false,
                };
                if gen_of(w) != gen || seq_of(w) != seq || !live {
                    return; // superseded, cancelled or over
                }
                match *self.key_slot(index) {
                    Some(key) => {
                        let tick = self.shared.tick_of(due);
                        let moved = self.wheel.reset(key, tick);
                        debug_assert!(moved);
                        if let Some(e) = self.wheel.get_mut(key) {
                            e.seq = seq;
                            e.due = due;
                        }
                    }
                    None => {
                        self.stash.insert(index, Stash { gen, seq, due });
                    }
                }
            }
        }
    }

    /// Fires every entry due at `now_tick`.
    fn fire(&mut self, now_tick: u64) {
        let mut dispatched = 0usize;
        while let Some(expired) = self.wheel.poll(now_tick) {
            let entry = expired.value;
            let index = entry.index;
            self.keys[index as usize] = None;
            match self.shared.slots.claim(index, entry.seq) {
                Claim::Won => {
                    self.shared.pool.push(entry);
                    dispatched += 1;
                }
                Claim::Cancelled => {
                    drop(entry);
                    self.release(index);
                }
                Claim::Stale => {
                    let key = self.wheel.insert(NEVER, entry);
                    self.keys[index as usize] = Some(key);
                }
            }
        }
        if dispatched > 0 {
            self.shared.pool.wake(dispatched);
        }
    }

    /// At shutdown: drops every timer still pending (queued or in the
    /// wheel) without running it; returns how many it stopped.
    fn shutdown_drain(&mut self) -> usize {
        let slots = &self.shared.slots;
        let mut dropped = 0;
        let mut stop = |entry: Entry| {
            // Still pending (not queued for a worker): stop and count it.
            if slots.cancel_current(entry.index) {
                dropped += 1;
            }
            drop(entry);
        };
        for lane in self.shared.lanes.iter() {
            while let Some(cmd) = lane.commands.pop() {
                match cmd {
                    Command::Insert(e) | Command::Rearm(e) => stop(e),
                    Command::Cancel { .. } | Command::Reset { .. } => {}
                }
            }
        }
        for expired in self.wheel.drain() {
            stop(expired.value);
        }
        self.keys.clear();
        self.stash.clear();
        if self.shared.bounded() {
            self.shared
                .counters
                .pending
                .fetch_sub(dropped, Ordering::Relaxed);
        }
        dropped
    }
}
