//! The durable tier's error type, and the detail its store variants carry.
//!
//! A failure that comes from below (the file system, fjall, Redis) keeps
//! that error as its [`source`](std::error::Error::source), so a caller can
//! downcast it, and its message names the path of the file it is about.
//! The detail is shared behind an `Arc`, so the error stays `Clone`; two
//! errors are equal when their variants, messages and paths are, whatever
//! the identity of their sources.
//!
//! Node state: none.

use std::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a durable operation failed.
///
/// Every failure of the durable tier is one of these: bad input is refused
/// before anything is written, a store that cannot be reached is reported
/// within a bounded time as [`Unavailable`](DurableError::Unavailable), and
/// nothing is dropped silently.
///
/// The variants about the store itself ([`Unavailable`], [`Locked`],
/// [`Corrupt`], [`Io`], [`Store`]) carry an [`ErrorDetail`]: a message, the
/// path it is about (embedded store) and the underlying error, which
/// [`source`](std::error::Error::source) returns.
///
/// # Examples
///
/// ```
/// use wheel_durable::DurableError;
///
/// let e = DurableError::PayloadTooLarge { len: 2_000_000, max: 1 << 20 };
/// assert_eq!(e.to_string(), "payload of 2000000 bytes is over the limit of 1048576");
/// ```
///
/// Reaching the cause of a store failure:
///
/// ```
/// use std::error::Error;
/// use wheel_durable::{DurableError, DurableTimers};
///
/// let dir = tempfile::tempdir().unwrap();
/// let file = dir.path().join("plain-file");
/// std::fs::write(&file, b"")?;
/// let e = DurableTimers::builder().embedded(file.join("timers")).build().unwrap_err();
/// assert!(matches!(e, DurableError::Io(_)), "{e}");
/// assert!(e.to_string().contains("plain-file"));
/// let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>()).expect("an I/O cause");
/// assert_eq!(io.kind(), std::io::ErrorKind::NotADirectory);
/// # Ok::<(), Box<dyn Error>>(())
/// ```
///
/// [`Unavailable`]: DurableError::Unavailable
/// [`Locked`]: DurableError::Locked
/// [`Corrupt`]: DurableError::Corrupt
/// [`Io`]: DurableError::Io
/// [`Store`]: DurableError::Store
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DurableError {
    /// The key is empty or longer than [`MAX_KEY_LEN`](crate::MAX_KEY_LEN) bytes.
    InvalidKey,
    /// The payload is longer than the configured limit.
    PayloadTooLarge {
        /// The payload's length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The due time cannot be stored: before the Unix epoch, or more than
    /// 2^53 - 1 milliseconds (about 285 000 years) after it.
    InvalidTime,
    /// The store could not be reached, or kept failing, within the
    /// configured bound (see `DurableTimersBuilder::unavailable_after`).
    /// The operation may or may not have taken effect. The source is the
    /// last error of the client (a `redis::RedisError`).
    Unavailable(ErrorDetail),
    /// [`shutdown`](crate::DurableTimers::shutdown) has been called.
    Closed,
    /// The embedded store's directory is held open by another process, or
    /// already open in this one; the message says which.
    Locked(ErrorDetail),
    /// The embedded store's path is not a store of ours (a file, or a
    /// directory that holds something else), or the store is damaged.
    Corrupt(ErrorDetail),
    /// An I/O error of the embedded store: a directory that does not exist,
    /// a full disk, missing permissions. The source is the `std::io::Error`
    /// and the message names the path.
    Io(ErrorDetail),
    /// The builder's settings cannot work together (no store chosen, zero
    /// workers, a zero lease, ...).
    Config(String),
    /// The store answered with an error that is not about reachability (a
    /// Redis script error, an unexpected reply): a bug or an incompatible
    /// server. The source, if any, is the client's error.
    Store(ErrorDetail),
    /// An HTTP callback's method is not one of GET, POST, PUT, PATCH and
    /// DELETE (from parsing a method name; feature `http`).
    InvalidMethod(String),
    /// An HTTP callback's URL does not parse, or is not an `http://` or
    /// `https://` URL with a host (feature `http`).
    InvalidUrl(String),
    /// An HTTP callback's header has an invalid name or value, or a name
    /// the node sets itself (feature `http`).
    InvalidHeader(String),
    /// A dead-letter replay's settings cannot work: a rate that is not a
    /// positive number of at most 1 000 000 per second, or a filter whose
    /// time range is empty or cannot be stored.
    InvalidReplay(String),
    /// A flow key is empty, longer than 512 bytes, or holds a control
    /// character; or a flow key's limit is out of its range.
    InvalidFlow(String),
    /// The Redis master made the change, but fewer replicas than asked for
    /// (see `DurableTimersBuilder::replicas`) confirmed it within the
    /// timeout. The change stands on the master and may be lost if the
    /// master fails before a replica has it: do not count it as durable.
    /// Retrying the call is safe (an add with the same key, a cancel, a
    /// reschedule) and, once it is confirmed, confirms the first try too.
    NotReplicated {
        /// The replicas asked for.
        wanted: u32,
        /// The replicas that confirmed in time.
        confirmed: u32,
    },
}

impl fmt::Display for DurableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurableError::InvalidKey => {
                write!(f, "a key must be 1 to {} bytes long", crate::MAX_KEY_LEN)
            }
            DurableError::PayloadTooLarge { len, max } => {
                write!(f, "payload of {len} bytes is over the limit of {max}")
            }
            DurableError::InvalidTime => {
                f.write_str("the due time is before the Unix epoch or too far after it")
            }
            DurableError::Unavailable(why) => write!(f, "the store is unavailable: {why}"),
            DurableError::Closed => f.write_str("the durable timers have been shut down"),
            DurableError::Locked(why) => write!(f, "the store is in use: {why}"),
            DurableError::Corrupt(why) => write!(f, "not a store of ours, or a damaged one: {why}"),
            DurableError::Io(why) => write!(f, "store I/O error: {why}"),
            DurableError::Config(why) => write!(f, "invalid configuration: {why}"),
            DurableError::Store(why) => write!(f, "store error: {why}"),
            DurableError::InvalidMethod(m) => write!(f, "unsupported HTTP method: {m}"),
            DurableError::InvalidUrl(why) => write!(f, "invalid callback URL: {why}"),
            DurableError::InvalidHeader(why) => write!(f, "invalid callback header: {why}"),
            DurableError::InvalidReplay(why) => write!(f, "invalid replay: {why}"),
            DurableError::InvalidFlow(why) => write!(f, "invalid flow key or limits: {why}"),
            DurableError::NotReplicated { wanted, confirmed } => write!(
                f,
                "made on the Redis master but confirmed by {confirmed} of the {wanted} replicas asked for in time: it may be lost on a failover"
            ),
        }
    }
}

impl Error for DurableError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.detail().and_then(ErrorDetail::source).map(|e| {
            let e: &(dyn Error + 'static) = e;
            e
        })
    }
}

impl DurableError {
    /// The detail of a store failure; `None` for the other variants.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::{DurableError, ErrorDetail};
    ///
    /// let e = DurableError::Corrupt(ErrorDetail::new("no version marker").with_path("/srv/timers"));
    /// assert_eq!(e.detail().and_then(|d| d.path()), Some(std::path::Path::new("/srv/timers")));
    /// assert_eq!(DurableError::Closed.detail(), None);
    /// ```
    pub fn detail(&self) -> Option<&ErrorDetail> {
        match self {
            DurableError::Unavailable(d)
            | DurableError::Locked(d)
            | DurableError::Corrupt(d)
            | DurableError::Io(d)
            | DurableError::Store(d) => Some(d),
            _ => None,
        }
    }

    /// Whether the caller is at fault: the input of the call (a key, a
    /// payload, a due time, a callback's method, URL or headers) or the
    /// builder's settings. Nothing was written, and the same call fails
    /// again the same way; a service answers such an error as the client's
    /// mistake (HTTP 4xx). False for trouble with the store (unreachable,
    /// locked, damaged, failing I/O, an unexpected reply) and for
    /// [`Closed`](DurableError::Closed), where the same call may succeed
    /// later or elsewhere (HTTP 5xx).
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::{DurableError, ErrorDetail};
    ///
    /// assert!(DurableError::InvalidKey.is_input());
    /// assert!(DurableError::PayloadTooLarge { len: 9, max: 4 }.is_input());
    /// assert!(!DurableError::Unavailable(ErrorDetail::new("no reply")).is_input());
    /// assert!(!DurableError::Closed.is_input());
    /// ```
    pub fn is_input(&self) -> bool {
        // Listed in full, without a catch-all: a new variant must be
        // placed on one side or the other here, where it is defined.
        match self {
            DurableError::InvalidKey
            | DurableError::PayloadTooLarge { .. }
            | DurableError::InvalidTime
            | DurableError::Config(_)
            | DurableError::InvalidMethod(_)
            | DurableError::InvalidUrl(_)
            | DurableError::InvalidHeader(_)
            | DurableError::InvalidReplay(_)
            | DurableError::InvalidFlow(_) => true,
            DurableError::Unavailable(_)
            | DurableError::Closed
            | DurableError::Locked(_)
            | DurableError::Corrupt(_)
            | DurableError::Io(_)
            | DurableError::Store(_)
            | DurableError::NotReplicated { .. } => false,
        }
    }

    /// Names the embedded store's directory in a store failure that does
    /// not name a path yet: an error from fjall deep inside an operation
    /// knows no path, the store does.
    #[cfg_attr(not(feature = "embedded"), allow(dead_code))] // the embedded store's and the model's
    pub(crate) fn in_store(mut self, dir: &Path) -> DurableError {
        let detail = match &mut self {
            DurableError::Locked(d)
            | DurableError::Corrupt(d)
            | DurableError::Io(d)
            | DurableError::Store(d) => d,
            _ => return self,
        };
        if detail.path.is_none() {
            detail.message = if detail.message.is_empty() {
                format!("in {}", dir.display())
            } else {
                format!("{} in {}", detail.message, dir.display())
            };
            detail.path = Some(dir.to_path_buf());
        }
        self
    }
}

/// What a store failure is about: a message, the path it concerns (if
/// any) and the error underneath (if any).
///
/// It displays as the message, then `": "` and the underlying error's own
/// message, so that printing the [`DurableError`] alone tells the whole
/// story (`cannot create /srv/timers: Permission denied (os error 13)`).
/// It is cheap to clone (the underlying error is shared), and two details
/// are equal when their messages, paths and underlying messages are.
///
/// # Examples
///
/// ```
/// use std::error::Error;
/// use std::io;
/// use wheel_durable::{DurableError, ErrorDetail};
///
/// let cause = io::Error::new(io::ErrorKind::PermissionDenied, "Permission denied");
/// let e = DurableError::Io(
///     ErrorDetail::new("cannot create /srv/timers").with_path("/srv/timers").with_source(cause),
/// );
/// assert_eq!(e.to_string(), "store I/O error: cannot create /srv/timers: Permission denied");
/// let io = e.source().and_then(|s| s.downcast_ref::<io::Error>()).unwrap();
/// assert_eq!(io.kind(), io::ErrorKind::PermissionDenied);
/// // A bare message converts too.
/// assert_eq!(ErrorDetail::from("gave up").to_string(), "gave up");
/// ```
#[derive(Clone, Default)]
pub struct ErrorDetail {
    message: String,
    path: Option<PathBuf>,
    source: Option<Arc<dyn Error + Send + Sync + 'static>>,
}

impl ErrorDetail {
    /// A detail with this message, no path and no underlying error.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::ErrorDetail;
    /// assert_eq!(ErrorDetail::new("no reply").message(), "no reply");
    /// ```
    pub fn new(message: impl Into<String>) -> ErrorDetail {
        ErrorDetail {
            message: message.into(),
            path: None,
            source: None,
        }
    }

    /// Records the path the failure is about (the message should name it
    /// too; this keeps it for programs).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::path::Path;
    /// use wheel_durable::ErrorDetail;
    /// let d = ErrorDetail::new("cannot read /srv/timers").with_path("/srv/timers");
    /// assert_eq!(d.path(), Some(Path::new("/srv/timers")));
    /// ```
    pub fn with_path(mut self, path: impl Into<PathBuf>) -> ErrorDetail {
        self.path = Some(path.into());
        self
    }

    /// Records the underlying error, which
    /// [`DurableError::source`](std::error::Error::source) returns.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::ErrorDetail;
    /// let d = ErrorDetail::new("cannot open").with_source(std::io::Error::other("boom"));
    /// assert_eq!(d.to_string(), "cannot open: boom");
    /// ```
    pub fn with_source(mut self, source: impl Error + Send + Sync + 'static) -> ErrorDetail {
        self.source = Some(Arc::new(source));
        self
    }

    /// The message, without the underlying error's.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::ErrorDetail;
    /// let d = ErrorDetail::new("cannot open").with_source(std::io::Error::other("boom"));
    /// assert_eq!(d.message(), "cannot open");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The path the failure is about, if it is about one.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::ErrorDetail;
    /// assert_eq!(ErrorDetail::new("no reply").path(), None);
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The underlying error, if there is one.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::ErrorDetail;
    /// let d = ErrorDetail::from(std::io::Error::from(std::io::ErrorKind::NotFound));
    /// let io = d.source().and_then(|e| e.downcast_ref::<std::io::Error>()).unwrap();
    /// assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    /// ```
    pub fn source(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl fmt::Display for ErrorDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        match &self.source {
            Some(e) if self.message.is_empty() => write!(f, "{e}"),
            Some(e) => write!(f, ": {e}"),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for ErrorDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ErrorDetail");
        d.field("message", &self.message);
        if let Some(p) = &self.path {
            d.field("path", p);
        }
        if let Some(e) = &self.source {
            d.field("source", e);
        }
        d.finish()
    }
}

impl PartialEq for ErrorDetail {
    fn eq(&self, other: &ErrorDetail) -> bool {
        let source = |d: &ErrorDetail| d.source.as_ref().map(|e| e.to_string());
        self.message == other.message && self.path == other.path && source(self) == source(other)
    }
}

impl Eq for ErrorDetail {}

impl From<String> for ErrorDetail {
    fn from(message: String) -> ErrorDetail {
        ErrorDetail::new(message)
    }
}

impl From<&str> for ErrorDetail {
    fn from(message: &str) -> ErrorDetail {
        ErrorDetail::new(message)
    }
}

/// The error as the underlying cause, with no message of its own.
impl From<std::io::Error> for ErrorDetail {
    fn from(e: std::io::Error) -> ErrorDetail {
        ErrorDetail::default().with_source(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_errors_are_the_caller_s_and_store_errors_are_not() {
        let d = || ErrorDetail::new("x");
        let input = [
            DurableError::InvalidKey,
            DurableError::PayloadTooLarge { len: 2, max: 1 },
            DurableError::InvalidTime,
            DurableError::Config("zero workers".into()),
            DurableError::InvalidMethod("BREW".into()),
            DurableError::InvalidUrl("ftp://x".into()),
            DurableError::InvalidHeader("Host".into()),
            DurableError::InvalidReplay("rate 0".into()),
            DurableError::InvalidFlow("empty".into()),
        ];
        let store = [
            DurableError::Unavailable(d()),
            DurableError::Closed,
            DurableError::Locked(d()),
            DurableError::Corrupt(d()),
            DurableError::Io(d()),
            DurableError::Store(d()),
            DurableError::NotReplicated {
                wanted: 1,
                confirmed: 0,
            },
        ];
        for e in &input {
            assert!(e.is_input(), "{e:?}");
            assert!(e.detail().is_none(), "{e:?} carries no store detail");
        }
        for e in &store {
            assert!(!e.is_input(), "{e:?}");
        }
    }

    #[test]
    fn details_compare_by_message_path_and_cause_text() {
        let io = || std::io::Error::other("disk full");
        let a = DurableError::Io(ErrorDetail::new("cannot write").with_source(io()));
        assert_eq!(
            a,
            DurableError::Io(ErrorDetail::new("cannot write").with_source(io()))
        );
        assert_ne!(a, DurableError::Io(ErrorDetail::new("cannot write")));
        assert_ne!(
            a,
            DurableError::Corrupt(ErrorDetail::new("cannot write").with_source(io()))
        );
        assert_eq!(a.clone(), a);
    }

    #[test]
    fn the_store_s_path_is_added_once_and_only_to_store_failures() {
        let dir = Path::new("/srv/timers");
        let e = DurableError::Io(std::io::Error::other("disk full").into()).in_store(dir);
        assert_eq!(e.to_string(), "store I/O error: in /srv/timers: disk full");
        assert_eq!(e.clone().in_store(Path::new("/elsewhere")), e);
        let e = DurableError::Corrupt("a timer record does not parse".into()).in_store(dir);
        assert_eq!(
            e.to_string(),
            "not a store of ours, or a damaged one: a timer record does not parse in /srv/timers"
        );
        assert_eq!(DurableError::Closed.in_store(dir), DurableError::Closed);
        assert!(Error::source(&e).is_none());
    }
}
