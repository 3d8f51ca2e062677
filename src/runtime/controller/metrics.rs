//! The controller's own metrics, named as in Alloy so existing dashboards keep working.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::runtime::health::HealthState;
use crate::runtime::metrics::{Labels, MetricsRegistry};

/// Alloy's buckets for evaluation times.
const EVALUATION_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

pub(crate) struct ControllerMetrics {
    running_components: Family<Labels, Gauge>,
    pub evaluating: Gauge,
    pub evaluation_seconds: Histogram,
    pub evaluation_queue_size: Gauge,
    pub last_load_successful: Gauge,
    pub load_failures: Counter,
    pub imports_stale: Gauge,
}

impl ControllerMetrics {
    pub fn register(metrics: &MetricsRegistry) -> std::sync::Arc<Self> {
        metrics.get_or_register(|r: &mut Registry| {
            let m = ControllerMetrics {
                running_components: Family::default(),
                evaluating: Gauge::default(),
                evaluation_seconds: Histogram::new(EVALUATION_BUCKETS),
                evaluation_queue_size: Gauge::default(),
                last_load_successful: Gauge::default(),
                load_failures: Counter::default(),
                imports_stale: Gauge::default(),
            };
            r.register(
                "alloy_component_controller_running_components",
                "Total number of running components.",
                m.running_components.clone(),
            );
            r.register(
                "alloy_component_controller_evaluating",
                "Tracks if the controller is currently in the middle of a graph evaluation",
                m.evaluating.clone(),
            );
            r.register(
                "alloy_component_evaluation_seconds",
                "Time spent performing component evaluation",
                m.evaluation_seconds.clone(),
            );
            r.register(
                "alloy_component_evaluation_queue_size",
                "Tracks the number of components waiting to be evaluated",
                m.evaluation_queue_size.clone(),
            );
            r.register(
                "alloy_config_last_load_successful",
                "Config loaded successfully.",
                m.last_load_successful.clone(),
            );
            r.register(
                "alloy_config_load_failures",
                "Config failed to load.",
                m.load_failures.clone(),
            );
            // Ours (Alloy has no such metric): see `module::lastgood`.
            r.register(
                "scraper_module_imports_stale",
                "Imported modules that cannot be read again, used as last read.",
                m.imports_stale.clone(),
            );
            m
        })
    }

    /// Sets the running-components gauge from a count per health state (all four states are
    /// always written, so a state nobody is in anymore drops to zero).
    pub fn set_running(&self, counts: &[(HealthState, i64)]) {
        for state in HealthState::ALL {
            let n = counts
                .iter()
                .find(|(s, _)| *s == state)
                .map_or(0, |(_, n)| *n);
            self.running_components
                .get_or_create(&vec![("health_type".to_string(), state.to_string())])
                .set(n);
        }
    }
}
