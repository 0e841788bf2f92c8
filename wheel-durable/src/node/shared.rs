//! What every thread of a node shares: the store, the scheduler, the
//! configuration, and one value per stage that owns that stage's state.
//!
//! The fields are the stages' types ([`Holdings`], [`Starts`], [`Runs`],
//! [`Finishes`]) and the claimer's inputs ([`StoreTime`], [`Signal`]):
//! each keeps its state private and says in its module doc who may call
//! which of its methods. What is left here is read-only after the start
//! (store, scheduler, configuration), the stop flag, which only
//! [`NodeShared::stop`] sets, and the counters, which any stage adds to.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::clock::{Reading, StoreTime};
use super::config::{NodeConfig, millis};
use super::finishes::Finishes;
use super::flow_waits::FlowWaits;
use super::holdings::Holdings;
use super::runs::Runs;
use super::signal::Signal;
use super::starts::Starts;
use crate::LatenessBuckets;
use crate::store::{Claimed, Fenced, Millis, Store};
use crate::sync::{AtomicBool, AtomicU64, Ordering};
use wheel::Scheduler;

/// This node's counters.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) fired: AtomicU64,
    pub(crate) schedule_runs: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) stale: AtomicU64,
    /// Starts refused because the namespace or the flow key was paused.
    pub(crate) paused: AtomicU64,
    /// Claims handed to the store to park because their flow key held
    /// back more of them than a node keeps.
    pub(crate) deferred: AtomicU64,
    pub(crate) store_errors: AtomicU64,
    pub(crate) claims: AtomicU64,
}

/// What every thread of a node shares.
pub(crate) struct NodeShared {
    pub(super) store: Arc<dyn Store>,
    pub(super) scheduler: Scheduler,
    pub(super) config: NodeConfig,
    pub(super) lease_ms: Millis,
    pub(super) window_ms: Millis,
    pub(super) holdings: Holdings,
    pub(super) starts: Starts<Claimed>,
    pub(super) runs: Runs,
    pub(super) finishes: Finishes,
    pub(super) flow_waits: FlowWaits,
    pub(super) store_time: StoreTime,
    pub(super) signal: Signal,
    stopping: AtomicBool,
    pub(crate) counters: Counters,
}

impl NodeShared {
    pub(super) fn new(store: Arc<dyn Store>, scheduler: Scheduler, config: NodeConfig) -> Self {
        NodeShared {
            lease_ms: millis(config.lease),
            window_ms: millis(config.window),
            store,
            scheduler,
            config,
            holdings: Holdings::new(),
            starts: Starts::new(),
            runs: Runs::new(),
            finishes: Finishes::new(),
            flow_waits: FlowWaits::default(),
            store_time: StoreTime::default(),
            signal: Signal::default(),
            stopping: AtomicBool::new(false),
            counters: Counters::default(),
        }
    }

    /// Whether the node stops: nothing new starts, claims go back.
    pub(super) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Marks the node as stopping; true for the first caller only.
    pub(super) fn stop(&self) -> bool {
        !self.stopping.swap(true, Ordering::SeqCst)
    }

    /// Lateness percentiles and the largest, for stats.
    pub(crate) fn lateness(&self) -> (Duration, Duration, Duration) {
        self.runs.lateness()
    }

    /// Lateness as cumulative counts, for stats.
    pub(crate) fn lateness_buckets(&self) -> LatenessBuckets {
        self.runs.lateness_buckets()
    }

    /// Claims this node holds: scheduled, at their instant and waiting
    /// to start, or waiting for their flow key. What `max_claimed` bounds.
    pub(crate) fn held_count(&self) -> usize {
        self.holdings.len() + self.starts.len() + self.flow_waits.len()
    }

    /// The claims this node holds back for each flow key's limits.
    pub(crate) fn waiting_by_flow(&self) -> std::collections::HashMap<String, usize> {
        self.flow_waits.by_key()
    }

    /// The median and 99th percentile lateness of each flow key's runs on
    /// this node (the first keys seen).
    pub(crate) fn flow_lateness(&self) -> Vec<(String, Duration, Duration)> {
        self.runs.flow_lateness()
    }

    /// Takes in a store reply's clock reading; the reading to schedule by.
    pub(super) fn observe(&self, now: Millis, received: Instant) -> Reading {
        self.store_time.observe(now, received)
    }

    /// Counts a failed store call.
    pub(super) fn store_error(&self) {
        self.counters.store_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Hands claims back to the store, in batches. After a batch fails the
    /// rest are left to their leases too (other nodes fire those timers
    /// once the leases end): a store that failed one call for
    /// `unavailable_after` would fail the others as slowly, and shutdown
    /// must end.
    pub(super) fn release(&self, claims: &[Claimed]) {
        let ns = &*self.config.namespace;
        let mut released = 0;
        // Small batches at shutdown too: the other nodes go on firing, and
        // their calls wait behind each hand-back as behind any call; the
        // cost is only a few more round trips while shutting down.
        let batch = self.store.batch_limits().finish;
        for (i, part) in claims.chunks(batch).enumerate() {
            let fenced: Vec<Fenced<'_>> = part.iter().map(Claimed::fenced).collect();
            match self.store.release(&fenced) {
                Ok(done) => released += done.iter().filter(|&&d| d).count(),
                Err(e) => {
                    self.store_error();
                    let left = claims.len() - i * batch;
                    tracing::warn!(namespace = %ns, left, error = %e,
                        "claims not handed back at shutdown; they fire after their leases end");
                    break;
                }
            }
        }
        if !claims.is_empty() {
            tracing::info!(namespace = %ns, released, "claims handed back at shutdown");
        }
    }
}
