//! The engine behind `pyroscope.store`: profiles in a redb database, `<dir>/profiles.redb`.
//!
//! redb is a copy-on-write B-tree with checksummed pages: a commit either fully happens or not
//! at all, so a store killed at any moment reopens with every committed batch and nothing of
//! the batch in flight. Every commit here uses redb's quick-repair mode (the allocator state
//! is saved with the commit), so reopening after a crash is instant instead of a walk over
//! the whole file, and a reader can open the file read-only right after a crash.
//!
//! Concurrency: one writer at a time (appends, marks, retention and snapshots serialize on
//! [`Db`]'s writer lock), any number of concurrent readers, each seeing the last commit made
//! before it started. Across processes redb takes an exclusive file lock for writing and a
//! shared one for reading; see [`Db::open_read_only`] for what a reader does while
//! `scraper run` holds the store.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::SystemTime;

use redb::{
    Builder, Database, DatabaseError, ReadOnlyDatabase, ReadTransaction, ReadableDatabase,
    ReadableTable, ReadableTableMetadata, StorageError, Table, TransactionError, WriteTransaction,
};

use super::error::{AtPath, StoreError, io};
use super::keys::{
    BY_TIME, CHUNK, CHUNKS, MARKS, META, META_BYTES, META_PAGES, META_PROFILES, META_VERSION, PAGE,
    SERIES, VERSION, chunks_of, decode_labels, encode_labels, from_nanos, to_nanos,
};
use super::snapshot;
use crate::pprof::codec::{Deflater, is_gzip};
use crate::profiles::{Label, Profile};
use crate::protocols::pyroscope::labels::prepare_profile;

/// The database file inside a store directory.
pub const FILE: &str = "profiles.redb";

/// redb's default cache is 1 GiB, far more than an agent should hold; the writer mostly
/// appends, so a small cache loses little.
const WRITE_CACHE: usize = 64 << 20;
/// Queries read a lot once; a larger cache only helps repeated queries in one process.
const READ_CACHE: usize = 256 << 20;
/// gzip level for profiles that arrive uncompressed (rare: producers send gzip).
const GZIP_LEVEL: u32 = crate::pprof::DEFAULT_LEVEL;
/// Longest accepted mark name.
const MAX_MARK: usize = 1024;

/// One stored series: its labels as Pyroscope would store them (private `__*` labels dropped
/// except `__name__` and `__delta__`, empty values dropped, sorted by name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Series {
    pub id: u64,
    pub labels: Vec<Label>,
}

impl Series {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What [`Db::select`] calls for every profile: its series, time and stored (gzip) bytes.
pub type Visit<'a> = dyn FnMut(&Series, SystemTime, &[u8]) -> Result<(), StoreError> + 'a;

/// How a [`Db`] was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// [`Db::open`]: the one writer.
    ReadWrite,
    /// [`Db::open_read_only`] on the store itself (no writer was running).
    ReadOnly,
    /// [`Db::open_read_only`] on a copy made by the running writer: a consistent snapshot of
    /// the moment the request was served.
    Snapshot,
}

/// What one [`Db::append`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Appended {
    /// Profiles stored.
    pub profiles: usize,
    /// Their stored (gzip) bytes.
    pub bytes: u64,
    /// Series seen for the first time.
    pub new_series: usize,
    /// Skipped: labels Pyroscope would refuse (none left, duplicate or invalid name).
    pub invalid_labels: usize,
    /// Skipped: no profile bytes, or more than 4 GiB of them.
    pub invalid_profile: usize,
    /// Why the first skipped profile was skipped.
    pub first_skip: Option<String>,
}

/// Store-wide numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub series: u64,
    pub profiles: u64,
    /// Stored profile bytes (gzip).
    pub bytes: u64,
    /// The pages those bytes occupy ([`Stats::bytes`] rounded up per profile to whole 4 KiB
    /// pages): what `max_size` bounds.
    pub data_bytes: u64,
    /// Size of the database file (data, index pages, free pages kept for reuse).
    pub file_bytes: u64,
    pub marks: u64,
    pub oldest: Option<SystemTime>,
    pub newest: Option<SystemTime>,
}

/// The running totals kept in `meta`, updated in the same transaction as the data they count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub profiles: u64,
    pub bytes: u64,
    pub pages: u64,
}

impl Totals {
    pub(crate) fn load(
        meta: &impl ReadableTable<&'static str, u64>,
    ) -> Result<Totals, StorageError> {
        let get = |k: &str| -> Result<u64, StorageError> {
            Ok(meta.get(k)?.map(|g| g.value()).unwrap_or(0))
        };
        Ok(Totals {
            profiles: get(META_PROFILES)?,
            bytes: get(META_BYTES)?,
            pages: get(META_PAGES)?,
        })
    }

    pub(crate) fn store(&self, meta: &mut Table<&str, u64>) -> Result<(), StorageError> {
        meta.insert(META_PROFILES, self.profiles)?;
        meta.insert(META_BYTES, self.bytes)?;
        meta.insert(META_PAGES, self.pages)?;
        Ok(())
    }

    pub(crate) fn data_bytes(&self) -> u64 {
        self.pages.saturating_mul(PAGE)
    }
}

pub(crate) enum Handle {
    Rw(Database),
    Ro(ReadOnlyDatabase),
}

impl Handle {
    fn begin_read(&self) -> Result<ReadTransaction, TransactionError> {
        match self {
            Handle::Rw(db) => db.begin_read(),
            Handle::Ro(db) => db.begin_read(),
        }
    }
}

/// State only the writer touches.
pub(crate) struct Writer {
    /// Encoded labels to series id: every series in the `series` table, so an append needs no
    /// lookup on disk. Changed only after the transaction that changes the table commits.
    pub(crate) series: HashMap<Vec<u8>, u64>,
    pub(crate) next_series: u64,
    deflater: Deflater,
}

/// A profile store. `Send + Sync`: share it through an `Arc`.
pub struct Db {
    pub(crate) dir: PathBuf,
    pub(crate) file: PathBuf,
    pub(crate) handle: RwLock<Handle>,
    pub(crate) writer: Mutex<Writer>,
    mode: Mode,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.dir)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}
pub(crate) use crate::sync::lock;

impl Db {
    /// Opens the store in directory `dir` for writing, creating the directory and the database
    /// if needed. An existing store is checked for its format version and table types (the
    /// full check is [`Db::check_integrity`]); if it was not closed cleanly redb recovers the
    /// last commit. [`StoreError::Locked`] if another handle holds it.
    pub fn open(dir: &Path) -> Result<Db, StoreError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let file = dir.join(FILE);
        snapshot::remove_stale(dir);
        let db = match Builder::new().set_cache_size(WRITE_CACHE).create(&file) {
            Ok(db) => db,
            Err(DatabaseError::DatabaseAlreadyOpen) => {
                return Err(StoreError::Locked {
                    path: dir.to_path_buf(),
                    hint: String::new(),
                });
            }
            Err(e) => return Err(e).at(&file),
        };
        let writer = initialize(&db, &file)?;
        Ok(Db {
            dir: dir.to_path_buf(),
            file,
            handle: RwLock::new(Handle::Rw(db)),
            writer: Mutex::new(writer),
            mode: Mode::ReadWrite,
        })
    }

    /// Opens the store in `dir` for reading, without stopping a `scraper run` that writes it.
    ///
    /// redb 3 locks the file (flock): a writer holds an exclusive lock, readers a shared one,
    /// so a second process can open a store read-only only while nobody writes it, and reading
    /// the file behind a live writer's back is unsafe (pages of old commits are reused). So:
    ///
    /// 1. No writer: the file is opened read-only, in place ([`Mode::ReadOnly`]).
    /// 2. A writer holds it: we ask it for a snapshot by creating `snapshot-*.request` in the
    ///    store directory. A running `pyroscope.store` checks for requests every second; it
    ///    commits (so the copy opens without repair), copies the file while holding its write
    ///    lock and renames the copy into place. We open the copy ([`Mode::Snapshot`]) and
    ///    unlink it at once, so it disappears when this handle is dropped. Costs: the whole
    ///    file is copied (up to `max_size`; ~300 MB/s on a plain SSD, nearly free where
    ///    `copy_file_range` shares extents, as on Btrfs), it takes that much disk space while
    ///    open, and the writer's appends wait for the copy (its queue absorbs them).
    /// 3. Nobody answers within 60 s (the holder is not a running store, or the directory is
    ///    not writable): [`StoreError::Locked`], telling the user to stop `scraper run` or to
    ///    query through it.
    ///
    /// A store redb considers not closed cleanly (its writer was killed before completing a
    /// single commit) cannot be opened read-only; it is then opened for writing once, which
    /// repairs it, and reopened read-only.
    pub fn open_read_only(dir: &Path) -> Result<Db, StoreError> {
        let file = dir.join(FILE);
        if !file.is_file() {
            return Err(StoreError::NotFound {
                path: dir.to_path_buf(),
            });
        }
        match open_shared(dir, &file)? {
            Some(db) => Ok(db),
            None => snapshot::request(dir, &file),
        }
    }

    /// Wraps a snapshot copy made for us (see [`snapshot::request`]).
    pub(crate) fn from_snapshot(dir: &Path, copy: &Path) -> Result<Db, StoreError> {
        let db = Builder::new()
            .set_cache_size(READ_CACHE)
            .open(copy)
            .at(copy)?;
        let handle = Handle::Rw(db);
        check_version(&handle, copy)?;
        Ok(Db::reader(dir, copy, handle, Mode::Snapshot))
    }

    fn reader(dir: &Path, file: &Path, handle: Handle, mode: Mode) -> Db {
        Db {
            dir: dir.to_path_buf(),
            file: file.to_path_buf(),
            handle: RwLock::new(handle),
            writer: Mutex::new(Writer {
                series: HashMap::new(),
                next_series: 0,
                deflater: Deflater::new(GZIP_LEVEL),
            }),
            mode,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The store directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Handle> {
        crate::sync::read(&self.handle)
    }

    pub(crate) fn exclusive(&self) -> RwLockWriteGuard<'_, Handle> {
        crate::sync::write(&self.handle)
    }

    /// A write transaction, refused on read-only and snapshot handles (a snapshot is a private
    /// copy; writing it would silently lose the writes).
    pub(crate) fn begin_write(&self, handle: &Handle) -> Result<WriteTransaction, StoreError> {
        let (Mode::ReadWrite, Handle::Rw(db)) = (self.mode, handle) else {
            return Err(StoreError::ReadOnly {
                path: self.dir.clone(),
            });
        };
        let mut txn = db.begin_write().at(&self.file)?;
        txn.set_quick_repair(true);
        Ok(txn)
    }

    pub(crate) fn begin_read(&self, handle: &Handle) -> Result<ReadTransaction, StoreError> {
        handle.begin_read().at(&self.file)
    }

    /// Stores a batch in one transaction: all of it or, on error, none of it.
    ///
    /// Labels are filtered as `pyroscope.write` filters them (profiles whose labels Pyroscope
    /// would refuse are skipped and counted in the result). Bytes are stored gzipped: as
    /// received when they already are, compressed here otherwise. Two profiles of one series
    /// with the same timestamp are both kept, the later one nudged by a nanosecond.
    ///
    /// The bytes are not decoded: producers validate what they forward (`pyroscope.scrape`
    /// fully decodes every profile), and decoding again would double the writer's CPU.
    pub fn append(&self, batch: &[Profile]) -> Result<Appended, StoreError> {
        let mut w = lock(&self.writer);
        let mut result = Appended::default();
        let skip = |result: &mut Appended, why: String| {
            if result.first_skip.is_none() {
                result.first_skip = Some(why);
            }
        };
        let mut items: Vec<(Vec<u8>, u64, Cow<'_, [u8]>)> = Vec::with_capacity(batch.len());
        for p in batch {
            let labels = match prepare_profile(p, &[]) {
                Ok(l) => l,
                Err(e) => {
                    result.invalid_labels += 1;
                    skip(&mut result, format!("invalid labels: {e}"));
                    continue;
                }
            };
            if p.raw.is_empty() || u32::try_from(p.raw.len()).is_err() {
                result.invalid_profile += 1;
                skip(&mut result, format!("profile of {} bytes", p.raw.len()));
                continue;
            }
            let bytes = if is_gzip(&p.raw) {
                Cow::Borrowed(&p.raw[..])
            } else {
                let mut out = Vec::new();
                w.deflater.gzip_into(&p.raw, &mut out);
                Cow::Owned(out)
            };
            if u32::try_from(bytes.len()).is_err() {
                result.invalid_profile += 1;
                skip(&mut result, format!("profile of {} bytes", bytes.len()));
                continue;
            }
            items.push((encode_labels(&labels), to_nanos(p.received_at), bytes));
        }
        if items.is_empty() {
            return Ok(result);
        }

        let handle = self.read();
        let txn = self.begin_write(&handle)?;
        let mut created: HashMap<Vec<u8>, u64> = HashMap::new();
        {
            let f = &self.file;
            let mut series = txn.open_table(SERIES).at(f)?;
            let mut chunks = txn.open_table(CHUNKS).at(f)?;
            let mut by_time = txn.open_table(BY_TIME).at(f)?;
            let mut meta = txn.open_table(META).at(f)?;
            let mut totals = Totals::load(&meta).at(f)?;
            for (key, at, bytes) in &items {
                let id = match w.series.get(key).or_else(|| created.get(key)) {
                    Some(id) => *id,
                    None => {
                        let id = w.next_series + created.len() as u64;
                        series.insert(id, key.as_slice()).at(f)?;
                        created.insert(key.clone(), id);
                        id
                    }
                };
                let mut at = *at;
                while by_time.get((at, id)).at(f)?.is_some() {
                    at = at.saturating_add(1);
                }
                let len = bytes.len() as u64;
                // Checked above: fits.
                by_time.insert((at, id), len as u32).at(f)?;
                for (i, chunk) in bytes.chunks(CHUNK).enumerate() {
                    chunks.insert((id, at, i as u32), chunk).at(f)?;
                }
                totals.profiles += 1;
                totals.bytes += len;
                totals.pages += chunks_of(len);
                result.profiles += 1;
                result.bytes += len;
            }
            totals.store(&mut meta).at(f)?;
        }
        txn.commit().at(&self.file)?;
        result.new_series = created.len();
        w.next_series += created.len() as u64;
        w.series.extend(created);
        Ok(result)
    }

    /// Every series, by id.
    pub fn series(&self) -> Result<Vec<Series>, StoreError> {
        let handle = self.read();
        let txn = self.begin_read(&handle)?;
        self.all_series(&txn)
    }

    /// The series with at least one profile in `[from, to)`: one index seek per series, so
    /// cheap even for long ranges.
    pub fn series_in(&self, from: SystemTime, to: SystemTime) -> Result<Vec<Series>, StoreError> {
        let (from, to) = (to_nanos(from), to_nanos(to));
        if from >= to {
            return Ok(Vec::new());
        }
        let f = &self.file;
        let handle = self.read();
        let txn = self.begin_read(&handle)?;
        let chunks = txn.open_table(CHUNKS).at(f)?;
        let mut out = Vec::new();
        for s in self.all_series(&txn)? {
            if chunks
                .range((s.id, from, 0)..(s.id, to, 0))
                .at(f)?
                .next()
                .is_some()
            {
                out.push(s);
            }
        }
        Ok(out)
    }

    pub(crate) fn all_series(&self, txn: &ReadTransaction) -> Result<Vec<Series>, StoreError> {
        let f = &self.file;
        let table = txn.open_table(SERIES).at(f)?;
        let mut out = Vec::new();
        for row in table.iter().at(f)? {
            let (id, labels) = row.at(f)?;
            let id = id.value();
            out.push(Series {
                id,
                labels: decode_labels(f, id, labels.value())?,
            });
        }
        Ok(out)
    }

    /// Calls `each` with every profile in `[from, to)` of the series whose labels `series`
    /// accepts: series by series, each in time order, with the bytes as stored (gzip). Stops
    /// at the first error `each` returns and returns it. Returns how many profiles `each` got.
    ///
    /// Reads one consistent state: profiles committed while this runs are not seen. `each`
    /// must not call [`Db::check_integrity`] on the same handle (it waits for readers).
    pub fn select(
        &self,
        series: &dyn Fn(&[Label]) -> bool,
        from: SystemTime,
        to: SystemTime,
        each: &mut Visit<'_>,
    ) -> Result<usize, StoreError> {
        let (from, to) = (to_nanos(from), to_nanos(to));
        if from >= to {
            return Ok(0);
        }
        let f = &self.file;
        let handle = self.read();
        let txn = self.begin_read(&handle)?;
        let chunks = txn.open_table(CHUNKS).at(f)?;
        let mut buf = Vec::new();
        let mut n = 0;
        for s in self.all_series(&txn)? {
            if !series(&s.labels) {
                continue;
            }
            let mut current: Option<(u64, u32)> = None;
            for row in chunks.range((s.id, from, 0)..(s.id, to, 0)).at(f)? {
                let (key, value) = row.at(f)?;
                let (_, at, index) = key.value();
                if index == 0 {
                    if let Some((prev, _)) = current.take() {
                        each(&s, from_nanos(prev), &buf)?;
                        n += 1;
                    }
                    buf.clear();
                } else if current != Some((at, index)) {
                    return Err(StoreError::corrupt(
                        f,
                        format!(
                            "series {} at {at}: chunk {index} without its predecessor",
                            s.id
                        ),
                    ));
                }
                buf.extend_from_slice(value.value());
                current = Some((at, index + 1));
            }
            if let Some((at, _)) = current {
                each(&s, from_nanos(at), &buf)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// The newest profile of series `id` in `[from, to)` (its time and stored gzip bytes):
    /// what a reader needs to learn a series' sample types without reading the whole range.
    pub fn last_profile(
        &self,
        id: u64,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Option<(SystemTime, Vec<u8>)>, StoreError> {
        let (from, to) = (to_nanos(from), to_nanos(to));
        if from >= to {
            return Ok(None);
        }
        let f = &self.file;
        let handle = self.read();
        let txn = self.begin_read(&handle)?;
        let chunks = txn.open_table(CHUNKS).at(f)?;
        let Some(last) = chunks.range((id, from, 0)..(id, to, 0)).at(f)?.next_back() else {
            return Ok(None);
        };
        let at = last.at(f)?.0.value().1;
        let mut buf = Vec::new();
        for (expected, row) in chunks
            .range((id, at, 0)..=(id, at, u32::MAX))
            .at(f)?
            .enumerate()
        {
            let (key, value) = row.at(f)?;
            if usize::try_from(key.value().2).ok() != Some(expected) {
                return Err(StoreError::corrupt(
                    f,
                    format!("series {id} at {at}: chunk {} out of order", key.value().2),
                ));
            }
            buf.extend_from_slice(value.value());
        }
        Ok(Some((from_nanos(at), buf)))
    }

    /// How many profiles [`Db::select`] would return, reading only the time index.
    pub fn count(
        &self,
        series: &dyn Fn(&[Label]) -> bool,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<usize, StoreError> {
        let (from, to) = (to_nanos(from), to_nanos(to));
        if from >= to {
            return Ok(0);
        }
        let f = &self.file;
        let handle = self.read();
        let txn = self.begin_read(&handle)?;
        let wanted: HashSet<u64> = self
            .all_series(&txn)?
            .into_iter()
            .filter(|s| series(&s.labels))
            .map(|s| s.id)
            .collect();
        if wanted.is_empty() {
            return Ok(0);
        }
        let by_time = txn.open_table(BY_TIME).at(f)?;
        let mut n = 0;
        for row in by_time.range((from, 0)..(to, 0)).at(f)? {
            let (key, _) = row.at(f)?;
            if wanted.contains(&key.value().1) {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Records an event ("upgrade to 0.101.0 started") at `at`. Marks older than the
    /// retention are removed with the profiles.
    pub fn add_mark(&self, name: &str, at: SystemTime) -> Result<(), StoreError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(StoreError::InvalidMark("the name is empty".into()));
        }
        if name.len() > MAX_MARK {
            return Err(StoreError::InvalidMark(format!(
                "the name is {} bytes long, at most {MAX_MARK} are accepted",
                name.len()
            )));
        }
        let _w = lock(&self.writer);
        let handle = self.read();
        let txn = self.begin_write(&handle)?;
        txn.open_table(MARKS)
            .at(&self.file)?
            .insert((to_nanos(at), name), ())
            .at(&self.file)?;
        txn.commit().at(&self.file)
    }

    /// Marks in `[from, to)`, oldest first.
    pub fn marks(
        &self,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Vec<(String, SystemTime)>, StoreError> {
        let (from, to) = (to_nanos(from), to_nanos(to));
        if from >= to {
            return Ok(Vec::new());
        }
        let f = &self.file;
        let handle = self.read();
        let txn = self.begin_read(&handle)?;
        let marks = txn.open_table(MARKS).at(f)?;
        let mut out = Vec::new();
        for row in marks.range((from, "")..(to, "")).at(f)? {
            let (key, _) = row.at(f)?;
            let (at, name) = key.value();
            out.push((name.to_string(), from_nanos(at)));
        }
        Ok(out)
    }

    /// Counts, sizes and the time span of what is stored. Cheap: reads the totals and the two
    /// ends of the time index.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        let f = &self.file;
        let handle = self.read();
        let txn = self.begin_read(&handle)?;
        let totals = Totals::load(&txn.open_table(META).at(f)?).at(f)?;
        let by_time = txn.open_table(BY_TIME).at(f)?;
        let oldest = by_time.first().at(f)?.map(|(k, _)| from_nanos(k.value().0));
        let newest = by_time.last().at(f)?.map(|(k, _)| from_nanos(k.value().0));
        Ok(Stats {
            series: txn.open_table(SERIES).at(f)?.len().at(f)?,
            profiles: totals.profiles,
            bytes: totals.bytes,
            data_bytes: totals.data_bytes(),
            file_bytes: std::fs::metadata(f).map(|m| m.len()).unwrap_or(0),
            marks: txn.open_table(MARKS).at(f)?.len().at(f)?,
            oldest,
            newest,
        })
    }
}

/// Creates the tables of a new store, or checks an existing one's version; fills the series
/// index. Nothing is committed when the check fails.
fn initialize(db: &Database, file: &Path) -> Result<Writer, StoreError> {
    let mut txn = db.begin_write().at(file)?;
    txn.set_quick_repair(true);
    let mut index = HashMap::new();
    let mut next_series = 0;
    {
        let mut meta = txn.open_table(META).at(file)?;
        let version = meta.get(META_VERSION).at(file)?.map(|g| g.value());
        let chunks = txn.open_table(CHUNKS).at(file)?;
        match version {
            Some(VERSION) => {}
            Some(found) => {
                return Err(StoreError::Version {
                    path: file.to_path_buf(),
                    found,
                    expected: VERSION,
                });
            }
            None if !chunks.is_empty().at(file)? => {
                return Err(StoreError::corrupt(file, "profiles but no format version"));
            }
            None => {
                meta.insert(META_VERSION, VERSION).at(file)?;
                Totals::default().store(&mut meta).at(file)?;
            }
        }
        txn.open_table(BY_TIME).at(file)?;
        txn.open_table(MARKS).at(file)?;
        let series = txn.open_table(SERIES).at(file)?;
        for row in series.iter().at(file)? {
            let (id, labels) = row.at(file)?;
            index.insert(labels.value().to_vec(), id.value());
            next_series = next_series.max(id.value() + 1);
        }
    }
    txn.commit().at(file)?;
    Ok(Writer {
        series: index,
        next_series,
        deflater: Deflater::new(GZIP_LEVEL),
    })
}

/// Checks a store opened for reading: the version, and that every table exists.
fn check_version(handle: &Handle, file: &Path) -> Result<(), StoreError> {
    let txn = handle.begin_read().at(file)?;
    let version = txn
        .open_table(META)
        .at(file)?
        .get(META_VERSION)
        .at(file)?
        .map(|g| g.value());
    match version {
        Some(VERSION) => {}
        Some(found) => {
            return Err(StoreError::Version {
                path: file.to_path_buf(),
                found,
                expected: VERSION,
            });
        }
        None => return Err(StoreError::corrupt(file, "no format version")),
    }
    txn.open_table(SERIES).at(file)?;
    txn.open_table(CHUNKS).at(file)?;
    txn.open_table(BY_TIME).at(file)?;
    txn.open_table(MARKS).at(file)?;
    Ok(())
}

/// Opens `file` with a shared lock. `None` when a writer holds it.
pub(crate) fn open_shared(dir: &Path, file: &Path) -> Result<Option<Db>, StoreError> {
    let builder = || {
        let mut b = Builder::new();
        b.set_cache_size(READ_CACHE);
        b
    };
    let ro = match builder().open_read_only(file) {
        Ok(db) => db,
        Err(DatabaseError::DatabaseAlreadyOpen) => return Ok(None),
        Err(DatabaseError::RepairAborted) => {
            // Not closed cleanly, and redb does not repair read-only: a writable open repairs
            // it, closing that handle saves the allocator state, then read-only works.
            match builder().open(file) {
                Ok(db) => drop(db),
                Err(DatabaseError::DatabaseAlreadyOpen) => return Ok(None),
                Err(e) => return Err(e).at(file),
            }
            match builder().open_read_only(file) {
                Ok(db) => db,
                Err(DatabaseError::DatabaseAlreadyOpen) => return Ok(None),
                Err(e) => return Err(e).at(file),
            }
        }
        Err(e) => return Err(e).at(file),
    };
    let handle = Handle::Ro(ro);
    check_version(&handle, file)?;
    Ok(Some(Db::reader(dir, file, handle, Mode::ReadOnly)))
}
