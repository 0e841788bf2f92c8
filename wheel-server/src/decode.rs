//! Reading request bodies more strictly than serde's defaults, where a
//! default would accept what no client means or refuse what the API's
//! document allows: objects only ([`object`]), whole numbers also written
//! with a zero fraction ([`Whole`]), and callback URLs of one documented
//! form ([`URL_PATTERN`]).

use std::fmt;
use std::marker::PhantomData;
use std::sync::LazyLock;

use regex::Regex;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// Reads a `T` from a JSON object only. serde's derived structs also take
/// an array of their fields in order (`[null, "2h"]`), which no client
/// means; asking serde_json for a map refuses an array, and the map access
/// passed on is the caller's own, so the field paths of errors inside
/// stay whole. A `deserialize_with` helper for an object-valued field.
pub(crate) fn object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_map(ObjectVisitor(PhantomData))
}

/// [`object`] for an optional field (null or absent is `None`).
pub(crate) fn optional_object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Object<T>>::deserialize(d)?.map(|o| o.0))
}

/// [`object`] for each entry of an array.
pub(crate) fn objects<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Vec::<Object<T>>::deserialize(d)?
        .into_iter()
        .map(|o| o.0)
        .collect())
}

/// A `T` read from a JSON object only (see [`object`]); what a request
/// body is read as.
pub(crate) struct Object<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object(d).map(Object)
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

/// A whole number, as JSON Schema counts one: an integer, or a number
/// with a zero fraction (`48.0`), which some JSON writers make of any
/// number. A fraction, a sign or a value past `u64` is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Whole(pub(crate) u64);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(WholeVisitor)
    }
}

struct WholeVisitor;

/// 2^64: the first `f64` past `u64::MAX`.
const PAST_U64: f64 = 18_446_744_073_709_551_616.0;

impl Visitor<'_> for WholeVisitor {
    type Value = Whole;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a whole number, 0 or more")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Whole, E> {
        Ok(Whole(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Whole, E> {
        u64::try_from(n)
            .map(Whole)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(n), &self))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Whole, E> {
        if n.fract() == 0.0 && (0.0..PAST_U64).contains(&n) {
            // Exact: a whole f64 below 2^64 converts without rounding.
            Ok(Whole(n as u64))
        } else {
            Err(E::invalid_value(de::Unexpected::Float(n), &self))
        }
    }
}

/// The form of a callback URL, as a regular expression that the OpenAPI
/// document states and the server enforces, so the two agree: `http` or
/// `https` (any case), optional user information, a host (a DNS name
/// whose last label starts with a letter or `_`, a dotted-quad IPv4 address or a
/// bracketed IPv6 address), an optional port, and a path and query of URL
/// characters (non-ASCII percent-encoded); no fragment, which is never
/// sent. Every URL of this form is one the node's HTTP client parses as
/// written: the client's parser reads a last label of digits or `0x` as an
/// IPv4 number, and a label starting `xn--` as punycode, either of which
/// may fail, so a name's labels have single hyphens only.
pub(crate) static URL_PATTERN: LazyLock<String> = LazyLock::new(url_pattern);

fn url_pattern() -> String {
    let octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
    let ipv4 = format!("{octet}(?:\\.{octet}){{3}}");
    let h16 = "[0-9A-Fa-f]{1,4}";
    let ls32 = format!("(?:{h16}:{h16}|{ipv4})");
    // RFC 3986's IPv6address: each way of writing eight 16-bit pieces,
    // with `::` standing for one run of zeros.
    let before = |n: usize| match n {
        0 => String::new(),
        n => format!("(?:(?:{h16}:){{0,{}}}{h16})?", n - 1),
    };
    let ipv6 = [
        format!("(?:{h16}:){{6}}{ls32}"),
        format!("::(?:{h16}:){{5}}{ls32}"),
        format!("(?:{h16})?::(?:{h16}:){{4}}{ls32}"),
        format!("{}::(?:{h16}:){{3}}{ls32}", before(2)),
        format!("{}::(?:{h16}:){{2}}{ls32}", before(3)),
        format!("{}::{h16}:{ls32}", before(4)),
        format!("{}::{ls32}", before(5)),
        format!("{}::{h16}", before(6)),
        format!("{}::", before(7)),
    ]
    .join("|");
    // Underscores too: container and service names often have them.
    let label = "[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*";
    let last = "[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*";
    let name = format!("(?:{label}\\.)*{last}\\.?");
    let port =
        "(?::(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?";
    // The hyphen first: anywhere else in a class it would make a range.
    let unreserved = "-A-Za-z0-9._~!$&'()*+,;=%";
    format!(
        "^[hH][tT][tT][pP][sS]?://(?:[{unreserved}:]+@)?(?:{name}|{ipv4}|\\[(?:{ipv6})\\]){port}(?:/[{unreserved}:@/]*)?(?:\\?[{unreserved}:@/?]*)?$"
    )
}

/// Whether `url` has the documented form ([`URL_PATTERN`]).
pub(crate) fn url_has_form(url: &str) -> bool {
    static FORM: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(&URL_PATTERN).expect("the URL pattern compiles"));
    FORM.is_match(url)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use wheel_durable::http::{HttpCallback, Method, callback_target};

    use super::*;

    fn whole(json: &str) -> Result<u64, String> {
        serde_json::from_str::<Whole>(json)
            .map(|w| w.0)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn whole_numbers_are_taken_with_or_without_a_zero_fraction() {
        assert_eq!(whole("48"), Ok(48));
        assert_eq!(whole("48.0"), Ok(48));
        assert_eq!(whole("0"), Ok(0));
        assert_eq!(whole("-0.0"), Ok(0));
        assert_eq!(whole("1e3"), Ok(1000));
        assert_eq!(whole("18446744073709551615"), Ok(u64::MAX));
        for bad in [
            "1.5",
            "-1",
            "-1.0",
            "1e20",
            "18446744073709551616",
            "\"5\"",
            "null",
        ] {
            assert!(whole(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn callback_urls_of_the_usual_shapes_have_the_form() {
        for good in [
            "http://a.example/",
            "https://shop.example/orders/17/close?reason=unpaid&x=%20y",
            "HTTPS://Shop.Example:8443",
            "http://127.0.0.1:9/x",
            "http://[::1]:8080/hook",
            "http://[2001:db8::7]/",
            "http://[::ffff:10.0.0.1]/",
            "https://user:p%40ss@hooks.example/in",
            "http://my-host/",
            "http://web_1:8080/hook",
            "http://a.example./trailing-dot",
            "http://1.2.3.a/",
        ] {
            assert!(url_has_form(good), "{good}");
        }
        for bad in [
            "",
            "ftp://a.example/",
            "http://",
            "http://0*/",
            "http://a.example/#frag",
            "http://a b/",
            "http://a.example/ü",
            "http://xn--a/",
            "http://0x7f.1/",
            "http://2130706433/",
            "http://1.2.3.4.5/",
            "http://256.0.0.1/",
            "http://01.2.3.4/",
            "http://[::1/",
            "http://[1::2::3]/",
            "http://a.example:65536/",
            "http://a.example:/",
            " http://a.example/",
            // A hyphen misplaced in a character class once let this through.
            "HTtp://:/@a",
        ] {
            assert!(!url_has_form(bad), "{bad}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Every URL of the documented form is a URL the library takes and
        /// the node's client reads: what the document allows, the server
        /// accepts.
        #[test]
        fn every_url_of_the_form_is_accepted_by_the_library(
            url in proptest::string::string_regex(
                URL_PATTERN.trim_start_matches('^').trim_end_matches('$'),
            ).unwrap()
        ) {
            prop_assert!(url_has_form(&url), "{}", url);
            let cb = HttpCallback::new(Method::Post, url.clone());
            prop_assert!(cb.to_payload().is_ok(), "{}: {:?}", url, cb.to_payload());
            prop_assert!(callback_target(&url).is_ok(), "{}", url);
        }
    }
}
