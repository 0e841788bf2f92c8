//! `wheel-server`: the durable tier of `wheel` over HTTP, for callers in
//! any language. Each server is a node: it stores the timers it is given
//! (in an embedded store, or in Redis shared with other servers) and sends
//! the callbacks of those that come due. `docs/server.md` has the API.
//!
//! The server is a library so that the fuzz targets (`fuzz/`) can reach
//! its request decoding; `main.rs` only calls [`main`]. Everything else is
//! private to the crate, but for the hidden `fuzzing` module.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// No import circle: the leaves (`error`, `decode`, `dashboard`,
// `shutdown`) import no module of the crate; `context` (the state) imports
// only `adder`, `requests` and `schedule_stats`; each resource (`timers`,
// `dead`, `schedules`, `health`, `metrics`) imports `context`, `extractor`
// and `error`, never another resource's router; `app` mounts them all and only `serve` imports it.
mod adder;
mod app;
mod args;
mod auth;
mod context;
mod dashboard;
mod dead;
mod decode;
mod ended;
mod error;
mod extractor;
mod flow_limits_flag;
mod flow_limits_json;
mod flows;
mod flows_metrics;
mod guard;
mod health;
mod json;
mod key;
mod listener;
mod listing;
mod metrics;
mod openapi;
mod openapi_patterns;
mod replay_book;
mod replays;
mod requests;
mod schedule_json;
mod schedule_stats;
mod schedules;
mod serve;
mod shutdown;
mod timers;

/// Test and fuzzing support: the request-decoding harness. Not an API;
/// compiled only for tests and `cfg(fuzzing)` (set by `cargo fuzz`).
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzzing;

use std::process::ExitCode;

use clap::Parser;

/// Runs the server as its command line asks, until it is stopped; the
/// process's exit status (2 for arguments that do not fit together).
pub fn main() -> ExitCode {
    let args = args::Args::parse();
    serve::init_logs();
    if let Err(why) = args.check() {
        tracing::error!("{why}");
        return ExitCode::from(2);
    }
    match serve::run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            tracing::error!("{why}");
            ExitCode::FAILURE
        }
    }
}
