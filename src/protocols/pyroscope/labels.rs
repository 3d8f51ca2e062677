//! The labels a profile is pushed with (alloy-components.md §3.2): private `__*` labels dropped
//! except `__name__` and `__delta__`, `external_labels` added (overriding), sorted by name, then
//! checked the way Alloy's `validateLabels` does so that a profile Pyroscope would reject for
//! its labels is dropped locally (and counted) instead of being sent.
//!
//! Alloy validates the labels it was handed, before dropping private ones; we validate what is
//! actually sent, so a `__meta_*` label that would never leave the process cannot get a profile
//! dropped. Labels with empty values are omitted (Prometheus' rule: empty means absent).

use std::fmt;

use crate::profiles::{Label, Profile};

/// Why a label set was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelError {
    Empty,
    Duplicate(String),
    InvalidName { name: String, ch: char },
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Alloy's wording (Pyroscope's labelset errors wrapped by write.go).
        match self {
            LabelError::Empty => f.write_str("service name is required"),
            LabelError::Duplicate(n) => write!(f, "duplicate label name: {n}"),
            LabelError::InvalidName { name, ch } => write!(
                f,
                "invalid label name: invalid label name: {name}: character is not allowed: {ch:?}"
            ),
        }
    }
}

impl std::error::Error for LabelError {}

const NAME: &str = "__name__";
const DELTA: &str = "__delta__";

fn kept(name: &str) -> bool {
    !name.starts_with("__") || name == NAME || name == DELTA
}

/// Pyroscope's `IsLabelNameRuneAllowed`: `[A-Za-z0-9_.]`.
fn name_char_allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// The labels to push for a profile labelled `labels`, with `external` overriding (an empty
/// external value removes the label). Errors name the first problem, in sorted order.
pub fn prepare(labels: &[Label], external: &[Label]) -> Result<Vec<Label>, LabelError> {
    prepare_pairs(
        labels.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        external,
    )
}

/// [`prepare`] for a profile: its label set, plus a second copy of each name in its
/// `duplicate_labels`, so that a name the producer gave twice is refused exactly as it was
/// when profiles carried a plain list (unless the name is private or `external` overrides it,
/// which hides the duplicate there too).
pub fn prepare_profile(profile: &Profile, external: &[Label]) -> Result<Vec<Label>, LabelError> {
    let repeated = profile
        .duplicate_labels
        .iter()
        .filter_map(|n| profile.labels.get(n).map(|v| (n.as_ref(), v)));
    prepare_pairs(profile.labels.iter().chain(repeated), external)
}

/// What a profile's labels look like in the "invalid labels" warning: the pairs as a list
/// (as when profiles carried one), a repeated name listed twice.
pub fn profile_labels_for_log(profile: &Profile) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = profile.labels.iter().collect();
    for n in &profile.duplicate_labels {
        if let Some(v) = profile.labels.get(n) {
            out.push((n, v));
        }
    }
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

fn prepare_pairs<'a>(
    labels: impl Iterator<Item = (&'a str, &'a str)>,
    external: &[Label],
) -> Result<Vec<Label>, LabelError> {
    let (lower, _) = labels.size_hint();
    let mut out: Vec<Label> = Vec::with_capacity(lower + external.len());
    for (n, v) in labels {
        if kept(n) && !v.is_empty() && !external.iter().any(|(en, _)| en == n) {
            out.push((n.to_owned(), v.to_owned()));
        }
    }
    out.extend(external.iter().filter(|(_, v)| !v.is_empty()).cloned());
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    validate(&out)?;
    Ok(out)
}

/// Alloy's `validateLabels` on a sorted set: non-empty, unique names, names `[A-Za-z0-9_.]`
/// (`__name__` exempt). Values are Rust strings, hence valid UTF-8 already.
pub fn validate(sorted: &[Label]) -> Result<(), LabelError> {
    if sorted.is_empty() {
        return Err(LabelError::Empty);
    }
    let mut last: Option<&str> = None;
    for (name, _) in sorted {
        if last == Some(name.as_str()) {
            return Err(LabelError::Duplicate(name.clone()));
        }
        if name != NAME {
            if name.is_empty() {
                // Pyroscope: "label name is required".
                return Err(LabelError::InvalidName {
                    name: String::new(),
                    ch: ' ',
                });
            }
            if let Some(ch) = name.chars().find(|c| !name_char_allowed(*c)) {
                return Err(LabelError::InvalidName {
                    name: name.clone(),
                    ch,
                });
            }
        }
        last = Some(name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(pairs: &[(&str, &str)]) -> Vec<Label> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn filters_overrides_and_sorts() {
        let got = prepare(
            &l(&[
                ("service_name", "svc"),
                ("__meta_kubernetes_pod_name", "p"),
                ("__name__", "process_cpu"),
                ("__delta__", "false"),
                ("__address__", "1.2.3.4:6060"),
                ("env", "dev"),
                ("empty", ""),
                ("otel.scope.name", "x"),
            ]),
            &l(&[("env", "prod"), ("cluster", "c1")]),
        )
        .expect("valid");
        assert_eq!(
            got,
            l(&[
                ("__delta__", "false"),
                ("__name__", "process_cpu"),
                ("cluster", "c1"),
                ("env", "prod"),
                ("otel.scope.name", "x"),
                ("service_name", "svc"),
            ])
        );
    }

    #[test]
    fn refuses_what_alloy_refuses() {
        assert_eq!(prepare(&[], &[]), Err(LabelError::Empty));
        assert_eq!(
            prepare(&l(&[("__address__", "x")]), &[]),
            Err(LabelError::Empty)
        );
        assert_eq!(
            prepare(&l(&[("a", "1"), ("a", "2")]), &[]).map_err(|e| e.to_string()),
            Err("duplicate label name: a".to_string())
        );
        assert_eq!(
            prepare(&l(&[("service-name", "x")]), &[]).map_err(|e| e.to_string()),
            Err("invalid label name: invalid label name: service-name: character is not allowed: '-'".to_string())
        );
        // A duplicate hidden by an external label is no duplicate: the external value wins.
        assert!(prepare(&l(&[("a", "1"), ("a", "2")]), &l(&[("a", "3")])).is_ok());
        // __name__ is exempt from the name check; unicode names are not allowed.
        assert!(prepare(&l(&[("__name__", "x")]), &[]).is_ok());
        assert!(prepare(&l(&[("nämé", "x")]), &[]).is_err());
    }

    /// A profile's set cannot hold a name twice; `duplicate_labels` keeps `prepare`'s verdict
    /// on the list the producer gave, error for error.
    #[test]
    fn profiles_are_refused_as_their_label_lists_were() {
        type Pairs = &'static [(&'static str, &'static str)];
        // (the producer's labels, external labels)
        let cases: &[(Pairs, Pairs)] = &[
            (&[("a", "1"), ("a", "2")], &[]),
            (&[("a", "1"), ("a", "2")], &[("a", "3")]),
            (&[("a", "1"), ("a", "")], &[]),
            (&[("a", ""), ("a", "")], &[]),
            (&[("__x__", "1"), ("__x__", "2"), ("b", "1")], &[]),
            (&[("__name__", "1"), ("__name__", "2")], &[]),
            (&[("a-b", "1"), ("z", "1"), ("z", "2")], &[]),
            (&[("a", "1"), ("z-z", "1"), ("z-z", "2")], &[]),
            (&[("b", "1"), ("a", "2"), ("b", "3"), ("b", "4")], &[]),
            (&[("service_name", "x")], &[]),
            (&[], &[]),
        ];
        for (pairs, external) in cases {
            let p = Profile::new(l(pairs), Vec::new());
            assert_eq!(
                prepare_profile(&p, &l(external)),
                prepare(&l(pairs), &l(external)),
                "{pairs:?} with {external:?}"
            );
        }
        let p = Profile::new(l(&[("b", "1"), ("a", "2"), ("b", "3")]), Vec::new());
        assert_eq!(
            profile_labels_for_log(&p),
            [("a", "2"), ("b", "3"), ("b", "3")]
        );
    }
}
