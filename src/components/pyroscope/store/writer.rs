//! The component's writer thread: drains the queue into batches (one transaction each), runs
//! the retention, answers snapshot requests, and keeps the store open (reopening it after
//! an I/O error or a change of `path`). redb is blocking, so all of this happens on one
//! blocking thread, never on the async runtime's workers.

use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, SystemTime};

use tokio_util::sync::CancellationToken;

use super::events::{OperationFailed, ProfilesDropped};
use super::metrics::{DropReason, Op};
use super::{Failure, Shared};
use crate::profiles::Profile;
use crate::runtime::event::emit;
use crate::store::{Db, Removed, StoreError, size_budget};

/// Longest wait for a profile before the writer looks at its other duties.
const POLL: Duration = Duration::from_millis(250);
/// Profiles per write transaction, at most.
const BATCH_PROFILES: usize = 512;
/// Bytes per write transaction, at most (the last profile may exceed it).
const BATCH_BYTES: usize = 16 << 20;
const RETENTION_EVERY: Duration = Duration::from_secs(60);
const SNAPSHOT_EVERY: Duration = Duration::from_secs(1);
/// Between attempts to open a store that could not be opened.
const REOPEN_EVERY: Duration = Duration::from_secs(2);

pub(super) fn run(shared: &Shared, rx: mpsc::Receiver<Profile>, stop: &CancellationToken) {
    let mut next_open = Instant::now();
    let mut next_retention = Instant::now();
    let mut next_snapshot = Instant::now();
    let mut batch = Vec::new();
    loop {
        let stopping = stop.is_cancelled();
        let Some(db) = open(shared, &mut next_open) else {
            if stopping {
                drop_queued(shared, &rx);
                break;
            }
            std::thread::sleep(POLL);
            continue;
        };
        let disconnected = fill(shared, &rx, &mut batch, !stopping);
        let mut over_budget = false;
        if !batch.is_empty() {
            over_budget = write(shared, &db, &batch);
            batch.clear();
        } else if stopping || disconnected {
            break;
        }
        let now = Instant::now();
        // Over the size budget: at once, not at the next minute, so that the file never grows
        // past max_size (see `size_budget`).
        if now >= next_retention
            || over_budget
            || shared.settings_changed.swap(false, Ordering::Relaxed)
        {
            retention(shared, &db);
            next_retention = now + RETENTION_EVERY;
        }
        if now >= next_snapshot {
            match db.serve_snapshot_requests() {
                Ok(_) => {}
                Err(e) => failed(shared, Op::Snapshot, &e),
            }
            next_snapshot = now + SNAPSHOT_EVERY;
        }
    }
    if let Some(db) = shared.set_db(None) {
        tracing::info!(component_id = %shared.id, path = %db.path().display(), "store closed");
    }
}

/// The open store for the current `path`, opening (or reopening after a `path` change) it
/// when due.
fn open(shared: &Shared, next_attempt: &mut Instant) -> Option<Arc<Db>> {
    let want = shared.settings().path;
    if let Some(db) = shared.current() {
        if db.path() == want {
            return Some(db);
        }
        shared.set_db(None);
        tracing::info!(component_id = %shared.id, from = %db.path().display(), to = %want.display(), "store path changed, reopening");
        *next_attempt = Instant::now();
    }
    if Instant::now() < *next_attempt {
        return None;
    }
    *next_attempt = Instant::now() + REOPEN_EVERY;
    match Db::open(&want) {
        Ok(db) => {
            let db = Arc::new(db);
            shared.set_db(Some(db.clone()));
            *super::lock(&shared.unhealthy) = None;
            refresh_stats(shared, &db);
            tracing::info!(component_id = %shared.id, path = %want.display(), "store opened");
            Some(db)
        }
        Err(e) => {
            failed(shared, Op::Open, &e);
            *super::lock(&shared.unhealthy) = Some(format!("the store is not open: {e}"));
            None
        }
    }
}

/// Moves queued profiles into `batch`, waiting up to [`POLL`] for the first when `wait`.
/// Returns whether every sender is gone.
fn fill(
    shared: &Shared,
    rx: &mpsc::Receiver<Profile>,
    batch: &mut Vec<Profile>,
    wait: bool,
) -> bool {
    let first = if wait {
        rx.recv_timeout(POLL)
            .map_err(|e| e == mpsc::RecvTimeoutError::Disconnected)
    } else {
        rx.try_recv()
            .map_err(|e| e == mpsc::TryRecvError::Disconnected)
    };
    let mut bytes = 0;
    let mut disconnected = match first {
        Ok(p) => {
            bytes += p.raw.len();
            batch.push(p);
            false
        }
        Err(disconnected) => disconnected,
    };
    while !batch.is_empty() && batch.len() < BATCH_PROFILES && bytes < BATCH_BYTES {
        match rx.try_recv() {
            Ok(p) => {
                bytes += p.raw.len();
                batch.push(p);
            }
            Err(e) => {
                disconnected = e == mpsc::TryRecvError::Disconnected;
                break;
            }
        }
    }
    dequeued(shared, batch.len(), bytes);
    disconnected
}

fn dequeued(shared: &Shared, profiles: usize, bytes: usize) {
    shared
        .queued_profiles
        .fetch_sub(profiles, Ordering::Relaxed);
    shared
        .queued_bytes
        .fetch_sub(bytes as u64, Ordering::Relaxed);
    super::release_queue_memory(shared, bytes as u64);
    shared
        .metrics
        .queue(shared.queued_profiles.load(Ordering::Relaxed));
}

/// At shutdown with no store to write to: what is queued is lost, and counted.
fn drop_queued(shared: &Shared, rx: &mpsc::Receiver<Profile>) {
    let (mut n, mut bytes) = (0, 0);
    while let Ok(p) = rx.try_recv() {
        n += 1;
        bytes += p.raw.len();
    }
    dequeued(shared, n, bytes);
    emit(ProfilesDropped {
        shared,
        reason: DropReason::Unavailable,
        profiles: n,
        detail: None,
    });
}

/// Stores a batch; returns whether the store is now over its size budget.
fn write(shared: &Shared, db: &Db, batch: &[Profile]) -> bool {
    let started = Instant::now();
    match db.append(batch) {
        Ok(a) => {
            shared
                .metrics
                .written(a.profiles, a.bytes, started.elapsed().as_secs_f64());
            shared
                .written
                .fetch_add(a.profiles as u64, Ordering::Relaxed);
            for (reason, profiles) in [
                (DropReason::InvalidLabels, a.invalid_labels),
                (DropReason::InvalidProfile, a.invalid_profile),
            ] {
                emit(ProfilesDropped {
                    shared,
                    reason,
                    profiles,
                    detail: a.first_skip.as_deref(),
                });
            }
            tracing::trace!(component_id = %shared.id, profiles = a.profiles, bytes = a.bytes, new_series = a.new_series, elapsed_ms = started.elapsed().as_millis() as u64, "batch stored");
            *super::lock(&shared.unhealthy) = None;
            refresh_stats(shared, db);
            let budget = size_budget(shared.settings().max_size);
            super::lock(&shared.stats)
                .as_ref()
                .is_some_and(|s| s.data_bytes > budget)
        }
        Err(e) => {
            emit(ProfilesDropped {
                shared,
                reason: DropReason::WriteError,
                profiles: batch.len(),
                detail: None,
            });
            failed(shared, Op::Append, &e);
            *super::lock(&shared.unhealthy) = Some(format!("writing profiles failed: {e}"));
            false
        }
    }
}

fn retention(shared: &Shared, db: &Db) {
    let s = shared.settings();
    let started = Instant::now();
    match db.enforce_retention(SystemTime::now(), s.retention, s.max_size) {
        Ok(r) => {
            shared.metrics.removed(r.by_age, r.by_size, r.bytes);
            if r.profiles() > 0 {
                tracing::debug!(
                    component_id = %shared.id,
                    removed_by_age = r.by_age,
                    removed_by_size = r.by_size,
                    removed_bytes = r.bytes,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "retention pass"
                );
            }
            if let Some((total, over)) = super::lock(&shared.retention_log).add(&r, started) {
                tracing::info!(
                    component_id = %shared.id,
                    removed_by_age = total.by_age,
                    removed_by_size = total.by_size,
                    removed_bytes = total.bytes,
                    removed_series = total.series,
                    over_s = over.as_secs(),
                    "retention deleted old profiles"
                );
            }
            *super::lock(&shared.last_retention) = Some((SystemTime::now(), r));
            refresh_stats(shared, db);
        }
        Err(e) => failed(shared, Op::Retention, &e),
    }
}

/// How often at most retention's deletions are logged at info. Once a store is full, every
/// commit deletes a few old profiles: an info line each time buried the log in a line per
/// second that nobody must act on, so deletions are summed and reported this often (the first
/// right away, so that "the store started deleting" is visible when it starts).
const RETENTION_LOG_EVERY: Duration = Duration::from_secs(600);

/// Retention's deletions since the last info line.
#[derive(Debug, Default)]
pub(super) struct RetentionLog {
    since: Option<Instant>,
    pending: Removed,
}

impl RetentionLog {
    /// Adds a pass's deletions; returns the totals to log, and the time they span, when due.
    fn add(&mut self, r: &Removed, now: Instant) -> Option<(Removed, Duration)> {
        self.pending.by_age += r.by_age;
        self.pending.by_size += r.by_size;
        self.pending.bytes += r.bytes;
        self.pending.series += r.series;
        if self.pending.profiles() == 0 {
            return None;
        }
        let due = self
            .since
            .is_none_or(|since| now.duration_since(since) >= RETENTION_LOG_EVERY);
        if !due {
            return None;
        }
        let over = self.since.map_or(Duration::ZERO, |s| now.duration_since(s));
        self.since = Some(now);
        Some((std::mem::take(&mut self.pending), over))
    }
}

pub(super) fn refresh_stats(shared: &Shared, db: &Db) {
    match db.stats() {
        Ok(s) => {
            shared.metrics.stats(&s);
            *super::lock(&shared.stats) = Some(s);
        }
        Err(e) => {
            tracing::debug!(component_id = %shared.id, error = %e, "reading store stats failed")
        }
    }
}

/// Counts and records a failure; logs it unless it repeats the last one (a store that
/// cannot be opened fails every couple of seconds). A handle that redb poisoned after an I/O
/// error is closed so that the next round reopens it.
fn failed(shared: &Shared, op: Op, e: &StoreError) {
    let message = e.to_string();
    let repeated = {
        let mut last = super::lock(&shared.last_error);
        let repeated = last
            .as_ref()
            .is_some_and(|f| f.operation == op.as_str() && f.message == message);
        *last = Some(Failure {
            at: SystemTime::now(),
            operation: op.as_str(),
            message,
        });
        repeated
    };
    emit(OperationFailed {
        shared,
        op,
        error: e,
        repeated,
    });
    if e.needs_reopen() && shared.set_db(None).is_some() {
        tracing::warn!(component_id = %shared.id, "closing the store after an I/O error; it will be reopened");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_is_logged_when_it_starts_then_summed() {
        let mut log = RetentionLog::default();
        let t0 = Instant::now();
        let pass = |by_age| Removed {
            by_age,
            bytes: by_age * 10,
            ..Removed::default()
        };
        assert_eq!(
            log.add(&pass(0), t0),
            None,
            "nothing deleted, nothing logged"
        );
        let (first, _) = log.add(&pass(2), t0).expect("the first deletion is logged");
        assert_eq!(first.by_age, 2);
        // A pass per commit for the next ten minutes: one line at the end with the sum.
        for i in 1..600 {
            assert_eq!(log.add(&pass(1), t0 + Duration::from_secs(i)), None, "{i}");
        }
        let (sum, over) = log.add(&pass(1), t0 + RETENTION_LOG_EVERY).expect("due");
        assert_eq!((sum.by_age, sum.bytes), (600, 6000));
        assert_eq!(over, RETENTION_LOG_EVERY);
    }
}
