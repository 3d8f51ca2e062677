//! `pyroscope.scrape` metrics: Alloy's two fan-out metrics, plus per-target health that Alloy
//! does not have.
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `pyroscope_scrape_up` | instance, service_name, profile_type | 1 if the last scrape succeeded, 0 if it failed (or the target is over a label limit) |
//! | `pyroscope_scrape_duration_seconds` | instance, service_name, profile_type | how long the last scrape took (request, body, delta) |
//! | `pyroscope_scrape_errors_total` | reason | failed scrapes, by [`Reason`] |
//! | `pyroscope_scrape_targets` | | scrape loops (targets × enabled profile types) |
//! | `pyroscope_scrape_delta_state_bytes` | | memory held as delta baselines |
//! | `pyroscope_forwarded_entries_total` | | profiles handed to `forward_to` (Alloy's name) |
//! | `pyroscope_fanout_latency` | | seconds spent handing a profile to `forward_to` (Alloy's name) |
//! | `pyroscope_scrape_lateness_seconds` | | how long after its scheduled time each scrape started |
//! | `pyroscope_scrape_missed_total` | | scheduled scrapes skipped because the previous one of the loop was still running |
//! | `pyroscope_scrape_all_targets_down` | | 1 while every target has been down for more than two scrape intervals (the component is unhealthy) |
//! | `pyroscope_scrape_target_restarts_total` | reason | delta baselines started over because a target restarted or changed (counters went down, another binary...) |
//! | `pyroscope_scrape_delta_mode_changes_total` | mode, cause | loops that switched between subtracting scrapes (`subtracted`) and forwarding what a delta endpoint sends (`as_received`), found by the path or by the values |
//!
//! Every series also has `component_id` and `component_path`. A target's series are removed when
//! the target goes away.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::error::Reason;
use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// The labels of one loop's series (`up`, `duration`), shared by both series and the loop: a
/// series key is cloned into each family, and at 40,000 loops three copies of five label
/// pairs were ~4 KiB per target (docs/PERFORMANCE.md, "Load: the single-instance ceiling").
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SeriesKey(Arc<Labels>);

impl EncodeLabelSet for SeriesKey {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }
}

/// The metric families, registered once per process.
pub struct ScrapeMetrics {
    up: Family<SeriesKey, Gauge>,
    duration: Family<SeriesKey, Gauge<f64, AtomicU64>>,
    errors: Family<Labels, Counter>,
    targets: Family<Labels, Gauge>,
    state_bytes: Family<Labels, Gauge>,
    forwarded: Family<Labels, Counter>,
    fanout_latency: HistogramFamily,
    lateness: HistogramFamily,
    missed: Family<Labels, Counter>,
    all_down: Family<Labels, Gauge>,
    restarts: Family<Labels, Counter>,
    delta_modes: Family<Labels, Counter>,
}

/// The `reason` of `pyroscope_scrape_target_restarts_total`, from the delta engine's reasons.
pub const RESTART_REASONS: [&str; 5] = [
    "counters_decreased",
    "time_went_backwards",
    "build_id_changed",
    "sample_types_changed",
    "period_changed",
];

/// The (`mode`, `cause`) pairs of `pyroscope_scrape_delta_mode_changes_total`.
const DELTA_MODES: [(&str, &str); 3] = [
    ("as_received", "path"),
    ("as_received", "values"),
    ("subtracted", "values"),
];

fn lateness_histogram() -> Histogram {
    Histogram::new([
        0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
    ])
}

fn latency_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ])
}

impl ScrapeMetrics {
    pub fn get(registry: &MetricsRegistry) -> Arc<ScrapeMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = ScrapeMetrics {
                up: Family::default(),
                duration: Family::default(),
                errors: Family::default(),
                targets: Family::default(),
                state_bytes: Family::default(),
                forwarded: Family::default(),
                fanout_latency: Family::new_with_constructor(
                    latency_histogram as fn() -> Histogram,
                ),
                lateness: Family::new_with_constructor(lateness_histogram as fn() -> Histogram),
                missed: Family::default(),
                all_down: Family::default(),
                restarts: Family::default(),
                delta_modes: Family::default(),
            };
            r.register(
                "pyroscope_scrape_up",
                "1 if the target's last scrape succeeded, else 0",
                m.up.clone(),
            );
            r.register(
                "pyroscope_scrape_duration_seconds",
                "Duration of the target's last scrape",
                m.duration.clone(),
            );
            r.register(
                "pyroscope_scrape_errors",
                "Failed scrapes by reason",
                m.errors.clone(),
            );
            r.register(
                "pyroscope_scrape_targets",
                "Scrape loops (targets times enabled profile types)",
                m.targets.clone(),
            );
            r.register(
                "pyroscope_scrape_delta_state_bytes",
                "Bytes held as delta baselines of cumulative profiles",
                m.state_bytes.clone(),
            );
            r.register(
                "pyroscope_forwarded_entries",
                "Total number of profiles forwarded",
                m.forwarded.clone(),
            );
            r.register(
                "pyroscope_fanout_latency",
                "Write latency for sending to pyroscope profiles",
                m.fanout_latency.clone(),
            );
            r.register(
                "pyroscope_scrape_lateness_seconds",
                "How long after its scheduled time each scrape started",
                m.lateness.clone(),
            );
            r.register(
                "pyroscope_scrape_missed",
                "Scheduled scrapes skipped because the loop's previous scrape was still running",
                m.missed.clone(),
            );
            r.register(
                "pyroscope_scrape_all_targets_down",
                "1 while every target has been down for more than two scrape intervals",
                m.all_down.clone(),
            );
            r.register(
                "pyroscope_scrape_target_restarts",
                "Delta baselines started over because a target restarted or changed, by reason",
                m.restarts.clone(),
            );
            r.register(
                "pyroscope_scrape_delta_mode_changes",
                "Loops that switched to forwarding a delta endpoint as received, or back to subtracting scrapes",
                m.delta_modes.clone(),
            );
            m
        })
    }

    /// The series of one component instance.
    pub fn component(self: &Arc<Self>, component_id: &str) -> ComponentMetrics {
        let base = component_labels(component_id);
        ComponentMetrics {
            targets: self.targets.get_or_create(&base).clone(),
            state_bytes: self.state_bytes.get_or_create(&base).clone(),
            forwarded: self.forwarded.get_or_create(&base).clone(),
            fanout_latency: self.fanout_latency.get_or_create(&base).clone(),
            lateness: self.lateness.get_or_create(&base).clone(),
            missed: self.missed.get_or_create(&base).clone(),
            all_down: self.all_down.get_or_create(&base).clone(),
            all: self.clone(),
            base,
        }
    }
}

/// One component's series.
#[derive(Clone)]
pub struct ComponentMetrics {
    all: Arc<ScrapeMetrics>,
    base: Labels,
    pub targets: Gauge,
    pub state_bytes: Gauge,
    pub forwarded: Counter,
    pub fanout_latency: Histogram,
    pub lateness: Histogram,
    pub missed: Counter,
    pub all_down: Gauge,
}

impl ComponentMetrics {
    pub fn error(&self, reason: Reason) {
        let mut l = self.base.clone();
        l.push(("reason".to_string(), reason.as_str().to_string()));
        self.all.errors.get_or_create(&l).inc();
    }

    /// Counts a baseline that started over, by its `reason` (one of [`RESTART_REASONS`]).
    pub fn restarted(&self, reason: &str) {
        let mut l = self.base.clone();
        l.push(("reason".to_string(), reason.to_string()));
        self.all.restarts.get_or_create(&l).inc();
    }

    /// Counts a loop's switch of delta mode (`as_received` or `subtracted`) and its `cause`.
    pub fn delta_mode_changed(&self, mode: &str, cause: &str) {
        let mut l = self.base.clone();
        l.push(("mode".to_string(), mode.to_string()));
        l.push(("cause".to_string(), cause.to_string()));
        self.all.delta_modes.get_or_create(&l).inc();
    }

    /// The label set of a target's series.
    pub fn target_key(&self, instance: &str, service_name: &str, profile_type: &str) -> SeriesKey {
        let mut l = Vec::with_capacity(self.base.len() + 3);
        l.extend(self.base.iter().cloned());
        l.push(("instance".to_string(), instance.to_string()));
        l.push(("service_name".to_string(), service_name.to_string()));
        l.push(("profile_type".to_string(), profile_type.to_string()));
        SeriesKey(Arc::new(l))
    }

    /// Records a target's last scrape: up or down and how long it took.
    pub fn target_scraped(&self, key: &SeriesKey, up: bool, seconds: Option<f64>) {
        self.all.up.get_or_create(key).set(i64::from(up));
        if let Some(s) = seconds {
            self.all.duration.get_or_create(key).set(s);
        }
    }

    pub fn remove_target(&self, key: &SeriesKey) {
        self.all.up.remove(key);
        self.all.duration.remove(key);
    }

    /// Removes every series of this component (it exited).
    pub fn remove(&self) {
        self.all.targets.remove(&self.base);
        self.all.state_bytes.remove(&self.base);
        self.all.forwarded.remove(&self.base);
        self.all.fanout_latency.remove(&self.base);
        self.all.lateness.remove(&self.base);
        self.all.missed.remove(&self.base);
        self.all.all_down.remove(&self.base);
        for reason in RESTART_REASONS {
            let mut l = self.base.clone();
            l.push(("reason".to_string(), reason.to_string()));
            self.all.restarts.remove(&l);
        }
        for (mode, cause) in DELTA_MODES {
            let mut l = self.base.clone();
            l.push(("mode".to_string(), mode.to_string()));
            l.push(("cause".to_string(), cause.to_string()));
            self.all.delta_modes.remove(&l);
        }
        for r in Reason::ALL {
            let mut l = self.base.clone();
            l.push(("reason".to_string(), r.as_str().to_string()));
            self.all.errors.remove(&l);
        }
    }
}
