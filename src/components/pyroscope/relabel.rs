//! `pyroscope.relabel`: the relabel engine applied to the labels of every profile passing
//! through, Alloy's component of the same name (`internal/component/pyroscope/relabel/`).
//!
//! ```alloy
//! pyroscope.relabel "filter" {
//!   forward_to = [pyroscope.write.backend.receiver]
//!
//!   rule {
//!     source_labels = ["env"]
//!     regex         = "dev"
//!     action        = "drop"
//!   }
//!   rule {
//!     source_labels = ["service_name"]
//!     target_label  = "service_name"
//!     replacement   = "team-a/$1"
//!   }
//! }
//! ```
//!
//! * Arguments, as Alloy: `forward_to` (receivers, required), any number of `rule` blocks (the
//!   `discovery.relabel` block: same decoding, defaults and validation, errors at the offending
//!   block) applied in file order, and `max_cache_size` (default 10000; Alloy fails to build
//!   with `must provide a positive size` for 0 or less, we reject it while decoding).
//! * Exports, as Alloy: `receiver` (the same receiver for the component's lifetime, so
//!   producers forwarding to it are not re-evaluated by an update) and `rules`, the rules in use
//!   as plain objects, like `discovery.relabel`'s `rules` (Alloy exports a capsule there).
//!
//! # What happens to a profile (Alloy's `Append`, read in `relabel.go`)
//!
//! * Only the profile's series labels are relabelled; labels inside the pprof are untouched.
//! * A profile with **no labels at all** is forwarded as it is, without running the rules or
//!   touching the cache (counted as processed and written), as in Alloy.
//! * Otherwise the rules run over **every** label: `__name__` (the profile type), `__delta__`,
//!   `service_name` and any other `__`-prefixed label are ordinary labels here. Nothing is
//!   inferred (no `service_name` default) and nothing is stripped afterwards: a temporary label
//!   such as Alloy's documented `__tmp_hash` travels on, and `pyroscope.write` drops `__*`
//!   labels other than `__name__` and `__delta__` when it pushes. Labels with empty values
//!   disappear (an empty value is an absent label, as in Prometheus' label builder, which Alloy
//!   uses). The forwarded labels are sorted by name.
//! * A profile whose labels a rule drops (`keep`, `drop`, `keepequal`, `dropequal`) is not
//!   forwarded; it is counted in `pyroscope_relabel_profiles_dropped`.
//! * **Rules that leave no label at all drop the profile** (also counted as dropped). That is
//!   what Alloy's documentation says ("The profile is dropped if no external labels remain") and
//!   what Alloy's code does for every profile of such a label set but the first: Alloy forwards
//!   the first one with no labels, caches the empty result, and its cache lookup then reads an
//!   empty cached result as "dropped". We drop them all, consistently; the backend would refuse
//!   an empty label set anyway.
//!
//! # Cache
//!
//! As in Alloy, results are cached by incoming label set, in an LRU cache (Alloy uses
//! hashicorp's `golang-lru`) of at most `max_cache_size` label sets, kept and dropped results
//! alike; a hit skips the rules entirely. The key is the label set as received (sorted by name),
//! so Alloy and we count two inputs differing only by an empty-valued label as two entries.
//! Kept-unchanged results store no second copy of the labels. An `update` with different rules
//! empties the cache (and takes effect for the next profile); one that only changes
//! `max_cache_size` resizes it, evicting the least recently used entries; one that changes
//! neither (just `forward_to`) keeps it. A result computed with old rules while an update ran is
//! never cached.
//!
//! # Metrics
//!
//! Alloy's names and help texts; every series also has `component_id` and `component_path`,
//! and an instance's series are removed when it exits.
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `pyroscope_relabel_profiles_processed` | counter | profiles received |
//! | `pyroscope_relabel_profiles_written` | counter | profiles forwarded |
//! | `pyroscope_relabel_profiles_dropped` | counter | profiles dropped by the rules |
//! | `pyroscope_relabel_cache_hits` | counter | label sets found in the cache |
//! | `pyroscope_relabel_cache_misses` | counter | label sets relabelled and cached |
//! | `pyroscope_relabel_cache_size` | gauge | label sets in the cache |
//!
//! Alloy's counters here have no `_total` suffix and Alloy serves the classic text format, so
//! its series are named exactly as above. Our `/metrics` speaks OpenMetrics, where a `counter`
//! family's samples must end in `_total`; to keep Alloy's series names (and users' queries and
//! dashboards) the four counters are exposed with OpenMetrics type `unknown`, whose samples keep
//! the family name. They still only ever go up.
//!
//! After the component exits (its block was removed, or the process is stopping), profiles
//! appended to it are dropped: Alloy returns an error (`<id> has exited`) to the producer there.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::sync::lock;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::profiles::{Appendable, FanOut, Label, Profile, Receiver};
use crate::relabel::block::{RuleBlock, compile, rules_value};
use crate::relabel::{LabelSet, Relabeler, RuleConfig};
use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};
use crate::runtime::{BoxError, Component, ComponentOptions, ExportsHandle};
use crate::syntax::types::CapsuleRef;
use crate::syntax::value::Value;

/// Alloy's default `max_cache_size`.
pub const DEFAULT_MAX_CACHE_SIZE: usize = 10_000;

/// The block's arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawArguments")]
pub struct Arguments {
    pub forward_to: Vec<CapsuleRef<Receiver>>,
    /// The `rule` blocks, in file order.
    pub rule: Vec<RuleBlock>,
    /// Label sets the cache holds at most; always at least 1.
    pub max_cache_size: usize,
}

impl Arguments {
    /// The rule configurations, in order.
    pub fn rule_configs(&self) -> Vec<RuleConfig> {
        self.rule.iter().map(|r| r.config().clone()).collect()
    }
}

fn default_max_cache_size() -> i64 {
    DEFAULT_MAX_CACHE_SIZE as i64
}

// The decoder reports unknown attributes from this field list.
#[derive(Deserialize)]
#[serde(rename = "pyroscope.relabel")]
struct RawArguments {
    forward_to: Vec<CapsuleRef<Receiver>>,
    #[serde(default)]
    rule: Vec<RuleBlock>,
    #[serde(default = "default_max_cache_size")]
    max_cache_size: i64,
}

/// Arguments that decode but cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentsError {
    /// Alloy's error (from `golang-lru`) with the attribute's name in front.
    #[error("max_cache_size: must provide a positive size (got {0})")]
    CacheSize(i64),
}

impl TryFrom<RawArguments> for Arguments {
    type Error = ArgumentsError;

    fn try_from(r: RawArguments) -> Result<Self, ArgumentsError> {
        let max_cache_size = usize::try_from(r.max_cache_size)
            .ok()
            .filter(|n| *n > 0)
            .ok_or(ArgumentsError::CacheSize(r.max_cache_size))?;
        Ok(Arguments {
            forward_to: r.forward_to,
            rule: r.rule,
            max_cache_size,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------

/// A counter exposed with OpenMetrics type `unknown`, so that its sample keeps the family's
/// name (`pyroscope_relabel_profiles_processed`, as Alloy serves it) instead of gaining the
/// `_total` suffix OpenMetrics requires of counters. See the module documentation.
#[derive(Clone, Debug, Default)]
struct AlloyCounter(Counter);

impl AlloyCounter {
    fn inc_by(&self, n: u64) {
        self.0.inc_by(n);
    }

    fn get(&self) -> u64 {
        self.0.get()
    }
}

impl TypedMetric for AlloyCounter {
    const TYPE: MetricType = MetricType::Unknown;
}

impl EncodeMetric for AlloyCounter {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), fmt::Error> {
        encoder.encode_gauge(&self.0.get())
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// The metric families, registered once per process.
struct RelabelMetrics {
    processed: Family<Labels, AlloyCounter>,
    written: Family<Labels, AlloyCounter>,
    dropped: Family<Labels, AlloyCounter>,
    hits: Family<Labels, AlloyCounter>,
    misses: Family<Labels, AlloyCounter>,
    size: Family<Labels, Gauge>,
}

impl RelabelMetrics {
    fn get(registry: &MetricsRegistry) -> Arc<RelabelMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = RelabelMetrics {
                processed: Family::default(),
                written: Family::default(),
                dropped: Family::default(),
                hits: Family::default(),
                misses: Family::default(),
                size: Family::default(),
            };
            r.register(
                "pyroscope_relabel_profiles_processed",
                "Total number of profiles processed",
                m.processed.clone(),
            );
            r.register(
                "pyroscope_relabel_profiles_written",
                "Total number of profiles forwarded",
                m.written.clone(),
            );
            r.register(
                "pyroscope_relabel_profiles_dropped",
                "Total number of profiles dropped by relabeling rules",
                m.dropped.clone(),
            );
            r.register(
                "pyroscope_relabel_cache_hits",
                "Total number of cache hits",
                m.hits.clone(),
            );
            r.register(
                "pyroscope_relabel_cache_misses",
                "Total number of cache misses",
                m.misses.clone(),
            );
            r.register(
                "pyroscope_relabel_cache_size",
                "Total size of relabel cache",
                m.size.clone(),
            );
            m
        })
    }

    fn instance(self: &Arc<Self>, component_id: &str) -> InstanceMetrics {
        let base = component_labels(component_id);
        InstanceMetrics {
            processed: self.processed.get_or_create(&base).clone(),
            written: self.written.get_or_create(&base).clone(),
            dropped: self.dropped.get_or_create(&base).clone(),
            hits: self.hits.get_or_create(&base).clone(),
            misses: self.misses.get_or_create(&base).clone(),
            size: self.size.get_or_create(&base).clone(),
            all: self.clone(),
            base,
        }
    }
}

/// One instance's series.
struct InstanceMetrics {
    all: Arc<RelabelMetrics>,
    base: Labels,
    processed: AlloyCounter,
    written: AlloyCounter,
    dropped: AlloyCounter,
    hits: AlloyCounter,
    misses: AlloyCounter,
    size: Gauge,
}

impl InstanceMetrics {
    fn cache_size(&self, len: usize) {
        self.size.set(i64::try_from(len).unwrap_or(i64::MAX));
    }

    /// Removes every series of this instance (the component exited).
    fn remove(&self) {
        let a = &self.all;
        for family in [&a.processed, &a.written, &a.dropped, &a.hits, &a.misses] {
            family.remove(&self.base);
        }
        a.size.remove(&self.base);
    }
}

// ---------------------------------------------------------------------------------------------
// The LRU cache
// ---------------------------------------------------------------------------------------------

const NIL: usize = usize::MAX;

struct Node<V> {
    key: Arc<[Label]>,
    value: V,
    /// Towards the most recently used end.
    prev: usize,
    /// Towards the least recently used end.
    next: usize,
}

/// A least-recently-used map from label sets to `V` holding at most `capacity` entries: nodes
/// in a vector linked by index (most recently used at `head`), the map giving each key's index.
/// Lookups borrow the key (`&[Label]`), so a hit allocates nothing.
struct Lru<V> {
    map: HashMap<Arc<[Label]>, usize>,
    nodes: Vec<Node<V>>,
    head: usize,
    tail: usize,
    capacity: usize,
}

impl<V> Lru<V> {
    fn new(capacity: usize) -> Self {
        Lru {
            map: HashMap::new(),
            nodes: Vec::new(),
            head: NIL,
            tail: NIL,
            capacity,
        }
    }

    fn len(&self) -> usize {
        self.nodes.len()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    /// The value for `key`, which becomes the most recently used entry.
    fn get(&mut self, key: &[Label]) -> Option<&V> {
        let i = *self.map.get(key)?;
        self.unlink(i);
        self.push_front(i);
        Some(&self.nodes[i].value)
    }

    /// Inserts or replaces `key` as the most recently used entry, evicting the least recently
    /// used one when full.
    fn insert(&mut self, key: Arc<[Label]>, value: V) {
        if let Some(&i) = self.map.get(&*key) {
            self.nodes[i].value = value;
            self.unlink(i);
            self.push_front(i);
            return;
        }
        if self.capacity == 0 {
            return;
        }
        while self.len() >= self.capacity {
            self.remove_index(self.tail);
        }
        let i = self.nodes.len();
        self.map.insert(key.clone(), i);
        self.nodes.push(Node {
            key,
            value,
            prev: NIL,
            next: NIL,
        });
        self.push_front(i);
    }

    fn clear(&mut self) {
        self.map.clear();
        self.nodes.clear();
        self.head = NIL;
        self.tail = NIL;
    }

    /// Changes the capacity; returns how many least recently used entries were evicted.
    fn resize(&mut self, capacity: usize) -> usize {
        self.capacity = capacity;
        let mut evicted = 0;
        while self.len() > capacity {
            self.remove_index(self.tail);
            evicted += 1;
        }
        evicted
    }

    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.nodes[i].prev, self.nodes[i].next);
        match prev {
            NIL => self.head = next,
            p => self.nodes[p].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n].prev = prev,
        }
        self.nodes[i].prev = NIL;
        self.nodes[i].next = NIL;
    }

    fn push_front(&mut self, i: usize) {
        self.nodes[i].prev = NIL;
        self.nodes[i].next = self.head;
        match self.head {
            NIL => self.tail = i,
            h => self.nodes[h].prev = i,
        }
        self.head = i;
    }

    /// Removes node `i`, moving the last node into its slot.
    fn remove_index(&mut self, i: usize) {
        if i >= self.nodes.len() {
            return;
        }
        self.unlink(i);
        let removed = self.nodes.swap_remove(i);
        self.map.remove(&*removed.key);
        if i < self.nodes.len() {
            // The node that was last now lives at `i`: repoint its neighbours and its key.
            let (prev, next) = (self.nodes[i].prev, self.nodes[i].next);
            match prev {
                NIL => self.head = i,
                p => self.nodes[p].next = i,
            }
            match next {
                NIL => self.tail = i,
                n => self.nodes[n].prev = i,
            }
            if let Some(slot) = self.map.get_mut(&*self.nodes[i].key) {
                *slot = i;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The component
// ---------------------------------------------------------------------------------------------

/// What the rules made of one incoming label set.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    /// Dropped by a rule, or left with no labels.
    Drop,
    /// Kept with exactly the incoming labels (sorted by name).
    Unchanged,
    /// Kept with these labels, sorted by name.
    Relabelled(Arc<[Label]>),
}

impl Outcome {
    /// Runs `relabeler` over `labels` (sorted by name).
    fn compute(relabeler: &Relabeler, labels: &[Label]) -> Outcome {
        let mut set: LabelSet = labels
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        if !relabeler.process(&mut set) || set.is_empty() {
            return Outcome::Drop;
        }
        let unchanged = set.len() == labels.len()
            && set
                .iter()
                .zip(labels)
                .all(|((n, v), (in_n, in_v))| n == in_n && v == in_v);
        if unchanged {
            Outcome::Unchanged
        } else {
            Outcome::Relabelled(
                set.iter()
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .collect(),
            )
        }
    }

    /// Gives `labels` their new value; false when the profile is dropped.
    fn apply(&self, labels: &mut Vec<Label>) -> bool {
        match self {
            Outcome::Drop => false,
            Outcome::Unchanged => true,
            Outcome::Relabelled(new) => {
                *labels = new.to_vec();
                true
            }
        }
    }
}

struct State {
    configs: Vec<RuleConfig>,
    relabeler: Arc<Relabeler>,
    /// Bumped whenever the rules change, so that a result computed with the previous rules is
    /// not cached after the cache was emptied.
    generation: u64,
    cache: Lru<Outcome>,
}

/// What the receiver and the component share.
struct Shared {
    id: String,
    fanout: FanOut,
    state: Mutex<State>,
    metrics: InstanceMetrics,
    exited: AtomicBool,
}

impl Shared {
    /// Relabels `labels` in place (through the cache); false when the profile is dropped.
    fn relabel(&self, labels: &mut Vec<Label>) -> bool {
        // The cache key: order is not significant in a profile's labels. Stable, so that of two
        // labels with the same name the last still wins, as when the label set is built.
        labels.sort_by(|a, b| a.0.cmp(&b.0));
        let (relabeler, generation) = {
            let mut state = lock(&self.state);
            if let Some(outcome) = state.cache.get(labels) {
                let outcome = outcome.clone();
                drop(state);
                self.metrics.hits.inc_by(1);
                return outcome.apply(labels);
            }
            (state.relabeler.clone(), state.generation)
        };
        self.metrics.misses.inc_by(1);
        let outcome = Outcome::compute(&relabeler, labels);
        {
            let mut state = lock(&self.state);
            if state.generation == generation {
                state
                    .cache
                    .insert(Arc::from(labels.as_slice()), outcome.clone());
                self.metrics.cache_size(state.cache.len());
            }
        }
        outcome.apply(labels)
    }
}

impl Appendable for Shared {
    fn append(&self, profiles: Vec<Profile>) {
        if self.exited.load(Ordering::Relaxed) {
            tracing::debug!(
                component_id = %self.id,
                profiles = profiles.len(),
                "component has exited, profiles dropped"
            );
            return;
        }
        let mut kept = Vec::with_capacity(profiles.len());
        let mut dropped = 0u64;
        for mut profile in profiles {
            self.metrics.processed.inc_by(1);
            // Alloy forwards a profile without labels as it is, without consulting the rules.
            if profile.labels.is_empty() || self.relabel(&mut profile.labels) {
                kept.push(profile);
            } else {
                dropped += 1;
                tracing::debug!(
                    component_id = %self.id,
                    labels = ?profile.labels,
                    "profile dropped by relabel rules"
                );
            }
        }
        self.metrics.dropped.inc_by(dropped);
        self.metrics.written.inc_by(kept.len() as u64);
        if !kept.is_empty() {
            self.fanout.append(kept);
        }
    }
}

fn exports(receiver: &Arc<Receiver>, rules: Value) -> Value {
    let mut m = BTreeMap::new();
    m.insert("receiver".to_string(), receiver.export());
    m.insert("rules".to_string(), rules);
    Value::Object(m)
}

/// The running `pyroscope.relabel` component.
pub struct Relabel {
    shared: Arc<Shared>,
    receiver: Arc<Receiver>,
    exports: ExportsHandle,
}

impl Relabel {
    /// The receiver this component exports.
    pub fn receiver(&self) -> Arc<Receiver> {
        self.receiver.clone()
    }
}

impl Component for Relabel {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(&Receiver::unavailable(), Value::Array(Vec::new()))
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let configs = args.rule_configs();
        let relabeler = Arc::new(compile(&configs)?);
        let rules = rules_value(&configs);
        let metrics = RelabelMetrics::get(&opts.metrics).instance(&opts.id);
        metrics.cache_size(0);
        let shared = Arc::new(Shared {
            id: opts.id,
            fanout: FanOut::new(args.forward_to),
            state: Mutex::new(State {
                configs,
                relabeler,
                generation: 0,
                cache: Lru::new(args.max_cache_size),
            }),
            metrics,
            exited: AtomicBool::new(false),
        });
        let receiver = Arc::new(Receiver(shared.clone()));
        opts.exports.publish(exports(&receiver, rules));
        Ok(Relabel {
            shared,
            receiver,
            exports: opts.exports,
        })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        let shared = &self.shared;
        let configs = args.rule_configs();
        // Held while publishing, so that two updates cannot publish out of order.
        let mut state = lock(&shared.state);
        if configs != state.configs {
            let relabeler = compile(&configs)?;
            let rules = rules_value(&configs);
            state.relabeler = Arc::new(relabeler);
            state.configs = configs;
            state.generation += 1;
            state.cache.clear();
            tracing::debug!(component_id = %shared.id, "new relabel rules, cache emptied");
            self.exports.publish(exports(&self.receiver, rules));
        }
        if args.max_cache_size != state.cache.capacity() {
            let evicted = state.cache.resize(args.max_cache_size);
            if evicted > 0 {
                tracing::debug!(
                    component_id = %shared.id,
                    evicted,
                    max_cache_size = args.max_cache_size,
                    "cache resized"
                );
            }
        }
        shared.metrics.cache_size(state.cache.len());
        shared.fanout.set(args.forward_to);
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        shutdown.cancelled().await;
        self.shared.exited.store(true, Ordering::Relaxed);
        self.shared.metrics.remove();
        Ok(())
    }

    /// The rules and cache in use, and what went through.
    fn debug_info(&self) -> Option<serde_json::Value> {
        let s = &self.shared;
        let (rules, cache_size, max_cache_size) = {
            let state = lock(&s.state);
            (
                state.configs.len(),
                state.cache.len(),
                state.cache.capacity(),
            )
        };
        let m = &s.metrics;
        Some(serde_json::json!({
            "rules": rules,
            "forward_to": s.fanout.len(),
            "cache_size": cache_size,
            "max_cache_size": max_cache_size,
            "profiles_processed": m.processed.get(),
            "profiles_written": m.written.get(),
            "profiles_dropped": m.dropped.get(),
            "cache_hits": m.hits.get(),
            "cache_misses": m.misses.get(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::collect::Collect;
    use crate::syntax::decode;

    /// The labels of every profile collected, each set sorted.
    fn labels_of(c: &Collect) -> Vec<Vec<Label>> {
        c.got().iter().map(|p| sorted(p.labels.clone())).collect()
    }

    fn sorted(mut l: Vec<Label>) -> Vec<Label> {
        l.sort();
        l
    }

    fn labels(pairs: &[(&str, &str)]) -> Vec<Label> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn profile(pairs: &[(&str, &str)]) -> Profile {
        Profile::new(labels(pairs), b"pprof".to_vec())
    }

    /// Decodes `src` (a block body without `forward_to`), errors as `line:col: message`.
    fn decode_args(src: &str) -> Result<Arguments, Vec<String>> {
        decode::decode_source(&format!("forward_to = []\n{src}"))
    }

    struct Running {
        component: Relabel,
        exports: ExportsHandle,
        metrics: MetricsRegistry,
    }

    impl Running {
        fn send(&self, pairs: &[(&str, &str)]) {
            self.component.receiver().append(vec![profile(pairs)]);
        }

        fn info(&self, key: &str) -> u64 {
            self.component.debug_info().expect("info")[key]
                .as_u64()
                .unwrap_or_else(|| panic!("no {key}"))
        }
    }

    /// Builds the component from a block body (without `forward_to`), forwarding to `to`.
    fn start(id: &str, src: &str, to: Vec<CapsuleRef<Receiver>>) -> Running {
        let mut args = decode_args(src).expect("valid arguments");
        args.forward_to = to;
        let opts =
            ComponentOptions::standalone(id, "pyroscope.relabel", Relabel::initial_exports());
        let (exports, metrics) = (opts.exports.clone(), opts.metrics.clone());
        let component = Relabel::build(opts, args).expect("build");
        Running {
            component,
            exports,
            metrics,
        }
    }

    /// What one profile becomes: `Some(labels)` forwarded, `None` dropped.
    fn relabel_one(rules: &str, input: &[(&str, &str)]) -> Option<Vec<Label>> {
        let (c, r) = Collect::receiver();
        let running = start("pyroscope.relabel.one", rules, vec![r]);
        running.send(input);
        let got = labels_of(&c);
        assert!(got.len() <= 1, "{got:?}");
        let forwarded = got.into_iter().next();
        assert_eq!(running.info("profiles_processed"), 1);
        assert_eq!(
            running.info("profiles_dropped"),
            u64::from(forwarded.is_none())
        );
        assert_eq!(
            running.info("profiles_written"),
            u64::from(forwarded.is_some())
        );
        forwarded
    }

    type Pairs<'a> = &'a [(&'a str, &'a str)];

    #[test]
    fn rules_apply_to_profile_labels() {
        let base: &[(&str, &str)] = &[
            ("__name__", "process_cpu"),
            ("service_name", "checkout"),
            ("env", "prod"),
            ("region", "us-1"),
        ];
        // (case, rules, input, expected labels or None when dropped)
        let cases: Vec<(&str, &str, Pairs, Option<Pairs>)> = vec![
            ("no rules: as received", "", base, Some(base)),
            (
                "no rules: empty values disappear",
                "",
                &[("service_name", "a"), ("pod", "")],
                Some(&[("service_name", "a")]),
            ),
            (
                "keep matching",
                "rule {\n source_labels = [\"env\"]\n regex = \"prod\"\n action = \"keep\"\n}",
                base,
                Some(base),
            ),
            (
                "keep not matching",
                "rule {\n source_labels = [\"env\"]\n regex = \"staging\"\n action = \"keep\"\n}",
                base,
                None,
            ),
            (
                "drop matching",
                "rule {\n source_labels = [\"env\", \"region\"]\n regex = \"prod;us-.*\"\n action = \"drop\"\n}",
                base,
                None,
            ),
            (
                "drop not matching",
                "rule {\n source_labels = [\"env\"]\n regex = \"dev\"\n action = \"drop\"\n}",
                base,
                Some(base),
            ),
            (
                "drop on the profile type",
                "rule {\n source_labels = [\"__name__\"]\n regex = \"process_cpu\"\n action = \"drop\"\n}",
                base,
                None,
            ),
            (
                "replace into a new label",
                "rule {\n source_labels = [\"region\"]\n regex = \"us-(.+)\"\n target_label = \"zone\"\n replacement = \"zone-$1\"\n}",
                base,
                Some(&[
                    ("__name__", "process_cpu"),
                    ("service_name", "checkout"),
                    ("env", "prod"),
                    ("region", "us-1"),
                    ("zone", "zone-1"),
                ]),
            ),
            (
                "replace service_name",
                "rule {\n source_labels = [\"env\", \"service_name\"]\n regex = \"(.+);(.+)\"\n target_label = \"service_name\"\n replacement = \"$1/$2\"\n}",
                base,
                Some(&[
                    ("__name__", "process_cpu"),
                    ("service_name", "prod/checkout"),
                    ("env", "prod"),
                    ("region", "us-1"),
                ]),
            ),
            (
                "replace with an empty value deletes",
                "rule {\n target_label = \"region\"\n replacement = \"\"\n}",
                base,
                Some(&[
                    ("__name__", "process_cpu"),
                    ("service_name", "checkout"),
                    ("env", "prod"),
                ]),
            ),
            (
                "labeldrop",
                "rule {\n regex = \"env|region\"\n action = \"labeldrop\"\n}",
                base,
                Some(&[("__name__", "process_cpu"), ("service_name", "checkout")]),
            ),
            (
                "labelkeep keeps only matching names, __name__ included",
                "rule {\n regex = \"__name__|service_name\"\n action = \"labelkeep\"\n}",
                base,
                Some(&[("__name__", "process_cpu"), ("service_name", "checkout")]),
            ),
            (
                "labelmap",
                "rule {\n regex = \"(env|region)\"\n replacement = \"k8s_$1\"\n action = \"labelmap\"\n}",
                &[("service_name", "a"), ("env", "prod")],
                Some(&[("service_name", "a"), ("env", "prod"), ("k8s_env", "prod")]),
            ),
            (
                // Alloy's test: "prod" hashes to 1 with modulus 2 (so that profile is dropped).
                "hashmod then drop on the hash (Alloy's documented sampling)",
                "rule {\n source_labels = [\"env\"]\n target_label = \"__tmp_hash\"\n modulus = 2\n action = \"hashmod\"\n}\nrule {\n source_labels = [\"__tmp_hash\"]\n regex = \"^1$\"\n action = \"drop\"\n}",
                base,
                None,
            ),
            (
                // "dev" hashes to 0: kept, and the temporary label travels on (write drops it).
                "hashmod keeps the other half with its __tmp_hash",
                "rule {\n source_labels = [\"env\"]\n target_label = \"__tmp_hash\"\n modulus = 2\n action = \"hashmod\"\n}\nrule {\n source_labels = [\"__tmp_hash\"]\n regex = \"^1$\"\n action = \"drop\"\n}",
                &[("service_name", "a"), ("env", "dev")],
                Some(&[("service_name", "a"), ("env", "dev"), ("__tmp_hash", "0")]),
            ),
            (
                // Alloy's "multiple rules" test case.
                "rename via replace then labeldrop",
                "rule {\n source_labels = [\"env\"]\n target_label = \"environment\"\n}\nrule {\n regex = \"^env$\"\n action = \"labeldrop\"\n}",
                &[("env", "prod"), ("region", "us-1")],
                Some(&[("environment", "prod"), ("region", "us-1")]),
            ),
            (
                "no labels left: dropped (Alloy's documented behaviour)",
                "rule {\n regex = \".*\"\n action = \"labeldrop\"\n}",
                base,
                None,
            ),
            (
                "no labels at all: forwarded untouched, rules not run",
                "rule {\n source_labels = [\"env\"]\n regex = \"prod\"\n action = \"keep\"\n}",
                &[],
                Some(&[]),
            ),
        ];
        for (name, rules, input, want) in cases {
            let got = relabel_one(rules, input);
            let want = want.map(|w| sorted(labels(w)));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn dropped_profiles_are_counted_and_the_rest_forwarded_to_every_receiver() {
        let (a, ra) = Collect::receiver();
        let (b, rb) = Collect::receiver();
        let running = start(
            "pyroscope.relabel.fan",
            "rule {\n source_labels = [\"env\"]\n regex = \"dev\"\n action = \"drop\"\n}",
            vec![ra, rb],
        );
        running.component.receiver().append(vec![
            profile(&[("service_name", "a"), ("env", "prod")]),
            profile(&[("service_name", "b"), ("env", "dev")]),
            profile(&[("service_name", "c")]),
            profile(&[]),
        ]);
        let want = vec![
            sorted(labels(&[("service_name", "a"), ("env", "prod")])),
            labels(&[("service_name", "c")]),
            Vec::new(),
        ];
        assert_eq!(labels_of(&a), want);
        assert_eq!(labels_of(&b), want);
        // The profile bytes are shared between the receivers, not copied.
        let (pa, pb) = (a.got()[0].raw.clone(), b.got()[0].raw.clone());
        assert_eq!(pa.as_ptr(), pb.as_ptr());

        let text = running.metrics.encode().expect("encode");
        let id = r#"{component_id="pyroscope.relabel.fan",component_path="/"}"#;
        for line in [
            format!("pyroscope_relabel_profiles_processed{id} 4"),
            format!("pyroscope_relabel_profiles_written{id} 3"),
            format!("pyroscope_relabel_profiles_dropped{id} 1"),
            // The profile without labels never reaches the cache.
            format!("pyroscope_relabel_cache_misses{id} 3"),
            format!("pyroscope_relabel_cache_hits{id} 0"),
            format!("pyroscope_relabel_cache_size{id} 3"),
            "# TYPE pyroscope_relabel_profiles_processed unknown".to_string(),
            "# HELP pyroscope_relabel_profiles_dropped Total number of profiles dropped by relabeling rules.".to_string(),
            "# TYPE pyroscope_relabel_cache_size gauge".to_string(),
        ] {
            assert!(text.contains(&line), "missing {line:?} in:\n{text}");
        }
        assert!(
            !text.contains("pyroscope_relabel_profiles_processed_total"),
            "{text}"
        );
    }

    #[test]
    fn cache_hits_give_the_same_result() {
        let (c, r) = Collect::receiver();
        let running = start(
            "pyroscope.relabel.cache",
            "rule {\n source_labels = [\"env\"]\n regex = \"(.+)\"\n target_label = \"environment\"\n replacement = \"staging\"\n}\nrule {\n source_labels = [\"env\"]\n regex = \"dev\"\n action = \"drop\"\n}",
            vec![r],
        );
        let kept = [("service_name", "a"), ("env", "prod")];
        let kept_reordered = [("env", "prod"), ("service_name", "a")];
        let dropped = [("service_name", "b"), ("env", "dev")];
        let plain = [("service_name", "c")];
        for input in [&kept[..], &dropped, &plain] {
            running.send(input);
        }
        assert_eq!(running.info("cache_misses"), 3);
        assert_eq!(running.info("cache_hits"), 0);
        let first = labels_of(&c);
        // Again, with one label set in another order: all three are hits, same results.
        for input in [&kept_reordered[..], &dropped, &plain] {
            running.send(input);
        }
        assert_eq!(running.info("cache_misses"), 3);
        assert_eq!(running.info("cache_hits"), 3);
        assert_eq!(running.info("cache_size"), 3);
        assert_eq!(running.info("profiles_dropped"), 2);
        let all = labels_of(&c);
        assert_eq!(all.len(), 4);
        assert_eq!(all[2..], first[..]);
        assert_eq!(
            first,
            [
                sorted(labels(&[
                    ("service_name", "a"),
                    ("env", "prod"),
                    ("environment", "staging")
                ])),
                labels(&[("service_name", "c")]),
            ]
        );
    }

    #[test]
    fn update_applies_new_rules_to_the_next_profile_and_empties_the_cache() {
        let (c, r) = Collect::receiver();
        let keep_prod =
            "rule {\n source_labels = [\"env\"]\n regex = \"prod\"\n action = \"keep\"\n}";
        let keep_dev =
            "rule {\n source_labels = [\"env\"]\n regex = \"dev\"\n action = \"keep\"\n}";
        let running = start("pyroscope.relabel.update", keep_prod, vec![r.clone()]);
        let prod = [("service_name", "a"), ("env", "prod")];
        let dev = [("service_name", "a"), ("env", "dev")];
        running.send(&prod);
        running.send(&dev);
        assert_eq!(labels_of(&c).len(), 1);
        assert_eq!(running.info("cache_size"), 2);

        let mut args = decode_args(keep_dev).expect("valid");
        args.forward_to = vec![r.clone()];
        running.component.update(args).expect("update");
        assert_eq!(running.info("cache_size"), 0);
        let misses = running.info("cache_misses");
        running.send(&prod);
        running.send(&dev);
        // Both were recomputed with the new rules, not served from the old cache.
        assert_eq!(running.info("cache_misses"), misses + 2);
        let got = labels_of(&c);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1], sorted(labels(&dev)));

        // The rules export follows.
        let Value::Object(m) = running.exports.current() else {
            panic!("exports")
        };
        let rules: Vec<RuleConfig> = decode::from_value(&m["rules"]).expect("rules decode");
        assert_eq!(rules[0].regex, "dev");
        assert!(matches!(m["receiver"], Value::Capsule(_)));

        // Only forward_to changes: the cache is kept.
        let (other, r2) = Collect::receiver();
        let mut args = decode_args(keep_dev).expect("valid");
        args.forward_to = vec![r2];
        running.component.update(args).expect("update");
        assert_eq!(running.info("cache_size"), 2);
        running.send(&dev);
        assert_eq!(labels_of(&other), [sorted(labels(&dev))]);
        assert_eq!(labels_of(&c).len(), 2);

        // Invalid rules cannot get past decoding; a failing compile would keep the old rules.
        assert!(decode_args("rule {\n action = \"hashmod\"\n target_label = \"x\"\n}").is_err());
    }

    #[test]
    fn the_cache_holds_at_most_max_cache_size_label_sets() {
        let (_c, r) = Collect::receiver();
        let running = start(
            "pyroscope.relabel.bound",
            "max_cache_size = 2",
            vec![r.clone()],
        );
        let (a, b, c) = (
            [("service_name", "a")],
            [("service_name", "b")],
            [("service_name", "c")],
        );
        running.send(&a);
        running.send(&b);
        running.send(&a); // hit: `b` is now the least recently used
        running.send(&c); // evicts `b`
        assert_eq!(running.info("cache_size"), 2);
        assert_eq!(
            (running.info("cache_hits"), running.info("cache_misses")),
            (1, 3)
        );
        running.send(&a);
        running.send(&c);
        assert_eq!(running.info("cache_hits"), 3);
        running.send(&b); // evicted earlier: a miss, evicting `a`
        assert_eq!(running.info("cache_misses"), 4);
        assert_eq!(running.info("cache_size"), 2);

        // Shrinking evicts the least recently used; the gauge follows.
        let mut args = decode_args("max_cache_size = 1").expect("valid");
        args.forward_to = vec![r];
        running.component.update(args).expect("update");
        assert_eq!(running.info("cache_size"), 1);
        assert_eq!(running.info("max_cache_size"), 1);
        running.send(&b);
        assert_eq!(running.info("cache_hits"), 4);
        for i in 0..50 {
            let name = i.to_string();
            running.send(&[("service_name", name.as_str())]);
        }
        assert_eq!(running.info("cache_size"), 1);
        let text = running.metrics.encode().expect("encode");
        assert!(
            text.contains(
                r#"pyroscope_relabel_cache_size{component_id="pyroscope.relabel.bound",component_path="/"} 1"#
            ),
            "{text}"
        );
    }

    #[test]
    fn lru_evicts_the_least_recently_used_and_survives_slot_moves() {
        let key = |s: &str| -> Arc<[Label]> { Arc::from(labels(&[("k", s)])) };
        let mut lru = Lru::new(3);
        for (i, k) in ["a", "b", "c"].into_iter().enumerate() {
            lru.insert(key(k), i);
        }
        assert_eq!(lru.get(&key("a")), Some(&0));
        lru.insert(key("d"), 3); // evicts b
        assert_eq!(lru.get(&key("b")), None);
        assert_eq!(lru.len(), 3);
        lru.insert(key("c"), 20); // replace, no eviction
        assert_eq!(lru.len(), 3);
        // Recency now (most recent first): c, d, a. Shrinking to 1 keeps c.
        assert_eq!(lru.resize(1), 2);
        assert_eq!(lru.get(&key("c")), Some(&20));
        assert_eq!(lru.get(&key("a")), None);
        assert_eq!(lru.get(&key("d")), None);
        lru.resize(4);
        for k in ["e", "f", "g", "h"] {
            lru.insert(key(k), 0);
        }
        assert_eq!(lru.get(&key("c")), None);
        for k in ["e", "f", "g", "h"] {
            assert!(lru.get(&key(k)).is_some(), "{k}");
        }
        // Many inserts through a small cache keep the links and the index consistent.
        let mut small = Lru::new(5);
        for i in 0..1000 {
            small.insert(key(&(i % 7).to_string()), i);
            if i % 3 == 0 {
                small.get(&key(&(i % 5).to_string()));
            }
            assert!(small.len() <= 5);
            for (k, &slot) in &small.map {
                assert_eq!(small.nodes[slot].key, *k);
            }
        }
        small.clear();
        assert_eq!(small.len(), 0);
        small.insert(key("x"), 1);
        assert_eq!(small.get(&key("x")), Some(&1));
    }

    #[test]
    fn arguments_decode_like_alloy() {
        let a = decode_args("").expect("valid");
        assert_eq!(a.max_cache_size, DEFAULT_MAX_CACHE_SIZE);
        assert!(a.rule.is_empty());
        assert_eq!(
            decode_args("max_cache_size = 0").expect_err("zero"),
            ["1:1: max_cache_size: must provide a positive size (got 0)"]
        );
        assert!(decode_args("max_cache_size = -5").is_err());
        let errs = decode::decode_source::<Arguments>("").expect_err("missing");
        assert_eq!(errs, ["1:1: missing required attribute \"forward_to\""]);
        // Rule errors come from discovery.relabel's rule block, at the offending block.
        let errs = decode_args("rule {\n action = \"keep\"\n}\nrule {\n action = \"hashmod\"\n target_label = \"x\"\n}\n")
            .expect_err("invalid rule");
        assert_eq!(
            errs,
            ["5:1: relabel configuration for hashmod requires non-zero modulus"]
        );
        let errs = decode_args("targets = []").expect_err("unknown attribute");
        assert_eq!(errs, ["2:1: unrecognized attribute name \"targets\""]);
    }

    #[test]
    fn initial_exports_and_exit() {
        let Value::Object(m) = Relabel::initial_exports() else {
            panic!("exports")
        };
        assert_eq!(m["rules"], Value::Array(Vec::new()));
        assert!(matches!(m["receiver"], Value::Capsule(_)));

        let (c, r) = Collect::receiver();
        let running = start("pyroscope.relabel.exit", "", vec![r]);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let shutdown = CancellationToken::new();
        shutdown.cancel();
        let component = Arc::new(running.component);
        runtime
            .block_on(component.clone().run(shutdown))
            .expect("run");
        component
            .receiver()
            .append(vec![profile(&[("service_name", "a")])]);
        assert!(labels_of(&c).is_empty());
        let text = running.metrics.encode().expect("encode");
        assert!(!text.contains("pyroscope.relabel.exit"), "{text}");
    }
}
