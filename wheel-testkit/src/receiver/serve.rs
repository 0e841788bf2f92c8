//! The serving side: the loopback listener, a task per connection, and
//! each request read, recorded, scripted and answered.
//!
//! Invariants: a request's time is taken before anything else is done
//! with it: at the accept, on the accepting task, when each connection
//! carries one request; first thing in the service function, before the
//! body is read, with keep-alive. A request is recorded only once its
//! head and body are read, and its script runs after it is recorded.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use super::exchange::{Received, Reply, Script};
use super::log::Log;
use super::options::ReceiverOptions;

/// The listener's backlog: thousands of senders connect within the same
/// millisecond, and the standard library's (128) drops the rest, whose
/// clients try again only a second later. The kernel caps it.
const BACKLOG: u32 = 65_535;

/// A listener on a free loopback port.
pub(crate) async fn listen() -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    socket.listen(BACKLOG)
}

/// What every connection's task shares.
pub(crate) struct Shared {
    pub(crate) log: Arc<Log>,
    pub(crate) script: Arc<Script>,
    pub(crate) options: ReceiverOptions,
}

/// Accepts connections until the runtime stops, one task each.
pub(crate) async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let at = SystemTime::now();
                tokio::spawn(serve(stream, at, shared.clone()));
            }
            // Out of descriptors, or a connection reset before it was
            // accepted: the backlog keeps the others until the next try.
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(1)).await,
        }
    }
}

/// Serves the connection accepted at `accepted`: its one request, or with
/// keep-alive every request its client sends.
async fn serve(stream: TcpStream, accepted: SystemTime, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let keep_alive = shared.options.keep_alive;
    let service = service_fn(move |req: Request<Incoming>| {
        // Stamped before anything else: a keep-alive request's time is
        // when its head was read, not when its body has come in.
        let head = SystemTime::now();
        let at = if keep_alive { head } else { accepted };
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(answer(req, at, &shared).await) }
    });
    // The client may hang up at any point (a timeout): nothing to do then.
    let _ = http1::Builder::new()
        .keep_alive(keep_alive)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// Reads the request, records it, runs the script, holds the reply as
/// the script says and returns it.
async fn answer(req: Request<Incoming>, at: SystemTime, shared: &Shared) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await else {
        return status_only(StatusCode::BAD_REQUEST); // cut off mid-body
    };
    let only = shared.options.headers.as_deref();
    let received = received(&parts, body.to_bytes(), at, only);
    let (nth, _in_flight) = shared.log.record(received.clone());
    let reply = (shared.script)(&received, nth);
    // The log holds the request: this copy is not kept while the reply is
    // held, so a held request costs one record, not two.
    drop(received);
    // hyper's head is kept until the reply is sent, on purpose: its bytes
    // share the connection's read buffer, so whether hyper can reuse that
    // buffer would otherwise depend on when it next reads, and what a held
    // request costs would vary from run to run (the comparison subtracts
    // one such run from another).
    let _head = parts;
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    if let Some(gate) = &reply.gate {
        gate.wait().await;
    }
    response(reply)
}

/// The record of a request read whole, with only the headers named in
/// `only` (lower case) when given.
fn received(
    parts: &hyper::http::request::Parts,
    body: Bytes,
    at: SystemTime,
    only: Option<&[String]>,
) -> Received {
    let kept = |name: &str| only.is_none_or(|only| only.iter().any(|o| o == name));
    Received {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.to_string(), |p| p.as_str().to_owned()),
        headers: parts
            .headers
            .iter()
            .filter(|(n, _)| kept(n.as_str()))
            .map(|(n, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (n.as_str().to_owned(), value)
            })
            .collect(),
        body: body.to_vec(),
        at,
    }
}

/// The hyper response for a script's reply.
///
/// # Panics
///
/// On a status or header a script got wrong (a test's bug): outside
/// 100..=999, or a name or value HTTP cannot carry.
fn response(reply: Reply) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(Bytes::from(reply.body)));
    *res.status_mut() = StatusCode::from_u16(reply.status)
        .unwrap_or_else(|_| panic!("the script's status {} is not one", reply.status));
    for (name, value) in &reply.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .unwrap_or_else(|_| panic!("the script's header name {name:?}"));
        let value = HeaderValue::from_str(value)
            .unwrap_or_else(|_| panic!("the script's header value {value:?}"));
        res.headers_mut().append(name, value);
    }
    res
}

fn status_only(status: StatusCode) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(Bytes::new()));
    *res.status_mut() = status;
    res
}
