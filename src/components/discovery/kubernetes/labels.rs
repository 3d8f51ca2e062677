//! Building blocks shared by every role's target builder: Prometheus' label-name sanitising and
//! the `<prefix>_label_*` / `_labelpresent_*` / `_annotation_*` / `_annotationpresent_*`
//! families.

use std::collections::BTreeMap;

use crate::labels::LabelSet;

/// `__meta_kubernetes_namespace`, set by every namespaced role.
pub const NAMESPACE: &str = "__meta_kubernetes_namespace";

/// Prometheus' `strutil.SanitizeLabelName`: every code point outside `[a-zA-Z0-9_]` becomes one
/// `_`, so `app.kubernetes.io/name` becomes `app_kubernetes_io_name`. Multi-byte characters
/// become a single `_`, as Go ranges over runes.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Sets `name` to `value`; empty values are skipped, because an empty label is an absent label
/// for everything downstream (relabel, scrape, write).
pub fn set(labels: &mut LabelSet, name: &str, value: &str) {
    if !value.is_empty() {
        labels.set(name, value);
    }
}

/// Adds `<prefix>label_<n>` = value and `<prefix>labelpresent_<n>` = `true` for every label,
/// and the same with `annotation` for every annotation. `prefix` ends in `_`, e.g.
/// `__meta_kubernetes_pod_`.
pub fn add_metadata(
    labels: &mut LabelSet,
    prefix: &str,
    object_labels: Option<&BTreeMap<String, String>>,
    annotations: Option<&BTreeMap<String, String>>,
) {
    add_family(labels, prefix, "label", object_labels);
    add_family(labels, prefix, "annotation", annotations);
}

fn add_family(
    labels: &mut LabelSet,
    prefix: &str,
    kind: &str,
    map: Option<&BTreeMap<String, String>>,
) {
    let Some(map) = map else { return };
    let mut name = String::with_capacity(prefix.len() + kind.len() + 40);
    for (k, v) in map {
        let key = sanitize(k);
        name.clear();
        name.push_str(prefix);
        name.push_str(kind);
        name.push('_');
        name.push_str(&key);
        set(labels, &name, v);
        name.clear();
        name.push_str(prefix);
        name.push_str(kind);
        name.push_str("present_");
        name.push_str(&key);
        labels.set(&name, "true");
    }
}

/// Go's `net.JoinHostPort`: IPv6 addresses (anything with a `:`) are bracketed.
pub fn join_host_port(host: &str, port: impl std::fmt::Display) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_replaces_each_code_point() {
        let cases = [
            ("app.kubernetes.io/name", "app_kubernetes_io_name"),
            (
                "opentelemetry-operator-config/sha256",
                "opentelemetry_operator_config_sha256",
            ),
            ("pyroscope.io/service_name", "pyroscope_io_service_name"),
            ("plain_Name9", "plain_Name9"),
            ("héllo", "h_llo"),
            ("日本", "__"),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(sanitize(input), want, "{input}");
        }
    }

    #[test]
    fn metadata_families_mark_presence_even_for_empty_values() {
        let labels_in: BTreeMap<String, String> = [
            ("app".to_string(), "web".to_string()),
            ("empty".to_string(), String::new()),
        ]
        .into();
        let ann: BTreeMap<String, String> = [("a.b/c".to_string(), "v".to_string())].into();
        let mut l = LabelSet::new();
        add_metadata(
            &mut l,
            "__meta_kubernetes_pod_",
            Some(&labels_in),
            Some(&ann),
        );
        let got: Vec<(&str, &str)> = l.iter().collect();
        assert_eq!(
            got,
            [
                ("__meta_kubernetes_pod_annotation_a_b_c", "v"),
                ("__meta_kubernetes_pod_annotationpresent_a_b_c", "true"),
                ("__meta_kubernetes_pod_label_app", "web"),
                ("__meta_kubernetes_pod_labelpresent_app", "true"),
                ("__meta_kubernetes_pod_labelpresent_empty", "true"),
            ]
        );
    }

    #[test]
    fn host_port_join_brackets_ipv6() {
        assert_eq!(join_host_port("10.0.0.5", 8080), "10.0.0.5:8080");
        assert_eq!(join_host_port("fd00::7", 8080), "[fd00::7]:8080");
    }
}
