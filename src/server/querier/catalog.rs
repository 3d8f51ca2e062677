//! The querier's catalog methods: `ProfileTypes`, `LabelNames`, `LabelValues`, `Series` and
//! `GetProfileStats`. Each stored series is shown as Pyroscope shows it: once per profile type
//! of its profiles, with the type's labels (`__profile_type__`...), see `query::types`.

use std::collections::BTreeSet;
use std::time::UNIX_EPOCH;

use super::connect::ConnectError;
use super::request::{range, selectors};
use crate::protocols::pyroscope::proto::querier::v1 as q;
use crate::protocols::pyroscope::proto::types::v1 as t;
use crate::protocols::pyroscope::wire::Code;
use crate::query::catalog::LabelSet;
use crate::query::source::QueryError;
use crate::query::stores::Stores;
use crate::query::types::{SeriesType, TypeCache};

/// A store failure as the client sees it.
pub fn store_error(e: QueryError) -> ConnectError {
    match e {
        QueryError::Unsupported(m) => ConnectError::invalid(m),
        e => ConnectError::new(Code::Internal, e.to_string()),
    }
}

/// Every (series, type) with profiles in the range whose labels one of `matchers` selects
/// (every one when there are none), as label sets with the type's labels.
fn shown(
    stores: &Stores,
    cache: &TypeCache,
    matchers: &[String],
    start: i64,
    end: i64,
) -> Result<Vec<(LabelSet, SeriesType)>, ConnectError> {
    let selectors = selectors(matchers)?;
    let range = range(start, end)?;
    let mut out = Vec::new();
    for s in cache
        .typed_series(stores, range.from, range.to)
        .map_err(store_error)?
    {
        for ty in s.types.iter() {
            let labels = ty.series_labels(&s.labels);
            if selectors.is_empty() || selectors.iter().any(|sel| sel.matches_pairs(&labels)) {
                out.push((labels, ty.clone()));
            }
        }
    }
    Ok(out)
}

pub fn profile_types(
    stores: &Stores,
    cache: &TypeCache,
    req: q::ProfileTypesRequest,
) -> Result<q::ProfileTypesResponse, ConnectError> {
    let types: BTreeSet<SeriesType> = shown(stores, cache, &[], req.start, req.end)?
        .into_iter()
        .map(|(_, ty)| ty)
        .collect();
    let mut profile_types: Vec<t::ProfileType> = types
        .into_iter()
        .map(|ty| t::ProfileType {
            id: ty.id(),
            name: ty.name,
            sample_type: ty.sample_type,
            sample_unit: ty.sample_unit,
            period_type: ty.period_type,
            period_unit: ty.period_unit,
        })
        .collect();
    profile_types.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(q::ProfileTypesResponse { profile_types })
}

pub fn label_names(
    stores: &Stores,
    cache: &TypeCache,
    req: t::LabelNamesRequest,
) -> Result<t::LabelNamesResponse, ConnectError> {
    let names: BTreeSet<String> = shown(stores, cache, &req.matchers, req.start, req.end)?
        .into_iter()
        .flat_map(|(labels, _)| labels.into_iter().map(|(k, _)| k))
        .collect();
    Ok(t::LabelNamesResponse {
        names: names.into_iter().collect(),
    })
}

pub fn label_values(
    stores: &Stores,
    cache: &TypeCache,
    req: t::LabelValuesRequest,
) -> Result<t::LabelValuesResponse, ConnectError> {
    if req.name.is_empty() {
        return Err(ConnectError::invalid(
            "name (the label to list values of) is required",
        ));
    }
    let values: BTreeSet<String> = shown(stores, cache, &req.matchers, req.start, req.end)?
        .into_iter()
        .filter_map(|(labels, _)| {
            labels
                .into_iter()
                .find(|(k, _)| *k == req.name)
                .map(|(_, v)| v)
        })
        .collect();
    Ok(t::LabelValuesResponse {
        names: values.into_iter().collect(),
    })
}

pub fn series(
    stores: &Stores,
    cache: &TypeCache,
    req: q::SeriesRequest,
) -> Result<q::SeriesResponse, ConnectError> {
    let sets: BTreeSet<LabelSet> = shown(stores, cache, &req.matchers, req.start, req.end)?
        .into_iter()
        .map(|(labels, _)| {
            if req.label_names.is_empty() {
                labels
            } else {
                labels
                    .into_iter()
                    .filter(|(k, _)| req.label_names.contains(k))
                    .collect()
            }
        })
        .filter(|labels| !labels.is_empty())
        .collect();
    Ok(q::SeriesResponse {
        labels_set: sets.into_iter().map(|l| labels(&l)).collect(),
    })
}

/// `types.v1.Labels` of a label list.
pub fn labels(l: &[(String, String)]) -> t::Labels {
    t::Labels { labels: pairs(l) }
}

pub fn pairs(l: &[(String, String)]) -> Vec<t::LabelPair> {
    l.iter()
        .map(|(name, value)| t::LabelPair {
            name: name.clone(),
            value: value.clone(),
        })
        .collect()
}

pub fn profile_stats(stores: &Stores) -> Result<t::GetProfileStatsResponse, ConnectError> {
    let ms = |t: std::time::SystemTime| {
        t.duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    };
    Ok(match stores.time_span().map_err(store_error)? {
        Some((oldest, newest)) => t::GetProfileStatsResponse {
            data_ingested: true,
            oldest_profile_time: ms(oldest),
            newest_profile_time: ms(newest),
        },
        None => t::GetProfileStatsResponse::default(),
    })
}
