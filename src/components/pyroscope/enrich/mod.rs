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
//! * Metrics, warnings and health (`events`, `watch`): Alloy's component has none. Targets of
//!   which not one has `target_match_label` make the component unhealthy and log a warning
//!   (and an info line when that ends); a minute of profiles none of which could be enriched
//!   (a misspelt `profiles_match_label`, values no target has) logs a warning, and the next
//!   enriched profile an info line. After the component exits, profiles appended to it are
//!   dropped (Alloy's fanout would still forward them).

mod args;
mod events;
mod index;
mod watch;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::profiles::{Appendable, FanOut, Profile, Receiver};
use crate::runtime::event::emit;
use crate::runtime::{BoxError, Component, ComponentOptions, Health};
use crate::sync::{lock, read, write};
use crate::syntax::decode::Invalid;
use crate::syntax::value::Value;

pub use args::Arguments;
use events::{
    InstanceMetrics, NoTargetMatchable, ProfilesMatched, ProfilesUnmatched, TargetsMatchable,
};
use index::{Index, Outcome, Rule};
use watch::{Change, WINDOW, Watch};

/// The match settings and the index they were built with, swapped together.
struct State {
    rule: Arc<Rule>,
    index: Arc<Index>,
    target_match_label: String,
    /// Targets given in the last update (matchable or not).
    targets: usize,
}

impl State {
    /// Whether this state can enrich anything, or has no targets yet (nothing to warn about).
    fn matchable(&self) -> bool {
        self.targets == 0 || self.index.len() > 0
    }
}

/// What the receiver and the component share.
struct Shared {
    id: String,
    fanout: FanOut,
    /// Appends take the read lock only to copy two pointers; the write lock is held only to
    /// swap in a state built beforehand.
    state: RwLock<State>,
    /// Held for a whole update, so that two updates build and swap their states (and report
    /// the change) in the order they were called, whatever the runtime does.
    updating: Mutex<()>,
    watch: Watch,
    metrics: InstanceMetrics,
    exited: AtomicBool,
}

impl Shared {
    /// Builds the state for `args`; no lock is needed.
    fn state_for(&self, args: &Arguments) -> State {
        let index = Index::new(&args.targets, &args.target_match_label);
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
            target_match_label: args.target_match_label.clone(),
            targets: args.targets.len(),
        }
    }

    /// Builds the state for `args` and swaps it in, then sets the gauges and reports a change
    /// of whether any target can match. `was_matchable`: the state replaced could.
    fn apply(&self, args: &Arguments, was_matchable: bool) {
        let state = self.state_for(args);
        let (matchable, targets, label) = (
            state.matchable(),
            state.targets,
            state.target_match_label.clone(),
        );
        self.metrics
            .index(state.index.len(), state.index.without_label);
        let matchable_targets = state.index.len();
        let old = std::mem::replace(&mut *write(&self.state), state);
        // Dropped outside the write lock: the old index may be the last reference.
        drop(old);
        if was_matchable && !matchable {
            emit(NoTargetMatchable {
                component_id: &self.id,
                label: &label,
                targets,
            });
        } else if !was_matchable && matchable {
            emit(TargetsMatchable {
                component_id: &self.id,
                label: &label,
                targets,
                matchable: matchable_targets,
            });
        }
    }

    /// Logs what the watch says a batch changed.
    fn report(&self, change: Change, rule: &Rule, index: &Index) {
        match change {
            Change::Started { problem, profiles } => emit(ProfilesUnmatched {
                component_id: &self.id,
                problem,
                profiles_match_label: &rule.profiles_match_label,
                profiles,
                matchable_targets: index.len(),
            }),
            Change::Ended(problem) => emit(ProfilesMatched {
                component_id: &self.id,
                problem,
                profiles_match_label: &rule.profiles_match_label,
            }),
        }
    }

    /// `append` at a given time, so that tests can move the clock.
    fn append_at(&self, now: Instant, mut profiles: Vec<Profile>) {
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
        let mut counts = [0u64; Outcome::ALL.len()];
        for profile in &mut profiles {
            counts[index::enrich(profile, &rule, &index).index()] += 1;
        }
        for outcome in Outcome::ALL {
            let n = counts[outcome.index()];
            if n > 0 {
                self.metrics.count(outcome, n);
            }
        }
        if !profiles.is_empty()
            && let Some(change) = self.watch.observe(now, &counts, index.len() > 0)
        {
            self.report(change, &rule, &index);
        }
        self.fanout.append(profiles);
    }
}

impl Appendable for Shared {
    fn append(&self, profiles: Vec<Profile>) {
        self.append_at(Instant::now(), profiles);
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
                target_match_label: String::new(),
                targets: 0,
            }),
            updating: Mutex::new(()),
            watch: Watch::new(Instant::now(), WINDOW),
            exited: AtomicBool::new(false),
        });
        shared.apply(&args, true);
        let receiver = Arc::new(Receiver(shared.clone()));
        opts.exports.publish(exports(&receiver));
        Ok(Enrich { shared, receiver })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        let shared = &self.shared;
        let _serial = lock(&shared.updating);
        let was_matchable = read(&shared.state).matchable();
        shared.apply(&args, was_matchable);
        shared.fanout.set(args.forward_to);
        Ok(())
    }

    /// Unhealthy while targets are given and not one has `target_match_label`: nothing can be
    /// enriched, and the configuration (a misspelt label, a missing relabel rule) is the cause.
    fn health(&self) -> Option<Health> {
        let state = read(&self.shared.state);
        if state.matchable() {
            return None;
        }
        Some(Health::unhealthy(format!(
            "none of the {} targets has the match label {:?}: profiles pass through unchanged",
            state.targets, state.target_match_label
        )))
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
            "profiles_problem": s.watch.problem().map(|p| p.as_str()),
        }))
    }
}

#[cfg(test)]
mod tests;
