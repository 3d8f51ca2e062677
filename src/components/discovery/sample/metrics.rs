//! `discovery.sample` metrics, one series per group (the `group_by` values joined with `/`),
//! besides `component_id` and `component_path`:
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `discovery_sample_targets` | gauge | targets of the group in the input |
//! | `discovery_sample_kept` | gauge | targets of the group in `output` |
//!
//! A group's series are removed when the group leaves the input, and all of an instance's
//! when it exits, so a scaled-down workload does not leave stale series behind.

use std::collections::HashSet;
use std::sync::Arc;

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

/// The metric families, registered once per process.
pub(super) struct SampleMetrics {
    targets: Family<Labels, Gauge>,
    kept: Family<Labels, Gauge>,
}

impl SampleMetrics {
    pub(super) fn get(registry: &MetricsRegistry) -> Arc<SampleMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = SampleMetrics {
                targets: Family::default(),
                kept: Family::default(),
            };
            r.register(
                "discovery_sample_targets",
                "Targets of the group that discovery.sample received",
                m.targets.clone(),
            );
            r.register(
                "discovery_sample_kept",
                "Targets of the group that discovery.sample kept",
                m.kept.clone(),
            );
            m
        })
    }
}

/// One instance's series, by group.
pub(super) struct InstanceMetrics {
    all: Arc<SampleMetrics>,
    /// The component's labels, every series' first ones.
    base: Labels,
    groups: HashSet<String>,
}

impl InstanceMetrics {
    pub(super) fn new(all: Arc<SampleMetrics>, component_id: &str) -> Self {
        InstanceMetrics {
            all,
            base: component_labels(component_id),
            groups: HashSet::new(),
        }
    }

    fn labels(&self, group: &str) -> Labels {
        let mut l = self.base.clone();
        l.push(("group".to_string(), group.to_string()));
        l
    }

    /// Sets every present group's figures and removes the series of groups that are gone.
    pub(super) fn set(&mut self, groups: impl IntoIterator<Item = (String, usize, usize)>) {
        let mut now = HashSet::new();
        for (group, targets, kept) in groups {
            let l = self.labels(&group);
            self.all.targets.get_or_create(&l).set(as_i64(targets));
            self.all.kept.get_or_create(&l).set(as_i64(kept));
            now.insert(group);
        }
        for gone in self.groups.difference(&now) {
            let l = self.labels(gone);
            self.all.targets.remove(&l);
            self.all.kept.remove(&l);
        }
        self.groups = now;
    }

    /// Removes every series of this instance (the component exited).
    pub(super) fn remove(&mut self) {
        self.set(std::iter::empty());
    }
}

fn as_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_per_group_and_removal() {
        let reg = MetricsRegistry::new();
        let mut m = InstanceMetrics::new(SampleMetrics::get(&reg), "discovery.sample.s");
        m.set([
            ("ns/ReplicaSet/a".to_string(), 20, 3),
            ("ns/ReplicaSet/b".to_string(), 2, 2),
        ]);
        let text = reg.encode().expect("encode");
        let cases = [
            "discovery_sample_targets{component_id=\"discovery.sample.s\",component_path=\"/\",group=\"ns/ReplicaSet/a\"} 20",
            "discovery_sample_kept{component_id=\"discovery.sample.s\",component_path=\"/\",group=\"ns/ReplicaSet/a\"} 3",
            "discovery_sample_kept{component_id=\"discovery.sample.s\",component_path=\"/\",group=\"ns/ReplicaSet/b\"} 2",
        ];
        for line in cases {
            assert!(text.contains(line), "{line} not in\n{text}");
        }
        m.set([("ns/ReplicaSet/a".to_string(), 40, 3)]);
        let text = reg.encode().expect("encode");
        assert!(!text.contains("ns/ReplicaSet/b"), "{text}");
        assert!(text.contains("group=\"ns/ReplicaSet/a\"} 40"), "{text}");
        m.remove();
        let text = reg.encode().expect("encode");
        assert!(!text.contains("group="), "{text}");
    }
}
