//! The loopback endpoint of the HTTP section: hyper's HTTP/1.1 server on a
//! tokio runtime of its own, answering every request `200` after a fixed
//! delay, with keep-alive, so that one client connection carries many
//! requests and thousands of connections wait at once (each is a task, not
//! a thread).
//!
//! Each request is logged as it arrives, before the delay: its arrival on
//! this machine's clock and its `Wheel-Timer-Key`, `Wheel-Fence` and
//! `Wheel-Due` headers. The log only grows while the receiver runs; the
//! runs read it once the senders are done.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use crate::durable::unix_ns;

/// One request as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// Arrival, ns since the epoch.
    pub at_ns: i64,
    /// `Wheel-Timer-Key`, if sent.
    pub key: Option<String>,
    /// `Wheel-Fence`, if sent and a number.
    pub fence: Option<u64>,
    /// `Wheel-Due` (Unix ms), if sent and a number.
    pub due_ms: Option<i64>,
}

/// The requests seen so far.
#[derive(Default)]
struct Log {
    arrivals: Mutex<Vec<Arrival>>,
    count: AtomicUsize,
}

/// A running receiver; dropping it stops it.
pub struct Receiver {
    runtime: Option<tokio::runtime::Runtime>,
    addr: SocketAddr,
    log: Arc<Log>,
}

/// A header's value as text, if present and visible ASCII.
fn text<'a>(req: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    req.headers().get(name)?.to_str().ok()
}

/// The arrival of `req` at `at_ns`.
fn arrival(req: &Request<Incoming>, at_ns: i64) -> Arrival {
    Arrival {
        at_ns,
        key: text(req, "wheel-timer-key").map(str::to_owned),
        fence: text(req, "wheel-fence").and_then(|v| v.trim().parse().ok()),
        due_ms: text(req, "wheel-due").and_then(|v| v.trim().parse().ok()),
    }
}

impl Receiver {
    /// Starts a receiver on a free loopback port that answers after
    /// `delay`.
    pub fn start(delay: Duration) -> std::io::Result<Receiver> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("http-receiver")
            .enable_all()
            .build()?;
        let listener = runtime.block_on(async {
            let socket = TcpSocket::new_v4()?;
            socket.set_reuseaddr(true)?;
            socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
            // A backlog as deep as the kernel allows: thousands of senders
            // connect within the same millisecond.
            socket.listen(65_535)
        })?;
        let addr = listener.local_addr()?;
        let log = Arc::new(Log::default());
        runtime.spawn(accept(listener, log.clone(), delay));
        Ok(Receiver {
            runtime: Some(runtime),
            addr,
            log,
        })
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL callbacks are sent to.
    pub fn url(&self) -> String {
        format!("http://{}/callback", self.addr)
    }

    /// Requests received so far.
    pub fn received(&self) -> usize {
        self.log.count.load(Ordering::Acquire)
    }

    /// Waits until `n` requests have arrived or `deadline` passes; true if
    /// they all did.
    pub fn wait_for(&self, n: usize, deadline: SystemTime) -> bool {
        while self.received() < n {
            if SystemTime::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }

    /// Stops serving and returns every request logged.
    pub fn finish(mut self) -> Vec<Arrival> {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
        std::mem::take(&mut *self.log.arrivals.lock().unwrap())
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Accepts connections until the runtime stops, one task each.
async fn accept(listener: TcpListener, log: Arc<Log>, delay: Duration) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(serve(stream, log.clone(), delay));
            }
            // Out of descriptors, say: the senders' connects wait in the
            // backlog meanwhile.
            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
}

/// Serves one keep-alive connection.
async fn serve(stream: TcpStream, log: Arc<Log>, delay: Duration) {
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |req: Request<Incoming>| {
        let log = log.clone();
        async move {
            let a = arrival(&req, unix_ns(SystemTime::now()));
            log.arrivals.lock().unwrap().push(a);
            log.count.fetch_add(1, Ordering::Release);
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok::<_, Infallible>(Response::new(String::new()))
        }
    });
    let _ = http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}
