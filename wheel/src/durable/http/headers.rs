//! The headers a node adds to every callback request, and the signature.
//!
//! `Wheel-Timer-Key` carries the key with `%`, spaces, control characters
//! and non-ASCII bytes percent-encoded (so a plain key such as `order:17`
//! arrives as it is, and any key can be decoded back exactly);
//! `Wheel-Attempt`, `Wheel-Fence` and `Wheel-Due` (Unix milliseconds,
//! store time) are decimal numbers; `Wheel-Signature` is
//! `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." and the body>`.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The timer's key, percent-encoded where needed.
pub(crate) const TIMER_KEY: &str = "Wheel-Timer-Key";
/// Which run this is (1 for the first).
pub(crate) const ATTEMPT: &str = "Wheel-Attempt";
/// The claim's fence: grows with every claim of the key.
pub(crate) const FENCE: &str = "Wheel-Fence";
/// The due time in Unix milliseconds (store time).
pub(crate) const DUE: &str = "Wheel-Due";
/// The signature, when the node has a signing secret.
pub(crate) const SIGNATURE: &str = "Wheel-Signature";

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `key` as a header value: visible ASCII other than `%` as it is, every
/// other byte as `%XX` (upper-case hex, as RFC 3986 recommends).
pub(crate) fn key_value(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for &b in key.as_bytes() {
        if b.is_ascii_graphic() && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)].to_ascii_uppercase()));
            out.push(char::from(HEX[usize::from(b & 15)].to_ascii_uppercase()));
        }
    }
    out
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

/// The HMAC-SHA256 of `"<t>." + body` under `secret`.
fn mac(secret: &[u8], t: u64, body: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length, so this cannot fail.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes any key");
    m.update(t.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    m.finalize().into_bytes().to_vec()
}

/// The `Wheel-Signature` value for a request sent at Unix second `t`.
pub(crate) fn signature(secret: &[u8], t: u64, body: &[u8]) -> String {
    format!("t={t},v1={}", hex(&mac(secret, t, body)))
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
    fn hex_is_lower_case_two_digits_a_byte() {
        assert_eq!(hex(&[0, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(hex(&[]), "");
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
