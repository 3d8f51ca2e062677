//! Prometheus' Kubernetes discovery metrics, with Alloy's component labels, and ours.
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `prometheus_sd_kubernetes_events_total` | role, event | object events seen: role = the object's resource (`pod`, `node`...), event = `add`, `update` or `delete` |
//! | `prometheus_sd_kubernetes_failures_total` | | failed lists and watches (each is retried with backoff), and failed client set-ups |
//! | `discovery_kubernetes_failures_total` | reason | the same failures by reason: `client` (set-up), `list`, `watch`, `timeout` (the API server did not answer in time), `expired` (410 Gone: relisted) |
//! | `discovery_kubernetes_watches_failing` | | watches failing now: their cached objects (and targets) may be stale |

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::role::Resource;
use super::state::EventKind;
use crate::protocols::kubernetes::watcher::FailureReason;
use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

/// Why `discovery_kubernetes_failures_total` counted: a list or watch failure, or the client
/// set-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Client,
    Watch(FailureReason),
}

impl Reason {
    const ALL: [Reason; 5] = [
        Reason::Client,
        Reason::Watch(FailureReason::List),
        Reason::Watch(FailureReason::Watch),
        Reason::Watch(FailureReason::Timeout),
        Reason::Watch(FailureReason::Expired),
    ];

    fn as_str(self) -> &'static str {
        match self {
            Reason::Client => "client",
            Reason::Watch(r) => r.as_str(),
        }
    }
}

/// The metric families, registered once per process.
pub struct KubernetesMetrics {
    events: Family<Labels, Counter>,
    failures: Family<Labels, Counter>,
    failures_by_reason: Family<Labels, Counter>,
    failing: Family<Labels, Gauge>,
}

impl KubernetesMetrics {
    pub fn get(registry: &MetricsRegistry) -> Arc<KubernetesMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = KubernetesMetrics {
                events: Family::default(),
                failures: Family::default(),
                failures_by_reason: Family::default(),
                failing: Family::default(),
            };
            r.register(
                "prometheus_sd_kubernetes_events",
                "The number of Kubernetes events handled",
                m.events.clone(),
            );
            r.register(
                "prometheus_sd_kubernetes_failures",
                "The number of failed WATCH/LIST requests",
                m.failures.clone(),
            );
            r.register(
                "discovery_kubernetes_failures",
                "Failed Kubernetes client set-ups, lists and watches, by reason",
                m.failures_by_reason.clone(),
            );
            r.register(
                "discovery_kubernetes_watches_failing",
                "Kubernetes watches failing now, whose cached objects may be stale",
                m.failing.clone(),
            );
            m
        })
    }

    pub fn component(self: &Arc<Self>, component_id: &str) -> ComponentMetrics {
        let base = component_labels(component_id);
        ComponentMetrics {
            failures: self.failures.get_or_create(&base).clone(),
            failing: self.failing.get_or_create(&base).clone(),
            all: self.clone(),
            base,
        }
    }
}

/// One component's series.
pub struct ComponentMetrics {
    all: Arc<KubernetesMetrics>,
    base: Labels,
    failures: Counter,
    failing: Gauge,
}

impl ComponentMetrics {
    fn event_labels(&self, resource: Resource, kind: EventKind) -> Labels {
        let mut l = self.base.clone();
        l.push(("role".to_string(), resource.as_str().to_string()));
        l.push(("event".to_string(), kind.as_str().to_string()));
        l
    }

    fn reason_labels(&self, reason: Reason) -> Labels {
        let mut l = self.base.clone();
        l.push(("reason".to_string(), reason.as_str().to_string()));
        l
    }

    pub fn event(&self, resource: Resource, kind: EventKind) {
        self.all
            .events
            .get_or_create(&self.event_labels(resource, kind))
            .inc();
    }

    /// Counts a failure, in Prometheus' total and by reason. Called from `events` only.
    pub(super) fn failure(&self, reason: Reason) {
        self.failures.inc();
        self.all
            .failures_by_reason
            .get_or_create(&self.reason_labels(reason))
            .inc();
    }

    /// How many watches are failing now. Called from `events`, and when a session starts.
    pub(super) fn set_failing(&self, n: usize) {
        self.failing.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Removes every series of this component (it exited).
    pub fn remove(&self) {
        self.all.failures.remove(&self.base);
        self.all.failing.remove(&self.base);
        for reason in Reason::ALL {
            self.all
                .failures_by_reason
                .remove(&self.reason_labels(reason));
        }
        let resources = [
            Resource::Pods,
            Resource::Nodes,
            Resource::Namespaces,
            Resource::Services,
            Resource::Endpoints,
            Resource::EndpointSlices,
            Resource::Ingresses,
        ];
        for r in resources {
            for k in [EventKind::Add, EventKind::Update, EventKind::Delete] {
                self.all.events.remove(&self.event_labels(r, k));
            }
        }
    }
}
