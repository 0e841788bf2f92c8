//! The guard against server-side request forgery: a callback may not aim
//! at the server's own network unless the operator allows it
//! (`--allow-private-targets`).
//!
//! A callback's host is read as the node's client will connect to it (the
//! library's `callback_target`: `127.0.0.1.`, `0x7f.1`, `2130706433` and
//! the other spellings the client accepts are the address 127.0.0.1). An
//! address must be public (the library's `is_public_address`: not
//! loopback, private, link-local with the cloud metadata addresses,
//! carrier-grade NAT, unspecified, ...), `localhost` and the names under it
//! are refused without a lookup, and any other name is resolved: every
//! address it resolves to must be public (a name that resolves to one
//! private address among public ones is refused, since the sender may pick
//! any of them). A name that does not resolve is refused too: the timer
//! could never be sent. DNS can change between adding and sending, so the
//! check at add time is a first line: the node checks the same host again
//! when it sends (`HttpConfig::allow_private_targets(false)`), and a
//! callback refused then becomes a dead letter.
//!
//! The names of one request are resolved once each, [`CONCURRENT_LOOKUPS`]
//! at a time; one lookup may take [`LOOKUP_TIMEOUT`] and all of them
//! together [`LOOKUPS_BUDGET`], so a batch of a thousand slow names holds
//! its request for seconds, not hours.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use tokio::task::JoinSet;
use tokio::time::Instant;
use wheel_durable::http::{Target, TargetHost, callback_target, is_public_address};

use crate::error::Problem;

/// How long resolving one name may take.
pub(crate) const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the lookups of one request may take together.
pub(crate) const LOOKUPS_BUDGET: Duration = Duration::from_secs(10);

/// How many names of one request are resolved at once.
pub(crate) const CONCURRENT_LOOKUPS: usize = 16;

/// A lookup under way: every address of a name.
pub(crate) type Lookup = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>>;

/// The addresses of a name, looked up asynchronously (a trait so that
/// tests can answer slowly, or never).
pub(crate) trait Resolver: Send + Sync + 'static {
    /// Every address `name` resolves to.
    fn lookup(&self, name: String) -> Lookup;
}

/// The system's resolver, as `tokio::net::lookup_host` asks it.
struct System;

impl Resolver for System {
    fn lookup(&self, name: String) -> Lookup {
        Box::pin(async move {
            // The port is not part of the answer; any will do.
            let addrs = tokio::net::lookup_host((name.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// The guard's time and concurrency bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) per_lookup: Duration,
    pub(crate) budget: Duration,
    pub(crate) concurrent: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            per_lookup: LOOKUP_TIMEOUT,
            budget: LOOKUPS_BUDGET,
            concurrent: CONCURRENT_LOOKUPS,
        }
    }
}

/// Checks the callback targets of one request, resolving each name once.
pub(crate) struct Guard {
    allow_private: bool,
    resolver: Arc<dyn Resolver>,
    limits: Limits,
    /// The verdict on each name resolved so far, by normalised name.
    seen: HashMap<String, Result<(), String>>,
}

impl Guard {
    /// A guard for one request; with `allow_private`, every target passes.
    pub(crate) fn new(allow_private: bool) -> Guard {
        Guard::with(allow_private, Arc::new(System), Limits::default())
    }

    /// A guard that resolves names with `resolver`, within `limits`.
    pub(crate) fn with(allow_private: bool, resolver: Arc<dyn Resolver>, limits: Limits) -> Guard {
        Guard {
            allow_private,
            resolver,
            limits,
            seen: HashMap::new(),
        }
    }

    /// Checks the callback URL `url` (already known to parse as an
    /// `http`/`https` URL with a host); `field` names it in the problem.
    pub(crate) async fn check(&mut self, url: &str, field: &str) -> Result<(), Problem> {
        self.check_all(&[(url, field.to_owned())]).await
    }

    /// Checks the callback URLs of `items`, each with the field that names
    /// it; the problem names the first refused, in order. The names are
    /// resolved concurrently, and only those before the first target
    /// refused without a lookup (the answer is that one or an earlier one).
    pub(crate) async fn check_all(&mut self, items: &[(&str, String)]) -> Result<(), Problem> {
        if self.allow_private {
            return Ok(());
        }
        let mut targets = Vec::with_capacity(items.len());
        for (url, field) in items {
            let target =
                callback_target(url).map_err(|e| Problem::invalid(field, e.to_string()))?;
            let refused = target.host.refused_without_lookup();
            targets.push(target);
            if refused {
                break;
            }
        }
        // Each name once, in the order of the items.
        let mut queued = HashSet::new();
        let mut names: Vec<String> = Vec::new();
        for t in &targets {
            if let TargetHost::Name(name) = &t.host
                && !t.host.refused_without_lookup()
                && !self.seen.contains_key(name)
                && queued.insert(name.as_str())
            {
                names.push(name.clone());
            }
        }
        self.resolve(names).await;
        for (target, (_, field)) in targets.iter().zip(items) {
            self.verdict(target).map_err(|why| forbidden(why, field))?;
        }
        Ok(())
    }

    /// The verdict on `target`, its name (if it has one) already resolved.
    fn verdict(&self, target: &Target) -> Result<(), String> {
        match &target.host {
            TargetHost::Ip(ip) if is_public_address(*ip) => Ok(()),
            TargetHost::Ip(ip) => Err(format!(
                "the URL's host is the address {ip} as the client reads it, a loopback, private, link-local or otherwise non-public address; the server refuses such targets unless started with --allow-private-targets"
            )),
            TargetHost::Name(name) if target.host.refused_without_lookup() => Err(format!(
                "{name:?} is a name for loopback; the server refuses such targets unless started with --allow-private-targets"
            )),
            TargetHost::Name(name) => self.seen.get(name).cloned().unwrap_or_else(|| {
                Err(format!(
                    "the host {name:?} was not resolved within the {:?} this request's lookups may take together",
                    self.limits.budget
                ))
            }),
        }
    }

    /// Resolves `names`, [`Limits::concurrent`] at a time, until all are
    /// done or the budget is spent; the names left unresolved stay out of
    /// `seen`, and their lookups are dropped.
    async fn resolve(&mut self, names: Vec<String>) {
        let deadline = Instant::now() + self.limits.budget;
        let mut waiting = names.into_iter();
        let mut running = JoinSet::new();
        loop {
            while running.len() < self.limits.concurrent.max(1) {
                let Some(name) = waiting.next() else { break };
                let (resolver, per_lookup) = (self.resolver.clone(), self.limits.per_lookup);
                running.spawn(async move {
                    let verdict = resolve_public(&*resolver, &name, per_lookup).await;
                    (name, verdict)
                });
            }
            match tokio::time::timeout_at(deadline, running.join_next()).await {
                Ok(Some(Ok((name, verdict)))) => {
                    self.seen.insert(name, verdict);
                }
                // A lookup that panicked leaves its name unresolved: refused.
                Ok(Some(Err(_))) => {}
                // All done, or the budget is spent: dropping the set aborts
                // the lookups still running (a system lookup already on a
                // blocking thread ends there by itself, its answer unused).
                Ok(None) | Err(_) => return,
            }
        }
    }
}

fn forbidden(why: String, field: &str) -> Problem {
    Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "forbidden-target",
        "The callback's target is not allowed",
        why,
    )
    .at(field)
}

/// Ok when every address of `name` is public.
async fn resolve_public(
    resolver: &dyn Resolver,
    name: &str,
    per_lookup: Duration,
) -> Result<(), String> {
    let addrs = tokio::time::timeout(per_lookup, resolver.lookup(name.to_owned()))
        .await
        .map_err(|_| format!("the host {name:?} did not resolve within {per_lookup:?}"))?
        .map_err(|e| format!("the host {name:?} does not resolve: {e}"))?;
    if addrs.is_empty() {
        return Err(format!("the host {name:?} resolves to no address"));
    }
    match addrs.into_iter().find(|ip| !is_public_address(*ip)) {
        None => Ok(()),
        Some(ip) => Err(format!(
            "the host {name:?} resolves to {ip}, a loopback, private, link-local or otherwise non-public address; the server refuses such targets unless started with --allow-private-targets"
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A resolver that answers `answer` after `delay`, or never for names
    /// starting with `slow`, and records its calls and the most lookups
    /// in flight at once.
    #[derive(Default)]
    struct Fake {
        delay: Duration,
        answer: Vec<IpAddr>,
        calls: Mutex<Vec<String>>,
        in_flight: AtomicUsize,
        most: AtomicUsize,
    }

    /// Counts a lookup out when dropped, finished or aborted.
    struct InFlight(Arc<Fake>);

    impl Drop for InFlight {
        fn drop(&mut self) {
            self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }

    struct FakeResolver(Arc<Fake>);

    impl Resolver for FakeResolver {
        fn lookup(&self, name: String) -> Lookup {
            let fake = self.0.clone();
            Box::pin(async move {
                fake.calls.lock().unwrap().push(name.clone());
                let now = fake.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                fake.most.fetch_max(now, Ordering::SeqCst);
                let _counted = InFlight(fake.clone());
                if name.starts_with("slow") {
                    std::future::pending::<()>().await;
                }
                tokio::time::sleep(fake.delay).await;
                Ok(fake.answer.clone())
            })
        }
    }

    fn fake(delay_ms: u64, answer: &str) -> Arc<Fake> {
        Arc::new(Fake {
            delay: Duration::from_millis(delay_ms),
            answer: vec![answer.parse().unwrap()],
            ..Fake::default()
        })
    }

    fn guard(fake: &Arc<Fake>, limits: Limits) -> Guard {
        Guard::with(false, Arc::new(FakeResolver(fake.clone())), limits)
    }

    fn items(urls: &[String]) -> Vec<(&str, String)> {
        urls.iter()
            .enumerate()
            .map(|(i, u)| (u.as_str(), format!("timers[{i}].callback.url")))
            .collect()
    }

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
        assert!(
            Guard::new(true)
                .check("http://127.0.0.1/", "u")
                .await
                .is_ok()
        );
        assert!(
            Guard::new(false)
                .check("http://8.8.8.8/", "u")
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn spellings_the_client_reads_as_addresses_are_never_resolved_as_names() {
        // A resolver that answers every name with a public address.
        let f = fake(0, "93.184.215.14");
        for host in [
            "127.0.0.1.",
            "0x7f.1",
            "0x7f.1.",
            "2130706433",
            "2130706433.",
            "0177.0.0.1",
            "127.1",
            "[::ffff:127.0.0.1]",
            "[::ffff:7f00:1]",
            "[::127.0.0.1]",
            "[64:ff9b::7f00:1]",
            "[::1]",
            "localhost",
            "localhost.",
            "LOCALHOST",
            "a.localhost.",
        ] {
            let url = format!("http://{host}:8080/x");
            let p = guard(&f, Limits::default())
                .check(&url, "callback.url")
                .await
                .expect_err(&url);
            assert_eq!(
                (p.status, p.kind.as_str()),
                (422, "urn:wheel:problem:forbidden-target"),
                "{url}"
            );
        }
        assert!(f.calls.lock().unwrap().is_empty(), "{:?}", f.calls);
        let mut g = guard(&f, Limits::default());
        assert!(g.check("http://shop.example./x", "u").await.is_ok());
    }

    #[tokio::test]
    async fn names_are_resolved_once_each_and_at_most_the_limit_at_once() {
        let f = fake(20, "93.184.215.14");
        // 100 timers over 40 names, spelled in either case, on two ports.
        let urls: Vec<String> = (0..100)
            .map(|i| match i % 3 {
                0 => format!("http://host{}.example/", i % 40),
                1 => format!("http://HOST{}.Example:8080/", i % 40),
                _ => format!("https://host{}.example/x", i % 40),
            })
            .collect();
        let mut g = guard(&f, Limits::default());
        g.check_all(&items(&urls)).await.unwrap();
        let mut calls = f.calls.lock().unwrap().clone();
        assert_eq!(calls.len(), 40, "{calls:?}");
        calls.sort();
        calls.dedup();
        assert_eq!(calls.len(), 40, "each name once");
        assert_eq!(f.most.load(Ordering::SeqCst), CONCURRENT_LOOKUPS);
        // The verdicts stay for the rest of the request.
        g.check("http://host7.example/", "u").await.unwrap();
        assert_eq!(f.calls.lock().unwrap().len(), 40);
    }

    #[tokio::test]
    async fn the_lookups_of_a_request_stop_at_its_budget() {
        let f = fake(0, "93.184.215.14");
        let limits = Limits {
            per_lookup: Duration::from_secs(3600),
            budget: Duration::from_millis(300),
            concurrent: 2,
        };
        let urls: Vec<String> = [
            "fast.example",
            "slow1.example",
            "slow2.example",
            "a.example",
        ]
        .iter()
        .chain(&["slow3.example"; 20])
        .map(|h| format!("http://{h}/"))
        .collect();
        let started = std::time::Instant::now();
        let p = guard(&f, limits)
            .check_all(&items(&urls))
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert_eq!(p.field.as_deref(), Some("timers[1].callback.url"));
        assert_eq!(
            (p.status, p.kind.as_str()),
            (422, "urn:wheel:problem:forbidden-target")
        );
        assert!(p.detail.contains("was not resolved within"), "{}", p.detail);
        assert!(took >= limits.budget, "{took:?}");
        // Cut off at the budget, not at a lookup's own timeout (an hour):
        // the bound only tells the two apart, it is no speed figure.
        assert!(took < limits.per_lookup / 60, "{took:?}");
        assert!(f.most.load(Ordering::SeqCst) <= 2);
    }

    #[tokio::test]
    async fn a_name_that_does_not_answer_is_refused_after_its_own_timeout() {
        let f = fake(0, "93.184.215.14");
        let limits = Limits {
            per_lookup: Duration::from_millis(100),
            ..Limits::default()
        };
        let urls = [
            "http://a.example/".to_owned(),
            "http://slow.example/".to_owned(),
        ];
        let p = guard(&f, limits)
            .check_all(&items(&urls))
            .await
            .unwrap_err();
        assert_eq!(p.field.as_deref(), Some("timers[1].callback.url"));
        assert!(
            p.detail.contains("did not resolve within 100ms"),
            "{}",
            p.detail
        );
    }

    #[tokio::test]
    async fn the_first_refused_target_in_order_is_named() {
        // Every name resolves to a private address.
        let f = fake(0, "10.0.0.1");
        let urls = [
            "http://inner.example/".to_owned(),
            "http://127.0.0.1/".to_owned(),
        ];
        let p = guard(&f, Limits::default())
            .check_all(&items(&urls))
            .await
            .unwrap_err();
        assert_eq!(p.field.as_deref(), Some("timers[0].callback.url"));
        assert!(p.detail.contains("10.0.0.1"), "{}", p.detail);
        // A refused address first: the names after it are not looked up.
        let f = fake(0, "93.184.215.14");
        let urls = [
            "http://0x7f.1/".to_owned(),
            "http://slow.example/".to_owned(),
        ];
        let p = guard(&f, Limits::default())
            .check_all(&items(&urls))
            .await
            .unwrap_err();
        assert_eq!(p.field.as_deref(), Some("timers[0].callback.url"));
        assert!(p.detail.contains("127.0.0.1"), "{}", p.detail);
        assert!(f.calls.lock().unwrap().is_empty());
    }
}
