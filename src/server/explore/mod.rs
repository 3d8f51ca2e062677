//! The explorer: JSON endpoints over the profiles every open `pyroscope.store` keeps, and the
//! page (`/explore`, built from `ui/`) that reads them. The contract is
//! `GET /api/v0/explore/{catalog,timeline,flamegraph,diff,pprof,pgo}` and
//! `GET /api/v0/marks`; times are milliseconds since the Unix epoch, errors are
//! `{"error": "..."}` with 400 (bad parameter, nothing matched), 404 (no store) or 500.
//!
//! One concern per file: `params` (the query string), `error` (statuses and the JSON body),
//! `stores` (the open stores as one source, `query::stores`, read on a blocking thread), then
//! one file per endpoint: `catalog`, `timeline`, `flamegraph`, `diff`, `download` (pprof and
//! default.pgo), `marks`, and `pages` (the HTML and its assets). The answers are computed by the readers layer the
//! command line uses (`query`, `diff`, `pprof::pgo`), so the explorer and `scraper query`,
//! `pgo` and `diff` agree byte for byte.

mod catalog;
mod diff;
mod download;
mod error;
mod flamegraph;
mod marks;
mod pages;
mod params;
mod stores;
mod timeline;

use axum::Router;
use axum::routing::{MethodRouter, get};

use super::AppState;

/// The explorer's routes (but `GET /api/v0/marks`, which shares its path with the `POST`: see
/// [`marks_list`]).
pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/explore", get(pages::page))
        .route("/explore/assets/{name}", get(pages::asset))
        .route("/api/v0/explore/catalog", get(catalog::catalog))
        .route("/api/v0/explore/timeline", get(timeline::timeline))
        .route("/api/v0/explore/flamegraph", get(flamegraph::flamegraph))
        .route("/api/v0/explore/diff", get(diff::diff))
        .route("/api/v0/explore/pprof", get(download::pprof))
        .route("/api/v0/explore/pgo", get(download::pgo))
}

/// `GET /api/v0/marks`.
pub(super) fn marks_list() -> MethodRouter<AppState> {
    get(marks::list)
}
