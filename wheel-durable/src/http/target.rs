//! [`callback_target`]: where a callback's request goes, read as the
//! node's HTTP client reads the URL when it sends it.
//!
//! The client builds its request from the `http` crate's `Uri` and sends
//! it to the `url` crate's WHATWG reading of that `Uri`'s text, which
//! turns every spelling of an IPv4 address it accepts into the address
//! (`127.0.0.1.`, `0x7f.1`, `2130706433`, `0177.0.0.1`, `127.1`) and
//! lower-cases and IDNA-maps names. The private-target guard
//! ([`guard`](super::guard)) judges that reading, and so does the server
//! when a timer is added, so no spelling is judged as one thing and
//! connected to as another.
//!
//! Node state: none (pure functions).

use std::fmt;
use std::net::IpAddr;

use http::Uri;
use url::{Host, Url};

use super::address::is_public_address;
use super::{HttpCallback, Method};
use crate::DurableError;

/// The host a callback's request connects to, as the client reads it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TargetHost {
    /// An IP address: the client connects to it without a lookup.
    Ip(IpAddr),
    /// A name, lower-case and IDNA-mapped as the resolver is asked for it
    /// (a trailing dot is kept: `localhost.` is not `localhost` to DNS).
    Name(String),
}

impl TargetHost {
    /// Whether the guard refuses this host without asking DNS: an address
    /// that is not public ([`is_public_address`]), or `localhost` or a name
    /// under it, in any case, with or without the trailing dot (RFC 6761
    /// keeps them for loopback; a resolver may not know the dotted form, or
    /// may answer it from elsewhere). Any other name is judged by the
    /// addresses it resolves to.
    pub fn refused_without_lookup(&self) -> bool {
        match self {
            TargetHost::Ip(ip) => !is_public_address(*ip),
            TargetHost::Name(name) => is_localhost(name),
        }
    }
}

impl fmt::Display for TargetHost {
    /// The host as the URL holds it after the client's normalisation: an
    /// IPv6 address in brackets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetHost::Ip(IpAddr::V6(v6)) => write!(f, "[{v6}]"),
            TargetHost::Ip(IpAddr::V4(v4)) => write!(f, "{v4}"),
            TargetHost::Name(name) => f.write_str(name),
        }
    }
}

/// Where a callback's request goes: its host as the client connects to it,
/// and the port (the scheme's default when the URL names none).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// The host, normalised as the client normalises it.
    pub host: TargetHost,
    /// The port connected to.
    pub port: u16,
}

/// The target of the callback URL `url`, read as the node's client reads
/// it when it sends the callback: first as the `http` crate's `Uri` the
/// request is built with (the checks of
/// [`HttpCallback::to_payload`]), then by the client's WHATWG URL parser,
/// which turns every spelling of an IPv4 address (`127.0.0.1.`, `0x7f.1`,
/// `2130706433`, `0177.0.0.1`, `127.1`, ...) into the address it connects
/// to, and lower-cases and IDNA-maps names. The server's check at add time
/// and the node's at send time both judge this host, so they cannot
/// disagree on what a URL targets.
///
/// # Errors
///
/// [`DurableError::InvalidUrl`] when the URL is not one a callback may
/// have: not absolute `http`/`https` with a host, or one the client's
/// parser refuses (an IPv4 form out of range, like `0x100000000`).
///
/// # Examples
///
/// ```
/// use std::net::IpAddr;
/// use wheel_durable::http::{callback_target, TargetHost};
///
/// let t = callback_target("http://0x7f.1.:8080/x")?;
/// assert_eq!(t.host, TargetHost::Ip(IpAddr::from([127, 0, 0, 1])));
/// assert_eq!(t.port, 8080);
/// assert!(t.host.refused_without_lookup());
///
/// let t = callback_target("https://Shop.Example./orders")?;
/// assert_eq!(t.host, TargetHost::Name("shop.example.".into()));
/// assert_eq!(t.port, 443);
/// assert!(!t.host.refused_without_lookup());
///
/// assert!(callback_target("http://LOCALHOST./")?.host.refused_without_lookup());
/// assert!(callback_target("http://0x100000000/").is_err());
/// # Ok::<(), wheel_durable::DurableError>(())
/// ```
pub fn callback_target(url: &str) -> Result<Target, DurableError> {
    let uri = HttpCallback::new(Method::Get, url).uri()?;
    let bad = |why: &str| DurableError::InvalidUrl(format!("{url:?}: {why}"));
    let sent = sent_url(&uri).map_err(|e| bad(&e))?;
    target_of(&sent).ok_or_else(|| bad("no host"))
}

/// The URL the client sends a request built with `uri` to: the client
/// turns the `Uri` into a `Url` through its text, exactly so.
pub(crate) fn sent_url(uri: &Uri) -> Result<Url, String> {
    Url::parse(&uri.to_string()).map_err(|e| e.to_string())
}

/// The target of a URL the client will send to; `None` for a URL with no
/// host or port (never an `http`/`https` one).
pub(crate) fn target_of(url: &Url) -> Option<Target> {
    let host = match url.host()? {
        Host::Ipv4(v4) => TargetHost::Ip(IpAddr::V4(v4)),
        Host::Ipv6(v6) => TargetHost::Ip(IpAddr::V6(v6)),
        Host::Domain(name) => TargetHost::Name(name.to_owned()),
    };
    let port = url.port_or_known_default()?;
    Some(Target { host, port })
}

/// Whether `name` is `localhost` or a name under it, with or without the
/// trailing dot, in any case.
pub(super) fn is_localhost(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Target {
        callback_target(url).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    fn ip(s: &str) -> TargetHost {
        TargetHost::Ip(s.parse().unwrap())
    }

    #[test]
    fn every_spelling_of_an_address_is_read_as_the_address_connected_to() {
        for (url, host) in [
            ("http://127.0.0.1./", "127.0.0.1"),
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://0x7f.1./", "127.0.0.1"),
            ("http://0X7F.0.0.1/", "127.0.0.1"),
            ("http://2130706433/", "127.0.0.1"),
            ("http://2130706433./", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://127.1/", "127.0.0.1"),
            ("http://0/", "0.0.0.0"),
            ("http://0x/", "0.0.0.0"),
            ("http://4294967295/", "255.255.255.255"),
            ("http://0xa9.254.43518/", "169.254.169.254"),
            ("http://[::ffff:127.0.0.1]/", "::ffff:7f00:1"),
            ("http://[::ffff:7f00:1]/", "::ffff:7f00:1"),
            ("http://[::127.0.0.1]/", "::7f00:1"),
            ("http://[64:ff9b::7f00:1]/", "64:ff9b::7f00:1"),
            ("http://[::1]/", "::1"),
            ("http://[0:0::1]/", "::1"),
        ] {
            let t = target(url);
            assert_eq!(t.host, ip(host), "{url}");
            assert!(t.host.refused_without_lookup(), "{url}");
        }
        for (url, host) in [
            ("http://8.8.8.8./", "8.8.8.8"),
            ("http://0x08080808/", "8.8.8.8"),
            ("http://134744072/", "8.8.8.8"),
            ("http://[2606:4700:4700::1111]/", "2606:4700:4700::1111"),
        ] {
            let t = target(url);
            assert_eq!(t.host, ip(host), "{url}");
            assert!(!t.host.refused_without_lookup(), "{url}");
        }
    }

    #[test]
    fn names_are_normalised_and_localhost_names_are_refused() {
        for url in [
            "http://localhost/",
            "http://localhost./",
            "http://LOCALHOST/",
            "http://LocalHost.:8080/",
            "http://a.localhost/",
            "http://A.B.LOCALHOST./",
        ] {
            let t = target(url);
            assert!(matches!(t.host, TargetHost::Name(_)), "{url}");
            assert!(t.host.refused_without_lookup(), "{url}");
        }
        for (url, name) in [
            ("https://Shop.Example./x", "shop.example."),
            ("http://localhost.example/", "localhost.example"),
            ("http://notlocalhost/", "notlocalhost"),
            ("http://127.0.0.1.example/", "127.0.0.1.example"),
        ] {
            let t = target(url);
            assert_eq!(t.host, TargetHost::Name(name.into()), "{url}");
            assert!(!t.host.refused_without_lookup(), "{url}");
        }
    }

    #[test]
    fn ports_are_the_urls_or_the_schemes() {
        assert_eq!(target("http://127.0.0.1.:8080/").port, 8080);
        assert_eq!(target("http://a.example/").port, 80);
        assert_eq!(target("https://a.example/").port, 443);
        assert_eq!(target("HTTPS://a.example:80/").port, 80);
        assert_eq!(target("http://[::1]:9/").port, 9);
    }

    #[test]
    fn urls_the_client_would_not_parse_are_invalid() {
        for url in [
            "http://0x100000000/",
            "http://4294967296/",
            "http://256.0.0.1/",
            "http://1.2.3.4.5/",
            "http://foo.0x7f/",
            "http://[::1/",
            // The `Uri` takes no percent-encoded host, which the client's
            // parser would decode to 127.0.0.1.
            "http://%31%32%37.0.0.1/",
            "ftp://a.example/",
            "http:///x",
        ] {
            assert!(
                matches!(callback_target(url), Err(DurableError::InvalidUrl(_))),
                "{url}: {:?}",
                callback_target(url)
            );
        }
    }

    #[test]
    fn the_target_is_that_of_the_request_the_client_sends() {
        for url in [
            "http://127.0.0.1.:9/x",
            "http://0x7f.1/",
            "http://2130706433./",
            "http://[::ffff:127.0.0.1]/",
            "http://LOCALHOST./",
            "https://Shop.Example/a?b=1",
        ] {
            let uri: Uri = url.parse().unwrap();
            let request = http::Request::builder().uri(uri).body("").unwrap();
            let request = reqwest::Request::try_from(request).unwrap();
            assert_eq!(target_of(request.url()), Some(target(url)), "{url}");
        }
    }
}
