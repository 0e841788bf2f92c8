//! # wheel-durable
//!
//! Durable timers: timers that survive a crash or a deploy, and that
//! several processes share. Built on the `wheel` engine: each node fires
//! its claims from a [`wheel::Scheduler`].
//!
//! The store is the wheel's outermost, coarsest level: it holds every timer
//! by due time, durably. Each node (a process with a handler) claims the
//! timers due within its claim window into its in-memory [`Scheduler`],
//! which fires each at its millisecond; the store is asked before the
//! handler starts (so a cancelled or re-claimed timer never starts) and told
//! after it ends.
//!
//! | type | for |
//! | --- | --- |
//! | [`DurableTimers`], [`DurableTimersBuilder`] | one node: add, cancel, reset, inspect; fire with a handler |
//! | [`Fired`], [`Outcome`] | what a handler gets and answers |
//! | [`DurableTimersBuilder::handler_async`] (feature `tokio`) | async handlers: runs as tasks, thousands in flight |
//! | [`RetryPolicy`] | back-off and attempts for handlers that ask to retry |
//! | [`TimerInfo`], [`TimerState`], [`DeadLetter`], [`DurableStats`], [`LatenessBuckets`], [`HttpCounts`] | what the store and the node report |
//! | [`Listing`], [`Page`], [`Cursor`] | paging through pending, claimed and dead timers |
//! | [`AddOrGet`] | what an add-or-get came to: added, or the timer that holds the key |
//! | [`AsyncTimers`] (feature `tokio`) | the same calls as futures, for callers on a tokio runtime |
//! | [`DurableError`], [`ErrorDetail`] | every failure, typed, with its cause |
//! | [`http`] (feature `http`) | callback timers: "call this URL at that time" |
//! | [`schedule`] | recurring schedules (cron in a time zone, fixed period): specs, run planning, run keys |
//! | [`DurableTimers::upsert_schedule`] and the calls beside it, [`ScheduleInfo`], [`SchedulePage`], [`Upserted`], [`ScheduleRun`] | durable schedules: each run a timer, the chain kept by the store |
//!
//! Features:
//!
//! | feature | turns on |
//! | --- | --- |
//! | `embedded` (default) | the embedded store, one [fjall] directory owned by one process: [`DurableTimersBuilder::embedded`] |
//! | `redis` | the Redis store, shared by any number of processes: [`DurableTimersBuilder::redis`] |
//! | `tokio` | async handlers, run as tasks on a tokio runtime: [`DurableTimersBuilder::handler_async`]; the calls as futures: [`AsyncTimers`] |
//! | `http` | callback timers, the [`http`] module (implies `tokio`) |
//! | `cron` (default) | cron specs with IANA time zones, from a bundled tz database: [`schedule::Spec::cron`] |
//! | `tls-ring` | the callbacks' TLS on rustls's `ring` provider; without it, on the provider the application installs as rustls's process default |
//!
//! Guarantees (`docs/durable.md` has the protocol and the failure table):
//! - **Durable on return**: `add*`, `cancel` and `reset_at` return once
//!   the store holds the change (fsynced for the embedded store;
//!   acknowledged by Redis, whose own `appendfsync` decides the rest).
//! - **Never early, one clock**: a handler never starts before `due` by the
//!   store's clock, whatever the node's clock says.
//! - **At-least-once, exactly once when nothing fails**, with a `fence`
//!   that grows with every claim so that a target can refuse a stale
//!   duplicate.
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use wheel_durable::{DurableTimers, Outcome};
//!
//! # fn main() -> Result<(), wheel_durable::DurableError> {
//! let timers = DurableTimers::builder()
//!     .embedded("timers")
//!     .handler(|t| {
//!         println!("closing {} (attempt {})", t.key, t.attempt);
//!         Outcome::Done
//!     })
//!     .build()?;
//! timers.add("order:17", Duration::from_secs(30 * 60), b"close")?;
//! timers.cancel("order:17")?; // the customer paid
//! timers.shutdown()?;
//! # Ok(()) }
//! ```
//!
//! [`Scheduler`]: wheel::Scheduler
//! [fjall]: https://docs.rs/fjall

#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// The crate's docs name the items of every feature (the Redis builder, the
// async and HTTP APIs). Built with some features off, those names stay plain
// text instead of warning; every link is checked with all features on (the
// docs.rs build, as CI runs it).
#![cfg_attr(
    not(all(feature = "embedded", feature = "redis", feature = "http")),
    allow(rustdoc::broken_intra_doc_links)
)]

// Timers must live somewhere: a build without a store could only fail at
// run time, so it fails here, saying which features to pick.
#[cfg(not(any(feature = "embedded", feature = "redis")))]
compile_error!(
    "wheel-durable needs a store: enable the feature `embedded` (the default) or `redis`"
);

mod add;
#[cfg(feature = "tokio")]
mod async_schedules;
#[cfg(feature = "tokio")]
mod async_timers;
mod builder;
#[cfg(feature = "tokio")]
mod builder_async;
mod dead_filter;
mod dedup;
mod error;
mod fired;
mod flow_key;
mod flow_limits;
mod flows;
#[cfg(feature = "http")]
pub mod http;
mod info;
mod lateness;
mod listing;
mod node;
mod replay;
mod retry;
pub mod schedule;
mod schedule_info;
mod schedule_store;
mod stats;
pub(crate) mod store;
mod sync;
mod time;
mod timers;
mod timers_schedules;

/// Fuzzing and property-test support: re-exports of the stores'
/// differential harness. Not part of the stable API; only compiled for
/// tests and `cfg(fuzzing)`, with the embedded store.
#[cfg(all(feature = "embedded", any(test, fuzzing)))]
#[doc(hidden)]
pub mod fuzzing;

pub(crate) use self::add::AddMode;
pub use self::add::AddOrGet;
#[cfg(feature = "tokio")]
pub use self::async_timers::AsyncTimers;
pub use self::builder::DurableTimersBuilder;
pub use self::dead_filter::DeadFilter;
pub use self::dedup::{EndedHow, EndedTimer};
pub use self::error::{DurableError, ErrorDetail};
pub use self::fired::{Fired, Outcome};
pub use self::flow_limits::{
    CircuitBreaker, FlowLimits, MAX_FLOW_PARALLELISM, MAX_FLOW_PERIOD, MAX_FLOW_RATE,
};
pub use self::flows::{BreakerState, BreakerStatus, FlowStatus, Flows};
pub use self::info::{
    DeadLetter, DurableStats, HttpCounts, LatenessBuckets, TimerInfo, TimerState,
};
pub use self::listing::{Cursor, Listing, Page, ParseCursorError};
pub use self::replay::{MAX_REPLAY_RATE, Replay, ReplayProgress, ReplayState};
pub use self::retry::RetryPolicy;
pub use self::schedule_info::{ScheduleInfo, SchedulePage, ScheduleRun, SkippedRuns, Upserted};
pub use self::timers::DurableTimers;

/// The longest key, in bytes.
///
/// # Examples
///
/// ```
/// use wheel_durable::{DurableError, DurableTimers, MAX_KEY_LEN};
///
/// let dir = tempfile::tempdir().unwrap();
/// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
/// let too_long = "k".repeat(MAX_KEY_LEN + 1);
/// let due = std::time::SystemTime::now();
/// assert!(matches!(timers.add_at(&too_long, due, b""), Err(DurableError::InvalidKey)));
/// timers.shutdown()?;
/// # Ok::<(), DurableError>(())
/// ```
pub const MAX_KEY_LEN: usize = 1024;

/// The default payload limit, in bytes (1 MiB); see
/// [`DurableTimersBuilder::max_payload`].
///
/// # Examples
///
/// ```
/// use wheel_durable::{DurableError, DurableTimers, DEFAULT_MAX_PAYLOAD};
///
/// let dir = tempfile::tempdir().unwrap();
/// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
/// let big = vec![0u8; DEFAULT_MAX_PAYLOAD + 1];
/// let due = std::time::SystemTime::now();
/// assert!(matches!(
///     timers.add_at("order:17", due, &big),
///     Err(DurableError::PayloadTooLarge { len, max }) if len == big.len() && max == DEFAULT_MAX_PAYLOAD
/// ));
/// timers.shutdown()?;
/// # Ok::<(), DurableError>(())
/// ```
pub const DEFAULT_MAX_PAYLOAD: usize = 1 << 20;

/// Checks the key of a timer to add: [`check_input`], and none of the
/// prefixes of schedules' runs (`sched:`, `sched-trigger:`), which only
/// the stores create.
fn check_new(key: &str, payload: &[u8], max_payload: usize) -> Result<(), DurableError> {
    check_input(key, payload, max_payload)?;
    if schedule::is_reserved_key(key) {
        return Err(DurableError::InvalidKey);
    }
    Ok(())
}

/// Checks a key and a payload before anything is sent to a store.
fn check_input(key: &str, payload: &[u8], max_payload: usize) -> Result<(), DurableError> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(DurableError::InvalidKey);
    }
    if payload.len() > max_payload {
        return Err(DurableError::PayloadTooLarge {
            len: payload.len(),
            max: max_payload,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_payloads_are_checked_at_their_edges() {
        let long = "k".repeat(MAX_KEY_LEN);
        assert_eq!(check_input(&long, &[], 0), Ok(()));
        assert_eq!(
            check_input(&format!("{long}k"), &[], 0),
            Err(DurableError::InvalidKey)
        );
        assert_eq!(check_input("", &[], 0), Err(DurableError::InvalidKey));
        assert_eq!(check_input("k", &[0; 4], 4), Ok(()));
        assert_eq!(
            check_input("k", &[0; 5], 4),
            Err(DurableError::PayloadTooLarge { len: 5, max: 4 })
        );
    }
}
