//! The receiver: hyper's HTTP/1.1 server on a free loopback port, on a
//! tokio runtime of its own, that records every request and answers it
//! from the test's script.
//!
//! Each connection is a task, and the listener's backlog holds thousands
//! of connection attempts, so on a loaded two-core machine thousands of
//! requests can be open at once and none waits on another: a reply held
//! by a delay or a [`Gate`] holds up only its own request.
//!
//! Invariants: by default each connection carries one request (every
//! reply says `connection: close`), and a request's time is its
//! connection's accept, taken on the accepting task before anything else
//! is done with it. With [`ReceiverOptions::keep_alive`] a connection
//! carries many requests, and a request's time is taken first thing in
//! the service function, when its head has been read and before its body
//! is. A request is recorded, numbered among its path's requests and
//! counted in flight once its head and body are read, before its script
//! runs; it stops counting in flight when its reply is sent or its client
//! hangs up. The serving tasks only append to the record; the test's
//! thread reads it.

mod exchange;
mod gate;
mod log;
mod options;
mod serve;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

pub use exchange::{Received, Reply, Script};
pub use gate::Gate;
pub use options::ReceiverOptions;

use crate::LIVENESS;
use log::Log;
use serve::Shared;

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
    /// A receiver that answers each request with `script(request, nth)`,
    /// one request per connection.
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
        Receiver::start_with(ReceiverOptions::new(), script)
    }

    /// A receiver that serves as `options` say and answers each request
    /// with `script(request, nth)`.
    ///
    /// # Panics
    ///
    /// When no runtime or loopback listener can be had (out of threads or
    /// descriptors).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{BufRead, BufReader, Write};
    /// use std::time::Duration;
    /// use wheel_testkit::{ReceiverOptions, Receiver, Reply};
    ///
    /// // Every reply held 10 ms, on connections kept open.
    /// let rx = Receiver::start_with(ReceiverOptions::new().keep_alive(), |_, _| {
    ///     Reply::status(200).after(Duration::from_millis(10))
    /// });
    /// let mut s = std::net::TcpStream::connect(rx.addr())?;
    /// let mut replies = BufReader::new(s.try_clone()?);
    /// for _ in 0..2 {
    ///     s.write_all(b"POST /hook HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")?;
    ///     let mut line = String::new();
    ///     replies.read_line(&mut line)?;
    ///     assert!(line.starts_with("HTTP/1.1 200"), "{line}");
    ///     while line != "\r\n" { // the rest of the head; the body is empty
    ///         line.clear();
    ///         replies.read_line(&mut line)?;
    ///     }
    /// }
    /// assert_eq!(rx.wait_for(2).len(), 2); // both on the one connection
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_with(
        options: ReceiverOptions,
        script: impl Fn(&Received, usize) -> Reply + Send + Sync + 'static,
    ) -> Receiver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-receiver")
            .enable_all()
            .build()
            .expect("the receiver's runtime");
        let listener = runtime
            .block_on(serve::listen())
            .expect("a loopback listener");
        let addr = listener.local_addr().expect("the listener's address");
        let log = Arc::new(Log::default());
        let script: Arc<Script> = Arc::new(script);
        let shared = Shared {
            log: log.clone(),
            script,
            options,
        };
        runtime.spawn(serve::accept(listener, Arc::new(shared)));
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
        self.log.recorded().requests.clone()
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
        self.log.recorded().requests.len()
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
        let (rec, all) = self.log.wait(n, SystemTime::now() + LIVENESS);
        assert!(
            all,
            "only {} of {n} requests after {LIVENESS:?}",
            rec.requests.len()
        );
        rec.requests.clone()
    }

    /// Waits until at least `n` requests arrived or the machine's clock
    /// reaches `deadline`; whether they did. With `n` at `usize::MAX` it
    /// waits out the deadline, for whatever comes.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    ///
    /// let rx = wheel_testkit::Receiver::ok();
    /// assert!(rx.wait_until(0, SystemTime::now()));
    /// let soon = SystemTime::now() + Duration::from_millis(20);
    /// assert!(!rx.wait_until(1, soon)); // nobody sends
    /// ```
    pub fn wait_until(&self, n: usize, deadline: SystemTime) -> bool {
        self.log.wait(n, deadline).1
    }

    /// Stops serving (requests still held are cut off) and returns every
    /// request, in order of arrival: the final record, where
    /// [`requests`](Receiver::requests) is one so far.
    ///
    /// # Examples
    ///
    /// ```
    /// let rx = wheel_testkit::Receiver::ok();
    /// let url = rx.url("/hook");
    /// assert!(rx.finish().is_empty());
    /// assert!(std::net::TcpStream::connect(&url["http://".len()..]).is_err());
    /// ```
    pub fn finish(mut self) -> Vec<Received> {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
        std::mem::take(&mut self.log.recorded().requests)
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
        self.log.max_in_flight()
    }

    /// How many requests are in flight now (recorded, reply not yet sent,
    /// client still connected): for a test that samples it over time.
    ///
    /// # Examples
    ///
    /// ```
    /// let rx = wheel_testkit::Receiver::ok();
    /// assert_eq!(rx.in_flight(), 0);
    /// ```
    pub fn in_flight(&self) -> usize {
        self.log.in_flight()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
