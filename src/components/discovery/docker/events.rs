//! What `discovery.docker` reports, as typed events (`runtime::event`) with their metric,
//! `prometheus_sd_refresh_failures_total{mechanism="docker"}` (Prometheus' name;
//! `component_id`, `component_path`). Failures are a warning when they start or their reason
//! changes, a debug line while they repeat, and an info line when the API answers again.

use std::time::Instant;

use crate::runtime::event::InternalEvent;
use crate::runtime::metrics::{CounterFamily, InstanceCounter, MetricsRegistry, component_labels};

/// The failure counter's family.
struct Failures;

impl CounterFamily for Failures {
    const NAME: &'static str = "prometheus_sd_refresh_failures";
    const HELP: &'static str = "Number of refresh failures for the given SD mechanism.";
}

/// This instance's failure series.
pub(super) fn failures(registry: &MetricsRegistry, component_id: &str) -> InstanceCounter {
    let mut labels = component_labels(component_id);
    labels.push(("mechanism".to_string(), "docker".to_string()));
    InstanceCounter::new::<Failures>(registry, labels)
}

/// Listing containers or networks failed; the last good targets stay.
pub(super) struct ListFailed<'a> {
    pub component: &'a str,
    pub host: &'a str,
    pub error: &'a str,
    /// The first failure in a row, or one for a different reason.
    pub new: bool,
    pub kept: usize,
    pub metrics: &'a InstanceCounter,
}

impl InternalEvent for ListFailed<'_> {
    fn emit(self) {
        self.metrics.inc();
        if self.new {
            tracing::warn!(component = %self.component, host = %self.host, error = %self.error, kept_targets = self.kept, "cannot list Docker containers; keeping the last good targets");
        } else {
            tracing::debug!(component = %self.component, error = %self.error, "Docker API still failing");
        }
    }
}

/// The API answered again after failures that began at `since`.
pub(super) struct ListRecovered<'a> {
    pub component: &'a str,
    pub since: Instant,
}

impl InternalEvent for ListRecovered<'_> {
    fn emit(self) {
        tracing::info!(component = %self.component, failing_for = ?self.since.elapsed(), "Docker API answers again");
    }
}
