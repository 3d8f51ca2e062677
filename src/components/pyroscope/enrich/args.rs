//! `pyroscope.enrich`'s arguments, Alloy's names: `targets`, `target_match_label`,
//! `profiles_match_label` (defaults to `target_match_label`), `labels_to_copy` (empty or unset:
//! every label of the matched target) and `forward_to`.

use serde::Deserialize;

use crate::profiles::Receiver;
use crate::syntax::types::CapsuleRef;
use crate::targets::Shared;

/// The block's arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
// The name is what the decoder shows for unknown attributes.
#[serde(rename = "pyroscope.enrich")]
pub struct Arguments {
    pub targets: Vec<Shared>,
    pub target_match_label: String,
    #[serde(default)]
    pub profiles_match_label: Option<String>,
    #[serde(default)]
    pub labels_to_copy: Vec<String>,
    pub forward_to: Vec<CapsuleRef<Receiver>>,
}

impl Arguments {
    /// The profile label looked up: `profiles_match_label`, or `target_match_label` when it is
    /// unset or empty (Alloy tests for the empty string, so `""` means unset there too).
    pub fn profiles_match_label(&self) -> &str {
        match self.profiles_match_label.as_deref() {
            Some(l) if !l.is_empty() => l,
            _ => &self.target_match_label,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode::decode_source;

    #[test]
    fn arguments_decode_like_alloy() {
        let a: Arguments = decode_source(
            "targets = [{\"pod_ip\" = \"10.0.0.1\", \"app\" = \"a\"}]\ntarget_match_label = \"pod_ip\"\nforward_to = []",
        )
        .expect("valid");
        assert_eq!(a.targets.len(), 1);
        assert_eq!(a.profiles_match_label(), "pod_ip");
        assert!(a.labels_to_copy.is_empty());

        let a: Arguments = decode_source(
            "targets = []\ntarget_match_label = \"pod_ip\"\nprofiles_match_label = \"ip\"\nlabels_to_copy = [\"app\"]\nforward_to = []",
        )
        .expect("valid");
        assert_eq!(a.profiles_match_label(), "ip");
        assert_eq!(a.labels_to_copy, ["app"]);

        let errs =
            decode_source::<Arguments>("targets = []\nforward_to = []").expect_err("missing");
        assert_eq!(
            errs,
            ["1:1: missing required attribute \"target_match_label\""]
        );
        let errs = decode_source::<Arguments>(
            "targets = []\ntarget_match_label = \"a\"\nforward_to = []\nrule {\n}",
        )
        .expect_err("unknown block");
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].starts_with("4:1:"), "{errs:?}");
    }
}
