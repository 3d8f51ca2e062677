//! What `remote.kubernetes.*` reports, as typed events (`runtime::event`) with their metric,
//! `scraper_remote_kubernetes_poll_failures_total` (`component_id`, `component_path`; Alloy has
//! no metric for this). A failed read is a warning when failures start or their reason
//! changes, a debug line while they repeat, and an info line when a read succeeds again.

use std::time::Instant;

use crate::runtime::event::InternalEvent;
use crate::runtime::metrics::{CounterFamily, InstanceCounter, MetricsRegistry, component_labels};

/// The failure counter's family.
struct Failures;

impl CounterFamily for Failures {
    const NAME: &'static str = "scraper_remote_kubernetes_poll_failures";
    const HELP: &'static str =
        "Failed reads of a Kubernetes Secret or ConfigMap by remote.kubernetes.*.";
}

/// This instance's failure series.
pub(super) fn failures(registry: &MetricsRegistry, component_id: &str) -> InstanceCounter {
    InstanceCounter::new::<Failures>(registry, component_labels(component_id))
}

/// A read failed; the last good data stays exported.
pub(super) struct PollFailed<'a> {
    pub component: &'a str,
    /// `namespace/name`.
    pub object: &'a str,
    pub error: &'a str,
    /// The first failure in a row, or one for a different reason.
    pub new: bool,
    pub kept_keys: usize,
    pub metrics: &'a InstanceCounter,
}

impl InternalEvent for PollFailed<'_> {
    fn emit(self) {
        self.metrics.inc();
        if self.new {
            tracing::warn!(component = %self.component, object = %self.object, error = %self.error, kept_keys = self.kept_keys, "reading from the Kubernetes API failed; keeping the last good data");
        } else {
            tracing::debug!(component = %self.component, object = %self.object, error = %self.error, "reading from the Kubernetes API still fails");
        }
    }
}

/// A read succeeded after failures that began at `since`.
pub(super) struct PollRecovered<'a> {
    pub component: &'a str,
    pub object: &'a str,
    pub since: Instant,
}

impl InternalEvent for PollRecovered<'_> {
    fn emit(self) {
        tracing::info!(component = %self.component, object = %self.object, failing_for = ?self.since.elapsed(), "reading from the Kubernetes API works again");
    }
}
