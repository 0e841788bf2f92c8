//! Black-box: what clients and receivers send reaches the server's log as
//! escaped fields. A key with a line break, and a receiver's reply whose
//! body has one, each stay inside their own log line, so neither can
//! forge a line that looks like another event.

use crate::common;

use std::fs::File;
use std::net::TcpListener;
use std::process::{Command, Stdio};

use common::eventually;
use serde_json::json;
use wheel_testkit::{Receiver, Reply};

/// What the forged lines would start with, were they not escaped.
const FORGED: &str = "2026-01-01T00:00:00.000000Z ERROR forged";

/// A receiver that answers every request 400, its body holding a line
/// break followed by a forged log line.
fn hostile_receiver() -> Receiver {
    Receiver::start(|_, _| Reply::status(400).body(format!("gone\n{FORGED}-by-reply")))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn keys_and_replies_with_line_breaks_do_not_forge_log_lines() {
    let rx = hostile_receiver();
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("server.log");
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wheel-server"))
        .args(["--data", &dir.path().join("data").display().to_string()])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--allow-private-targets")
        .env("RUST_LOG", "info")
        .env_remove("WHEEL_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::blocking::Client::new();
    eventually("the server to be ready", || {
        client
            .get(format!("{base}/readyz"))
            .send()
            .is_ok_and(|r| r.status() == 200)
    });
    let key = format!("k1\n{FORGED}-by-key");
    let timer = json!({
        "key": key,
        "delay": 0,
        "callback": { "url": rx.url("/x") },
        "retry": { "max_attempts": 1 },
    });
    let added = client
        .post(format!("{base}/v1/timers"))
        .json(&timer)
        .send()
        .unwrap();
    assert_eq!(added.status(), 201);
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    eventually("the dead letter's log line", || {
        log().contains("timer became a dead letter")
    });
    let _ = child.kill();
    let _ = child.wait();
    let log = log();
    for line in log.lines() {
        assert!(!line.starts_with(FORGED), "a forged line:\n{log}");
    }
    let dead = log
        .lines()
        .find(|l| l.contains("timer became a dead letter"))
        .unwrap();
    assert!(
        dead.contains(&format!(r#"key="k1\n{FORGED}-by-key""#)),
        "{dead}"
    );
    assert!(
        dead.contains(&format!(r"gone\n{FORGED}-by-reply")),
        "{dead}"
    );
}
