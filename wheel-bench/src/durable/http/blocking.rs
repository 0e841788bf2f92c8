//! The peer's sender: the one-second Redis wheel ([`SecondWheel`] and
//! [`PeerNode`]) with a callback that starts one thread per due task, and
//! that thread sends one plain HTTP/1.1 request over a fresh
//! `std::net::TcpStream` and reads the status line, as the hand-built
//! design does with a goroutine and its standard HTTP client.
//!
//! The request carries the task's key as `Wheel-Timer-Key` and nothing
//! else of ours (no fence, no due header): the receiver's record is read the
//! same way for both. A thread that cannot be started, a connection that
//! fails or times out, is a request that never arrives: the run counts it
//! as lost (a figure of the peer, not a failure of the run).
//!
//! [`SecondWheel`]: crate::durable::peer::SecondWheel
//! [`PeerNode`]: crate::durable::peer::PeerNode

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use crate::durable::peer::{Run, Task};

/// How long a connect, a write or a read may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Stack of each request thread: a goroutine's is a few KiB; the default
/// 2 MiB of address space times ten thousand threads is only reserved, but
/// a small stack keeps the peer's cost about the request.
const STACK: usize = 64 * 1024;

/// The request for `key` to `addr`.
pub fn request(addr: SocketAddr, key: &str) -> String {
    format!(
        "POST /callback HTTP/1.1\r\nHost: {addr}\r\nWheel-Timer-Key: {key}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
}

/// The status code of an HTTP/1.x status line.
pub fn status_of(line: &str) -> Option<u16> {
    let mut parts = line.trim_end().splitn(3, ' ');
    let version = parts.next()?;
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    let code = parts.next()?;
    if code.len() != 3 {
        return None;
    }
    code.parse().ok()
}

/// Sends one request for `key` and returns the reply's status.
pub fn send(addr: SocketAddr, key: &str) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    stream.set_nodelay(true)?;
    stream.write_all(request(addr, key).as_bytes())?;
    let mut line = String::new();
    // A small buffer: the memory control counts these threads' heap.
    BufReader::with_capacity(256, stream).read_line(&mut line)?;
    status_of(&line)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{line:?}")))
}

/// The peer node's callback: one thread per task, sending its request.
pub fn thread_per_task(addr: SocketAddr) -> Run {
    Arc::new(move |t: &Task| {
        let key = String::from_utf8_lossy(&t.key).into_owned();
        let _ = std::thread::Builder::new()
            .stack_size(STACK)
            .spawn(move || send(addr, &key));
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::http::tally::Arrival;

    #[test]
    fn status_lines_parse_and_junk_does_not() {
        assert_eq!(status_of("HTTP/1.1 200 OK\r\n"), Some(200));
        assert_eq!(status_of("HTTP/1.0 503 Service Unavailable"), Some(503));
        assert_eq!(status_of("HTTP/1.1 204\r\n"), Some(204));
        assert_eq!(status_of("HTTP/2 200"), None);
        assert_eq!(status_of("HTTP/1.1 20 OK"), None);
        assert_eq!(status_of("HTTP/1.1 abc OK"), None);
        assert_eq!(status_of(""), None);
    }

    #[test]
    fn the_request_names_the_key_and_closes() {
        let addr = SocketAddr::from(([127, 0, 0, 1], 8080));
        let r = request(addr, "t000000000000007");
        assert!(r.starts_with("POST /callback HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"));
        assert!(r.contains("\r\nWheel-Timer-Key: t000000000000007\r\n"));
        assert!(r.ends_with("Connection: close\r\n\r\n"));
    }

    #[test]
    fn the_receiver_answers_and_logs_what_the_peer_sends() {
        let rx = crate::durable::http::receiver(Duration::ZERO);
        assert_eq!(send(rx.addr(), "t000000000000003").unwrap(), 200);
        assert_eq!(send(rx.addr(), "t000000000000004").unwrap(), 200);
        let log: Vec<Arrival> = rx.finish().iter().map(Arrival::from).collect();
        let keys: Vec<_> = log.iter().map(|a| a.key.as_deref()).collect();
        assert_eq!(keys, [Some("t000000000000003"), Some("t000000000000004")]);
        assert!(log.iter().all(|a| a.fence.is_none() && a.due_ms.is_none()));
    }
}
