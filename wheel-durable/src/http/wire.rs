//! The payload of a callback timer: an [`HttpCallback`] in bytes.
//!
//! Layout: the [`MAGIC`] prefix (whose last byte is the layout's version),
//! the method's code (u8, its index in [`Method::ALL`]), the URL, the
//! number of headers (u32), each header's name then value, in version 2
//! the callback's retry policy, in version 3 a flags byte (1: a policy
//! follows, 2: a flow key follows) then the policy and the flow key as the
//! flags say, and the body to the end. Each string is its
//! length (u32) then its UTF-8 bytes; a duration is its seconds (u64) then
//! its nanoseconds (u32, below one second); a float is its IEEE 754 bits
//! (u64). Integers are little-endian. The policy is its initial wait, its
//! multiplier, its longest wait, its jitter and its attempts (u32).
//!
//! A callback without a policy or a flow key is written in version 1, byte
//! for byte as before policies existed, so nodes that only read version 1
//! still send it; one with a policy and no flow key in version 2; one with
//! a flow key in version 3. All three are read. A payload without a prefix of a known
//! version is not a callback; one with the prefix that does not parse to
//! the end is damaged, and is never sent.
//!
//! Node state: none (pure functions).

use std::time::Duration;

use super::{HttpCallback, Method};
use crate::RetryPolicy;

/// Starts every callback payload without a retry policy. The NUL first
/// byte keeps text payloads from ever matching; the last byte is the
/// layout's version.
pub(crate) const MAGIC: &[u8; 12] = b"\0wheel:http\x01";

/// Starts every callback payload with a retry policy: version 2.
pub(crate) const MAGIC_V2: &[u8; 12] = b"\0wheel:http\x02";

/// Starts every callback payload with a flow key: version 3.
pub(crate) const MAGIC_V3: &[u8; 12] = b"\0wheel:http\x03";

/// Version 3's flags: a policy follows.
const HAS_POLICY: u8 = 1;

/// Version 3's flags: a flow key follows.
const HAS_FLOW: u8 = 2;

/// The bytes of an encoded policy: two durations, two floats, a u32.
const POLICY_LEN: usize = 2 * 12 + 2 * 8 + 4;

/// Whether `payload` claims to be a callback (it may still be damaged).
pub(crate) fn is_callback(payload: &[u8]) -> bool {
    payload.starts_with(MAGIC) || payload.starts_with(MAGIC_V2) || payload.starts_with(MAGIC_V3)
}

fn put_duration(out: &mut Vec<u8>, d: Duration) {
    out.extend_from_slice(&d.as_secs().to_le_bytes());
    out.extend_from_slice(&d.subsec_nanos().to_le_bytes());
}

fn put_policy(out: &mut Vec<u8>, policy: &RetryPolicy) {
    let (initial, multiplier, max_delay, jitter, attempts) = policy.parts();
    put_duration(out, initial);
    out.extend_from_slice(&multiplier.to_bits().to_le_bytes());
    put_duration(out, max_delay);
    out.extend_from_slice(&jitter.to_bits().to_le_bytes());
    out.extend_from_slice(&attempts.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    // Lengths fit: the whole payload is bounded by the store's limit,
    // checked after encoding, and a string over 4 GiB cannot pass it.
    let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// The payload of `cb`.
pub(crate) fn encode(cb: &HttpCallback) -> Vec<u8> {
    let strings: usize = cb.headers.iter().map(|(n, v)| 8 + n.len() + v.len()).sum();
    let policy = if cb.retry.is_some() { POLICY_LEN } else { 0 };
    let flow = cb.flow.as_ref().map_or(0, |f| 5 + f.len());
    let mut out = Vec::with_capacity(
        MAGIC.len() + 9 + cb.url.len() + strings + policy + flow + cb.body.len(),
    );
    out.extend_from_slice(match (&cb.retry, &cb.flow) {
        (None, None) => MAGIC,
        (Some(_), None) => MAGIC_V2,
        (_, Some(_)) => MAGIC_V3,
    });
    out.push(method_code(cb.method));
    put_str(&mut out, &cb.url);
    let count = u32::try_from(cb.headers.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_le_bytes());
    for (name, value) in &cb.headers {
        put_str(&mut out, name);
        put_str(&mut out, value);
    }
    if cb.flow.is_some() {
        let policy = if cb.retry.is_some() { HAS_POLICY } else { 0 };
        out.push(policy | HAS_FLOW);
    }
    if let Some(p) = &cb.retry {
        put_policy(&mut out, p);
    }
    if let Some(flow) = &cb.flow {
        put_str(&mut out, flow);
    }
    out.extend_from_slice(&cb.body);
    out
}

/// The method's code in a stored callback: its place in the declaration,
/// which is the order of [`Method::ALL`].
fn method_code(m: Method) -> u8 {
    m as u8
}

/// Reads a payload front to back; every read is bounds-checked.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.rest.len() {
            return None;
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        let mut b = [0; 4];
        b.copy_from_slice(self.take(4)?);
        Some(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Option<u64> {
        let mut b = [0; 8];
        b.copy_from_slice(self.take(8)?);
        Some(u64::from_le_bytes(b))
    }

    fn string(&mut self) -> Option<String> {
        let len = usize::try_from(self.u32()?).ok()?;
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }

    /// A duration; nanoseconds of a second or more are damage.
    fn duration(&mut self) -> Option<Duration> {
        let secs = self.u64()?;
        let nanos = self.u32()?;
        (nanos < 1_000_000_000).then(|| Duration::new(secs, nanos))
    }

    fn policy(&mut self) -> Option<RetryPolicy> {
        let initial = self.duration()?;
        let multiplier = f64::from_bits(self.u64()?);
        let max_delay = self.duration()?;
        let jitter = f64::from_bits(self.u64()?);
        let attempts = self.u32()?;
        Some(RetryPolicy::from_parts((
            initial, multiplier, max_delay, jitter, attempts,
        )))
    }
}

/// The callback in `payload`, or `None` when it is not one or is damaged.
pub(crate) fn decode(payload: &[u8]) -> Option<HttpCallback> {
    let (rest, version) = if let Some(rest) = payload.strip_prefix(MAGIC) {
        (rest, 1)
    } else if let Some(rest) = payload.strip_prefix(MAGIC_V2) {
        (rest, 2)
    } else {
        (payload.strip_prefix(MAGIC_V3)?, 3)
    };
    let mut r = Reader { rest };
    let method = *Method::ALL.get(usize::from(r.take(1)?[0]))?;
    let url = r.string()?;
    let count = r.u32()?;
    // A damaged count cannot make us reserve more than the bytes present.
    let mut headers = Vec::with_capacity((count as usize).min(r.rest.len() / 8));
    for _ in 0..count {
        headers.push((r.string()?, r.string()?));
    }
    let flags = match version {
        1 => 0,
        2 => HAS_POLICY,
        // An unknown flag is damage, not something to skip.
        _ => Some(r.take(1)?[0]).filter(|f| f & !(HAS_POLICY | HAS_FLOW) == 0)?,
    };
    let retry = if flags & HAS_POLICY != 0 {
        Some(r.policy()?)
    } else {
        None
    };
    let flow = if flags & HAS_FLOW != 0 {
        Some(r.string()?)
    } else {
        None
    };
    Some(HttpCallback {
        method,
        url,
        headers,
        body: r.rest.to_vec(),
        retry,
        flow,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> HttpCallback {
        HttpCallback::new(Method::Delete, "https://a.example/ü?x=1")
            .header("X-One", "1")
            .header("X-Empty", "")
            .body(b"\0\xffbody".to_vec())
    }

    #[test]
    fn callbacks_round_trip() {
        for m in Method::ALL {
            let mut cb = sample();
            cb.method = m;
            assert_eq!(decode(&encode(&cb)), Some(cb));
        }
        let bare = HttpCallback::new(Method::Get, "");
        let bytes = encode(&bare);
        assert_eq!(bytes.len(), MAGIC.len() + 1 + 4 + 4);
        assert_eq!(decode(&bytes), Some(bare));
    }

    #[test]
    fn a_flow_key_is_written_in_version_3_with_or_without_a_policy() {
        let flowed = sample().flow("shop");
        let bytes = encode(&flowed);
        assert!(bytes.starts_with(MAGIC_V3));
        assert_eq!(decode(&bytes), Some(flowed.clone()));
        let both = flowed.retry(RetryPolicy::new().max_attempts(3));
        assert_eq!(decode(&encode(&both)), Some(both.clone()));
        // The flags byte follows the headers: an unknown flag is damage.
        let mut bad = encode(&HttpCallback::new(Method::Get, "http://a/").flow("f"));
        let flags_at = MAGIC_V3.len() + 1 + 4 + "http://a/".len() + 4;
        assert_eq!(bad[flags_at], HAS_FLOW);
        bad[flags_at] |= 4;
        assert_eq!(decode(&bad), None);
        assert!(
            encode(&sample()).starts_with(MAGIC),
            "no flow key, no policy: version 1"
        );
    }

    #[test]
    fn codes_follow_the_order_of_all() {
        for (i, m) in Method::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(method_code(m)), i);
        }
    }

    #[test]
    fn payloads_without_the_prefix_are_not_callbacks() {
        for p in [&b""[..], b"close", b"\0wheel:http", b"\0wheel:http\x04rest"] {
            assert!(!is_callback(p), "{p:?}");
            assert_eq!(decode(p), None, "{p:?}");
        }
    }

    #[test]
    fn every_truncation_and_bad_field_is_refused() {
        let bytes = encode(&sample());
        let body_at = bytes.len() - sample().body.len();
        for cut in MAGIC.len()..body_at {
            assert!(is_callback(&bytes[..cut]));
            assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut bad_method = bytes.clone();
        bad_method[MAGIC.len()] = 5;
        assert_eq!(decode(&bad_method), None);
        let mut huge_count = encode(&HttpCallback::new(Method::Get, "u"));
        let at = huge_count.len() - 4;
        huge_count[at..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&huge_count), None);
        let mut not_utf8 = encode(&HttpCallback::new(Method::Get, "u"));
        not_utf8[MAGIC.len() + 5] = 0xff;
        assert_eq!(decode(&not_utf8), None);
    }

    fn with_policy() -> HttpCallback {
        sample().retry(
            RetryPolicy::new()
                .initial(Duration::new(1, 500))
                .multiplier(1.25)
                .max_delay(Duration::from_secs(600))
                .jitter(0.3)
                .max_attempts(4),
        )
    }

    #[test]
    fn callbacks_with_a_policy_round_trip_in_version_2() {
        let cb = with_policy();
        let bytes = encode(&cb);
        assert!(bytes.starts_with(MAGIC_V2) && is_callback(&bytes));
        assert_eq!(bytes.len(), encode(&sample()).len() + POLICY_LEN);
        assert_eq!(decode(&bytes), Some(cb));
    }

    #[test]
    fn version_1_payloads_decode_without_a_policy() {
        // A payload written before policies existed, spelled out by hand:
        // GET, the URL "u", one header, body "b".
        let mut old = MAGIC.to_vec();
        old.push(0);
        old.extend_from_slice(&1u32.to_le_bytes());
        old.extend_from_slice(b"u");
        old.extend_from_slice(&1u32.to_le_bytes());
        for s in ["X-A", "1"] {
            old.extend_from_slice(&u32::try_from(s.len()).unwrap().to_le_bytes());
            old.extend_from_slice(s.as_bytes());
        }
        old.push(b'b');
        let cb = HttpCallback::new(Method::Get, "u")
            .header("X-A", "1")
            .body(b"b".to_vec());
        assert_eq!(decode(&old), Some(cb.clone()));
        assert_eq!(cb.retry, None);
        assert_eq!(encode(&cb), old, "no policy: still written as version 1");
    }

    proptest::proptest! {
        #[test]
        fn any_policy_round_trips_and_any_bytes_decode_without_a_panic(
            ms in proptest::prelude::any::<u64>(),
            multiplier in proptest::prelude::any::<f64>(),
            jitter in proptest::prelude::any::<f64>(),
            attempts in proptest::prelude::any::<u32>(),
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            let policy = RetryPolicy::new()
                .initial(Duration::from_millis(ms))
                .multiplier(multiplier)
                .max_delay(Duration::from_nanos(ms))
                .jitter(jitter)
                .max_attempts(attempts);
            let cb = HttpCallback::new(Method::Put, "http://a.example/").retry(policy);
            proptest::prop_assert_eq!(decode(&encode(&cb)), Some(cb));
            for magic in [MAGIC, MAGIC_V2] {
                let mut bytes = magic.to_vec();
                bytes.extend_from_slice(&tail);
                let _ = decode(&bytes);
            }
        }
    }

    #[test]
    fn a_damaged_policy_is_refused() {
        let bytes = encode(&with_policy());
        let policy_at = bytes.len() - sample().body.len() - POLICY_LEN;
        for cut in policy_at..policy_at + POLICY_LEN {
            assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
        }
        // The initial wait's nanoseconds: a full second is not a fraction.
        let mut bad_nanos = bytes.clone();
        bad_nanos[policy_at + 8..policy_at + 12].copy_from_slice(&1_000_000_000u32.to_le_bytes());
        assert_eq!(decode(&bad_nanos), None);
        // Floats out of range are clamped as the builder clamps them.
        let mut nan = bytes;
        nan[policy_at + 12..policy_at + 20].copy_from_slice(&f64::NAN.to_bits().to_le_bytes());
        let read = decode(&nan).unwrap().retry.unwrap();
        assert_eq!(read.parts().1, 1.0);
    }
}
