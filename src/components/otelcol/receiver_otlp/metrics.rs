//! `otelcol.receiver.otlp` metrics. Every series has `component_id` and `component_path`; an
//! instance removes its series when it exits.
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `otelcol_receiver_otlp_requests_total` | counter | `transport`, `status` | export requests answered (`grpc`/`http`; the gRPC status name or the HTTP status code) |
//! | `otelcol_receiver_otlp_profiles_forwarded_total` | counter | `transport` | pprof profiles forwarded to `output.profiles` |
//! | `otelcol_receiver_otlp_profiles_dropped_total` | counter | `reason` | converted profiles dropped (`no_output`: `output.profiles` is empty) |
//! | `otelcol_receiver_otlp_attributes_dropped_total` | counter | `place`, `kind` | attributes left out of the labels because their kind has no label form, as in Pyroscope (`resource`/`scope`/`sample`; `bool`, `double`, `bytes`, `array`, `kvlist`) |

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};
use crate::sync::lock;

/// The families, registered once per process.
pub(crate) struct ReceiverMetrics {
    requests: Family<Labels, Counter>,
    forwarded: Family<Labels, Counter>,
    dropped: Family<Labels, Counter>,
    attributes_dropped: Family<Labels, Counter>,
}

impl ReceiverMetrics {
    pub(crate) fn get(registry: &MetricsRegistry) -> Arc<ReceiverMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = ReceiverMetrics {
                requests: Family::default(),
                forwarded: Family::default(),
                dropped: Family::default(),
                attributes_dropped: Family::default(),
            };
            r.register(
                "otelcol_receiver_otlp_requests",
                "OTLP profiles export requests answered, by transport and status.",
                m.requests.clone(),
            );
            r.register(
                "otelcol_receiver_otlp_profiles_forwarded",
                "Profiles converted from OTLP and forwarded to output.profiles, by transport.",
                m.forwarded.clone(),
            );
            r.register(
                "otelcol_receiver_otlp_profiles_dropped",
                "Profiles converted from OTLP and dropped, by reason.",
                m.dropped.clone(),
            );
            r.register(
                "otelcol_receiver_otlp_attributes_dropped",
                "OTLP attributes left out of the labels for want of a label form, by place and kind.",
                m.attributes_dropped.clone(),
            );
            m
        })
    }

    pub(crate) fn instance(self: &Arc<Self>, component_id: &str) -> InstanceMetrics {
        InstanceMetrics {
            all: self.clone(),
            base: component_labels(component_id),
            keys: Mutex::new(HashSet::new()),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Requests,
    Forwarded,
    Dropped,
    AttributesDropped,
}

/// One instance's series.
pub(crate) struct InstanceMetrics {
    all: Arc<ReceiverMetrics>,
    base: Labels,
    /// Label sets created so far, for removal.
    keys: Mutex<HashSet<(Kind, Labels)>>,
}

impl InstanceMetrics {
    fn inc(&self, kind: Kind, extra: &[(&str, &str)], n: u64) {
        let mut labels = self.base.clone();
        for (k, v) in extra {
            labels.push(((*k).to_owned(), (*v).to_owned()));
        }
        let family = match kind {
            Kind::Requests => &self.all.requests,
            Kind::Forwarded => &self.all.forwarded,
            Kind::Dropped => &self.all.dropped,
            Kind::AttributesDropped => &self.all.attributes_dropped,
        };
        family.get_or_create(&labels).inc_by(n);
        lock(&self.keys).insert((kind, labels));
    }

    pub(crate) fn request(&self, transport: &str, status: &str) {
        self.inc(
            Kind::Requests,
            &[("transport", transport), ("status", status)],
            1,
        );
    }

    pub(crate) fn forwarded(&self, transport: &str, n: u64) {
        self.inc(Kind::Forwarded, &[("transport", transport)], n);
    }

    pub(crate) fn dropped(&self, reason: &str, n: u64) {
        self.inc(Kind::Dropped, &[("reason", reason)], n);
    }

    pub(crate) fn attributes_dropped(&self, place: &str, kind: &str, n: u64) {
        self.inc(
            Kind::AttributesDropped,
            &[("place", place), ("kind", kind)],
            n,
        );
    }

    /// Removes every series of this instance.
    pub(crate) fn remove(&self) {
        for (kind, labels) in lock(&self.keys).drain() {
            match kind {
                Kind::Requests => self.all.requests.remove(&labels),
                Kind::Forwarded => self.all.forwarded.remove(&labels),
                Kind::Dropped => self.all.dropped.remove(&labels),
                Kind::AttributesDropped => self.all.attributes_dropped.remove(&labels),
            };
        }
    }
}
