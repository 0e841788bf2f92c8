//! Starting and stopping: the runtime, the durable node on it, the
//! listener, and the order things stop in.
//!
//! One multi-threaded tokio runtime carries both the HTTP server and the
//! node's callbacks (`DurableTimersBuilder::runtime`). The node is built
//! before the listener opens, so a store that cannot be opened (locked by
//! another process, unreachable Redis) stops the start with its error. On
//! a signal, the listener stops accepting and lets the requests in flight
//! finish (for at most `--shutdown-timeout`, see `listener.rs`); only then
//! is the node shut down, so no request in flight meets a closed store.

use std::io::IsTerminal;
use std::sync::Arc;

use tracing_subscriber::EnvFilter;
use wheel_durable::http::HttpConfig;
use wheel_durable::{DurableTimers, RetryPolicy};

use crate::app::router;
use crate::args::Args;
use crate::auth::Token;
use crate::context::ApiContext;
use crate::json::MAX_ATTEMPTS;
use crate::listener::Limits;

/// Logs to stderr, the level from `RUST_LOG` (default `info`).
pub(crate) fn init_logs() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// The node's HTTP settings: the target guard again at send time (a
/// name's addresses can change after the add), and the signing secrets.
fn http_config(args: &Args) -> HttpConfig {
    let config = HttpConfig::new().allow_private_targets(args.allow_private_targets);
    args.signing_secrets
        .iter()
        .fold(config, |config, secret| config.signing_secret(secret))
}

/// Runs the server until a signal, then stops it.
pub(crate) fn run(args: &Args) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let builder = DurableTimers::builder()
        .namespace(&args.namespace)
        .runtime(runtime.handle().clone())
        .lease(args.lease)
        .dedup_window(args.dedup_window)
        // The ceiling of every callback's own policy (each carries one).
        .retry(RetryPolicy::new().max_attempts(MAX_ATTEMPTS))
        .http(http_config(args));
    let builder = match (&args.redis, args.redis_cluster.as_slice()) {
        (Some(url), _) => builder.redis(url),
        (None, []) => builder.embedded(&args.data),
        (None, nodes) => builder.redis_cluster(nodes),
    };
    let builder = match (&args.redis, args.redis_cluster.is_empty()) {
        (None, true) => builder,
        _ => builder
            .partitions(args.redis_partitions)
            .replicas(args.redis_replicas, args.redis_replica_timeout),
    };
    let timers = Arc::new(
        builder
            .build()
            .map_err(|e| format!("cannot open the store: {e}"))?,
    );
    if let Err(e) = apply_flow_limits(&timers, args) {
        stop(timers);
        return Err(e);
    }
    match (&args.redis, args.redis_cluster.len()) {
        (Some(_), _) => {
            tracing::info!(namespace = %args.namespace, partitions = args.redis_partitions, "store: redis")
        }
        (None, 0) => tracing::info!(data = %args.data.display(), "store: embedded"),
        (None, seeds) => {
            tracing::info!(namespace = %args.namespace, partitions = args.redis_partitions, seeds, "store: redis cluster")
        }
    }
    if args.token.is_none() {
        tracing::warn!(listen = %args.listen, "no --token: the API is open to anyone who can reach this loopback address");
    }
    if args.allow_private_targets {
        tracing::warn!(
            "--allow-private-targets: callbacks may target loopback and private addresses"
        );
    }
    // The context starts its adding task on the runtime.
    let _entered = runtime.enter();
    let mut ctx = ApiContext::new(timers.clone(), args.allow_private_targets);
    ctx.metrics_flow_keys = usize::try_from(args.metrics_flow_keys).unwrap_or(usize::MAX);
    let token = args.token.as_deref().map(Token::new);
    let app = router(ctx, token, args.max_body);
    let listen = args.listen;
    let limits = Limits {
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        shutdown_timeout: args.shutdown_timeout,
    };
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        tracing::info!(listen = %local, "listening");
        crate::listener::serve(listener, app, limits, crate::shutdown::signal()).await;
        Ok::<(), String>(())
    });
    tracing::info!("connections closed; handing claims back");
    stop(timers);
    drop(runtime);
    served
}

/// Sets the limits of `--flow-defaults` and `--flow-limits`, over what
/// the store kept: the flags are the configuration of record for the
/// keys they name, at every start. A refusal stops the start.
fn apply_flow_limits(timers: &DurableTimers, args: &Args) -> Result<(), String> {
    if let Some(d) = &args.flow_defaults {
        let limits = d
            .check("")
            .map_err(|p| format!("--flow-defaults: {}", p.detail))?;
        timers
            .set_default_flow_limits(&limits)
            .map_err(|e| format!("--flow-defaults: {e}"))?;
    }
    for k in &args.flow_limits {
        let limits = k
            .limits
            .check("")
            .map_err(|p| format!("--flow-limits {}: {}", k.key, p.detail))?;
        timers
            .set_flow_limits(&k.key, &limits)
            .map_err(|e| format!("--flow-limits {}: {e}", k.key))?;
    }
    if args.flow_defaults.is_some() || !args.flow_limits.is_empty() {
        tracing::info!(
            keys = args.flow_limits.len(),
            defaults = args.flow_defaults.is_some(),
            "flow limits set from the command line"
        );
    }
    Ok(())
}

/// Shuts the node down: hands its claims back and closes the store. A
/// store call that a client gave up on and that is still finishing on a
/// blocking thread answers `Closed`.
fn stop(timers: Arc<DurableTimers>) {
    if let Err(e) = timers.shutdown() {
        tracing::error!(error = %e, "the store failed to close");
    }
    tracing::info!("stopped");
}
