//! Helpers shared by the role builders' table tests: objects from JSON, caches, and labels
//! compared as sorted pairs.

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Service};
use serde_json::{Value, json};

use super::cache::Caches;
use crate::labels::LabelSet;

pub type Labels = Vec<(String, String)>;

pub fn obj<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("valid object")
}

/// Group labels plus target labels, as a target ends up; empty values are dropped because
/// Prometheus' tests spell absent labels as `""`.
pub fn expect(group: &[(&str, &str)], target: &[(&str, &str)]) -> Labels {
    let mut v: Labels = group
        .iter()
        .chain(target)
        .filter(|(_, v)| !v.is_empty())
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    v.sort();
    v
}

pub fn got(t: &LabelSet) -> Labels {
    t.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

pub fn key(ns: &str, name: &str) -> (String, String) {
    (ns.to_string(), name.to_string())
}

pub fn add_pod(c: &mut Caches, v: Value) {
    let p: Pod = obj(v);
    let k = key(
        p.metadata.namespace.as_deref().unwrap_or(""),
        p.metadata.name.as_deref().unwrap_or(""),
    );
    c.pods.insert(k, p);
}

pub fn with_pods(pods: Vec<Value>) -> Caches {
    let mut c = Caches::default();
    for p in pods {
        add_pod(&mut c, p);
    }
    c
}

pub fn add_service(c: &mut Caches, v: Value) {
    let s: Service = obj(v);
    let k = key(
        s.metadata.namespace.as_deref().unwrap_or(""),
        s.metadata.name.as_deref().unwrap_or(""),
    );
    c.services.insert(k, s);
}

/// The `default/<name>` service the endpoints and endpoint slice tests attach, as Prometheus'
/// tests create it.
pub fn test_service(name: &str) -> Value {
    json!({
        "metadata": { "name": name, "namespace": "default", "labels": { "app/name": "test" } }
    })
}

/// `TestEndpointsDiscoveryAdd`'s pod, also `TestEndpointSliceDiscoveryAdd`'s.
pub fn two_container_pod() -> Value {
    json!({
        "metadata": { "name": "testpod", "namespace": "default", "uid": "deadbeef" },
        "spec": {
            "nodeName": "testnode",
            "containers": [
                {
                    "name": "c1",
                    "image": "c1:latest",
                    "ports": [{ "name": "mainport", "containerPort": 9000, "protocol": "TCP" }],
                },
                {
                    "name": "c2",
                    "image": "c2:latest",
                    "ports": [{ "name": "sideport", "containerPort": 9001, "protocol": "TCP" }],
                },
            ],
        },
        "status": { "hostIP": "2.3.4.5", "podIP": "1.2.3.4" },
    })
}

/// The pod labels of [`two_container_pod`] in Prometheus' tests (no phase, no Ready
/// condition), with the pod IP the test gives.
pub fn testpod_labels(ip: &str) -> Vec<(&str, &str)> {
    vec![
        ("__meta_kubernetes_pod_name", "testpod"),
        ("__meta_kubernetes_pod_ip", ip),
        ("__meta_kubernetes_pod_ready", "unknown"),
        ("__meta_kubernetes_pod_phase", ""),
        ("__meta_kubernetes_pod_node_name", "testnode"),
        ("__meta_kubernetes_pod_host_ip", "2.3.4.5"),
        ("__meta_kubernetes_pod_uid", "deadbeef"),
    ]
}

/// Prometheus' `makeNode(name, "", "", {"az": az}, nil, nil)`.
pub fn add_node(c: &mut Caches, name: &str, az: &str) {
    let n: Node = obj(json!({
        "metadata": { "name": name, "labels": { "az": az } },
        "status": { "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } } },
    }));
    c.nodes.insert(key("", name), n);
}

/// The labels `attach_metadata { namespace = true }` adds for the namespace of
/// [`add_namespace`], with the namespace label itself.
pub const TEST_NS_LABELS: &[(&str, &str)] = &[
    ("__meta_kubernetes_namespace", "test-ns"),
    ("__meta_kubernetes_namespace_annotation_owner", "platform"),
    (
        "__meta_kubernetes_namespace_annotationpresent_owner",
        "true",
    ),
    ("__meta_kubernetes_namespace_annotation_version", "v1.2.3"),
    (
        "__meta_kubernetes_namespace_annotationpresent_version",
        "true",
    ),
    (
        "__meta_kubernetes_namespace_label_environment",
        "production",
    ),
    (
        "__meta_kubernetes_namespace_labelpresent_environment",
        "true",
    ),
    ("__meta_kubernetes_namespace_label_team", "backend"),
    ("__meta_kubernetes_namespace_labelpresent_team", "true"),
];

/// Prometheus' `test-ns` namespace, as its namespace-metadata tests create it.
pub fn add_namespace(c: &mut Caches) {
    let n: Namespace = obj(json!({
        "metadata": {
            "name": "test-ns",
            "labels": { "environment": "production", "team": "backend" },
            "annotations": { "owner": "platform", "version": "v1.2.3" },
        }
    }));
    c.namespaces.insert(key("", "test-ns"), n);
}

/// The caches as the watchers keep them: every object slimmed.
pub fn slimmed(c: &Caches) -> Caches {
    let mut s = Caches::default();
    for (k, p) in c.pods.iter() {
        s.pods.insert(k.clone(), super::pod::slim(p.clone()));
    }
    for (k, n) in c.nodes.iter() {
        s.nodes.insert(k.clone(), super::node::slim(n.clone()));
    }
    for (k, v) in c.services.iter() {
        s.services
            .insert(k.clone(), super::service::slim(v.clone()));
    }
    for (k, n) in c.namespaces.iter() {
        s.namespaces.insert(k.clone(), n.clone());
    }
    s
}

/// Compares built targets with the expected ones, target by target, naming the case.
pub fn assert_targets(case: &str, actual: &[LabelSet], want: &[Labels]) {
    let actual: Vec<Labels> = actual.iter().map(got).collect();
    assert_eq!(actual.len(), want.len(), "{case}: target count");
    for (i, (a, w)) in actual.iter().zip(want).enumerate() {
        assert_eq!(a, w, "{case}: target {i}");
    }
}
