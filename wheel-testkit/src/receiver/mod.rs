//! The receiver: hyper's HTTP/1.1 server on a free loopback port, on a
//! tokio runtime of its own, that records every request and answers it
//! from the test's script.
//!
//! Each connection is a task, and the listener's backlog holds thousands
//! of connection attempts, so on a loaded two-core machine thousands of
//! requests can be open at once and none waits on another: a reply held
//! by a delay or a [`Gate`] holds up only its own request.
//!
//! Invariants: a request's time is its connection's accept, taken on the
//! accepting task before anything else is done with it. A request is
//! recorded, numbered among its path's requests and counted in flight once
//! its head and body are read, before its script runs; it stops counting
//! in flight when its reply is sent or its client hangs up. Each connection
//! carries one request (every reply says `connection: close`), so the
//! accept time is the request's.

mod exchange;
mod gate;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Instant, SystemTime};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

pub use exchange::{Received, Reply};
pub use gate::Gate;

use crate::LIVENESS;

/// The script: given a request and which request to its path this is (1
/// for the first), the reply. It runs on the receiver's runtime and must
/// not block: a reply to hold is a [`Reply::after`] or [`Reply::until`].
pub type Script = dyn Fn(&Received, usize) -> Reply + Send + Sync;

/// The listener's backlog: thousands of senders connect within the same
/// millisecond, and the standard library's (128) drops the rest, whose
/// clients try again only a second later. The kernel caps it.
const BACKLOG: u32 = 65_535;

#[derive(Default)]
struct Recorded {
    /// Every request, in order of arrival.
    requests: Vec<Received>,
    /// How many requests each path has had.
    per_path: HashMap<String, usize>,
}

#[derive(Default)]
struct Log {
    recorded: Mutex<Recorded>,
    arrived: Condvar,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

impl Log {
    /// Records a request and counts it in flight until the returned guard
    /// drops; returns which request to its path it is.
    fn record(&self, received: Received) -> (usize, InFlight<'_>) {
        let mut rec = self.recorded.lock().unwrap();
        let n = rec.per_path.entry(received.path.clone()).or_default();
        *n += 1;
        let nth = *n;
        rec.requests.push(received);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        self.arrived.notify_all();
        (nth, InFlight(self))
    }
}

/// A request counted in flight; dropped when its reply is sent or its
/// client hung up (hyper then drops the request's future).
struct InFlight<'a>(&'a Log);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A scripted HTTP/1.1 receiver on a free loopback port; it stops
/// listening when dropped (requests still held are cut off).
///
/// # Examples
///
/// ```
/// use std::io::{Read, Write};
/// use wheel_testkit::{Receiver, Reply};
///
/// let rx = Receiver::start(|r, nth| {
///     if nth == 1 { Reply::status(503) } else { Reply::status(200).body(r.body.clone()) }
/// });
/// for _ in 0..2 {
///     let mut s = std::net::TcpStream::connect(rx.addr())?;
///     s.write_all(b"POST /hook HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nhi")?;
///     let mut reply = String::new();
///     s.read_to_string(&mut reply)?; // the receiver closes the connection
///     println!("{}", reply.lines().next().unwrap_or(""));
/// }
/// let got = rx.wait_for(2);
/// assert_eq!((got[1].path.as_str(), &got[1].body[..]), ("/hook", &b"hi"[..]));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Receiver {
    log: Arc<Log>,
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Receiver {
    /// A receiver that answers each request with `script(request, nth)`.
    ///
    /// # Panics
    ///
    /// When no runtime or loopback listener can be had (out of threads or
    /// descriptors).
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{Receiver, Reply};
    ///
    /// let rx = Receiver::start(|r, _| match r.path.as_str() {
    ///     "/gone" => Reply::status(410).body("deleted"),
    ///     _ => Reply::status(200),
    /// });
    /// assert!(rx.url("/gone").starts_with("http://127.0.0.1:"));
    /// ```
    pub fn start(script: impl Fn(&Received, usize) -> Reply + Send + Sync + 'static) -> Receiver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-receiver")
            .enable_all()
            .build()
            .expect("the receiver's runtime");
        let listener = runtime.block_on(listen()).expect("a loopback listener");
        let addr = listener.local_addr().expect("the listener's address");
        let log = Arc::new(Log::default());
        let script: Arc<Script> = Arc::new(script);
        runtime.spawn(accept(listener, log.clone(), script));
        Receiver {
            log,
            addr,
            runtime: Some(runtime),
        }
    }

    /// A receiver that answers 200 to everything.
    ///
    /// # Examples
    ///
    /// ```
    /// let rx = wheel_testkit::Receiver::ok();
    /// assert_eq!(rx.count(), 0);
    /// ```
    pub fn ok() -> Receiver {
        Receiver::start(|_, _| Reply::status(200))
    }

    /// A receiver that answers 200 to each request once `gate` is open:
    /// until then every request stays in flight.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{Gate, Receiver};
    ///
    /// let gate = Gate::opening_at(2); // opens once two requests wait
    /// let rx = Receiver::gated(&gate);
    /// assert_eq!(rx.max_in_flight(), 0);
    /// ```
    pub fn gated(gate: &Gate) -> Receiver {
        let gate = gate.clone();
        Receiver::start(move |_, _| Reply::status(200).until(&gate))
    }

    /// The address it listens on (127.0.0.1).
    ///
    /// # Examples
    ///
    /// ```
    /// let rx = wheel_testkit::Receiver::ok();
    /// assert!(rx.addr().ip().is_loopback());
    /// ```
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR` followed by `path`.
    ///
    /// # Examples
    ///
    /// ```
    /// let rx = wheel_testkit::Receiver::ok();
    /// assert_eq!(rx.url("/a?b=1"), format!("http://{}/a?b=1", rx.addr()));
    /// ```
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request so far, in order of arrival.
    ///
    /// # Examples
    ///
    /// ```
    /// let rx = wheel_testkit::Receiver::ok();
    /// assert!(rx.requests().is_empty());
    /// ```
    pub fn requests(&self) -> Vec<Received> {
        self.log.recorded.lock().unwrap().requests.clone()
    }

    /// How many requests arrived so far.
    ///
    /// # Examples
    ///
    /// ```
    /// let rx = wheel_testkit::Receiver::ok();
    /// assert_eq!(rx.count(), rx.requests().len());
    /// ```
    pub fn count(&self) -> usize {
        self.log.recorded.lock().unwrap().requests.len()
    }

    /// Waits until at least `n` requests arrived and returns them all.
    ///
    /// # Panics
    ///
    /// When fewer than `n` arrived within [`LIVENESS`].
    ///
    /// # Examples
    ///
    /// ```
    /// let rx = wheel_testkit::Receiver::ok();
    /// assert!(rx.wait_for(0).is_empty());
    /// ```
    #[track_caller]
    pub fn wait_for(&self, n: usize) -> Vec<Received> {
        let until = Instant::now() + LIVENESS;
        let mut rec = self.log.recorded.lock().unwrap();
        while rec.requests.len() < n {
            let now = Instant::now();
            assert!(
                now < until,
                "only {} of {n} requests after {LIVENESS:?}",
                rec.requests.len()
            );
            rec = self.log.arrived.wait_timeout(rec, until - now).unwrap().0;
        }
        rec.requests.clone()
    }

    /// The most requests that were in flight (recorded, reply not yet
    /// sent) at once.
    ///
    /// # Examples
    ///
    /// ```
    /// let rx = wheel_testkit::Receiver::ok();
    /// assert_eq!(rx.max_in_flight(), 0);
    /// ```
    pub fn max_in_flight(&self) -> usize {
        self.log.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

async fn listen() -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    socket.listen(BACKLOG)
}

/// Accepts connections until the runtime stops, one task each.
async fn accept(listener: TcpListener, log: Arc<Log>, script: Arc<Script>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let at = SystemTime::now();
                tokio::spawn(serve(stream, at, log.clone(), script.clone()));
            }
            // Out of descriptors, or a connection reset before it was
            // accepted: the backlog keeps the others until the next try.
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(1)).await,
        }
    }
}

/// Serves the connection's one request, accepted at `at`.
async fn serve(stream: TcpStream, at: SystemTime, log: Arc<Log>, script: Arc<Script>) {
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |req: Request<Incoming>| {
        let (log, script) = (log.clone(), script.clone());
        async move { Ok::<_, Infallible>(answer(req, at, &log, script.as_ref()).await) }
    });
    // The client may hang up at any point (a timeout): nothing to do then.
    let _ = http1::Builder::new()
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// Reads the request, records it, runs the script, holds the reply as
/// the script says and returns it.
async fn answer(
    req: Request<Incoming>,
    at: SystemTime,
    log: &Log,
    script: &Script,
) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await else {
        return status_only(StatusCode::BAD_REQUEST); // cut off mid-body
    };
    let received = Received {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.to_string(), |p| p.as_str().to_owned()),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (n.as_str().to_owned(), value)
            })
            .collect(),
        body: body.to_bytes().to_vec(),
        at,
    };
    let (nth, _in_flight) = log.record(received.clone());
    let reply = script(&received, nth);
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    if let Some(gate) = &reply.gate {
        gate.wait().await;
    }
    response(reply)
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
