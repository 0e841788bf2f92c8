//! The load generator: `wrk` (Debian package `wrk`), driven by a Lua
//! script the section writes, and its one line of results.
//!
//! Two scripts:
//! - [`add_script`]: every request is a `POST /v1/timers` of a timer of its
//!   own, keyed by the wrk thread's number and a counter of that thread,
//!   so that no two requests of a run share a key (a shared key would
//!   answer 200, not add);
//! - [`batch_script`]: the same `POST /v1/timers:batch` body every time,
//!   its timers without keys: the server makes a random 128-bit key for
//!   each, so every request adds all of them.
//!
//! Both count the responses with the status a successful request gets
//! (201 for one timer, 200 for a batch), and their `done` function prints
//! one line, `wheel-bench-wrk key=value ...`: requests, duration,
//! latency percentiles (µs), wrk's error counts, and that count
//! ([`parse`] reads it). Latencies are wrk's: from a request's write to
//! its response, per connection, so a server that slows down also sends
//! fewer requests (no coordinated-omission correction; wrk's own).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The marker that starts the results line.
const MARK: &str = "wheel-bench-wrk";

/// Whether `wrk` can be run.
pub fn available() -> bool {
    Command::new("wrk")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// One wrk run's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WrkResult {
    /// Requests completed.
    pub requests: u64,
    /// Of which answered with the expected status.
    pub expected: u64,
    /// The run's length, µs.
    pub duration_us: u64,
    /// Latency percentiles and maximum, µs.
    pub p50_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Maximum.
    pub max_us: u64,
    /// wrk's errors: connect, read, write, timeout, and status (>= 400).
    pub errors: [u64; 5],
}

impl WrkResult {
    /// Completed requests per second.
    pub fn per_sec(&self) -> f64 {
        if self.duration_us == 0 {
            0.0
        } else {
            self.requests as f64 * 1e6 / self.duration_us as f64
        }
    }

    /// All of wrk's errors.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }
}

/// The results line of `stdout`.
pub fn parse(stdout: &str) -> Result<WrkResult, String> {
    let line = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix(MARK))
        .ok_or("wrk printed no results line (did the script's done() run?)")?;
    let mut r = WrkResult::default();
    let mut seen = 0;
    for pair in line.split_whitespace() {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not key=value"))?;
        // Lua prints whole numbers of microseconds; a fraction would be
        // a script that changed, so it is refused rather than truncated.
        let v: u64 = v.parse().map_err(|_| format!("{k}={v:?} is not a count"))?;
        let slot = match k {
            "requests" => &mut r.requests,
            "expected" => &mut r.expected,
            "duration_us" => &mut r.duration_us,
            "p50_us" => &mut r.p50_us,
            "p99_us" => &mut r.p99_us,
            "max_us" => &mut r.max_us,
            "connect" => &mut r.errors[0],
            "read" => &mut r.errors[1],
            "write" => &mut r.errors[2],
            "timeout" => &mut r.errors[3],
            "status" => &mut r.errors[4],
            _ => return Err(format!("unknown field {k:?}")),
        };
        *slot = v;
        seen += 1;
    }
    if seen != 11 {
        return Err(format!("{seen} of 11 fields in the results line"));
    }
    Ok(r)
}

/// The part every script shares: the threads' numbers, the count of
/// expected statuses, and the results line.
fn common(expected_status: u16) -> String {
    format!(
        r#"local threads = {{}}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end
expected = 0
function response(status, headers, body)
  if status == {expected_status} then expected = expected + 1 end
end
function done(summary, latency, requests)
  local ok = 0
  for _, t in ipairs(threads) do ok = ok + t:get("expected") end
  local e = summary.errors
  io.write(string.format("{MARK} requests=%.0f expected=%.0f duration_us=%.0f p50_us=%.0f p99_us=%.0f max_us=%.0f connect=%.0f read=%.0f write=%.0f timeout=%.0f status=%.0f\n",
    summary.requests, ok, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.timeout, e.status))
end
"#
    )
}

/// One timer per request, due in an hour, a `POST` to `callback`.
pub fn add_script(callback: &str) -> String {
    let mut s = common(201);
    // wrk calls request() once in its main state too, to check it, where
    // no thread number is set.
    s.push_str(&format!(
        r#"local n = 0
local headers = {{ ["Content-Type"] = "application/json" }}
function request()
  n = n + 1
  local body = string.format('{{"key":"w%02d%013d","delay":"1h","callback":{{"url":"{callback}"}}}}', tid or 0, n)
  return wrk.format("POST", "/v1/timers", headers, body)
end
"#
    ));
    s
}

/// The body of a batch of `n` timers without keys, due in an hour, each a
/// `POST` to `callback`.
pub fn batch_body(n: usize, callback: &str) -> String {
    let one = format!(r#"{{"delay":"1h","callback":{{"url":"{callback}"}}}}"#);
    format!(r#"{{"timers":[{}]}}"#, vec![one; n].join(","))
}

/// The same batch of `n` timers in every request.
pub fn batch_script(n: usize, callback: &str) -> String {
    let mut s = common(200);
    s.push_str(&format!(
        "wrk.method = \"POST\"\nwrk.path = \"/v1/timers:batch\"\n\
         wrk.headers[\"Content-Type\"] = \"application/json\"\n\
         wrk.body = [==[{}]==]\n",
        batch_body(n, callback)
    ));
    s
}

/// How wrk runs.
#[derive(Debug, Clone)]
pub struct Load {
    /// wrk threads.
    pub threads: usize,
    /// Connections, kept alive.
    pub connections: usize,
    /// How long.
    pub duration: Duration,
}

/// Runs wrk with `script` (written to `dir`) against `url`.
pub fn run(load: &Load, script: &str, dir: &Path, url: &str) -> Result<WrkResult, String> {
    let path = dir.join("load.lua");
    std::fs::write(&path, script).map_err(|e| format!("writing {}: {e}", path.display()))?;
    let out = Command::new("wrk")
        .arg(format!("-t{}", load.threads))
        .arg(format!("-c{}", load.connections))
        .arg(format!("-d{}s", load.duration.as_secs().max(1)))
        .args(["--timeout", "10s", "-s"])
        .arg(&path)
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run wrk: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("wrk failed ({}): {stderr}{stdout}", out.status));
    }
    parse(&stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "wheel-bench-wrk requests=52311 expected=52311 duration_us=5002345 \
                        p50_us=5120 p99_us=17003 max_us=41230 connect=0 read=0 write=0 \
                        timeout=0 status=0";

    #[test]
    fn the_results_line_is_read_among_wrks_own_output() {
        let out = format!(
            "Running 5s test @ http://127.0.0.1:7070\n  2 threads and 64 connections\n{LINE}\n"
        );
        let r = parse(&out).unwrap();
        assert_eq!(
            (r.requests, r.expected, r.duration_us),
            (52_311, 52_311, 5_002_345)
        );
        assert_eq!((r.p50_us, r.p99_us, r.max_us), (5_120, 17_003, 41_230));
        assert_eq!(r.error_count(), 0);
        assert!((r.per_sec() - 52_311.0 / 5.002_345).abs() < 1e-6);
        let errors = LINE
            .replace("read=0", "read=3")
            .replace("status=0", "status=2");
        assert_eq!(parse(&errors).unwrap().errors, [0, 3, 0, 0, 2]);
    }

    #[test]
    fn a_missing_or_broken_line_is_an_error() {
        assert!(parse("Running 5s test\n").is_err());
        assert!(parse(&LINE.replace(" status=0", "")).is_err());
        assert!(parse(&LINE.replace("p99_us=17003", "p99_us=17003.5")).is_err());
        assert!(parse(&LINE.replace("read=0", "reads=0")).is_err());
        assert!(parse(&LINE.replace("read=0", "read")).is_err());
        assert_eq!(WrkResult::default().per_sec(), 0.0);
    }

    #[test]
    fn scripts_carry_their_route_keys_and_body() {
        let add = add_script("http://127.0.0.1:9/cb");
        assert!(add.contains(r#""/v1/timers""#) && add.contains("w%02d%013d"));
        assert!(add.contains("status == 201") && add.contains(MARK));
        let batch = batch_script(3, "http://127.0.0.1:9/cb");
        assert!(batch.contains("/v1/timers:batch") && batch.contains("status == 200"));
        let body = batch_body(2, "http://x/");
        assert_eq!(
            body,
            r#"{"timers":[{"delay":"1h","callback":{"url":"http://x/"}},{"delay":"1h","callback":{"url":"http://x/"}}]}"#
        );
        assert!(!body.contains("key"), "the server makes the keys");
    }
}
