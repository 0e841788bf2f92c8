//! The receiver: an HTTP/1.1 server on a free loopback port that records
//! every request and answers it from the test's script.
//!
//! Each connection gets a thread of its own, with a small stack, and the
//! listener's backlog holds thousands of connection attempts, so on a
//! loaded two-core machine thousands of requests can be open at once and
//! none waits on another: a script that sleeps or waits at a [`Gate`]
//! holds up only its own request.
//!
//! Invariants: a request's time is its connection's accept, taken on the
//! listener's thread before anything else is done with it. A request is
//! recorded, numbered among its path's requests and counted in flight once
//! its head and body are read, before its script runs; it stops counting
//! in flight when its script returns. Each connection carries one request:
//! every reply says `Connection: close`, so the client never reuses a
//! connection the receiver is about to close. The node always sends a
//! `Content-Length` (its bodies are whole byte buffers), so that is the
//! only body framing read here.
//!
//! [`Gate`]: super::Gate

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use super::{Gate, Received, Reply, LIVENESS};

/// The script: given a request and which request to its path this is (1
/// for the first), the reply. It runs on the request's own thread and may
/// sleep or block.
pub type Script = dyn Fn(&Received, usize) -> Reply + Send + Sync;

/// A connection thread's stack: a script needs little, and thousands of
/// connections may be open at once.
const STACK: usize = 256 * 1024;

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
    /// Records a request; returns which request to its path it is.
    fn record(&self, received: Received) -> usize {
        let mut rec = self.recorded.lock().unwrap();
        let nth = {
            let n = rec.per_path.entry(received.path.clone()).or_default();
            *n += 1;
            *n
        };
        rec.requests.push(received);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        self.arrived.notify_all();
        nth
    }
}

/// A receiver on a free loopback port; it stops listening when dropped.
pub struct Receiver {
    log: Arc<Log>,
    port: u16,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Receiver {
    pub fn start(script: impl Fn(&Received, usize) -> Reply + Send + Sync + 'static) -> Receiver {
        let listener = listen();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Log::default());
        let stop = Arc::new(AtomicBool::new(false));
        let script: Arc<Script> = Arc::new(script);
        let accept = {
            let (log, stop) = (log.clone(), stop.clone());
            std::thread::spawn(move || accept(&listener, &log, &script, &stop))
        };
        Receiver {
            log,
            port,
            stop,
            accept: Some(accept),
        }
    }

    /// Answers 200 to everything.
    pub fn ok() -> Receiver {
        Receiver::start(|_, _| Reply::status(200))
    }

    /// Answers 200 to each request once `gate` is open: until then every
    /// request stays in flight.
    pub fn gated(gate: &Gate) -> Receiver {
        let gate = gate.clone();
        Receiver::start(move |_, _| {
            gate.wait();
            Reply::status(200)
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn requests(&self) -> Vec<Received> {
        self.log.recorded.lock().unwrap().requests.clone()
    }

    /// Waits until at least `n` requests arrived; panics after LIVENESS.
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

    /// The most requests that were in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.log.max_in_flight.load(Ordering::SeqCst)
    }

    /// Requests by timer key, each key's in order of arrival.
    pub fn by_key(&self) -> HashMap<String, Vec<Received>> {
        let mut m: HashMap<String, Vec<Received>> = HashMap::new();
        for r in self.requests() {
            m.entry(r.key()).or_default().push(r);
        }
        m
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The accept loop blocks in `accept`: a connection wakes it to see
        // the flag. Requests already accepted finish on their own threads.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// A loopback listener whose backlog holds thousands of connection
/// attempts at once: the standard library's (128) drops the rest, and
/// their clients try again only a second later. tokio's socket sets it;
/// the listener then goes back to blocking accepts.
fn listen() -> TcpListener {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(([127, 0, 0, 1], 0).into())?;
            socket.listen(4096)?.into_std()
        })
        .unwrap();
    listener.set_nonblocking(false).unwrap();
    listener
}

fn accept(listener: &TcpListener, log: &Arc<Log>, script: &Arc<Script>, stop: &AtomicBool) {
    for stream in listener.incoming() {
        let at = SystemTime::now();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else {
            // Out of descriptors, or a connection reset before it was
            // accepted: the backlog keeps the others until the next try.
            std::thread::sleep(std::time::Duration::from_millis(1));
            continue;
        };
        let (log, script) = (log.clone(), script.clone());
        std::thread::Builder::new()
            .stack_size(STACK)
            .spawn(move || answer(&stream, at, &log, script.as_ref()))
            .expect("a connection thread");
    }
}

/// Reads the connection's request, records it, runs the script, writes
/// its reply and closes the connection.
fn answer(stream: &TcpStream, at: SystemTime, log: &Log, script: &Script) {
    let Some(received) = read_request(stream, at) else {
        return; // closed before a whole request, or the wake-up from drop
    };
    let nth = log.record(received.clone());
    let reply = script(&received, nth);
    log.in_flight.fetch_sub(1, Ordering::SeqCst);
    // The client may have given up (a timeout): nothing to do then.
    let _ = write_reply(stream, &reply);
}

/// One request: the request line, the headers up to the empty line, and
/// `Content-Length` bytes of body, on a connection accepted at `at`.
fn read_request(stream: &TcpStream, at: SystemTime) -> Option<Received> {
    let mut reader = BufReader::new(stream);
    let first = read_line(&mut reader)?;
    let mut words = first.split(' ');
    let (method, path) = (words.next()?.to_owned(), words.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let line = read_line(&mut reader)?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(Some(0), |(_, v)| v.parse().ok())?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Received {
        method,
        path,
        headers,
        body,
        at,
    })
}

/// A line without its line end; `None` at the end of the stream.
fn read_line(reader: &mut impl BufRead) -> Option<String> {
    let mut line = Vec::new();
    if reader.read_until(b'\n', &mut line).ok()? == 0 {
        return None;
    }
    while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        line.pop();
    }
    Some(String::from_utf8_lossy(&line).into_owned())
}

fn write_reply(mut stream: &TcpStream, reply: &Reply) -> std::io::Result<()> {
    // A reason phrase as servers send one (the node names statuses by
    // their standard reason itself).
    let reason = http::StatusCode::from_u16(reply.status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut head = format!("HTTP/1.1 {} {reason}\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        reply.body.len()
    ));
    stream.write_all(head.as_bytes())?;
    stream.write_all(&reply.body)?;
    stream.flush()
}
