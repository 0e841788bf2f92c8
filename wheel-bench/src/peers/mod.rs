//! Single-threaded timer queues behind one trait, so each workload is written once.
//!
//! Time is a tick count (`u64`, one tick = 1 ms for the peers that think in
//! durations). The payload of every timer is a `u64` id chosen by the workload,
//! which is how the workload checks what fired.

pub mod btree;
pub mod floor;
pub mod heap;
pub mod hhwt;
pub mod tokio_dq;
pub mod wheel;

/// A single-threaded timer queue as the workloads drive it.
///
/// Contract (checked by the workloads, not trusted): `advance(now, fire)` calls
/// `fire(id)` exactly once for every pending timer whose deadline is `<= now`,
/// never for one whose deadline is later, never for a cancelled one; `cancel`
/// returns the id iff the timer was still pending.
pub trait TimerQueue {
    /// What `insert` hands back to cancel the timer with.
    type Handle: Copy;

    /// Insert a timer due at tick `deadline` (always `> now` in these workloads).
    fn insert(&mut self, deadline: u64, id: u64) -> Self::Handle;

    /// Cancel a timer; `Some(id)` iff it was pending.
    fn cancel(&mut self, handle: Self::Handle) -> Option<u64>;

    /// Move the clock to `now` (never backwards) and fire every due timer.
    fn advance<F: FnMut(u64)>(&mut self, now: u64, fire: F);

    /// Run `f` (a whole workload) in whatever context the implementation needs;
    /// tokio-util's queue enters its runtime here. Not timed separately.
    fn run<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R
    where
        Self: Sized,
    {
        f(self)
    }

    /// Whether this is a real timer whose output the workloads can check. Only the
    /// floor says no: it writes and frees entries but keeps no order.
    fn is_timer(&self) -> bool {
        true
    }
}

/// The single-threaded implementations, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// `wheel::Wheel<u64>`, default layout.
    Wheel,
    /// `std::collections::BinaryHeap` with lazy cancellation.
    BinaryHeap,
    /// `std::collections::BTreeMap` keyed by (deadline, sequence).
    BTreeMap,
    /// `hierarchical_hash_wheel_timer`'s cancellable `QuadWheelWithOverflow`.
    Hhwt,
    /// tokio-util's `DelayQueue` on a paused current-thread runtime.
    TokioDelayQueue,
    /// A slab that only writes and frees timer-sized entries.
    Floor,
}

impl Peer {
    /// Every single-threaded implementation, ours first, the floor last.
    pub const ALL: [Peer; 6] = [
        Peer::Wheel,
        Peer::BinaryHeap,
        Peer::BTreeMap,
        Peer::Hhwt,
        Peer::TokioDelayQueue,
        Peer::Floor,
    ];

    /// The name shown in tables and charts.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Wheel => "wheel::Wheel (ours)",
            Peer::BinaryHeap => "std BinaryHeap (lazy cancel)",
            Peer::BTreeMap => "std BTreeMap",
            Peer::Hhwt => "hierarchical_hash_wheel_timer",
            Peer::TokioDelayQueue => "tokio-util DelayQueue",
            Peer::Floor => "floor (slab write+free)",
        }
    }
}

/// Like [`with_peer!`](crate::with_peer), but binds `$make` to a closure that builds the queue, for
/// callers that must build it at a chosen moment (the memory workload builds it
/// inside its counting window).
#[macro_export]
macro_rules! with_peer_maker {
    ($peer:expr_2021, $cap:expr_2021, |$make:ident| $body:expr_2021) => {{
        use $crate::peers::*;
        let cap = $cap;
        match $peer {
            Peer::Wheel => {
                let $make = || wheel::OurWheel::with_capacity(cap);
                $body
            }
            Peer::BinaryHeap => {
                let $make = || heap::LazyHeap::with_capacity(cap);
                $body
            }
            Peer::BTreeMap => {
                let $make = btree::BTreeQueue::new;
                $body
            }
            Peer::Hhwt => {
                let $make = hhwt::HhwtQueue::new;
                $body
            }
            Peer::TokioDelayQueue => {
                let $make = || tokio_dq::TokioDelayQueue::with_capacity(cap);
                $body
            }
            Peer::Floor => {
                let $make = || floor::Floor::with_capacity(cap);
                $body
            }
        }
    }};
}

/// Run `$body` with `$q` bound to a fresh queue of the peer `$peer`, built for
/// `$cap` timers. A macro rather than a `dyn` trait so every workload is
/// monomorphised per implementation (no virtual call in the timed loops).
#[macro_export]
macro_rules! with_peer {
    ($peer:expr_2021, $cap:expr_2021, |$q:ident| $body:expr_2021) => {{
        use $crate::peers::*;
        match $peer {
            Peer::Wheel => {
                let $q = wheel::OurWheel::with_capacity($cap);
                $body
            }
            Peer::BinaryHeap => {
                let $q = heap::LazyHeap::with_capacity($cap);
                $body
            }
            Peer::BTreeMap => {
                let $q = btree::BTreeQueue::new();
                $body
            }
            Peer::Hhwt => {
                let $q = hhwt::HhwtQueue::new();
                $body
            }
            Peer::TokioDelayQueue => {
                let $q = tokio_dq::TokioDelayQueue::with_capacity($cap);
                $body
            }
            Peer::Floor => {
                let $q = floor::Floor::with_capacity($cap);
                $body
            }
        }
    }};
}
