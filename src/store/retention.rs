//! Deleting old profiles: by age, then oldest first until the data fits `max_size`.
//!
//! Deletions run in transactions of at most [`STEP`] profiles: a long retention pass (the
//! retention was just shortened, say) never holds the write lock for long, so the
//! component's queue keeps draining between steps, and each step is as crash-safe as an
//! append. Series left without profiles are deleted with their last profile.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use redb::{ReadableTable, ReadableTableMetadata};

use super::db::{Db, Totals, lock};
use super::error::{AtPath, StoreError};
use super::keys::{BY_TIME, CHUNKS, MARKS, META, SERIES, chunks_of, to_nanos};

/// Profiles deleted per transaction.
const STEP: usize = 2048;

/// The profile data kept for a `max_size`: 1/16 of it, and at least 32 MiB (at most half),
/// below it. redb grows its file by doubling (up to 4 GiB, then 4 GiB at a time) and never
/// shrinks it on its own, so the data, its index pages (~2%), the batch being written and the
/// pages the last deletion freed (reusable only after the next commit) must stay under
/// `max_size` at all times, or the file doubles past it for good.
pub fn size_budget(max_size: u64) -> u64 {
    let headroom = (max_size / 16).max(32 << 20).min(max_size / 2);
    max_size - headroom
}

/// What [`Db::enforce_retention`] deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// Profiles older than the retention.
    pub by_age: u64,
    /// Profiles deleted, oldest first, to fit `max_size`.
    pub by_size: u64,
    /// Stored bytes of all of them.
    pub bytes: u64,
    /// Series deleted because their last profile was.
    pub series: u64,
    /// Marks older than the retention.
    pub marks: u64,
}

impl Removed {
    pub fn profiles(&self) -> u64 {
        self.by_age + self.by_size
    }
}

struct Step {
    profiles: u64,
    bytes: u64,
    series: u64,
    more: bool,
}

impl Db {
    /// Deletes profiles (and marks) older than `now - retention`, then the oldest profiles
    /// until the stored data, counted in whole pages ([`super::Stats::data_bytes`]), is
    /// within [`size_budget`]`(max_size)`, which keeps the database file within `max_size`.
    pub fn enforce_retention(
        &self,
        now: SystemTime,
        retention: Duration,
        max_size: u64,
    ) -> Result<Removed, StoreError> {
        let cutoff =
            to_nanos(now).saturating_sub(u64::try_from(retention.as_nanos()).unwrap_or(u64::MAX));
        let mut removed = Removed {
            marks: self.remove_marks_before(cutoff)?,
            ..Removed::default()
        };
        loop {
            let step = self.delete_oldest(&|at, _| at < cutoff)?;
            removed.by_age += step.profiles;
            removed.bytes += step.bytes;
            removed.series += step.series;
            if !step.more {
                break;
            }
        }
        loop {
            let budget = size_budget(max_size);
            let step = self.delete_oldest(&|_, totals| totals.data_bytes() > budget)?;
            removed.by_size += step.profiles;
            removed.bytes += step.bytes;
            removed.series += step.series;
            if !step.more {
                break;
            }
        }
        Ok(removed)
    }

    /// One transaction deleting profiles oldest first while `delete(time, totals_so_far)`
    /// holds, at most [`STEP`] of them.
    fn delete_oldest(&self, delete: &dyn Fn(u64, &Totals) -> bool) -> Result<Step, StoreError> {
        let f = &self.file;
        let mut w = lock(&self.writer);
        let handle = self.read();
        let txn = self.begin_write(&handle)?;
        let mut step = Step {
            profiles: 0,
            bytes: 0,
            series: 0,
            more: false,
        };
        let mut dropped_series = Vec::new();
        {
            let mut meta = txn.open_table(META).at(f)?;
            let mut totals = Totals::load(&meta).at(f)?;
            let mut by_time = txn.open_table(BY_TIME).at(f)?;
            let mut victims = Vec::new();
            for row in by_time.iter().at(f)? {
                let (key, len) = row.at(f)?;
                let (at, series) = key.value();
                if !delete(at, &totals) {
                    break;
                }
                if victims.len() == STEP {
                    step.more = true;
                    break;
                }
                let len = u64::from(len.value());
                totals.profiles = totals.profiles.saturating_sub(1);
                totals.bytes = totals.bytes.saturating_sub(len);
                totals.pages = totals.pages.saturating_sub(chunks_of(len));
                victims.push((at, series, len));
            }
            if victims.is_empty() {
                return Ok(step);
            }
            let mut chunks = txn.open_table(CHUNKS).at(f)?;
            let mut touched = BTreeSet::new();
            for &(at, series, len) in &victims {
                by_time.remove((at, series)).at(f)?;
                // Up to the first missing chunk: the count follows from the length, but a
                // damaged store must not keep orphan chunks forever either.
                let mut index = 0u32;
                while chunks.remove((series, at, index)).at(f)?.is_some() {
                    index += 1;
                }
                if u64::from(index) != chunks_of(len) {
                    tracing::warn!(path = %self.dir.display(), series, at, chunks = index, expected = chunks_of(len), "profile had an unexpected number of chunks");
                }
                touched.insert(series);
                step.profiles += 1;
                step.bytes += len;
            }
            let mut series_table = txn.open_table(SERIES).at(f)?;
            for id in touched {
                let empty = chunks
                    .range((id, 0, 0)..=(id, u64::MAX, u32::MAX))
                    .at(f)?
                    .next()
                    .is_none();
                if empty && let Some(labels) = series_table.remove(id).at(f)? {
                    dropped_series.push(labels.value().to_vec());
                }
            }
            step.series = dropped_series.len() as u64;
            totals.store(&mut meta).at(f)?;
        }
        txn.commit().at(f)?;
        for key in dropped_series {
            w.series.remove(&key);
        }
        Ok(step)
    }

    fn remove_marks_before(&self, cutoff: u64) -> Result<u64, StoreError> {
        let f = &self.file;
        let _w = lock(&self.writer);
        let handle = self.read();
        let txn = self.begin_write(&handle)?;
        let removed = {
            let mut marks = txn.open_table(MARKS).at(f)?;
            let before = marks.len().at(f)?;
            marks.retain_in((0, "")..(cutoff, ""), |_, _| false).at(f)?;
            before.saturating_sub(marks.len().at(f)?)
        };
        if removed == 0 {
            txn.abort().at(f)?;
        } else {
            txn.commit().at(f)?;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::size_budget;

    #[test]
    fn the_budget_leaves_room_below_max_size() {
        const MIB: u64 = 1 << 20;
        assert_eq!(size_budget(2048 * MIB), 1920 * MIB);
        assert_eq!(size_budget(256 * MIB), 224 * MIB);
        assert_eq!(size_budget(64 * MIB), 32 * MIB);
        assert_eq!(size_budget(MIB), MIB / 2);
        assert_eq!(size_budget(1), 1);
        assert_eq!(size_budget(0), 0);
    }
}
