//! `discovery.relabel`: applies relabel rules to a list of targets (spec §5).
//!
//! ```alloy
//! discovery.relabel "otel" {
//!   targets = discovery.kubernetes.pods.targets
//!
//!   rule {
//!     source_labels = ["__meta_kubernetes_pod_label_app_kubernetes_io_component"]
//!     regex         = "opentelemetry-collector"
//!     action        = "keep"
//!   }
//! }
//! ```
//!
//! * Arguments: `targets` (`list(map(string))`, required) and any number of `rule` blocks
//!   ([`RuleConfig`]: Alloy's attribute names and defaults), applied in file order. No rules:
//!   targets pass through.
//! * Exports: `output`, the targets that were kept, in input order (an array of targets, which
//!   behave as objects of strings: see `discovery::target`; empty values dropped); and `rules`, the rules in use. Until the first evaluation
//!   both are `[]`.
//! * Recomputed synchronously whenever the arguments change (new targets from upstream, a
//!   reload): the controller calls [`Component::update`], and equal outputs are not re-published
//!   by the runtime, so dependants are re-evaluated only when the output really changed.
//!
//! # Rule validation and positions
//!
//! Each `rule` block decodes into a [`RuleBlock`], whose `Deserialize` runs the engine's load-time
//! validation (regex compilation and Alloy's `Validate`). The decoder places errors raised by a
//! block's own `Deserialize` at that block's header, so `scraper check` and the controller report
//! e.g. `config.alloy:14:5: relabel configuration for hashmod requires non-zero modulus` at the
//! offending `rule`, and the other rules' errors too (one per bad block). An invalid rule makes
//! the component unhealthy; as everywhere, it keeps running with its last good arguments.
//!
//! # `rules` export: an array, not a capsule
//!
//! Alloy exports `rules` as a `relabel.Rules` capsule for `loki.*`/`prometheus.*` consumers
//! (`relabel_rules = discovery.relabel.x.rules`); scraper has no such consumers. We export the
//! rules as plain data instead: one object per rule with the `rule` block's attribute names
//! (`source_labels` only when it was given, `modulus` as a number, every other field a string,
//! defaults filled in). That can be inspected in the UI and compared by value, so a changed
//! target list does not look like a rules change, and it decodes back into a `Vec<RuleConfig>`
//! should a consumer ever appear. The one visible difference: a config that prints the export
//! sees a list instead of `capsule("relabel.Rules")`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

pub use crate::relabel::block::{RuleBlock, compile, rules_value};
use crate::relabel::{LabelSet, Relabeler, RuleConfig};
use crate::runtime::{BoxError, Component, ComponentOptions, ExportsHandle};
use crate::syntax::value::Value;
use crate::targets::{self as target, Shared};

/// The block's arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Arguments {
    pub targets: Vec<Shared>,
    /// The `rule` blocks, in file order.
    #[serde(default)]
    pub rule: Vec<RuleBlock>,
}

impl Arguments {
    /// The rule configurations, in order.
    pub fn rule_configs(&self) -> Vec<RuleConfig> {
        self.rule.iter().map(|r| r.config().clone()).collect()
    }
}

/// Applies `relabeler` to every shared target, copying only the survivors, in order.
pub fn relabel_shared(relabeler: &Relabeler, targets: &[Shared]) -> Vec<LabelSet> {
    targets
        .iter()
        .filter_map(|t| relabeler.process_shared(&t.0))
        .collect()
}

/// Applies `relabeler` to every target, keeping the survivors in order.
pub fn relabel_targets(relabeler: &Relabeler, targets: Vec<LabelSet>) -> Vec<LabelSet> {
    targets
        .into_iter()
        .filter_map(|mut t| relabeler.process(&mut t).then_some(t))
        .collect()
}

fn exports(output: Vec<Value>, rules: Value) -> Value {
    let mut m = BTreeMap::new();
    m.insert("output".to_string(), Value::Array(output));
    m.insert("rules".to_string(), rules);
    Value::Object(m)
}

/// The running component.
pub struct Relabel {
    exports: ExportsHandle,
    state: Mutex<State>,
}

struct State {
    configs: Vec<RuleConfig>,
    relabeler: Arc<Relabeler>,
    rules_export: Value,
    targets_in: usize,
    targets_out: usize,
}

impl Relabel {
    /// Applies `args`: recompiles the rules if they changed, relabels and publishes.
    fn apply(&self, state: &mut State, args: Arguments) -> Result<(), BoxError> {
        let configs = args.rule_configs();
        if configs != state.configs {
            state.relabeler = Arc::new(compile(&configs)?);
            state.rules_export = rules_value(&configs);
            state.configs = configs;
        }
        state.targets_in = args.targets.len();
        let output: Vec<Value> = relabel_shared(&state.relabeler, &args.targets)
            .into_iter()
            .map(|t| target::value(Arc::new(t)))
            .collect();
        state.targets_out = output.len();
        self.exports
            .publish(exports(output, state.rules_export.clone()));
        Ok(())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }
}

impl Component for Relabel {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(Vec::new(), Value::Array(Vec::new()))
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let component = Relabel {
            exports: opts.exports,
            state: Mutex::new(State {
                configs: Vec::new(),
                relabeler: Arc::new(compile(&[])?),
                rules_export: Value::Array(Vec::new()),
                targets_in: 0,
                targets_out: 0,
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
        Ok(())
    }

    /// How many rules, and how many targets went in and came out at the last update.
    fn debug_info(&self) -> Option<serde_json::Value> {
        let state = self.state();
        Some(serde_json::json!({
            "rules": state.configs.len(),
            "targets_in": state.targets_in,
            "targets_out": state.targets_out,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode;

    /// Decodes `src` as the body of a `discovery.relabel` block; errors as `line:col: message`.
    fn decode_args(src: &str) -> Result<Arguments, Vec<String>> {
        decode::decode_source(src)
    }

    fn labels(pairs: &[(&str, &str)]) -> LabelSet {
        pairs.iter().copied().collect()
    }

    #[test]
    fn rule_errors_point_at_their_rule_block() {
        let src = r#"targets = []
rule {
  action = "keep"
}
rule {
  action = "hashmod"
  target_label = "x"
}
rule {
  regex = "a(b"
}
rule {
  action = "labeldrop"
  target_label = "x"
}
"#;
        let errs = decode_args(src).expect_err("invalid rules");
        assert_eq!(
            errs,
            [
                "5:1: relabel configuration for hashmod requires non-zero modulus",
                "9:1: error parsing regexp: missing closing ): `^(?s:a(b)$`",
                "12:1: labeldrop action requires only 'regex', and no other fields",
            ]
        );
    }

    #[test]
    fn unknown_attributes_and_actions_are_reported_at_the_attribute() {
        let errs = decode_args("targets = []\nrule {\n  action = \"Replace\"\n  foo = 1\n}\n")
            .expect_err("invalid");
        // No follow-on error from the default action (`replace` without `target_label`), and the
        // unknown attribute is not lost when the block is set aside.
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].starts_with("3:12: "), "{errs:?}");
        assert!(
            errs[0].ends_with("unrecognized action type \"Replace\""),
            "{errs:?}"
        );
        assert_eq!(errs[1], "4:3: unrecognized attribute name \"foo\"");
    }

    #[test]
    fn targets_are_required_and_decode_like_alloy() {
        let errs = decode_args("").expect_err("missing targets");
        assert_eq!(errs, ["1:1: missing required attribute \"targets\""]);
        let a = decode_args(r#"targets = [{"__address__" = "a:1", "port" = 80, "empty" = ""}]"#)
            .expect("valid");
        assert_eq!(
            a.targets,
            [Shared::from(labels(&[
                ("__address__", "a:1"),
                ("port", "80")
            ]))]
        );
        assert!(a.rule.is_empty());
    }

    fn output(exports: &Value) -> Vec<BTreeMap<String, String>> {
        let Value::Object(m) = exports else {
            panic!("exports not an object")
        };
        decode::from_value(&m["output"]).expect("output is list(map(string))")
    }

    #[test]
    fn relabels_publishes_and_recomputes_on_update() {
        let src = r#"targets = [
  {"__address__" = "10.0.0.1:8080", "app" = "a"},
  {"__address__" = "10.0.0.2:8080", "app" = "b"},
]
rule {
  source_labels = ["app"]
  regex = "a"
  action = "keep"
}
rule {
  source_labels = ["__address__"]
  regex = "(.+):\\d+"
  target_label = "host"
}
"#;
        let args = decode_args(src).expect("valid");
        let opts = ComponentOptions::standalone(
            "discovery.relabel.t",
            "discovery.relabel",
            Relabel::initial_exports(),
        );
        let exports = opts.exports.clone();
        let c = Relabel::build(opts, args.clone()).expect("build");
        let out = output(&exports.current());
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["host"], "10.0.0.1");
        assert_eq!(out[0]["app"], "a");

        // New input targets: the output follows.
        let mut next = args.clone();
        next.targets
            .push(labels(&[("__address__", "10.0.0.3:1"), ("app", "a")]).into());
        c.update(next).expect("update");
        let out = output(&exports.current());
        assert_eq!(
            out.iter().map(|t| t["host"].as_str()).collect::<Vec<_>>(),
            ["10.0.0.1", "10.0.0.3"]
        );

        // The rules export lists the rules with defaults filled in.
        let Value::Object(m) = exports.current() else {
            panic!()
        };
        let rules: Vec<RuleConfig> = decode::from_value(&m["rules"]).expect("rules decode");
        assert_eq!(rules, args.rule_configs());
        assert_eq!(rules[1].replacement, "$1");

        // Without rules every target passes through.
        let mut none = args;
        none.rule.clear();
        c.update(none).expect("update");
        assert_eq!(output(&exports.current()).len(), 2);
        assert_eq!(
            c.debug_info(),
            Some(serde_json::json!({"rules": 0, "targets_in": 2, "targets_out": 2}))
        );
    }

    #[test]
    fn initial_exports_are_empty_lists() {
        let Value::Object(m) = Relabel::initial_exports() else {
            panic!()
        };
        assert_eq!(m["output"], Value::Array(Vec::new()));
        assert_eq!(m["rules"], Value::Array(Vec::new()));
    }
}
