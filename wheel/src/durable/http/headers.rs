//! The headers a node adds to every callback request, and the signature.
//!
//! `Wheel-Timer-Key` carries the key with `%`, spaces, control characters
//! and non-ASCII bytes percent-encoded (so a plain key such as `order:17`
//! arrives as it is, and any key can be decoded back exactly);
//! `Wheel-Attempt`, `Wheel-Fence`, `Wheel-Due` and `Wheel-Attempt-Due`
//! (Unix milliseconds, store time) are decimal numbers: `Wheel-Due` is the
//! timer's original due time, the same on every attempt, and
//! `Wheel-Attempt-Due` this attempt's (later after a retry's back-off);
//! `Wheel-Signature` is
//! `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." and the body>`.

use hmac::{Hmac, KeyInit, Mac};
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use sha2::Sha256;

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
/// The signature, when the node has a signing secret.
pub(crate) const SIGNATURE: &str = "Wheel-Signature";

const HEX: &[u8; 16] = b"0123456789abcdef";

/// What a key's header value encodes besides non-ASCII bytes: controls,
/// the space, and `%` itself.
const KEY_ENCODED: &AsciiSet = &CONTROLS.add(b' ').add(b'%');

/// `key` as a header value: visible ASCII other than `%` as it is, every
/// other byte as `%XX` (upper-case hex, as RFC 3986 recommends).
pub(crate) fn key_value(key: &str) -> String {
    utf8_percent_encode(key, KEY_ENCODED).to_string()
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

/// The bytes of lower- or upper-case hex, or `None`.
fn unhex(s: &str) -> Option<Vec<u8>> {
    // `from_str_radix` alone would also take a sign.
    if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The HMAC-SHA256 state after `"<t>." + body` under `secret`, `t` as
/// written in the header.
fn mac(secret: &[u8], t: &str, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length, so this cannot fail.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes any key");
    m.update(t.as_bytes());
    m.update(b".");
    m.update(body);
    m
}

/// The `Wheel-Signature` value for a request sent at Unix second `t`.
pub(crate) fn signature(secret: &[u8], t: u64, body: &[u8]) -> String {
    let t = t.to_string();
    let tag = mac(secret, &t, body).finalize().into_bytes();
    format!("t={t},v1={}", hex(&tag))
}

/// Checks a `Wheel-Signature` header against the raw request body, for a
/// receiver written in Rust: the signing time `t` (Unix seconds) when the
/// HMAC matches (compared in constant time), else `None`. Refuse a `t` too
/// far from your clock, so that a recorded request cannot be replayed
/// later. See [`HttpConfig::signing_secret`](super::HttpConfig::signing_secret)
/// for the scheme and the same check written out with `hmac` and `sha2`.
///
/// # Examples
///
/// ```
/// use wheel::durable::http::verify_signature;
///
/// let header = "t=1700000000,v1=35495024f4ef3f94e5a93e22221544c4b75e9a42300cd965ab81cb85cd994e91";
/// assert_eq!(verify_signature(b"whsec_test", header, b"{}"), Some(1_700_000_000));
/// assert_eq!(verify_signature(b"whsec_test", header, b"{ }"), None);
/// assert_eq!(verify_signature(b"another", header, b"{}"), None);
/// ```
pub fn verify_signature(secret: &[u8], header: &str, body: &[u8]) -> Option<u64> {
    let (mut t, mut v1) = (None, None);
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = Some(v),
            Some(("v1", v)) => v1 = Some(v),
            _ => {}
        }
    }
    let (t, tag) = (t?, unhex(v1?)?);
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    mac(secret, t, body).verify_slice(&tag).ok()?;
    t.parse().ok()
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

    #[test]
    fn hex_is_lower_case_two_digits_a_byte_and_reads_back() {
        assert_eq!(hex(&[0, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(hex(&[]), "");
        assert_eq!(unhex("000fA0ff"), Some(vec![0, 0x0f, 0xa0, 0xff]));
        assert_eq!(unhex(""), Some(vec![]));
        for bad in ["0", "0g", "+f", "ü0"] {
            assert_eq!(unhex(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_signature_verifies_only_with_its_secret_body_and_time() {
        let header = signature(b"s", 1_700_000_000, b"body");
        assert_eq!(
            verify_signature(b"s", &header, b"body"),
            Some(1_700_000_000)
        );
        assert_eq!(verify_signature(b"s", &header, b"bodY"), None);
        assert_eq!(verify_signature(b"S", &header, b"body"), None);
        let moved = header.replace("t=1700000000", "t=1700000001");
        assert_eq!(verify_signature(b"s", &moved, b"body"), None);
        let plus = header.replace("t=", "t=+");
        assert_eq!(verify_signature(b"s", &plus, b"body"), None);
        let spaced = header.replace(',', " , ");
        assert_eq!(
            verify_signature(b"s", &spaced, b"body"),
            Some(1_700_000_000)
        );
        let short = &header[..header.len() - 2];
        assert_eq!(verify_signature(b"s", short, b"body"), None);
        for bad in ["", "t=1", "v1=00", "t=,v1=", "garbage"] {
            assert_eq!(verify_signature(b"s", bad, b"body"), None, "{bad:?}");
        }
    }

    #[test]
    fn the_mac_matches_a_published_vector() {
        // RFC 4231, test case 2: key "Jefe", data "what do ya want for
        // nothing?".
        let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(b"Jefe").unwrap();
        m.update(b"what do ya want for nothing?");
        assert_eq!(
            hex(&m.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // The framing "<t>." + body, against an independent HMAC-SHA256
        // of "1700000000.{}" (the same vector as the receiver's doc example).
        assert_eq!(
            signature(b"whsec_test", 1_700_000_000, b"{}"),
            "t=1700000000,v1=35495024f4ef3f94e5a93e22221544c4b75e9a42300cd965ab81cb85cd994e91"
        );
    }
}
