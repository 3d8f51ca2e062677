//! The lookup `pyroscope.enrich` does per profile: discovered targets indexed by the value of
//! their match label, and the labels a match copies onto a profile (Alloy's
//! `refreshCacheFromTargets` and `enrichLabels`, read in
//! `internal/component/pyroscope/enrich/enrich.go`).

use std::collections::HashMap;
use std::sync::Arc;

use crate::labels::{LabelSet, LabelValue};
use crate::profiles::Profile;
use crate::targets::Shared;

/// Targets by the value of their `target_match_label`.
#[derive(Debug, Default)]
pub(super) struct Index {
    by_value: HashMap<LabelValue, Arc<LabelSet>>,
    /// Targets without the match label (they can never match).
    pub(super) without_label: usize,
    /// Targets whose match value an earlier target already had: the later one wins, as in
    /// Alloy's map.
    pub(super) shadowed: usize,
}

impl Index {
    /// Indexes `targets` by `match_label`. The targets stay shared (no label is copied).
    pub(super) fn new(targets: &[Shared], match_label: &str) -> Index {
        let mut index = Index {
            by_value: HashMap::with_capacity(targets.len()),
            ..Index::default()
        };
        for t in targets {
            // A label set holds no empty value, so absent and empty are one case, as Alloy's
            // `labelSet.Get(...) != ""`.
            match t.0.get_shared(match_label) {
                Some(v) => {
                    if index.by_value.insert(v.clone(), t.0.clone()).is_some() {
                        index.shadowed += 1;
                    }
                }
                None => index.without_label += 1,
            }
        }
        index
    }

    /// Distinct match values, i.e. the targets a profile can match.
    pub(super) fn len(&self) -> usize {
        self.by_value.len()
    }

    fn get(&self, value: &str) -> Option<&Arc<LabelSet>> {
        self.by_value.get(value)
    }
}

/// What happened to one profile's labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// A target matched; its labels (or the requested ones it has) were copied.
    Matched,
    /// The profile has no `profiles_match_label`: forwarded unchanged.
    NoMatchLabel,
    /// No target has the profile's value: forwarded unchanged.
    NoTarget,
}

impl Outcome {
    /// Every outcome, at its [`Outcome::index`]: what per-outcome arrays and metric series are
    /// built from, so that the array slot and the `result` label cannot drift apart.
    pub(super) const ALL: [Outcome; 3] =
        [Outcome::Matched, Outcome::NoMatchLabel, Outcome::NoTarget];

    /// This outcome's slot in a per-outcome array (`Outcome::ALL[o.index()] == o`). Spelt out
    /// rather than `as usize`, so that reordering the variants cannot move a count to another
    /// label.
    pub(super) const fn index(self) -> usize {
        match self {
            Outcome::Matched => 0,
            Outcome::NoMatchLabel => 1,
            Outcome::NoTarget => 2,
        }
    }

    pub(super) fn as_str(self) -> &'static str {
        match self {
            Outcome::Matched => "matched",
            Outcome::NoMatchLabel => "no_match_label",
            Outcome::NoTarget => "no_target",
        }
    }
}

/// How a profile is matched and what is copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Rule {
    pub(super) profiles_match_label: String,
    /// Empty: every label of the target, `__`-prefixed ones included.
    pub(super) labels_to_copy: Vec<String>,
}

/// Copies the matched target's labels onto the profile, overwriting labels of the same name,
/// as Alloy's label builder does.
pub(super) fn enrich(profile: &mut Profile, rule: &Rule, index: &Index) -> Outcome {
    let Some(value) = profile.labels.get(&rule.profiles_match_label) else {
        return Outcome::NoMatchLabel;
    };
    let Some(target) = index.get(value).cloned() else {
        return Outcome::NoTarget;
    };
    let adds: Vec<(&str, LabelValue)> = if rule.labels_to_copy.is_empty() {
        target
            .iter_shared()
            .map(|(n, v)| (n.as_str(), v.clone()))
            .collect()
    } else {
        // Only the requested names the target has (a missing one leaves the profile's own).
        let mut adds: Vec<(&str, LabelValue)> = rule
            .labels_to_copy
            .iter()
            .filter_map(|n| target.get_shared(n).map(|v| (n.as_str(), v.clone())))
            .collect();
        adds.sort_by(|a, b| a.0.cmp(b.0));
        adds.dedup_by(|a, b| a.0 == b.0);
        adds
    };
    profile.labels.set_sorted(&adds);
    // A name the producer repeated and the copy overwrote now has one value, as Alloy's builder
    // leaves it: no longer a duplicate for `pyroscope.write` to refuse.
    if !profile.duplicate_labels.is_empty() {
        profile
            .duplicate_labels
            .retain(|d| adds.binary_search_by(|a| a.0.cmp(d.as_str())).is_err());
    }
    Outcome::Matched
}

#[cfg(test)]
mod tests {
    use super::Outcome;

    #[test]
    fn every_outcome_has_its_own_slot_and_label() {
        for (i, o) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(o.index(), i, "{o:?}");
        }
        let mut names: Vec<&str> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Outcome::ALL.len(), "{names:?}");
    }
}
