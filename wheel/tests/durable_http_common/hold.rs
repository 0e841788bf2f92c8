//! A receiver that holds requests open: it answers none until it has seen
//! `threshold` requests open at once, or the test releases them (or
//! LIVENESS passed), then answers every request, held or new, with 200 and
//! closes its connection. Each
//! connection has a thread of its own with a small stack, so it holds
//! thousands at once, where tiny_http cannot be relied on to hold more
//! than a few on a loaded machine.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use super::LIVENESS;

/// What the holding receiver keeps of a request.
#[derive(Debug, Clone, Default)]
pub struct Held {
    /// `Wheel-Timer-Key`, as sent (percent-encoded).
    pub key: String,
    pub fence: u64,
    pub attempt: u64,
    pub webhook_id: String,
}

#[derive(Default)]
struct State {
    /// Every request, in order of arrival.
    keys: Vec<Held>,
    open: usize,
    max_open: usize,
    released: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

/// A holding receiver on a free loopback port. Its threads end when their
/// requests are answered; the listener's thread lives as long as the test.
pub struct HoldReceiver {
    shared: Arc<Shared>,
    port: u16,
}

impl HoldReceiver {
    pub fn start(threshold: usize) -> HoldReceiver {
        let listener = listen();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let s = s.clone();
                std::thread::Builder::new()
                    .stack_size(64 * 1024)
                    .spawn(move || hold(stream, &s, threshold))
                    .expect("a connection thread");
            }
        });
        HoldReceiver { shared, port }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every request's key so far.
    pub fn keys(&self) -> Vec<String> {
        self.requests().into_iter().map(|h| h.key).collect()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Held> {
        self.shared.state.lock().unwrap().keys.clone()
    }

    /// Answers every held request, and every later one at once.
    pub fn release(&self) {
        self.shared.state.lock().unwrap().released = true;
        self.shared.changed.notify_all();
    }

    /// The most requests open at once.
    pub fn max_open(&self) -> usize {
        self.shared.state.lock().unwrap().max_open
    }

    /// Waits until at least `n` requests arrived; panics after LIVENESS.
    pub fn wait_for(&self, n: usize) {
        let until = Instant::now() + LIVENESS;
        let mut st = self.shared.state.lock().unwrap();
        while st.keys.len() < n {
            let left = until.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "only {} of {n} requests", st.keys.len());
            st = self.shared.changed.wait_timeout(st, left).unwrap().0;
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

/// Reads one request (head and `Content-Length` body), waits for the
/// release, answers 200.
fn hold(stream: TcpStream, shared: &Shared, threshold: usize) {
    let mut reader = BufReader::new(&stream);
    let (mut held, mut length) = (Held::default(), 0usize);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "wheel-timer-key" => held.key = value.to_owned(),
                "wheel-fence" => held.fence = value.parse().unwrap_or(0),
                "wheel-attempt" => held.attempt = value.parse().unwrap_or(0),
                "webhook-id" => held.webhook_id = value.to_owned(),
                "content-length" => length = value.parse().unwrap_or(0),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let until = Instant::now() + LIVENESS;
    {
        let mut st = shared.state.lock().unwrap();
        st.keys.push(held);
        st.open += 1;
        st.max_open = st.max_open.max(st.open);
        if st.open >= threshold {
            st.released = true;
        }
        shared.changed.notify_all();
        while !st.released {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                // The test fails on max_open; answer so nothing hangs.
                break;
            }
            st = shared.changed.wait_timeout(st, left).unwrap().0;
        }
        st.open -= 1;
    }
    let reply = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let _ = (&stream).write_all(reply.as_bytes());
}
