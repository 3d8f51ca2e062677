//! The local store (`pyroscope.store`'s directory) as a profile source.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use crate::pprof::proto::Profile;
use crate::store::db::Db;

use super::catalog::LabelSet;
use super::selector::Selector;
use super::source::{Mark, Merged, ProfileSource, Query, QueryError, reduce_to};

/// Profiles merged per step: bounds memory to a batch of decoded profiles plus the running
/// result, whatever the window length.
const MERGE_BATCH: usize = 64;

/// A store directory opened for reading.
pub struct LocalSource {
    db: Arc<Db>,
}

impl LocalSource {
    pub fn open(path: &Path) -> Result<LocalSource, QueryError> {
        let db = Db::open_read_only(path).map_err(|e| {
            QueryError::Store(format!("opening the store at {}: {e}", path.display()))
        })?;
        Ok(LocalSource { db: Arc::new(db) })
    }

    /// A source over an already open store (the running scraper's own handle: reading
    /// through it needs no snapshot).
    pub fn from_db(db: Arc<Db>) -> LocalSource {
        LocalSource { db }
    }
}

/// Whether a stored series with `labels` is one `query` reads.
pub fn selects(query: &Query, labels: &[(String, String)]) -> bool {
    labels
        .iter()
        .any(|(k, v)| k == "__name__" && *v == query.profile_type.name)
        && query.selector.matches_pairs(labels)
}

impl ProfileSource for LocalSource {
    fn select_merge(
        &self,
        query: &Query,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Option<Merged>, QueryError> {
        let filter = |labels: &[(String, String)]| selects(query, labels);
        let total = self
            .db
            .count(&filter, query.from, query.to)
            .map_err(|e| QueryError::Store(e.to_string()))?;
        let mut series = HashSet::new();
        let mut batch: Vec<Profile> = Vec::with_capacity(MERGE_BATCH + 1);
        let mut merged: Option<Profile> = None;
        let mut done = 0usize;
        let mut failure: Option<QueryError> = None;
        let limits = crate::pprof::Limits::default();
        let from_nanos = query
            .from
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        let flush =
            |batch: &mut Vec<Profile>, merged: &mut Option<Profile>| -> Result<(), QueryError> {
                if batch.is_empty() {
                    return Ok(());
                }
                if let Some(m) = merged.take() {
                    batch.push(m);
                }
                let m = crate::pprof::merge(batch).map_err(|e| QueryError::Merge(e.to_string()))?;
                batch.clear();
                *merged = Some(m);
                Ok(())
            };
        self.db
            .select(&filter, query.from, query.to, &mut |s, _at, bytes| {
                series.insert(s.id);
                done += 1;
                progress(done, total);
                // A profile that does not decode or lacks the type is skipped, not fatal: one bad
                // scrape must not hide a whole window. The first such error is reported if
                // nothing at all could be merged.
                match crate::pprof::decode(bytes, &limits)
                    .map_err(|e| QueryError::Merge(e.to_string()))
                    .and_then(|p| reduce_to(p, &query.profile_type))
                {
                    // Profiles are stored under the time they arrived (the end of a CPU
                    // profile's window); one that started before `from` straddles the window's
                    // start and would mix in the previous window (the workload before a mark),
                    // so it belongs to neither.
                    Ok(p)
                        if query.exclude_straddling
                            && p.time_nanos > 0
                            && p.time_nanos < from_nanos => {}
                    Ok(p) => batch.push(p),
                    Err(e) => {
                        tracing::debug!(error = %e, series = s.id, "skipping a stored profile");
                        failure.get_or_insert(e);
                    }
                }
                if batch.len() >= MERGE_BATCH
                    && let Err(e) = flush(&mut batch, &mut merged)
                {
                    failure.get_or_insert(e);
                    batch.clear();
                }
                Ok(())
            })
            .map_err(|e| QueryError::Store(e.to_string()))?;
        flush(&mut batch, &mut merged)?;
        match merged {
            Some(profile) => Ok(Some(Merged {
                profile,
                profiles: done,
                series: series.len(),
            })),
            None => match failure {
                Some(e) if done > 0 => Err(e),
                _ => Ok(None),
            },
        }
    }

    fn series(
        &self,
        selector: &Selector,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Vec<LabelSet>, QueryError> {
        Ok(self
            .db
            .series_in(from, to)
            .map_err(|e| QueryError::Store(e.to_string()))?
            .into_iter()
            .map(|s| s.labels)
            .filter(|labels| selector.matches_pairs(labels))
            .collect())
    }

    fn marks(&self, from: SystemTime, to: SystemTime) -> Result<Vec<Mark>, QueryError> {
        Ok(self
            .db
            .marks(from, to)
            .map_err(|e| QueryError::Store(e.to_string()))?
            .into_iter()
            .map(|(name, at)| Mark { name, at })
            .collect())
    }
}
