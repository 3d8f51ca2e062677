//! The accept loop both servers run: axum's `serve` cannot bound connections or HTTP/2
//! streams, and every connection and stream may hold a request body, so this one does: at most
//! [`MAX_CONNECTIONS`] connections (further ones wait in the listen backlog) and
//! `max_concurrent_streams` streams per HTTP/2 connection. Stopping stops accepting and lets
//! the open connections finish their requests (the caller bounds how long).

use std::sync::Arc;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Connections served at once, per server.
pub(crate) const MAX_CONNECTIONS: usize = 1024;

/// Serves `app` on `listener` until `stop`, then waits for the open connections to finish.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    max_concurrent_streams: u32,
    stop: CancellationToken,
    id: String,
) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http2()
        .max_concurrent_streams(max_concurrent_streams);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let slot = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let sock = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((sock, _)) => sock,
                Err(e) => {
                    // Out of file descriptors and the like: pause rather than spin.
                    tracing::warn!(component_id = %id, error = %e, "accepting a connection failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let service = TowerToHyperService::new(app.clone());
        let conn = builder
            .serve_connection(TokioIo::new(sock), service)
            .into_owned();
        let conn = graceful.watch(conn);
        crate::runtime::task::spawn("otelcol.receiver.otlp.connection", async move {
            let _slot = slot;
            // A connection's errors (a client resetting it, a malformed frame) are the
            // client's; its requests already reported theirs.
            let _ = conn.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
