//! Signing in the Standard Webhooks scheme, and its check for receivers
//! written in Rust ([`verify_signature`]).
//!
//! A secret is `whsec_` followed by the standard base64 of the key bytes
//! (padding optional, as the reference libraries read it); the signed text
//! is `"<webhook-id>.<webhook-timestamp>."` followed by the raw body, and
//! `webhook-signature` holds one `v1,<base64 of HMAC-SHA256>` entry per key,
//! separated by spaces, so that a receiver that knows any one of the keys
//! accepts the request while keys are rotated.
//!
//! The `webhook-id` names one delivery: it is made from the namespace, the
//! key and the fence of the timer's first started run
//! ([`Fired::first_fence`]), so every attempt of a timer carries the same
//! id, and a timer added again under the same key (or revived from the
//! dead letters) carries a new one. Fences come from one counter per
//! namespace and never repeat while the store keeps its data.
//!
//! Node state: none (pure functions).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::alphabet;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

#[cfg(doc)]
use crate::Fired;

/// What every secret starts with.
const SECRET_PREFIX: &str = "whsec_";

/// How far a `webhook-timestamp` may be from the receiver's clock, either
/// way, for [`verify_signature`] to accept it.
pub(crate) const TOLERANCE: Duration = Duration::from_secs(5 * 60);

/// Standard base64 that writes padding and reads it or its absence.
const B64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The key bytes of a `whsec_<base64>` secret.
pub(crate) fn parse_secret(secret: &str) -> Result<Vec<u8>, &'static str> {
    let Some(b64) = secret.strip_prefix(SECRET_PREFIX) else {
        return Err("a signing secret must start with `whsec_`");
    };
    match B64.decode(b64) {
        Ok(key) if key.is_empty() => Err("a signing secret must not be empty"),
        Ok(key) => Ok(key),
        Err(_) => Err("a signing secret must be `whsec_` followed by standard base64"),
    }
}

/// The `webhook-id` of a delivery: `msg_` and the lower-case hex of the
/// first 16 bytes of SHA-256 over the namespace, the key (each after its
/// length, so that no two pairs give the same bytes) and the fence.
pub(crate) fn webhook_id(namespace: &str, key: &str, first_fence: u64) -> String {
    let mut h = Sha256::new();
    for part in [namespace.as_bytes(), key.as_bytes()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.update(first_fence.to_le_bytes());
    let digest = h.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("msg_{hex}")
}

/// The HMAC-SHA256 state after the signed text under `key`, `timestamp` as
/// written in its header.
fn mac(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length, so this cannot fail.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    m.update(id.as_bytes());
    m.update(b".");
    m.update(timestamp.as_bytes());
    m.update(b".");
    m.update(body);
    m
}

/// The `webhook-signature` value: one `v1,<base64>` entry per key.
pub(crate) fn signature(keys: &[Vec<u8>], id: &str, timestamp: u64, body: &[u8]) -> String {
    let timestamp = timestamp.to_string();
    let entries: Vec<String> = keys
        .iter()
        .map(|k| {
            let tag = mac(k, id, &timestamp, body).finalize().into_bytes();
            format!("v1,{}", B64.encode(tag))
        })
        .collect();
    entries.join(" ")
}

/// Why [`verify_signature`] refused a request.
///
/// # Examples
///
/// ```
/// use wheel_durable::http::SignatureError;
///
/// let e = SignatureError::Mismatch;
/// assert_eq!(e.to_string(), "no v1 signature matches the body");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignatureError {
    /// The secret is not `whsec_` followed by standard base64.
    Secret,
    /// `webhook-timestamp` is not a decimal number of seconds.
    Timestamp,
    /// `webhook-timestamp` is more than 5 minutes from the receiver's
    /// clock, either way: a recorded request replayed later, or clocks far
    /// apart.
    Expired,
    /// No `v1` entry of `webhook-signature` is the HMAC of this id,
    /// timestamp and body under the secret.
    Mismatch,
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SignatureError::Secret => "the secret is not `whsec_` and standard base64",
            SignatureError::Timestamp => "webhook-timestamp is not a number of seconds",
            SignatureError::Expired => "webhook-timestamp is more than 5 minutes from now",
            SignatureError::Mismatch => "no v1 signature matches the body",
        })
    }
}

impl std::error::Error for SignatureError {}

/// Checks a signed request as a Standard Webhooks receiver does, for a
/// receiver written in Rust: `id`, `timestamp` and `signature` are the
/// values of the `webhook-id`, `webhook-timestamp` and `webhook-signature`
/// headers, `body` the raw body as received, `now` the receiver's clock.
/// Accepts when the timestamp is within 5 minutes of `now` and any `v1`
/// entry is the HMAC-SHA256 under `secret` (compared in constant time).
/// Receivers in other languages use their Standard Webhooks library (see
/// [`HttpConfig::signing_secret`](super::HttpConfig::signing_secret)).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use wheel_durable::http::{verify_signature, SignatureError};
///
/// let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// let (id, timestamp) = ("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330");
/// let signature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
/// let body = br#"{"test": 2432232314}"#;
/// let now = UNIX_EPOCH + Duration::from_secs(1_614_265_330 + 60);
///
/// assert_eq!(verify_signature(secret, id, timestamp, signature, body, now), Ok(()));
/// assert_eq!(
///     verify_signature(secret, id, timestamp, signature, b"{}", now),
///     Err(SignatureError::Mismatch)
/// );
/// let an_hour_later = now + Duration::from_secs(3600);
/// assert_eq!(
///     verify_signature(secret, id, timestamp, signature, body, an_hour_later),
///     Err(SignatureError::Expired)
/// );
/// ```
pub fn verify_signature(
    secret: &str,
    id: &str,
    timestamp: &str,
    signature: &str,
    body: &[u8],
    now: SystemTime,
) -> Result<(), SignatureError> {
    let key = parse_secret(secret).map_err(|_| SignatureError::Secret)?;
    // `parse` alone would also take a sign.
    if timestamp.is_empty() || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SignatureError::Timestamp);
    }
    let sent: u64 = timestamp.parse().map_err(|_| SignatureError::Timestamp)?;
    let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if now.abs_diff(sent) > TOLERANCE.as_secs() {
        return Err(SignatureError::Expired);
    }
    let expected = mac(&key, id, timestamp, body);
    let matches = signature.split(' ').any(|entry| {
        let Some(("v1", tag)) = entry.split_once(',') else {
            return false;
        };
        B64.decode(tag)
            .is_ok_and(|tag| expected.clone().verify_slice(&tag).is_ok())
    });
    if matches {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification, also what its
    /// reference Python library signs for these inputs.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: u64 = 1_614_265_330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIGNED: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn secrets_are_whsec_and_standard_base64() {
        assert_eq!(
            parse_secret("whsec_c2VjcmV0LWtleS1mb3Itd2hlZWwtdGVzdHM="),
            Ok(b"secret-key-for-wheel-tests".to_vec())
        );
        // Padding may be left out, as the reference libraries allow.
        assert_eq!(
            parse_secret("whsec_c2VjcmV0LWtleS1mb3Itd2hlZWwtdGVzdHM"),
            Ok(b"secret-key-for-wheel-tests".to_vec())
        );
        assert_eq!(parse_secret("whsec_AA=="), Ok(vec![0]));
        for bad in [
            "c2VjcmV0",         // no prefix
            "WHSEC_c2VjcmV0",   // the prefix is lower-case
            "whsec_",           // no key
            "whsec_c2V*cmV0",   // not base64
            "whsec_c2Vj cmV0",  // a space
            "whsec_c2VjcmV0-_", // the URL-safe alphabet
            "whsec_c",          // a lone character is no byte
        ] {
            assert!(parse_secret(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_signature_matches_the_published_vector() {
        let key = parse_secret(SECRET).unwrap();
        assert_eq!(signature(std::slice::from_ref(&key), ID, TS, BODY), SIGNED);
        // One entry per key, in order, separated by a space.
        let other = parse_secret("whsec_c2VjcmV0LWtleS1mb3Itd2hlZWwtdGVzdHM=").unwrap();
        let both = signature(&[other, key], ID, TS, BODY);
        let entries: Vec<&str> = both.split(' ').collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1], SIGNED);
        assert!(entries[0].starts_with("v1,") && entries[0] != SIGNED);
    }

    #[test]
    fn verification_accepts_only_the_signed_request_in_time() {
        let now = at(TS + 299);
        let ok = |sig: &str| verify_signature(SECRET, ID, "1614265330", sig, BODY, now);
        assert_eq!(ok(SIGNED), Ok(()));
        assert_eq!(ok(&format!("v1,AAAA {SIGNED}")), Ok(()), "any entry");
        assert_eq!(ok(&format!("v2,xyz v1a,b {SIGNED}")), Ok(()));
        assert_eq!(ok("v1,AAAA"), Err(SignatureError::Mismatch));
        assert_eq!(
            ok(&SIGNED.replace("v1,", "v2,")),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(ok(""), Err(SignatureError::Mismatch));
        assert_eq!(ok("v1,not base64!"), Err(SignatureError::Mismatch));
        let check = |secret: &str, id: &str, ts: &str, body: &[u8], now: SystemTime| {
            verify_signature(secret, id, ts, SIGNED, body, now)
        };
        let ts = "1614265330";
        assert_eq!(
            check(SECRET, ID, ts, b"{}", now),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            check(SECRET, "msg_x", ts, BODY, now),
            Err(SignatureError::Mismatch)
        );
        let other = "whsec_c2VjcmV0LWtleS1mb3Itd2hlZWwtdGVzdHM=";
        assert_eq!(
            check(other, ID, ts, BODY, now),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            check("secret", ID, ts, BODY, now),
            Err(SignatureError::Secret)
        );
        for bad in ["", "+1614265330", "1614265330.0", "x"] {
            assert_eq!(
                check(SECRET, ID, bad, BODY, now),
                Err(SignatureError::Timestamp)
            );
        }
        // The timestamp is signed: a moved one does not verify.
        assert_eq!(
            check(SECRET, ID, "1614265331", BODY, now),
            Err(SignatureError::Mismatch)
        );
        for late in [at(TS + 301), at(TS - 301), at(0)] {
            assert_eq!(
                check(SECRET, ID, ts, BODY, late),
                Err(SignatureError::Expired)
            );
        }
        assert_eq!(check(SECRET, ID, ts, BODY, at(TS - 300)), Ok(()));
    }

    #[test]
    fn ids_name_the_namespace_key_and_first_fence() {
        let id = webhook_id("wheel", "order:17", 5);
        assert_eq!(id.len(), 4 + 32);
        assert!(id.starts_with("msg_"));
        assert!(
            id[4..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_eq!(id, webhook_id("wheel", "order:17", 5));
        assert_ne!(id, webhook_id("wheel", "order:17", 6));
        assert_ne!(id, webhook_id("wheel", "order:18", 5));
        assert_ne!(id, webhook_id("other", "order:17", 5));
        // The lengths keep the parts apart.
        assert_ne!(webhook_id("ab", "c", 1), webhook_id("a", "bc", 1));
        // SHA-256 of the framed input (lengths as u64 little-endian, the
        // fence too), computed independently with Python's hashlib.
        assert_eq!(id, "msg_d9b2677d524c9c2f000d3dcc79d6b581");
    }
}
