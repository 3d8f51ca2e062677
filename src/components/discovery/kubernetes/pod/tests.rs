//! Pod targets compared field by field with what Prometheus' pod role documents and produces
//! (spec relabel-and-kubernetes §C.2–C.3).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde_json::json;

use super::{slim, targets};
use crate::components::discovery::kubernetes::AttachMetadata;
use crate::components::discovery::kubernetes::cache::Caches;

type Labels = BTreeMap<String, String>;

fn pod(v: serde_json::Value) -> Pod {
    serde_json::from_value(v).expect("valid pod JSON")
}

fn build(p: &Pod, caches: &Caches, attach: AttachMetadata) -> Vec<Labels> {
    targets(p, caches, attach)
        .iter()
        .map(|t| t.to_map())
        .collect()
}

fn merged(group: &[(&str, &str)], target: &[(&str, &str)]) -> Labels {
    group
        .iter()
        .chain(target)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A collector pod as the OpenTelemetry operator creates it: four ports, a port-less sidecar,
/// an init container with a port, labels and annotations that need sanitising.
fn collector() -> serde_json::Value {
    json!({
        "metadata": {
            "name": "pprof-collector-7d9f", "namespace": "otel", "uid": "uid-1",
            "resourceVersion": "17",
            "labels": {
                "app.kubernetes.io/component": "opentelemetry-collector",
                "app.kubernetes.io/name": "pprof-collector",
                "app.kubernetes.io/version": "0.112.0",
                "empty": ""
            },
            "annotations": {
                "opentelemetry-operator-config/sha256": "abc123",
                "profiles.grafana.com/cpu.scrape": "true"
            },
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": "not-controller", "uid": "u0"},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "pprof-collector-7d9f",
                 "uid": "u1", "controller": true}
            ],
            "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:x": {}}}]
        },
        "spec": {
            "nodeName": "node-a",
            "containers": [
                {"name": "otc-container", "image": "otel/collector:0.112.0",
                 "env": [{"name": "GOGC", "value": "80"}],
                 "ports": [
                    {"name": "otlp-grpc", "containerPort": 4317, "protocol": "TCP"},
                    {"name": "otlp-http", "containerPort": 4318, "protocol": "TCP"},
                    {"name": "pprof", "containerPort": 1777, "protocol": "TCP"},
                    {"containerPort": 8888}
                 ]},
                {"name": "sidecar", "image": "busybox"}
            ],
            "initContainers": [
                {"name": "init-config", "image": "busybox:1.36",
                 "ports": [{"name": "dbg", "containerPort": 9999, "protocol": "UDP"}]}
            ],
            "volumes": [{"name": "cfg", "configMap": {"name": "c"}}]
        },
        "status": {
            "phase": "Running", "podIP": "10.1.2.3", "hostIP": "192.168.0.10",
            "podIPs": [{"ip": "10.1.2.3"}, {"ip": "fd00::3"}],
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "False"}
            ],
            "containerStatuses": [
                {"name": "otc-container", "containerID": "containerd://c1", "image": "i",
                 "imageID": "x", "ready": true, "restartCount": 0},
                {"name": "sidecar", "image": "i", "imageID": "x", "ready": true, "restartCount": 0}
            ],
            "initContainerStatuses": [
                {"name": "init-config", "containerID": "containerd://i1", "image": "i",
                 "imageID": "x", "ready": false, "restartCount": 0}
            ]
        }
    })
}

const COLLECTOR_GROUP: &[(&str, &str)] = &[
    ("__meta_kubernetes_namespace", "otel"),
    ("__meta_kubernetes_pod_name", "pprof-collector-7d9f"),
    ("__meta_kubernetes_pod_ip", "10.1.2.3"),
    ("__meta_kubernetes_pod_ready", "false"),
    ("__meta_kubernetes_pod_phase", "Running"),
    ("__meta_kubernetes_pod_node_name", "node-a"),
    ("__meta_kubernetes_pod_host_ip", "192.168.0.10"),
    ("__meta_kubernetes_pod_uid", "uid-1"),
    ("__meta_kubernetes_pod_controller_kind", "ReplicaSet"),
    (
        "__meta_kubernetes_pod_controller_name",
        "pprof-collector-7d9f",
    ),
    (
        "__meta_kubernetes_pod_label_app_kubernetes_io_component",
        "opentelemetry-collector",
    ),
    (
        "__meta_kubernetes_pod_labelpresent_app_kubernetes_io_component",
        "true",
    ),
    (
        "__meta_kubernetes_pod_label_app_kubernetes_io_name",
        "pprof-collector",
    ),
    (
        "__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name",
        "true",
    ),
    (
        "__meta_kubernetes_pod_label_app_kubernetes_io_version",
        "0.112.0",
    ),
    (
        "__meta_kubernetes_pod_labelpresent_app_kubernetes_io_version",
        "true",
    ),
    ("__meta_kubernetes_pod_labelpresent_empty", "true"),
    (
        "__meta_kubernetes_pod_annotation_opentelemetry_operator_config_sha256",
        "abc123",
    ),
    (
        "__meta_kubernetes_pod_annotationpresent_opentelemetry_operator_config_sha256",
        "true",
    ),
    (
        "__meta_kubernetes_pod_annotation_profiles_grafana_com_cpu_scrape",
        "true",
    ),
    (
        "__meta_kubernetes_pod_annotationpresent_profiles_grafana_com_cpu_scrape",
        "true",
    ),
];

fn collector_targets() -> Vec<Labels> {
    let otc = [
        ("__meta_kubernetes_pod_container_name", "otc-container"),
        ("__meta_kubernetes_pod_container_id", "containerd://c1"),
        (
            "__meta_kubernetes_pod_container_image",
            "otel/collector:0.112.0",
        ),
        ("__meta_kubernetes_pod_container_init", "false"),
    ];
    let port =
        |addr: &'static str, name: Option<&'static str>, number, proto: Option<&'static str>| {
            let mut t: Vec<(&str, &str)> = otc.to_vec();
            t.push(("__address__", addr));
            t.push(("__meta_kubernetes_pod_container_port_number", number));
            if let Some(n) = name {
                t.push(("__meta_kubernetes_pod_container_port_name", n));
            }
            if let Some(p) = proto {
                t.push(("__meta_kubernetes_pod_container_port_protocol", p));
            }
            merged(COLLECTOR_GROUP, &t)
        };
    vec![
        port("10.1.2.3:4317", Some("otlp-grpc"), "4317", Some("TCP")),
        port("10.1.2.3:4318", Some("otlp-http"), "4318", Some("TCP")),
        port("10.1.2.3:1777", Some("pprof"), "1777", Some("TCP")),
        // Unnamed port without a protocol: both labels absent (empty).
        port("10.1.2.3:8888", None, "8888", None),
        // Port-less container: bare IP, no port labels, no container ID yet.
        merged(
            COLLECTOR_GROUP,
            &[
                ("__address__", "10.1.2.3"),
                ("__meta_kubernetes_pod_container_name", "sidecar"),
                ("__meta_kubernetes_pod_container_image", "busybox"),
                ("__meta_kubernetes_pod_container_init", "false"),
            ],
        ),
        merged(
            COLLECTOR_GROUP,
            &[
                ("__address__", "10.1.2.3:9999"),
                ("__meta_kubernetes_pod_container_name", "init-config"),
                ("__meta_kubernetes_pod_container_id", "containerd://i1"),
                ("__meta_kubernetes_pod_container_image", "busybox:1.36"),
                ("__meta_kubernetes_pod_container_init", "true"),
                ("__meta_kubernetes_pod_container_port_name", "dbg"),
                ("__meta_kubernetes_pod_container_port_number", "9999"),
                ("__meta_kubernetes_pod_container_port_protocol", "UDP"),
            ],
        ),
    ]
}

#[test]
fn realistic_collector_pod_matches_prometheus_field_by_field() {
    let got = build(
        &pod(collector()),
        &Caches::default(),
        AttachMetadata::default(),
    );
    let want = collector_targets();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
}

#[test]
fn slim_pod_builds_the_same_targets() {
    let full = pod(collector());
    let slimmed = slim(full.clone());
    let c = Caches::default();
    let a = AttachMetadata::default();
    assert_eq!(build(&full, &c, a), build(&slimmed, &c, a));
    assert!(slimmed.metadata.managed_fields.is_none());
    let spec = slimmed.spec.expect("spec kept");
    assert!(spec.volumes.is_none());
    assert!(spec.containers[0].env.is_none());
}

#[test]
fn table_of_edge_cases() {
    struct Case {
        name: &'static str,
        pod: serde_json::Value,
        want: Vec<Vec<(&'static str, &'static str)>>,
    }
    let base_group = [
        ("__meta_kubernetes_namespace", "default"),
        ("__meta_kubernetes_pod_name", "p"),
        ("__meta_kubernetes_pod_ready", "unknown"),
    ];
    let cases = [
        Case {
            name: "no pod IP: no targets",
            pod: json!({"metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]},
                "status": {"phase": "Pending"}}),
            want: vec![],
        },
        Case {
            name: "empty pod IP: no targets",
            pod: json!({"metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c"}]},
                "status": {"podIP": ""}}),
            want: vec![],
        },
        Case {
            name: "IPv6: bracketed with a port, bare without",
            pod: json!({"metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [
                    {"name": "a", "ports": [{"containerPort": 6060, "protocol": "TCP"}]},
                    {"name": "b"}]},
                "status": {"podIP": "fd00::7"}}),
            want: vec![
                vec![
                    ("__address__", "[fd00::7]:6060"),
                    ("__meta_kubernetes_pod_ip", "fd00::7"),
                    ("__meta_kubernetes_pod_container_name", "a"),
                    ("__meta_kubernetes_pod_container_init", "false"),
                    ("__meta_kubernetes_pod_container_port_number", "6060"),
                    ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                ],
                vec![
                    ("__address__", "fd00::7"),
                    ("__meta_kubernetes_pod_ip", "fd00::7"),
                    ("__meta_kubernetes_pod_container_name", "b"),
                    ("__meta_kubernetes_pod_container_init", "false"),
                ],
            ],
        },
        Case {
            name: "duplicate ports are kept; succeeded pods are not filtered",
            pod: json!({"metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "a", "ports": [
                    {"containerPort": 80}, {"containerPort": 80}]}]},
                "status": {"podIP": "10.0.0.1", "phase": "Succeeded",
                    "conditions": [{"type": "Ready", "status": "Unknown"}]}}),
            want: vec![
                vec![
                    ("__address__", "10.0.0.1:80"),
                    ("__meta_kubernetes_pod_ip", "10.0.0.1"),
                    ("__meta_kubernetes_pod_phase", "Succeeded"),
                    ("__meta_kubernetes_pod_ready", "unknown"),
                    ("__meta_kubernetes_pod_container_name", "a"),
                    ("__meta_kubernetes_pod_container_init", "false"),
                    ("__meta_kubernetes_pod_container_port_number", "80"),
                ];
                2
            ],
        },
        Case {
            name: "no containers: no targets; ready true is lower-cased",
            pod: json!({"metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": []},
                "status": {"podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]}}),
            want: vec![],
        },
        Case {
            name: "owner without controller flag gives no controller labels",
            pod: json!({"metadata": {"name": "p", "namespace": "default",
                    "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "y", "uid": "u",
                        "controller": false}]},
                "spec": {"containers": [{"name": "a"}]},
                "status": {"podIP": "10.0.0.1"}}),
            want: vec![vec![
                ("__address__", "10.0.0.1"),
                ("__meta_kubernetes_pod_ip", "10.0.0.1"),
                ("__meta_kubernetes_pod_container_name", "a"),
                ("__meta_kubernetes_pod_container_init", "false"),
            ]],
        },
    ];
    for case in cases {
        let got = build(
            &pod(case.pod),
            &Caches::default(),
            AttachMetadata::default(),
        );
        let want: Vec<Labels> = case
            .want
            .iter()
            .map(|t| {
                // Later entries win, so a case can override a base label.
                merged(&base_group, t)
            })
            .collect();
        assert_eq!(got, want, "{}", case.name);
    }
}

#[test]
fn many_labels_and_annotations_are_all_present() {
    let mut labels = serde_json::Map::new();
    let mut annotations = serde_json::Map::new();
    for i in 0..60 {
        labels.insert(format!("example.com/label-{i}"), json!(format!("v{i}")));
        annotations.insert(format!("note.example.com/a.{i}"), json!("x".repeat(i)));
    }
    let p = pod(json!({"metadata": {"name": "p", "namespace": "default",
            "labels": labels, "annotations": annotations},
        "spec": {"containers": [{"name": "a", "ports": [{"containerPort": 1}]}]},
        "status": {"podIP": "10.0.0.1"}}));
    let got = build(&p, &Caches::default(), AttachMetadata::default());
    assert_eq!(got.len(), 1);
    let t = &got[0];
    for i in 0..60 {
        assert_eq!(
            t[&format!("__meta_kubernetes_pod_label_example_com_label_{i}")],
            format!("v{i}")
        );
        assert_eq!(
            t[&format!("__meta_kubernetes_pod_labelpresent_example_com_label_{i}")],
            "true"
        );
        let ann = format!("__meta_kubernetes_pod_annotation_note_example_com_a_{i}");
        // The empty annotation value (i = 0) is absent, its presence label is not.
        assert_eq!(
            t.get(&ann).map(String::as_str),
            (i > 0).then(|| "x".repeat(i)).as_deref()
        );
        assert_eq!(
            t[&format!("__meta_kubernetes_pod_annotationpresent_note_example_com_a_{i}")],
            "true"
        );
    }
}

#[test]
fn attach_metadata_adds_node_and_namespace_labels() {
    let mut caches = Caches::default();
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "node-a",
        "labels": {"topology.kubernetes.io/zone": "z1"}, "annotations": {"a/b": "c"}}}))
    .expect("node");
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "otel",
        "labels": {"team": "obs"}}}))
    .expect("namespace");
    caches.nodes.insert((String::new(), "node-a".into()), node);
    caches.namespaces.insert((String::new(), "otel".into()), ns);
    let attach = AttachMetadata {
        node: true,
        namespace: true,
    };
    let got = build(&pod(collector()), &caches, attach);
    assert_eq!(got.len(), 6);
    let t = &got[2];
    assert_eq!(t["__address__"], "10.1.2.3:1777");
    assert_eq!(t["__meta_kubernetes_node_name"], "node-a");
    assert_eq!(
        t["__meta_kubernetes_node_label_topology_kubernetes_io_zone"],
        "z1"
    );
    assert_eq!(
        t["__meta_kubernetes_node_labelpresent_topology_kubernetes_io_zone"],
        "true"
    );
    assert_eq!(t["__meta_kubernetes_node_annotation_a_b"], "c");
    assert_eq!(t["__meta_kubernetes_node_annotationpresent_a_b"], "true");
    assert_eq!(t["__meta_kubernetes_namespace_label_team"], "obs");
    assert_eq!(t["__meta_kubernetes_namespace_labelpresent_team"], "true");

    // A pod whose node is not (yet) known has no targets while node metadata is attached.
    let mut other = collector();
    other["spec"]["nodeName"] = json!("node-b");
    assert!(build(&pod(other), &caches, attach).is_empty());
}
