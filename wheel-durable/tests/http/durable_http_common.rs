//! Helpers for the HTTP-callback tests: the testkit's receiver (an HTTP
//! server on loopback that records every request and answers it from the
//! test's script), what a node's request carries in its `Wheel-*` and
//! `webhook-*` headers ([`Callback`]), the reference verifier, and nodes
//! with short back-offs.
#![allow(dead_code)] // each test module uses a different subset

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wheel_durable::http::{HttpConfig, verify_signature};
use wheel_durable::{DurableTimers, RetryPolicy};

pub use crate::durable_common::eventually;
pub use wheel_testkit::{Gate, Received, Receiver, Reply};

/// What a node's callback request carries, read from its headers.
pub trait Callback {
    /// `Wheel-Timer-Key`, percent-decoded.
    fn key(&self) -> String;
    /// `Wheel-Attempt`.
    fn attempt(&self) -> u32;
    /// `Wheel-Fence`.
    fn fence(&self) -> u64;
    /// `Wheel-Due` as a time.
    fn due(&self) -> SystemTime;
    /// `webhook-id`.
    fn webhook_id(&self) -> &str;
    /// Whether the Standard Webhooks signature checks out under `secret`
    /// (`whsec_...`), with a timestamp within a minute of arrival.
    fn signed_with(&self, secret: &str) -> bool;
}

fn number(r: &Received, name: &str) -> u64 {
    r.header(name)
        .unwrap_or_else(|| panic!("no {name} on {r:?}"))
        .parse()
        .unwrap()
}

impl Callback for Received {
    fn key(&self) -> String {
        percent_decode(self.header("Wheel-Timer-Key").expect("a key header"))
    }

    fn attempt(&self) -> u32 {
        u32::try_from(number(self, "Wheel-Attempt")).unwrap()
    }

    fn fence(&self) -> u64 {
        number(self, "Wheel-Fence")
    }

    fn due(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(number(self, "Wheel-Due"))
    }

    fn webhook_id(&self) -> &str {
        self.header("webhook-id").expect("a webhook-id header")
    }

    fn signed_with(&self, secret: &str) -> bool {
        let h = |name| self.header(name).unwrap_or_default();
        let (id, ts) = (h("webhook-id"), h("webhook-timestamp"));
        let sent = UNIX_EPOCH + Duration::from_secs(ts.parse().unwrap_or(0));
        let close = self.at.duration_since(sent).unwrap_or_default() <= Duration::from_secs(60);
        close
            && verify_signature(secret, id, ts, h("webhook-signature"), &self.body, self.at).is_ok()
    }
}

/// Requests by timer key, each key's in order of arrival.
pub trait ByKey {
    fn by_key(&self) -> HashMap<String, Vec<Received>>;
}

impl ByKey for Receiver {
    fn by_key(&self) -> HashMap<String, Vec<Received>> {
        let mut m: HashMap<String, Vec<Received>> = HashMap::new();
        for r in self.requests() {
            m.entry(r.key()).or_default().push(r);
        }
        m
    }
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .unwrap()
        .into_owned()
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
