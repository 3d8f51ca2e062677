//! `role = "node"`: one target per node, at its kubelet port, exactly as Prometheus'
//! `discovery/kubernetes/node.go` (v3.13.2, the version Alloy links) builds it.
//!
//! Deliberate difference: a node with no address of a known type yields no targets (an empty
//! group, which removes earlier ones), where Prometheus logs a warning and sends no update, so
//! the node keeps whatever targets it had before. Such a node cannot be scraped either way.

use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus};

use super::attach;
use super::labels::{join_host_port, sanitize, set};
use super::pod::slim_meta;
use crate::labels::LabelSet;

const PROVIDER_ID: &str = "__meta_kubernetes_node_provider_id";
const CONDITION_PREFIX: &str = "__meta_kubernetes_node_condition_";
const ADDRESS_PREFIX: &str = "__meta_kubernetes_node_address_";

/// Address types in the order the target address is chosen from (Prometheus' `nodeAddress`,
/// itself taken from Kubernetes' `pkg/util/node`).
const ADDRESS_PRIORITY: [&str; 6] = [
    "InternalIP",
    "InternalDNS",
    "ExternalIP",
    "ExternalDNS",
    "LegacyHostIP",
    "Hostname",
];

/// The node's single target; empty when it has no address of a known type.
pub fn targets(node: &Node) -> Vec<LabelSet> {
    let status = node.status.as_ref();
    let addresses = status.and_then(|s| s.addresses.as_deref()).unwrap_or(&[]);
    let Some(chosen) = ADDRESS_PRIORITY
        .iter()
        .find_map(|ty| addresses.iter().find(|a| a.type_ == *ty))
    else {
        return Vec::new();
    };

    let mut t = LabelSet::with_capacity(16);
    set(
        &mut t,
        PROVIDER_ID,
        node.spec
            .as_ref()
            .and_then(|s| s.provider_id.as_deref())
            .unwrap_or(""),
    );
    for c in status.and_then(|s| s.conditions.as_deref()).unwrap_or(&[]) {
        let name = format!("{CONDITION_PREFIX}{}", sanitize(&c.type_.to_lowercase()));
        // A plain assignment, as in Go's map: a later condition of the same type replaces
        // (or, with an empty status, removes) an earlier one.
        t.set(&name, &c.status.to_lowercase());
    }
    attach::add_node_metadata(&mut t, node);

    let port = status
        .and_then(|s| s.daemon_endpoints.as_ref())
        .and_then(|d| d.kubelet_endpoint.as_ref())
        .map_or(0, |k| k.port);
    t.set("__address__", &join_host_port(&chosen.address, port));
    set(
        &mut t,
        "instance",
        node.metadata.name.as_deref().unwrap_or(""),
    );
    // One label per address type, with the first address of that type.
    for (i, a) in addresses.iter().enumerate() {
        if addresses[..i].iter().all(|b| b.type_ != a.type_) {
            let name = format!("{ADDRESS_PREFIX}{}", sanitize(&a.type_));
            t.set(&name, &a.address);
        }
    }
    vec![t]
}

/// The node with only what target building and `attach_metadata.node` read.
pub fn slim(node: Node) -> Node {
    let Node {
        metadata,
        spec,
        status,
    } = node;
    Node {
        metadata: slim_meta(metadata),
        spec: spec.map(|s| NodeSpec {
            provider_id: s.provider_id,
            ..Default::default()
        }),
        status: status.map(|s| NodeStatus {
            addresses: s.addresses.map(|v| {
                v.into_iter()
                    .map(|a| NodeAddress {
                        address: a.address,
                        type_: a.type_,
                    })
                    .collect()
            }),
            conditions: s.conditions.map(|v| {
                v.into_iter()
                    .map(|c| NodeCondition {
                        status: c.status,
                        type_: c.type_,
                        ..Default::default()
                    })
                    .collect()
            }),
            daemon_endpoints: s.daemon_endpoints,
            ..Default::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::discovery::kubernetes::testutil::{expect, got};
    use serde_json::{Value, json};

    fn node(v: Value) -> Node {
        serde_json::from_value(v).expect("valid Node")
    }

    /// Prometheus' `makeNode`: one InternalIP, kubelet on 10250.
    fn make_node(name: &str, address: &str, provider: &str, extra: Value) -> Node {
        let mut v = json!({
            "metadata": { "name": name },
            "spec": { "providerID": provider },
            "status": {
                "addresses": [{ "type": "InternalIP", "address": address }],
                "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
            },
        });
        merge(&mut v, extra);
        node(v)
    }

    fn merge(base: &mut Value, extra: Value) {
        match (base, extra) {
            (Value::Object(b), Value::Object(e)) => {
                for (k, v) in e {
                    merge(b.entry(k).or_insert(Value::Null), v);
                }
            }
            (b, e) => *b = e,
        }
    }

    #[test]
    fn targets_match_prometheus() {
        struct Case {
            name: &'static str,
            node: Node,
            want: Option<Vec<(String, String)>>,
        }
        let cases = vec![
            // node_test.go TestNodeDiscoveryBeforeStart.
            Case {
                name: "labels, annotations and provider id",
                node: make_node(
                    "test",
                    "1.2.3.4",
                    "aws:///nl-north-7b/i-03149834983492827",
                    json!({ "metadata": {
                        "labels": { "test-label": "testvalue" },
                        "annotations": { "test-annotation": "testannotationvalue" },
                    }}),
                ),
                want: Some(expect(
                    &[
                        ("__meta_kubernetes_node_name", "test"),
                        (
                            "__meta_kubernetes_node_provider_id",
                            "aws:///nl-north-7b/i-03149834983492827",
                        ),
                        ("__meta_kubernetes_node_label_test_label", "testvalue"),
                        ("__meta_kubernetes_node_labelpresent_test_label", "true"),
                        (
                            "__meta_kubernetes_node_annotation_test_annotation",
                            "testannotationvalue",
                        ),
                        (
                            "__meta_kubernetes_node_annotationpresent_test_annotation",
                            "true",
                        ),
                    ],
                    &[
                        ("__address__", "1.2.3.4:10250"),
                        ("instance", "test"),
                        ("__meta_kubernetes_node_address_InternalIP", "1.2.3.4"),
                    ],
                )),
            },
            // TestNodeDiscoveryUpdate: label keys keep their case.
            Case {
                name: "label key case kept",
                node: make_node(
                    "test0",
                    "1.2.3.4",
                    "aws:///fr-south-1c/i-49508290343823952",
                    json!({ "metadata": { "labels": { "Unschedulable": "true" } } }),
                ),
                want: Some(expect(
                    &[
                        ("__meta_kubernetes_node_label_Unschedulable", "true"),
                        ("__meta_kubernetes_node_labelpresent_Unschedulable", "true"),
                        ("__meta_kubernetes_node_name", "test0"),
                        (
                            "__meta_kubernetes_node_provider_id",
                            "aws:///fr-south-1c/i-49508290343823952",
                        ),
                    ],
                    &[
                        ("__address__", "1.2.3.4:10250"),
                        ("instance", "test0"),
                        ("__meta_kubernetes_node_address_InternalIP", "1.2.3.4"),
                    ],
                )),
            },
            // TestNodeDiscoveryConditions "node multiple conditions".
            Case {
                name: "conditions lower-cased",
                node: make_node(
                    "test",
                    "1.2.3.4",
                    "aws:///test-zone/i-test",
                    json!({ "status": { "conditions": [
                        { "type": "MemoryPressure", "status": "False" },
                        { "type": "Ready", "status": "True" },
                        { "type": "DiskPressure", "status": "False" },
                        { "type": "NetworkUnavailable", "status": "Unknown" },
                    ]}}),
                ),
                want: Some(expect(
                    &[
                        ("__meta_kubernetes_node_name", "test"),
                        (
                            "__meta_kubernetes_node_provider_id",
                            "aws:///test-zone/i-test",
                        ),
                        ("__meta_kubernetes_node_condition_memorypressure", "false"),
                        ("__meta_kubernetes_node_condition_ready", "true"),
                        ("__meta_kubernetes_node_condition_diskpressure", "false"),
                        (
                            "__meta_kubernetes_node_condition_networkunavailable",
                            "unknown",
                        ),
                    ],
                    &[
                        ("__address__", "1.2.3.4:10250"),
                        ("instance", "test"),
                        ("__meta_kubernetes_node_address_InternalIP", "1.2.3.4"),
                    ],
                )),
            },
            Case {
                name: "ipv6 internal address is bracketed",
                node: make_node("v6", "fd00::1", "", json!({})),
                want: Some(expect(
                    &[("__meta_kubernetes_node_name", "v6")],
                    &[
                        ("__address__", "[fd00::1]:10250"),
                        ("instance", "v6"),
                        ("__meta_kubernetes_node_address_InternalIP", "fd00::1"),
                    ],
                )),
            },
            Case {
                name: "priority: InternalDNS beats ExternalIP and Hostname; first of each type",
                node: node(json!({
                    "metadata": { "name": "n" },
                    "status": {
                        "addresses": [
                            { "type": "Hostname", "address": "n.local" },
                            { "type": "ExternalIP", "address": "203.0.113.9" },
                            { "type": "InternalDNS", "address": "n.internal" },
                            { "type": "ExternalIP", "address": "203.0.113.10" },
                        ],
                        "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
                    },
                })),
                want: Some(expect(
                    &[("__meta_kubernetes_node_name", "n")],
                    &[
                        ("__address__", "n.internal:10250"),
                        ("instance", "n"),
                        ("__meta_kubernetes_node_address_Hostname", "n.local"),
                        ("__meta_kubernetes_node_address_ExternalIP", "203.0.113.9"),
                        ("__meta_kubernetes_node_address_InternalDNS", "n.internal"),
                    ],
                )),
            },
            Case {
                name: "priority: ExternalDNS before LegacyHostIP before Hostname",
                node: node(json!({
                    "metadata": { "name": "n" },
                    "status": {
                        "addresses": [
                            { "type": "Hostname", "address": "h" },
                            { "type": "LegacyHostIP", "address": "10.1.1.1" },
                            { "type": "ExternalDNS", "address": "n.example.com" },
                        ],
                        "daemonEndpoints": { "kubeletEndpoint": { "Port": 10255 } },
                    },
                })),
                want: Some(expect(
                    &[("__meta_kubernetes_node_name", "n")],
                    &[
                        ("__address__", "n.example.com:10255"),
                        ("instance", "n"),
                        ("__meta_kubernetes_node_address_Hostname", "h"),
                        ("__meta_kubernetes_node_address_LegacyHostIP", "10.1.1.1"),
                        (
                            "__meta_kubernetes_node_address_ExternalDNS",
                            "n.example.com",
                        ),
                    ],
                )),
            },
            Case {
                name: "LegacyHostIP before Hostname; unknown types labelled but never chosen",
                node: node(json!({
                    "metadata": { "name": "n" },
                    "status": {
                        "addresses": [
                            { "type": "Custom.Type", "address": "x" },
                            { "type": "Hostname", "address": "h" },
                            { "type": "LegacyHostIP", "address": "10.1.1.1" },
                        ],
                        "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
                    },
                })),
                want: Some(expect(
                    &[("__meta_kubernetes_node_name", "n")],
                    &[
                        ("__address__", "10.1.1.1:10250"),
                        ("instance", "n"),
                        ("__meta_kubernetes_node_address_Custom_Type", "x"),
                        ("__meta_kubernetes_node_address_Hostname", "h"),
                        ("__meta_kubernetes_node_address_LegacyHostIP", "10.1.1.1"),
                    ],
                )),
            },
            Case {
                name: "hostname only, no kubelet endpoint: port 0",
                node: node(json!({
                    "metadata": { "name": "n" },
                    "status": { "addresses": [{ "type": "Hostname", "address": "h" }] },
                })),
                want: Some(expect(
                    &[("__meta_kubernetes_node_name", "n")],
                    &[
                        ("__address__", "h:0"),
                        ("instance", "n"),
                        ("__meta_kubernetes_node_address_Hostname", "h"),
                    ],
                )),
            },
            Case {
                name: "only unknown address types: no target",
                node: node(json!({
                    "metadata": { "name": "n" },
                    "status": { "addresses": [{ "type": "Other", "address": "x" }] },
                })),
                want: None,
            },
            Case {
                name: "no status: no target",
                node: node(json!({ "metadata": { "name": "n" } })),
                want: None,
            },
        ];
        for c in cases {
            let actual: Vec<_> = targets(&c.node).iter().map(got).collect();
            let want: Vec<_> = c.want.into_iter().collect();
            assert_eq!(actual, want, "{}", c.name);
            let slimmed: Vec<_> = targets(&slim(c.node)).iter().map(got).collect();
            assert_eq!(slimmed, want, "{} (slim)", c.name);
        }
    }

    #[test]
    fn slim_drops_what_targets_do_not_read() {
        let n = node(json!({
            "metadata": {
                "name": "n",
                "managedFields": [{ "manager": "kubelet" }],
                "labels": { "a": "b" },
            },
            "spec": { "providerID": "p", "podCIDR": "10.0.0.0/24", "taints": [{ "key": "k", "effect": "NoSchedule" }] },
            "status": {
                "addresses": [{ "type": "InternalIP", "address": "1.2.3.4" }],
                "conditions": [{ "type": "Ready", "status": "True", "message": "kubelet is posting ready status", "reason": "KubeletReady" }],
                "images": [{ "names": ["busybox"], "sizeBytes": 1 }],
                "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
            },
        }));
        let s = slim(n);
        assert!(s.metadata.managed_fields.is_none());
        assert_eq!(s.metadata.labels.as_ref().map(|l| l.len()), Some(1));
        let spec = s.spec.expect("spec kept");
        assert_eq!(spec.provider_id.as_deref(), Some("p"));
        assert!(spec.pod_cidr.is_none() && spec.taints.is_none());
        let status = s.status.expect("status kept");
        assert!(status.images.is_none());
        let cond = &status.conditions.expect("conditions kept")[0];
        assert!(cond.message.is_none() && cond.reason.is_none());
    }
}
