//! The request-decoding harness the `server_request` fuzz target runs
//! (`fuzz/fuzz_targets/server_request.rs`), and the unit test that runs it
//! on the seed corpus in `cargo test`.
//!
//! Bytes are read as a body of `POST /v1/timers` and of
//! `POST /v1/timers:batch` ([`parse_json`], then [`NewTimer::check`] as
//! the handlers call them). Nothing may panic; an error is a problem
//! document of status 400, 413 or 422 (never 500), and an accepted timer
//! must hold what the API promises of it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wheel_durable::MAX_KEY_LEN;

use crate::error::Problem;
use crate::extractor::parse_json;
use crate::json::{Checked, NewTimer, is_dot_segment, parse_time};
use crate::timers::NewBatch;

/// The clock the harness checks against: fixed, so that a failing input
/// fails again when replayed.
const NOW_SECS: u64 = 1_900_000_000;

/// 100 years (the longest delay) and the millisecond the store rounds up.
const LONGEST: Duration = Duration::from_millis(100 * 365 * 24 * 3600 * 1000 + 1);

/// Decodes and checks `bytes` as one timer and as a batch; panics when an
/// answer breaks a rule of the API. The number of timers accepted (so that
/// tests can tell that their inputs reach the checks of an accepted one).
pub fn decode_and_check(bytes: &[u8]) -> usize {
    let now = UNIX_EPOCH + Duration::from_secs(NOW_SECS);
    let mut accepted = 0;
    match parse_json::<NewTimer>(bytes) {
        Ok(timer) => accepted += usize::from(check_one(timer, "", now)),
        Err(p) => assert_refusal(&p, ""),
    }
    match parse_json::<NewBatch>(bytes) {
        Ok(batch) => {
            for (i, timer) in batch.timers.into_iter().enumerate() {
                accepted += usize::from(check_one(timer, &format!("timers[{i}]."), now));
            }
        }
        Err(p) => assert_refusal(&p, ""),
    }
    accepted
}

/// Checks one decoded timer as a handler does, then what came of it;
/// whether it was accepted.
fn check_one(timer: NewTimer, prefix: &str, now: SystemTime) -> bool {
    let given = timer.clone();
    match timer.check(prefix, now) {
        Ok(checked) => {
            assert_accepted(&given, &checked, now);
            true
        }
        Err(p) => {
            assert_refusal(&p, prefix);
            false
        }
    }
}

/// A refusal is a client error naming a field under `prefix`, if any.
fn assert_refusal(p: &Problem, prefix: &str) {
    assert!(matches!(p.status, 400 | 413 | 422), "{p:?}");
    if p.status == 422 {
        let field = p.field.as_deref().expect("a 422 names its field");
        assert!(field.starts_with(prefix), "{p:?} under {prefix:?}");
    }
}

/// What the API promises of an accepted timer.
fn assert_accepted(given: &NewTimer, c: &Checked, now: SystemTime) {
    assert!((1..=MAX_KEY_LEN).contains(&c.key.len()), "{:?}", c.key);
    assert!(!is_dot_segment(&c.key), "{:?}", c.key);
    if let Some(key) = &given.key {
        assert_eq!(&c.key, key);
    }
    match &given.due_at {
        Some(at) => {
            assert!(c.absolute);
            assert_eq!(Ok(c.due), parse_time(at));
        }
        None => {
            assert!(!c.absolute);
            let after = c.due.duration_since(now).expect("a delay is not negative");
            assert!(after <= LONGEST, "due {after:?} from now");
        }
    }
    // The library takes the checked callback as it is (its own tests
    // cover how it stores it).
    assert!(c.callback.to_payload().is_ok(), "{:?}", c.callback);
    let cb = &given.callback;
    assert_eq!(c.callback.url, cb.url);
    // The URL has the documented form, and the client reads it.
    assert!(crate::decode::url_has_form(&cb.url), "{:?}", cb.url);
    assert!(
        wheel_durable::http::callback_target(&cb.url).is_ok(),
        "{:?}",
        cb.url
    );
    match (&cb.body, &cb.json) {
        (Some(text), _) => assert_eq!(c.callback.body, text.as_bytes()),
        (None, Some(raw)) => assert_eq!(c.callback.body, raw.get().as_bytes()),
        (None, None) => assert!(c.callback.body.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed corpus of the fuzz target (the committed `seed-*` files),
    /// each run through the harness.
    #[test]
    fn the_seed_corpus_decodes_without_breaking_a_rule() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus/server_request");
        let (mut seeds, mut accepted) = (0, 0);
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("seed-")
            {
                accepted += decode_and_check(&std::fs::read(path).unwrap());
                seeds += 1;
            }
        }
        assert!(seeds >= 5, "{seeds} seeds in {dir}");
        // The full timer, the text delay, the longest delay, both of the
        // batch and the json string.
        assert_eq!(accepted, 6);
    }

    #[test]
    fn edge_inputs_decode_without_breaking_a_rule() {
        for input in [
            &b""[..],
            b"[]",
            b"{}",
            b"null",
            b"{\"delay\":18446744073709551615,\"callback\":{\"url\":\"http://a.example/\"}}",
            b"{\"key\":\"..\",\"delay\":1,\"callback\":{\"url\":\"http://a.example/\"}}",
            b"{\"timers\":[[null,null,1,{\"url\":\"http://a.example/\"}]]}",
            b"{\"delay\":1,\"callback\":{\"url\":\"http://a.example/\",\"json\": {\"b\" : 1,\"a\":[ ]} }}",
        ] {
            decode_and_check(input);
        }
        let raw =
            b"{\"delay\":1,\"callback\":{\"url\":\"http://a.example/\",\"json\": {\"b\" : 1} }}";
        assert_eq!(decode_and_check(raw), 1);
    }
}
