//! Black-box support: the built `wheel-server` binary on a free loopback
//! port with a data directory of its own, a blocking client for it, and a
//! receiver on loopback that records the callbacks it gets.
#![allow(dead_code)] // each test file uses a different subset

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use reqwest::blocking::{Client, RequestBuilder, Response};
use reqwest::Method;
use serde_json::Value;

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

/// Waits (up to 20 s) for `what` to hold.
pub fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

/// One request a [`Receiver`] got.
#[derive(Debug, Clone)]
pub struct Got {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: SystemTime,
}

impl Got {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A callback receiver on loopback (axum on a runtime of its own):
/// answers 200, except 400 on paths starting with `/fail`, 500 on paths
/// starting with `/error`, and 200 after 3 s on paths starting with `/slow`.
pub struct Receiver {
    pub base: String,
    got: Arc<Mutex<Vec<Got>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Receiver {
    pub fn start() -> Receiver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let g = got.clone();
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let g = g.clone();
            async move {
                let (parts, body) = req.into_parts();
                let body = axum::body::to_bytes(body, usize::MAX)
                    .await
                    .unwrap_or_default();
                let path = parts.uri.path().to_owned();
                g.lock().unwrap().push(Got {
                    method: parts.method.to_string(),
                    path: path.clone(),
                    headers: parts
                        .headers
                        .iter()
                        .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or_default().to_owned()))
                        .collect(),
                    body: body.to_vec(),
                    at: SystemTime::now(),
                });
                if path.starts_with("/slow") {
                    tokio::time::sleep(Duration::from_secs(3)).await;
                }
                if path.starts_with("/fail") {
                    axum::http::StatusCode::BAD_REQUEST
                } else if path.starts_with("/error") {
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    axum::http::StatusCode::OK
                }
            }
        });
        runtime.spawn(async move { axum::serve(listener, app).await });
        Receiver {
            base,
            got,
            _runtime: runtime,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }
}

/// A fresh directory path for a data directory that outlives one server.
pub fn data_dir(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("data")
}
