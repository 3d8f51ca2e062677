//! `pyroscope.enrich`: copies labels of discovered targets onto the profiles passing through,
//! matching a profile label against a target label; Alloy's experimental component of the
//! same name (`internal/component/pyroscope/enrich/`, read for behaviour).
//!
//! ```alloy
//! pyroscope.enrich "metadata" {
//!   targets              = discovery.relabel.pods.output
//!   target_match_label   = "pod_ip"
//!   profiles_match_label = "service_name"
//!   labels_to_copy       = ["namespace", "node", "app"]
//!   forward_to           = [pyroscope.write.default.receiver]
//! }
//! ```
//!
//! * Arguments, as Alloy ([`Arguments`]): `targets` (required), `target_match_label`
//!   (required), `profiles_match_label` (optional; unset or `""` means `target_match_label`),
//!   `labels_to_copy` (optional; unset or empty copies every label of the target) and
//!   `forward_to` (required). No blocks.
//! * Export, as Alloy: `receiver`, the same receiver for the component's lifetime.
//!
//! # What happens to a profile (Alloy's `enrichLabels`)
//!
//! * Targets are indexed by their `target_match_label` value; a target without it is left
//!   out, and of two targets with the same value the later one wins (Alloy keeps them in a
//!   map, so the last written wins there too).
//! * A profile without `profiles_match_label`, or whose value no target has, is forwarded
//!   **unchanged** (counted as `no_match_label` / `no_target`). It is never dropped.
//! * On a match the target's labels are copied, **overwriting** profile labels of the same
//!   name. With `labels_to_copy` unset, that is every label of the target, the match label and
//!   `__`-prefixed ones (`__address__`, `__meta_*`) included, exactly as Alloy; `pyroscope.write`
//!   then leaves `__*` labels other than `__name__` and `__delta__` out of what it pushes, as
//!   Alloy's write does, so they do not reach the backend. A name in `labels_to_copy` the
//!   target lacks is skipped (the profile keeps its own value).
//! * Only series labels change; the pprof bytes are forwarded untouched.
//! * New `targets` (discovery changed) or new match settings take effect for the next profile:
//!   every update rebuilds the index from the targets it is given. Before the first targets
//!   arrive profiles pass through unchanged (Alloy's documented caveat).
//!
//! # Differences from Alloy, on purpose
//!
//! * An empty `target_match_label` is refused (`check` and `run`, at the attribute): Alloy
//!   accepts it and then matches nothing, silently.
//! * An update changes `forward_to` too; Alloy's `Update` keeps the receivers it was built with.
//! * Alloy runs this experimental component only under `--stability.level=experimental`;
//!   scraper does not gate components by stability (docs/ALLOY-COMPAT.md), so it always runs.
//! * Metrics and a warning (`events`): Alloy's component has neither. After the component exits,
//!   profiles appended to it are dropped (Alloy's fanout would still forward them).

mod args;
mod events;
mod index;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use tokio_util::sync::CancellationToken;

use crate::profiles::{Appendable, FanOut, Profile, Receiver};
use crate::runtime::event::emit;
use crate::runtime::{BoxError, Component, ComponentOptions};
use crate::sync::{read, write};
use crate::syntax::decode::Invalid;
use crate::syntax::value::Value;

pub use args::Arguments;
use events::{InstanceMetrics, NoTargetMatchable};
use index::{Index, Outcome, Rule};

/// The match settings and the index they were built with, swapped together.
struct State {
    rule: Arc<Rule>,
    index: Arc<Index>,
    /// Targets given in the last update (matchable or not).
    targets: usize,
}

/// What the receiver and the component share.
struct Shared {
    id: String,
    fanout: FanOut,
    state: RwLock<State>,
    metrics: InstanceMetrics,
    exited: AtomicBool,
}

impl Shared {
    /// Builds the state for `args`, reporting targets none of which can match.
    fn state_for(&self, args: &Arguments, was_matchable: bool) -> State {
        let index = Index::new(&args.targets, &args.target_match_label);
        self.metrics.index(index.len(), index.without_label);
        if index.len() == 0 && !args.targets.is_empty() && was_matchable {
            emit(NoTargetMatchable {
                component: &self.id,
                label: &args.target_match_label,
                targets: args.targets.len(),
            });
        }
        tracing::debug!(
            component_id = %self.id,
            targets = args.targets.len(),
            matchable = index.len(),
            without_label = index.without_label,
            shadowed = index.shadowed,
            "pyroscope.enrich index rebuilt"
        );
        State {
            rule: Arc::new(Rule {
                profiles_match_label: args.profiles_match_label().to_string(),
                labels_to_copy: args.labels_to_copy.clone(),
            }),
            index: Arc::new(index),
            targets: args.targets.len(),
        }
    }
}

/// Whether `state` can enrich anything, or has no targets yet (nothing to warn about).
fn matchable(state: &State) -> bool {
    state.targets == 0 || state.index.len() > 0
}

impl Appendable for Shared {
    fn append(&self, mut profiles: Vec<Profile>) {
        if self.exited.load(Ordering::Relaxed) {
            tracing::debug!(
                component_id = %self.id,
                profiles = profiles.len(),
                "component has exited, profiles dropped"
            );
            return;
        }
        let (rule, index) = {
            let state = read(&self.state);
            (state.rule.clone(), state.index.clone())
        };
        let mut counts = [0u64; 3];
        for profile in &mut profiles {
            let outcome = index::enrich(profile, &rule, &index);
            counts[outcome as usize] += 1;
        }
        for (outcome, n) in [Outcome::Matched, Outcome::NoMatchLabel, Outcome::NoTarget]
            .into_iter()
            .zip(counts)
        {
            if n > 0 {
                self.metrics.count(outcome, n);
            }
        }
        self.fanout.append(profiles);
    }
}

fn exports(receiver: &Arc<Receiver>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("receiver".to_string(), receiver.export());
    Value::Object(m)
}

/// The running `pyroscope.enrich` component.
pub struct Enrich {
    shared: Arc<Shared>,
    receiver: Arc<Receiver>,
}

impl Enrich {
    /// The receiver this component exports.
    pub fn receiver(&self) -> Arc<Receiver> {
        self.receiver.clone()
    }
}

impl Component for Enrich {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(&Receiver::unavailable())
    }

    fn validate(args: &Arguments) -> Vec<Invalid> {
        if args.target_match_label.is_empty() {
            return vec![
                Invalid::new("target_match_label must not be empty: no target could match")
                    .attr("target_match_label"),
            ];
        }
        Vec::new()
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let shared = Arc::new(Shared {
            metrics: InstanceMetrics::new(&opts.metrics, &opts.id),
            id: opts.id,
            fanout: FanOut::new(args.forward_to.clone()),
            state: RwLock::new(State {
                rule: Arc::new(Rule {
                    profiles_match_label: String::new(),
                    labels_to_copy: Vec::new(),
                }),
                index: Arc::default(),
                targets: 0,
            }),
            exited: AtomicBool::new(false),
        });
        let state = shared.state_for(&args, true);
        *write(&shared.state) = state;
        let receiver = Arc::new(Receiver(shared.clone()));
        opts.exports.publish(exports(&receiver));
        Ok(Enrich { shared, receiver })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        let shared = &self.shared;
        // Held while rebuilding, so that two updates cannot apply out of order; appends only
        // take the read lock for two pointer copies.
        let mut state = write(&shared.state);
        let was_matchable = matchable(&state);
        *state = shared.state_for(&args, was_matchable);
        shared.fanout.set(args.forward_to);
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        shutdown.cancelled().await;
        self.shared.exited.store(true, Ordering::Relaxed);
        self.shared.metrics.remove();
        Ok(())
    }

    /// The match settings, the index and what went through.
    fn debug_info(&self) -> Option<serde_json::Value> {
        let s = &self.shared;
        let state = read(&s.state);
        let m = &s.metrics;
        Some(serde_json::json!({
            "profiles_match_label": state.rule.profiles_match_label,
            "labels_to_copy": state.rule.labels_to_copy,
            "targets": state.targets,
            "targets_matchable": state.index.len(),
            "targets_without_match_label": state.index.without_label,
            "targets_shadowed": state.index.shadowed,
            "forward_to": s.fanout.len(),
            "profiles_matched": m.profiles(Outcome::Matched),
            "profiles_without_match_label": m.profiles(Outcome::NoMatchLabel),
            "profiles_without_target": m.profiles(Outcome::NoTarget),
        }))
    }
}

#[cfg(test)]
mod tests;
