//! The few requests the section makes itself, outside the load that `wrk`
//! generates: readiness probes, adding the timers of the callback runs
//! (`POST /v1/timers:batch` with keys and due times of the run), and
//! reading `/metrics`. A plain blocking HTTP/1.1 request per connection
//! (`Connection: close`), which is all these need; the bodies are built by
//! hand, since every key and URL of a run is plain ASCII.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, SecondsFormat, Utc};

/// How long one request may take, each way.
const TIMEOUT: Duration = Duration::from_secs(30);

/// `method path` to `addr` with an optional JSON body: the status and the
/// body.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    json: Option<&[u8]>,
) -> Result<(u16, Vec<u8>), String> {
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(body) = json {
        head.push_str("Content-Type: application/json\r\n");
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    if let Some(body) = json {
        s.write_all(body).map_err(|e| e.to_string())?;
    }
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    parse_response(&raw)
}

/// The status and body of a whole response (read to the connection's
/// end; chunked bodies decoded).
pub fn parse_response(raw: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("a response without the end of its head")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "a head that is not text")?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("no status in {:?}", head.lines().next()))?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = &raw[end + 4..];
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok((status, body))
}

/// A chunked body, decoded.
fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let eol = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk without its size line")?;
        let line =
            std::str::from_utf8(&body[..eol]).map_err(|_| "a chunk size that is not text")?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| format!("chunk size {size:?}"))?;
        body = &body[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = body.get(..size).ok_or("a chunk shorter than its size")?;
        out.extend_from_slice(chunk);
        body = body.get(size + 2..).ok_or("a chunk without its end")?;
    }
}

/// RFC 3339 in UTC with milliseconds, as the API takes `due_at`.
pub fn rfc3339(t: SystemTime) -> String {
    DateTime::<Utc>::from(t).to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The body of a `POST /v1/timers:batch` adding `keys[i]` due at `due[i]`,
/// each a `POST` to `url`.
pub fn batch_body(timers: &[(String, SystemTime)], url: &str) -> String {
    let items: Vec<String> = timers
        .iter()
        .map(|(key, due)| {
            format!(
                r#"{{"key":"{key}","due_at":"{}","callback":{{"url":"{url}"}}}}"#,
                rfc3339(*due)
            )
        })
        .collect();
    format!(r#"{{"timers":[{}]}}"#, items.join(","))
}

/// Adds `timers` through `addr`'s batch route; every timer must come back
/// created.
pub fn add_batch(
    addr: SocketAddr,
    timers: &[(String, SystemTime)],
    url: &str,
) -> Result<(), String> {
    let body = batch_body(timers, url);
    let (status, answer) = request(addr, "POST", "/v1/timers:batch", Some(body.as_bytes()))?;
    let answer = String::from_utf8_lossy(&answer);
    if status != 200 {
        return Err(format!("the batch was answered {status}: {answer}"));
    }
    let created = answer.matches(r#""status":201"#).count();
    if created != timers.len() {
        return Err(format!("{created} of {} timers created", timers.len()));
    }
    Ok(())
}

/// The value of the unlabelled sample `name` in Prometheus text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (n, v) = l.split_once(' ')?;
        (n == name).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The store's pending timers, as `addr`'s `/metrics` reports them.
pub fn pending(addr: SocketAddr) -> Result<u64, String> {
    let (status, body) = request(addr, "GET", "/metrics", None)?;
    if status != 200 {
        return Err(format!("/metrics answered {status}"));
    }
    metric(&String::from_utf8_lossy(&body), "wheel_timers_pending")
        .map(|v| v as u64)
        .ok_or_else(|| "no wheel_timers_pending in /metrics".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn responses_parse_plain_and_chunked() {
        let plain = b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(parse_response(plain), Ok((201, b"{}".to_vec())));
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwhee\r\n1;x=y\r\nl\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked), Ok((200, b"wheel".to_vec())));
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_err());
        assert!(parse_response(b"nonsense\r\n\r\n").is_err());
        let short = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nff\r\nabc";
        assert!(parse_response(short).is_err());
    }

    #[test]
    fn due_times_and_batches_are_written_as_the_api_reads_them() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20.123Z");
        let body = batch_body(&[("t1".into(), t)], "http://127.0.0.1:9/cb");
        assert_eq!(
            body,
            r#"{"timers":[{"key":"t1","due_at":"2023-11-14T22:13:20.123Z","callback":{"url":"http://127.0.0.1:9/cb"}}]}"#
        );
    }

    #[test]
    fn metrics_are_read_by_exact_name() {
        let text = "# HELP wheel_timers_pending x\n# TYPE wheel_timers_pending gauge\n\
                    wheel_timers_pending_total 9\nwheel_timers_pending 1200\n\
                    wheel_lateness_seconds{quantile=\"0.99\"} 0.002\n";
        assert_eq!(metric(text, "wheel_timers_pending"), Some(1200.0));
        assert_eq!(metric(text, "wheel_timers_claimed"), None);
        assert_eq!(
            metric("wheel_timers_pending x", "wheel_timers_pending"),
            None
        );
    }
}
