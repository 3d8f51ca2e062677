//! The HTTP server, with Alloy's endpoints: `/metrics`, `/-/ready`, `/-/healthy`, `/-/reload`,
//! the component API under `/api/v0/web/`, marks (`POST /api/v0/marks`, stored by every
//! `pyroscope.store`), Pyroscope's query API over those stores (`/querier.v1.QuerierService/*`,
//! see `querier`), a plain HTML overview at `/`, the targets page at `/targets`, and
//! `/debug/pprof/` (an index and
//! `profile`, a CPU profile of scraper itself; Go's heap and goroutine profiles answer 404 with
//! why: see `pprof`).
//!
//! Response bodies of the `/-/` endpoints are Alloy's, word for word ("Alloy is ready."), so
//! probes and scripts written for Alloy keep working against scraper.

mod api;
mod explore_flamegraph;
mod lifecycle;
mod marks;
mod metrics;
mod pprof;
mod querier;
mod targets;
mod ui;

use std::path::PathBuf;

use axum::Router;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::runtime::{Controller, LoadError};
use crate::store::OpenStores;

/// Alloy's default; loopback so that a fresh install exposes nothing.
pub const DEFAULT_LISTEN_ADDR: &str = "127.0.0.1:12345";

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    pub controller: Controller,
    /// The file `/-/reload` re-reads.
    pub config_path: PathBuf,
    /// The stores open in this process, where `POST /api/v0/marks` records marks: the same
    /// registry the controller hands the `pyroscope.store` components.
    pub stores: OpenStores,
    /// The profile types of stored series, learnt once per series by the querier API.
    pub types: std::sync::Arc<crate::query::types::TypeCache>,
}

impl AppState {
    /// Re-reads and applies the config file (`/-/reload` and SIGHUP).
    pub async fn reload(&self) -> Result<(), LoadError> {
        let result = self.controller.load_file(&self.config_path).await;
        match &result {
            Ok(()) => tracing::info!("config reloaded"),
            Err(e) => tracing::error!(error = %e, "failed to reload config"),
        }
        result
    }
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(ui::index))
        .route("/targets", get(targets::page))
        .route("/metrics", get(metrics::metrics))
        .route("/-/ready", get(lifecycle::ready))
        .route("/-/healthy", get(lifecycle::healthy))
        .route("/-/reload", get(lifecycle::reload).post(lifecycle::reload))
        .route("/api/v0/web/components", get(api::list))
        .route("/api/v0/web/components/{id}", get(api::get))
        .route("/api/v0/marks", axum::routing::post(marks::create))
        .route(
            "/api/v0/explore/flamegraph",
            get(explore_flamegraph::flamegraph),
        )
        .route(
            "/querier.v1.QuerierService/{method}",
            axum::routing::post(querier::handle),
        )
        .route("/debug/pprof/", get(pprof::index))
        .route("/debug/pprof/profile", get(pprof::profile))
        .route("/debug/pprof/{name}", get(pprof::not_served))
        .with_state(state)
}

/// Serves until `shutdown` is cancelled, then finishes in-flight requests.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}
