//! Consistent copies of a store for readers in other processes while a writer holds it (the
//! protocol behind [`Db::open_read_only`]), through files in the store directory:
//!
//! ```text
//! reader: create snapshot-<pid>-<n>.request ──► wait for snapshot-<pid>-<n>.redb, open, unlink
//! writer (every second): see the request ─► commit ─► copy to .redb.tmp ─► rename to .redb
//! ```
//!
//! The writer copies while holding its write lock, right after a quick-repair commit, so the
//! copy is exactly the file of that commit, allocator state included: it opens without
//! repair. Files a crashed reader or writer left behind are removed after ten minutes.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::db::{Db, Mode, lock, open_shared};
use super::error::{AtPath, StoreError, io};

const PREFIX: &str = "snapshot-";
const REQUEST: &str = ".request";
const READY: &str = ".redb";
const PARTIAL: &str = ".redb.tmp";
/// How long a reader waits for the writer: a copy of a few GiB takes seconds, and the writer
/// may be in the middle of a retention pass.
const WAIT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(100);
/// Readers unlink their copy within a poll interval of its creation; anything this old was
/// abandoned.
const STALE: Duration = Duration::from_secs(600);

/// The reader's side: asks the writer holding `dir` for a snapshot and opens it.
pub(crate) fn request(dir: &Path, file: &Path) -> Result<Db, StoreError> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "{PREFIX}{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let req = dir.join(format!("{name}{REQUEST}"));
    let ready = dir.join(format!("{name}{READY}"));
    if let Err(e) = fs::write(&req, b"") {
        return Err(StoreError::Locked {
            path: dir.to_path_buf(),
            hint: format!(
                "; asking it for a snapshot failed ({e}): stop it, or query through the running scraper"
            ),
        });
    }
    tracing::debug!(path = %dir.display(), request = %req.display(), "store is being written, asking the writer for a snapshot");
    let deadline = Instant::now() + WAIT;
    let result = loop {
        if ready.is_file() {
            let db = Db::from_snapshot(dir, &ready);
            // Unlinked while open: the copy's space is released when the handle is dropped,
            // whatever happens to this process.
            let _ = fs::remove_file(&ready);
            break db;
        }
        // The writer may have stopped meanwhile.
        match open_shared(dir, file) {
            Ok(Some(db)) => break Ok(db),
            Ok(None) => {}
            Err(e) => break Err(e),
        }
        if Instant::now() >= deadline {
            break Err(StoreError::Locked {
                path: dir.to_path_buf(),
                hint: format!(
                    " and did not answer a snapshot request within {}s: stop it, or query through the running scraper",
                    WAIT.as_secs()
                ),
            });
        }
        std::thread::sleep(POLL);
    };
    let _ = fs::remove_file(&req);
    result
}

impl Db {
    /// The writer's side: answers every pending snapshot request in the store directory (see
    /// [`Db::open_read_only`]) and removes abandoned snapshot files. Returns how many
    /// requests it answered. Appends wait while a copy is being made.
    pub fn serve_snapshot_requests(&self) -> Result<usize, StoreError> {
        if self.mode() != Mode::ReadWrite {
            return Ok(0);
        }
        remove_stale(&self.dir);
        let mut served = 0;
        for req in pending(&self.dir) {
            let Some(base) = req
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(REQUEST))
                .map(str::to_string)
            else {
                continue;
            };
            let ready = self.dir.join(format!("{base}{READY}"));
            if ready.exists() {
                continue;
            }
            let partial = self.dir.join(format!("{base}{PARTIAL}"));
            let started = Instant::now();
            if let Err(e) = self.copy_to(&partial) {
                let _ = fs::remove_file(&partial);
                return Err(e);
            }
            fs::rename(&partial, &ready).map_err(io(&ready))?;
            if !req.exists() {
                // The reader gave up while we copied.
                let _ = fs::remove_file(&ready);
            }
            tracing::info!(
                path = %self.dir.display(),
                snapshot = %ready.display(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "made a snapshot of the store for a reader"
            );
            served += 1;
        }
        Ok(served)
    }

    /// Copies the database file as of a fresh commit, with writes held off.
    fn copy_to(&self, dest: &Path) -> Result<(), StoreError> {
        let _w = lock(&self.writer);
        let handle = self.read();
        // An empty quick-repair commit writes the allocator state, so the copy opens as a
        // cleanly closed database.
        self.begin_write(&handle)?.commit().at(&self.file)?;
        fs::copy(&self.file, dest).map_err(io(dest))?;
        Ok(())
    }
}

fn snapshot_files(dir: &Path) -> impl Iterator<Item = (PathBuf, String)> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            name.starts_with(PREFIX).then(|| (e.path(), name))
        })
}

fn pending(dir: &Path) -> Vec<PathBuf> {
    snapshot_files(dir)
        .filter(|(_, name)| name.ends_with(REQUEST))
        .map(|(p, _)| p)
        .collect()
}

/// Removes snapshot files abandoned by crashed readers or writers.
pub(crate) fn remove_stale(dir: &Path) {
    let now = SystemTime::now();
    for (path, _) in snapshot_files(dir) {
        let old = fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > STALE);
        if old && fs::remove_file(&path).is_ok() {
            tracing::debug!(path = %path.display(), "removed an abandoned store snapshot file");
        }
    }
}
