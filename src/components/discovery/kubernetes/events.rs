//! What `discovery.kubernetes` reports, as typed events (`runtime::event`): each writes its log
//! line and updates its metrics (`prometheus_sd_kubernetes_failures_total`,
//! `discovery_kubernetes_failures_total{reason}`, `discovery_kubernetes_watches_failing`) in
//! one place, so the counters and the log can never disagree about what failed.
//!
//! A failure is a warning when it starts and a debug line while it repeats; its end is an info
//! line. A long outage is then two lines, not one per retry.

use std::fmt::Display;

use super::metrics::{ComponentMetrics, Reason};
use super::outage::Outage;
use crate::protocols::kubernetes::watcher::Failure;
use crate::runtime::event::InternalEvent;

/// The Kubernetes client could not be built (kubeconfig, credentials, namespaces); retried.
pub(super) struct ClientSetupFailed<'a, E: Display> {
    pub component: &'a str,
    pub error: &'a E,
    pub repeated: bool,
    pub metrics: &'a ComponentMetrics,
}

impl<E: Display> InternalEvent for ClientSetupFailed<'_, E> {
    fn emit(self) {
        self.metrics.failure(Reason::Client);
        if self.repeated {
            tracing::debug!(component = %self.component, error = %self.error, "cannot set up Kubernetes client; retrying");
        } else {
            tracing::warn!(component = %self.component, error = %self.error, "cannot set up Kubernetes client; retrying");
        }
    }
}

/// The client was built after `failures` failed attempts.
pub(super) struct ClientSetupRecovered<'a> {
    pub component: &'a str,
    pub failures: u64,
}

impl InternalEvent for ClientSetupRecovered<'_> {
    fn emit(self) {
        tracing::info!(component = %self.component, failures = self.failures, "Kubernetes client set up after failures");
    }
}

/// A list or watch failed; it is retried with backoff and the last targets stay. `started`
/// when this watch was current until now; `failing` is how many watches are failing now.
pub(super) struct WatchFailed<'a> {
    pub component: &'a str,
    pub watch: &'a str,
    pub failure: &'a Failure,
    pub started: bool,
    pub failing: usize,
    pub metrics: &'a ComponentMetrics,
}

impl InternalEvent for WatchFailed<'_> {
    fn emit(self) {
        let (component, watch, f) = (self.component, self.watch, self.failure);
        self.metrics.failure(Reason::Watch(f.reason));
        self.metrics.set_failing(self.failing);
        if self.started {
            tracing::warn!(component = %component, watch = %watch, reason = f.reason.as_str(), error = %f.message, "Kubernetes list/watch failing; retrying with backoff, keeping the last targets (they may go stale)");
        } else {
            tracing::debug!(component = %component, watch = %watch, reason = f.reason.as_str(), error = %f.message, "Kubernetes list/watch still failing");
        }
    }
}

/// 410 Gone: the watch's resource version expired and it relists. Routine after a long watch
/// or an etcd compaction, so an info line; counted with the failures, as the failed request it
/// is.
pub(super) struct WatchExpired<'a> {
    pub component: &'a str,
    pub watch: &'a str,
    pub failure: &'a Failure,
    pub metrics: &'a ComponentMetrics,
}

impl InternalEvent for WatchExpired<'_> {
    fn emit(self) {
        self.metrics.failure(Reason::Watch(self.failure.reason));
        tracing::info!(component = %self.component, watch = %self.watch, error = %self.failure.message, "Kubernetes resource version expired; relisting");
    }
}

/// A failing watch is current again (a list completed or a watch was answered).
pub(super) struct WatchRecovered<'a> {
    pub component: &'a str,
    pub watch: &'a str,
    pub outage: &'a Outage,
    pub failing: usize,
    pub metrics: &'a ComponentMetrics,
}

impl InternalEvent for WatchRecovered<'_> {
    fn emit(self) {
        let o = self.outage;
        self.metrics.set_failing(self.failing);
        tracing::info!(component = %self.component, watch = %self.watch, failures = o.failures, lasted = ?o.since.elapsed(), last_error = %o.last, "Kubernetes list/watch recovered");
    }
}
