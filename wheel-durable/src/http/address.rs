//! Which addresses are public: the one classification that both the
//! reading of a callback's target (`target.rs`) and the guard that judges
//! it (`guard.rs`) use, as pure functions over the address bits.
//!
//! Invariant: [`is_public_address`] is false for every address of the
//! non-public ranges listed on it, and for the IPv4-mapped, NAT64 and 6to4
//! forms of a non-public IPv4 address.
//!
//! Node state: none (pure functions).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
}
