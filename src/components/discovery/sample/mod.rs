//! `discovery.sample`: keeps at most N targets, or a fraction, of each workload, choosing by a
//! stable hash of the pod so that the same pods stay chosen while they exist.
//!
//! ```alloy
//! // First drop what cannot be scraped: a chosen pod keeps its place while it exists, so a
//! // finished (Succeeded/Failed) or unannotated pod that got chosen would hold a place and
//! // leave the workload with fewer profiled pods than `max` for as long as it is there.
//! discovery.relabel "scrapable" {
//!   targets = discovery.kubernetes.pods.targets
//!   rule {
//!     source_labels = ["__meta_kubernetes_pod_phase"]
//!     regex         = "Pending|Succeeded|Failed|Unknown"
//!     action        = "drop"
//!   }
//!   rule {
//!     source_labels = ["__meta_kubernetes_pod_annotation_profiles_grafana_com_cpu_scrape"]
//!     regex         = "true"
//!     action        = "keep"
//!   }
//! }
//!
//! discovery.sample "three_per_workload" {
//!   targets = discovery.relabel.scrapable.output
//!   max     = 3
//! }
//! ```
//!
//! * Arguments ([`args`]): `targets` (required); `max` (at least 1) and/or `fraction` (in
//!   (0, 1]): at least one of them, and with both the smaller limit applies; `group_by` (default
//!   namespace, controller kind and controller name: one group per Deployment's ReplicaSet,
//!   StatefulSet, DaemonSet...) and `key_by` (default namespace and pod name; a target lacking
//!   any of those labels, or every target when `key_by` is empty, is keyed by its
//!   `__address__`). Targets are grouped by their `group_by` values (a missing label counts as
//!   empty) and each group keeps at most `max`, or `ceil(fraction × distinct keys)` but at least
//!   one, distinct **keys**: every target of a chosen pod (several containers or ports) is
//!   kept, and none of the others. The component is generic: it does not know what a pod phase
//!   or a scrape annotation is, so filtering belongs before it (the example above).
//! * Exports: `output`, the kept targets in input order, as the same shared capsules that came
//!   in (no label set is copied).
//! * Choosing ([`choose`]): the first time a group is seen its keys with the smallest hashes are
//!   chosen (XXH3-64 of the key values, so every instance and every restart makes that same first
//!   choice). Afterwards the choice is **sticky**: a chosen pod stays chosen while it exists; when
//!   one goes, exactly one replacement is chosen, the smallest hash not chosen yet; a group that
//!   grows (a Deployment scaled from 20 to 40 pods) keeps its chosen pods even if new pods hash
//!   smaller, so scaling does not move profiling from pod to pod.
//! * State is in memory only. After a restart (or a reload that rebuilds the component) every
//!   group again starts from the smallest hashes among the pods that exist then, which may differ
//!   from what was chosen before the restart if chosen pods had been replaced meanwhile.
//! * With clustering (several scraper instances, each running this component over its own
//!   discovery) there is no coordination, and instances can disagree about a group: each one's
//!   choice depends on the sequence of updates it saw, and each discovery publishes at its own
//!   moments (a delete and an add can arrive in one update on one instance and in two on
//!   another, leading to different replacements), and an instance that restarts chooses afresh
//!   (the scraper's StatefulSet rolls one pod at a time, so instances restart at different
//!   moments). Since each target is then scraped by one instance, the number of a group's pods
//!   profiled can differ from `max` (more or fewer) until the pods chosen differently go away.
//!   For an exact bound, sample where one instance decides (a scraper that is not clustered
//!   and scrapes everything the sample keeps); with clustering, treat `max` as approximate.
//! * Metrics ([`metrics`]): `discovery_sample_targets` and `discovery_sample_kept` per group
//!   (the `group_by` values joined with `/`, a `/` or `\` inside a value escaped with `\`).
//!   Debug info (the component page): per group, its targets, keys, limit and chosen keys.
//!
//! User documentation: docs/SAMPLING.md.

pub mod args;
pub mod choose;
mod metrics;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

pub use args::Arguments;
use choose::{Key, Sampler, Values};
use metrics::{InstanceMetrics, SampleMetrics};

use crate::labels::LabelSet;
use crate::runtime::{BoxError, Component, ComponentOptions, ExportsHandle};
use crate::syntax::decode::Invalid;
use crate::syntax::value::Value;
use crate::targets as target;

fn exports(output: Vec<Value>) -> Value {
    Value::Object(BTreeMap::from([(
        "output".to_string(),
        Value::Array(output),
    )]))
}

/// What the last update saw of one group, for metrics and the component page.
#[derive(Debug, Clone, PartialEq)]
struct GroupInfo {
    targets: usize,
    kept: usize,
    keys: usize,
    limit: usize,
}

/// The running component.
pub struct Sample {
    exports: ExportsHandle,
    state: Mutex<State>,
}

struct State {
    sampler: Sampler,
    groups: BTreeMap<Values, GroupInfo>,
    metrics: InstanceMetrics,
}

/// The values of `names` in `t`, missing labels as "".
fn values_of(t: &LabelSet, names: &[String]) -> Values {
    names
        .iter()
        .map(|n| t.get(n).unwrap_or("").to_string())
        .collect()
}

/// The key of a target: its `key_by` values when it has every one of them, else its
/// `__address__`. Keying by the labels present would give every target that lacks the same
/// label (a namespace but no pod name) one shared key, and the group would be kept or dropped
/// whole; an empty `key_by` would do the same to every target.
fn key_of(t: &LabelSet, key_by: &[String]) -> Key {
    if !key_by.is_empty() && key_by.iter().all(|n| t.contains(n)) {
        Key::new(values_of(t, key_by))
    } else {
        Key::new(Box::new([t.get("__address__").unwrap_or("").to_string()]))
    }
}

/// Label values as one string for the `group` metric label and the component page: joined
/// with `/`, with each `\` and `/` inside a value escaped by a `\`, so that different values
/// never give the same string (`a/b` + `c` is `a\/b/c`, `a` + `b/c` is `a/b\/c`).
fn join_values(values: &[String]) -> String {
    let mut out = String::new();
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push('/');
        }
        for c in v.chars() {
            if c == '/' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out
}

impl Sample {
    fn apply(&self, state: &mut State, args: Arguments) -> Result<(), BoxError> {
        let limit = args.limit()?;
        // One pass: every target's group and key, and each group's distinct keys.
        let placed: Vec<(Values, Key)> = args
            .targets
            .iter()
            .map(|t| (values_of(&t.0, &args.group_by), key_of(&t.0, &args.key_by)))
            .collect();
        let mut present: HashMap<Values, BTreeSet<Key>> = HashMap::new();
        for (g, k) in &placed {
            // A group's values are cloned once, when the group is first seen.
            if let Some(keys) = present.get_mut(g) {
                keys.insert(k.clone());
            } else {
                present.insert(g.clone(), BTreeSet::from([k.clone()]));
            }
        }
        state.sampler.update(&present, &limit);

        let mut groups: BTreeMap<Values, GroupInfo> = present
            .into_iter()
            .map(|(g, keys)| {
                let info = GroupInfo {
                    targets: 0,
                    kept: 0,
                    keys: keys.len(),
                    limit: limit.of(keys.len()),
                };
                (g, info)
            })
            .collect();
        let mut output = Vec::new();
        for (t, (g, k)) in args.targets.iter().zip(&placed) {
            let chosen = state.sampler.is_chosen(g, k);
            if let Some(info) = groups.get_mut(g) {
                info.targets += 1;
                info.kept += usize::from(chosen);
            }
            if chosen {
                output.push(target::value(Arc::clone(&t.0)));
            }
        }
        state.metrics.set(
            groups
                .iter()
                .map(|(g, i)| (join_values(g), i.targets, i.kept)),
        );
        state.groups = groups;
        self.exports.publish(exports(output));
        Ok(())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }
}

impl Component for Sample {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(Vec::new())
    }

    fn validate(args: &Arguments) -> Vec<Invalid> {
        args.invalid()
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let metrics = InstanceMetrics::new(SampleMetrics::get(&opts.metrics), &opts.id);
        let component = Sample {
            exports: opts.exports,
            state: Mutex::new(State {
                sampler: Sampler::default(),
                groups: BTreeMap::new(),
                metrics,
            }),
        };
        {
            let mut state = component.state();
            component.apply(&mut state, args)?;
        }
        Ok(component)
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        // Held across publishing, so that two updates cannot publish out of order.
        let mut state = self.state();
        self.apply(&mut state, args)
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        shutdown.cancelled().await;
        self.state().metrics.remove();
        Ok(())
    }

    /// Per group: its `group_by` values, targets in and kept, distinct keys, the limit and the
    /// chosen keys (their `key_by` values joined with `/`, escaped as in the `group` label).
    fn debug_info(&self) -> Option<serde_json::Value> {
        let state = self.state();
        let groups: Vec<serde_json::Value> = state
            .groups
            .iter()
            .map(|(g, i)| {
                let chosen: Vec<String> = state
                    .sampler
                    .chosen(g)
                    .map(|c| c.iter().map(|k| join_values(&k.values)).collect())
                    .unwrap_or_default();
                serde_json::json!({
                    "group": join_values(g),
                    "targets": i.targets,
                    "kept": i.kept,
                    "keys": i.keys,
                    "limit": i.limit,
                    "chosen": chosen,
                })
            })
            .collect();
        Some(serde_json::json!({ "groups": groups }))
    }
}

#[cfg(test)]
mod tests;
