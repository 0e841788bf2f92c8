//! Finishes: the outcomes of runs on their way to the store.
//!
//! Owns `waiting`, the outcomes handed over and not yet recorded. Who
//! touches what: whoever ran a handler hands its outcome over
//! ([`Finishes::hand_over`], from `outcome.rs`); only the finisher thread
//! takes them ([`Finishes::take_up_to`], [`Finishes::more`],
//! [`Finishes::wait_until`]); shutdown closes it after the handlers are
//! done.

use std::time::{Duration, Instant};

use super::queue::Queue;
use crate::store::Finish;
use crate::store::flow_state::FlowClass;

/// A run's outcome on its way to the store.
pub(super) struct Ending {
    pub(super) key: String,
    pub(super) fence: u64,
    pub(super) finish: Finish,
    /// Its flow key and how it went, if it has a flow key.
    pub(super) flow: Option<(String, FlowClass)>,
    /// After this the run's lease is over: the store has handed the timer
    /// to another run, and recording this outcome is pointless.
    pub(super) give_up: Instant,
}

/// The outcomes waiting for the finisher.
pub(super) struct Finishes {
    waiting: Queue<Ending>,
}

impl Finishes {
    pub(super) fn new() -> Finishes {
        Finishes {
            waiting: Queue::new(),
        }
    }

    /// Hands a run's outcome to the finisher, to be recorded while its
    /// `lease` lasts; gives it back once shutdown closed the finishes.
    pub(super) fn hand_over(
        &self,
        key: String,
        fence: u64,
        finish: Finish,
        flow: Option<(String, FlowClass)>,
        lease: Duration,
    ) -> Result<(), Ending> {
        self.waiting.push(Ending {
            key,
            fence,
            finish,
            flow,
            give_up: Instant::now() + lease,
        })
    }

    /// Waits for at least one outcome, then takes up to `max`; `None` once
    /// closed and empty.
    pub(super) fn take_up_to(&self, max: usize) -> Option<Vec<Ending>> {
        self.waiting.take_up_to(max)
    }

    /// Up to `max` outcomes waiting now, without blocking.
    pub(super) fn more(&self, max: usize) -> Vec<Ending> {
        self.waiting.try_take_up_to(max)
    }

    /// Waits until `until` or until an outcome arrives.
    pub(super) fn wait_until(&self, until: Instant) {
        self.waiting.wait_until(until);
    }

    /// Refuses further outcomes; the finisher takes what is left, then
    /// ends.
    pub(super) fn close(&self) {
        self.waiting.close();
    }
}
