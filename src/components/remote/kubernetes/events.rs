//! What `remote.kubernetes.*` reports, as typed events (`runtime::event`) with their metric,
//! `scraper_remote_kubernetes_poll_failures_total` (`component_id`, `component_path`; Alloy has
//! no metric for this). A failed read is a warning when failures start or their reason
//! changes, a debug line while they repeat, and an info line when a read succeeds again.

use std::sync::Arc;
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::runtime::event::InternalEvent;
use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

/// The family, registered once per process.
struct PollMetrics {
    failures: Family<Labels, Counter>,
}

/// One instance's series.
pub(super) struct InstanceMetrics {
    all: Arc<PollMetrics>,
    base: Labels,
}

impl InstanceMetrics {
    pub(super) fn new(registry: &MetricsRegistry, component_id: &str) -> Self {
        let all = registry.get_or_register(|r: &mut Registry| {
            let m = PollMetrics {
                failures: Family::default(),
            };
            r.register(
                "scraper_remote_kubernetes_poll_failures",
                "Failed reads of a Kubernetes Secret or ConfigMap by remote.kubernetes.*.",
                m.failures.clone(),
            );
            m
        });
        let base = component_labels(component_id);
        // Present at 0 from the start, so an alert on its rate sees the first failure.
        drop(all.failures.get_or_create(&base));
        InstanceMetrics { all, base }
    }

    /// Removes this instance's series (the component exited).
    pub(super) fn remove(&self) {
        self.all.failures.remove(&self.base);
    }
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
    pub metrics: &'a InstanceMetrics,
}

impl InternalEvent for PollFailed<'_> {
    fn emit(self) {
        self.metrics
            .all
            .failures
            .get_or_create(&self.metrics.base)
            .inc();
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
