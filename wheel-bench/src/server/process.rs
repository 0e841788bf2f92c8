//! The `wheel-server` binary as the section runs it: found (built first,
//! when the bench runs from a checkout), started on a free loopback port
//! with a store of its own, waited for until `/readyz` answers 200, and
//! stopped with SIGTERM or killed with SIGKILL.
//!
//! The binary is built with `cargo build --release -p wheel-server` into
//! the same target directory as the running bench, every time the section
//! runs: cargo rebuilds it only when its sources changed, so the section
//! never measures a stale server, and the README's command works on a
//! fresh clone. `WHEEL_SERVER_BIN` names a binary to use instead (no
//! build).
//!
//! Every server listens on loopback without a token and with
//! `--allow-private-targets` (its callbacks go to a loopback receiver);
//! `WHEEL_*` variables of the environment are removed, so that none
//! changes what is measured. Its log (level `warn`) goes to a file beside
//! its store, quoted when it fails to start.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{SERVER_LEASE, client};

/// The variables the server reads, removed from its environment.
const SERVER_ENV: [&str; 9] = [
    "WHEEL_LISTEN",
    "WHEEL_DATA",
    "WHEEL_REDIS",
    "WHEEL_NAMESPACE",
    "WHEEL_TOKEN",
    "WHEEL_SIGNING_SECRET",
    "WHEEL_ALLOW_PRIVATE_TARGETS",
    "WHEEL_MAX_BODY",
    "WHEEL_LEASE",
];

/// How long a server may take to answer `/readyz` with 200.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The workspace's manifest, where the bench was built from.
fn workspace_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .join("Cargo.toml")
}

/// The target directory the running bench was built into: its binary is
/// `<target>/<profile>/wheel-bench`.
fn target_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("no path to this binary: {e}"))?;
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("{} has no target directory", exe.display()))
}

/// The tail of a build's or a server's output, for an error message.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Whether `var` is one of the variables cargo sets for the package it
/// runs (not one of cargo's own settings, such as `CARGO_HOME` or
/// `CARGO_PROFILE_*`, which the build keeps).
fn is_package_var(var: &str) -> bool {
    var.starts_with("CARGO_PKG_")
        || matches!(
            var,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "OUT_DIR"
        )
}

/// The release binary of `wheel-server`, built (or found up to date) by
/// cargo first; or `WHEEL_SERVER_BIN`.
pub fn binary() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("WHEEL_SERVER_BIN") {
        let bin = PathBuf::from(bin);
        return if bin.is_file() {
            Ok(bin)
        } else {
            Err(format!("WHEEL_SERVER_BIN={} is not a file", bin.display()))
        };
    }
    let target = target_dir()?;
    let built = target.join("release").join("wheel-server");
    let manifest = workspace_manifest();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    // `cargo run` gives the bench its package's variables; a build script
    // among the server's dependencies reruns when CARGO_MANIFEST_DIR
    // changes, so passing them on would rebuild half the server each time
    // the bench and a plain `cargo build` take turns.
    for (var, _) in std::env::vars_os() {
        if var.to_str().is_some_and(is_package_var) {
            cmd.env_remove(var);
        }
    }
    let out = cmd
        .args(["build", "--release", "--quiet", "-p", "wheel-server"])
        .arg("--manifest-path")
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() && built.is_file() => Ok(built),
        Ok(o) => Err(format!(
            "cargo build --release -p wheel-server failed ({}): {}",
            o.status,
            tail(&String::from_utf8_lossy(&o.stderr), 5)
        )),
        // No cargo (a bench binary copied elsewhere): a binary already
        // built beside it is used as it is.
        Err(_) if built.is_file() => Ok(built),
        Err(e) => Err(format!(
            "cannot run cargo to build wheel-server ({e}); build it with \
             `cargo build --release -p wheel-server` or set WHEEL_SERVER_BIN"
        )),
    }
}

/// Where a server keeps its timers.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The embedded store in this directory.
    Embedded(PathBuf),
    /// Redis at this URL, in this namespace.
    Redis {
        /// The server's URL.
        url: String,
        /// The namespace every server of a run shares.
        namespace: String,
    },
}

/// A running server; dropping it kills it.
pub struct ServerProcess {
    child: Option<Child>,
    addr: SocketAddr,
    log: PathBuf,
}

/// A port that was free a moment ago (the server binds it next; a start
/// that loses the race is tried again on another).
fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

impl ServerProcess {
    /// Starts `bin` on `backend`, its log in `log`; returns once it is
    /// ready.
    pub fn start(bin: &Path, backend: &Backend, log: &Path) -> Result<ServerProcess, String> {
        let mut last = String::new();
        for _ in 0..3 {
            match Self::try_start(bin, backend, log) {
                Ok(s) => return Ok(s),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn try_start(bin: &Path, backend: &Backend, log: &Path) -> Result<ServerProcess, String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let file = std::fs::File::create(log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let mut cmd = Command::new(bin);
        for var in SERVER_ENV {
            cmd.env_remove(var);
        }
        cmd.arg("--listen")
            .arg(addr.to_string())
            .arg("--allow-private-targets")
            .arg("--lease")
            .arg(format!("{}ms", SERVER_LEASE.as_millis()))
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file);
        match backend {
            Backend::Embedded(dir) => cmd.arg("--data").arg(dir),
            Backend::Redis { url, namespace } => {
                cmd.args(["--redis", url, "--namespace", namespace])
            }
        };
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let mut server = ServerProcess {
            child: Some(child),
            addr,
            log: log.to_path_buf(),
        };
        server.wait_ready()?;
        Ok(server)
    }

    /// Waits for `/readyz` to answer 200, or for the process to exit.
    fn wait_ready(&mut self) -> Result<(), String> {
        let start = Instant::now();
        while start.elapsed() < READY_WITHIN {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!(
                    "wheel-server exited ({status}): {}",
                    self.log_tail()
                ));
            }
            if let Ok((200, _)) = client::request(self.addr, "GET", "/readyz", None) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
        Err(format!(
            "wheel-server was not ready within {} s: {}",
            READY_WITHIN.as_secs(),
            self.log_tail()
        ))
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        match tail(&text, 5) {
            t if t.is_empty() => "(no log)".into(),
            t => t,
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL, and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, then waits up to `within` for a clean exit (SIGKILL
    /// after); true if it exited cleanly.
    pub fn stop(mut self, within: Duration) -> bool {
        let Some(mut c) = self.child.take() else {
            return false;
        };
        let termed = Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        let start = Instant::now();
        while termed && start.elapsed() < within {
            if let Ok(Some(status)) = c.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
        false
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
        assert_eq!(tail("", 5), "");
    }

    #[test]
    fn only_the_run_packages_variables_are_dropped() {
        for var in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_BIN_NAME",
            "OUT_DIR",
        ] {
            assert!(is_package_var(var), "{var}");
        }
        for var in [
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_PROFILE_RELEASE_LTO",
            "PATH",
        ] {
            assert!(!is_package_var(var), "{var}");
        }
    }

    #[test]
    fn the_manifest_is_the_workspace_one() {
        let m = workspace_manifest();
        assert!(m.is_file(), "{}", m.display());
        let text = std::fs::read_to_string(m).unwrap();
        assert!(
            text.contains("wheel-server"),
            "the workspace lists the server"
        );
    }
}
