//! HTTP-callback timers: "call this URL at that time" (feature `http`).
//!
//! [`DurableTimers::add_callback_at`] checks an [`HttpCallback`] (an `http://`
//! or `https://` URL that parses, valid header names and values, the
//! encoded request within the payload limit) and stores it as the timer's
//! payload, through the same path as `add`: durable on return, the same
//! key rules. A node built with [`DurableTimersBuilder::http`] sends each
//! due callback as a task on its tokio runtime with an async client
//! (`reqwest`: keep-alive connections pooled, HTTP/2 where offered,
//! thousands of requests in flight on a few threads) and turns the reply
//! into the run's [`Outcome`]: 2xx is done; 408, 429, 5xx, 3xx (redirects
//! are not followed), timeouts and connection errors are retried with
//! back-off, honouring `Retry-After`; any other status is a dead letter at
//! once, its reason the status and the start of the reply's body.
//! The back-off and the attempts are the node's [`RetryPolicy`], or the
//! callback's own ([`HttpCallback::retry`]) within the node's attempts.
//! With [`HttpConfig::allow_private_targets`] off, the node calls public
//! addresses only ([`is_public_address`]), and a callback to any other is
//! a dead letter at once.
//!
//! Every request carries `Wheel-Timer-Key`, `Wheel-Attempt`, `Wheel-Fence`,
//! `Wheel-Due` (the timer's original due time, the same on every attempt)
//! and `Wheel-Attempt-Due` (this attempt's due time, later after a
//! retry's back-off), and the [Standard Webhooks] headers `webhook-id` (the
//! same on every attempt of one timer, new for a timer added again under
//! the same key) and `webhook-timestamp`; with signing secrets, also
//! `webhook-signature`, which receivers check with their Standard Webhooks
//! library (see [`HttpConfig::signing_secret`]), or in Rust with
//! [`verify_signature`]. A schedule's run adds `Wheel-Schedule-Id` and
//! `Wheel-Schedule-Time` (its nominal time, Unix milliseconds).
//!
//! [Standard Webhooks]: https://www.standardwebhooks.com
//!
//! Who handles what, on a node built with `http`: a timer whose payload is
//! a callback is sent by HTTP; any other timer goes to the
//! [`handler`](DurableTimersBuilder::handler), or becomes a dead letter when
//! there is none. A node built without `http` hands callback payloads to
//! its handler like any other, so every node that fires a namespace holding
//! callbacks needs `http`. `docs/durable.md` ("HTTP callbacks") has the
//! status table, the headers, the per-host limit and the timeouts.
//!
//! # Examples
//!
//! ```no_run
//! use std::time::{Duration, SystemTime};
//! use wheel_durable::http::{HttpCallback, HttpConfig, Method};
//! use wheel_durable::DurableTimers;
//!
//! # fn main() -> Result<(), wheel_durable::DurableError> {
//! let timers = DurableTimers::builder()
//!     .embedded("callbacks")
//!     .http(HttpConfig::new().signing_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
//!     .build()?;
//! let close = HttpCallback::new(Method::Post, "https://shop.example/orders/17/close")
//!     .header("Content-Type", "application/json")
//!     .body(br#"{"reason":"unpaid"}"#.to_vec());
//! let in_30_min = SystemTime::now() + Duration::from_secs(30 * 60);
//! timers.add_callback_at("order:17:close", in_30_min, &close)?;
//! # Ok(()) }
//! ```
//!
//! [`DurableTimers::add_callback_at`]: crate::DurableTimers::add_callback_at
//! [`DurableTimersBuilder::http`]: crate::DurableTimersBuilder::http
//! [`DurableTimersBuilder`]: crate::DurableTimersBuilder
//!
//! Node state: none of the stages'; the sender (`send.rs`) owns the HTTP
//! client and the per-host permits (`hosts.rs`), used only by the async
//! dispatcher's tasks.

mod address;
mod callback;
mod config;
mod guard;
mod headers;
mod hosts;
mod reply;
mod send;
mod sign;
mod target;
mod wire;

use std::sync::Arc;

pub use self::address::is_public_address;
pub use self::callback::{
    HttpCallback, MAX_HEADER_BYTES, MAX_HEADERS, Method, RESERVED_HEADER_PREFIXES, RESERVED_HEADERS,
};
pub use self::config::HttpConfig;
use self::send::Sender;
pub use self::sign::{SignatureError, verify_signature};
pub use self::target::{Target, TargetHost, callback_target};
#[cfg(doc)]
use super::DurableTimersBuilder;
use super::node::Handler;
use super::node::tasks::{AsyncHandler, HandlerFuture};
use super::stats::HttpCounters;
use super::{DurableError, Fired, Outcome, RetryPolicy};

/// The reason of a timer that is not a callback, on a node without a
/// handler.
const NO_HANDLER: &str =
    "no handler: this node sends HTTP callbacks only, and this timer's payload is not one";

/// The user's handler for the timers that are not callbacks.
#[derive(Clone)]
pub(crate) enum Others {
    None,
    Blocking(Handler),
    Async(AsyncHandler),
}

/// The node's handler when it is built with `http`: callbacks by HTTP on
/// the node's runtime, counted in `counts`, the rest to the user's
/// handler (a blocking one on the runtime's blocking threads).
pub(crate) fn handler(
    config: &HttpConfig,
    namespace: &str,
    others: Others,
    policy: &RetryPolicy,
    counts: Arc<HttpCounters>,
) -> Result<AsyncHandler, DurableError> {
    let sender = Arc::new(Sender::new(config, namespace, policy.clone(), counts)?);
    Ok(Arc::new(move |fired: Fired| -> HandlerFuture {
        let (sender, others) = (sender.clone(), others.clone());
        Box::pin(async move {
            if wire::is_callback(&fired.payload) {
                return match wire::decode(&fired.payload) {
                    Some(cb) => sender.fire(&fired, &cb).await,
                    None => Outcome::Fail("a damaged HTTP callback payload".into()),
                };
            }
            match others {
                Others::Async(h) => h(fired).await,
                // A panic in it counts as a retry, as on a worker thread.
                Others::Blocking(h) => tokio::task::spawn_blocking(move || h(&fired))
                    .await
                    .unwrap_or(Outcome::Retry),
                Others::None => Outcome::Fail(NO_HANDLER.into()),
            }
        })
    }))
}

/// Whether a timer's payload is a callback (maybe a damaged one).
pub(crate) fn is_callback_payload(payload: &[u8]) -> bool {
    wire::is_callback(payload)
}

/// A callback payload's flow key: the one the callback names, else its
/// URL's origin; `None` for a damaged payload.
pub(crate) fn flow_key_of(payload: &[u8]) -> Option<String> {
    wire::decode(payload).map(|cb| cb.flow_key())
}
