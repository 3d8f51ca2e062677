//! Alloy's `service_name` for a profile whose target sets none, shared by the components that
//! produce profiles from discovered targets.

/// The pod's `pyroscope.io/service_name` annotation, then `<prefix><namespace>/<container>`,
/// then the Docker container or Swarm service name, then `<prefix>unspecified`. `get` returns a
/// label's value (empty counts as missing). `pyroscope.scrape` uses no prefix and
/// `pyroscope.ebpf` uses `ebpf/`, as Alloy's components do.
pub fn infer<'a>(get: impl Fn(&str) -> Option<&'a str>, prefix: &str) -> String {
    let get = |k: &str| get(k).filter(|v| !v.is_empty());
    if let Some(name) = get("__meta_kubernetes_pod_annotation_pyroscope_io_service_name") {
        return name.to_string();
    }
    if let (Some(ns), Some(container)) = (
        get("__meta_kubernetes_namespace"),
        get("__meta_kubernetes_pod_container_name"),
    ) {
        return format!("{prefix}{ns}/{container}");
    }
    [
        "__meta_docker_container_name",
        "__meta_dockerswarm_container_label_service_name",
        "__meta_dockerswarm_service_name",
    ]
    .into_iter()
    .find_map(get)
    .map_or_else(|| format!("{prefix}unspecified"), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infers_in_alloys_order() {
        // (labels, prefix, expected)
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
        let cases: [Case; 6] = [
            (&[], "", "unspecified"),
            (&[], "ebpf/", "ebpf/unspecified"),
            (
                &[
                    ("__meta_kubernetes_namespace", "otel"),
                    ("__meta_kubernetes_pod_container_name", "collector"),
                    ("__meta_docker_container_name", "ignored"),
                ],
                "ebpf/",
                "ebpf/otel/collector",
            ),
            (
                &[
                    (
                        "__meta_kubernetes_pod_annotation_pyroscope_io_service_name",
                        "svc",
                    ),
                    ("__meta_kubernetes_namespace", "otel"),
                    ("__meta_kubernetes_pod_container_name", "collector"),
                ],
                "",
                "svc",
            ),
            // An empty label counts as missing.
            (
                &[
                    ("__meta_kubernetes_namespace", ""),
                    ("__meta_kubernetes_pod_container_name", "c"),
                    ("__meta_dockerswarm_service_name", "swarm"),
                ],
                "",
                "swarm",
            ),
            (&[("__meta_docker_container_name", "web")], "ebpf/", "web"),
        ];
        for (labels, prefix, want) in cases {
            let get = |k: &str| labels.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
            assert_eq!(infer(get, prefix), want, "{labels:?}");
        }
    }
}
