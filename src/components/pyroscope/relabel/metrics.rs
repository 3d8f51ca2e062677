//! `pyroscope.relabel` metrics: Alloy's names and help texts; every series also has
//! `component_id` and `component_path`, and an instance's series are removed when it exits.
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `pyroscope_relabel_profiles_processed` | counter | profiles received |
//! | `pyroscope_relabel_profiles_written` | counter | profiles forwarded |
//! | `pyroscope_relabel_profiles_dropped` | counter | profiles dropped by the rules |
//! | `pyroscope_relabel_cache_hits` | counter | label sets found in the cache |
//! | `pyroscope_relabel_cache_misses` | counter | label sets relabelled and cached |
//! | `pyroscope_relabel_cache_size` | gauge | label sets in the cache |
//!
//! Alloy's counters here have no `_total` suffix and Alloy serves the classic text format, so
//! its series are named exactly as above. Our `/metrics` speaks OpenMetrics, where a `counter`
//! family's samples must end in `_total`; to keep Alloy's series names (and users' queries and
//! dashboards) the four counters are exposed with OpenMetrics type `unknown`, whose samples keep
//! the family name. They still only ever go up.

use std::fmt;
use std::sync::Arc;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;

use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

/// A counter exposed with OpenMetrics type `unknown`, so that its sample keeps the family's
/// name (`pyroscope_relabel_profiles_processed`, as Alloy serves it) instead of gaining the
/// `_total` suffix OpenMetrics requires of counters. See the module documentation.
#[derive(Clone, Debug, Default)]
pub(super) struct AlloyCounter(Counter);

impl AlloyCounter {
    pub(super) fn inc_by(&self, n: u64) {
        self.0.inc_by(n);
    }

    pub(super) fn get(&self) -> u64 {
        self.0.get()
    }
}

impl TypedMetric for AlloyCounter {
    const TYPE: MetricType = MetricType::Unknown;
}

impl EncodeMetric for AlloyCounter {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), fmt::Error> {
        encoder.encode_gauge(&self.0.get())
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// The metric families, registered once per process.
pub(super) struct RelabelMetrics {
    processed: Family<Labels, AlloyCounter>,
    written: Family<Labels, AlloyCounter>,
    dropped: Family<Labels, AlloyCounter>,
    hits: Family<Labels, AlloyCounter>,
    misses: Family<Labels, AlloyCounter>,
    size: Family<Labels, Gauge>,
}

impl RelabelMetrics {
    pub(super) fn get(registry: &MetricsRegistry) -> Arc<RelabelMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = RelabelMetrics {
                processed: Family::default(),
                written: Family::default(),
                dropped: Family::default(),
                hits: Family::default(),
                misses: Family::default(),
                size: Family::default(),
            };
            r.register(
                "pyroscope_relabel_profiles_processed",
                "Total number of profiles processed",
                m.processed.clone(),
            );
            r.register(
                "pyroscope_relabel_profiles_written",
                "Total number of profiles forwarded",
                m.written.clone(),
            );
            r.register(
                "pyroscope_relabel_profiles_dropped",
                "Total number of profiles dropped by relabeling rules",
                m.dropped.clone(),
            );
            r.register(
                "pyroscope_relabel_cache_hits",
                "Total number of cache hits",
                m.hits.clone(),
            );
            r.register(
                "pyroscope_relabel_cache_misses",
                "Total number of cache misses",
                m.misses.clone(),
            );
            r.register(
                "pyroscope_relabel_cache_size",
                "Total size of relabel cache",
                m.size.clone(),
            );
            m
        })
    }

    pub(super) fn instance(self: &Arc<Self>, component_id: &str) -> InstanceMetrics {
        let base = component_labels(component_id);
        InstanceMetrics {
            processed: self.processed.get_or_create(&base).clone(),
            written: self.written.get_or_create(&base).clone(),
            dropped: self.dropped.get_or_create(&base).clone(),
            hits: self.hits.get_or_create(&base).clone(),
            misses: self.misses.get_or_create(&base).clone(),
            size: self.size.get_or_create(&base).clone(),
            all: self.clone(),
            base,
        }
    }
}

/// One instance's series.
pub(super) struct InstanceMetrics {
    all: Arc<RelabelMetrics>,
    base: Labels,
    pub(super) processed: AlloyCounter,
    pub(super) written: AlloyCounter,
    pub(super) dropped: AlloyCounter,
    pub(super) hits: AlloyCounter,
    pub(super) misses: AlloyCounter,
    size: Gauge,
}

impl InstanceMetrics {
    pub(super) fn cache_size(&self, len: usize) {
        self.size.set(i64::try_from(len).unwrap_or(i64::MAX));
    }

    /// Removes every series of this instance (the component exited).
    pub(super) fn remove(&self) {
        let a = &self.all;
        for family in [&a.processed, &a.written, &a.dropped, &a.hits, &a.misses] {
            family.remove(&self.base);
        }
        a.size.remove(&self.base);
    }
}
