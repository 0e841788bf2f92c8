//! The payload of a callback timer: an [`HttpCallback`] in bytes.
//!
//! Layout: the [`MAGIC`] prefix (whose last byte is the layout's version),
//! the method's code (u8, its index in [`Method::ALL`]), the URL, the
//! number of headers (u32), each header's name then value, and the body to
//! the end. Each string is its length (u32) then its UTF-8 bytes. Integers
//! are little-endian. A payload without the prefix is not a callback; one
//! with the prefix that does not parse to the end is damaged, and is never
//! sent.

use super::{HttpCallback, Method};

/// Starts every callback payload. The NUL first byte keeps text payloads
/// from ever matching; the last byte is the layout's version.
pub(crate) const MAGIC: &[u8; 12] = b"\0wheel:http\x01";

/// Whether `payload` claims to be a callback (it may still be damaged).
pub(crate) fn is_callback(payload: &[u8]) -> bool {
    payload.starts_with(MAGIC)
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
    let mut out = Vec::with_capacity(MAGIC.len() + 9 + cb.url.len() + strings + cb.body.len());
    out.extend_from_slice(MAGIC);
    out.push(method_code(cb.method));
    put_str(&mut out, &cb.url);
    let count = u32::try_from(cb.headers.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_le_bytes());
    for (name, value) in &cb.headers {
        put_str(&mut out, name);
        put_str(&mut out, value);
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

    fn string(&mut self) -> Option<String> {
        let len = usize::try_from(self.u32()?).ok()?;
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
}

/// The callback in `payload`, or `None` when it is not one or is damaged.
pub(crate) fn decode(payload: &[u8]) -> Option<HttpCallback> {
    let mut r = Reader {
        rest: payload.strip_prefix(MAGIC)?,
    };
    let method = *Method::ALL.get(usize::from(r.take(1)?[0]))?;
    let url = r.string()?;
    let count = r.u32()?;
    // A damaged count cannot make us reserve more than the bytes present.
    let mut headers = Vec::with_capacity((count as usize).min(r.rest.len() / 8));
    for _ in 0..count {
        headers.push((r.string()?, r.string()?));
    }
    Some(HttpCallback {
        method,
        url,
        headers,
        body: r.rest.to_vec(),
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
    fn codes_follow_the_order_of_all() {
        for (i, m) in Method::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(method_code(m)), i);
        }
    }

    #[test]
    fn payloads_without_the_prefix_are_not_callbacks() {
        for p in [&b""[..], b"close", b"\0wheel:http", b"\0wheel:http\x02rest"] {
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
}
