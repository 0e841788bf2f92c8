//! Paging through the timers of one state: [`Listing`], [`Page`] and the
//! opaque [`Cursor`] that resumes a listing.
//!
//! A listing follows one index of the store, ordered by a time (its
//! *score*) and, between timers sharing a score, by key bytes. A cursor
//! holds the listing and the (score, key) of the last timer a page
//! returned; the next page starts strictly after that position, never at
//! an offset. So timers added or removed between pages shift nothing: no
//! timer comes twice, and every timer that stays in the listing, unchanged,
//! from the first page to the last is returned once. A timer added behind
//! the cursor, or moved (rescheduled, claimed, retried), may be missed or
//! seen again at its new place.
//!
//! A cursor's text form (`Display`, `FromStr`) is ASCII with no spaces or
//! reserved URL characters: the listing's letter, the score and the key in
//! hex, separated by dots. It is meant to be handed to clients as a token
//! and read back, by any process on the same store.
//!
//! Node state: none: a listing reads the store, not the node.

use std::fmt;
use std::str::FromStr;

use super::store::Millis;
use super::{DurableError, DurableTimers, MAX_KEY_LEN, TimerInfo};

/// The most timers one page holds.
pub(crate) const MAX_PAGE: usize = 1_000;

/// Which timers a listing pages through, and in what order.
///
/// # Examples
///
/// ```
/// use wheel_durable::Listing;
/// assert_ne!(Listing::Pending, Listing::Dead);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Listing {
    /// Pending timers, by due time, ties by key.
    Pending,
    /// Claimed and running timers, by the end of their lease (the time a
    /// node must renew or finish by), ties by key. A renewal moves a timer
    /// later in this order.
    Claimed,
    /// Dead letters, by failure time, ties by key.
    Dead,
    /// Parked timers (their flow key is paused), by due time, ties by key.
    Parked,
}

impl Listing {
    fn tag(self) -> char {
        match self {
            Listing::Pending => 'p',
            Listing::Claimed => 'c',
            Listing::Dead => 'd',
            Listing::Parked => 'k',
        }
    }
}

/// One page of a listing: up to the asked number of timers, and the cursor
/// of the next page.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use wheel_durable::{DurableTimers, Listing};
/// # fn main() -> Result<(), wheel_durable::DurableError> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
/// let at = SystemTime::now() + Duration::from_secs(60);
/// timers.add_many(&[("a", at, b"".as_slice()), ("b", at, b"".as_slice())])?;
/// let page = timers.list(Listing::Pending, 1)?;
/// assert_eq!(page.timers[0].key, "a");
/// let rest = timers.list_after(page.next.as_ref().expect("b follows"), 1)?;
/// assert_eq!(rest.timers[0].key, "b");
/// assert!(rest.next.is_none());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Page {
    /// The timers, in the listing's order.
    pub timers: Vec<TimerInfo>,
    /// Where the next page starts; `None` when nothing followed this page
    /// when it was read.
    pub next: Option<Cursor>,
}

/// Where a listing resumes: the listing and the position (score and key)
/// of the last timer returned. Opaque; its text form is a token that
/// [`FromStr`] reads back.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use wheel_durable::{Cursor, DurableTimers, Listing};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir().unwrap();
/// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
/// let at = SystemTime::now() + Duration::from_secs(60);
/// timers.add_at("a", at, b"")?;
/// timers.add_at("b", at, b"")?;
/// let token = timers.list(Listing::Pending, 1)?.next.unwrap().to_string();
/// // ... sent to a client, and back ...
/// let cursor: Cursor = token.parse()?;
/// assert_eq!(cursor.listing(), Listing::Pending);
/// assert_eq!(timers.list_after(&cursor, 10)?.timers[0].key, "b");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    pub(crate) listing: Listing,
    pub(crate) score: Millis,
    pub(crate) key: String,
}

impl Cursor {
    /// The listing this cursor resumes.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::{Cursor, Listing};
    /// let c: Cursor = "d.17.6b".parse().unwrap();
    /// assert_eq!(c.listing(), Listing::Dead);
    /// ```
    pub fn listing(&self) -> Listing {
        self.listing
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.", self.listing.tag(), self.score)?;
        for b in self.key.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A text that is not a cursor's (see [`Cursor`]).
///
/// # Examples
///
/// ```
/// use wheel_durable::Cursor;
/// let e = "x.1.61".parse::<Cursor>().unwrap_err();
/// assert!(e.to_string().contains("listing"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseCursorError {
    what: &'static str,
}

impl fmt::Display for ParseCursorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a listing cursor: {}", self.what)
    }
}

impl std::error::Error for ParseCursorError {}

fn bad(what: &'static str) -> ParseCursorError {
    ParseCursorError { what }
}

impl FromStr for Cursor {
    type Err = ParseCursorError;

    fn from_str(s: &str) -> Result<Cursor, ParseCursorError> {
        let mut parts = s.split('.');
        let (Some(tag), Some(score), Some(hex), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad("expected three dot-separated parts"));
        };
        let listing = match tag {
            "p" => Listing::Pending,
            "c" => Listing::Claimed,
            "d" => Listing::Dead,
            "k" => Listing::Parked,
            _ => return Err(bad("unknown listing")),
        };
        if score.is_empty() || !score.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("the position is not a number"));
        }
        let score: Millis = score
            .parse()
            .map_err(|_| bad("the position is too large"))?;
        if hex.is_empty() || hex.len() % 2 != 0 || hex.len() > 2 * MAX_KEY_LEN {
            return Err(bad("the key has a bad length"));
        }
        // `from_str_radix` alone would take a sign: "+1" for 0x01.
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("the key is not hex"));
        }
        let bytes: Option<Vec<u8>> = (0..hex.len())
            .step_by(2)
            .map(|i| {
                let pair = hex.get(i..i + 2)?;
                u8::from_str_radix(pair, 16).ok()
            })
            .collect();
        let bytes = bytes.ok_or_else(|| bad("the key is not hex"))?;
        let key = String::from_utf8(bytes).map_err(|_| bad("the key is not UTF-8"))?;
        Ok(Cursor {
            listing,
            score,
            key,
        })
    }
}

impl DurableTimers {
    /// The first page of a listing: up to `limit` timers (clamped to
    /// 1..=1000) in the listing's order (see [`Listing`]), and the cursor
    /// of the next page. Each page is one consistent read of the store;
    /// pages are not one snapshot: see [`list_after`](Self::list_after).
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::{DurableTimers, Listing};
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let now = SystemTime::now();
    /// timers.add_at("late", now + Duration::from_secs(60), b"")?;
    /// timers.add_at("soon", now + Duration::from_secs(1), b"")?;
    /// let page = timers.list(Listing::Pending, 100)?;
    /// let keys: Vec<&str> = page.timers.iter().map(|t| t.key.as_str()).collect();
    /// assert_eq!(keys, ["soon", "late"]);
    /// assert!(page.next.is_none());
    /// # Ok(()) }
    /// ```
    pub fn list(&self, which: Listing, limit: usize) -> Result<Page, DurableError> {
        self.page(which, None, limit)
    }

    /// The page of `cursor`'s listing that starts strictly after the
    /// cursor's position, with up to `limit` timers (clamped to 1..=1000).
    ///
    /// Pages resume by position, not by offset: timers added or removed
    /// between pages shift nothing, so no timer is returned twice and every
    /// timer that stayed in the listing, unchanged, throughout is returned.
    /// A timer added before the cursor's position is not seen; one that
    /// moved (rescheduled, claimed, renewed) may be missed or seen again.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use wheel_durable::{DurableTimers, Listing};
    /// # fn main() -> Result<(), wheel_durable::DurableError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let timers = DurableTimers::builder().embedded(dir.path().join("timers")).build()?;
    /// let at = SystemTime::now() + Duration::from_secs(60);
    /// for i in 0..25 {
    ///     timers.add_at(&format!("t{i:02}"), at, b"")?;
    /// }
    /// let mut page = timers.list(Listing::Pending, 10)?;
    /// let mut seen = page.timers.len();
    /// while let Some(next) = page.next {
    ///     page = timers.list_after(&next, 10)?;
    ///     seen += page.timers.len();
    /// }
    /// assert_eq!(seen, 25);
    /// # Ok(()) }
    /// ```
    pub fn list_after(&self, cursor: &Cursor, limit: usize) -> Result<Page, DurableError> {
        self.page(cursor.listing, Some((cursor.score, &cursor.key)), limit)
    }

    fn page(
        &self,
        which: Listing,
        after: Option<(Millis, &str)>,
        limit: usize,
    ) -> Result<Page, DurableError> {
        let limit = limit.clamp(1, MAX_PAGE);
        // One more than asked tells whether a next page exists.
        let mut listed = self.store.list(which, after, limit + 1)?;
        let more = listed.len() > limit;
        listed.truncate(limit);
        let next = match listed.last() {
            Some(last) if more => Some(Cursor {
                listing: which,
                score: last.score,
                key: last.info.key.clone(),
            }),
            _ => None,
        };
        Ok(Page {
            timers: listed.into_iter().map(|l| l.info).collect(),
            next,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_through_text() {
        for (listing, score, key) in [
            (Listing::Pending, 0, "a"),
            (Listing::Claimed, u64::MAX, "order:17 é|\u{0}"),
            (Listing::Dead, 1_700_000_000_000, &*"k".repeat(MAX_KEY_LEN)),
        ] {
            let c = Cursor {
                listing,
                score,
                key: key.to_owned(),
            };
            let text = c.to_string();
            assert!(text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.'));
            assert_eq!(text.parse::<Cursor>(), Ok(c));
        }
    }

    #[test]
    fn bad_cursor_texts_are_typed_errors() {
        let too_long = format!("p.1.{}", "61".repeat(MAX_KEY_LEN + 1));
        for text in [
            "",
            "p.1",
            "p.1.61.62",
            "q.1.61",
            "p..61",
            "p.-1.61",
            "p.+1.61",
            "p.18446744073709551616.61",
            "p.1.",
            "p.1.6",
            "p.1.zz",
            "p.1.+1",
            "p.1.61+f",
            "p.1.é1",
            "p.1.ff",
            &too_long,
        ] {
            assert!(text.parse::<Cursor>().is_err(), "{text:?} parsed");
        }
    }
}
