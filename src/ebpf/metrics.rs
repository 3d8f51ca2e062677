//! `pyroscope.ebpf` metrics: Alloy's names where Alloy has the metric, plus the sampler's own
//! loss counters.
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `pyroscope_ebpf_active_targets` | | targets the component was given that identify processes |
//! | `pyroscope_ebpf_profiling_sessions_total` | | sampler starts |
//! | `pyroscope_ebpf_profiling_sessions_failing_total` | | sampler starts that failed (BPF refused and no fallback possible) |
//! | `pyroscope_ebpf_pprofs_total` | service_name | profiles produced |
//! | `pyroscope_ebpf_pprof_bytes_total` | | compressed bytes of those profiles |
//! | `pyroscope_ebpf_pprof_samples_total` | | samples in those profiles |
//! | `pyroscope_ebpf_samples_lost_total` | | samples the kernel could not deliver (ring or perf buffer full) |
//!
//! Every series also has `component_id` and `component_path`.

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

/// The metric families, registered once per process.
pub struct EbpfMetrics {
    active_targets: Family<Labels, Gauge>,
    sessions: Family<Labels, Counter>,
    sessions_failing: Family<Labels, Counter>,
    pprofs: Family<Labels, Counter>,
    pprof_bytes: Family<Labels, Counter>,
    pprof_samples: Family<Labels, Counter>,
    lost: Family<Labels, Counter>,
}

impl EbpfMetrics {
    pub fn get(registry: &MetricsRegistry) -> Arc<EbpfMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = EbpfMetrics {
                active_targets: Family::default(),
                sessions: Family::default(),
                sessions_failing: Family::default(),
                pprofs: Family::default(),
                pprof_bytes: Family::default(),
                pprof_samples: Family::default(),
                lost: Family::default(),
            };
            r.register(
                "pyroscope_ebpf_active_targets",
                "Targets that identify processes to profile",
                m.active_targets.clone(),
            );
            r.register(
                "pyroscope_ebpf_profiling_sessions",
                "Sampler starts",
                m.sessions.clone(),
            );
            r.register(
                "pyroscope_ebpf_profiling_sessions_failing",
                "Sampler starts that failed",
                m.sessions_failing.clone(),
            );
            r.register(
                "pyroscope_ebpf_pprofs",
                "Profiles produced",
                m.pprofs.clone(),
            );
            r.register(
                "pyroscope_ebpf_pprof_bytes",
                "Compressed bytes of the profiles produced",
                m.pprof_bytes.clone(),
            );
            r.register(
                "pyroscope_ebpf_pprof_samples",
                "Samples in the profiles produced",
                m.pprof_samples.clone(),
            );
            r.register(
                "pyroscope_ebpf_samples_lost",
                "Samples the kernel could not deliver because a buffer was full",
                m.lost.clone(),
            );
            m
        })
    }

    /// The series of one component instance.
    pub fn component(self: &Arc<Self>, component_id: &str) -> ComponentMetrics {
        let base = component_labels(component_id);
        ComponentMetrics {
            active_targets: self.active_targets.get_or_create(&base).clone(),
            sessions: self.sessions.get_or_create(&base).clone(),
            sessions_failing: self.sessions_failing.get_or_create(&base).clone(),
            pprof_bytes: self.pprof_bytes.get_or_create(&base).clone(),
            pprof_samples: self.pprof_samples.get_or_create(&base).clone(),
            lost: self.lost.get_or_create(&base).clone(),
            all: self.clone(),
            base,
        }
    }
}

/// One component's series.
#[derive(Clone)]
pub struct ComponentMetrics {
    all: Arc<EbpfMetrics>,
    base: Labels,
    pub active_targets: Gauge,
    pub sessions: Counter,
    pub sessions_failing: Counter,
    pub pprof_bytes: Counter,
    pub pprof_samples: Counter,
    pub lost: Counter,
}

impl ComponentMetrics {
    pub fn pprof(&self, service_name: &str) {
        let mut l = self.base.clone();
        l.push(("service_name".to_string(), service_name.to_string()));
        self.all.pprofs.get_or_create(&l).inc();
    }
}
