//! Failures of `discovery.kubernetes` as typed events (`runtime::event`): each writes its
//! warning and counts `prometheus_sd_kubernetes_failures_total` in one place, so the counter
//! and the log can never disagree about what failed.

use std::fmt::Display;

use prometheus_client::metrics::counter::Counter;

use crate::runtime::event::InternalEvent;

/// The Kubernetes client could not be built (kubeconfig, credentials, namespaces); retried.
pub(super) struct ClientSetupFailed<'a, E: Display> {
    pub component: &'a str,
    pub error: &'a E,
    pub failures: &'a Counter,
}

impl<E: Display> InternalEvent for ClientSetupFailed<'_, E> {
    fn emit(self) {
        tracing::warn!(component = %self.component, error = %self.error, "cannot set up Kubernetes client; retrying");
        self.failures.inc();
    }
}

/// A list or watch failed; the watcher retries with backoff and the last targets stay.
pub(super) struct WatchFailed<'a, E: Display> {
    pub component: &'a str,
    pub watch: &'a str,
    pub error: &'a E,
    pub failures: &'a Counter,
}

impl<E: Display> InternalEvent for WatchFailed<'_, E> {
    fn emit(self) {
        tracing::warn!(component = %self.component, watch = %self.watch, error = %self.error, "Kubernetes list/watch failed; retrying with backoff, keeping the last targets");
        self.failures.inc();
    }
}
