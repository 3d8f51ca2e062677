//! Queries over the stores open in a running scraper (every `pyroscope.store`) read as one,
//! for the querier API and the explorer that `scraper run` serves. Blocking: call from a
//! blocking context.
//!
//! Besides what the querier needs (call trees, per-profile totals, the time span), [`Stores`]
//! is a [`ProfileSource`], so the explorer's downloads and diff are built by the same steps as
//! `scraper query`, `pgo` and `diff`: with one store, the merged pprof is the one
//! `scraper query --store` writes from it. Series of different stores are counted apart even
//! when their labels are equal (each store scraped its own copy); marks are recorded in every
//! store by `POST /api/v0/marks`, so the same (name, time) found in several is reported once.
//!
//! The same rules as `scraper query --store` ([`super::local`]): a series is read when its
//! `__name__` is the profile type's name and the selector matches its labels; a profile that
//! does not decode is skipped (the first such error is returned only when nothing at all could
//! be read), one that lacks the sample type is not read (an empty answer, as Pyroscope gives
//! for a type no series has); with `exclude_straddling` (a diff's windows) a profile
//! that started before the range is left out.
//!
//! Profiles are decoded on a few worker threads while the store is read on the caller's:
//! decompressing and decoding is most of a window's cost, and a flame graph or a total needs
//! no merged pprof. Workers share one call tree, locked only to name a profile's frames and
//! insert its stacks, and keep their own totals.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::catalog::LabelSet;
use super::local::{LocalSource, selects};
use super::selector::Selector;
use super::source::{Mark, Merged, ProfileSource, ProfileType, Query, QueryError};
use super::tree::{Batch, NameTree};
use crate::pprof::proto::Profile;
use crate::pprof::stacks::RawStacks;
use crate::store::{Db, OpenStores};

/// Decoding threads per query; the machine's parallelism, at most this.
const MAX_WORKERS: usize = 4;

/// A window's profiles as one call tree.
#[derive(Debug)]
pub struct Selection {
    pub tree: NameTree,
    /// Profiles read (skipped ones included, as `scraper query` counts them).
    pub profiles: usize,
    /// Distinct series they came from.
    pub series: usize,
    /// The time the profiles cover, summed (what `scraper diff` divides rates by).
    pub duration_nanos: i64,
}

/// One profile's total of the query's sample type.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileTotal {
    /// The series, numbered within one answer: series of different stores have different
    /// numbers even when their labels are equal.
    pub series: usize,
    pub labels: Arc<LabelSet>,
    pub at: SystemTime,
    pub total: i64,
}

/// The stores a query reads, sorted by component id (`pyroscope.store.local`).
#[derive(Clone, Debug, Default)]
pub struct Stores {
    ids: Vec<String>,
    dbs: Vec<Arc<Db>>,
}

/// The index of `ty`'s sample type among `types` (`(type, unit)` pairs), or why there is none.
pub fn sample_type_index(types: &[(&str, &str)], ty: &ProfileType) -> Result<usize, QueryError> {
    let (want_type, want_unit) = ty.sample_type();
    types
        .iter()
        .position(|(t, u)| *t == want_type && (want_unit.is_empty() || *u == want_unit))
        .ok_or_else(|| {
            let have: Vec<String> = types.iter().map(|(t, u)| format!("{t}/{u}")).collect();
            QueryError::Merge(format!(
                "profile has no {want_type}/{want_unit} samples (it has {})",
                have.join(", ")
            ))
        })
}

fn nanos(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// What a worker is handed: the series (index into the call's series table), the time and the
/// stored bytes.
type Job = (usize, SystemTime, Vec<u8>);

/// What [`Stores::decode_all`] found.
struct Decoded<S> {
    states: Vec<S>,
    /// Profiles read, skipped ones included.
    profiles: usize,
    /// Labels by the series index the work was given.
    series: Vec<Arc<LabelSet>>,
    /// The first profile skipped, and why.
    failure: Option<QueryError>,
}

/// The outcome of one worker.
struct Done<S> {
    state: S,
    failure: Option<QueryError>,
    /// Profiles that did not decode.
    failed: usize,
}

impl Stores {
    /// Stores by component id.
    pub fn new(mut stores: Vec<(String, Arc<Db>)>) -> Stores {
        // The registry's order is the order of registration, which a reload changes: sorted,
        // answers (and the ids listed) do not depend on it.
        stores.sort_by(|a, b| a.0.cmp(&b.0));
        let (ids, dbs) = stores.into_iter().unzip();
        Stores { ids, dbs }
    }

    /// Every store open in this process.
    pub fn running(open: &OpenStores) -> Stores {
        Stores::new(
            open.running()
                .into_iter()
                .map(|s| (s.component_id, s.db))
                .collect(),
        )
    }

    /// The component ids, in order.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    pub fn is_empty(&self) -> bool {
        self.dbs.is_empty()
    }

    pub fn dbs(&self) -> &[Arc<Db>] {
        &self.dbs
    }

    /// Each store as `scraper query --store` reads it.
    fn sources(&self) -> impl Iterator<Item = LocalSource> + '_ {
        self.dbs.iter().map(|db| LocalSource::from_db(db.clone()))
    }

    /// Runs `work` on every decoded profile of `query` on worker threads, each with its own
    /// state from `init`. Returns the states, the profiles read and the series table (labels
    /// by the index `work` is given).
    fn decode_all<S: Send>(
        &self,
        query: &Query,
        init: impl Fn() -> S + Sync,
        work: impl Fn(&mut S, usize, SystemTime, &mut RawStacks, usize) -> Result<(), QueryError> + Sync,
    ) -> Result<Decoded<S>, QueryError> {
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_WORKERS);
        let from = nanos(query.from);
        let limits = crate::pprof::Limits::default();
        let mut table: Vec<Arc<LabelSet>> = Vec::new();
        let mut done = 0usize;
        let outcome = std::thread::scope(|scope| {
            let (tx, rx) = mpsc::sync_channel::<Job>(workers * 2);
            let rx = Arc::new(std::sync::Mutex::new(rx));
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    let rx = rx.clone();
                    let (init, work, limits) = (&init, &work, &limits);
                    scope.spawn(move || {
                        let mut out = Done {
                            state: init(),
                            failure: None,
                            failed: 0,
                        };
                        let mut raw = RawStacks::new();
                        loop {
                            let job = crate::sync::lock(&rx).recv();
                            let Ok((series, at, bytes)) = job else { break };
                            let result = raw
                                .load(&bytes, limits)
                                .map_err(|e| QueryError::Merge(e.to_string()))
                                .and_then(|()| {
                                    // Started before the range (a diff's window).
                                    let t = raw.time_nanos();
                                    if query.exclude_straddling && t > 0 && t < from {
                                        return Ok(());
                                    }
                                    // A profile without the type is not one the query asks
                                    // for (Pyroscope selects series by type): no answer from
                                    // it, and no error either.
                                    let Ok(index) =
                                        sample_type_index(&raw.sample_types(), &query.profile_type)
                                    else {
                                        return Ok(());
                                    };
                                    work(&mut out.state, series, at, &mut raw, index)
                                });
                            if let Err(e) = result {
                                tracing::debug!(error = %e, "skipping a stored profile");
                                out.failed += 1;
                                out.failure.get_or_insert(e);
                            }
                        }
                        out
                    })
                })
                .collect();
            let mut read = || -> Result<(), QueryError> {
                for db in &self.dbs {
                    let mut ids: HashMap<u64, usize> = HashMap::new();
                    let filter = |labels: &[(String, String)]| selects(query, labels);
                    db.select(&filter, query.from, query.to, &mut |s, at, bytes| {
                        let index = *ids.entry(s.id).or_insert_with(|| {
                            table.push(Arc::new(s.labels.clone()));
                            table.len() - 1
                        });
                        done += 1;
                        // A closed channel means every worker is gone; nothing more to do.
                        let _ = tx.send((index, at, bytes.to_vec()));
                        Ok(())
                    })
                    .map_err(|e| {
                        QueryError::Store(format!("reading {}: {e}", db.path().display()))
                    })?;
                }
                Ok(())
            };
            let read = read();
            drop(tx);
            let results: Vec<Done<S>> = handles
                .into_iter()
                .map(|h| match h.join() {
                    Ok(d) => d,
                    Err(panic) => std::panic::resume_unwind(panic),
                })
                .collect();
            read.map(|()| results)
        })?;
        let mut failure = None;
        let mut failed = 0usize;
        let mut states = Vec::with_capacity(outcome.len());
        for d in outcome {
            failed += d.failed;
            if failure.is_none() {
                failure = d.failure;
            }
            states.push(d.state);
        }
        if let Some(e) = failure.as_ref().filter(|_| failed > 0) {
            // Stored profiles that no longer decode are damage someone must look at (the
            // store's integrity check, a disk problem): said at every query that meets them,
            // with the answer built from the rest.
            tracing::warn!(
                skipped = failed,
                read = done,
                first_error = %e,
                "stored profiles that do not decode were left out of a query"
            );
        }
        Ok(Decoded {
            states,
            profiles: done,
            series: table,
            failure,
        })
    }

    /// Every profile of `query` as one call tree; `call_site` keeps only the stacks starting
    /// with those frames. `None` when no profile matched.
    pub fn tree(
        &self,
        query: &Query,
        call_site: &[String],
    ) -> Result<Option<Selection>, QueryError> {
        // One tree shared by the workers: decoding and reading samples (most of the time) run
        // in parallel, the tree is locked only to name a profile's frames and to insert its
        // stacks. Per-worker trees merged at the end cost more: each grew to the whole tree.
        let shared = std::sync::Mutex::new(NameTree::with_call_site(call_site));
        let decoded = self.decode_all(
            query,
            || (Batch::default(), 0usize, 0i64),
            |(batch, added, duration), _, _, raw, index| {
                let frames = crate::sync::lock(&shared).prepare(raw);
                batch
                    .read(raw, &frames, index)
                    .map_err(|e| QueryError::Merge(e.to_string()))?;
                crate::sync::lock(&shared).insert_batch(batch);
                *added += 1;
                *duration = duration.saturating_add(raw.duration_nanos().max(0));
                Ok(())
            },
        )?;
        if decoded.profiles == 0 {
            return Ok(None);
        }
        let added: usize = decoded.states.iter().map(|(_, n, _)| n).sum();
        let duration_nanos = decoded
            .states
            .iter()
            .fold(0i64, |sum, (_, _, d)| sum.saturating_add(*d));
        if added == 0 {
            // Every profile was skipped: say why rather than answer "nothing".
            return match decoded.failure {
                Some(e) => Err(e),
                // Only profiles straddling the range's start, or without the sample type.
                None => Ok(None),
            };
        }
        let tree = shared
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (profiles, series) = (decoded.profiles, decoded.series);
        Ok(Some(Selection {
            tree,
            profiles,
            series: series.len(),
            duration_nanos,
        }))
    }

    /// Every profile of `query` with its total value, in no particular order. Profiles that
    /// do not decode or lack the sample type are skipped.
    pub fn totals(&self, query: &Query) -> Result<Vec<ProfileTotal>, QueryError> {
        let decoded = self.decode_all(
            query,
            Vec::new,
            |out: &mut Vec<(usize, SystemTime, i64)>, series, at, raw, index| {
                let mut total = 0i64;
                for i in 0..raw.sample_count() {
                    let (_, values) = raw
                        .read_sample(i)
                        .map_err(|e| QueryError::Merge(e.to_string()))?;
                    total = total.saturating_add(values.get(index).copied().unwrap_or(0));
                }
                out.push((series, at, total));
                Ok(())
            },
        )?;
        let table = decoded.series;
        Ok(decoded
            .states
            .into_iter()
            .flatten()
            .map(|(series, at, total)| ProfileTotal {
                series,
                labels: table[series].clone(),
                at,
                total,
            })
            .collect())
    }

    /// The stored series with profiles in `[from, to)`: `(store index, id, labels)`.
    pub fn series_in(
        &self,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Vec<(usize, u64, LabelSet)>, QueryError> {
        let mut out = Vec::new();
        for (d, db) in self.dbs.iter().enumerate() {
            let series = db
                .series_in(from, to)
                .map_err(|e| QueryError::Store(format!("reading {}: {e}", db.path().display())))?;
            out.extend(series.into_iter().map(|s| (d, s.id, s.labels)));
        }
        Ok(out)
    }

    /// The oldest and newest profile times over every store.
    pub fn time_span(&self) -> Result<Option<(SystemTime, SystemTime)>, QueryError> {
        let mut span: Option<(SystemTime, SystemTime)> = None;
        for db in &self.dbs {
            let stats = db
                .stats()
                .map_err(|e| QueryError::Store(format!("reading {}: {e}", db.path().display())))?;
            if let (Some(a), Some(b)) = (stats.oldest, stats.newest) {
                span = Some(match span {
                    Some((x, y)) => (x.min(a), y.max(b)),
                    None => (a, b),
                });
            }
        }
        Ok(span)
    }
}

impl ProfileSource for Stores {
    /// The merged pprof of `query`, as `scraper query --store` builds it, over every store;
    /// one store's answer is passed on untouched (the same bytes).
    fn select_merge(
        &self,
        query: &Query,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Option<Merged>, QueryError> {
        let mut parts = Vec::new();
        for source in self.sources() {
            if let Some(m) = source.select_merge(query, progress)? {
                parts.push(m);
            }
        }
        if parts.len() <= 1 {
            return Ok(parts.pop());
        }
        let (profiles, series) = (
            parts.iter().map(|m| m.profiles).sum(),
            parts.iter().map(|m| m.series).sum(),
        );
        let merged: Vec<Profile> = parts.into_iter().map(|m| m.profile).collect();
        let profile = crate::pprof::merge(&merged).map_err(|e| QueryError::Merge(e.to_string()))?;
        Ok(Some(Merged {
            profile,
            profiles,
            series,
        }))
    }

    fn marks(&self, from: SystemTime, to: SystemTime) -> Result<Vec<Mark>, QueryError> {
        let mut all = Vec::new();
        for source in self.sources() {
            all.extend(source.marks(from, to)?);
        }
        all.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.name.cmp(&b.name)));
        all.dedup();
        Ok(all)
    }

    /// Sorted, and a label set several stores hold is listed once.
    fn series(
        &self,
        selector: &Selector,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Vec<LabelSet>, QueryError> {
        let mut all = Vec::new();
        for source in self.sources() {
            all.extend(source.series(selector, from, to)?);
        }
        all.sort();
        all.dedup();
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::pprof::proto::{Sample, ValueType};

    const T0: u64 = 1_750_000_000;

    /// A store at `dir` with one CPU profile of `cpu_ns` at `T0 + 10 s` for service `app`,
    /// and `marks` (name, seconds after `T0`).
    fn store(dir: &std::path::Path, cpu_ns: i64, marks: &[(&str, u64)]) -> Arc<Db> {
        store_started(dir, cpu_ns, marks, T0 + 10)
    }

    /// [`store`], the profile having started at `started` (seconds) and arrived at `T0 + 10`.
    fn store_started(
        dir: &std::path::Path,
        cpu_ns: i64,
        marks: &[(&str, u64)],
        started: u64,
    ) -> Arc<Db> {
        let db = Db::open(dir).expect("open");
        let at = UNIX_EPOCH + Duration::from_secs(T0 + 10);
        let p = Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 2 }],
            sample: vec![Sample {
                value: vec![cpu_ns],
                ..Sample::default()
            }],
            time_nanos: nanos(UNIX_EPOCH + Duration::from_secs(started)),
            string_table: ["", "cpu", "nanoseconds"].map(String::from).to_vec(),
            ..Profile::default()
        };
        let labels = vec![
            ("__name__".to_string(), "process_cpu".to_string()),
            ("service_name".to_string(), "app".to_string()),
        ];
        let stored = crate::profiles::Profile {
            received_at: at,
            ..crate::profiles::Profile::new(labels, crate::pprof::encode(&p, 1))
        };
        db.append(&[stored]).expect("append");
        for (name, secs) in marks {
            db.add_mark(name, UNIX_EPOCH + Duration::from_secs(T0 + secs))
                .expect("mark");
        }
        Arc::new(db)
    }

    #[test]
    fn stores_read_as_one_count_their_series_apart_and_marks_once() {
        let (a, b) = (
            tempfile::tempdir().expect("tempdir"),
            tempfile::tempdir().expect("tempdir"),
        );
        // Given out of order: answers follow the ids.
        let stores = Stores::new(vec![
            (
                "pyroscope.store.b".into(),
                store(b.path(), 7, &[("deploy", 20), ("rollback", 30)]),
            ),
            (
                "pyroscope.store.a".into(),
                store(a.path(), 5, &[("deploy", 20), ("start", 1)]),
            ),
        ]);
        assert_eq!(stores.ids(), ["pyroscope.store.a", "pyroscope.store.b"]);
        let query = Query {
            selector: Selector::default(),
            profile_type: ProfileType::parse("process_cpu").expect("type"),
            from: UNIX_EPOCH + Duration::from_secs(T0),
            to: UNIX_EPOCH + Duration::from_secs(T0 + 60),
            exclude_straddling: false,
        };

        let mut totals = stores.totals(&query).expect("totals");
        totals.sort_by_key(|t| t.total);
        let got: Vec<i64> = totals.iter().map(|t| t.total).collect();
        assert_eq!(got, [5, 7]);
        assert_eq!(totals[0].labels, totals[1].labels);
        assert_ne!(totals[0].series, totals[1].series, "one series per store");

        let merged = stores
            .select_merge(&query, &mut |_, _| {})
            .expect("merge")
            .expect("some");
        assert_eq!((merged.profiles, merged.series), (2, 2));
        let sum: i64 = merged.profile.sample.iter().map(|s| s.value[0]).sum();
        assert_eq!(sum, 12);
        let series = stores
            .series(&Selector::default(), query.from, query.to)
            .expect("series");
        assert_eq!(series.len(), 1, "equal label sets are listed once");

        let marks = stores.marks(query.from, query.to).expect("marks");
        let got: Vec<(&str, u64)> = marks
            .iter()
            .map(|m| {
                let secs = m.at.duration_since(UNIX_EPOCH).expect("after epoch");
                (m.name.as_str(), secs.as_secs() - T0)
            })
            .collect();
        assert_eq!(got, [("start", 1), ("deploy", 20), ("rollback", 30)]);
    }

    /// A profile that started at `T0 + 8` and arrived at `T0 + 10` is in the range it arrived
    /// in, so adjacent ranges (a client's 24 h chunks) neither lose nor repeat it; a diff's
    /// window (`exclude_straddling`) starting at `T0 + 9` leaves it out.
    #[test]
    fn adjacent_ranges_split_profiles_and_diff_windows_leave_straddlers_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stores = Stores::new(vec![(
            "pyroscope.store.a".into(),
            store_started(dir.path(), 5, &[], T0 + 8),
        )]);
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(T0 + s);
        let range = |from: u64, to: u64, exclude_straddling: bool| Query {
            selector: Selector::default(),
            profile_type: ProfileType::parse("process_cpu").expect("type"),
            from: at(from),
            to: at(to),
            exclude_straddling,
        };
        let profiles = |q: &Query| -> usize {
            let merged = stores.select_merge(q, &mut |_, _| {}).expect("merge");
            let totals = stores.totals(q).expect("totals").len();
            let tree = stores.tree(q, &[]).expect("tree");
            let in_tree = tree.map_or(0, |t| t.profiles);
            let merged = merged.map_or(0, |m| m.profiles);
            assert_eq!(
                (merged, totals),
                (in_tree, in_tree),
                "the readers agree on {q:?}"
            );
            merged
        };
        assert_eq!(
            profiles(&range(0, 9, false)) + profiles(&range(9, 60, false)),
            1
        );
        assert_eq!(profiles(&range(9, 60, true)), 0);
        assert_eq!(profiles(&range(8, 60, true)), 1);

        // A type the profile does not have: an empty answer, not an error.
        let other = Query {
            profile_type: ProfileType::parse("process_cpu:samples:count:cpu:nanoseconds")
                .expect("type"),
            ..range(0, 60, false)
        };
        assert!(stores.tree(&other, &[]).expect("no error").is_none());
        assert!(stores.totals(&other).expect("no error").is_empty());
    }
}
