//! Graceful shutdown: on SIGTERM or SIGINT the server stops accepting,
//! lets the requests in flight finish (for at most `--shutdown-timeout`;
//! the connections still open then are closed), then shuts the durable
//! node down (claimed timers that have not started go back to the store,
//! for other servers or the next start to fire; running callbacks finish
//! and report).

/// Resolves when the process is asked to stop (SIGTERM, or SIGINT / Ctrl-C).
pub(crate) async fn signal() {
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot wait for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot wait for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT: shutting down"),
        () = terminate => tracing::info!("SIGTERM: shutting down"),
    }
}
