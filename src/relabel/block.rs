//! The relabel engine's Alloy face: a `rule` block decoded and validated on its own (so that
//! errors point at the block), a rule list compiled with errors naming the rule, and the
//! `rules` export value. Shared by `discovery.relabel`, `pyroscope.relabel` and the offline
//! `scraper relabel` command, which must agree on all three.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Relabeler, Rule, RuleConfig, RuleError};
use crate::syntax::value::{Number, Value};

/// One `rule` block, validated while decoding (so that errors point at the block).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RuleConfig")]
pub struct RuleBlock(RuleConfig);

impl RuleBlock {
    pub fn config(&self) -> &RuleConfig {
        &self.0
    }
}

impl TryFrom<RuleConfig> for RuleBlock {
    type Error = RuleError;

    fn try_from(config: RuleConfig) -> Result<Self, RuleError> {
        // Compiled again (with the rest of the list) when the component applies the rules; the
        // cost is one regex compilation per rule per config change.
        Rule::new(0, &config)?;
        Ok(RuleBlock(config))
    }
}

/// Compiles a rule list; the error names the rule's position (normally unreachable: every rule
/// was validated while decoding).
pub fn compile(
    configs: &[RuleConfig],
) -> Result<Relabeler, Box<dyn std::error::Error + Send + Sync>> {
    Relabeler::new(configs).map_err(|e| format!("rule[{}]: {e}", e.index()).into())
}

/// The `rules` export: one object per rule, with the `rule` block's attribute names.
pub fn rules_value(configs: &[RuleConfig]) -> Value {
    let rules = configs
        .iter()
        .map(|c| {
            let mut m = BTreeMap::new();
            if let Some(sources) = &c.source_labels {
                m.insert(
                    "source_labels".to_string(),
                    Value::Array(sources.iter().map(|s| Value::string(s.as_str())).collect()),
                );
            }
            let strings = [
                ("separator", c.separator.as_str()),
                ("regex", c.regex.as_str()),
                ("target_label", c.target_label.as_str()),
                ("replacement", c.replacement.as_str()),
                ("action", c.action.as_str()),
            ];
            for (k, v) in strings {
                m.insert(k.to_string(), Value::string(v));
            }
            m.insert(
                "modulus".to_string(),
                Value::Number(Number::Uint(c.modulus)),
            );
            Value::Object(m)
        })
        .collect();
    Value::Array(rules)
}
