//! What `discovery.http` reports, as typed events (`runtime::event`) with their metric,
//! `prometheus_sd_http_failures_total` (Prometheus' name; `component_id`, `component_path`).
//! Failures are a warning when they start or their reason changes, a debug line while they
//! repeat, and an info line when a request succeeds again.

use std::time::Instant;

use crate::runtime::event::InternalEvent;
use crate::runtime::metrics::{CounterFamily, InstanceCounter, MetricsRegistry, component_labels};

/// The failure counter's family.
struct Failures;

impl CounterFamily for Failures {
    const NAME: &'static str = "prometheus_sd_http_failures";
    const HELP: &'static str = "Number of HTTP service discovery refresh failures.";
}

/// This instance's failure series.
pub(super) fn failures(registry: &MetricsRegistry, component_id: &str) -> InstanceCounter {
    InstanceCounter::new::<Failures>(registry, component_labels(component_id))
}

/// A request failed; the last good targets stay.
pub(super) struct RequestFailed<'a> {
    pub component: &'a str,
    pub url: &'a str,
    pub error: &'a str,
    /// The first failure in a row, or one for a different reason.
    pub new: bool,
    pub kept: usize,
    pub metrics: &'a InstanceCounter,
}

impl InternalEvent for RequestFailed<'_> {
    fn emit(self) {
        self.metrics.inc();
        if self.new {
            tracing::warn!(component = %self.component, url = %self.url, error = %self.error, kept_targets = self.kept, "discovery.http request failed; keeping the last good targets");
        } else {
            tracing::debug!(component = %self.component, url = %self.url, error = %self.error, "discovery.http request still failing");
        }
    }
}

/// A request succeeded after failures that began at `since`.
pub(super) struct RequestRecovered<'a> {
    pub component: &'a str,
    pub url: &'a str,
    pub since: Instant,
}

impl InternalEvent for RequestRecovered<'_> {
    fn emit(self) {
        tracing::info!(component = %self.component, url = %self.url, failing_for = ?self.since.elapsed(), "discovery.http requests work again");
    }
}
