//! The options: keep-alive (many requests on one connection, each timed
//! when its head was read), the default's one request per connection,
//! and keeping only the headers named.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, SystemTime};

use super::{Receiver, ReceiverOptions, Reply};
use crate::LIVENESS;

/// Sends a `POST` with `body` on `s` and reads the reply's status line,
/// head and body (its `content-length`).
fn exchange(s: &mut TcpStream, replies: &mut BufReader<TcpStream>, body: &str) -> String {
    let head = format!(
        "POST /hook HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut status = String::new();
    replies.read_line(&mut status).unwrap();
    let mut length = 0;
    loop {
        let mut line = String::new();
        replies.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut reply = vec![0; length];
    replies.read_exact(&mut reply).unwrap();
    format!("{} {}", status.trim_end(), String::from_utf8_lossy(&reply))
}

#[test]
fn a_kept_connection_carries_each_request_timed_at_its_head() {
    let rx = Receiver::start_with(ReceiverOptions::new().keep_alive(), |r, nth| {
        Reply::status(200).body(format!("{nth}:{}", String::from_utf8_lossy(&r.body)))
    });
    let mut s = TcpStream::connect(rx.addr()).unwrap();
    let mut replies = BufReader::new(s.try_clone().unwrap());
    let mut sent = Vec::new();
    for (body, reply) in [("one", "1:one"), ("two", "2:two")] {
        // A pause after the connect, and between the requests: the time
        // of the accept would come before `sent`.
        std::thread::sleep(Duration::from_millis(30));
        sent.push(SystemTime::now());
        let got = exchange(&mut s, &mut replies, body);
        assert_eq!(got, format!("HTTP/1.1 200 OK {reply}"));
    }
    let got = rx.finish();
    assert_eq!(got.len(), 2);
    for (r, sent) in got.iter().zip(&sent) {
        assert!(r.at >= *sent, "{:?} is before the request was sent", r.at);
    }
    assert_eq!(
        (&got[0].body[..], &got[1].body[..]),
        (&b"one"[..], &b"two"[..])
    );
}

#[test]
fn by_default_the_connection_closes_after_its_one_request() {
    let rx = Receiver::ok();
    let mut s = TcpStream::connect(rx.addr()).unwrap();
    // A connection kept open fails the read below instead of hanging.
    s.set_read_timeout(Some(LIVENESS)).unwrap();
    let mut replies = BufReader::new(s.try_clone().unwrap());
    assert_eq!(exchange(&mut s, &mut replies, "x"), "HTTP/1.1 200 OK ");
    let mut rest = Vec::new();
    // The receiver closed its side: the read ends, with nothing more.
    replies.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    assert_eq!(rx.count(), 1);
}

#[test]
fn only_the_headers_named_are_kept() {
    let rx = Receiver::start_with(ReceiverOptions::new().only_headers(&["X-B"]), |r, _| {
        // The script sees what the record keeps.
        Reply::status(if r.header("x-a").is_none() { 200 } else { 500 })
    });
    let mut s = TcpStream::connect(rx.addr()).unwrap();
    s.set_read_timeout(Some(LIVENESS)).unwrap();
    s.write_all(b"POST /h HTTP/1.1\r\nhost: x\r\nx-a: 1\r\nX-B: 2\r\ncontent-length: 2\r\n\r\nhi")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let got = rx.finish();
    assert_eq!(got[0].headers, [("x-b".to_owned(), "2".to_owned())]);
    assert_eq!(got[0].body, b"hi");
}
