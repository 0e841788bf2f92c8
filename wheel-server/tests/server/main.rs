//! Black-box tests of the `wheel-server` binary, in one test binary: each
//! test starts the built server as a child process on a free loopback
//! port. One module per subject; `common` holds the shared support and
//! `browser` drives headless Chromium for the dashboard.

mod browser;
mod common;

mod api;
mod callbacks;
mod clients;
mod crash;
mod dashboard;
mod flow_limits;
mod flows;
mod guard;
mod headers;
mod limits;
mod logs;
mod redis;
mod replays;
mod requests;
mod schedules;
