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
//!   touching the cache (counted as processed and written), as in Alloy. (Labels with empty
//!   values count as none: a profile's label set does not hold them.)
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
//! After the component exits (its block was removed, or the process is stopping), profiles
//! appended to it are dropped: Alloy returns an error (`<id> has exited`) to the producer there.
//!
//! # Cache
//!
//! As in Alloy, results are cached by incoming label set, in an LRU cache (Alloy uses
//! hashicorp's `golang-lru`) of at most `max_cache_size` label sets, kept and dropped results
//! alike; a hit skips the rules entirely. The key is the profile's label set as received. Alloy
//! keys by the label list and counts two inputs differing only by an empty-valued label as two
//! entries; a profile's [`LabelSet`] holds no empty value (producers never send one), so here
//! they are one. Kept-unchanged results store no second copy of the labels. An `update` with different rules
//! empties the cache (and takes effect for the next profile); one that only changes
//! `max_cache_size` resizes it, evicting the least recently used entries; one that changes
//! neither (just `forward_to`) keeps it. A result computed with old rules while an update ran is
//! never cached.
//!
//! # Metrics
//!
//! Alloy's six `pyroscope_relabel_*` series (profiles processed, written and dropped; cache
//! hits, misses and size), under Alloy's names; the table is in `metrics.rs`.

mod args;
mod cache;
mod metrics;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::profiles::{Appendable, FanOut, Profile, Receiver};
use crate::relabel::block::{compile, rules_value};
use crate::relabel::{LabelSet, Relabeler, RuleConfig};
use crate::runtime::{BoxError, Component, ComponentOptions, ExportsHandle};
use crate::sync::lock;
use crate::syntax::value::Value;

pub use args::{Arguments, ArgumentsError, DEFAULT_MAX_CACHE_SIZE};
use cache::Lru;
use metrics::{InstanceMetrics, RelabelMetrics};

/// What the rules made of one incoming label set.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    /// Dropped by a rule, or left with no labels.
    Drop,
    /// Kept with exactly the incoming labels.
    Unchanged,
    /// Kept with these labels (shared with the cache: a hit clones a pointer under the lock,
    /// then a set of reference counts for the profile).
    Relabelled(Arc<LabelSet>),
}

impl Outcome {
    /// Runs `relabeler` over `labels`.
    fn compute(relabeler: &Relabeler, labels: &LabelSet) -> Outcome {
        let mut set = labels.clone();
        if !relabeler.process(&mut set) || set.is_empty() {
            return Outcome::Drop;
        }
        if set == *labels {
            Outcome::Unchanged
        } else {
            Outcome::Relabelled(Arc::new(set))
        }
    }

    /// Gives `labels` their new value; false when the profile is dropped.
    fn apply(&self, labels: &mut LabelSet) -> bool {
        match self {
            Outcome::Drop => false,
            Outcome::Unchanged => true,
            Outcome::Relabelled(new) => {
                *labels = LabelSet::clone(new);
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
    fn relabel(&self, labels: &mut LabelSet) -> bool {
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
                    .insert(Arc::new(labels.clone()), outcome.clone());
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
            if profile.labels.is_empty() {
                kept.push(profile);
            } else if self.relabel(&mut profile.labels) {
                // The rules ran over the set, in which a name the producer repeated holds its
                // last value: the result has no duplicate left (as when labels were a list
                // turned into a set here).
                profile.duplicate_labels.clear();
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
mod tests;
