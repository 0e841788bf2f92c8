//! The private-target guard: which hosts count as public, and the DNS
//! resolver that keeps a node from calling any other.
//!
//! The guard judges a callback's host as the client will connect to it:
//! [`callback_target`](super::callback_target) reads the URL with the client's own parser (the
//! `url` crate's WHATWG parser, which reads `127.0.0.1.`, `0x7f.1`,
//! `2130706433`, `0177.0.0.1` and `127.1` as the address 127.0.0.1), so a
//! spelling the client takes for an address is judged as that address,
//! never as a name. With
//! [`HttpConfig::allow_private_targets`](super::HttpConfig::allow_private_targets)
//! off, a callback's target is checked twice, where each check cannot be
//! got around: a host that is an address, or a name under `localhost`, is
//! checked before anything is sent (the client connects to an address
//! without resolving it), and every other name is resolved by
//! [`PublicOnly`], which drops the addresses that are not public from the
//! answer before the client sees it. The addresses checked are the ones
//! connected to, so a name whose answer changes between a check and the
//! connection (DNS rebinding) gains nothing. A target left with no address
//! is refused with [`RefusedTarget`], which the sender recognises in the
//! error's causes.
//!
//! Invariant: [`is_public_address`] is false for every address of the
//! non-public ranges listed on it, and for the IPv4-mapped, NAT64 and 6to4
//! forms of a non-public IPv4 address; [`TargetHost::refused_without_lookup`]
//! is true for every spelling of such an address that the client accepts.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::Url;

use super::target::{is_localhost, target_of, TargetHost};

/// IPv4 ranges that are not public: (first address, prefix length).
const V4_NOT_PUBLIC: [([u8; 4], u32); 15] = [
    ([0, 0, 0, 0], 8),       // "this network", 0.0.0.0 included
    ([10, 0, 0, 0], 8),      // private (RFC 1918)
    ([100, 64, 0, 0], 10),   // carrier-grade NAT (RFC 6598)
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local, cloud metadata at 169.254.169.254
    ([172, 16, 0, 0], 12),   // private (RFC 1918)
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast, deprecated
    ([192, 168, 0, 0], 16),  // private (RFC 1918)
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
    ([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, 255.255.255.255 (broadcast) included
];

/// IPv6 ranges that are not public, apart from those that embed an IPv4
/// address (see [`embedded_v4`]): (first address, prefix length).
const V6_NOT_PUBLIC: [(u128, u32); 9] = [
    // Reserved by the IETF: `::`, `::1`, the IPv4-compatible and
    // IPv4-translated forms, local-use NAT64 (the mapped and NAT64 forms
    // are read for their IPv4 address before this table).
    (0, 8),
    (0x0100 << 112, 64),     // discard-only
    (0x2001 << 112, 32),     // Teredo: a tunnel whose far end is hidden
    (0x2001_0db8 << 96, 32), // documentation
    (0x3fff << 112, 20),     // documentation
    (0xfc00 << 112, 7),      // unique local, fd00:ec2::254 (cloud metadata) included
    (0xfe80 << 112, 10),     // link-local
    (0xfec0 << 112, 10),     // site-local, deprecated
    (0xff00 << 112, 8),      // multicast
];

fn in_v4(ip: u32, (first, len): ([u8; 4], u32)) -> bool {
    let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
    ip & mask == u32::from_be_bytes(first) & mask
}

fn in_v6(ip: u128, (first, len): (u128, u32)) -> bool {
    let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
    ip & mask == first & mask
}

/// The IPv4 address an IPv6 address stands for, in the forms that carry
/// one to an IPv4 host: IPv4-mapped (`::ffff:a.b.c.d`), NAT64
/// (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::/48`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(ip);
    let low = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if in_v6(bits, (0xffff << 32, 96)) || in_v6(bits, (0x0064_ff9b << 96, 96)) {
        return Some(low);
    }
    if in_v6(bits, (0x2002 << 112, 16)) {
        return Some(Ipv4Addr::from((bits >> 80) as u32));
    }
    None
}

/// Whether `ip` is a public unicast address: one a callback may reach
/// with [`HttpConfig::allow_private_targets`](super::HttpConfig::allow_private_targets)
/// off.
///
/// Not public: loopback (127.0.0.0/8, `::1`), unspecified (0.0.0.0/8,
/// `::`), private (10/8, 172.16/12, 192.168/16), carrier-grade NAT
/// (100.64/10), link-local (169.254/16, where cloud metadata lives at
/// 169.254.169.254, and `fe80::/10`), unique local (`fc00::/7`, which
/// holds the IPv6 metadata address `fd00:ec2::254`), multicast (224/4,
/// `ff00::/8`), broadcast and reserved (240/4), documentation (192.0.2/24,
/// 198.51.100/24, 203.0.113/24, `2001:db8::/32`, `3fff::/20`),
/// benchmarking (198.18/15), IETF protocol assignments (192.0.0/24),
/// IPv6 reserved by the IETF (`::/8`: the IPv4-compatible and
/// IPv4-translated forms, local-use NAT64 `64:ff9b:1::/48`), site-local
/// (`fec0::/10`), discard-only (`100::/64`) and Teredo (`2001::/32`); and
/// an IPv4-mapped (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) or 6to4
/// (`2002:aabb:ccdd::`) address whose IPv4 address is not public.
///
/// # Examples
///
/// ```
/// use std::net::IpAddr;
/// use wheel_durable::http::is_public_address;
///
/// let ip = |s: &str| s.parse::<IpAddr>().unwrap();
/// assert!(is_public_address(ip("93.184.215.14")));
/// assert!(is_public_address(ip("2606:2800:21f:cb07:6820:80da:af6b:8b2c")));
/// assert!(!is_public_address(ip("127.0.0.1")));
/// assert!(!is_public_address(ip("169.254.169.254")));
/// assert!(!is_public_address(ip("::ffff:10.0.0.1")));
/// assert!(!is_public_address(ip("fd00:ec2::254")));
/// ```
pub fn is_public_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            !V4_NOT_PUBLIC.iter().any(|&range| in_v4(bits, range))
        }
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_public_address(IpAddr::V4(v4)),
            None => {
                let bits = u128::from(v6);
                !V6_NOT_PUBLIC.iter().any(|&range| in_v6(bits, range))
            }
        },
    }
}

/// The refusal of the URL `url` the client is about to send to, when the
/// guard refuses its host without a lookup (see
/// [`TargetHost::refused_without_lookup`]); a URL without a host is
/// refused too, as nothing could be judged.
pub(crate) fn refused_before_lookup(url: &Url) -> Option<RefusedTarget> {
    let Some(target) = target_of(url) else {
        return Some(RefusedTarget {
            host: url.as_str().to_owned(),
            addrs: Vec::new(),
        });
    };
    if !target.host.refused_without_lookup() {
        return None;
    }
    let addrs = match target.host {
        TargetHost::Ip(ip) => vec![ip],
        TargetHost::Name(_) => Vec::new(),
    };
    Some(RefusedTarget {
        host: target.host.to_string(),
        addrs,
    })
}

/// A target the guard refused: its host, and the addresses it had (none
/// public).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RefusedTarget {
    pub(crate) host: String,
    pub(crate) addrs: Vec<IpAddr>,
}

impl fmt::Display for RefusedTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused target: {} is ", self.host)?;
        let literal = self
            .host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok();
        match self.addrs.as_slice() {
            [] if is_localhost(&self.host) => f.write_str("a name for loopback")?,
            [] => f.write_str("not an address")?,
            [one] if literal == Some(*one) => f.write_str("not a public address")?,
            addrs => {
                f.write_str("at ")?;
                for (i, a) in addrs.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{a}")?;
                }
                f.write_str(", none of them public")?;
            }
        }
        f.write_str(" (this node calls public addresses only)")
    }
}

impl std::error::Error for RefusedTarget {}

/// Resolves names with the system's resolver (on a blocking thread, as
/// the client's own resolver does) and keeps the public addresses only.
pub(crate) struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            // The sender refuses these before sending; a name the client
            // resolves for any other reason gets the same answer.
            if is_localhost(&host) {
                return Err(Box::new(RefusedTarget {
                    host,
                    addrs: Vec::new(),
                }) as _);
            }
            let lookup = host.clone();
            let found: Vec<SocketAddr> =
                tokio::task::spawn_blocking(move || (lookup.as_str(), 0).to_socket_addrs())
                    .await??
                    .collect();
            let public: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| is_public_address(a.ip()))
                .collect();
            if public.is_empty() {
                let addrs = found.iter().map(SocketAddr::ip).collect();
                return Err(Box::new(RefusedTarget { host, addrs }) as _);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

/// The refusal among an error's causes, if the guard refused.
pub(crate) fn refusal<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a RefusedTarget> {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<RefusedTarget>() {
            return Some(r);
        }
        // An `io::Error` shows its inner error's causes, not the inner
        // error itself: look at that first.
        let inner = c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref());
        if let Some(r) = inner.and_then(|i| i.downcast_ref::<RefusedTarget>()) {
            return Some(r);
        }
        cause = c.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(s: &str) -> bool {
        is_public_address(s.parse().unwrap())
    }

    #[test]
    fn ipv4_ranges_end_where_they_should() {
        // Each pair: the last public address before a range, its first,
        // its last, and the first public address after it.
        for (before, first, last, after) in [
            ("9.255.255.255", "10.0.0.0", "10.255.255.255", "11.0.0.0"),
            (
                "100.63.255.255",
                "100.64.0.0",
                "100.127.255.255",
                "100.128.0.0",
            ),
            (
                "126.255.255.255",
                "127.0.0.0",
                "127.255.255.255",
                "128.0.0.0",
            ),
            (
                "169.253.255.255",
                "169.254.0.0",
                "169.254.255.255",
                "169.255.0.0",
            ),
            (
                "172.15.255.255",
                "172.16.0.0",
                "172.31.255.255",
                "172.32.0.0",
            ),
            (
                "192.167.255.255",
                "192.168.0.0",
                "192.168.255.255",
                "192.169.0.0",
            ),
            (
                "198.17.255.255",
                "198.18.0.0",
                "198.19.255.255",
                "198.20.0.0",
            ),
            ("192.0.1.255", "192.0.2.0", "192.0.2.255", "192.0.3.0"),
            (
                "198.51.99.255",
                "198.51.100.0",
                "198.51.100.255",
                "198.51.101.0",
            ),
            (
                "203.0.112.255",
                "203.0.113.0",
                "203.0.113.255",
                "203.0.114.0",
            ),
        ] {
            assert!(public(before), "{before}");
            assert!(!public(first), "{first}");
            assert!(!public(last), "{last}");
            assert!(public(after), "{after}");
        }
        for not in [
            "0.0.0.0",
            "0.255.255.255",
            "169.254.169.254",
            "192.0.0.8",
            "224.0.0.0",
            "239.255.255.255",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!public(not), "{not}");
        }
        for yes in ["1.1.1.1", "8.8.8.8", "93.184.215.14", "223.255.255.254"] {
            assert!(public(yes), "{yes}");
        }
    }

    #[test]
    fn ipv6_ranges_and_embedded_ipv4_are_classified() {
        for not in [
            "::",
            "::1",
            "::127.0.0.1",
            "::8.8.8.8",
            "::ffff:0:8.8.8.8",
            "::ffff:0:127.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.1.2.3",
            "::ffff:0.0.0.0",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::",
            "100::1",
            "2001::1",
            "2001:db8::1",
            "3fff::1",
            "fc00::",
            "fd00:ec2::254",
            "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "fe80::1",
            "febf:ffff::1",
            "fec0::1",
            "ff02::1",
        ] {
            assert!(!public(not), "{not}");
        }
        for yes in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "fbff:ffff::1",
            "100:0:0:1::1",
            "200::1",
            "2001:1::1",
            "2001:db9::1",
            "3fff:1000::1",
        ] {
            assert!(public(yes), "{yes}");
        }
    }

    #[test]
    fn a_refusal_before_a_lookup_names_the_host_connected_to() {
        let refused = |url: &str| refused_before_lookup(&Url::parse(url).unwrap());
        let r = refused("http://0x7f.1./").unwrap();
        assert_eq!(r.addrs, vec![IpAddr::from([127, 0, 0, 1])]);
        assert_eq!(
            r.to_string(),
            "refused target: 127.0.0.1 is not a public address (this node calls public addresses only)"
        );
        let r = refused("http://[::1]:8/").unwrap();
        assert!(
            r.to_string().contains("[::1] is not a public address"),
            "{r}"
        );
        let r = refused("http://Localhost./").unwrap();
        assert!(
            r.to_string().contains("localhost. is a name for loopback"),
            "{r}"
        );
        assert_eq!(refused("http://8.8.8.8/"), None);
        assert_eq!(refused("http://a.example/"), None);
    }

    #[test]
    fn a_refusal_is_found_among_the_causes_and_says_why() {
        let r = RefusedTarget {
            host: "localhost".into(),
            addrs: vec![
                IpAddr::from([127, 0, 0, 1]),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
            ],
        };
        assert_eq!(
            r.to_string(),
            "refused target: localhost is at 127.0.0.1, ::1, none of them public \
             (this node calls public addresses only)"
        );
        let literal = RefusedTarget {
            host: "10.0.0.1".into(),
            addrs: vec![IpAddr::from([10, 0, 0, 1])],
        };
        assert_eq!(
            literal.to_string(),
            "refused target: 10.0.0.1 is not a public address (this node calls public addresses only)"
        );
        let wrapped = std::io::Error::other(r.clone());
        assert_eq!(refusal(&wrapped), Some(&r));
        assert_eq!(refusal(&std::io::Error::other("other")), None);
    }
}
