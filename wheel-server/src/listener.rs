//! The accept loop: HTTP/1 connections under the limits that keep slow or
//! idle clients from holding the server.
//!
//! - At most `--max-connections` connections are open at once. The loop
//!   takes a permit before it accepts, so a connection beyond the bound
//!   waits in the kernel's backlog (it is not refused) until a permit
//!   frees: when a slow client is cut off, the next one is served.
//! - The whole request head must arrive within `--header-timeout`; the
//!   same timeout closes a keep-alive connection that waits longer than
//!   that for its next request (hyper starts the head's timer as soon as
//!   the connection is idle).
//! - The whole body must arrive within `--body-timeout` of its head. A
//!   handler that was reading it answers 408 with a problem document and
//!   the connection closes (what is left of the body is never read).
//! - On a signal the loop stops accepting, in-flight requests finish for
//!   at most `--shutdown-timeout`, and the connections still open then
//!   are closed, so that the node's own shutdown can follow.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

use crate::error::Problem;

/// The limits on connections and the time clients get.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The whole request head (and a keep-alive connection's wait for the
    /// next one) within this.
    pub(crate) header_timeout: Duration,
    /// The whole body within this, counted from the head.
    pub(crate) body_timeout: Duration,
    /// Connections open at once.
    pub(crate) max_connections: usize,
    /// How long in-flight requests may run on after a signal.
    pub(crate) shutdown_timeout: Duration,
}

/// Serves `app` on `listener` until `signal` resolves, then stops as the
/// module says.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    signal: impl Future<Output = ()>,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    tokio::pin!(signal);
    loop {
        // The permit comes first: without one, the next connection stays
        // in the backlog rather than being accepted and left unserved.
        let permit = tokio::select! {
            biased;
            () = &mut signal => break,
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break, // the semaphore is never closed
            },
        };
        let stream = tokio::select! {
            biased;
            () = &mut signal => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(&e).await;
                    continue;
                }
            },
        };
        // Finished connections leave the set here, so it holds only the
        // open ones.
        while connections.try_join_next().is_some() {}
        let service = hyper::service::service_fn({
            let app = app.clone();
            move |request| call(app.clone(), request, limits.body_timeout)
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        connections.spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection closed");
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        while connections.try_join_next().is_some() {}
        tracing::warn!(
            open = connections.len(),
            "requests still in flight after --shutdown-timeout; closing their connections"
        );
    }
    // Dropping the connections also drops their handlers' hold on the
    // node, which the node's shutdown waits for.
    connections.shutdown().await;
}

/// What the loop does when `accept` fails: a connection that went away
/// before it was accepted is nobody's concern; anything else (out of file
/// descriptors, mostly) is logged, and the loop pauses so that it does not
/// spin while the condition lasts.
async fn accept_failed(e: &std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accept failed; pausing for a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// One request through the router, its body under the body timeout.
async fn call(
    app: Router,
    request: Request<Incoming>,
    body_timeout: Duration,
) -> Result<Response, std::convert::Infallible> {
    let timed_out = BodyTimedOut::default();
    let deadline = Instant::now() + body_timeout;
    let mut request = request.map(|body| {
        Body::new(DeadlineBody {
            inner: body,
            deadline,
            sleep: None,
            timed_out: timed_out.clone(),
        })
    });
    // For the request counter, which counts the 408 this answer becomes.
    request.extensions_mut().insert(timed_out.clone());
    let response = app.oneshot(request).await?;
    if !timed_out.get() {
        return Ok(response);
    }
    // The handler saw a body that failed to arrive; the client is told why,
    // not that its body was malformed.
    let mut response = Problem::new(
        StatusCode::REQUEST_TIMEOUT,
        "body-timeout",
        "The request body arrived too slowly",
        format!(
            "the whole body must arrive within {} s of the request head (--body-timeout)",
            body_timeout.as_secs_f64()
        ),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    Ok(response)
}

/// Whether a request's body missed its deadline: its answer is then a 408,
/// whatever the handler made of the failed body.
#[derive(Debug, Clone, Default)]
pub(crate) struct BodyTimedOut(Arc<AtomicBool>);

impl BodyTimedOut {
    /// Whether the body missed its deadline.
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A request body that fails once its deadline passes before its end.
struct DeadlineBody {
    inner: Incoming,
    deadline: Instant,
    /// Made the first time the body waits: a request without a body, or
    /// one whose body is already there, never starts a timer.
    sleep: Option<Pin<Box<Sleep>>>,
    timed_out: BodyTimedOut,
}

/// The error a [`DeadlineBody`] ends with.
#[derive(Debug)]
struct BodyTimeout;

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive within --body-timeout")
    }
}

impl std::error::Error for BodyTimeout {}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => return Poll::Ready(frame.map(|f| f.map_err(Into::into))),
            Poll::Pending => {}
        }
        let deadline = this.deadline;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => {
                this.timed_out.set();
                Poll::Ready(Some(Err(BodyTimeout.into())))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
