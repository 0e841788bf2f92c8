//! The embedded store's directory: what may be opened as a store, and who
//! holds it.
//!
//! A path is opened as a store when it is one of ours (a directory with
//! fjall's `version` marker, whose file starts with fjall's magic bytes),
//! or when it is new: it does not exist (its parent must), or it is an
//! empty directory, such as a freshly mounted volume. Anything else is
//! refused before fjall writes a byte into it: a regular file, empty or
//! not, where the directory should be, or a directory that holds other
//! files. Refusing keeps a mistyped path from scattering a database into
//! somebody's home directory.
//!
//! fjall holds a lock on the `lock` file inside the directory for as long
//! as the database is open, which keeps a second process out. Within one
//! process the store keeps its own registry of the canonical paths that
//! are open, so that a second open says "already open in this process"
//! rather than blaming another process; an entry is removed when its
//! [`Registered`] guard is dropped, after the database is closed.
//!
//! Node state: none: the store is below the node; it owns the directory lock.

use std::collections::HashSet;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::sync::lock;
use crate::{DurableError, ErrorDetail};

/// The file fjall writes last when it creates a database.
const VERSION_MARKER: &str = "version";

/// The bytes fjall's version marker starts with.
const MAGIC: &[u8] = b"FJL";

/// The canonical paths of the stores open in this process.
fn registry() -> &'static Mutex<HashSet<PathBuf>> {
    static OPEN: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    OPEN.get_or_init(Mutex::default)
}

/// A store directory this process holds; dropping it lets the path be
/// opened again.
#[derive(Debug)]
pub(super) struct Registered(PathBuf);

impl Drop for Registered {
    fn drop(&mut self) {
        lock(registry()).remove(&self.0);
    }
}

/// An I/O failure about `path`, keeping the `std::io::Error` as its source.
pub(super) fn io_error(what: &str, path: &Path, e: std::io::Error) -> DurableError {
    let detail = ErrorDetail::new(format!("{what} {}", path.display()))
        .with_path(path)
        .with_source(e);
    match detail
        .source()
        .and_then(|s| s.downcast_ref::<std::io::Error>())
    {
        Some(io) if matches!(io.kind(), ErrorKind::InvalidData | ErrorKind::UnexpectedEof) => {
            DurableError::Corrupt(detail)
        }
        _ => DurableError::Io(detail),
    }
}

fn not_ours(path: &Path, why: &str) -> DurableError {
    DurableError::Corrupt(
        ErrorDetail::new(format!("{} is not a wheel store: {why}", path.display())).with_path(path),
    )
}

/// Makes sure `path` is a store directory of ours or a new one (creating
/// it if it does not exist), and registers it as open in this process.
pub(super) fn claim(path: &Path) -> Result<Registered, DurableError> {
    match std::fs::create_dir(path) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => check_existing(path)?,
        Err(e) => return Err(io_error("cannot create", path, e)),
    }
    let canonical = path
        .canonicalize()
        .map_err(|e| io_error("cannot resolve", path, e))?;
    if !lock(registry()).insert(canonical.clone()) {
        let detail = ErrorDetail::new(format!(
            "{} is already open in this process",
            path.display()
        ));
        return Err(DurableError::Locked(detail.with_path(path)));
    }
    Ok(Registered(canonical))
}

/// An existing path is accepted when it is an empty directory or holds
/// fjall's version marker.
fn check_existing(path: &Path) -> Result<(), DurableError> {
    let mut entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) if path.is_file() => {
            let detail = ErrorDetail::new(format!(
                "{} is a file, not a store directory",
                path.display()
            ));
            return Err(DurableError::Corrupt(detail.with_path(path).with_source(e)));
        }
        Err(e) => return Err(io_error("cannot read", path, e)),
    };
    if entries.next().is_none() {
        return Ok(());
    }
    let marker = path.join(VERSION_MARKER);
    let mut head = Vec::with_capacity(MAGIC.len());
    match std::fs::File::open(&marker) {
        Ok(file) => {
            file.take(MAGIC.len() as u64)
                .read_to_end(&mut head)
                .map_err(|e| io_error("cannot read", &marker, e))?;
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(not_ours(
                path,
                "the directory is not empty and has no fjall version marker",
            ));
        }
        Err(e) => return Err(io_error("cannot open", &marker, e)),
    }
    if head != MAGIC {
        return Err(not_ours(path, "its version file is not fjall's"));
    }
    Ok(())
}
