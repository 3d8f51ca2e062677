//! `clustering { enabled = true }`: keep only the targets this instance owns in the cluster's
//! ring (`crate::cluster`), as Alloy does. The key is the input target's labels without the
//! `__meta_*` ones (Alloy's key), so every profile type of a target stays on one peer.
//!
//! When the ring changes a component with the block re-plans (one without it does not):
//! loops of targets still owned keep their delta state (the manager keeps loops by identity);
//! a target that moved here starts new loops, and each of its loops of a cumulative type
//! (memory, mutex, block; not a godeltaprof one, which serves deltas) sends nothing on its
//! first scrape: the baseline is taken again. Those loops are counted as they are planned
//! (`pyroscope_scrape_rebaselines_total`) and each change is summarised in one info line (how
//! many targets moved in and out).
//!
//! While the cluster's peers are unknown (never listed: the EndpointSlice watch fails) the
//! ring is this instance alone, so it scrapes everything; the component's health says so.
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

use super::target::{DiscoveredTarget, Plan, is_cumulative};
use crate::cluster::{Cluster, Membership, target_key_in};
use crate::runtime::event::{InternalEvent, emit};
use crate::runtime::metrics::{Labels, component_labels};
use crate::runtime::{Health, MetricsRegistry};

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
            "Scrape loops of cumulative profile types started without delta state (their first scrape is a baseline, not sent) because their target moved to this instance in the cluster.",
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

/// Loops of `planned` that take a baseline when they start: cumulative types the scraper
/// subtracts (a godeltaprof handler serves deltas itself and needs none).
pub fn baselines(planned: &Plan) -> usize {
    planned
        .targets
        .iter()
        .filter(|t| is_cumulative(&t.profile_name) && !t.godeltaprof && !t.delta_path)
        .count()
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
    /// Reused by every key computed, rather than one allocation per target per sync.
    key_buf: Vec<u8>,
    /// The last sync's moves, until [`Sharding::report_moves`] has counted their loops.
    moves: Option<Moves>,
    probe: Arc<Probe>,
}

/// The component's clustering health, read without the component's lock (health is polled
/// while a sync may hold it).
#[derive(Default)]
pub struct Probe {
    cluster: Option<Cluster>,
    follows: std::sync::atomic::AtomicBool,
}

impl Probe {
    /// Unhealthy while clustering applies and the peers are unknown: this instance then
    /// scrapes every target it is given, as do its peers.
    pub fn health(&self) -> Option<Health> {
        if !self.follows.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        self.cluster
            .as_ref()?
            .membership_unknown()
            .map(Health::unhealthy)
    }
}

/// Targets a ring change moved.
pub struct Moves {
    membership: Arc<Membership>,
    /// The targets that moved here, to plan their new loops.
    pub moved_in: Vec<DiscoveredTarget>,
    moved_out: usize,
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
            component: component.to_string(),
            labels: component_labels(component),
            metrics: register(registry),
            given: HashSet::new(),
            owned: HashSet::new(),
            version: None,
            said_alone: false,
            enabled: false,
            key_buf: Vec::with_capacity(256),
            moves: None,
            probe: Arc::new(Probe {
                cluster: cluster.clone(),
                follows: Default::default(),
            }),
            cluster,
        }
    }

    /// Follows the ring, when there is one to follow. A receiver counts the ring of its
    /// creation as seen; should the ring have changed since the last sync planned with it
    /// (between `build` and `run`, or a reload and this call), the receiver is marked changed
    /// so that the caller re-plans at once rather than at the next change, which may never
    /// come.
    pub fn subscribe(&self) -> Option<watch::Receiver<Arc<Membership>>> {
        let mut rx = self
            .cluster
            .as_ref()
            .filter(|c| c.enabled())
            .map(Cluster::subscribe)?;
        let now = rx.borrow().clone();
        if self.follows_ring() && self.version != Some((now.version, now.settled)) {
            rx.mark_changed();
        }
        Some(rx)
    }

    /// Whether a ring change must re-plan: the block asks for clustering and there is a
    /// cluster. Components without the block ignore the ring.
    pub fn follows_ring(&self) -> bool {
        self.enabled && self.cluster.as_ref().is_some_and(Cluster::enabled)
    }

    /// See [`Probe::health`].
    pub fn health(&self) -> Option<Health> {
        self.probe.health()
    }

    pub fn probe(&self) -> Arc<Probe> {
        self.probe.clone()
    }

    /// The targets to scrape: `None` (all of them) unless `enabled`, else those this instance
    /// owns. Moves since the last sync wait in `moves` for [`Sharding::report_moves`].
    pub fn filter(
        &mut self,
        targets: &[DiscoveredTarget],
        enabled: bool,
    ) -> Option<Vec<DiscoveredTarget>> {
        self.enabled = enabled;
        self.moves = None;
        self.probe
            .follows
            .store(self.follows_ring(), std::sync::atomic::Ordering::Relaxed);
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
        // A move is a change between two settled rings: the first settled ring of a starting
        // instance moves nothing here (its targets are baselines anyway).
        let changed_ring = self
            .version
            .is_some_and(|(v, settled)| settled && v != membership.version);
        let mut given = HashSet::with_capacity(targets.len());
        let mut owned = HashSet::new();
        let mut kept = Vec::new();
        // Targets given both times whose owner changed; new and gone targets are not moves.
        let mut moved_in = Vec::new();
        for t in targets {
            let key = target_key_in(&mut self.key_buf, t.labels.0.iter());
            given.insert(key);
            if membership.owns(key) {
                owned.insert(key);
                kept.push(t.clone());
                if changed_ring && self.given.contains(&key) && !self.owned.contains(&key) {
                    moved_in.push(t.clone());
                }
            }
        }
        self.given = given;
        let previous_owned = std::mem::replace(&mut self.owned, owned);
        self.version = Some((membership.version, membership.settled));
        cluster.report_owned(&self.component, self.owned.len(), self.given.len());
        self.metrics
            .owned
            .get_or_create(&self.labels)
            .set(self.owned.len() as i64);
        if changed_ring {
            let moved_out = previous_owned
                .iter()
                .filter(|k| self.given.contains(k) && !self.owned.contains(k))
                .count();
            self.moves = Some(Moves {
                membership,
                moved_in,
                moved_out,
            });
        }
        Some(kept)
    }

    /// The last sync's moves, if its ring changed: the caller plans `moved_in` and hands the
    /// plan to [`Sharding::report_moves`].
    pub fn take_moves(&mut self) -> Option<Moves> {
        self.moves.take()
    }

    /// Counts and logs `moves`; `planned` is the plan of its moved-in targets, whose loops of
    /// cumulative types start without delta state here.
    pub fn report_moves(&self, moves: &Moves, planned: &Plan) {
        emit(TargetsMoved {
            s: self,
            membership: &moves.membership,
            moved_in: moves.moved_in.len(),
            moved_out: moves.moved_out,
            rebaselines: baselines(planned) as u64,
        });
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

    use std::collections::BTreeMap;

    use super::*;
    use crate::cluster::Member;
    use crate::components::pyroscope::scrape::profiling::{ProfileType, ProfilingConfig};
    use crate::components::pyroscope::scrape::target::{TargetSettings, plan};
    use crate::labels::LabelSet;
    use crate::targets::Shared;

    fn types() -> BTreeMap<String, ProfileType> {
        ProfilingConfig::default()
            .all_types()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn settings() -> TargetSettings {
        TargetSettings {
            scheme: "http".into(),
            seconds: 14,
            ..Default::default()
        }
    }

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
            let kept = s.filter(&all, true).unwrap_or_default();
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
            let after = s.filter(&all, true).map_or(0, |k| k.len());
            if let Some(m) = s.take_moves() {
                let planned = plan(&m.moved_in, &types(), &settings());
                s.report_moves(&m, &planned);
            }
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
        assert!(s.filter(&all, false).is_none());
        let mut alone = Sharding::new(Some(Cluster::alone("a", "a:1")), "y", &registry);
        assert!(alone.filter(&all, true).is_none());
        let mut none = Sharding::new(None, "z", &registry);
        assert!(none.filter(&all, true).is_none());
        assert!(s.filter(&all, true).is_some_and(|k| k.len() < all.len()));
    }

    #[test]
    fn a_ring_change_before_subscribing_is_not_missed() {
        let registry = MetricsRegistry::new();
        let all = targets(50);
        let c = Cluster::fixed(Member::new("10.9.0.0:4040", "p0"));
        let mut s = Sharding::new(Some(c.clone()), "a", &registry);
        let mut plain = Sharding::new(Some(c.clone()), "b", &registry);
        // build(): planned with the ring as it is (this instance alone).
        assert_eq!(s.filter(&all, true).map(|k| k.len()), Some(all.len()));
        assert!(plain.filter(&all, false).is_none());
        // The ring changes before run() subscribes.
        c.set_members(members(3));
        let rx = s.subscribe();
        assert!(
            rx.as_ref()
                .is_some_and(|r| r.has_changed().unwrap_or(false)),
            "the plan used an older ring: re-plan at once"
        );
        assert!(s.follows_ring());
        let owned = s.filter(&all, true).map_or(0, |k| k.len());
        assert!(owned < all.len());
        assert!(
            s.subscribe()
                .is_some_and(|r| !r.has_changed().unwrap_or(true)),
            "up to date: nothing to re-plan"
        );
        // Without the block the ring is not followed.
        assert!(!plain.follows_ring());
        assert!(
            plain
                .subscribe()
                .is_some_and(|r| !r.has_changed().unwrap_or(true))
        );
    }

    #[test]
    fn rebaselines_count_the_loops_that_take_a_baseline() {
        let cumulative = types()
            .values()
            .filter(|t| t.enabled && is_cumulative(&t.name))
            .count();
        assert!(cumulative > 0);
        let mut moved = targets(3);
        // A target that cannot be planned starts no loop, so it takes no baseline.
        let bad: LabelSet = [("__address__", "")].into_iter().collect();
        moved.push(DiscoveredTarget::from(Shared(Arc::new(bad))));
        let planned = plan(&moved, &types(), &settings());
        assert_eq!(baselines(&planned), 3 * cumulative);
    }

    #[test]
    fn unknown_membership_makes_a_clustered_component_unhealthy() {
        let registry = MetricsRegistry::new();
        let all = targets(5);
        let c = Cluster::unlisted(Member::new("10.9.0.0:4040", "p0"));
        let mut s = Sharding::new(Some(c.clone()), "a", &registry);
        let mut plain = Sharding::new(Some(c.clone()), "b", &registry);
        assert_eq!(s.filter(&all, true).map(|k| k.len()), Some(all.len()));
        plain.filter(&all, false);
        let h = s.health().unwrap_or_else(|| panic!("no health override"));
        assert_eq!(h.state, crate::runtime::HealthState::Unhealthy);
        assert!(h.message.contains("scraping all targets"), "{}", h.message);
        assert!(
            plain.health().is_none(),
            "without the block nothing changes"
        );
        c.list_now();
        assert!(s.health().is_none());
    }
}
