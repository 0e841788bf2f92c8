//! Black-box support: the built `wheel-server` binary on a free loopback
//! port with a data directory of its own, a blocking client for it, the
//! testkit's bounded wait, and the testkit's receiver on loopback with the
//! script the callback tests share.
#![allow(dead_code)] // each test module uses a different subset

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::Method;
use reqwest::blocking::{Client, RequestBuilder, Response};
use serde_json::Value;
use wheel_testkit::Reply;

pub use wheel_testkit::eventually;

/// The token the tests start servers with.
pub const TOKEN: &str = "test-token-0123";

/// A running server, killed when dropped.
pub struct Server {
    child: Child,
    pub base: String,
    pub client: Client,
    token: Option<String>,
    /// Keeps the data directory while the server runs (when it owns one).
    _dir: Option<tempfile::TempDir>,
}

impl Server {
    /// A server with a fresh data directory, the test token, and `extra`
    /// arguments.
    pub fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Server::start_on(&dir.path().join("data"), extra);
        s._dir = Some(dir);
        s
    }

    /// A server on the data directory `data`.
    pub fn start_on(data: &Path, extra: &[&str]) -> Server {
        let mut args: Vec<String> = vec!["--data".into(), data.display().to_string()];
        let mut token = Some(TOKEN.to_owned());
        if !extra.contains(&"--no-token") {
            args.extend(["--token".into(), TOKEN.into()]);
        } else {
            token = None;
        }
        args.extend(
            extra
                .iter()
                .filter(|a| **a != "--no-token")
                .map(|a| a.to_string()),
        );
        if !extra.contains(&"--listen") {
            args.extend(["--listen".into(), "127.0.0.1:0".into()]);
        }
        let (child, addr) =
            spawn(&args).unwrap_or_else(|why| panic!("the server did not start: {why}"));
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server = Server {
            child,
            base: format!("http://{addr}"),
            client: Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            token,
            _dir: None,
        };
        // Ready once the store has answered its first read of the counts.
        eventually("the server to be ready", || server.get("/readyz").0 == 200);
        server
    }

    /// A request to `path` with the token.
    pub fn req(&self, method: Method, path: &str) -> RequestBuilder {
        let r = self.client.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    /// Sends `body` as JSON; the status and the JSON answer (null if none).
    pub fn send(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut r = self.req(method, path);
        if let Some(b) = body {
            r = r.json(&b);
        }
        read(r.send().unwrap())
    }

    pub fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(Method::POST, path, Some(body))
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        self.send(Method::GET, path, None)
    }

    /// Stops the server with SIGTERM and waits for it to exit.
    /// The text of `/metrics` (open: no token needed).
    pub fn metrics(&self) -> String {
        self.client
            .get(format!("{}/metrics", self.base))
            .send()
            .unwrap()
            .text()
            .unwrap()
    }

    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        self.child.wait().unwrap()
    }

    /// Kills the server at once (SIGKILL).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary with `args` and waits for its "listening" log line;
/// the child and the address it listens on, or why it did not start.
pub fn spawn(args: &[String]) -> Result<(Child, String), String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wheel-server"))
        .args(args)
        .env("RUST_LOG", "info")
        .env_remove("WHEEL_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        let mut log = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !sent {
                if let Some(addr) = line
                    .split("listen=")
                    .nth(1)
                    .filter(|_| line.contains("listening"))
                {
                    let _ = tx.send(Ok(addr.trim().to_owned()));
                    sent = true;
                } else {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        }
        if !sent {
            let _ = tx.send(Err(log));
        }
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(addr)) => Ok((child, addr)),
        Ok(Err(log)) => {
            let status = child.wait().map_err(|e| e.to_string())?;
            Err(format!("exited with {status}: {log}"))
        }
        Err(_) => {
            let _ = child.kill();
            Err("no listening line within 20 s".into())
        }
    }
}

/// The status and JSON body of a response (null when the body is empty).
pub fn read(r: Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, body)
}

/// Checks a problem document: its status and the field it names.
pub fn assert_problem(got: &(u16, Value), status: u16, field: Option<&str>) {
    let (s, body) = got;
    assert_eq!(*s, status, "{body}");
    assert_eq!(body["status"], status, "{body}");
    assert!(
        body["type"]
            .as_str()
            .is_some_and(|t| t.starts_with("urn:wheel:problem:")),
        "{body}"
    );
    assert!(
        body["title"].is_string() && body["detail"].is_string(),
        "{body}"
    );
    assert_eq!(body["field"].as_str(), field, "{body}");
}

/// One request a [`Receiver`] got.
pub type Got = wheel_testkit::Received;

/// The testkit's receiver with the callback tests' script: answers 200,
/// except 400 on paths starting with `/fail`, 500 on paths starting with
/// `/error`, and 200 after 3 s on paths starting with `/slow`.
pub struct Receiver {
    pub base: String,
    inner: wheel_testkit::Receiver,
}

impl Receiver {
    pub fn start() -> Receiver {
        let inner = wheel_testkit::Receiver::start(|got, _| {
            let path = got.path.as_str();
            if path.starts_with("/slow") {
                Reply::status(200).after(Duration::from_secs(3))
            } else if path.starts_with("/fail") {
                Reply::status(400)
            } else if path.starts_with("/error") {
                Reply::status(500)
            } else {
                Reply::status(200)
            }
        });
        Receiver {
            base: inner.url(""),
            inner,
        }
    }

    pub fn url(&self, path: &str) -> String {
        self.inner.url(path)
    }

    /// Every request so far, in order of arrival.
    pub fn got(&self) -> Vec<Got> {
        self.inner.requests()
    }
}

/// A fresh directory path for a data directory that outlives one server.
pub fn data_dir(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("data")
}
