//! The HTTP server, with Alloy's endpoints: `/metrics`, `/-/ready`, `/-/healthy`, `/-/reload`,
//! the component API under `/api/v0/web/`, marks (`POST /api/v0/marks` stores one in every
//! `pyroscope.store`, `GET` lists them), Pyroscope's query API over those stores
//! (`/querier.v1.QuerierService/*`, see `querier`), `/debug/pprof/` (an index; `profile`, a CPU profile
//! of scraper itself; `goroutine`, its live tasks; `heap`, its resident memory by account; Go's
//! other profiles answer 404 with why: see `pprof`), and our pages, all server-rendered and escaped:
//!
//! * `/` (`ui`): the component graph (`graph`: an inline SVG, one column per dependency depth,
//!   boxes coloured by health) and the components' table, with the latest config load;
//! * `/components/{id}` (`component`): one component's health, references, arguments, exports
//!   and debug info (as nested tables, from the API's redacted JSON) and the latest load;
//! * `/targets` (`targets`): every scrape target with its health and last error;
//! * `/explore` and `/api/v0/explore/*` (`explore`): the profile explorer and its JSON API over
//!   the profiles every open `pyroscope.store` keeps.
//!
//! Response bodies of the `/-/` endpoints are Alloy's, word for word ("Alloy is ready."), so
//! probes and scripts written for Alloy keep working against scraper.

mod api;
mod component;
mod explore;
mod graph;
mod lifecycle;
mod marks;
mod metrics;
mod page;
mod peers;
mod pprof;
mod querier;
mod self_profiles;
mod targets;
mod ui;

#[doc(hidden)]
pub use querier::{fuzz_methods, fuzz_request};

use std::path::PathBuf;

use axum::Router;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::budget::Budget;
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
    /// The process's memory budget: `/debug/pprof/heap` breaks RSS down by its accounts.
    pub budget: Budget,
    /// The profile types of stored series, learnt once per series by the querier API.
    pub types: std::sync::Arc<crate::query::types::TypeCache>,
    /// The cluster service: the peers view (`/api/v0/web/peers`, `/cluster`).
    pub cluster: crate::cluster::Cluster,
}

impl AppState {
    /// Re-reads and applies the config file (`/-/reload` and SIGHUP).
    pub async fn reload(&self) -> Result<(), LoadError> {
        log_reload(self.controller.load_file(&self.config_path).await)
    }

    /// Applies a config already read (`scraper run --config.watch-interval`: exactly the text
    /// the watch saw stay the same, not a fresh read that may have changed since), logged as a
    /// reload.
    pub async fn reload_source(
        &self,
        source: crate::syntax::diag::Source,
    ) -> Result<(), LoadError> {
        log_reload(self.controller.apply_config(source).await)
    }
}

fn log_reload(result: Result<(), LoadError>) -> Result<(), LoadError> {
    match &result {
        Ok(()) => tracing::info!("config reloaded"),
        Err(e) => tracing::error!(error = %e, "failed to reload config"),
    }
    result
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(ui::index))
        .route("/targets", get(targets::page))
        // Wildcards: IDs inside modules have slashes (`profiling.feature/pyroscope.ebpf.x`).
        .route("/components/{*id}", get(component::page))
        .route("/metrics", get(metrics::metrics))
        .route("/-/ready", get(lifecycle::ready))
        .route("/-/healthy", get(lifecycle::healthy))
        .route("/-/reload", get(lifecycle::reload).post(lifecycle::reload))
        .route("/cluster", get(peers::page))
        .route("/api/v0/web/peers", get(peers::api))
        .route("/api/v0/web/components", get(api::list))
        .route("/api/v0/web/components/{*id}", get(api::get))
        .route("/api/v0/marks", explore::marks_list().post(marks::create))
        .route(
            "/querier.v1.QuerierService/{method}",
            axum::routing::post(querier::handle),
        )
        .route("/debug/pprof/", get(pprof::index))
        .route("/debug/pprof/profile", get(pprof::profile))
        .route("/debug/pprof/goroutine", get(pprof::goroutine))
        .route("/debug/pprof/heap", get(pprof::heap))
        .route("/debug/pprof/{name}", get(pprof::not_served))
        .merge(explore::routes())
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
