//! The profile types of stored series, as Pyroscope reports them.
//!
//! Pyroscope splits every pushed profile into one series per sample type, labelled with its
//! profile type ID (`__profile_type__ = name:type:unit:period_type:period_unit`) and its
//! parts (`__type__`, `__unit__`, `__period_type__`, `__period_unit__`). Our store keeps one
//! series per label set with every sample type inside the profiles, so the querier API learns
//! a series' types from its newest profile in the range and presents the series as Pyroscope
//! would: once per type, with those labels. The answer is cached per series: a series' sample
//! types come from the program that produces it and do not change.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::catalog::LabelSet;
use super::source::QueryError;
use super::stores::Stores;
use crate::pprof::proto::Profile;

/// The labels Pyroscope adds for a series' profile type.
pub const PROFILE_TYPE_LABEL: &str = "__profile_type__";
pub const TYPE_LABEL: &str = "__type__";
pub const UNIT_LABEL: &str = "__unit__";
pub const PERIOD_TYPE_LABEL: &str = "__period_type__";
pub const PERIOD_UNIT_LABEL: &str = "__period_unit__";

/// Every label derived from the type, which stored labels never carry.
pub const TYPE_LABELS: [&str; 5] = [
    PROFILE_TYPE_LABEL,
    TYPE_LABEL,
    UNIT_LABEL,
    PERIOD_TYPE_LABEL,
    PERIOD_UNIT_LABEL,
];

/// Entries kept before the cache starts over (series churn: pods come and go).
const MAX_CACHED: usize = 100_000;

/// One profile type of a series.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeriesType {
    pub name: String,
    pub sample_type: String,
    pub sample_unit: String,
    pub period_type: String,
    pub period_unit: String,
}

impl SeriesType {
    /// `name:type:unit:period_type:period_unit`.
    pub fn id(&self) -> String {
        format!(
            "{}:{}:{}:{}:{}",
            self.name, self.sample_type, self.sample_unit, self.period_type, self.period_unit
        )
    }

    /// The type's labels, as Pyroscope gives them to the series.
    pub fn labels(&self) -> [(String, String); 5] {
        [
            (PROFILE_TYPE_LABEL.to_string(), self.id()),
            (TYPE_LABEL.to_string(), self.sample_type.clone()),
            (UNIT_LABEL.to_string(), self.sample_unit.clone()),
            (PERIOD_TYPE_LABEL.to_string(), self.period_type.clone()),
            (PERIOD_UNIT_LABEL.to_string(), self.period_unit.clone()),
        ]
    }

    /// `labels` as Pyroscope shows a series of this type: the store's own `__delta__`
    /// dropped, the type's labels added, sorted by name.
    pub fn series_labels(&self, labels: &[(String, String)]) -> LabelSet {
        let mut out: LabelSet = labels
            .iter()
            .filter(|(k, _)| k != "__delta__" && !TYPE_LABELS.contains(&k.as_str()))
            .cloned()
            .collect();
        out.extend(self.labels());
        out.sort();
        out
    }
}

/// The profile types of a profile stored under `__name__` `name`: one per sample type.
pub fn types_of(p: &Profile, name: &str) -> Vec<SeriesType> {
    let s = |i: i64| {
        p.string_table
            .get(usize::try_from(i).unwrap_or(usize::MAX))
            .map_or("", String::as_str)
            .to_string()
    };
    let (period_type, period_unit) = p
        .period_type
        .as_ref()
        .map_or((String::new(), String::new()), |pt| {
            (s(pt.r#type), s(pt.unit))
        });
    p.sample_type
        .iter()
        .map(|vt| SeriesType {
            name: name.to_string(),
            sample_type: s(vt.r#type),
            sample_unit: s(vt.unit),
            period_type: period_type.clone(),
            period_unit: period_unit.clone(),
        })
        .collect()
}

/// A stored series with its profile types.
#[derive(Clone, Debug)]
pub struct TypedSeries {
    pub labels: LabelSet,
    pub types: Arc<Vec<SeriesType>>,
}

/// A cached series: its labels (to check the entry still means it) and its types.
type Entry = (LabelSet, Arc<Vec<SeriesType>>);

/// Series types by (store, series id), checked against the labels so that a store recreated
/// at the same path cannot answer with another series' types.
#[derive(Default)]
pub struct TypeCache {
    entries: Mutex<HashMap<(PathBuf, u64), Entry>>,
}

impl std::fmt::Debug for TypeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypeCache")
            .field("entries", &crate::sync::lock(&self.entries).len())
            .finish()
    }
}

impl TypeCache {
    /// Every series with profiles in `[from, to)` and its types. A series whose newest
    /// profile does not decode is left out (and logged).
    pub fn typed_series(
        &self,
        stores: &Stores,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Vec<TypedSeries>, QueryError> {
        let mut out = Vec::new();
        for (d, id, labels) in stores.series_in(from, to)? {
            let Some(db) = stores.dbs().get(d) else {
                continue;
            };
            let key = (db.path().to_path_buf(), id);
            let cached = crate::sync::lock(&self.entries)
                .get(&key)
                .filter(|(l, _)| *l == labels)
                .map(|(_, t)| t.clone());
            if let Some(types) = cached {
                out.push(TypedSeries { labels, types });
                continue;
            }
            let name = labels
                .iter()
                .find(|(k, _)| k == "__name__")
                .map_or("", |(_, v)| v.as_str())
                .to_string();
            let newest = db
                .last_profile(id, from, to)
                .map_err(|e| QueryError::Store(e.to_string()))?;
            let Some((_, bytes)) = newest else { continue };
            let types = match crate::pprof::decode(&bytes, &crate::pprof::Limits::default()) {
                Ok(p) => Arc::new(types_of(&p, &name)),
                Err(e) => {
                    tracing::debug!(error = %e, series = id, "the newest profile of a series does not decode");
                    continue;
                }
            };
            let mut entries = crate::sync::lock(&self.entries);
            if entries.len() >= MAX_CACHED {
                entries.clear();
            }
            entries.insert(key, (labels.clone(), types.clone()));
            drop(entries);
            out.push(TypedSeries { labels, types });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::proto::ValueType;

    #[test]
    fn a_go_cpu_profile_has_two_types_labelled_as_pyroscope_does() {
        let p = Profile {
            sample_type: vec![
                ValueType { r#type: 1, unit: 2 },
                ValueType { r#type: 3, unit: 4 },
            ],
            period_type: Some(ValueType { r#type: 3, unit: 4 }),
            string_table: ["", "samples", "count", "cpu", "nanoseconds"]
                .map(String::from)
                .to_vec(),
            ..Profile::default()
        };
        let types = types_of(&p, "process_cpu");
        let ids: Vec<String> = types.iter().map(SeriesType::id).collect();
        assert_eq!(
            ids,
            [
                "process_cpu:samples:count:cpu:nanoseconds",
                "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
            ]
        );
        let stored = vec![
            ("__delta__".to_string(), "false".to_string()),
            ("__name__".to_string(), "process_cpu".to_string()),
            ("service_name".to_string(), "app".to_string()),
        ];
        let shown = types[1].series_labels(&stored);
        let names: Vec<&str> = shown.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "__name__",
                "__period_type__",
                "__period_unit__",
                "__profile_type__",
                "__type__",
                "__unit__",
                "service_name"
            ]
        );
    }
}
