//! `GET /api/v0/explore/flamegraph?type=ID&query=SEL&from=MS&to=MS&max_nodes=N`: the explorer's
//! flame graph of a window (the explorer's JSON contract, endpoint 3).
//!
//! `names`, `levels`, `total` and `max_self` are exactly Pyroscope's `querier.v1.FlameGraph`
//! (see `query::flamegraph`), with raw values; `unit`, `measure` (`per_second` for what
//! accumulates, `average` for snapshots such as `inuse_*`), `seconds` (the window's length),
//! `profiles` and `series` let the UI normalise them as `scraper diff` does. An empty window is
//! an empty flame graph, not an error. Errors are `{"error": "..."}` with 400 (bad parameter),
//! 404 (no store running) or 500.

use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use axum::Json;
use axum::extract::{Query as Params, State};
use axum::http::StatusCode;

use super::AppState;
use crate::diff::Measure;
use crate::query::flamegraph::{FlameGraph, effective_max_nodes, flame_graph};
use crate::query::selector::Selector;
use crate::query::source::{ProfileType, Query};
use crate::query::stores::Stores;

type Answer = (StatusCode, Json<serde_json::Value>);

fn error(status: StatusCode, message: impl Into<String>) -> Answer {
    (status, Json(serde_json::json!({ "error": message.into() })))
}

/// A required millisecond time parameter.
fn millis(params: &HashMap<String, String>, name: &str) -> Result<u64, Answer> {
    let v = params.get(name).ok_or_else(|| {
        error(
            StatusCode::BAD_REQUEST,
            format!("missing parameter {name} (milliseconds since the epoch)"),
        )
    })?;
    v.trim().parse::<u64>().map_err(|_| {
        error(
            StatusCode::BAD_REQUEST,
            format!("invalid {name} {v:?}: expected milliseconds since the epoch"),
        )
    })
}

/// The checked query and `max_nodes`.
fn parse(params: &HashMap<String, String>) -> Result<(Query, i64), Answer> {
    let bad = |m: String| error(StatusCode::BAD_REQUEST, m);
    let ty = params.get("type").ok_or_else(|| {
        bad("missing parameter type (a profile type ID or name, e.g. process_cpu)".into())
    })?;
    let profile_type = ProfileType::parse(ty).map_err(&bad)?;
    let selector = Selector::parse(params.get("query").map_or("{}", String::as_str))
        .map_err(|e| bad(format!("query: {e}")))?;
    let (from, to) = (millis(params, "from")?, millis(params, "to")?);
    if from >= to {
        return Err(bad(format!("from ({from}) must be before to ({to})")));
    }
    let max_nodes = match params.get("max_nodes") {
        None => None,
        Some(v) => Some(
            v.trim()
                .parse::<i64>()
                .map_err(|_| bad(format!("invalid max_nodes {v:?}: expected a number")))?,
        ),
    };
    let max_nodes = effective_max_nodes(max_nodes).map_err(&bad)?;
    Ok((
        Query {
            selector,
            profile_type,
            from: UNIX_EPOCH + Duration::from_millis(from),
            to: UNIX_EPOCH + Duration::from_millis(to),
        },
        max_nodes,
    ))
}

pub(super) async fn flamegraph(
    State(state): State<AppState>,
    Params(params): Params<HashMap<String, String>>,
) -> Answer {
    let (query, max_nodes) = match parse(&params) {
        Ok(q) => q,
        Err(e) => return e,
    };
    let stores = Stores::new(state.stores.running().into_iter().map(|r| r.db).collect());
    if stores.is_empty() {
        return error(
            StatusCode::NOT_FOUND,
            "no pyroscope.store component is running: the explorer reads the stores of this process",
        );
    }
    let seconds = query
        .to
        .duration_since(query.from)
        .map_or(0.0, |d| d.as_secs_f64());
    let (sample_type, unit) = query.profile_type.sample_type();
    let selected = crate::runtime::task::spawn_blocking("server.explore.flamegraph", move || {
        stores
            .tree(&query, &[])
            .map(|s| s.map(|mut s| (flame_graph(&mut s.tree, max_nodes), s.profiles, s.series)))
    })
    .await;
    let (fg, profiles, series) = match selected {
        Ok(Ok(Some(found))) => found,
        Ok(Ok(None)) => (FlameGraph::default(), 0, 0),
        Ok(Err(e)) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the query failed: {e}"),
            );
        }
    };
    let measure = match Measure::of(&sample_type, profiles.max(1)) {
        Measure::PerSecond => "per_second",
        _ => "average",
    };
    (
        StatusCode::OK,
        Json(serde_json::json!({
            "names": fg.names,
            "levels": fg.levels,
            "total": fg.total,
            "max_self": fg.max_self,
            "unit": unit,
            "measure": measure,
            "seconds": seconds,
            "profiles": profiles,
            "series": series,
        })),
    )
}
