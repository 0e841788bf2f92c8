//! The server section's runs: the real `wheel-server` binary
//! ([`process`]) under load from `wrk` ([`wrk`]), idle ([`procfs`]), and
//! two of them on one Redis sending callbacks to the loopback receiver of
//! the HTTP section, one of them killed ([`fleet`]).
//!
//! - [`load`]: one server on the embedded store: idle when fresh, 64
//!   keep-alive connections adding one timer per request, batches of 1 000
//!   timers, idle again holding everything added; then the library's own
//!   adds from 64 threads on an embedded store of its own, as many timers
//!   as the server took, for the ratio;
//! - [`fleet`]: two servers on one Redis, timers due at 1 000/s added
//!   through both (`POST /v1/timers:batch`), callbacks to the receiver:
//!   lateness, early, lost and duplicates; and the same with one server
//!   killed (SIGKILL) mid window;
//! - [`client`]: the few requests the section makes itself.
//!
//! Every server, store and log lives in a [`Workdir`] of its own, removed
//! when the run ends; every server is stopped (or killed) before its run
//! returns, so one run's processes never load the next.

pub mod client;
pub mod fleet;
pub mod load;
pub mod process;
pub mod procfs;
pub mod wrk;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The lease of every server (`--lease`; also the server's default).
pub const SERVER_LEASE: Duration = Duration::from_secs(5);

/// A callback URL for timers that never come due within a run (an hour
/// out): the discard port on loopback.
pub const NEVER_CALLED: &str = "http://127.0.0.1:9/never";

/// A temporary directory for one run's stores, logs and scripts; removed
/// when dropped.
pub struct Workdir {
    path: PathBuf,
}

impl Workdir {
    /// A fresh directory named after `name`.
    pub fn new(name: &str) -> Result<Workdir, String> {
        let path = crate::durable::temp_store(name);
        std::fs::create_dir_all(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(Workdir { path })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A path inside it.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workdir_is_made_and_removed() {
        let dir = Workdir::new("server-test").unwrap();
        let path = dir.path().to_path_buf();
        std::fs::write(dir.join("x"), b"x").unwrap();
        assert!(path.join("x").is_file());
        drop(dir);
        assert!(!path.exists());
    }
}
