//! What `discovery.file` reports, as typed events (`runtime::event`) with their metrics:
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `prometheus_sd_file_read_errors_total` | counter | failed reads (Prometheus' name) |
//! | `prometheus_sd_file_mtime_seconds{filename}` | gauge | each file's mtime when last read successfully (Prometheus' name) |
//! | `discovery_file_files_failing` | gauge | files whose last read failed (their last good targets are kept) |
//!
//! All carry `component_id` and `component_path`. A file's failure is a warning when it starts
//! or its reason changes, a debug line while it repeats, and an info line when it ends (the file
//! reads again, or is gone).

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::runtime::event::InternalEvent;
use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

/// The families, registered once per process.
pub(super) struct FileMetrics {
    read_errors: Family<Labels, Counter>,
    mtime: Family<Labels, Gauge<f64, AtomicU64>>,
    failing: Family<Labels, Gauge>,
}

impl FileMetrics {
    fn get(registry: &MetricsRegistry) -> Arc<FileMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = FileMetrics {
                read_errors: Family::default(),
                mtime: Family::default(),
                failing: Family::default(),
            };
            r.register(
                "prometheus_sd_file_read_errors",
                "The number of File-SD read errors.",
                m.read_errors.clone(),
            );
            r.register(
                "prometheus_sd_file_mtime_seconds",
                "Timestamp (mtime) of files read by FileSD. Timestamp is set at read time.",
                m.mtime.clone(),
            );
            r.register(
                "discovery_file_files_failing",
                "Files discovery.file could not read or parse at its last refresh; their last good targets are kept.",
                m.failing.clone(),
            );
            m
        })
    }
}

/// One instance's series.
pub(super) struct InstanceMetrics {
    all: Arc<FileMetrics>,
    base: Labels,
}

impl InstanceMetrics {
    pub(super) fn new(registry: &MetricsRegistry, component_id: &str) -> Self {
        InstanceMetrics {
            all: FileMetrics::get(registry),
            base: component_labels(component_id),
        }
    }

    fn file(&self, path: &str) -> Labels {
        let mut l = self.base.clone();
        l.push(("filename".to_string(), path.to_string()));
        l
    }

    pub(super) fn set_mtime(&self, path: &str, mtime: f64) {
        self.all.mtime.get_or_create(&self.file(path)).set(mtime);
    }

    pub(super) fn forget(&self, path: &str) {
        self.all.mtime.remove(&self.file(path));
    }

    pub(super) fn set_failing(&self, n: usize) {
        self.all
            .failing
            .get_or_create(&self.base)
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Removes every series of this instance (the component exited).
    pub(super) fn remove(&self, paths: impl IntoIterator<Item = String>) {
        for p in paths {
            self.forget(&p);
        }
        self.all.failing.remove(&self.base);
        self.all.read_errors.remove(&self.base);
    }
}

/// A file could not be read or parsed; its last good targets stay.
pub(super) struct FileReadFailed<'a> {
    pub component: &'a str,
    pub path: &'a str,
    pub error: &'a str,
    /// The first failure in a row, or one for a different reason.
    pub new: bool,
    pub kept: usize,
    pub metrics: &'a InstanceMetrics,
}

impl InternalEvent for FileReadFailed<'_> {
    fn emit(self) {
        self.metrics
            .all
            .read_errors
            .get_or_create(&self.metrics.base)
            .inc();
        if self.new {
            tracing::warn!(component = %self.component, path = %self.path, error = %self.error, kept_targets = self.kept, "cannot read a discovery file; keeping its last good targets");
        } else {
            tracing::debug!(component = %self.component, path = %self.path, error = %self.error, "discovery file still cannot be read");
        }
    }
}

/// A file that failed reads again.
pub(super) struct FileRecovered<'a> {
    pub component: &'a str,
    pub path: &'a str,
}

impl InternalEvent for FileRecovered<'_> {
    fn emit(self) {
        tracing::info!(component = %self.component, path = %self.path, "discovery file reads again");
    }
}

/// A file that failed is no longer there (or no longer matched); its failure ends with it.
pub(super) struct FailingFileGone<'a> {
    pub component: &'a str,
    pub path: &'a str,
}

impl InternalEvent for FailingFileGone<'_> {
    fn emit(self) {
        tracing::info!(component = %self.component, path = %self.path, "failing discovery file is gone; its failure ends");
    }
}
