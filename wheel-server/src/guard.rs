//! The guard against server-side request forgery: a callback may not aim
//! at the server's own network unless the operator allows it
//! (`--allow-private-targets`).
//!
//! A callback's host is resolved when the timer is added, and every
//! address it resolves to must be public (the library's
//! `is_public_address`: not loopback, private, link-local with the cloud
//! metadata addresses, carrier-grade NAT, unspecified, ...): a name that
//! resolves to one private address among public ones is refused, since the
//! sender may pick any of them. An IP literal is checked as it is. A name
//! that does not resolve is refused too: the timer could never be sent.
//! DNS can change between adding and sending, so the check at add time is
//! a first line: the node checks again when it sends
//! (`HttpConfig::allow_private_targets(false)`), and a callback refused
//! then becomes a dead letter.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use axum::http::Uri;
use wheel::durable::http::is_public_address;

use crate::problem::Problem;

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
        let verdict = match self.seen.get(&key) {
            Some(v) => v.clone(),
            None => {
                let v = resolve_public(&key.0, port).await;
                self.seen.insert(key, v.clone());
                v
            }
        };
        match verdict {
            Ok(()) => Ok(()),
            Err(why) => Err(Problem::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "forbidden-target",
                "The callback's target is not allowed",
                why,
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
    if is_public_address(ip) {
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

    #[tokio::test]
    async fn literals_and_names_of_the_own_network_are_refused() {
        for url in [
            "http://127.0.0.1:8080/x",
            "http://169.254.169.254/latest",
            "http://[fd00:ec2::254]/x",
            "http://[::ffff:10.0.0.1]/x",
            "http://localhost/x",
        ] {
            let p = Guard::new(false)
                .check(url, "callback.url")
                .await
                .unwrap_err();
            assert_eq!(p.field.as_deref(), Some("callback.url"), "{url}");
            assert_eq!(p.status, 422);
        }
        assert!(Guard::new(true)
            .check("http://127.0.0.1/", "u")
            .await
            .is_ok());
        assert!(Guard::new(false)
            .check("http://8.8.8.8/", "u")
            .await
            .is_ok());
    }
}
