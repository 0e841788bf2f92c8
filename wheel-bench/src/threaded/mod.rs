//! Timer services that run callbacks on their own thread(s), behind one trait so
//! each threaded workload is written once.
//!
//! A [`ThreadedTimer`] is started, hands out one [`TimerProducer`] per producer
//! thread (some peers' handles are not `Sync`), and is shut down at the end.

pub mod heap_plain;
pub mod heap_thread;
pub mod hhwt_thread;
pub mod ours;
pub mod scaling;
pub mod timer_crate;
pub mod tokio_tasks;

use std::time::Duration;

/// A timer service with its own thread(s).
pub trait ThreadedTimer: Sized {
    /// The per-thread scheduling handle.
    type Producer: TimerProducer;
    /// Start the service (threads, runtime).
    fn start() -> Self;
    /// A handle for one producer thread.
    fn producer(&self) -> Self::Producer;
    /// Stop the service, dropping pending timers, and join what can be joined.
    fn shutdown(self);
    /// How many times the service's timer thread has woken so far, for
    /// services that count it; `None` for the others.
    fn wakeups(&self) -> Option<u64> {
        None
    }
}

/// Schedules and cancels from one thread.
pub trait TimerProducer: Send + 'static {
    /// What cancels a timer.
    type Handle: Send + 'static;
    /// Run `f` once, `delay` from now, on the service's thread(s).
    fn schedule<F: FnOnce() + Send + 'static>(&mut self, delay: Duration, f: F) -> Self::Handle;
    /// Cancel; `Some(true)` iff the service reports that the callback will not
    /// run, `None` for services whose cancel reports nothing.
    fn cancel(&mut self, handle: Self::Handle) -> Option<bool>;
}

/// The threaded implementations, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThreadedPeer {
    /// `wheel::Scheduler` (ours).
    Scheduler,
    /// The plain `Mutex<BinaryHeap>` + `Condvar` timer thread: a slab of
    /// closures, cancel takes the closure out under the lock.
    HeapPlain,
    /// A `Mutex<BinaryHeap>` + `Condvar` timer thread with lazy cancel: an
    /// `Arc<AtomicBool>` per timer, set without the lock.
    HeapThread,
    /// `hierarchical_hash_wheel_timer`'s `TimerWithThread`.
    HhwtThread,
    /// The `timer` crate.
    TimerCrate,
    /// tokio: a task per timer (`spawn` + `sleep_until`, `abort` to cancel).
    TokioTasks,
}

impl ThreadedPeer {
    /// Every threaded implementation, ours first.
    pub const ALL: [ThreadedPeer; 6] = [
        ThreadedPeer::Scheduler,
        ThreadedPeer::HeapPlain,
        ThreadedPeer::HeapThread,
        ThreadedPeer::HhwtThread,
        ThreadedPeer::TimerCrate,
        ThreadedPeer::TokioTasks,
    ];

    /// The name shown in tables.
    pub fn name(self) -> &'static str {
        match self {
            ThreadedPeer::Scheduler => "wheel::Scheduler (ours)",
            ThreadedPeer::HeapPlain => "Mutex<BinaryHeap> thread, plain (slab, cancel under lock)",
            ThreadedPeer::HeapThread => {
                "Mutex<BinaryHeap> thread, lazy (Arc<AtomicBool> per timer)"
            }
            ThreadedPeer::HhwtThread => "hierarchical_hash_wheel_timer thread",
            ThreadedPeer::TimerCrate => "timer crate",
            ThreadedPeer::TokioTasks => "tokio spawn+sleep",
        }
    }
}

/// Run `$body` with `$t` bound to a type implementing [`ThreadedTimer`] chosen by
/// `$peer` (as a type alias `$t`), so the workload is monomorphised per peer.
#[macro_export]
macro_rules! with_threaded {
    ($peer:expr_2021, |$t:ident| $body:expr_2021) => {{
        use $crate::threaded::*;
        match $peer {
            ThreadedPeer::Scheduler => {
                type $t = ours::OurScheduler;
                $body
            }
            ThreadedPeer::HeapPlain => {
                type $t = heap_plain::HeapPlain;
                $body
            }
            ThreadedPeer::HeapThread => {
                type $t = heap_thread::HeapThread;
                $body
            }
            ThreadedPeer::HhwtThread => {
                type $t = hhwt_thread::HhwtThread;
                $body
            }
            ThreadedPeer::TimerCrate => {
                type $t = timer_crate::TimerCrate;
                $body
            }
            ThreadedPeer::TokioTasks => {
                type $t = tokio_tasks::TokioTasks;
                $body
            }
        }
    }};
}

/// A broken service for the workloads' own tests: it runs every callback
/// at once, on the producer's thread, and cannot cancel, so every check
/// must fail on it.
#[cfg(test)]
pub(crate) struct Immediate;

#[cfg(test)]
impl ThreadedTimer for Immediate {
    type Producer = Immediate;
    fn start() -> Immediate {
        Immediate
    }
    fn producer(&self) -> Immediate {
        Immediate
    }
    fn shutdown(self) {}
}

#[cfg(test)]
impl TimerProducer for Immediate {
    type Handle = ();
    fn schedule<F: FnOnce() + Send + 'static>(&mut self, _delay: Duration, f: F) {
        f();
    }
    fn cancel(&mut self, _: ()) -> Option<bool> {
        Some(false)
    }
}
