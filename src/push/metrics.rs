//! `pyroscope.write` metrics. Alloy's names and `endpoint` label (the endpoint URL), plus a
//! `reason` on drops, queue depth gauges and a trimmed-profiles counter:
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `pyroscope_write_sent_bytes_total` | endpoint | raw profile bytes accepted by the endpoint |
//! | `pyroscope_write_sent_profiles_total` | endpoint | profiles accepted |
//! | `pyroscope_write_dropped_bytes_total` | endpoint, reason | raw profile bytes given up |
//! | `pyroscope_write_dropped_profiles_total` | endpoint, reason | profiles given up |
//! | `pyroscope_write_retries_total` | endpoint | attempts that will be retried |
//! | `pyroscope_write_latency` | endpoint, type | seconds; `push_downstream` one HTTP attempt, `push_endpoint` first attempt to outcome, `queue` time queued |
//! | `pyroscope_write_queue_profiles` | endpoint | profiles waiting (not in flight) |
//! | `pyroscope_write_queue_bytes` | endpoint | bytes waiting |
//! | `pyroscope_write_trimmed_profiles_total` | endpoint, reason | profiles trimmed to fit the backend's limits; `reason` is the limit (`max_profile_samples`, `max_profile_size_bytes`, `max_burst_bytes`) |
//! | `pyroscope_write_endpoint_failing` | endpoint | 1 while the endpoint is failing (an outage, see `status`), else 0 |
//!
//! Every series also has `component_id` and `component_path`. Drop reasons are the
//! [`Reason`] values, trim reasons the [`TrimReason`] ones.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::events::TrimLog;
use super::limits::TrimReason;
use super::queue::DepthGauges;
use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

/// Why a profile was not delivered to an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Its labels fail validation (empty set, duplicate or invalid name).
    InvalidLabels,
    /// Evicted, oldest first, to make room in a full queue (or bigger than the whole queue).
    QueueFull,
    /// Older than `max_age`: the backend would reject it as outside its ingestion window.
    TooOld,
    /// Over the backend's size or sample limits and could not be trimmed to fit.
    TooLarge,
    /// The endpoint answered with an error retrying cannot fix (400 invalid_argument, 401...).
    Rejected,
    /// `max_backoff_retries` attempts failed.
    RetriesExhausted,
    /// Still queued when the flush deadline passed at shutdown.
    Shutdown,
    /// Queued for an endpoint that a configuration change removed.
    Reload,
    /// Evicted, oldest first, because the process's memory budget had no room.
    MemoryBudget,
}

impl Reason {
    pub const ALL: [Reason; 9] = [
        Reason::InvalidLabels,
        Reason::QueueFull,
        Reason::TooOld,
        Reason::TooLarge,
        Reason::Rejected,
        Reason::RetriesExhausted,
        Reason::Shutdown,
        Reason::Reload,
        Reason::MemoryBudget,
    ];

    /// The reason's position in [`Reason::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::InvalidLabels => "invalid_labels",
            Reason::QueueFull => "queue_full",
            Reason::TooOld => "too_old",
            Reason::TooLarge => "too_large",
            Reason::Rejected => "rejected",
            Reason::RetriesExhausted => "retries_exhausted",
            Reason::Shutdown => "shutdown",
            Reason::Reload => "reload",
            Reason::MemoryBudget => "memory_budget",
        }
    }
}

const LATENCY_TYPES: [&str; 3] = ["push_downstream", "push_endpoint", "queue"];

type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// The metric families, registered once per process.
pub struct WriteMetrics {
    sent_bytes: Family<Labels, Counter>,
    sent_profiles: Family<Labels, Counter>,
    dropped_bytes: Family<Labels, Counter>,
    dropped_profiles: Family<Labels, Counter>,
    retries: Family<Labels, Counter>,
    latency: HistogramFamily,
    queue_profiles: Family<Labels, Gauge>,
    queue_bytes: Family<Labels, Gauge>,
    trimmed: Family<Labels, Counter>,
    failing: Family<Labels, Gauge>,
}

fn latency_histogram() -> Histogram {
    // Prometheus' default buckets (what Alloy's classic histogram uses).
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ])
}

impl WriteMetrics {
    pub fn get(registry: &MetricsRegistry) -> std::sync::Arc<WriteMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = WriteMetrics {
                sent_bytes: Family::default(),
                sent_profiles: Family::default(),
                dropped_bytes: Family::default(),
                dropped_profiles: Family::default(),
                retries: Family::default(),
                latency: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
                queue_profiles: Family::default(),
                queue_bytes: Family::default(),
                trimmed: Family::default(),
                failing: Family::default(),
            };
            r.register(
                "pyroscope_write_sent_bytes",
                "Total number of compressed bytes sent to Pyroscope",
                m.sent_bytes.clone(),
            );
            r.register(
                "pyroscope_write_sent_profiles",
                "Total number of profiles sent to Pyroscope",
                m.sent_profiles.clone(),
            );
            r.register(
                "pyroscope_write_dropped_bytes",
                "Total number of compressed bytes dropped by Pyroscope",
                m.dropped_bytes.clone(),
            );
            r.register(
                "pyroscope_write_dropped_profiles",
                "Total number of profiles dropped by Pyroscope",
                m.dropped_profiles.clone(),
            );
            r.register(
                "pyroscope_write_retries",
                "Total number of retries to Pyroscope",
                m.retries.clone(),
            );
            r.register(
                "pyroscope_write_latency",
                "Write latency for sending profiles to pyroscope",
                m.latency.clone(),
            );
            r.register(
                "pyroscope_write_queue_profiles",
                "Profiles waiting in the endpoint's queue",
                m.queue_profiles.clone(),
            );
            r.register(
                "pyroscope_write_queue_bytes",
                "Bytes waiting in the endpoint's queue",
                m.queue_bytes.clone(),
            );
            r.register(
                "pyroscope_write_trimmed_profiles",
                "Profiles trimmed to fit the backend's size and sample limits",
                m.trimmed.clone(),
            );
            r.register(
                "pyroscope_write_endpoint_failing",
                "1 while the endpoint is failing: pushes are being retried and none has succeeded since",
                m.failing.clone(),
            );
            m
        })
    }

    /// The handle one endpoint of component `component_id` records through. The series it
    /// always needs are created here, so recording is an atomic add, not a map lookup.
    pub fn endpoint(
        self: &std::sync::Arc<Self>,
        component_id: &str,
        endpoint: &str,
    ) -> EndpointMetrics {
        let mut base = component_labels(component_id);
        base.push(("endpoint".to_string(), endpoint.to_string()));
        let with = |name: &str, value: &str| {
            let mut l = base.clone();
            l.push((name.to_string(), value.to_string()));
            l
        };
        EndpointMetrics {
            sent_profiles: self.sent_profiles.get_or_create(&base).clone(),
            sent_bytes: self.sent_bytes.get_or_create(&base).clone(),
            retries: self.retries.get_or_create(&base).clone(),
            trimmed: TrimReason::ALL.map(|r| {
                self.trimmed
                    .get_or_create(&with("reason", r.as_str()))
                    .clone()
            }),
            trim_log: std::sync::Arc::new(TrimLog::new()),
            failing: self.failing.get_or_create(&base).clone(),
            latency: LATENCY_TYPES.map(|t| self.latency.get_or_create(&with("type", t)).clone()),
            all: self.clone(),
            base,
        }
    }
}

/// Which `pyroscope_write_latency` series.
#[derive(Clone, Copy, Debug)]
pub enum Latency {
    /// One HTTP attempt.
    Downstream = 0,
    /// First attempt to final outcome.
    Endpoint = 1,
    /// Time spent queued.
    Queue = 2,
}

/// One endpoint's series.
#[derive(Clone)]
pub struct EndpointMetrics {
    all: std::sync::Arc<WriteMetrics>,
    base: Labels,
    sent_profiles: Counter,
    sent_bytes: Counter,
    retries: Counter,
    /// Per [`TrimReason`], indexed by its discriminant.
    trimmed: [Counter; TrimReason::ALL.len()],
    /// Rate limits of the trimming log lines, shared by the endpoint's senders.
    trim_log: std::sync::Arc<TrimLog>,
    failing: Gauge,
    latency: [Histogram; 3],
}

impl EndpointMetrics {
    fn with(&self, name: &str, value: &str) -> Labels {
        let mut l = self.base.clone();
        l.push((name.to_string(), value.to_string()));
        l
    }

    pub fn sent(&self, bytes: usize) {
        self.sent_profiles.inc();
        self.sent_bytes.inc_by(bytes as u64);
    }

    pub fn dropped(&self, reason: Reason, profiles: u64, bytes: u64) {
        let l = self.with("reason", reason.as_str());
        self.all.dropped_profiles.get_or_create(&l).inc_by(profiles);
        self.all.dropped_bytes.get_or_create(&l).inc_by(bytes);
    }

    pub fn retry(&self) {
        self.retries.inc();
    }

    pub fn trimmed(&self, reason: TrimReason) {
        self.trimmed[reason as usize].inc();
    }

    pub(super) fn trim_log(&self) -> &TrimLog {
        &self.trim_log
    }

    pub fn failing(&self, failing: bool) {
        self.failing.set(i64::from(failing));
    }

    pub fn latency(&self, kind: Latency, seconds: f64) {
        self.latency[kind as usize].observe(seconds);
    }

    /// The depth gauges for this endpoint's queue.
    pub fn depth_gauges(&self) -> DepthGauges {
        DepthGauges {
            profiles: self.all.queue_profiles.get_or_create(&self.base).clone(),
            bytes: self.all.queue_bytes.get_or_create(&self.base).clone(),
        }
    }

    /// Removes every series of this endpoint (the component exited).
    pub fn remove(&self) {
        let a = &self.all;
        for family in [&a.sent_bytes, &a.sent_profiles, &a.retries] {
            family.remove(&self.base);
        }
        for r in TrimReason::ALL {
            a.trimmed.remove(&self.with("reason", r.as_str()));
        }
        a.queue_profiles.remove(&self.base);
        a.queue_bytes.remove(&self.base);
        a.failing.remove(&self.base);
        for r in Reason::ALL {
            let l = self.with("reason", r.as_str());
            a.dropped_bytes.remove(&l);
            a.dropped_profiles.remove(&l);
        }
        for t in LATENCY_TYPES {
            a.latency.remove(&self.with("type", t));
        }
    }
}
