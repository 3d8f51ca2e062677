//! `pyroscope.receive_http` metrics. Every series has `component_id` and `component_path`;
//! an instance removes its series when it exits.
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `pyroscope_receive_http_tcp_connections` | gauge | `protocol` | accepted connections now open (Alloy's, from dskit) |
//! | `pyroscope_receive_http_tcp_connections_limit` | gauge | `protocol` | `conn_limit` (0: none) (Alloy's) |
//! | `pyroscope_receive_http_requests_total` | counter | `route`, `status_code` | requests answered |
//! | `pyroscope_receive_http_profiles_received_total` | counter | `route` | profiles forwarded to `forward_to` |

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};
use crate::sync::lock;

/// The families, registered once per process.
pub(crate) struct ReceiveMetrics {
    connections: Family<Labels, Gauge>,
    connections_limit: Family<Labels, Gauge>,
    requests: Family<Labels, Counter>,
    profiles: Family<Labels, Counter>,
}

impl ReceiveMetrics {
    pub(crate) fn get(registry: &MetricsRegistry) -> Arc<ReceiveMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = ReceiveMetrics {
                connections: Family::default(),
                connections_limit: Family::default(),
                requests: Family::default(),
                profiles: Family::default(),
            };
            r.register(
                "pyroscope_receive_http_tcp_connections",
                "Current number of accepted TCP connections.",
                m.connections.clone(),
            );
            r.register(
                "pyroscope_receive_http_tcp_connections_limit",
                "The max number of TCP connections that can be accepted (0 means no limit).",
                m.connections_limit.clone(),
            );
            r.register(
                "pyroscope_receive_http_requests",
                "Requests answered by pyroscope.receive_http, by route and status code.",
                m.requests.clone(),
            );
            r.register(
                "pyroscope_receive_http_profiles_received",
                "Profiles received and forwarded by pyroscope.receive_http, by route.",
                m.profiles.clone(),
            );
            m
        })
    }

    pub(crate) fn instance(self: &Arc<Self>, component_id: &str) -> InstanceMetrics {
        let base = component_labels(component_id);
        let mut http = base.clone();
        http.push(("protocol".to_string(), "http".to_string()));
        InstanceMetrics {
            connections: self.connections.get_or_create(&http).clone(),
            connections_limit: self.connections_limit.get_or_create(&http).clone(),
            all: self.clone(),
            base,
            http,
            keys: Mutex::new(HashSet::new()),
        }
    }
}

/// One instance's series.
pub(crate) struct InstanceMetrics {
    all: Arc<ReceiveMetrics>,
    base: Labels,
    http: Labels,
    pub(crate) connections: Gauge,
    pub(crate) connections_limit: Gauge,
    /// Label sets of the request and profile counters created so far, for removal.
    keys: Mutex<HashSet<(bool, Labels)>>,
}

impl InstanceMetrics {
    pub(crate) fn request(&self, route: &str, status: u16) {
        let mut labels = self.base.clone();
        labels.push(("route".into(), route.into()));
        labels.push(("status_code".into(), status.to_string()));
        self.all.requests.get_or_create(&labels).inc();
        lock(&self.keys).insert((false, labels));
    }

    pub(crate) fn profiles(&self, route: &str, n: u64) {
        let mut labels = self.base.clone();
        labels.push(("route".into(), route.into()));
        self.all.profiles.get_or_create(&labels).inc_by(n);
        lock(&self.keys).insert((true, labels));
    }

    /// Removes every series of this instance.
    pub(crate) fn remove(&self) {
        self.all.connections.remove(&self.http);
        self.all.connections_limit.remove(&self.http);
        for (profiles, labels) in lock(&self.keys).drain() {
            if profiles {
                self.all.profiles.remove(&labels);
            } else {
                self.all.requests.remove(&labels);
            }
        }
    }
}
