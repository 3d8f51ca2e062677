//! What a source holds, for `scraper labels` and `scraper series`, and the "did you mean" hint
//! when a query matches nothing.

use crate::syntax::suggest::nearest;
use std::collections::{BTreeMap, BTreeSet};

use super::selector::{MatchOp, Selector};
use super::source::ProfileType;

/// One series' labels, sorted by name, `__name__` (and from a backend `__profile_type__`)
/// included.
pub type LabelSet = Vec<(String, String)>;

/// The label a backend gives every series for its full profile type ID.
const PROFILE_TYPE_LABEL: &str = "__profile_type__";

/// The profile type of a series: the full ID a backend reports, else the store's `__name__`.
pub fn profile_type_of(labels: &[(String, String)]) -> Option<&str> {
    let get = |name: &str| {
        labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    get(PROFILE_TYPE_LABEL).or_else(|| get("__name__"))
}

/// Whether a series holds profiles of type `ty`: by full ID when the series has one, by name
/// otherwise (the local store keeps only `__name__`).
pub fn has_type(labels: &[(String, String)], ty: &ProfileType) -> bool {
    let name = labels.iter().any(|(k, v)| k == "__name__" && *v == ty.name);
    match labels.iter().find(|(k, _)| k == PROFILE_TYPE_LABEL) {
        Some((_, id)) => *id == ty.id(),
        None => name,
    }
}

/// The series grouped by their public labels (`__*` ones dropped), each with its profile
/// types: what `scraper series` prints, sorted.
pub fn group_series(sets: &[LabelSet]) -> BTreeMap<LabelSet, BTreeSet<String>> {
    let mut out: BTreeMap<LabelSet, BTreeSet<String>> = BTreeMap::new();
    for set in sets {
        let public: LabelSet = set
            .iter()
            .filter(|(k, _)| !k.starts_with("__"))
            .cloned()
            .collect();
        let types = out.entry(public).or_default();
        if let Some(t) = profile_type_of(set) {
            types.insert(t.to_string());
        }
    }
    out
}

/// `{k="v", ...}`, values quoted as selectors quote them, so a line can be pasted as a query.
pub fn format_labels(labels: &[(String, String)]) -> String {
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{{{}}}", inner.join(", "))
}

/// Every label name with its distinct values, sorted.
pub fn label_values(sets: &[LabelSet]) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for set in sets {
        for (k, v) in set {
            out.entry(k.clone()).or_default().insert(v.clone());
        }
    }
    out
}

/// Why `selector` with type `ty` matched nothing among `sets` (every series of the range), as
/// hints to append to the "no profiles match" message; empty when there is nothing useful to
/// say. Only `=` matchers get a spelling suggestion: a regex or negation that matches nothing
/// has no single intended value to guess.
pub fn explain_no_match(selector: &Selector, ty: &ProfileType, sets: &[LabelSet]) -> Vec<String> {
    if sets.is_empty() {
        return vec!["there are no profiles at all in this range".to_string()];
    }
    let selected: Vec<&LabelSet> = sets.iter().filter(|s| selector.matches_pairs(s)).collect();
    if selected.iter().any(|s| has_type(s, ty)) {
        // Series of the type exist, yet nothing merged (e.g. only profiles straddling the
        // range's start): no spelling is wrong, so no hint.
        return Vec::new();
    }
    if !selected.is_empty() {
        // The labels are right, the type is not.
        let types: BTreeSet<&str> = selected.iter().filter_map(|s| profile_type_of(s)).collect();
        let types: Vec<&str> = types.into_iter().collect();
        return vec![format!(
            "the selector matches series with profile types {} (not {})",
            types.join(", "),
            ty.name
        )];
    }
    let values = label_values(sets);
    let mut hints = Vec::new();
    for m in &selector.matchers {
        if m.op != MatchOp::Eq || m.value.is_empty() {
            continue;
        }
        match values.get(&m.name) {
            Some(have) if have.contains(&m.value) => {}
            Some(have) => match nearest(&m.value, have.iter().map(String::as_str)) {
                Some(v) => hints.push(format!("did you mean {}={v:?}?", m.name)),
                None => hints.push(format!(
                    "no series has {}={:?}; its values are {}",
                    m.name,
                    m.value,
                    preview(have, 10)
                )),
            },
            None => match nearest(&m.name, values.keys().map(String::as_str)) {
                Some(name) => hints.push(format!("did you mean {name}={:?}?", m.value)),
                None => hints.push(format!(
                    "no series has a label {}; the labels are {}",
                    m.name,
                    preview(&values.keys().cloned().collect(), 20)
                )),
            },
        }
    }
    hints
}

/// Up to `max` values, quoted, with how many more there are.
pub fn preview(values: &BTreeSet<String>, max: usize) -> String {
    let shown: Vec<String> = values.iter().take(max).map(|v| format!("{v:?}")).collect();
    let more = values.len().saturating_sub(max);
    if more > 0 {
        format!("{} (and {more} more)", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> LabelSet {
        let mut v: LabelSet = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        v.sort();
        v
    }

    fn stored() -> Vec<LabelSet> {
        vec![
            set(&[("__name__", "process_cpu"), ("service_name", "scraper")]),
            set(&[("__name__", "memory"), ("service_name", "scraper")]),
            set(&[("__name__", "process_cpu"), ("service_name", "collector")]),
        ]
    }

    #[test]
    fn explains_why_nothing_matched() {
        let cpu = ProfileType::parse("process_cpu").expect("type");
        let goroutine = ProfileType::parse("goroutine").expect("type");
        let cases: &[(&str, &ProfileType, Vec<LabelSet>, &[&str])] = &[
            (
                r#"{service_name="scrapr"}"#,
                &cpu,
                stored(),
                &[r#"did you mean service_name="scraper"?"#],
            ),
            (
                r#"{servce_name="scraper"}"#,
                &cpu,
                stored(),
                &[r#"did you mean service_name="scraper"?"#],
            ),
            (
                r#"{service_name="zzz"}"#,
                &cpu,
                stored(),
                &[r#"no series has service_name="zzz"; its values are "collector", "scraper""#],
            ),
            (
                r#"{service_name="scraper"}"#,
                &goroutine,
                stored(),
                &[
                    "the selector matches series with profile types memory, process_cpu (not goroutine)",
                ],
            ),
            (
                r#"{service_name="x"}"#,
                &cpu,
                Vec::new(),
                &["there are no profiles at all in this range"],
            ),
            // Nothing is misspelt.
            (r#"{service_name="scraper"}"#, &cpu, stored(), &[]),
            // A regex has no single intended value: no guess.
            (r#"{service_name=~"scrapr.*"}"#, &cpu, stored(), &[]),
        ];
        for (query, ty, sets, want) in cases {
            let selector = Selector::parse(query).expect("selector");
            let got = explain_no_match(&selector, ty, sets);
            assert_eq!(got, *want, "{query}");
        }
    }

    #[test]
    fn nearest_is_a_likely_typo_only() {
        let cases: &[(&str, &[&str], Option<&str>)] = &[
            ("scrapr", &["scraper", "collector"], Some("scraper")),
            ("Scraper", &["scraper"], Some("scraper")),
            ("api", &["app", "web"], Some("app")),
            ("scraper", &["scraper"], None),
            ("db", &["collector"], None),
            (
                "checkout-service",
                &["checkout-servcie", "cart"],
                Some("checkout-servcie"),
            ),
        ];
        for (name, candidates, want) in cases {
            assert_eq!(nearest(name, candidates.iter().copied()), *want, "{name}");
        }
    }

    #[test]
    fn series_group_by_public_labels_with_their_types() {
        let mut sets = stored();
        sets.push(set(&[
            ("__name__", "process_cpu"),
            (
                "__profile_type__",
                "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
            ),
            ("service_name", "remote"),
        ]));
        let lines: Vec<String> = group_series(&sets)
            .iter()
            .map(|(l, t)| format!("{} {t:?}", format_labels(l)))
            .collect();
        assert_eq!(
            lines,
            [
                r#"{service_name="collector"} {"process_cpu"}"#,
                r#"{service_name="remote"} {"process_cpu:cpu:nanoseconds:cpu:nanoseconds"}"#,
                r#"{service_name="scraper"} {"memory", "process_cpu"}"#,
            ]
        );
        let cpu = ProfileType::parse("process_cpu").expect("type");
        assert_eq!(sets.iter().filter(|s| has_type(s, &cpu)).count(), 3);
    }
}
