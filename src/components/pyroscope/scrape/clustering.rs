//! `clustering { enabled = true }`: keep only the targets this instance owns in the cluster's
//! ring (`crate::cluster`), as Alloy does. The key is the input target's labels without the
//! `__meta_*` ones (Alloy's key), so every profile type of a target stays on one peer.
//!
//! When the ring changes the component re-plans: loops of targets still owned keep their
//! delta state (the manager keeps loops by identity); a target that moved here starts new
//! loops, and each of its cumulative types (memory, mutex, block) sends nothing on its first
//! scrape: the baseline is taken again. That cost is counted
//! (`pyroscope_scrape_rebaselines_total`) and each change is summarised in one info line (how
//! many targets moved in and out).
//!
//! Without `--cluster.enabled` the ring is this instance alone: every target is kept, and the
//! log says so once.

use std::collections::HashSet;
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use super::target::DiscoveredTarget;
use crate::cluster::{Cluster, Membership, target_key};
use crate::runtime::MetricsRegistry;
use crate::runtime::event::{InternalEvent, emit};
use crate::runtime::metrics::{Labels, component_labels};

#[derive(Debug, Default)]
struct Metrics {
    rebaselines: Family<Labels, Counter>,
    moved: Family<Labels, Counter>,
    owned: Family<Labels, Gauge>,
}

fn register(registry: &MetricsRegistry) -> Arc<Metrics> {
    registry.get_or_register(|r: &mut Registry| {
        let m = Metrics::default();
        r.register(
            "pyroscope_scrape_rebaselines",
            "Cumulative series that took their baseline again because their target moved to this instance in the cluster.",
            m.rebaselines.clone(),
        );
        r.register(
            "pyroscope_scrape_cluster_moved_targets",
            "Targets that moved to or from this instance on cluster membership changes, by direction.",
            m.moved.clone(),
        );
        r.register(
            "pyroscope_scrape_cluster_owned_targets",
            "Targets this instance owns in the cluster (scrapes), of those it is given.",
            m.owned.clone(),
        );
        m
    })
}

/// The per-component side of clustering.
pub struct Sharding {
    cluster: Option<Cluster>,
    component: String,
    labels: Labels,
    metrics: Arc<Metrics>,
    /// Keys of the targets given at the last sync, and of those kept.
    given: HashSet<u64>,
    owned: HashSet<u64>,
    /// The ring the last sync used, and whether it was settled.
    version: Option<(u64, bool)>,
    said_alone: bool,
    /// Whether the block asks for clustering (for the debug info).
    pub enabled: bool,
}

/// The membership changed and targets moved.
struct TargetsMoved<'a> {
    s: &'a Sharding,
    membership: &'a Membership,
    moved_in: usize,
    moved_out: usize,
    rebaselines: u64,
}

impl InternalEvent for TargetsMoved<'_> {
    fn emit(self) {
        let m = &self.s.metrics;
        m.rebaselines
            .get_or_create(&self.s.labels)
            .inc_by(self.rebaselines);
        let mut l = self.s.labels.clone();
        l.push(("direction".into(), "in".into()));
        m.moved.get_or_create(&l).inc_by(self.moved_in as u64);
        l.pop();
        l.push(("direction".into(), "out".into()));
        m.moved.get_or_create(&l).inc_by(self.moved_out as u64);
        tracing::info!(
            component = %self.s.component,
            peers = self.membership.members().len(),
            version = self.membership.version,
            moved_in = self.moved_in,
            moved_out = self.moved_out,
            owned = self.s.owned.len(),
            total = self.s.given.len(),
            rebaselines = self.rebaselines,
            "cluster membership changed: targets redistributed"
        );
    }
}

impl Sharding {
    pub fn new(cluster: Option<Cluster>, component: &str, registry: &MetricsRegistry) -> Self {
        Sharding {
            cluster,
            component: component.to_string(),
            labels: component_labels(component),
            metrics: register(registry),
            given: HashSet::new(),
            owned: HashSet::new(),
            version: None,
            said_alone: false,
            enabled: false,
        }
    }

    /// Follows the ring, when there is one to follow.
    pub fn subscribe(&self) -> Option<watch::Receiver<Arc<Membership>>> {
        self.cluster
            .as_ref()
            .filter(|c| c.enabled())
            .map(Cluster::subscribe)
    }

    /// The targets to scrape: `None` (all of them) unless `enabled`, else those this instance
    /// owns. `cumulative` is how many enabled profile types take a baseline.
    pub fn filter(
        &mut self,
        targets: &[DiscoveredTarget],
        enabled: bool,
        cumulative: usize,
    ) -> Option<Vec<DiscoveredTarget>> {
        self.enabled = enabled;
        let cluster = match &self.cluster {
            Some(c) if enabled && c.enabled() => c.clone(),
            _ => {
                if enabled && !self.said_alone {
                    self.said_alone = true;
                    tracing::info!(
                        component = %self.component,
                        "clustering enabled, but not --cluster.enabled: this instance is the only peer and scrapes every target"
                    );
                }
                self.given.clear();
                self.owned.clear();
                self.version = None;
                return None;
            }
        };
        let membership = cluster.membership();
        let mut given = HashSet::with_capacity(targets.len());
        let mut owned = HashSet::new();
        let mut kept = Vec::new();
        for t in targets {
            let key = target_key(t.labels.0.iter());
            given.insert(key);
            if membership.owns(key) {
                owned.insert(key);
                kept.push(t.clone());
            }
        }
        // A move is a change between two settled rings: the first settled ring of a starting
        // instance moves nothing here (its targets are baselines anyway).
        let changed_ring = self
            .version
            .is_some_and(|(v, settled)| settled && v != membership.version);
        let previous_given = std::mem::replace(&mut self.given, given);
        let previous_owned = std::mem::replace(&mut self.owned, owned);
        self.version = Some((membership.version, membership.settled));
        cluster.report_owned(&self.component, self.owned.len(), self.given.len());
        self.metrics
            .owned
            .get_or_create(&self.labels)
            .set(self.owned.len() as i64);
        if changed_ring {
            // Targets given both times whose owner changed; new and gone targets are not moves.
            let moved_in = self
                .owned
                .iter()
                .filter(|k| previous_given.contains(k) && !previous_owned.contains(k))
                .count();
            let moved_out = previous_owned
                .iter()
                .filter(|k| self.given.contains(k) && !self.owned.contains(k))
                .count();
            emit(TargetsMoved {
                s: self,
                membership: &membership,
                moved_in,
                moved_out,
                rebaselines: (moved_in * cumulative) as u64,
            });
        }
        Some(kept)
    }

    /// For the debug info: (owned, given, peers), when clustering applies.
    pub fn counts(&self) -> Option<(usize, usize, usize)> {
        let c = self
            .cluster
            .as_ref()
            .filter(|c| self.enabled && c.enabled())?;
        Some((
            self.owned.len(),
            self.given.len(),
            c.membership().members().len(),
        ))
    }

    /// The component stopped: its series and its line in the peers view go.
    pub fn remove(&self) {
        if let Some(c) = &self.cluster {
            c.forget_owned(&self.component);
        }
        self.metrics.rebaselines.remove(&self.labels);
        self.metrics.owned.remove(&self.labels);
        for d in ["in", "out"] {
            let mut l = self.labels.clone();
            l.push(("direction".into(), d.into()));
            self.metrics.moved.remove(&l);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::cluster::Member;
    use crate::labels::LabelSet;
    use crate::targets::Shared;

    fn targets(n: usize) -> Vec<DiscoveredTarget> {
        (0..n)
            .map(|i| {
                let addr = format!("10.0.{}.{}:6060", i / 200, i % 200);
                let set: LabelSet = [
                    ("__address__", addr.as_str()),
                    (
                        "__meta_kubernetes_pod_phase",
                        if i % 2 == 0 { "Running" } else { "Pending" },
                    ),
                ]
                .into_iter()
                .collect();
                DiscoveredTarget::from(Shared(Arc::new(set)))
            })
            .collect()
    }

    fn members(n: u8) -> Vec<Member> {
        (0..n)
            .map(|i| Member::new(&format!("10.9.0.{i}:4040"), &format!("p{i}")))
            .collect()
    }

    #[test]
    fn peers_split_the_targets_and_a_join_moves_about_a_quarter() {
        let registry = MetricsRegistry::new();
        let all = targets(1_000);
        let mut views: Vec<(Cluster, Sharding)> = members(3)
            .into_iter()
            .map(|m| {
                let c = Cluster::fixed(m.clone());
                c.set_members(members(3));
                let s = Sharding::new(
                    Some(c.clone()),
                    &format!("pyroscope.scrape.{}", m.name),
                    &registry,
                );
                (c, s)
            })
            .collect();
        let mut owners: HashMap<String, usize> = HashMap::new();
        for (i, (_, s)) in views.iter_mut().enumerate() {
            let kept = s.filter(&all, true, 1).unwrap_or_default();
            for t in kept {
                let addr = t
                    .labels
                    .0
                    .get("__address__")
                    .unwrap_or_default()
                    .to_string();
                assert!(owners.insert(addr, i).is_none(), "a target kept twice");
            }
        }
        assert_eq!(owners.len(), all.len(), "every target kept once");
        // A fourth peer: each instance gives it about a quarter of its targets, takes none.
        let mut moved_out = 0;
        for (c, s) in &mut views {
            let before = s.owned.len();
            c.set_members(members(4));
            let after = s.filter(&all, true, 1).map_or(0, |k| k.len());
            assert!(after <= before);
            moved_out += before - after;
        }
        let share = moved_out as f64 / all.len() as f64;
        assert!((0.18..0.32).contains(&share), "{share}");
        let text = registry.encode().unwrap_or_default();
        let rebaselines = text
            .lines()
            .filter(|l| l.starts_with("pyroscope_scrape_rebaselines_total"))
            .count();
        assert!(rebaselines >= 3, "{text}");
    }

    #[test]
    fn without_the_block_or_the_flag_every_target_is_kept() {
        let registry = MetricsRegistry::new();
        let all = targets(10);
        let c = Cluster::fixed(Member::new("a:1", "a"));
        c.set_members(vec![Member::new("b:1", "b")]);
        let mut s = Sharding::new(Some(c), "x", &registry);
        assert!(s.filter(&all, false, 1).is_none());
        let mut alone = Sharding::new(Some(Cluster::alone("a", "a:1")), "y", &registry);
        assert!(alone.filter(&all, true, 1).is_none());
        let mut none = Sharding::new(None, "z", &registry);
        assert!(none.filter(&all, true, 1).is_none());
        assert!(s.filter(&all, true, 1).is_some_and(|k| k.len() < all.len()));
    }
}
