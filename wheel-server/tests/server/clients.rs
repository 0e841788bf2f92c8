//! The example clients in `docs/clients/` (Python and Node.js, standard
//! libraries only) run their demos against a real server: each adds a timer
//! to a receiver of its own, goes through the rest of the API while it
//! waits, verifies the callback's signature, and refuses the same callback
//! with a changed body or a stale timestamp.
//!
//! Python is required. Without `node` the Node.js test prints "skipped: node
//! not found", unless `WHEEL_REQUIRE_NODE=1` (as CI sets), which makes it a
//! failure.

use crate::common;

use std::io::{ErrorKind, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Server, TOKEN, eventually};

const SECRET: &str = "whsec_Y2xpZW50LWRlbW9zLXNpZ25pbmcta2V5";

/// What a finished demo left: its exit status, stdout and stderr.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `program script` against `server`, killed after 60 s (the demo
/// itself gives up within 30 s); `None` when `program` is not installed.
fn run_demo(program: &str, script: &str, server: &Server) -> Option<Run> {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "docs", "clients", script]
        .iter()
        .collect();
    let spawned = Command::new(program)
        .arg(&path)
        .env("WHEEL_URL", &server.base)
        .env("WHEEL_TOKEN", TOKEN)
        .env("WHEEL_SIGNING_SECRET", SECRET)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) if e.kind() == ErrorKind::NotFound => return None,
        Err(e) => panic!("cannot run {program}: {e}"),
    };
    // Read both pipes while it runs, so a full pipe cannot stall it.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let end = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("{program} {script} still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Some(Run {
        ok: status.success(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    })
}

/// Checks what a demo printed, and that the server saw what it did.
fn assert_demo(run: &Run, server: &Server) {
    let shown = format!("stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert!(run.ok, "the demo failed\n{shown}");
    for line in [
        "verified callback: /hello msg_",
        "cancelled, then: 404 urn:wheel:problem:timer-not-found",
        "tampered body rejected: no signature matches",
        "stale timestamp rejected: timestamp too old or too new",
    ] {
        assert!(run.stdout.contains(line), "no {line:?} in\n{shown}");
    }
    // A json callback body arrives as the client wrote it: Python's
    // json.dumps puts a space after each colon, JavaScript's JSON.stringify
    // none.
    assert!(
        ["{\"hello\":\"wheel\"}", "{\"hello\": \"wheel\"}"]
            .iter()
            .any(|body| run.stdout.contains(body)),
        "no callback body in\n{shown}"
    );
    // A revival answers what it made, whatever the node did with it since.
    assert!(
        run.stdout.contains("retried: pending\n"),
        "no pending state after the retry in\n{shown}"
    );
    // The callback was the server's (one 2xx), the dead letter was sent
    // twice (before and after its retry), and the demo left nothing behind.
    let metrics = || server.metrics();
    for line in [
        "wheel_callback_attempts_total{result=\"2xx\"} 1",
        "wheel_callback_attempts_total{result=\"5xx\"} 2",
    ] {
        eventually(line, || metrics().lines().any(|l| l == line));
    }
    let (status, pending) = server.get("/v1/timers");
    assert_eq!((status, &pending["timers"]), (200, &serde_json::json!([])));
    let (status, dead) = server.get("/v1/dead-letters");
    assert_eq!(
        (status, &dead["dead_letters"]),
        (200, &serde_json::json!([]))
    );
}

fn server() -> Server {
    Server::start(&["--allow-private-targets", "--signing-secret", SECRET])
}

#[test]
fn the_python_client_demo_gets_a_verified_callback() {
    let s = server();
    let run = run_demo("python3", "wheel_client.py", &s)
        .expect("python3 not found: the Python client's test requires it");
    assert_demo(&run, &s);
}

#[test]
fn the_node_client_demo_gets_a_verified_callback() {
    let s = server();
    let Some(run) = run_demo("node", "wheel_client.mjs", &s) else {
        if std::env::var("WHEEL_REQUIRE_NODE").as_deref() == Ok("1") {
            panic!("WHEEL_REQUIRE_NODE=1 but node is not on the PATH");
        }
        println!(
            "skipped: node not found (apt-get install nodejs; \
             set WHEEL_REQUIRE_NODE=1 to make this a failure)"
        );
        return;
    };
    assert_demo(&run, &s);
}
