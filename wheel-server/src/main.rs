//! `wheel-server`: the durable tier of `wheel` over HTTP, for callers in
//! any language. Each server is a node: it stores the timers it is given
//! (in an embedded store, or in Redis shared with other servers) and sends
//! the callbacks of those that come due. `docs/server.md` has the API.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod adder;
mod app;
mod args;
mod auth;
mod dashboard;
mod dead;
mod guard;
mod json;
mod listener;
mod listing;
mod metrics;
mod openapi;
mod problem;
mod serve;
mod shutdown;
mod timers;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
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
