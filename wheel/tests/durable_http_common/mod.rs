//! A scripted HTTP receiver on loopback for the callback tests: records
//! every request as it arrives and answers it from a script, each answer on
//! a thread of its own (so a slow or held answer holds up nothing else).
//! Test files that use it declare `mod durable_common;` too.
#![allow(dead_code)] // each test file uses a different subset

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wheel::durable::http::{verify_signature, HttpConfig};
use wheel::durable::{DurableTimers, RetryPolicy};

pub use crate::durable_common::{eventually, LIVENESS};

pub mod hold;

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The machine's clock when its head arrived.
    pub at: SystemTime,
}

impl Received {
    /// A header's value (names in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn number(&self, name: &str) -> u64 {
        self.header(name)
            .unwrap_or_else(|| panic!("no {name} on {self:?}"))
            .parse()
            .unwrap()
    }

    /// `Wheel-Timer-Key`, percent-decoded.
    pub fn key(&self) -> String {
        percent_decode(self.header("Wheel-Timer-Key").expect("a key header"))
    }

    pub fn attempt(&self) -> u32 {
        u32::try_from(self.number("Wheel-Attempt")).unwrap()
    }

    pub fn fence(&self) -> u64 {
        self.number("Wheel-Fence")
    }

    /// `Wheel-Due` as a time.
    pub fn due(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.number("Wheel-Due"))
    }

    /// `webhook-id`.
    pub fn webhook_id(&self) -> &str {
        self.header("webhook-id").expect("a webhook-id header")
    }

    /// Whether the Standard Webhooks signature checks out under `secret`
    /// (`whsec_...`), with a timestamp within a minute of arrival.
    pub fn signed_with(&self, secret: &str) -> bool {
        let h = |name| self.header(name).unwrap_or_default();
        let (id, ts) = (h("webhook-id"), h("webhook-timestamp"));
        let sent = UNIX_EPOCH + Duration::from_secs(ts.parse().unwrap_or(0));
        let close = self.at.duration_since(sent).unwrap_or_default() <= Duration::from_secs(60);
        close
            && verify_signature(secret, id, ts, h("webhook-signature"), &self.body, self.at).is_ok()
    }
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .unwrap()
        .into_owned()
}

/// What the script answers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Reply {
        self.body = body.into();
        self
    }
}

/// The script: given a request and which request to its path this is (1
/// for the first), the reply. It runs on the request's own thread and may
/// sleep or block.
pub type Script = dyn Fn(&Received, usize) -> Reply + Send + Sync;

#[derive(Default)]
struct Log {
    requests: Mutex<Vec<Received>>,
    arrived: Condvar,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// A receiver on a free loopback port, stopped when dropped.
pub struct Receiver {
    server: Arc<tiny_http::Server>,
    log: Arc<Log>,
    port: u16,
    thread: Option<JoinHandle<()>>,
}

impl Receiver {
    pub fn start(script: impl Fn(&Received, usize) -> Reply + Send + Sync + 'static) -> Receiver {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let port = server.server_addr().to_ip().unwrap().port();
        let log = Arc::new(Log::default());
        let script: Arc<Script> = Arc::new(script);
        let thread = {
            let (server, log) = (server.clone(), log.clone());
            std::thread::spawn(move || serve(&server, &log, &script))
        };
        Receiver {
            server,
            log,
            port,
            thread: Some(thread),
        }
    }

    /// Answers 200 to everything.
    pub fn ok() -> Receiver {
        Receiver::start(|_, _| Reply::status(200))
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn requests(&self) -> Vec<Received> {
        self.log.requests.lock().unwrap().clone()
    }

    /// Waits until at least `n` requests arrived; panics after LIVENESS.
    pub fn wait_for(&self, n: usize) -> Vec<Received> {
        let until = Instant::now() + LIVENESS;
        let mut got = self.log.requests.lock().unwrap();
        while got.len() < n {
            let now = Instant::now();
            assert!(
                now < until,
                "only {} of {n} requests after {LIVENESS:?}",
                got.len()
            );
            got = self.log.arrived.wait_timeout(got, until - now).unwrap().0;
        }
        got.clone()
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
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(server: &tiny_http::Server, log: &Arc<Log>, script: &Arc<Script>) {
    let mut per_path: HashMap<String, usize> = HashMap::new();
    while let Ok(mut request) = server.recv() {
        let at = SystemTime::now();
        let mut body = Vec::new();
        let _ = request.as_reader().read_to_end(&mut body);
        let received = Received {
            method: request.method().as_str().to_owned(),
            path: request.url().to_owned(),
            headers: request
                .headers()
                .iter()
                .map(|h| (h.field.as_str().to_string(), h.value.as_str().to_owned()))
                .collect(),
            body,
            at,
        };
        let nth = {
            let n = per_path.entry(received.path.clone()).or_default();
            *n += 1;
            *n
        };
        let now = log.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        log.max_in_flight.fetch_max(now, Ordering::SeqCst);
        log.requests.lock().unwrap().push(received.clone());
        log.arrived.notify_all();
        let (log, script) = (log.clone(), script.clone());
        std::thread::spawn(move || {
            let reply = script(&received, nth);
            log.in_flight.fetch_sub(1, Ordering::SeqCst);
            let mut response =
                tiny_http::Response::from_data(reply.body).with_status_code(reply.status);
            for (name, value) in &reply.headers {
                let h = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).unwrap();
                response = response.with_header(h);
            }
            // The client may have given up (a timeout): nothing to do then.
            let _ = request.respond(response);
        });
    }
}

/// What the reference Python verifier (`standardwebhooks` from PyPI) says
/// of a received request under `secret`: whether it accepts the request as
/// received, with its body changed, and 10 minutes after it was sent (the
/// same signature, now too old). `None` when `python3` or the module is
/// missing and `WHEEL_REQUIRE_PY` is not `1` (the test then says it
/// skipped); with `WHEEL_REQUIRE_PY=1`, as CI sets it, that panics.
pub fn reference_verdicts(r: &Received, secret: &str) -> Option<[bool; 3]> {
    const SCRIPT: &str = r#"
import sys
from datetime import datetime, timedelta
try:
    import standardwebhooks.webhooks as w
except ImportError:
    sys.exit(3)
secret, body = sys.argv[1], bytes.fromhex(sys.argv[2])
headers = dict(zip(["webhook-id", "webhook-timestamp", "webhook-signature"], sys.argv[3:6]))
def verdict(body):
    try:
        w.Webhook(secret).verify(body, headers)
        return "accept"
    except w.WebhookVerificationError:
        return "reject"
out = [verdict(body), verdict(body + b" ")]
class Later(datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.now(tz) + timedelta(minutes=10)
w.datetime = Later
out.append(verdict(body))
print(" ".join(out))
"#;
    let required = std::env::var("WHEEL_REQUIRE_PY").is_ok_and(|v| v == "1");
    let hex: String = r.body.iter().map(|b| format!("{b:02x}")).collect();
    let h = |name| r.header(name).unwrap_or_default().to_owned();
    let run = std::process::Command::new("python3")
        .args(["-c", SCRIPT, secret, &hex])
        .args([
            h("webhook-id"),
            h("webhook-timestamp"),
            h("webhook-signature"),
        ])
        .output();
    let missing = match &run {
        Err(e) => Some(format!("python3 cannot run: {e}")),
        Ok(out) if out.status.code() == Some(3) => {
            Some("the Python module standardwebhooks is not installed".to_owned())
        }
        Ok(_) => None,
    };
    if let Some(why) = missing {
        assert!(!required, "WHEEL_REQUIRE_PY=1 but {why}");
        eprintln!("skipped the reference verifier: {why}");
        return None;
    }
    let out = run.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the verifier failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(words.len(), 3, "{stdout:?}");
    Some([0, 1, 2].map(|i| words[i] == "accept"))
}

/// A port with nothing listening on it.
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A gate that scripts wait at until the test opens it (or LIVENESS).
#[derive(Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    pub fn open(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }

    pub fn wait(&self) {
        let until = Instant::now() + LIVENESS;
        let mut open = self.0 .0.lock().unwrap();
        while !*open {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            open = self.0 .1.wait_timeout(open, left).unwrap().0;
        }
    }
}

/// A policy with a short, exact back-off.
pub fn policy(first: Duration, attempts: u32) -> RetryPolicy {
    RetryPolicy::new()
        .initial(first)
        .jitter(0.0)
        .max_attempts(attempts)
}

/// A node on the embedded store in `dir`, sending callbacks with `http`.
pub fn node(dir: &tempfile::TempDir, http: HttpConfig, retry: RetryPolicy) -> DurableTimers {
    DurableTimers::builder()
        .embedded(dir.path().join("timers"))
        .retry(retry)
        .http(http)
        .build()
        .unwrap()
}
