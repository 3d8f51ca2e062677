//! `pyroscope.relabel`'s arguments: `forward_to`, the `rule` blocks (decoded and validated by
//! `relabel::block`, shared with `discovery.relabel`) and `max_cache_size`, which is checked
//! while decoding so that Alloy's error points at the block.

use serde::Deserialize;

use crate::profiles::Receiver;
use crate::relabel::RuleConfig;
use crate::relabel::block::RuleBlock;
use crate::syntax::types::CapsuleRef;

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

/// Decodes `src` (a block body without `forward_to`), errors as `line:col: message`; the
/// component's tests use it too.
#[cfg(test)]
pub(super) fn decode_args(src: &str) -> Result<Arguments, Vec<String>> {
    crate::syntax::decode::decode_source(&format!("forward_to = []\n{src}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode;

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
}
