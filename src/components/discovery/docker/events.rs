//! What `discovery.docker` reports, as typed events (`runtime::event`) with their metric,
//! `prometheus_sd_refresh_failures_total{mechanism="docker"}` (Prometheus' name;
//! `component_id`, `component_path`). Failures are a warning when they start or their reason
//! changes, a debug line while they repeat, and an info line when the API answers again.

use std::sync::Arc;
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::runtime::event::InternalEvent;
use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

/// The family, registered once per process.
struct Failures(Family<Labels, Counter>);

/// One instance's series.
pub(super) struct InstanceMetrics {
    all: Arc<Failures>,
    base: Labels,
}

impl InstanceMetrics {
    pub(super) fn new(registry: &MetricsRegistry, component_id: &str) -> Self {
        let all = registry.get_or_register(|r: &mut Registry| {
            let f = Failures(Family::default());
            r.register(
                "prometheus_sd_refresh_failures",
                "Number of refresh failures for the given SD mechanism.",
                f.0.clone(),
            );
            f
        });
        let mut base = component_labels(component_id);
        base.push(("mechanism".to_string(), "docker".to_string()));
        InstanceMetrics { all, base }
    }

    /// Removes this instance's series (the component exited).
    pub(super) fn remove(&self) {
        self.all.0.remove(&self.base);
    }
}

/// Listing containers or networks failed; the last good targets stay.
pub(super) struct ListFailed<'a> {
    pub component: &'a str,
    pub host: &'a str,
    pub error: &'a str,
    /// The first failure in a row, or one for a different reason.
    pub new: bool,
    pub kept: usize,
    pub metrics: &'a InstanceMetrics,
}

impl InternalEvent for ListFailed<'_> {
    fn emit(self) {
        self.metrics.all.0.get_or_create(&self.metrics.base).inc();
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
