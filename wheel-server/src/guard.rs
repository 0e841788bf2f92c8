//! The guard against server-side request forgery: a callback may not aim
//! at the server's own network unless the operator allows it
//! (`--allow-private-targets`).
//!
//! A callback's host is resolved when the timer is added, and every
//! address it resolves to must be public (see [`is_public`]): a name that
//! resolves to one private address among public ones is refused, since the
//! sender may pick any of them. An IP literal is checked as it is. A name
//! that does not resolve is refused too: the timer could never be sent.
//! DNS can change between adding and sending, so the check at add time is
//! a first line; the sending node checks again where the library offers it.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use axum::http::Uri;

use crate::problem::Problem;

/// Whether `ip` is a public unicast address: not loopback, private,
/// link-local (with the cloud metadata address 169.254.169.254),
/// carrier-grade NAT, unspecified, broadcast, multicast, documentation,
/// benchmarking or reserved, and not an IPv6 form of one of those
/// (mapped, NAT64, unique-local `fc00::/7` with `fd00:ec2::254`).
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let special = ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b)) // benchmarking 198.18/15
        || a >= 240; // reserved
    !special
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let seg = ip.segments();
    // NAT64 (64:ff9b::/96) reaches the embedded IPv4 address.
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [a, b] = seg[6].to_be_bytes();
        let [c, d] = seg[7].to_be_bytes();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    let special = ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (seg[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (seg[0] & 0xffc0) == 0xfec0 // site-local fec0::/10
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        || seg[..5] == [0, 0, 0, 0, 0]; // IPv4-compatible and other ::/80
    !special
}

/// Resolves hosts for the checks of one request, once per host and port.
#[derive(Default)]
pub(crate) struct Guard {
    allow_private: bool,
    seen: HashMap<(String, u16), Result<(), String>>,
}

impl Guard {
    /// A guard for one request; with `allow_private`, every target passes.
    pub(crate) fn new(allow_private: bool) -> Guard {
        Guard {
            allow_private,
            seen: HashMap::new(),
        }
    }

    /// Checks the callback URL `url` (already known to parse as an
    /// `http`/`https` URL with a host); `field` names it in the problem.
    pub(crate) async fn check(&mut self, url: &str, field: &str) -> Result<(), Problem> {
        if self.allow_private {
            return Ok(());
        }
        let uri: Uri = url
            .parse()
            .map_err(|e| Problem::invalid(field, format!("{url:?}: {e}")))?;
        let host = uri.host().unwrap_or_default();
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let https = uri
            .scheme_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("https"));
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let key = (host.to_ascii_lowercase(), port);
        if !self.seen.contains_key(&key) {
            let verdict = resolve_public(&key.0, port).await;
            self.seen.insert(key.clone(), verdict);
        }
        match &self.seen[&key] {
            Ok(()) => Ok(()),
            Err(why) => Err(Problem::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "forbidden-target",
                "The callback's target is not allowed",
                why.clone(),
            )
            .at(field)),
        }
    }
}

/// How long resolving one host may take (a resolver that hangs must not
/// hold the request).
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Ok when every address of `host` is public.
async fn resolve_public(host: &str, port: u16) -> Result<(), String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return check_addr(host, ip);
    }
    let lookup = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port)));
    let addrs = lookup
        .await
        .map_err(|_| format!("the host {host:?} did not resolve within {RESOLVE_TIMEOUT:?}"))?
        .map_err(|e| format!("the host {host:?} does not resolve: {e}"))?;
    let mut any = false;
    for addr in addrs {
        any = true;
        check_addr(host, addr.ip())?;
    }
    if !any {
        return Err(format!("the host {host:?} resolves to no address"));
    }
    Ok(())
}

fn check_addr(host: &str, ip: IpAddr) -> Result<(), String> {
    if is_public(ip) {
        Ok(())
    } else {
        Err(format!(
            "{host:?} is (or resolves to) {ip}, a loopback, private, link-local or otherwise non-public address; the server refuses such targets unless started with --allow-private-targets"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(s: &str) -> bool {
        is_public(s.parse().unwrap())
    }

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "127.9.9.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "192.0.0.8",
            "198.18.0.1",
            "192.0.2.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "::127.0.0.1",
            "2001:db8::1",
        ] {
            assert!(!public(ip), "{ip} counted as public");
        }
    }

    #[test]
    fn ordinary_addresses_are_public() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(public(ip), "{ip} counted as private");
        }
    }
}
