//! `pyroscope.store` metrics; every series has `component_id` and `component_path`:
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `pyroscope_store_written_profiles_total` | | profiles committed to the store |
//! | `pyroscope_store_written_bytes_total` | | their stored (gzip) bytes |
//! | `pyroscope_store_dropped_profiles_total` | reason | profiles not stored |
//! | `pyroscope_store_errors_total` | operation | failed `open`, `append`, `retention`, `snapshot` |
//! | `pyroscope_store_retention_removed_profiles_total` | reason | deleted by `age` or `size` |
//! | `pyroscope_store_retention_removed_bytes_total` | | their stored bytes |
//! | `pyroscope_store_profiles` | | profiles in the store |
//! | `pyroscope_store_bytes` | | stored bytes in pages, what `max_size` bounds |
//! | `pyroscope_store_series` | | series in the store |
//! | `pyroscope_store_queue_profiles` | | profiles waiting to be written |
//! | `pyroscope_store_commit_duration_seconds` | | one batch's write transaction |

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};
use crate::store::Stats;

/// Why a profile was not stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The queue was full: the writer is not keeping up (slow disk).
    QueueFull,
    /// Labels Pyroscope would refuse.
    InvalidLabels,
    /// Empty or oversized profile.
    InvalidProfile,
    /// The write transaction failed.
    WriteError,
    /// The store could not be opened (in use by another process, I/O error) at shutdown.
    Unavailable,
    /// The process's memory budget had no room to queue it.
    MemoryBudget,
}

impl DropReason {
    const ALL: [DropReason; 6] = [
        DropReason::QueueFull,
        DropReason::InvalidLabels,
        DropReason::InvalidProfile,
        DropReason::WriteError,
        DropReason::Unavailable,
        DropReason::MemoryBudget,
    ];

    fn as_str(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::InvalidLabels => "invalid_labels",
            DropReason::InvalidProfile => "invalid_profile",
            DropReason::WriteError => "write_error",
            DropReason::Unavailable => "unavailable",
            DropReason::MemoryBudget => "memory_budget",
        }
    }
}

/// A store operation that can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Open,
    Append,
    Retention,
    Snapshot,
}

impl Op {
    const ALL: [Op; 4] = [Op::Open, Op::Append, Op::Retention, Op::Snapshot];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Open => "open",
            Op::Append => "append",
            Op::Retention => "retention",
            Op::Snapshot => "snapshot",
        }
    }
}

type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// The families, registered once per process.
pub struct StoreMetrics {
    written_profiles: Family<Labels, Counter>,
    written_bytes: Family<Labels, Counter>,
    dropped: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    removed_profiles: Family<Labels, Counter>,
    removed_bytes: Family<Labels, Counter>,
    profiles: Family<Labels, Gauge>,
    bytes: Family<Labels, Gauge>,
    series: Family<Labels, Gauge>,
    queue: Family<Labels, Gauge>,
    commit: Histograms,
}

fn commit_histogram() -> Histogram {
    // A commit is two fsyncs: milliseconds on SSDs, tens of them on disks or network volumes.
    Histogram::new([
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    ])
}

impl StoreMetrics {
    pub fn get(registry: &MetricsRegistry) -> Arc<StoreMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = StoreMetrics {
                written_profiles: Family::default(),
                written_bytes: Family::default(),
                dropped: Family::default(),
                errors: Family::default(),
                removed_profiles: Family::default(),
                removed_bytes: Family::default(),
                profiles: Family::default(),
                bytes: Family::default(),
                series: Family::default(),
                queue: Family::default(),
                commit: Family::new_with_constructor(commit_histogram as fn() -> Histogram),
            };
            r.register(
                "pyroscope_store_written_profiles",
                "Profiles written to the local store",
                m.written_profiles.clone(),
            );
            r.register(
                "pyroscope_store_written_bytes",
                "Stored (compressed) bytes of the profiles written to the local store",
                m.written_bytes.clone(),
            );
            r.register(
                "pyroscope_store_dropped_profiles",
                "Profiles the local store did not store",
                m.dropped.clone(),
            );
            r.register(
                "pyroscope_store_errors",
                "Failed local store operations",
                m.errors.clone(),
            );
            r.register(
                "pyroscope_store_retention_removed_profiles",
                "Profiles deleted by the local store's retention",
                m.removed_profiles.clone(),
            );
            r.register(
                "pyroscope_store_retention_removed_bytes",
                "Stored bytes of the profiles deleted by the local store's retention",
                m.removed_bytes.clone(),
            );
            r.register(
                "pyroscope_store_profiles",
                "Profiles in the local store",
                m.profiles.clone(),
            );
            r.register(
                "pyroscope_store_bytes",
                "Bytes of profile data in the local store (whole pages), what max_size bounds",
                m.bytes.clone(),
            );
            r.register(
                "pyroscope_store_series",
                "Series in the local store",
                m.series.clone(),
            );
            r.register(
                "pyroscope_store_queue_profiles",
                "Profiles waiting to be written to the local store",
                m.queue.clone(),
            );
            r.register(
                "pyroscope_store_commit_duration_seconds",
                "Duration of the local store's write transactions",
                m.commit.clone(),
            );
            m
        })
    }

    /// The handle one component instance records through.
    pub fn instance(self: &Arc<Self>, component_id: &str) -> InstanceMetrics {
        let base = component_labels(component_id);
        InstanceMetrics {
            written_profiles: self.written_profiles.get_or_create(&base).clone(),
            written_bytes: self.written_bytes.get_or_create(&base).clone(),
            removed_bytes: self.removed_bytes.get_or_create(&base).clone(),
            profiles: self.profiles.get_or_create(&base).clone(),
            bytes: self.bytes.get_or_create(&base).clone(),
            series: self.series.get_or_create(&base).clone(),
            queue: self.queue.get_or_create(&base).clone(),
            commit: self.commit.get_or_create(&base).clone(),
            all: self.clone(),
            base,
        }
    }
}

/// One instance's series.
pub struct InstanceMetrics {
    all: Arc<StoreMetrics>,
    base: Labels,
    written_profiles: Counter,
    written_bytes: Counter,
    removed_bytes: Counter,
    profiles: Gauge,
    bytes: Gauge,
    series: Gauge,
    queue: Gauge,
    commit: Histogram,
}

fn gauge_value(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl InstanceMetrics {
    fn with(&self, name: &str, value: &str) -> Labels {
        let mut l = self.base.clone();
        l.push((name.to_string(), value.to_string()));
        l
    }

    pub fn written(&self, profiles: usize, bytes: u64, seconds: f64) {
        self.written_profiles.inc_by(profiles as u64);
        self.written_bytes.inc_by(bytes);
        self.commit.observe(seconds);
    }

    pub fn dropped(&self, reason: DropReason, profiles: usize) {
        if profiles > 0 {
            self.all
                .dropped
                .get_or_create(&self.with("reason", reason.as_str()))
                .inc_by(profiles as u64);
        }
    }

    pub fn error(&self, op: Op) {
        self.all
            .errors
            .get_or_create(&self.with("operation", op.as_str()))
            .inc();
    }

    pub fn removed(&self, by_age: u64, by_size: u64, bytes: u64) {
        for (reason, n) in [("age", by_age), ("size", by_size)] {
            if n > 0 {
                self.all
                    .removed_profiles
                    .get_or_create(&self.with("reason", reason))
                    .inc_by(n);
            }
        }
        self.removed_bytes.inc_by(bytes);
    }

    pub fn stats(&self, s: &Stats) {
        self.profiles.set(gauge_value(s.profiles));
        self.bytes.set(gauge_value(s.data_bytes));
        self.series.set(gauge_value(s.series));
    }

    pub fn queue(&self, profiles: usize) {
        self.queue.set(gauge_value(profiles as u64));
    }

    /// Removes every series of this instance (the component exited).
    pub fn remove(&self) {
        let a = &self.all;
        for family in [&a.written_profiles, &a.written_bytes, &a.removed_bytes] {
            family.remove(&self.base);
        }
        for family in [&a.profiles, &a.bytes, &a.series, &a.queue] {
            family.remove(&self.base);
        }
        a.commit.remove(&self.base);
        for r in DropReason::ALL {
            a.dropped.remove(&self.with("reason", r.as_str()));
        }
        for op in Op::ALL {
            a.errors.remove(&self.with("operation", op.as_str()));
        }
        for reason in ["age", "size"] {
            a.removed_profiles.remove(&self.with("reason", reason));
        }
    }
}
