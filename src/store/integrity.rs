//! A full check of a store: redb's own (page checksums, B-tree structure, allocator state),
//! then ours: every profile decodes, belongs to a series, is indexed by time with its length,
//! and the totals match what is stored. Reads everything and decodes every profile, so it
//! takes about as long as reading the file plus decompressing it (seconds per GiB).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;

use redb::{ReadOnlyTable, ReadableTable, ReadableTableMetadata};

use super::db::{Db, Handle, Totals, lock};
use super::error::{AtPath, StoreError};
use super::keys::{BY_TIME, CHUNKS, META, SERIES, chunks_of, decode_labels};
use crate::pprof::Limits;
use crate::pprof::codec::{Inflater, is_gzip};
use crate::pprof::validate_raw;

/// Problems listed in full; the rest are only counted.
const MAX_LISTED: usize = 100;

/// What redb's own check said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedbCheck {
    /// Consistent.
    Clean,
    /// Inconsistent, and redb repaired it (rolled back to the last good commit).
    Repaired,
    /// Not run: redb checks only handles opened for writing (read-only handles are checked
    /// by redb's checksums as pages are read).
    Skipped,
}

/// The result of [`Db::check_integrity`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Integrity {
    pub redb: RedbCheck,
    pub series: u64,
    pub profiles: u64,
    pub bytes: u64,
    /// The first problems found, described.
    pub problems: Vec<String>,
    /// All problems found.
    pub problem_count: u64,
}

impl Integrity {
    /// No problem found in the data (a repair by redb is not one: it restored a consistent
    /// state, which our checks then verified).
    pub fn is_ok(&self) -> bool {
        self.problem_count == 0
    }
}

struct Checker<'t> {
    report: Integrity,
    by_time: &'t ReadOnlyTable<(u64, u64), u32>,
    series: HashMap<u64, bool>,
    totals: Totals,
    inflater: Inflater,
    scratch: Vec<u8>,
    limits: Limits,
}

impl Checker<'_> {
    fn problem(&mut self, message: String) {
        self.report.problem_count += 1;
        if self.report.problems.len() < MAX_LISTED {
            self.report.problems.push(message);
        }
    }

    fn profile(&mut self, series: u64, at: u64, bytes: &[u8]) -> Result<(), redb::StorageError> {
        let len = bytes.len() as u64;
        self.totals.profiles += 1;
        self.totals.bytes += len;
        self.totals.pages += chunks_of(len);
        match self.series.get_mut(&series) {
            Some(has_profiles) => *has_profiles = true,
            None => self.problem(format!(
                "profile at {at} of series {series}: no such series"
            )),
        }
        match self.by_time.get((at, series))?.map(|g| g.value()) {
            None => self.problem(format!(
                "profile at {at} of series {series}: missing from the time index"
            )),
            Some(indexed) if u64::from(indexed) != len => self.problem(format!(
                "profile at {at} of series {series}: {len} bytes stored, {indexed} indexed"
            )),
            Some(_) => {}
        }
        if !is_gzip(bytes) {
            self.problem(format!("profile at {at} of series {series}: not gzip"));
            return Ok(());
        }
        let checked = self
            .inflater
            .raw(bytes, &self.limits, &mut self.scratch)
            .and_then(validate_raw);
        if let Err(e) = checked {
            self.problem(format!("profile at {at} of series {series}: {e}"));
        }
        Ok(())
    }
}

impl Db {
    /// Checks the whole store; see the module documentation. `Err` only when the check
    /// itself could not run (I/O errors, redb refusing); problems in the data are reported in
    /// the result.
    pub fn check_integrity(&self) -> Result<Integrity, StoreError> {
        let redb = self.check_redb()?;
        let f = &self.file;
        let handle = self.read();
        let txn = self.begin_read(&handle)?;
        let by_time = txn.open_table(BY_TIME).at(f)?;
        let mut c = Checker {
            report: Integrity {
                redb,
                series: 0,
                profiles: 0,
                bytes: 0,
                problems: Vec::new(),
                problem_count: 0,
            },
            by_time: &by_time,
            series: HashMap::new(),
            totals: Totals::default(),
            inflater: Inflater::default(),
            scratch: Vec::new(),
            limits: Limits::default(),
        };

        for row in txn.open_table(SERIES).at(f)?.iter().at(f)? {
            let (id, labels) = row.at(f)?;
            let id = id.value();
            if let Err(e) = decode_labels(f, id, labels.value()) {
                c.problem(e.to_string());
            }
            c.series.insert(id, false);
        }

        let chunks = txn.open_table(CHUNKS).at(f)?;
        let mut buf = Vec::new();
        let mut current: Option<(u64, u64, u32)> = None;
        for row in chunks.iter().at(f)? {
            let (key, value) = row.at(f)?;
            let (series, at, index) = key.value();
            let continues =
                matches!(current, Some((s, t, next)) if s == series && t == at && next == index);
            if !continues {
                if let Some((s, t, _)) = current.take() {
                    c.profile(s, t, &buf).at(f)?;
                }
                buf.clear();
                if index != 0 {
                    c.problem(format!(
                        "profile at {at} of series {series}: starts at chunk {index}"
                    ));
                }
            }
            buf.extend_from_slice(value.value());
            current = Some((series, at, index.saturating_add(1)));
        }
        if let Some((s, t, _)) = current {
            c.profile(s, t, &buf).at(f)?;
        }

        let indexed = by_time.len().at(f)?;
        if indexed != c.totals.profiles {
            c.problem(format!(
                "the time index has {indexed} entries for {} profiles",
                c.totals.profiles
            ));
        }
        let recorded = Totals::load(&txn.open_table(META).at(f)?).at(f)?;
        if recorded != c.totals {
            c.problem(format!(
                "totals record {} profiles, {} bytes, {} pages; found {}, {}, {}",
                recorded.profiles,
                recorded.bytes,
                recorded.pages,
                c.totals.profiles,
                c.totals.bytes,
                c.totals.pages
            ));
        }
        let empty: Vec<u64> = c
            .series
            .iter()
            .filter(|(_, has)| !**has)
            .map(|(id, _)| *id)
            .collect();
        for id in empty {
            c.problem(format!("series {id} has no profiles"));
        }
        c.report.series = c.series.len() as u64;
        c.report.profiles = c.totals.profiles;
        c.report.bytes = c.totals.bytes;
        Ok(c.report)
    }

    fn check_redb(&self) -> Result<RedbCheck, StoreError> {
        let _w = lock(&self.writer);
        let mut handle = self.exclusive();
        let Handle::Rw(db) = &mut *handle else {
            return Ok(RedbCheck::Skipped);
        };
        // redb requires that no transaction is alive (it panics otherwise); holding both of
        // our locks guarantees that, but a panic must not take the caller down if it does.
        match std::panic::catch_unwind(AssertUnwindSafe(|| db.check_integrity())) {
            Ok(Ok(true)) => Ok(RedbCheck::Clean),
            Ok(Ok(false)) => Ok(RedbCheck::Repaired),
            Ok(Err(e)) => Err(e).at(&self.file),
            Err(_) => Err(StoreError::corrupt(
                &self.file,
                "redb's integrity check panicked",
            )),
        }
    }
}
