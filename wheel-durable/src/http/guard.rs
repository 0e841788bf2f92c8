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
//! Invariant: [`TargetHost::refused_without_lookup`] is true for every
//! spelling the client accepts of an address that
//! [`is_public_address`](super::is_public_address) calls not public
//! (`address.rs`).
//!
//! Node state: none: the resolver keeps nothing between lookups.

use std::fmt;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::Url;

use super::address::is_public_address;
use super::target::{TargetHost, is_localhost, target_of};

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
                IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
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
