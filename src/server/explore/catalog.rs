//! `GET /api/v0/explore/catalog?from=MS&to=MS`: the stores, the profile types and the series
//! with a profile in the range, from which the UI derives services, label names and values.
//!
//! The contract: `{"stores": [component id], "profile_types": [{id, name, sample_type,
//! sample_unit, period_type, period_unit}], "series": [{labels: {name: value},
//! profile_types: [id]}]}`, types and series sorted, each listed once. A series' types are
//! the ones its newest profile in the range has (one per sample type, as Pyroscope lists
//! them: `query::types`), so a Go CPU series offers both `cpu` and `samples`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query as QueryString, State};
use serde::Serialize;

use super::error::ApiError;
use super::params::Params;
use super::stores;
use crate::query::catalog::LabelSet;
use crate::query::types::{SeriesType, TypedSeries};
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
    let types = state.types.clone();
    stores::read("server.explore.catalog", &state.stores, move |s| {
        let series = types.typed_series(s, from, to)?;
        Ok(build(s.ids().to_vec(), &series))
    })
    .await
    .map(Json)
}

/// The answer from the stores' ids and their typed series; a label set several stores hold is
/// listed once, with the types any of them has.
fn build(stores: Vec<String>, typed: &[TypedSeries]) -> Catalog {
    let mut by_labels: BTreeMap<&LabelSet, BTreeSet<&SeriesType>> = BTreeMap::new();
    for s in typed {
        by_labels
            .entry(&s.labels)
            .or_default()
            .extend(s.types.iter());
    }
    let types: BTreeSet<&SeriesType> = by_labels.values().flatten().copied().collect();
    let mut profile_types: Vec<TypeInfo> = types.into_iter().map(type_info).collect();
    profile_types.sort();
    let series = by_labels
        .into_iter()
        .map(|(labels, types)| {
            let mut ids: Vec<String> = types.into_iter().map(SeriesType::id).collect();
            ids.sort();
            SeriesInfo {
                labels: labels.iter().cloned().collect(),
                profile_types: ids,
            }
        })
        .collect();
    Catalog {
        stores,
        profile_types,
        series,
    }
}

fn type_info(t: &SeriesType) -> TypeInfo {
    TypeInfo {
        id: t.id(),
        name: t.name.clone(),
        sample_type: t.sample_type.clone(),
        sample_unit: t.sample_unit.clone(),
        period_type: t.period_type.clone(),
        period_unit: t.period_unit.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn typed(pairs: &[(&str, &str)], types: &[&str]) -> TypedSeries {
        let labels = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let types = types
            .iter()
            .map(|id| {
                let p: Vec<String> = id.split(':').map(str::to_string).collect();
                SeriesType {
                    name: p[0].clone(),
                    sample_type: p[1].clone(),
                    sample_unit: p[2].clone(),
                    period_type: p[3].clone(),
                    period_unit: p[4].clone(),
                }
            })
            .collect();
        TypedSeries {
            labels,
            types: Arc::new(types),
        }
    }

    const CPU: &str = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
    const SAMPLES: &str = "process_cpu:samples:count:cpu:nanoseconds";

    #[test]
    fn series_carry_their_own_types_and_types_are_listed_once() {
        let a = [("__name__", "process_cpu"), ("service_name", "a")];
        let b = [("__name__", "process_cpu"), ("service_name", "b")];
        let series = [
            // An eBPF series has only `cpu`; a Go one also `samples`.
            typed(&b, &[SAMPLES, CPU]),
            typed(&a, &[CPU]),
            // The same series in a second store, written by another producer.
            typed(&a, &["process_cpu:alloc:bytes::"]),
        ];
        let c = build(vec!["pyroscope.store.local".into()], &series);
        let json = serde_json::to_value(&c).expect("json");
        let ids: Vec<&str> = json["profile_types"]
            .as_array()
            .expect("types")
            .iter()
            .filter_map(|t| t["id"].as_str())
            .collect();
        assert_eq!(ids, ["process_cpu:alloc:bytes::", CPU, SAMPLES]);
        assert_eq!(
            json["profile_types"][1],
            serde_json::json!({"id": CPU, "name": "process_cpu", "sample_type": "cpu",
                "sample_unit": "nanoseconds", "period_type": "cpu", "period_unit": "nanoseconds"})
        );
        assert_eq!(
            json["series"],
            serde_json::json!([
                {"labels": {"__name__": "process_cpu", "service_name": "a"},
                 "profile_types": ["process_cpu:alloc:bytes::", CPU]},
                {"labels": {"__name__": "process_cpu", "service_name": "b"},
                 "profile_types": [CPU, SAMPLES]},
            ])
        );
        assert_eq!(json["stores"], serde_json::json!(["pyroscope.store.local"]));
        let empty = serde_json::to_value(build(vec![], &[])).expect("json");
        assert_eq!(
            empty,
            serde_json::json!({"stores": [], "profile_types": [], "series": []})
        );
    }
}
