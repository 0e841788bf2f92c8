//! Keys the server makes for timers added without one, and the path that
//! names a timer by its key.
//!
//! A new key is a UUIDv7 (RFC 9562) in its simple text form: 32 lowercase
//! hex digits, the first 12 the milliseconds since 1970. Keys made later
//! sort later, so a batch's new keys land side by side in the store's
//! ordered tables instead of all over them. Nothing here depends on the
//! rest of the crate but the error type.

use std::time::{SystemTime, UNIX_EPOCH};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use uuid::Builder;

use crate::error::Problem;

/// A new key, made at `now` (a clock before 1970 counts as 1970).
pub(crate) fn new_key(now: SystemTime) -> Result<String, Problem> {
    let ms = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    // 74 random bits after the time (the builder sets the version and
    // variant bits over the rest of these 80).
    let mut random = [0u8; 10];
    getrandom::fill(&mut random)
        .map_err(|e| Problem::internal(&format!("no randomness for a key: {e}")))?;
    let ms = u64::try_from(ms).unwrap_or(u64::MAX);
    let uuid = Builder::from_unix_timestamp_millis(ms, &random).into_uuid();
    Ok(uuid.simple().to_string())
}

/// What a key keeps percent-encoded in a path segment: every byte but
/// ASCII letters, digits and `-._~:@`.
const SEGMENT_ENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b':')
    .remove(b'@');

/// The path of the timer `key`: the key percent-encoded as one segment.
pub(crate) fn timer_path(key: &str) -> String {
    format!("/v1/timers/{}", utf8_percent_encode(key, SEGMENT_ENCODED))
}

/// The path of the schedule `id`: the id percent-encoded as one segment.
pub(crate) fn schedule_path(id: &str) -> String {
    format!("/v1/schedules/{}", utf8_percent_encode(id, SEGMENT_ENCODED))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_timer_path_encodes_its_key_as_one_segment() {
        assert_eq!(timer_path("order:17"), "/v1/timers/order:17");
        assert_eq!(timer_path("shop/17 é"), "/v1/timers/shop%2F17%20%C3%A9");
        assert_eq!(timer_path("a?b#c%"), "/v1/timers/a%3Fb%23c%25");
    }

    #[test]
    fn new_keys_are_uuid_v7_in_hex_ordered_by_time_and_unique() {
        let at = UNIX_EPOCH + Duration::from_millis(0x0123_4567_89ab);
        let key = new_key(at).unwrap();
        assert_eq!(key.len(), 32);
        assert!(key.starts_with("0123456789ab"), "{key}");
        assert!(
            key.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        let uuid = uuid::Uuid::parse_str(&key).unwrap();
        assert_eq!(uuid.get_version_num(), 7);
        assert_ne!(key, new_key(at).unwrap());
        let later = at + Duration::from_millis(1);
        assert!(new_key(later).unwrap() > key);
        // Before 1970 (a clock gone wrong) still makes a key.
        assert!(
            new_key(UNIX_EPOCH - Duration::from_secs(1))
                .unwrap()
                .starts_with("000000000000")
        );
    }
}
