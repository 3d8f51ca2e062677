//! Prometheus target groups, the format of `file_sd` files and `http_sd` answers, and the
//! targets they stand for.
//!
//! A document is a list of groups, `[{"targets": ["host:port", ...], "labels": {...}}]`, JSON
//! or YAML. Each target address becomes one target whose labels are, in order of precedence
//! (Prometheus' `targetgroup.Group` decoding, the SD's meta label, Alloy's flattening in
//! `discovery.go`):
//!
//! 1. `__address__` = the address (a target's own labels beat its group's);
//! 2. the discovery's meta label (`__meta_filepath`, `__meta_url`), which Prometheus writes
//!    into the group's labels after decoding, so a group cannot set it;
//! 3. the group's `labels`.
//!
//! What is refused, as Prometheus refuses it: a document that is not a list, a `null` group
//! ("nil target group item found"), a field other than `targets` and `labels` (JSON matches the
//! two case-insensitively, as Go's `encoding/json` does; YAML is case-sensitive and strict), an
//! empty label name (label names are otherwise free, Prometheus 3's UTF-8 names), and values that
//! are lists or maps. `null` addresses and label values are empty strings (Go's zero value),
//! and an empty value is no label at all here, as everywhere in `LabelSet`. YAML scalars that are
//! not strings (`port: 8080`, `debug: True`, `ratio: 1.10`) are their text exactly as written,
//! as yaml.v2 decodes them into a Go string; a YAML stream is read up to its first document
//! (see `yaml`).

use std::sync::Arc;

use crate::labels::LabelSet;

mod yaml;

pub use yaml::from_yaml;

/// The label every target's address is in.
pub const ADDRESS_LABEL: &str = "__address__";

/// One group: addresses and the labels they share.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    pub targets: Vec<String>,
    /// A name given twice keeps its last value; the order means nothing.
    pub labels: Vec<(String, String)>,
}

/// Why a document is not a list of target groups.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GroupError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, GroupError> {
    Err(GroupError(msg.into()))
}

/// Parses a JSON document (a file ending in `.json`, an `http_sd` answer).
pub fn from_json(bytes: &[u8]) -> Result<Vec<Group>, GroupError> {
    use serde_json::Value as J;
    let doc: J = serde_json::from_slice(bytes).map_err(|e| GroupError(e.to_string()))?;
    let items = match doc {
        J::Null => return Ok(Vec::new()),
        J::Array(items) => items,
        other => {
            return err(format!(
                "expected a list of target groups, found {}",
                json_kind(&other)
            ));
        }
    };
    let mut groups = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let fields = match item {
            J::Null => return err("nil target group item found"),
            J::Object(fields) => fields,
            other => {
                return err(format!(
                    "target group {i}: expected an object, found {}",
                    json_kind(&other)
                ));
            }
        };
        let mut group = Group::default();
        for (key, value) in fields {
            // encoding/json matches field names case-insensitively.
            if key.eq_ignore_ascii_case("targets") {
                group.targets = json_targets(i, value)?;
            } else if key.eq_ignore_ascii_case("labels") {
                group.labels = json_labels(i, value)?;
            } else {
                return err(format!("target group {i}: unknown field {key:?}"));
            }
        }
        groups.push(group);
    }
    Ok(groups)
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value as J;
    match v {
        J::Null => "null",
        J::Bool(_) => "a boolean",
        J::Number(_) => "a number",
        J::String(_) => "a string",
        J::Array(_) => "a list",
        J::Object(_) => "an object",
    }
}

fn json_string(i: usize, what: &str, v: serde_json::Value) -> Result<String, GroupError> {
    match v {
        serde_json::Value::Null => Ok(String::new()),
        serde_json::Value::String(s) => Ok(s),
        other => err(format!(
            "target group {i}: {what} must be a string, found {}",
            json_kind(&other)
        )),
    }
}

fn json_targets(i: usize, v: serde_json::Value) -> Result<Vec<String>, GroupError> {
    match v {
        serde_json::Value::Null => Ok(Vec::new()),
        serde_json::Value::Array(items) => items
            .into_iter()
            .map(|t| json_string(i, "a target", t))
            .collect(),
        other => err(format!(
            "target group {i}: targets must be a list of strings, found {}",
            json_kind(&other)
        )),
    }
}

fn json_labels(i: usize, v: serde_json::Value) -> Result<Vec<(String, String)>, GroupError> {
    match v {
        serde_json::Value::Null => Ok(Vec::new()),
        serde_json::Value::Object(m) => m
            .into_iter()
            .map(|(k, v)| {
                let what = format!("the value of label {k:?}");
                Ok((label_name(i, k)?, json_string(i, &what, v)?))
            })
            .collect(),
        other => err(format!(
            "target group {i}: labels must be a map of strings, found {}",
            json_kind(&other)
        )),
    }
}

fn label_name(i: usize, name: String) -> Result<String, GroupError> {
    // Prometheus 3 validates names as UTF-8 (`model.UTF8Validation`): any non-empty string.
    if name.is_empty() {
        return err(format!("target group {i}: \"\" is not a valid label name"));
    }
    Ok(name)
}

/// The targets of `groups`, in document order: each address with its group's labels and the
/// meta label `meta_name = meta_value` (see the module docs for which wins).
pub fn to_targets(groups: &[Group], meta_name: &str, meta_value: &str) -> Vec<Arc<LabelSet>> {
    let mut out = Vec::new();
    for group in groups {
        let mut base = LabelSet::with_capacity(group.labels.len() + 2);
        for (name, value) in &group.labels {
            base.set(name, value);
        }
        base.set(meta_name, meta_value);
        for address in &group.targets {
            let mut target = base.clone();
            target.set(ADDRESS_LABEL, address);
            out.push(Arc::new(target));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn maps(targets: &[Arc<LabelSet>]) -> Vec<BTreeMap<String, String>> {
        targets.iter().map(|t| t.to_map()).collect()
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The same documents in both formats give the same targets; the labels are those
    /// Prometheus' file_sd documentation lists (`__address__`, the group's labels and
    /// `__meta_filepath`), with its precedence.
    #[test]
    fn documents_become_targets_with_prometheus_precedence() {
        type Case = (
            &'static str,
            &'static str,
            &'static str,
            Vec<Vec<(&'static str, &'static str)>>,
        );
        let cases: Vec<Case> = vec![
            (
                "two groups, one target each",
                r#"[{"targets": ["a:1"], "labels": {"env": "prod"}}, {"targets": ["b:2"]}]"#,
                "- targets: ['a:1']\n  labels: {env: prod}\n- targets: ['b:2']\n",
                vec![
                    vec![
                        ("__address__", "a:1"),
                        ("__meta_filepath", "/sd/t.x"),
                        ("env", "prod"),
                    ],
                    vec![("__address__", "b:2"), ("__meta_filepath", "/sd/t.x")],
                ],
            ),
            (
                "every address of a group shares its labels, in order",
                r#"[{"targets": ["b:2", "a:1", "b:2"], "labels": {"job": "node"}}]"#,
                "- targets: ['b:2', 'a:1', 'b:2']\n  labels:\n    job: node\n",
                vec![
                    vec![
                        ("__address__", "b:2"),
                        ("__meta_filepath", "/sd/t.x"),
                        ("job", "node"),
                    ],
                    vec![
                        ("__address__", "a:1"),
                        ("__meta_filepath", "/sd/t.x"),
                        ("job", "node"),
                    ],
                    vec![
                        ("__address__", "b:2"),
                        ("__meta_filepath", "/sd/t.x"),
                        ("job", "node"),
                    ],
                ],
            ),
            (
                "the address beats a group's __address__; the meta label beats a group's",
                r#"[{"targets": ["a:1"], "labels": {"__address__": "x:9", "__meta_filepath": "fake"}}]"#,
                "- targets: ['a:1']\n  labels: {__address__: 'x:9', __meta_filepath: fake}\n",
                vec![vec![("__address__", "a:1"), ("__meta_filepath", "/sd/t.x")]],
            ),
            (
                "other __ and __meta_ labels pass through for relabelling",
                r#"[{"targets": ["a:1"], "labels": {"__scheme__": "https", "__meta_dc": "eu"}}]"#,
                "- targets: ['a:1']\n  labels: {__scheme__: https, __meta_dc: eu}\n",
                vec![vec![
                    ("__address__", "a:1"),
                    ("__meta_dc", "eu"),
                    ("__meta_filepath", "/sd/t.x"),
                    ("__scheme__", "https"),
                ]],
            ),
            (
                "empty values and null are no label; a group without targets has none",
                r#"[{"targets": ["a:1"], "labels": {"empty": "", "nil": null}}, {"labels": {"x": "y"}}, {"targets": []}]"#,
                "- targets: ['a:1']\n  labels: {empty: '', nil: ~}\n- labels: {x: y}\n- targets: []\n",
                vec![vec![("__address__", "a:1"), ("__meta_filepath", "/sd/t.x")]],
            ),
            (
                "an empty address leaves __address__ out, as an empty value does",
                r#"[{"targets": ["", null]}]"#,
                "- targets: ['', ~]\n",
                vec![
                    vec![("__meta_filepath", "/sd/t.x")],
                    vec![("__meta_filepath", "/sd/t.x")],
                ],
            ),
            (
                "UTF-8 label names (Prometheus 3)",
                r#"[{"targets": ["a:1"], "labels": {"k8s.io/app": "web", "ünï": "ç"}}]"#,
                "- targets: ['a:1']\n  labels: {'k8s.io/app': web, 'ünï': 'ç'}\n",
                vec![vec![
                    ("__address__", "a:1"),
                    ("__meta_filepath", "/sd/t.x"),
                    ("k8s.io/app", "web"),
                    ("ünï", "ç"),
                ]],
            ),
            ("an empty list", "[]", "[]\n", vec![]),
            ("null", "null", "~\n", vec![]),
        ];
        for (name, json, yaml, want) in cases {
            let want: Vec<_> = want.iter().map(|t| map(t)).collect();
            let from_j = from_json(json.as_bytes()).unwrap_or_else(|e| panic!("{name}: json: {e}"));
            let from_y = from_yaml(yaml.as_bytes()).unwrap_or_else(|e| panic!("{name}: yaml: {e}"));
            let (tj, ty) = (
                maps(&to_targets(&from_j, "__meta_filepath", "/sd/t.x")),
                maps(&to_targets(&from_y, "__meta_filepath", "/sd/t.x")),
            );
            assert_eq!(tj, ty, "{name}: formats disagree");
            assert_eq!(tj, want, "{name}");
        }
    }

    #[test]
    fn json_field_names_match_case_insensitively_as_in_go() {
        let g = from_json(br#"[{"Targets": ["a:1"], "LABELS": {"k": "v"}}]"#).expect("valid");
        assert_eq!(g[0].targets, ["a:1"]);
        assert_eq!(g[0].labels, [("k".to_string(), "v".to_string())]);
        // YAML (yaml.v2 strict) does not.
        assert!(from_yaml(b"- Targets: ['a:1']\n").is_err());
    }

    /// yaml.v2 decodes a scalar into a Go string as the text written (`n.value`), so nothing
    /// is reformatted: each row is a label value and a target, expected back unchanged.
    #[test]
    fn yaml_scalars_are_their_text_as_written() {
        let cases: &[(&str, &str)] = &[
            ("80", "80"),
            ("true", "true"),
            ("0.5", "0.5"),
            ("1.10", "1.10"),
            ("007", "007"),
            ("True", "True"),
            ("1e3", "1e3"),
            ("0x1F", "0x1F"),
            ("'quoted 1.10'", "quoted 1.10"),
            ("\"x\\ty\"", "x\ty"),
            ("~", ""),
            ("null", ""),
        ];
        for (written, want) in cases {
            let doc = format!("- targets: [{written}]\n  labels: {{v: {written}}}\n");
            let g = from_yaml(doc.as_bytes()).unwrap_or_else(|e| panic!("{written}: {e}"));
            assert_eq!(g[0].targets, [*want], "{written}: target");
            assert_eq!(
                g[0].labels,
                [("v".to_string(), want.to_string())],
                "{written}"
            );
        }
        // Label names are their text too.
        let g = from_yaml(b"- labels: {1.10: a, 007: b}\n").expect("valid");
        let names: Vec<_> = g[0].labels.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["1.10", "007"]);
    }

    /// yaml.v2's Unmarshal reads only the first document; no document is an empty list.
    #[test]
    fn yaml_streams_give_their_first_document() {
        let cases: &[(&str, &str, Vec<&str>)] = &[
            ("empty", "", vec![]),
            ("blank", "\n  \n", vec![]),
            ("comments only", "# generated\n# nothing yet\n", vec![]),
            ("a document marker only", "---\n", vec![]),
            (
                "two documents",
                "---\n- targets: ['a:1']\n---\n- targets: ['b:2']\n",
                vec!["a:1"],
            ),
            (
                "a bad second document",
                "- targets: ['a:1']\n---\n- targets: [b\n",
                vec!["a:1"],
            ),
            ("an end marker", "- targets: ['a:1']\n...\n", vec!["a:1"]),
        ];
        for (name, doc, want) in cases {
            let g = from_yaml(doc.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
            let got: Vec<_> = g
                .iter()
                .flat_map(|g| g.targets.iter().map(String::as_str))
                .collect();
            assert_eq!(got, *want, "{name}");
        }
    }

    #[test]
    fn bad_documents_are_refused_with_the_reason() {
        let json: &[(&str, &str)] = &[
            ("", "EOF"),
            (
                "{\"targets\": []}",
                "expected a list of target groups, found an object",
            ),
            ("[null]", "nil target group item found"),
            ("[1]", "target group 0: expected an object, found a number"),
            (
                r#"[{"targets": ["a"], "extra": 1}]"#,
                "target group 0: unknown field \"extra\"",
            ),
            (
                r#"[{"targets": "a:1"}]"#,
                "targets must be a list of strings, found a string",
            ),
            (
                r#"[{"targets": [1]}]"#,
                "a target must be a string, found a number",
            ),
            (
                r#"[{"labels": {"": "v"}}]"#,
                "\"\" is not a valid label name",
            ),
            (
                r#"[{}, {"labels": {"k": 1}}]"#,
                "target group 1: the value of label \"k\" must be a string",
            ),
            (
                r#"[{"labels": ["k"]}]"#,
                "labels must be a map of strings, found a list",
            ),
            ("[{\"targets\": [\"a\"]", "EOF"),
        ];
        for (doc, want) in json {
            let e = from_json(doc.as_bytes()).expect_err(doc);
            assert!(e.0.contains(want), "{doc}: {e} lacks {want:?}");
        }
        let yaml: &[(&str, &str)] = &[
            ("targets: [a]\n", "expected a list of target groups"),
            ("- 1\n", "expected target group 0 to be a map"),
            ("- targets: a\n", "targets to be a list of strings"),
            ("- labels: [a]\n", "labels to be a map of strings"),
            ("- targets: [a]\n  targets: [b]\n", "given twice"),
            ("- ~\n", "nil target group item found"),
            ("- targets: [a]\n  extra: 1\n", "unknown field \"extra\""),
            ("- targets: [[a]]\n", "expected a string"),
            ("- labels: {'': v}\n", "\"\" is not a valid label name"),
            ("- labels: {k: [v]}\n", "expected a string"),
            ("- labels: {[k]: v}\n", "expected a string"),
            ("- targets: [a\n", ""),
            ("- labels: {k: a, k: b}\n", "duplicate"),
        ];
        for (doc, want) in yaml {
            let e = from_yaml(doc.as_bytes()).expect_err(doc);
            assert!(e.0.contains(want), "{doc}: {e} lacks {want:?}");
        }
        // An empty YAML file is an empty list (yaml.v2), not an error.
        assert_eq!(from_yaml(b"\n"), Ok(Vec::new()));
    }
}
