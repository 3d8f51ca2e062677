//! Several local stores read as one source: what the running scraper's explorer answers from
//! when more than one `pyroscope.store` is open.
//!
//! Each store's profiles are merged as [`LocalSource`] merges them, then the per-store results
//! are merged once more; counts add up. Series of different stores are counted apart even
//! when their labels are equal (each store scraped its own copy); a profile forwarded to two
//! stores is therefore counted twice, as two stores hold it twice. Marks are recorded in every
//! store by `POST /api/v0/marks`, so the same (name, time) found in several is reported once.

use std::time::SystemTime;

use super::catalog::LabelSet;
use super::local::LocalSource;
use super::selector::Selector;
use super::source::{Mark, Merged, ProfileSource, Query, QueryError};

/// One profile's place in a timeline: which store and which of its series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeriesKey {
    /// Index of the store in [`Stores`].
    pub store: usize,
    /// The series id within that store.
    pub series: u64,
}

/// Stores by component id (`pyroscope.store.local`), in the order given.
pub struct Stores {
    stores: Vec<(String, LocalSource)>,
}

impl Stores {
    pub fn new(stores: Vec<(String, LocalSource)>) -> Stores {
        Stores { stores }
    }

    /// The component ids, in order.
    pub fn ids(&self) -> Vec<String> {
        self.stores.iter().map(|(id, _)| id.clone()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.stores.is_empty()
    }

    /// [`LocalSource::totals`] over every store; returns how many profiles were skipped.
    pub fn totals(
        &self,
        query: &Query,
        each: &mut dyn FnMut(SeriesKey, SystemTime, i64),
    ) -> Result<usize, QueryError> {
        let mut skipped = 0;
        for (store, (_, source)) in self.stores.iter().enumerate() {
            skipped += source.totals(query, &mut |series, at, total| {
                each(SeriesKey { store, series }, at, total)
            })?;
        }
        Ok(skipped)
    }
}

impl ProfileSource for Stores {
    fn select_merge(
        &self,
        query: &Query,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Option<Merged>, QueryError> {
        let mut parts = Vec::new();
        for (_, source) in &self.stores {
            if let Some(m) = source.select_merge(query, progress)? {
                parts.push(m);
            }
        }
        if parts.len() <= 1 {
            // One store's answer is passed on untouched: the same bytes `scraper query` gets
            // from that store.
            return Ok(parts.pop());
        }
        let profiles = parts.iter().map(|m| m.profiles).sum();
        let series = parts.iter().map(|m| m.series).sum();
        let merged: Vec<_> = parts.into_iter().map(|m| m.profile).collect();
        let profile = crate::pprof::merge(&merged).map_err(|e| QueryError::Merge(e.to_string()))?;
        Ok(Some(Merged {
            profile,
            profiles,
            series,
        }))
    }

    fn marks(&self, from: SystemTime, to: SystemTime) -> Result<Vec<Mark>, QueryError> {
        let mut all = Vec::new();
        for (_, source) in &self.stores {
            all.extend(source.marks(from, to)?);
        }
        all.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.name.cmp(&b.name)));
        all.dedup();
        Ok(all)
    }

    fn series(
        &self,
        selector: &Selector,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Vec<LabelSet>, QueryError> {
        let mut all = Vec::new();
        for (_, source) in &self.stores {
            all.extend(source.series(selector, from, to)?);
        }
        all.sort();
        all.dedup();
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::store::Db;

    fn store(dir: &std::path::Path, marks: &[(&str, u64)]) -> LocalSource {
        let db = Db::open(dir).expect("open");
        for (name, at) in marks {
            db.add_mark(name, UNIX_EPOCH + Duration::from_secs(*at))
                .expect("mark");
        }
        LocalSource::from_db(Arc::new(db))
    }

    #[test]
    fn marks_of_several_stores_are_merged_in_time_order_once() {
        let (a, b) = (
            tempfile::tempdir().expect("tempdir"),
            tempfile::tempdir().expect("tempdir"),
        );
        let stores = Stores::new(vec![
            (
                "pyroscope.store.a".into(),
                store(a.path(), &[("deploy", 20), ("start", 10)]),
            ),
            (
                "pyroscope.store.b".into(),
                store(b.path(), &[("deploy", 20), ("rollback", 30)]),
            ),
        ]);
        let marks = stores
            .marks(UNIX_EPOCH, UNIX_EPOCH + Duration::from_secs(100))
            .expect("marks");
        let got: Vec<(&str, u64)> = marks
            .iter()
            .map(|m| {
                let secs = m.at.duration_since(UNIX_EPOCH).expect("after epoch");
                (m.name.as_str(), secs.as_secs())
            })
            .collect();
        assert_eq!(got, [("start", 10), ("deploy", 20), ("rollback", 30)]);
        assert_eq!(stores.ids(), ["pyroscope.store.a", "pyroscope.store.b"]);
        assert!(!stores.is_empty());
    }
}
