//! Prometheus' Kubernetes discovery metrics, with Alloy's component labels.
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `prometheus_sd_kubernetes_events_total` | role, event | object events seen: role = the object's resource (`pod`, `node`...), event = `add`, `update` or `delete` |
//! | `prometheus_sd_kubernetes_failures_total` | | failed lists and watches (each is retried with backoff) |

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::role::Resource;
use super::state::EventKind;
use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

/// The metric families, registered once per process.
pub struct KubernetesMetrics {
    events: Family<Labels, Counter>,
    failures: Family<Labels, Counter>,
}

impl KubernetesMetrics {
    pub fn get(registry: &MetricsRegistry) -> Arc<KubernetesMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = KubernetesMetrics {
                events: Family::default(),
                failures: Family::default(),
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
            m
        })
    }

    pub fn component(self: &Arc<Self>, component_id: &str) -> ComponentMetrics {
        let base = component_labels(component_id);
        ComponentMetrics {
            failures: self.failures.get_or_create(&base).clone(),
            all: self.clone(),
            base,
        }
    }
}

/// One component's series.
pub struct ComponentMetrics {
    all: Arc<KubernetesMetrics>,
    base: Labels,
    pub failures: Counter,
}

impl ComponentMetrics {
    fn event_labels(&self, resource: Resource, kind: EventKind) -> Labels {
        let mut l = self.base.clone();
        l.push(("role".to_string(), resource.as_str().to_string()));
        l.push(("event".to_string(), kind.as_str().to_string()));
        l
    }

    pub fn event(&self, resource: Resource, kind: EventKind) {
        self.all
            .events
            .get_or_create(&self.event_labels(resource, kind))
            .inc();
    }

    /// Removes every series of this component (it exited).
    pub fn remove(&self) {
        self.all.failures.remove(&self.base);
        let resources = [
            Resource::Pods,
            Resource::Nodes,
            Resource::Namespaces,
            Resource::Services,
            Resource::Endpoints,
            Resource::EndpointSlices,
        ];
        for r in resources {
            for k in [EventKind::Add, EventKind::Update, EventKind::Delete] {
                self.all.events.remove(&self.event_labels(r, k));
            }
        }
    }
}
