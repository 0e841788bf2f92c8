//! The tick thread: owns the [`Wheel`], applies commands, hands expired
//! timers to the workers, and sleeps until the next expiration.
//!
//! # Invariants (tick-thread private state)
//!
//! - The wheel stores only `(slot index, armed seq)` packed in a `u64`
//!   ([`pack_armed`]); the closure and the wheel key live in the per-slot
//!   side table `held` (a [`Held`] per slot, 24 bytes). `held[i]` is
//!   `Some` iff the wheel holds an entry for slot `i`, and then its key
//!   names that entry. A slot is released only after its entry left the
//!   wheel, so `held[i]` always belongs to the slot's current occupant.
//! - An entry in the wheel whose armed seq equals its slot's current
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
//! A timed sleep before a due timer ends one spin lead early, and the
//! thread polls the clock for the rest (`lateness.rs`), unless the
//! scheduler was built `sleep_only`: then it sleeps until the tick itself.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::clock::NEVER;
use crate::core::{Expired, TimerKey, Wheel};
use crate::sync::{Arc, Backoff, Ordering, Parker};

use super::Shared;
use super::command::{Command, Entry, Task};
use super::lanes::lane_of;
use super::lateness::WakeLateness;
use super::outbox::{OUTBOX_CAP, Slab};
use super::slots::{
    CANCELLED, Claim, PENDING, QUEUED, RUNNING, gen_of, is_repeat, seq_of, state_of,
};

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

/// Timer slack requested for the tick thread (Linux), in nanoseconds. The
/// default 50 µs slack would be added to every timed wake-up.
#[cfg(all(target_os = "linux", not(loom)))]
const TIMER_SLACK_NS: &str = "1000";

/// Entries per chunk of the tick thread's side table (24 bytes each).
const HELD_CHUNK_BITS: u32 = 12;

/// The wheel's value for slot `index` armed with reset sequence `seq`.
pub(crate) fn pack_armed(index: u32, seq: u32) -> u64 {
    (u64::from(seq) << 32) | u64::from(index)
}

/// `(index, seq)` of a wheel value.
pub(crate) fn unpack_armed(v: u64) -> (u32, u32) {
    (v as u32, (v >> 32) as u32)
}

/// What the tick thread keeps per slot while the slot's entry is in its
/// wheel: the closure and the wheel key (24 bytes; `Option<Held>` uses the
/// box's niche).
struct Held {
    task: Box<dyn Task>,
    key: TimerKey,
}

/// The per-slot side table: fixed-size chunks allocated on demand, so it
/// grows without copying and wastes at most one chunk.
struct HeldTable {
    chunks: Vec<Box<[Option<Held>]>>,
}

impl HeldTable {
    fn new() -> HeldTable {
        HeldTable { chunks: Vec::new() }
    }

    fn slot(&mut self, index: u32) -> &mut Option<Held> {
        let c = (index >> HELD_CHUNK_BITS) as usize;
        while self.chunks.len() <= c {
            self.chunks
                .push((0..1usize << HELD_CHUNK_BITS).map(|_| None).collect());
        }
        &mut self.chunks[c][(index & ((1 << HELD_CHUNK_BITS) - 1)) as usize]
    }

    fn clear(&mut self) {
        self.chunks.clear();
    }
}

/// A reset that arrived while the repeating timer's entry was with a worker.
struct Stash {
    generation: u32,
    seq: u32,
    due: u64,
}

/// The tick thread's state.
pub(crate) struct Ticker {
    shared: Arc<Shared>,
    wheel: Wheel<u64>,
    held: HeldTable,
    stash: HashMap<u32, Stash>,
    flush_ticks: u64,
    parker: Parker,
    /// The lane `apply_commands` starts with.
    next_lane: usize,
    /// Retired slots not yet on the free lists (see `release`): lane,
    /// index, new generation.
    retired: Vec<(u32, u32, u32)>,
    /// How late timed wake-ups come here: sets the spin lead.
    lateness: WakeLateness,
    /// An empty slab, swapped with an outbox's at each take (`outbox.rs`).
    spare: Slab,
}

impl Ticker {
    pub(crate) fn new(shared: Arc<Shared>, wheel: Wheel<u64>, parker: Parker) -> Ticker {
        let flush_ticks = shared
            .time
            .conv()
            .tick_of_nanos(FLUSH_INTERVAL.as_nanos() as u64)
            .max(1);
        Ticker {
            shared,
            wheel,
            held: HeldTable::new(),
            stash: HashMap::new(),
            flush_ticks,
            lateness: WakeLateness::default(),
            parker,
            next_lane: 0,
            retired: Vec::with_capacity(RECYCLE_BATCH),
            spare: Slab::new(),
        }
    }

    /// The tick thread's main loop; returns when shut down.
    pub(crate) fn run(mut self) {
        let me = self.parker.unparker().clone();
        // Held for the thread's lifetime; the clock keeps it weakly.
        let _listener = self.shared.time.manual().map(|clock| {
            let wake: std::sync::Arc<dyn Fn() + Send + Sync> =
                std::sync::Arc::new(move || me.unpark());
            clock.on_advance(&wake);
            wake
        });
        #[cfg(all(target_os = "linux", not(loom)))]
        if !self.shared.time.is_manual() {
            // Best effort: fails harmlessly on kernels that do not allow it.
            let _ = std::fs::write("/proc/thread-self/timerslack_ns", TIMER_SLACK_NS);
        }
        let manual = self.shared.time.is_manual();
        loop {
            if self.shared.shutdown.load(Ordering::SeqCst) {
                break;
            }
            self.shared.wake_plan.awake();
            let now = self.shared.time.now();
            let applied = self.apply_commands();
            let now_tick = self.shared.time.conv().now_tick(now);
            let next_take = self.take_outboxes(now_tick);
            self.fire(now_tick);
            self.recycle();
            self.shared
                .counters
                .reached_tick
                .store(now_tick, Ordering::Release);
            if applied == DRAIN_BATCH {
                continue;
            }
            let expiring = self.wheel.next_expiration().unwrap_or(NEVER);
            let next = expiring.min(next_take);
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
            self.shared.wake_plan.publish(wake_tick, arm);
            if self.has_work(wake_tick) {
                continue;
            }
            self.sleep(wake_tick, wake_tick == expiring, manual);
        }
        let dropped = self.shutdown_drain();
        self.shared
            .counters
            .dropped
            .fetch_add(dropped as u64, Ordering::Relaxed);
        self.shared.ticker_done.store(true, Ordering::SeqCst);
        self.shared.pool.wake_all();
    }

    /// Sleeps until `wake_tick` starts (or a command or shutdown wakes it).
    /// `expiring`: a timer is due at `wake_tick` (not a flush wake-up).
    fn sleep(&mut self, wake_tick: u64, expiring: bool, manual: bool) {
        if manual || wake_tick == NEVER {
            self.shared.pool.relax();
            self.park(None);
            return;
        }
        let Some(at) = self.shared.time.conv().instant_of(wake_tick) else {
            self.shared.pool.relax();
            self.park(None);
            return;
        };
        let d = at.saturating_duration_since(Instant::now());
        if d.is_zero() {
            return;
        }
        let lead = self.lateness.lead();
        let poll = expiring && self.shared.poll_before_due;
        if !poll || d > lead {
            // The loop comes back here, imminent, if it wakes on time.
            self.shared.pool.relax();
            let timeout = d.saturating_sub(if poll { lead } else { Duration::ZERO });
            let until = Instant::now() + timeout;
            self.park(Some(timeout));
            // A wake-up by `unpark` comes early and tells nothing.
            let late = Instant::now().saturating_duration_since(until);
            if !late.is_zero() {
                self.lateness
                    .observe(u64::try_from(late.as_nanos()).unwrap_or(u64::MAX));
            }
            return;
        }
        self.shared.pool.prepare(lead);
        self.poll_until(at, wake_tick);
    }

    /// Parks (for at most `timeout` if given) and counts the wake-up: the
    /// one place the tick thread sleeps, so `Stats::wakeups` sees them all.
    fn park(&self, timeout: Option<Duration>) {
        match timeout {
            Some(t) => self.parker.park_timeout(t),
            None => self.parker.park(),
        }
        self.shared.counters.wakeups.fetch_add(1, Ordering::Relaxed);
    }

    /// After publishing a plan to wake at `wake_tick`: whether something
    /// came meanwhile (a command, an outbox to take before `wake_tick`, the
    /// shutdown), so the thread must not sleep.
    fn has_work(&self, wake_tick: u64) -> bool {
        !self.shared.commands_empty()
            || self.shared.earliest_take() < wake_tick
            || self.shared.shutdown.load(Ordering::SeqCst)
    }

    /// Polls the clock until `at` (the start of `wake_tick`), and
    /// [`has_work`](Self::has_work); returns as soon as either says so.
    fn poll_until(&self, at: Instant, wake_tick: u64) {
        let backoff = Backoff::new();
        while Instant::now() < at {
            if self.has_work(wake_tick) {
                return;
            }
            if backoff.is_completed() {
                crate::sync::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
    }

    /// Applies up to `DRAIN_BATCH` commands, taken from the lanes in turn
    /// (each lane in its FIFO order); returns how many.
    fn apply_commands(&mut self) -> usize {
        let shared = self.shared.clone();
        let lanes = shared.lanes.len();
        let mut applied = 0;
        // Start where the previous round stopped, so no lane starves.
        for d in 0..lanes {
            let lane = lane_of(self.next_lane + d, lanes);
            let queue = &shared.lanes[lane].commands;
            if queue.is_empty() {
                continue;
            }
            while let Some(cmd) = queue.pop() {
                self.apply(lane, cmd);
                applied += 1;
                if applied == DRAIN_BATCH {
                    self.next_lane = lane;
                    return applied;
                }
            }
        }
        applied
    }

    /// Takes every outbox whose take-by tick has come (`now_tick`) and
    /// applies the timers it held, as inserts. Returns the earliest take-by
    /// tick of the outboxes it left (one load of each: the plan needs no
    /// fresher value, since the re-check after publishing it reads them
    /// again).
    fn take_outboxes(&mut self, now_tick: u64) -> u64 {
        let shared = self.shared.clone();
        let mut next = NEVER;
        for lane in shared.lanes.iter() {
            let earliest = lane.outbox.earliest();
            if earliest > now_tick {
                next = next.min(earliest);
                continue;
            }
            lane.outbox.take(&mut self.spare);
            let mut taken = std::mem::take(&mut self.spare);
            for (position, waiting) in taken.drain(..).enumerate() {
                if let Some(w) = waiting {
                    let generation = w.generation;
                    self.apply_insert(w.into_entry(position), generation);
                }
            }
            taken.shrink_to(OUTBOX_CAP);
            self.spare = taken;
        }
        next
    }

    /// Releases a slot whose entry the tick thread held, returning it to
    /// `lane`'s free list: the generation is bumped now, the index reaches
    /// the free list with the next batch (at most `RECYCLE_BATCH` later, or
    /// at the end of the round).
    fn release(&mut self, lane: usize, index: u32) {
        let generation = self.shared.slots.retire(index);
        self.retired.push((lane as u32, index, generation));
        if self.retired.len() >= RECYCLE_BATCH {
            self.recycle();
        }
    }

    /// Puts the retired indices on their free lists.
    fn recycle(&mut self) {
        for (lane, index, generation) in self.retired.drain(..) {
            self.shared.slots.recycle(lane as usize, index, generation);
        }
    }

    fn arm(&mut self, entry: Entry) {
        let tick = self.shared.time.tick_of_due(entry.due);
        self.arm_at(entry, tick);
    }

    fn arm_at(&mut self, entry: Entry, tick: u64) {
        let Entry {
            mut task,
            index,
            seq,
            due,
        } = entry;
        // A repeating timer keeps its exact due time in its box (the
        // fixed-rate schedule needs it); a one-shot's is its wheel tick.
        task.set_due(due);
        let key = self.wheel.insert(tick, pack_armed(index, seq));
        let old = self.held.slot(index).replace(Held { task, key });
        debug_assert!(old.is_none(), "slot {index} armed twice");
    }

    /// Applies one command popped from `lane`.
    fn apply(&mut self, lane: usize, cmd: Command) {
        match cmd {
            Command::Rearm(entry) => self.apply_rearm(lane, entry),
            Command::Cancel { index, generation } => self.apply_cancel(lane, index, generation),
            Command::Reset {
                index,
                generation,
                seq,
                due,
            } => self.apply_reset(index, generation, seq, due),
        }
    }

    /// A new timer: into the wheel, unless it was cancelled already.
    #[inline]
    fn apply_insert(&mut self, entry: Entry, generation: u32) {
        if self.shared.slots.mark_applied(entry.index, generation) {
            self.arm(entry);
        }
        // Otherwise it was cancelled before this insert, and its canceller
        // freed the slot: only the entry (the closure) is left to drop.
    }

    /// A repeating timer back from a worker: into the wheel at its next
    /// run, at a reset's deadline, or parked until a reset's command comes.
    #[inline]
    fn apply_rearm(&mut self, lane: usize, mut entry: Entry) {
        let index = entry.index;
        let w = self.shared.slots.load(index);
        let stash = self.stash.remove(&index);
        if state_of(w) == CANCELLED {
            self.release(lane, index);
            return;
        }
        debug_assert_eq!(state_of(w), PENDING);
        match stash {
            Some(s) if s.generation == gen_of(w) && s.seq == seq_of(w) => {
                entry.seq = s.seq;
                entry.due = s.due;
                self.arm(entry);
            }
            _ if entry.seq != seq_of(w) => {
                // Reset while with a worker; its command is still on
                // the way and will move the parked entry.
                self.arm_at(entry, NEVER);
            }
            // The worker set the next run's due time (it may be
            // past: then the run is late and fires at once).
            _ => {
                debug_assert!(
                    entry.task.period() > 0,
                    "only repeating timers come back unchanged"
                );
                self.arm(entry);
            }
        }
    }

    /// A handle cancelled a timer: its entry leaves the wheel now, if it is
    /// there (otherwise a worker holds it and releases the slot).
    #[inline]
    fn apply_cancel(&mut self, lane: usize, index: u32, generation: u32) {
        let w = self.shared.slots.load(index);
        if gen_of(w) != generation || state_of(w) != CANCELLED {
            return;
        }
        if let Some(held) = self.held.slot(index).take() {
            let armed = self.wheel.cancel(held.key);
            debug_assert_eq!(armed.map(|v| unpack_armed(v).0), Some(index));
            drop(held.task);
            self.release(lane, index);
        }
    }

    /// A handle reset a timer to `due`: its entry moves in the wheel, or,
    /// if a worker holds it, the reset waits in `stash` for the re-arm.
    #[inline]
    fn apply_reset(&mut self, index: u32, generation: u32, seq: u32, due: u64) {
        let w = self.shared.slots.load(index);
        let live = match state_of(w) {
            PENDING | QUEUED => true,
            RUNNING => is_repeat(w),
            _ => false,
        };
        if gen_of(w) != generation || seq_of(w) != seq || !live {
            return; // superseded, cancelled or over
        }
        let tick = self.shared.time.tick_of_due(due);
        match self.held.slot(index) {
            Some(held) => {
                held.task.set_due(due);
                let key = held.key;
                let moved = self.wheel.reset(key, tick);
                debug_assert!(moved);
                if let Some(v) = self.wheel.get_mut(key) {
                    *v = pack_armed(index, seq);
                }
            }
            None => {
                self.stash.insert(
                    index,
                    Stash {
                        generation,
                        seq,
                        due,
                    },
                );
            }
        }
    }

    /// Takes an expired wheel entry out with its closure.
    fn take_expired(&mut self, expired: Expired<u64>) -> Entry {
        let (index, seq) = unpack_armed(expired.value);
        let held = self
            .held
            .slot(index)
            .take()
            .expect("an entry in the wheel has its closure in the side table");
        let due = held
            .task
            .due()
            .unwrap_or_else(|| self.shared.time.conv().nanos_of_tick(expired.deadline));
        Entry {
            task: held.task,
            index,
            seq,
            due,
        }
    }

    /// Fires every entry due at `now_tick`.
    fn fire(&mut self, now_tick: u64) {
        let mut dispatched = 0usize;
        while let Some(expired) = self.wheel.poll(now_tick) {
            let entry = self.take_expired(expired);
            let index = entry.index;
            match self.shared.slots.claim(index, entry.seq) {
                Claim::Won => {
                    self.shared.pool.push(entry);
                    dispatched += 1;
                }
                Claim::Cancelled => {
                    drop(entry);
                    let lane = self.shared.slots.home_lane(index);
                    self.release(lane, index);
                }
                Claim::Stale => self.arm_at(entry, NEVER),
            }
        }
        if dispatched > 0 {
            self.shared.pool.wake(dispatched);
        }
    }

    /// At shutdown: drops every timer still pending (queued or in the
    /// wheel) without running it; returns how many it stopped.
    fn shutdown_drain(&mut self) -> usize {
        let shared = self.shared.clone();
        let slots = &shared.slots;
        let mut dropped = 0;
        // Still pending (not queued for a worker): stop and count it.
        let stop = |index: u32| usize::from(slots.cancel_current(index));
        for lane in shared.lanes.iter() {
            // Nothing is put in an outbox after this take (`outbox.rs`).
            lane.outbox.take(&mut self.spare);
            for waiting in self.spare.drain(..).flatten() {
                let (index, generation) = (waiting.index, waiting.generation);
                dropped += usize::from(slots.cancel(0, index, generation).is_some());
            }
            while let Some(cmd) = lane.commands.pop() {
                match cmd {
                    Command::Rearm(e) => dropped += stop(e.index),
                    Command::Cancel { .. } | Command::Reset { .. } => {}
                }
            }
        }
        // The wheel's entries: their closures are dropped with `held`.
        for expired in self.wheel.drain() {
            dropped += stop(unpack_armed(expired.value).0);
        }
        self.held.clear();
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn armed_values_round_trip_at_boundaries() {
        for &(i, s) in &[
            (0u32, 0u32),
            (u32::MAX, (1 << 28) - 1),
            (7, 1),
            (1 << 31, 1 << 27),
        ] {
            assert_eq!(unpack_armed(pack_armed(i, s)), (i, s));
        }
    }

    #[test]
    fn held_entry_is_24_bytes() {
        // The per-slot cost of the tick thread's side table (the box's
        // niche makes the `Option` free).
        assert_eq!(std::mem::size_of::<Option<Held>>(), 24);
    }
}
