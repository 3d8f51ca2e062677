//! `GET /api/v0/explore/flamegraph?type=ID&query=SEL&from=MS&to=MS&max_nodes=N`: the explorer's
//! flame graph of a window (the explorer's JSON contract, endpoint 3).
//!
//! `names`, `levels`, `total` and `max_self` are exactly Pyroscope's `querier.v1.FlameGraph`
//! (see `query::flamegraph`), with raw values; `unit`, `measure` (`per_second` for what
//! accumulates, `average` for snapshots such as `inuse_*`), `seconds` (the window's length),
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
    let seconds = q.to.duration_since(q.from).map_or(0.0, |d| d.as_secs_f64());
    let (sample_type, unit) = q.profile_type.sample_type();
    stores::read("server.explore.flamegraph", &state.stores, move |s| {
        let (graph, profiles, series) = match s.tree(&q, &[])? {
            Some(mut s) => (flame_graph(&mut s.tree, max_nodes), s.profiles, s.series),
            None => (FlameGraph::default(), 0, 0),
        };
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
