//! Clients that send too slowly, too little, or nonsense: a half-sent or
//! trickled request head, an idle keep-alive connection and a trickled
//! body are cut off after their timeouts; connections beyond
//! `--max-connections` wait until one is free; SIGTERM does not wait on
//! them past `--shutdown-timeout`, and keeps what it acknowledged; and
//! invented methods and paths add no series to `/metrics`.
//!
//! The clients are raw TCP streams: they can stop halfway through a
//! request, and send methods an HTTP client library refuses.

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{Server, TOKEN};
use serde_json::json;

/// The server's `host:port`.
fn addr(s: &Server) -> &str {
    s.base.trim_start_matches("http://")
}

/// A connection that has sent `bytes`.
fn send(s: &Server, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(addr(s)).unwrap();
    stream.write_all(bytes).unwrap();
    stream
}

/// Reads until the server closes the connection (an end of stream or a
/// reset), for at most `bound`: what it sent, or `None` if it was still
/// open then.
fn read_until_closed(stream: &mut TcpStream, bound: Duration) -> Option<Vec<u8>> {
    let end = Instant::now() + bound;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = end.checked_duration_since(Instant::now())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return Some(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Some(got), // reset: closed too
        }
    }
}

/// Writes `bytes` one at a time, `every` apart, on a thread, until they
/// run out, the connection fails, or the returned flag is set.
fn trickle(stream: &TcpStream, bytes: Vec<u8>, every: Duration) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let (mut stream, done) = (stream.try_clone().unwrap(), stop.clone());
    std::thread::spawn(move || {
        for b in bytes {
            if done.load(Ordering::Relaxed) || stream.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(every);
        }
    });
    stop
}

const HEAD_START: &[u8] = b"POST /v1/timers HTTP/1.1\r\nHost: wheel\r\nContent-Type: applic";

#[test]
fn a_slow_or_idle_request_head_is_cut_off() {
    let s = Server::start(&["--header-timeout", "1s"]);
    let bound = Duration::from_secs(3);
    let mut half = send(&s, HEAD_START);
    assert!(
        read_until_closed(&mut half, bound).is_some(),
        "a half-sent head is cut off"
    );
    // One byte every 100 ms: each read brings something, the head never
    // ends in time.
    let mut slow = TcpStream::connect(addr(&s)).unwrap();
    let stop = trickle(&slow, [HEAD_START; 10].concat(), Duration::from_millis(100));
    let closed = read_until_closed(&mut slow, bound);
    stop.store(true, Ordering::Relaxed);
    assert!(closed.is_some(), "a trickled head is cut off");
    // A keep-alive connection waiting for its next request.
    let mut idle = send(&s, b"GET /healthz HTTP/1.1\r\nHost: wheel\r\n\r\n");
    let answered = read_until_closed(&mut idle, bound).expect("an idle connection is closed");
    assert!(
        String::from_utf8_lossy(&answered).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answered)
    );
    // The server serves on.
    assert_eq!(s.get("/healthz").0, 200);
}

#[test]
fn a_slow_body_answers_408_and_closes() {
    let s = Server::start(&[
        "--header-timeout",
        "10s",
        "--body-timeout",
        "1s",
        "--allow-private-targets",
    ]);
    let body =
        json!({ "key": "slow", "delay": "1h", "callback": { "url": "http://127.0.0.1:9/x" } })
            .to_string();
    let head = format!(
        "POST /v1/timers HTTP/1.1\r\nHost: wheel\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut stream = send(&s, head.as_bytes());
    // A byte every 100 ms: the body would take seconds, each read brings
    // something.
    let stop = trickle(&stream, body.into_bytes(), Duration::from_millis(100));
    let got = read_until_closed(&mut stream, Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    let got = String::from_utf8_lossy(&got.expect("a slow body is cut off")).into_owned();
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(got.contains("urn:wheel:problem:body-timeout"), "{got}");
    assert_eq!(s.get("/v1/timers/slow").0, 404, "nothing was added");
    let counted =
        "wheel_http_requests_total{route=\"/v1/timers\",method=\"POST\",status=\"408\"} 1";
    assert!(s.metrics().contains(counted), "{}", s.metrics());
}

#[test]
fn connections_beyond_the_bound_wait_until_slow_ones_are_cut_off() {
    let timeout = Duration::from_secs(2);
    let s = Server::start(&["--max-connections", "8", "--header-timeout", "2s"]);
    let mut slow: Vec<TcpStream> = (0..8).map(|_| send(&s, HEAD_START)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    let mut health = send(
        &s,
        b"GET /healthz HTTP/1.1\r\nHost: wheel\r\nConnection: close\r\n\r\n",
    );
    let answer = read_until_closed(&mut health, 3 * timeout).expect("/healthz answers");
    let waited = asked.elapsed();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The bound held: the ninth connection was served only once the
    // header timeout had freed a place.
    assert!(
        waited >= Duration::from_secs(1),
        "/healthz answered after {waited:?}, while 8 slow clients held every place"
    );
    for stream in &mut slow {
        assert!(read_until_closed(stream, timeout).is_some());
    }
}

#[test]
fn sigterm_closes_half_sent_requests_after_the_shutdown_timeout_and_keeps_timers() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::data_dir(&dir);
    let long = [
        "--header-timeout",
        "60s",
        "--body-timeout",
        "60s",
        "--shutdown-timeout",
        "1s",
        "--allow-private-targets",
    ];
    let s = Server::start_on(&data, &long);
    let timer =
        json!({ "key": "kept", "delay": "1h", "callback": { "url": "http://127.0.0.1:9/x" } });
    assert_eq!(s.post("/v1/timers", timer).0, 201);
    let _half_head = send(&s, HEAD_START);
    let head = format!(
        "POST /v1/timers HTTP/1.1\r\nHost: wheel\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"key\":"
    );
    let _half_body = send(&s, head.as_bytes());
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    let status = s.terminate();
    let took = asked.elapsed();
    assert!(status.success(), "{status}");
    // A liveness bound, not a timing figure: without the shutdown timeout
    // the server would wait out the 60 s header and body timeouts.
    assert!(
        took < wheel_testkit::LIVENESS,
        "the server took {took:?} to exit with --shutdown-timeout 1s"
    );
    let again = Server::start_on(&data, &[]);
    assert_eq!(again.get("/v1/timers/kept").0, 200);
}

/// A small random-number generator: the methods and paths only need to
/// differ from each other.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `n` random capital letters.
    fn letters(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b'A' + (self.next() % 26) as u8))
            .collect()
    }
}

#[test]
fn invented_methods_and_paths_add_no_metrics_series() {
    let s = Server::start(&[]);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut rng = Xorshift(seed | 1);
    let mut methods = Vec::new();
    for i in 0..500 {
        let method = rng.letters(1024);
        let path = match i % 4 {
            0 => "/v1/timers".to_owned(),
            1 => "/healthz".to_owned(),
            _ => format!("/{}/{}", rng.letters(12), rng.letters(8)),
        };
        let request =
            format!("{method} {path} HTTP/1.1\r\nHost: wheel\r\nConnection: close\r\n\r\n");
        let mut stream = send(&s, request.as_bytes());
        let answer = read_until_closed(&mut stream, Duration::from_secs(10)).expect("an answer");
        assert!(answer.starts_with(b"HTTP/1.1 4"), "{i}");
        methods.push(method);
    }
    let text = s.metrics();
    assert!(
        text.len() < 32 * 1024,
        "/metrics grew to {} bytes",
        text.len()
    );
    let series: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("wheel_http_requests_total{"))
        .collect();
    assert!(series.len() <= 20, "{series:#?}");
    for method in &methods {
        assert!(
            !text.contains(&method[..64]),
            "an invented method is listed"
        );
    }
    let known = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "other",
    ];
    for line in &series {
        let method = line
            .split("method=\"")
            .nth(1)
            .and_then(|m| m.split('"').next())
            .unwrap();
        assert!(known.contains(&method), "{line}");
    }
    assert!(
        series
            .iter()
            .any(|l| l.contains("route=\"unmatched\",method=\"other\",status=\"404\"")),
        "{series:#?}"
    );
}
