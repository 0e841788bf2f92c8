//! Helpers for the HTTP-callback tests: the receiver (an HTTP server on
//! loopback that records every request and answers it from the test's
//! script, see [`receiver`]), what it records of a request and what a
//! script answers, a gate scripts wait at, and nodes with short back-offs.
//! Test files that use it declare `mod durable_common;` too.
#![allow(dead_code)] // each test file uses a different subset

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wheel_durable::http::{verify_signature, HttpConfig};
use wheel_durable::{DurableTimers, RetryPolicy};

pub use crate::durable_common::{eventually, LIVENESS};

mod receiver;

pub use receiver::Receiver;

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The machine's clock when its connection was accepted: the node
    /// opens a connection only to send a request at once, and the moment
    /// of the accept varies less under load than when the connection's
    /// thread gets to read the head.
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

/// A gate that scripts wait at until it opens: when the test opens it,
/// when as many scripts as its threshold wait at it at once, or, so that
/// nothing hangs, when a script has waited LIVENESS. Once open it stays
/// open, and later scripts pass at once.
#[derive(Clone, Default)]
pub struct Gate(Arc<(Mutex<GateState>, Condvar)>);

#[derive(Default)]
struct GateState {
    open: bool,
    waiting: usize,
    threshold: Option<usize>,
}

impl Gate {
    /// A gate that opens itself once `threshold` scripts wait at it at once.
    pub fn opening_at(threshold: usize) -> Gate {
        let gate = Gate::default();
        gate.0 .0.lock().unwrap().threshold = Some(threshold);
        gate
    }

    pub fn open(&self) {
        self.0 .0.lock().unwrap().open = true;
        self.0 .1.notify_all();
    }

    pub fn wait(&self) {
        let until = Instant::now() + LIVENESS;
        let mut st = self.0 .0.lock().unwrap();
        st.waiting += 1;
        if st.threshold.is_some_and(|t| st.waiting >= t) {
            st.open = true;
            self.0 .1.notify_all();
        }
        while !st.open {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = self.0 .1.wait_timeout(st, left).unwrap().0;
        }
        st.waiting -= 1;
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
