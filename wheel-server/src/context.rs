//! [`ApiContext`]: what every handler shares, as axum state.
//!
//! It is built once, on the runtime (the adder's task starts there), and
//! cloned into each request (a handful of `Arc`s). Handlers call the store
//! through [`AsyncTimers`], whose calls run on the runtime's blocking pool
//! inside the library, and add one-timer requests through the [`Adder`].
//! Nothing in it changes after the start; the request counts and the
//! adder's queue are the only shared mutable state, each behind its own
//! type. This module depends on the adder, the request counts, the
//! schedule counts and the replay book only,
//! never on a route.

use std::sync::Arc;

use wheel_durable::{AsyncTimers, DurableTimers};

use crate::adder::Adder;
use crate::replay_book::ReplayBook;
use crate::requests::Requests;
use crate::schedule_stats::ScheduleStats;

/// `--metrics-flow-keys` when not given.
pub(crate) const DEFAULT_METRICS_FLOW_KEYS: usize = 50;

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct ApiContext {
    /// The store, as futures.
    pub(crate) timers: AsyncTimers,
    /// Whether callbacks may target non-public addresses.
    pub(crate) allow_private: bool,
    /// Adds timers one per request, in groups.
    pub(crate) adder: Arc<Adder>,
    /// The request counters (the counting middleware holds the same).
    pub(crate) requests: Arc<Requests>,
    /// The schedule counts `/metrics` shows, read in the background.
    pub(crate) schedule_stats: Arc<ScheduleStats>,
    /// The dead-letter replays this server started.
    pub(crate) replays: Arc<ReplayBook>,
    /// The most flow keys `/metrics` shows one by one.
    pub(crate) metrics_flow_keys: usize,
}

impl ApiContext {
    /// The context of a server over `timers`; on a tokio runtime (the
    /// adder's task starts on it).
    pub(crate) fn new(timers: Arc<DurableTimers>, allow_private: bool) -> ApiContext {
        let timers = AsyncTimers::new(timers);
        ApiContext {
            adder: Arc::new(Adder::start(timers.clone())),
            timers,
            allow_private,
            requests: Arc::default(),
            schedule_stats: Arc::default(),
            replays: Arc::default(),
            metrics_flow_keys: DEFAULT_METRICS_FLOW_KEYS,
        }
    }
}
