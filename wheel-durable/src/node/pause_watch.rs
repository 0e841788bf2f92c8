//! The log event of a circuit breaker that paused its flow key: a key
//! whose breaker stays open past its `pause_after` is paused by the store,
//! inside the finish that records the failed probe, and the node that
//! sent that finish says so in its log.
//!
//! Owns the finisher thread's memory of which keys it last saw paused
//! (a local of that thread; nothing else touches it). The store's answer
//! to a finish says only whether each run was recorded, so after a batch
//! that recorded a failure the watch reads the flows' state, at most once
//! per [`LOOK_EVERY`], and logs each key that is paused now, with its
//! breaker open, and was not paused at the last look.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::shared::NodeShared;
use crate::store::flow_state::{FlowClass, Phase};

/// How often the watch reads the flows' state at most.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// What the finisher thread remembers between batches.
#[derive(Default)]
pub(super) struct PauseWatch {
    /// A recorded run failed since the last look.
    failed: bool,
    last: Option<Instant>,
    /// The keys paused at the last look.
    paused: HashSet<String>,
}

impl PauseWatch {
    /// Notes a recorded batch's flow outcomes.
    pub(super) fn note<'a>(&mut self, mut classes: impl Iterator<Item = &'a FlowClass>) {
        self.failed |= classes.any(|c| matches!(c, FlowClass::Failure { .. }));
    }

    /// When the next look is due: after a recorded failure, once the last
    /// look is [`LOOK_EVERY`] old.
    pub(super) fn due(&self) -> Option<Instant> {
        if !self.failed {
            return None;
        }
        Some(self.last.map_or_else(Instant::now, |at| at + LOOK_EVERY))
    }

    /// Reads the flows' state and logs each key paused since the last
    /// look with its breaker open.
    pub(super) fn look(&mut self, shared: &NodeShared) {
        self.failed = false;
        self.last = Some(Instant::now());
        let flows = match shared.store.flows() {
            Ok(flows) => flows,
            Err(e) => {
                tracing::debug!(namespace = %shared.config.namespace, error = %e, "reading the flows failed");
                return;
            }
        };
        let mut now_paused = HashSet::new();
        for k in flows.keys.into_iter().filter(|k| k.paused) {
            let open = k.breaker.phase != Phase::Closed;
            if open && !self.paused.contains(&k.key) {
                tracing::warn!(
                    namespace = %shared.config.namespace,
                    flow = ?k.key,
                    failures = k.breaker.failures,
                    parked = k.parked,
                    "flow key paused: its circuit breaker stayed open past pause_after; resume it once its target is back"
                );
            }
            now_paused.insert(k.key);
        }
        self.paused = now_paused;
    }
}
