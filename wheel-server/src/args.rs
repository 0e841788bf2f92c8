//! The command line (each option also read from a `WHEEL_*` variable) and
//! the checks made before anything starts.
//!
//! Without `--token` the API is open: the server allows that only on a
//! loopback address (and logs a warning), and refuses to start on any
//! other address, where anyone who reaches the port could add callbacks.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::flow_limits_flag::KeyLimits;
use crate::flow_limits_json::LimitsIn;

/// The durable timers of `wheel` over HTTP: timers that call a URL.
#[derive(Debug, Clone, Parser)]
#[command(name = "wheel-server", version, about)]
pub(crate) struct Args {
    /// The address to listen on.
    #[arg(
        long,
        env = "WHEEL_LISTEN",
        value_name = "ADDR",
        default_value = "127.0.0.1:7070"
    )]
    pub(crate) listen: SocketAddr,
    /// The embedded store's directory (when --redis is not given).
    #[arg(
        long,
        env = "WHEEL_DATA",
        value_name = "DIR",
        default_value = "./wheel-data"
    )]
    pub(crate) data: PathBuf,
    /// A Redis URL: share one set of timers with every server on it (its
    /// value is never printed: it may hold a password).
    #[arg(long, env = "WHEEL_REDIS", value_name = "URL", hide_env_values = true)]
    pub(crate) redis: Option<String>,
    /// A Redis Cluster, by the URLs of some of its nodes (comma-separated
    /// or repeated): the store follows reshards and failovers. Instead of
    /// --redis.
    #[arg(
        long,
        env = "WHEEL_REDIS_CLUSTER",
        value_name = "URLS",
        value_delimiter = ',',
        hide_env_values = true,
        conflicts_with = "redis"
    )]
    pub(crate) redis_cluster: Vec<String>,
    /// With --redis or --redis-cluster: split the namespace into N
    /// partitions, each in a hash slot of its own, so that one namespace
    /// spreads over a cluster's masters (1 to 256; 1, the default, does
    /// not split). Every server of a namespace must give the same N.
    /// Flow limits need an unsplit namespace.
    #[arg(long, env = "WHEEL_REDIS_PARTITIONS", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub(crate) redis_partitions: u32,
    /// With --redis: how many replicas must have each write before it is
    /// acknowledged (Redis `WAIT`); a write they do not confirm within
    /// --redis-replica-timeout is answered 503. 0, the default, waits for
    /// none: a write the master acknowledged but had not yet sent to a
    /// replica is lost if that replica is promoted (0 to 100).
    #[arg(long, env = "WHEEL_REDIS_REPLICAS", value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=MAX_REPLICAS))]
    pub(crate) redis_replicas: u32,
    /// How long a write waits for --redis-replicas to confirm it ("500ms",
    /// "2s", or milliseconds; 1ms to 1m).
    #[arg(long, env = "WHEEL_REDIS_REPLICA_TIMEOUT", value_name = "DURATION", default_value = "1s", value_parser = replica_timeout)]
    pub(crate) redis_replica_timeout: Duration,
    /// Keeps these timers apart from other namespaces in the same store.
    #[arg(
        long,
        env = "WHEEL_NAMESPACE",
        value_name = "NS",
        default_value = "wheel"
    )]
    pub(crate) namespace: String,
    /// The bearer token every /v1 request must carry. Required unless
    /// listening on a loopback address.
    #[arg(
        long,
        env = "WHEEL_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub(crate) token: Option<String>,
    /// A Standard Webhooks secret (`whsec_...`) that signs every callback;
    /// repeat it to rotate keys (each signs).
    #[arg(
        long = "signing-secret",
        value_name = "SECRET",
        env = "WHEEL_SIGNING_SECRET",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub(crate) signing_secrets: Vec<String>,
    /// Allows callbacks to loopback, private, link-local and other
    /// non-public addresses.
    #[arg(long, env = "WHEEL_ALLOW_PRIVATE_TARGETS")]
    pub(crate) allow_private_targets: bool,
    /// How long a timer this server claimed or is calling stays its own
    /// without news: if the server dies, another one on the same Redis
    /// fires its timers about this long after they were due ("5s",
    /// "30s", "2m", or milliseconds; at least 1s).
    #[arg(long, env = "WHEEL_LEASE", value_name = "DURATION", default_value = "5s", value_parser = lease)]
    pub(crate) lease: Duration,
    /// The dedup window: how long a timer's key is remembered after its
    /// callback succeeded or it was cancelled; within it, a create with
    /// that key adds nothing and answers 200 with how and when the timer
    /// ended ("10m", "1h", or milliseconds; "0", the default, is off).
    /// Every server of a namespace should use the same.
    #[arg(long, env = "WHEEL_DEDUP_WINDOW", value_name = "DURATION", default_value = "0", value_parser = dedup_window)]
    pub(crate) dedup_window: Duration,
    /// The largest request body, in bytes.
    #[arg(long, env = "WHEEL_MAX_BODY", value_name = "BYTES", default_value_t = 1 << 20)]
    pub(crate) max_body: usize,
    /// How long a client has to send a whole request head, and how long a
    /// keep-alive connection may wait for its next request (100ms to 1h).
    #[arg(long, env = "WHEEL_HEADER_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = timeout)]
    pub(crate) header_timeout: Duration,
    /// How long a client has to send a whole request body, from its head
    /// (100ms to 1h); a slower body is answered 408.
    #[arg(long, env = "WHEEL_BODY_TIMEOUT", value_name = "DURATION", default_value = "30s", value_parser = timeout)]
    pub(crate) body_timeout: Duration,
    /// The most connections open at once; more wait in the listen backlog
    /// until one closes (1 to 100000).
    #[arg(long, env = "WHEEL_MAX_CONNECTIONS", value_name = "N", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=MAX_CONNECTIONS))]
    pub(crate) max_connections: u32,
    /// On SIGTERM or SIGINT, how long requests in flight may run on before
    /// their connections are closed and the node shuts down (100ms to 1h).
    #[arg(long, env = "WHEEL_SHUTDOWN_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = timeout)]
    pub(crate) shutdown_timeout: Duration,
    /// A flow key's limits, `KEY=LIMITS`, e.g.
    /// `https://api.example.com=rate=500/1s,parallelism=20,breaker`; repeat
    /// it for more keys (`;` between them in the variable). Set at every
    /// start, over what the API set for that key.
    #[arg(long = "flow-limits", env = "WHEEL_FLOW_LIMITS", value_name = "KEY=LIMITS", value_delimiter = ';', value_parser = crate::flow_limits_flag::key_limits)]
    pub(crate) flow_limits: Vec<KeyLimits>,
    /// The limits of every flow key without its own, e.g.
    /// `parallelism=50,breaker` (`none`: clear them). Set at every start,
    /// over what the API set.
    #[arg(long = "flow-defaults", env = "WHEEL_FLOW_DEFAULTS", value_name = "LIMITS", value_parser = crate::flow_limits_flag::limits)]
    pub(crate) flow_defaults: Option<LimitsIn>,
    /// The most flow keys `/metrics` shows one by one (those with the most
    /// parked, waiting and in-flight timers); the rest are summed under
    /// `flow="other"` (0 to 1000).
    #[arg(long, env = "WHEEL_METRICS_FLOW_KEYS", value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub(crate) metrics_flow_keys: u32,
}

impl Args {
    /// Why these arguments cannot be used, if they cannot.
    pub(crate) fn check(&self) -> Result<(), String> {
        match self.token.as_deref() {
            Some("") => return Err("--token is empty".into()),
            Some(t) if t.chars().any(|c| c.is_whitespace() || c.is_control()) => {
                return Err("--token may not contain spaces or control characters".into());
            }
            Some(_) => {}
            None if !self.listen.ip().is_loopback() => {
                return Err(format!(
                    "refusing to listen on {} without --token (or WHEEL_TOKEN): only a loopback address may run without one",
                    self.listen
                ));
            }
            None => {}
        }
        let redis = self.redis.is_some() || !self.redis_cluster.is_empty();
        if self.redis_replicas > 0 && !redis {
            return Err(
                "--redis-replicas needs --redis: the embedded store has no replicas".into(),
            );
        }
        if self.redis_partitions > 1 && !redis {
            return Err(
                "--redis-partitions needs --redis or --redis-cluster: the embedded store is one file"
                    .into(),
            );
        }
        if self.max_body < 1024 {
            return Err("--max-body must be at least 1024 bytes".into());
        }
        Ok(())
    }
}

/// The shortest lease: a shorter one would pass while a healthy server
/// merely stalls (a pause, a slow store call), and its timers would fire
/// twice.
const MIN_LEASE: Duration = Duration::from_secs(1);

/// The most `--max-connections`: each connection is a file descriptor, and
/// a larger number is a typing error rather than a host's real capacity.
const MAX_CONNECTIONS: i64 = 100_000;

/// The range of the transport timeouts: a shorter one would cut off
/// healthy clients on any real network, a longer one no longer protects
/// the server from clients that hold connections open.
const TIMEOUTS: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(100)..=Duration::from_secs(3600);

/// Reads `--header-timeout`, `--body-timeout` and `--shutdown-timeout`.
fn timeout(text: &str) -> Result<Duration, String> {
    let d = crate::json::parse_delay(text)?;
    if !TIMEOUTS.contains(&d) {
        return Err(format!("{text:?} is not between 100ms and 1h"));
    }
    Ok(d)
}

/// Reads `--lease`.
fn lease(text: &str) -> Result<Duration, String> {
    let d = crate::json::parse_delay(text)?;
    if d < MIN_LEASE {
        return Err(format!("{text:?} is shorter than the shortest lease, 1s"));
    }
    Ok(d)
}

/// The most `--redis-replicas`: more is a typing error, not a deployment.
const MAX_REPLICAS: i64 = 100;

/// The range of `--redis-replica-timeout`: `WAIT` counts whole
/// milliseconds (and 0 would wait for good), and a longer wait holds every
/// write, and the request behind it, for longer than any client waits.
const REPLICA_TIMEOUTS: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(60);

/// Reads `--redis-replica-timeout`.
fn replica_timeout(text: &str) -> Result<Duration, String> {
    let d = crate::json::parse_delay(text)?;
    if !REPLICA_TIMEOUTS.contains(&d) {
        return Err(format!("{text:?} is not between 1ms and 1m"));
    }
    Ok(d)
}

/// The longest dedup window: a longer one is a typing error rather than a
/// retry horizon (producers retry within minutes to hours).
const MAX_DEDUP_WINDOW: Duration = Duration::from_secs(30 * 24 * 3600);

/// Reads `--dedup-window`.
fn dedup_window(text: &str) -> Result<Duration, String> {
    let d = crate::json::parse_delay(text)?;
    if d > MAX_DEDUP_WINDOW {
        return Err(format!(
            "{text:?} is longer than the longest dedup window, 30 days"
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("wheel-server").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn a_token_is_required_off_loopback_only() {
        assert_eq!(parse(&[]).check(), Ok(()));
        assert_eq!(parse(&["--listen", "[::1]:9000"]).check(), Ok(()));
        assert!(parse(&["--listen", "0.0.0.0:7070"]).check().is_err());
        assert_eq!(
            parse(&["--listen", "0.0.0.0:7070", "--token", "t0k"]).check(),
            Ok(())
        );
        assert!(parse(&["--token", ""]).check().is_err());
    }

    #[test]
    fn a_cluster_takes_node_urls_and_partitions_need_redis() {
        let a = parse(&[
            "--redis-cluster",
            "redis://10.0.0.1:7000,redis://10.0.0.2:7000",
            "--redis-cluster",
            "redis://10.0.0.3:7000",
            "--redis-partitions",
            "6",
        ]);
        assert_eq!(a.check(), Ok(()));
        assert_eq!(a.redis_cluster.len(), 3);
        assert_eq!(a.redis_partitions, 6);
        assert_eq!(parse(&[]).redis_partitions, 1);
        assert!(parse(&["--redis-partitions", "3"]).check().is_err());
        let both = [
            "wheel-server",
            "--redis",
            "redis://a",
            "--redis-cluster",
            "redis://b",
        ];
        assert!(Args::try_parse_from(both).is_err(), "one or the other");
        for bad in ["0", "257", "x"] {
            let args = ["wheel-server", "--redis-partitions", bad];
            assert!(Args::try_parse_from(args).is_err(), "{bad}");
        }
        let replicated = parse(&["--redis-cluster", "redis://b", "--redis-replicas", "1"]);
        assert_eq!(replicated.check(), Ok(()));
    }

    #[test]
    fn replicas_need_redis_and_a_timeout_from_1ms_to_1m() {
        let a = parse(&[]);
        assert_eq!(a.redis_replicas, 0);
        assert_eq!(a.redis_replica_timeout, Duration::from_secs(1));
        let a = parse(&[
            "--redis",
            "redis://127.0.0.1:6379/0",
            "--redis-replicas",
            "2",
            "--redis-replica-timeout",
            "250ms",
        ]);
        assert_eq!(a.check(), Ok(()));
        assert_eq!(a.redis_replicas, 2);
        assert_eq!(a.redis_replica_timeout, Duration::from_millis(250));
        assert!(parse(&["--redis-replicas", "1"]).check().is_err());
        for bad in ["0", "0ms", "61s", "2m", "x", ""] {
            let args = ["wheel-server", "--redis-replica-timeout", bad];
            assert!(Args::try_parse_from(args).is_err(), "{bad}");
        }
        for bad in ["-1", "101", "many"] {
            let args = ["wheel-server", "--redis-replicas", bad];
            assert!(Args::try_parse_from(args).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_lease_is_a_duration_of_at_least_a_second() {
        assert_eq!(parse(&[]).lease, Duration::from_secs(5));
        assert_eq!(parse(&["--lease", "30s"]).lease, Duration::from_secs(30));
        assert_eq!(
            parse(&["--lease", "1500"]).lease,
            Duration::from_millis(1500)
        );
        for bad in ["500ms", "0", "5x", ""] {
            let args = ["wheel-server", "--lease", bad];
            assert!(Args::try_parse_from(args).is_err(), "{bad}");
        }
    }

    #[test]
    fn transport_limits_have_defaults_and_refuse_zero_and_absurd_values() {
        let a = parse(&[]);
        assert_eq!(a.header_timeout, Duration::from_secs(10));
        assert_eq!(a.body_timeout, Duration::from_secs(30));
        assert_eq!(a.shutdown_timeout, Duration::from_secs(10));
        assert_eq!(a.max_connections, 512);
        let a = parse(&[
            "--header-timeout",
            "100ms",
            "--body-timeout",
            "1h",
            "--shutdown-timeout",
            "2500",
            "--max-connections",
            "1",
        ]);
        assert_eq!(a.header_timeout, Duration::from_millis(100));
        assert_eq!(a.body_timeout, Duration::from_secs(3600));
        assert_eq!(a.shutdown_timeout, Duration::from_millis(2500));
        assert_eq!(a.max_connections, 1);
        for option in ["--header-timeout", "--body-timeout", "--shutdown-timeout"] {
            for bad in ["0", "0s", "99ms", "61m", "2h", "-1s", "10x", ""] {
                let args = ["wheel-server", option, bad];
                assert!(Args::try_parse_from(args).is_err(), "{option} {bad}");
            }
        }
        for bad in ["0", "-1", "100001", "4294967296", "many"] {
            let args = ["wheel-server", "--max-connections", bad];
            assert!(Args::try_parse_from(args).is_err(), "{bad}");
        }
        let err = Args::try_parse_from(["wheel-server", "--body-timeout", "0"]).unwrap_err();
        assert!(
            err.to_string().contains("not between 100ms and 1h"),
            "{err}"
        );
    }

    #[test]
    fn the_dedup_window_is_off_by_default_and_bounded() {
        assert_eq!(parse(&[]).dedup_window, Duration::ZERO);
        assert_eq!(
            parse(&["--dedup-window", "10m"]).dedup_window,
            Duration::from_secs(600)
        );
        assert_eq!(parse(&["--dedup-window", "0"]).dedup_window, Duration::ZERO);
        for bad in ["31d", "-1s", "10x", ""] {
            let args = ["wheel-server", "--dedup-window", bad];
            assert!(Args::try_parse_from(args).is_err(), "{bad}");
        }
    }

    #[test]
    fn flow_limits_repeat_and_bad_ones_stop_the_start() {
        let a = parse(&[]);
        assert!(a.flow_limits.is_empty() && a.flow_defaults.is_none());
        assert_eq!(a.metrics_flow_keys, 50);
        let a = parse(&[
            "--flow-limits",
            "https://a.example=parallelism=2",
            "--flow-limits",
            "reports=rate=5/1s;b=breaker",
            "--flow-defaults",
            "parallelism=50,breaker",
            "--metrics-flow-keys",
            "0",
        ]);
        let keys: Vec<_> = a.flow_limits.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(keys, ["https://a.example", "reports", "b"]);
        assert_eq!(a.flow_defaults.unwrap().parallelism, Some(50));
        assert_eq!(a.metrics_flow_keys, 0);
        for (option, bad) in [
            ("--flow-limits", "k=parallelism=0"),
            ("--flow-limits", "k"),
            ("--flow-defaults", "rate=1"),
            ("--metrics-flow-keys", "1001"),
        ] {
            let err = Args::try_parse_from(["wheel-server", option, bad]).unwrap_err();
            assert!(err.to_string().contains(bad), "{option} {bad}: {err}");
        }
    }

    #[test]
    fn secrets_repeat() {
        let a = parse(&[
            "--signing-secret",
            "whsec_AA==",
            "--signing-secret",
            "whsec_AQ==",
        ]);
        assert_eq!(a.signing_secrets, ["whsec_AA==", "whsec_AQ=="]);
    }
}
