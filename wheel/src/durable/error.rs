//! The durable tier's error type.

use std::fmt;

/// Why a durable operation failed.
///
/// Every failure of the durable tier is one of these: bad input is refused
/// before anything is written, a store that cannot be reached is reported
/// within a bounded time as [`Unavailable`](DurableError::Unavailable), and
/// nothing is dropped silently.
///
/// # Examples
///
/// ```
/// use wheel::durable::DurableError;
///
/// let e = DurableError::PayloadTooLarge { len: 2_000_000, max: 1 << 20 };
/// assert_eq!(e.to_string(), "payload of 2000000 bytes is over the limit of 1048576");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DurableError {
    /// The key is empty or longer than [`MAX_KEY_LEN`](crate::durable::MAX_KEY_LEN) bytes.
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
    /// The operation may or may not have taken effect.
    Unavailable(String),
    /// [`shutdown`](crate::durable::DurableTimers::shutdown) has been called.
    Closed,
    /// The embedded store's directory is held open by another process (or
    /// by another store in this one).
    Locked(String),
    /// The embedded store's path is not a store of ours, or the store is
    /// damaged.
    Corrupt(String),
    /// An I/O error of the embedded store: a directory that does not exist,
    /// a full disk, missing permissions.
    Io(String),
    /// The builder's settings cannot work together (no store chosen, zero
    /// workers, a zero lease, ...).
    Config(String),
    /// The store answered with an error that is not about reachability (a
    /// Redis script error, an unexpected reply): a bug or an incompatible
    /// server.
    Store(String),
    /// An HTTP callback's method is not one of GET, POST, PUT, PATCH and
    /// DELETE (from parsing a method name; feature `http`).
    InvalidMethod(String),
    /// An HTTP callback's URL does not parse, or is not an `http://` or
    /// `https://` URL with a host (feature `http`).
    InvalidUrl(String),
    /// An HTTP callback's header has an invalid name or value, or a name
    /// the node sets itself (feature `http`).
    InvalidHeader(String),
}

impl fmt::Display for DurableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurableError::InvalidKey => write!(
                f,
                "a key must be 1 to {} bytes long",
                crate::durable::MAX_KEY_LEN
            ),
            DurableError::PayloadTooLarge { len, max } => {
                write!(f, "payload of {len} bytes is over the limit of {max}")
            }
            DurableError::InvalidTime => {
                f.write_str("the due time is before the Unix epoch or too far after it")
            }
            DurableError::Unavailable(why) => write!(f, "the store is unavailable: {why}"),
            DurableError::Closed => f.write_str("the durable timers have been shut down"),
            DurableError::Locked(why) => write!(f, "the store is in use: {why}"),
            DurableError::Corrupt(why) => write!(f, "the store is damaged: {why}"),
            DurableError::Io(why) => write!(f, "store I/O error: {why}"),
            DurableError::Config(why) => write!(f, "invalid configuration: {why}"),
            DurableError::Store(why) => write!(f, "store error: {why}"),
            DurableError::InvalidMethod(m) => write!(f, "unsupported HTTP method: {m}"),
            DurableError::InvalidUrl(why) => write!(f, "invalid callback URL: {why}"),
            DurableError::InvalidHeader(why) => write!(f, "invalid callback header: {why}"),
        }
    }
}

impl std::error::Error for DurableError {}
