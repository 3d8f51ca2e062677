//! `GET /api/v0/explore/catalog?from=MS&to=MS`: the stores, the profile types and the series
//! with a profile in the range, from which the UI derives services, label names and values.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query as QueryString, State};
use serde::Serialize;

use super::error::ApiError;
use super::params::Params;
use super::stores;
use crate::query::catalog::{LabelSet, type_ids};
use crate::query::selector::Selector;
use crate::query::source::ProfileSource as _;
use crate::server::AppState;

#[derive(Debug, Serialize, PartialEq)]
pub(super) struct Catalog {
    stores: Vec<String>,
    profile_types: Vec<TypeInfo>,
    series: Vec<SeriesInfo>,
}

#[derive(Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
struct TypeInfo {
    id: String,
    name: String,
    sample_type: String,
    sample_unit: String,
    period_type: String,
    period_unit: String,
}

#[derive(Debug, Serialize, PartialEq)]
struct SeriesInfo {
    labels: BTreeMap<String, String>,
    profile_types: Vec<String>,
}

pub(super) async fn catalog(
    State(state): State<AppState>,
    query: Result<QueryString<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<Catalog>, ApiError> {
    let (from, to) = Params::from_request(query)?.range("")?;
    stores::read("server.explore.catalog", &state.stores, move |s| {
        let sets = s.series(&Selector::default(), from, to)?;
        Ok(build(s.ids(), &sets))
    })
    .await
    .map(Json)
}

/// The answer from the stores' ids and their series (sorted and deduplicated).
fn build(stores: Vec<String>, sets: &[LabelSet]) -> Catalog {
    let mut types = BTreeSet::new();
    let series = sets
        .iter()
        .map(|set| {
            let name = set
                .iter()
                .find(|(k, _)| k == "__name__")
                .map_or("", |(_, v)| v.as_str());
            let ids = type_ids(name);
            for id in &ids {
                types.insert(type_info(id));
            }
            SeriesInfo {
                labels: set.iter().cloned().collect(),
                profile_types: ids,
            }
        })
        .collect();
    Catalog {
        stores,
        profile_types: types.into_iter().collect(),
        series,
    }
}

/// An ID's five parts; a bare name has empty ones.
fn type_info(id: &str) -> TypeInfo {
    let mut parts = id.split(':').map(str::to_string);
    let mut next = || parts.next().unwrap_or_default();
    TypeInfo {
        name: next(),
        sample_type: next(),
        sample_unit: next(),
        period_type: next(),
        period_unit: next(),
        id: id.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> LabelSet {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn series_carry_their_types_and_types_are_listed_once() {
        let sets = [
            set(&[("__name__", "process_cpu"), ("service_name", "a")]),
            set(&[("__name__", "process_cpu"), ("service_name", "b")]),
            set(&[("__name__", "custom"), ("service_name", "b")]),
        ];
        let c = build(vec!["pyroscope.store.local".into()], &sets);
        let json = serde_json::to_value(&c).expect("json");
        assert_eq!(
            json["profile_types"],
            serde_json::json!([
                {"id": "custom", "name": "custom", "sample_type": "", "sample_unit": "",
                 "period_type": "", "period_unit": ""},
                {"id": "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "name": "process_cpu",
                 "sample_type": "cpu", "sample_unit": "nanoseconds", "period_type": "cpu",
                 "period_unit": "nanoseconds"},
            ])
        );
        assert_eq!(
            json["series"][1],
            serde_json::json!({
                "labels": {"__name__": "process_cpu", "service_name": "b"},
                "profile_types": ["process_cpu:cpu:nanoseconds:cpu:nanoseconds"],
            })
        );
        assert_eq!(json["stores"], serde_json::json!(["pyroscope.store.local"]));
    }
}
