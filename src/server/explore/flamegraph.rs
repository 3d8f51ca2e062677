//! `GET /api/v0/explore/flamegraph?type=ID&query=SEL&from=MS&to=MS&max_nodes=N`: the explorer's
//! flame graph of a window (the explorer's JSON contract, endpoint 3).
//!
//! `names`, `levels`, `total` and `max_self` are exactly Pyroscope's `querier.v1.FlameGraph`
//! (see `query::flamegraph`), with raw values; `unit`, `measure` (`per_second` for what
//! accumulates, `average` for snapshots such as `inuse_*`), `seconds` (what rates are per: the time the profiles cover per instance, as `scraper diff`
//! divides by),
//! `profiles` and `series` let the UI normalise them as `scraper diff` does. An empty window is
//! an empty flame graph, not an error.

use std::collections::HashMap;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query as QueryString, State};
use serde::Serialize;

use super::error::ApiError;
use super::params::Params;
use super::stores;
use super::timeline::Measure;
use crate::query::flamegraph::{FlameGraph, effective_max_nodes, flame_graph};
use crate::server::AppState;

#[derive(Debug, Serialize)]
pub(super) struct Answer {
    #[serde(flatten)]
    graph: FlameGraph,
    unit: String,
    measure: Measure,
    seconds: f64,
    profiles: usize,
    series: usize,
}

pub(super) async fn flamegraph(
    State(state): State<AppState>,
    query: Result<QueryString<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<Answer>, ApiError> {
    let params = Params::from_request(query)?;
    let q = params.query("", None)?;
    let max_nodes =
        effective_max_nodes(params.integer("max_nodes")?).map_err(ApiError::bad_request)?;
    let (sample_type, unit) = q.profile_type.sample_type();
    stores::read("server.explore.flamegraph", &state.stores, move |s| {
        let (graph, profiles, series, duration) = match s.tree(&q, &[])? {
            Some(mut s) => (
                flame_graph(&mut s.tree, max_nodes),
                s.profiles,
                s.series,
                s.duration_nanos,
            ),
            None => (FlameGraph::default(), 0, 0, 0),
        };
        // Rates per second as `scraper diff` computes them for the same window.
        let seconds = crate::diff::window_seconds(duration, series, (q.from, q.to));
        Ok(Answer {
            graph,
            unit,
            measure: Measure::of(&sample_type),
            seconds,
            profiles,
            series,
        })
    })
    .await
    .map(Json)
}
