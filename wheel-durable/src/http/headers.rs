//! The headers a node adds to every callback request.
//!
//! `Wheel-Timer-Key` carries the key with `%`, spaces, control characters
//! and non-ASCII bytes percent-encoded (so a plain key such as `order:17`
//! arrives as it is, and any key can be decoded back exactly);
//! `Wheel-Attempt`, `Wheel-Fence`, `Wheel-Due` and `Wheel-Attempt-Due`
//! (Unix milliseconds, store time) are decimal numbers: `Wheel-Due` is the
//! timer's original due time, the same on every attempt, and
//! `Wheel-Attempt-Due` this attempt's (later after a retry's back-off).
//! A schedule's run adds `Wheel-Schedule-Id` (the id, encoded as keys
//! are) and `Wheel-Schedule-Time` (the run's nominal time, Unix
//! milliseconds; a triggered run's trigger time).
//! `webhook-id` and `webhook-timestamp` (and, with signing secrets,
//! `webhook-signature`) are the Standard Webhooks headers (see `sign.rs`).
//!
//! Node state: none (pure functions).

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

/// The timer's key, percent-encoded where needed.
pub(crate) const TIMER_KEY: &str = "Wheel-Timer-Key";
/// Which run this is (1 for the first).
pub(crate) const ATTEMPT: &str = "Wheel-Attempt";
/// The claim's fence: grows with every claim of the key.
pub(crate) const FENCE: &str = "Wheel-Fence";
/// The timer's original due time in Unix milliseconds (store time): the
/// same on every attempt.
pub(crate) const DUE: &str = "Wheel-Due";
/// This attempt's due time in Unix milliseconds (store time): after a
/// retry, when the retry was due.
pub(crate) const ATTEMPT_DUE: &str = "Wheel-Attempt-Due";
/// The schedule id of a schedule's run, percent-encoded as keys are.
pub(crate) const SCHEDULE_ID: &str = "Wheel-Schedule-Id";
/// The nominal time of a schedule's run in Unix milliseconds.
pub(crate) const SCHEDULE_TIME: &str = "Wheel-Schedule-Time";
/// The delivery's id: the same on every attempt.
pub(crate) const WEBHOOK_ID: &str = "webhook-id";
/// When the request was sent, Unix seconds.
pub(crate) const WEBHOOK_TIMESTAMP: &str = "webhook-timestamp";
/// The signatures, when the node has signing secrets.
pub(crate) const WEBHOOK_SIGNATURE: &str = "webhook-signature";

/// What a key's header value encodes besides non-ASCII bytes: controls,
/// the space, and `%` itself.
const KEY_ENCODED: &AsciiSet = &CONTROLS.add(b' ').add(b'%');

/// `key` as a header value: visible ASCII other than `%` as it is, every
/// other byte as `%XX` (upper-case hex, as RFC 3986 recommends).
pub(crate) fn key_value(key: &str) -> String {
    utf8_percent_encode(key, KEY_ENCODED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_keys_pass_and_the_rest_is_percent_encoded() {
        assert_eq!(key_value("order:17/close?x=1"), "order:17/close?x=1");
        assert_eq!(key_value("a b%c"), "a%20b%25c");
        assert_eq!(key_value("\n\x7f"), "%0A%7F");
        assert_eq!(key_value("ü"), "%C3%BC");
        assert_eq!(key_value(""), "");
    }
}
