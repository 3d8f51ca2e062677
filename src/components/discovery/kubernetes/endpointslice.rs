//! `role = "endpointslice"`: one target per endpoint, port and address of a
//! `discovery.k8s.io/v1` EndpointSlice, plus one per container port of a referenced pod that no
//! slice port covers, exactly as Prometheus' `discovery/kubernetes/endpointslice.go` (v3.13.2,
//! the version Alloy links) builds them, including its dual-stack rule: the slice of a
//! `PreferDualStack`/`RequireDualStack` service's secondary IP family gets no targets.
//!
//! Deliberate difference: as for endpoints, uncovered container port targets come in pod
//! first-reference order rather than Go map order.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};

use super::AttachMetadata;
use super::attach;
use super::cache::Caches;
use super::endpoints::{
    SeenPods, container_for_port, go_uint, merge, resolve_pod, set_container_labels, slim_ref,
};
use super::labels::{NAMESPACE, add_metadata, join_host_port, sanitize, set};
use super::pod::slim_meta;
use super::service::add_service_labels;
use crate::labels::LabelSet;

const PREFIX: &str = "__meta_kubernetes_endpointslice_";
const NAME: &str = "__meta_kubernetes_endpointslice_name";
const ADDRESS_TYPE: &str = "__meta_kubernetes_endpointslice_address_type";
const PORT_NAME: &str = "__meta_kubernetes_endpointslice_port_name";
const PORT_PROTOCOL: &str = "__meta_kubernetes_endpointslice_port_protocol";
const PORT: &str = "__meta_kubernetes_endpointslice_port";
const PORT_APP_PROTOCOL: &str = "__meta_kubernetes_endpointslice_port_app_protocol";
const READY: &str = "__meta_kubernetes_endpointslice_endpoint_conditions_ready";
const SERVING: &str = "__meta_kubernetes_endpointslice_endpoint_conditions_serving";
const TERMINATING: &str = "__meta_kubernetes_endpointslice_endpoint_conditions_terminating";
const ZONE: &str = "__meta_kubernetes_endpointslice_endpoint_zone";
const HOSTNAME: &str = "__meta_kubernetes_endpointslice_endpoint_hostname";
const NODE_NAME: &str = "__meta_kubernetes_endpointslice_endpoint_node_name";
const TARGET_KIND: &str = "__meta_kubernetes_endpointslice_address_target_kind";
const TARGET_NAME: &str = "__meta_kubernetes_endpointslice_address_target_name";
const TOPOLOGY_PREFIX: &str = "__meta_kubernetes_endpointslice_endpoint_topology_";
const TOPOLOGY_PRESENT_PREFIX: &str = "__meta_kubernetes_endpointslice_endpoint_topology_present_";

/// The label naming a slice's service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The targets of one slice: per endpoint, per port, per address; then the uncovered container
/// ports of the pods the endpoints reference.
pub fn targets(es: &EndpointSlice, caches: &Caches, attach: AttachMetadata) -> Vec<LabelSet> {
    let ns = es.metadata.namespace.as_deref().unwrap_or("");
    let mut group = LabelSet::with_capacity(16);
    set(&mut group, NAMESPACE, ns);
    set(&mut group, ADDRESS_TYPE, &es.address_type);
    set(&mut group, NAME, es.metadata.name.as_deref().unwrap_or(""));
    add_metadata(
        &mut group,
        PREFIX,
        es.metadata.labels.as_ref(),
        es.metadata.annotations.as_ref(),
    );
    let svc = es
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SERVICE_NAME_LABEL))
        .and_then(|name| caches.services.get(ns, name));
    if let Some(svc) = svc {
        add_service_labels(&mut group, svc);
    }
    if attach.namespace
        && let Some(n) = caches.namespaces.get("", ns)
    {
        attach::add_namespace_metadata(&mut group, n);
    }
    if secondary_family_slice(svc, &es.address_type) {
        return Vec::new();
    }

    let mut out = Vec::new();
    let mut seen = SeenPods::default();
    let ports = es.ports.as_deref().unwrap_or(&[]);
    for ep in es.endpoints.as_deref().unwrap_or(&[]) {
        for port in ports {
            for addr in &ep.addresses {
                out.push(target(&group, addr, ep, port, caches, attach, &mut seen));
            }
        }
    }
    seen.uncovered_targets(&group, &mut out);
    out
}

fn target<'a>(
    group: &LabelSet,
    addr: &str,
    ep: &Endpoint,
    port: &EndpointPort,
    caches: &'a Caches,
    attach: AttachMetadata,
    seen: &mut SeenPods<'a>,
) -> LabelSet {
    let mut t = group.clone();
    let number = port.port.map(go_uint);
    match &number {
        Some(n) => t.set("__address__", &join_host_port(addr, n)),
        // A slice port without a number means "all ports": the bare address.
        None => t.set("__address__", addr),
    }
    if let Some(n) = &port.name {
        t.set(PORT_NAME, n);
    }
    if let Some(p) = &port.protocol {
        t.set(PORT_PROTOCOL, p);
    }
    if let Some(n) = &number {
        t.set(PORT, n);
    }
    if let Some(p) = &port.app_protocol {
        t.set(PORT_APP_PROTOCOL, p);
    }
    let conditions = ep.conditions.as_ref();
    for (name, value) in [
        (READY, conditions.and_then(|c| c.ready)),
        (SERVING, conditions.and_then(|c| c.serving)),
        (TERMINATING, conditions.and_then(|c| c.terminating)),
    ] {
        if let Some(v) = value {
            t.set(name, if v { "true" } else { "false" });
        }
    }
    if let Some(h) = &ep.hostname {
        t.set(HOSTNAME, h);
    }
    if let Some(r) = &ep.target_ref {
        t.set(TARGET_KIND, r.kind.as_deref().unwrap_or(""));
        t.set(TARGET_NAME, r.name.as_deref().unwrap_or(""));
    }
    if let Some(n) = &ep.node_name {
        t.set(NODE_NAME, n);
    }
    if let Some(z) = &ep.zone {
        t.set(ZONE, z);
    }
    for (k, v) in ep.deprecated_topology.iter().flatten() {
        let key = sanitize(k);
        t.set(&format!("{TOPOLOGY_PREFIX}{key}"), v);
        t.set(&format!("{TOPOLOGY_PRESENT_PREFIX}{key}"), "true");
    }

    if attach.node {
        // A `Node` target reference first, else `nodeName` (the reverse of the endpoints
        // role); a node missing from the cache adds nothing.
        let node = match &ep.target_ref {
            Some(r) if r.kind.as_deref() == Some("Node") => Some(r.name.as_deref().unwrap_or("")),
            _ => ep.node_name.as_deref(),
        };
        if let Some(n) = node.and_then(|n| caches.nodes.get("", n)) {
            attach::add_node_metadata(&mut t, n);
        }
    }

    let Some(pod) = resolve_pod(caches, ep.target_ref.as_ref()) else {
        return t;
    };
    let entry = seen.entry(pod);
    merge(&mut t, &entry.labels);
    if let (Some(p), Some(n)) = (port.port, &number) {
        if let Some((c, cport, init)) = container_for_port(pod, p) {
            // The container port's protocol, not the slice port's (unlike endpoints).
            let protocol = cport.protocol.as_deref().unwrap_or("");
            set_container_labels(&mut t, c, cport, n, protocol, init);
        }
        entry.ports.push(p);
    }
    t
}

/// Prometheus' `nonPrimaryIPFamilySlice`: a dual-stack service has one slice per family, and
/// both would yield the same pods; only the primary family's slice (the first of
/// `spec.ipFamilies`) keeps its targets.
fn secondary_family_slice(svc: Option<&Service>, address_type: &str) -> bool {
    let Some(spec) = svc.and_then(|s| s.spec.as_ref()) else {
        return false;
    };
    let dual = matches!(
        spec.ip_family_policy.as_deref(),
        Some("PreferDualStack" | "RequireDualStack")
    );
    match spec.ip_families.as_deref() {
        Some([primary, ..]) if dual => address_type != primary,
        _ => false,
    }
}

/// The slice with only what target building reads (drops topology-aware routing hints).
pub fn slim(es: EndpointSlice) -> EndpointSlice {
    EndpointSlice {
        address_type: es.address_type,
        metadata: slim_meta(es.metadata),
        ports: es.ports,
        endpoints: es.endpoints.map(|v| {
            v.into_iter()
                .map(|ep| Endpoint {
                    addresses: ep.addresses,
                    conditions: ep.conditions,
                    deprecated_topology: ep.deprecated_topology,
                    hints: None,
                    hostname: ep.hostname,
                    node_name: ep.node_name,
                    target_ref: ep.target_ref.map(slim_ref),
                    zone: ep.zone,
                })
                .collect()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::discovery::kubernetes::testutil::{
        Labels, add_node, add_pod, add_service, assert_targets, expect, got, key, obj, slimmed,
        test_service, testpod_labels, two_container_pod,
    };
    use k8s_openapi::api::core::v1::Namespace;
    use serde_json::{Value, json};

    /// endpointslice_test.go `makeEndpointSliceV1(namespace)`.
    fn make_slice(ns: &str) -> EndpointSlice {
        obj(json!({
            "metadata": {
                "name": "testendpoints",
                "namespace": ns,
                "labels": { "kubernetes.io/service-name": "testendpoints" },
                "annotations": { "test.annotation": "test" },
            },
            "addressType": "IPv4",
            "ports": [{ "name": "testport", "port": 9000, "protocol": "TCP", "appProtocol": "http" }],
            "endpoints": [
                {
                    "addresses": ["1.2.3.4"],
                    "conditions": { "ready": true, "serving": true, "terminating": false },
                    "hostname": "testendpoint1",
                    "targetRef": {},
                    "nodeName": "foobar",
                    "deprecatedTopology": { "topology": "value" },
                    "zone": "us-east-1a",
                },
                {
                    "addresses": ["2.3.4.5"],
                    "conditions": { "ready": true, "serving": true, "terminating": false },
                    "zone": "us-east-1b",
                },
                {
                    "addresses": ["3.4.5.6"],
                    "conditions": { "ready": false, "serving": true, "terminating": true },
                    "zone": "us-east-1c",
                },
                {
                    "addresses": ["4.5.6.7"],
                    "conditions": { "ready": true, "serving": true, "terminating": false },
                    "targetRef": { "kind": "Node", "name": "barbaz" },
                    "zone": "us-east-1a",
                },
            ],
        }))
    }

    /// The four targets of `make_slice`, with extra labels for the first and last (the ones
    /// with a node).
    fn make_slice_targets(
        group: &[(&str, &str)],
        first: &[(&str, &str)],
        last: &[(&str, &str)],
    ) -> Vec<Labels> {
        let port = [
            ("__meta_kubernetes_endpointslice_port", "9000"),
            ("__meta_kubernetes_endpointslice_port_app_protocol", "http"),
            ("__meta_kubernetes_endpointslice_port_name", "testport"),
            ("__meta_kubernetes_endpointslice_port_protocol", "TCP"),
        ];
        let t1 = [
            ("__address__", "1.2.3.4:9000"),
            ("__meta_kubernetes_endpointslice_address_target_kind", ""),
            ("__meta_kubernetes_endpointslice_address_target_name", ""),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_ready",
                "true",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_serving",
                "true",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_terminating",
                "false",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_hostname",
                "testendpoint1",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_node_name",
                "foobar",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_topology_present_topology",
                "true",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_topology_topology",
                "value",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_zone",
                "us-east-1a",
            ),
        ];
        let t2 = [
            ("__address__", "2.3.4.5:9000"),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_ready",
                "true",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_serving",
                "true",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_terminating",
                "false",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_zone",
                "us-east-1b",
            ),
        ];
        let t3 = [
            ("__address__", "3.4.5.6:9000"),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_ready",
                "false",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_serving",
                "true",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_terminating",
                "true",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_zone",
                "us-east-1c",
            ),
        ];
        let t4 = [
            ("__address__", "4.5.6.7:9000"),
            (
                "__meta_kubernetes_endpointslice_address_target_kind",
                "Node",
            ),
            (
                "__meta_kubernetes_endpointslice_address_target_name",
                "barbaz",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_ready",
                "true",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_serving",
                "true",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_conditions_terminating",
                "false",
            ),
            (
                "__meta_kubernetes_endpointslice_endpoint_zone",
                "us-east-1a",
            ),
        ];
        vec![
            expect(group, &[&t1[..], &port, first].concat()),
            expect(group, &[&t2[..], &port].concat()),
            expect(group, &[&t3[..], &port].concat()),
            expect(group, &[&t4[..], &port, last].concat()),
        ]
    }

    const SLICE_GROUP: [(&str, &str); 7] = [
        ("__meta_kubernetes_endpointslice_address_type", "IPv4"),
        ("__meta_kubernetes_namespace", "default"),
        ("__meta_kubernetes_endpointslice_name", "testendpoints"),
        (
            "__meta_kubernetes_endpointslice_label_kubernetes_io_service_name",
            "testendpoints",
        ),
        (
            "__meta_kubernetes_endpointslice_labelpresent_kubernetes_io_service_name",
            "true",
        ),
        (
            "__meta_kubernetes_endpointslice_annotation_test_annotation",
            "test",
        ),
        (
            "__meta_kubernetes_endpointslice_annotationpresent_test_annotation",
            "true",
        ),
    ];

    const SERVICE_GROUP: [(&str, &str); 3] = [
        ("__meta_kubernetes_service_label_app_name", "test"),
        ("__meta_kubernetes_service_labelpresent_app_name", "true"),
        ("__meta_kubernetes_service_name", "testendpoints"),
    ];

    /// endpointslice_test.go `makeDualStackService`.
    fn dual_stack_service(policy: &str, families: &[&str]) -> Value {
        json!({
            "metadata": { "name": "testsvc", "namespace": "default" },
            "spec": { "ipFamilyPolicy": policy, "ipFamilies": families },
        })
    }

    /// endpointslice_test.go `makeDualStackEndpointSlice`.
    fn dual_stack_slice(name: &str, address_type: &str, addr: &str) -> EndpointSlice {
        obj(json!({
            "metadata": {
                "name": name,
                "namespace": "default",
                "labels": { "kubernetes.io/service-name": "testsvc" },
            },
            "addressType": address_type,
            "ports": [{ "name": "http", "port": 9000, "protocol": "TCP" }],
            "endpoints": [{ "addresses": [addr], "conditions": { "ready": true } }],
        }))
    }

    /// endpointslice_test.go `dualStackGroupLabels` + `dualStackTarget`.
    fn dual_stack_target(address_type: &str, name: &str, addr: &str) -> Labels {
        expect(
            &[
                ("__meta_kubernetes_namespace", "default"),
                ("__meta_kubernetes_endpointslice_address_type", address_type),
                ("__meta_kubernetes_endpointslice_name", name),
                (
                    "__meta_kubernetes_endpointslice_label_kubernetes_io_service_name",
                    "testsvc",
                ),
                (
                    "__meta_kubernetes_endpointslice_labelpresent_kubernetes_io_service_name",
                    "true",
                ),
                ("__meta_kubernetes_service_name", "testsvc"),
            ],
            &[
                ("__address__", addr),
                (
                    "__meta_kubernetes_endpointslice_endpoint_conditions_ready",
                    "true",
                ),
                ("__meta_kubernetes_endpointslice_port", "9000"),
                ("__meta_kubernetes_endpointslice_port_name", "http"),
                ("__meta_kubernetes_endpointslice_port_protocol", "TCP"),
            ],
        )
    }

    struct Case {
        name: &'static str,
        es: EndpointSlice,
        caches: Caches,
        attach: AttachMetadata,
        want: Vec<Labels>,
    }

    fn cases() -> Vec<Case> {
        let none = AttachMetadata::default();
        let node_meta = AttachMetadata {
            node: true,
            namespace: false,
        };
        let mut cases = Vec::new();

        // TestEndpointSliceDiscoveryBeforeRun: an empty target reference still sets the
        // (empty, so absent) kind and name.
        cases.push(Case {
            name: "prometheus makeEndpointSliceV1",
            es: make_slice("default"),
            caches: Caches::default(),
            attach: none,
            want: make_slice_targets(&SLICE_GROUP, &[], &[]),
        });

        // TestEndpointsSlicesDiscoveryWithNodeMetadata: nodeName for the first endpoint, the
        // Node target reference for the last; the service named by the label.
        let mut caches = Caches::default();
        add_service(&mut caches, test_service("testendpoints"));
        add_node(&mut caches, "foobar", "us-east1");
        add_node(&mut caches, "barbaz", "us-west2");
        cases.push(Case {
            name: "service labels and node metadata",
            es: make_slice("default"),
            caches,
            attach: node_meta,
            want: make_slice_targets(
                &[&SLICE_GROUP[..], &SERVICE_GROUP].concat(),
                &[
                    ("__meta_kubernetes_node_label_az", "us-east1"),
                    ("__meta_kubernetes_node_labelpresent_az", "true"),
                    ("__meta_kubernetes_node_name", "foobar"),
                ],
                &[
                    ("__meta_kubernetes_node_label_az", "us-west2"),
                    ("__meta_kubernetes_node_labelpresent_az", "true"),
                    ("__meta_kubernetes_node_name", "barbaz"),
                ],
            ),
        });

        // The service is found through the service-name label, not the slice's own name.
        let mut es = make_slice("default");
        es.metadata.name = Some("testendpoints-abcde".to_string());
        let mut caches = Caches::default();
        add_service(&mut caches, test_service("testendpoints-abcde"));
        let mut group = SLICE_GROUP.to_vec();
        group[2] = (
            "__meta_kubernetes_endpointslice_name",
            "testendpoints-abcde",
        );
        cases.push(Case {
            name: "same-name service ignored",
            es,
            caches,
            attach: none,
            want: make_slice_targets(&group, &[], &[]),
        });

        // Namespace metadata (as TestEndpointsSlicesDiscoveryWithNamespaceMetadata).
        let mut caches = Caches::default();
        let ns: Namespace = obj(json!({
            "metadata": {
                "name": "test-ns",
                "labels": { "service": "web", "layer": "frontend" },
                "annotations": { "contact": "platform", "release": "v5.6.7" },
            }
        }));
        caches.namespaces.insert(key("", "test-ns"), ns);
        let mut group = SLICE_GROUP.to_vec();
        group[1] = ("__meta_kubernetes_namespace", "test-ns");
        group.extend([
            ("__meta_kubernetes_namespace_annotation_contact", "platform"),
            (
                "__meta_kubernetes_namespace_annotationpresent_contact",
                "true",
            ),
            ("__meta_kubernetes_namespace_annotation_release", "v5.6.7"),
            (
                "__meta_kubernetes_namespace_annotationpresent_release",
                "true",
            ),
            ("__meta_kubernetes_namespace_label_service", "web"),
            ("__meta_kubernetes_namespace_labelpresent_service", "true"),
            ("__meta_kubernetes_namespace_label_layer", "frontend"),
            ("__meta_kubernetes_namespace_labelpresent_layer", "true"),
        ]);
        cases.push(Case {
            name: "namespace metadata",
            es: make_slice("test-ns"),
            caches,
            attach: AttachMetadata {
                node: false,
                namespace: true,
            },
            want: make_slice_targets(&group, &[], &[]),
        });

        // TestEndpointSliceDiscoveryAdd: a not-ready pod endpoint, and the pod's uncovered
        // port.
        let mut caches = Caches::default();
        add_pod(&mut caches, two_container_pod());
        let group = [
            ("__meta_kubernetes_endpointslice_address_type", "IPv4"),
            ("__meta_kubernetes_endpointslice_name", "testendpoints"),
            ("__meta_kubernetes_namespace", "default"),
        ];
        cases.push(Case {
            name: "pod target and uncovered container port",
            es: obj(json!({
                "metadata": { "name": "testendpoints", "namespace": "default" },
                "addressType": "IPv4",
                "ports": [{ "name": "testport", "port": 9000, "protocol": "TCP" }],
                "endpoints": [{
                    "addresses": ["4.3.2.1"],
                    "targetRef": { "kind": "Pod", "name": "testpod", "namespace": "default" },
                    "conditions": { "ready": false },
                }],
            })),
            caches,
            attach: none,
            want: vec![
                expect(
                    &group,
                    &[
                        &[
                            ("__address__", "4.3.2.1:9000"),
                            ("__meta_kubernetes_endpointslice_address_target_kind", "Pod"),
                            (
                                "__meta_kubernetes_endpointslice_address_target_name",
                                "testpod",
                            ),
                            (
                                "__meta_kubernetes_endpointslice_endpoint_conditions_ready",
                                "false",
                            ),
                            ("__meta_kubernetes_endpointslice_port", "9000"),
                            ("__meta_kubernetes_endpointslice_port_name", "testport"),
                            ("__meta_kubernetes_endpointslice_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_name", "c1"),
                            ("__meta_kubernetes_pod_container_image", "c1:latest"),
                            ("__meta_kubernetes_pod_container_port_name", "mainport"),
                            ("__meta_kubernetes_pod_container_port_number", "9000"),
                            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_init", "false"),
                        ][..],
                        &testpod_labels("1.2.3.4"),
                    ]
                    .concat(),
                ),
                expect(
                    &group,
                    &[
                        &[
                            ("__address__", "1.2.3.4:9001"),
                            ("__meta_kubernetes_pod_container_name", "c2"),
                            ("__meta_kubernetes_pod_container_image", "c2:latest"),
                            ("__meta_kubernetes_pod_container_port_name", "sideport"),
                            ("__meta_kubernetes_pod_container_port_number", "9001"),
                            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_init", "false"),
                        ][..],
                        &testpod_labels("1.2.3.4"),
                    ]
                    .concat(),
                ),
            ],
        });

        // TestEndpointSliceDiscoverySidecarContainer.
        let mut caches = Caches::default();
        add_pod(
            &mut caches,
            json!({
                "metadata": { "name": "testpod", "namespace": "default", "uid": "deadbeef" },
                "spec": {
                    "nodeName": "testnode",
                    "initContainers": [
                        {
                            "name": "ic1",
                            "image": "ic1:latest",
                            "ports": [{ "name": "initport", "containerPort": 1111, "protocol": "TCP" }],
                        },
                        {
                            "name": "ic2",
                            "image": "ic2:latest",
                            "ports": [{ "name": "initport", "containerPort": 9111, "protocol": "TCP" }],
                        },
                    ],
                    "containers": [{
                        "name": "c1",
                        "image": "c1:latest",
                        "ports": [{ "name": "mainport", "containerPort": 9000, "protocol": "TCP" }],
                    }],
                },
                "status": { "hostIP": "2.3.4.5", "podIP": "4.3.2.1" },
            }),
        );
        let group = [
            ("__meta_kubernetes_endpointslice_address_type", "IPv4"),
            ("__meta_kubernetes_endpointslice_name", "testsidecar"),
            ("__meta_kubernetes_namespace", "default"),
        ];
        let pod = testpod_labels("4.3.2.1");
        cases.push(Case {
            name: "sidecar init containers",
            es: obj(json!({
                "metadata": { "name": "testsidecar", "namespace": "default" },
                "addressType": "IPv4",
                "ports": [
                    { "name": "testport", "port": 9000, "protocol": "TCP" },
                    { "name": "initport", "port": 9111, "protocol": "TCP" },
                ],
                "endpoints": [{
                    "addresses": ["4.3.2.1"],
                    "targetRef": { "kind": "Pod", "name": "testpod", "namespace": "default" },
                }],
            })),
            caches,
            attach: none,
            want: vec![
                expect(
                    &group,
                    &[
                        &[
                            ("__address__", "4.3.2.1:9000"),
                            ("__meta_kubernetes_endpointslice_address_target_kind", "Pod"),
                            (
                                "__meta_kubernetes_endpointslice_address_target_name",
                                "testpod",
                            ),
                            ("__meta_kubernetes_endpointslice_port", "9000"),
                            ("__meta_kubernetes_endpointslice_port_name", "testport"),
                            ("__meta_kubernetes_endpointslice_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_image", "c1:latest"),
                            ("__meta_kubernetes_pod_container_name", "c1"),
                            ("__meta_kubernetes_pod_container_port_name", "mainport"),
                            ("__meta_kubernetes_pod_container_port_number", "9000"),
                            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_init", "false"),
                        ][..],
                        &pod,
                    ]
                    .concat(),
                ),
                expect(
                    &group,
                    &[
                        &[
                            ("__address__", "4.3.2.1:9111"),
                            ("__meta_kubernetes_endpointslice_address_target_kind", "Pod"),
                            (
                                "__meta_kubernetes_endpointslice_address_target_name",
                                "testpod",
                            ),
                            ("__meta_kubernetes_endpointslice_port", "9111"),
                            ("__meta_kubernetes_endpointslice_port_name", "initport"),
                            ("__meta_kubernetes_endpointslice_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_image", "ic2:latest"),
                            ("__meta_kubernetes_pod_container_name", "ic2"),
                            ("__meta_kubernetes_pod_container_port_name", "initport"),
                            ("__meta_kubernetes_pod_container_port_number", "9111"),
                            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_init", "true"),
                        ][..],
                        &pod,
                    ]
                    .concat(),
                ),
                expect(
                    &group,
                    &[
                        &[
                            ("__address__", "4.3.2.1:1111"),
                            ("__meta_kubernetes_pod_container_image", "ic1:latest"),
                            ("__meta_kubernetes_pod_container_name", "ic1"),
                            ("__meta_kubernetes_pod_container_port_name", "initport"),
                            ("__meta_kubernetes_pod_container_port_number", "1111"),
                            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_init", "true"),
                        ][..],
                        &pod,
                    ]
                    .concat(),
                ),
            ],
        });

        // The dual-stack tests: only the primary family's slice has targets; single-stack
        // services are unaffected (IPv6 addresses bracketed).
        let dual = [
            (
                "PreferDualStack",
                ["IPv4", "IPv6"],
                "IPv6",
                "testsvc-ipv6",
                "fd00::1",
                None,
            ),
            (
                "RequireDualStack",
                ["IPv4", "IPv6"],
                "IPv6",
                "testsvc-ipv6",
                "fd00::1",
                None,
            ),
            (
                "PreferDualStack",
                ["IPv4", "IPv6"],
                "IPv4",
                "testsvc-ipv4",
                "1.2.3.4",
                Some("1.2.3.4:9000"),
            ),
            (
                "PreferDualStack",
                ["IPv6", "IPv4"],
                "IPv4",
                "testsvc-ipv4",
                "1.2.3.4",
                None,
            ),
            (
                "PreferDualStack",
                ["IPv6", "IPv4"],
                "IPv6",
                "testsvc-ipv6",
                "fd00::1",
                Some("[fd00::1]:9000"),
            ),
        ];
        for (policy, families, ty, name, addr, want) in dual {
            let mut caches = Caches::default();
            add_service(&mut caches, dual_stack_service(policy, &families));
            cases.push(Case {
                name: "dual stack",
                es: dual_stack_slice(name, ty, addr),
                caches,
                attach: none,
                want: want
                    .map(|a| dual_stack_target(ty, name, a))
                    .into_iter()
                    .collect(),
            });
        }
        for (families, ty, name, addr, want) in [
            (["IPv4"], "IPv4", "testsvc-ipv4", "1.2.3.4", "1.2.3.4:9000"),
            (
                ["IPv6"],
                "IPv6",
                "testsvc-ipv6",
                "fd00::1",
                "[fd00::1]:9000",
            ),
        ] {
            let mut caches = Caches::default();
            add_service(&mut caches, dual_stack_service("SingleStack", &families));
            cases.push(Case {
                name: "single stack",
                es: dual_stack_slice(name, ty, addr),
                caches,
                attach: none,
                want: vec![dual_stack_target(ty, name, want)],
            });
        }
        // Without the service cached there is nothing to compare families with.
        cases.push(Case {
            name: "dual stack, service unknown",
            es: dual_stack_slice("testsvc-ipv6", "IPv6", "fd00::1"),
            caches: Caches::default(),
            attach: none,
            want: vec![expect(
                &[
                    ("__meta_kubernetes_namespace", "default"),
                    ("__meta_kubernetes_endpointslice_address_type", "IPv6"),
                    ("__meta_kubernetes_endpointslice_name", "testsvc-ipv6"),
                    (
                        "__meta_kubernetes_endpointslice_label_kubernetes_io_service_name",
                        "testsvc",
                    ),
                    (
                        "__meta_kubernetes_endpointslice_labelpresent_kubernetes_io_service_name",
                        "true",
                    ),
                ],
                &[
                    ("__address__", "[fd00::1]:9000"),
                    (
                        "__meta_kubernetes_endpointslice_endpoint_conditions_ready",
                        "true",
                    ),
                    ("__meta_kubernetes_endpointslice_port", "9000"),
                    ("__meta_kubernetes_endpointslice_port_name", "http"),
                    ("__meta_kubernetes_endpointslice_port_protocol", "TCP"),
                ],
            )],
        });

        // A port without a number: bare address, no port label, no container match, and so
        // every container port of the pod is uncovered. No conditions: no condition labels.
        // The container port's protocol is used (the slice port says UDP).
        let mut caches = Caches::default();
        add_pod(
            &mut caches,
            json!({
                "metadata": { "name": "p", "namespace": "default" },
                "spec": { "containers": [{
                    "name": "c",
                    "ports": [{ "name": "dns", "containerPort": 53, "protocol": "TCP" }],
                }]},
                "status": { "podIP": "fd00::9" },
            }),
        );
        let group = [
            ("__meta_kubernetes_namespace", "default"),
            ("__meta_kubernetes_endpointslice_address_type", "IPv6"),
            ("__meta_kubernetes_endpointslice_name", "s"),
        ];
        let pod = [
            ("__meta_kubernetes_pod_name", "p"),
            ("__meta_kubernetes_pod_ip", "fd00::9"),
            ("__meta_kubernetes_pod_ready", "unknown"),
        ];
        cases.push(Case {
            name: "port without number; no conditions",
            es: obj(json!({
                "metadata": { "name": "s", "namespace": "default" },
                "addressType": "IPv6",
                "ports": [{ "name": "all", "protocol": "UDP" }, { "port": 53, "protocol": "UDP" }],
                "endpoints": [{
                    "addresses": ["fd00::9"],
                    "targetRef": { "kind": "Pod", "name": "p", "namespace": "default" },
                }],
            })),
            caches,
            attach: none,
            want: vec![
                expect(
                    &group,
                    &[
                        &[
                            ("__address__", "fd00::9"),
                            ("__meta_kubernetes_endpointslice_port_name", "all"),
                            ("__meta_kubernetes_endpointslice_port_protocol", "UDP"),
                            ("__meta_kubernetes_endpointslice_address_target_kind", "Pod"),
                            ("__meta_kubernetes_endpointslice_address_target_name", "p"),
                        ][..],
                        &pod,
                    ]
                    .concat(),
                ),
                expect(
                    &group,
                    &[
                        &[
                            ("__address__", "[fd00::9]:53"),
                            ("__meta_kubernetes_endpointslice_port", "53"),
                            ("__meta_kubernetes_endpointslice_port_protocol", "UDP"),
                            ("__meta_kubernetes_endpointslice_address_target_kind", "Pod"),
                            ("__meta_kubernetes_endpointslice_address_target_name", "p"),
                            ("__meta_kubernetes_pod_container_name", "c"),
                            ("__meta_kubernetes_pod_container_port_name", "dns"),
                            ("__meta_kubernetes_pod_container_port_number", "53"),
                            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_init", "false"),
                        ][..],
                        &pod,
                    ]
                    .concat(),
                ),
            ],
        });

        // Only the numberless port: the pod is seen but no port is covered.
        let mut caches = Caches::default();
        add_pod(
            &mut caches,
            json!({
                "metadata": { "name": "p", "namespace": "default" },
                "spec": { "containers": [{
                    "name": "c",
                    "ports": [{ "containerPort": 53, "protocol": "UDP" }],
                }]},
                "status": { "podIP": "10.1.0.9" },
            }),
        );
        let group = [
            ("__meta_kubernetes_namespace", "default"),
            ("__meta_kubernetes_endpointslice_address_type", "IPv4"),
            ("__meta_kubernetes_endpointslice_name", "s"),
        ];
        let pod = [
            ("__meta_kubernetes_pod_name", "p"),
            ("__meta_kubernetes_pod_ip", "10.1.0.9"),
            ("__meta_kubernetes_pod_ready", "unknown"),
        ];
        cases.push(Case {
            name: "numberless port only: pod ports all uncovered",
            es: obj(json!({
                "metadata": { "name": "s", "namespace": "default" },
                "addressType": "IPv4",
                "ports": [{}],
                "endpoints": [{
                    "addresses": ["10.1.0.9"],
                    "targetRef": { "kind": "Pod", "name": "p", "namespace": "default" },
                }],
            })),
            caches,
            attach: none,
            want: vec![
                expect(
                    &group,
                    &[
                        &[
                            ("__address__", "10.1.0.9"),
                            ("__meta_kubernetes_endpointslice_address_target_kind", "Pod"),
                            ("__meta_kubernetes_endpointslice_address_target_name", "p"),
                        ][..],
                        &pod,
                    ]
                    .concat(),
                ),
                expect(
                    &group,
                    &[
                        &[
                            ("__address__", "10.1.0.9:53"),
                            ("__meta_kubernetes_pod_container_name", "c"),
                            ("__meta_kubernetes_pod_container_port_number", "53"),
                            ("__meta_kubernetes_pod_container_port_protocol", "UDP"),
                            ("__meta_kubernetes_pod_container_init", "false"),
                        ][..],
                        &pod,
                    ]
                    .concat(),
                ),
            ],
        });

        // Node metadata: a Node target reference wins over nodeName; a missing node adds
        // nothing; several addresses per endpoint, endpoints outermost.
        let mut caches = Caches::default();
        add_node(&mut caches, "foobar", "us-east1");
        add_node(&mut caches, "barbaz", "us-west2");
        let group = [
            ("__meta_kubernetes_namespace", "default"),
            ("__meta_kubernetes_endpointslice_address_type", "IPv4"),
            ("__meta_kubernetes_endpointslice_name", "s"),
        ];
        cases.push(Case {
            name: "node target ref before nodeName; missing node",
            es: obj(json!({
                "metadata": { "name": "s", "namespace": "default" },
                "addressType": "IPv4",
                "ports": [{ "port": 80 }],
                "endpoints": [
                    {
                        "addresses": ["10.0.0.1", "10.0.0.2"],
                        "nodeName": "foobar",
                        "targetRef": { "kind": "Node", "name": "barbaz" },
                    },
                    { "addresses": ["10.0.0.3"], "nodeName": "gone" },
                ],
            })),
            caches,
            attach: node_meta,
            want: ["10.0.0.1:80", "10.0.0.2:80"]
                .iter()
                .map(|a| {
                    expect(
                        &group,
                        &[
                            ("__address__", a),
                            ("__meta_kubernetes_endpointslice_port", "80"),
                            (
                                "__meta_kubernetes_endpointslice_endpoint_node_name",
                                "foobar",
                            ),
                            (
                                "__meta_kubernetes_endpointslice_address_target_kind",
                                "Node",
                            ),
                            (
                                "__meta_kubernetes_endpointslice_address_target_name",
                                "barbaz",
                            ),
                            ("__meta_kubernetes_node_name", "barbaz"),
                            ("__meta_kubernetes_node_label_az", "us-west2"),
                            ("__meta_kubernetes_node_labelpresent_az", "true"),
                        ],
                    )
                })
                .chain([expect(
                    &group,
                    &[
                        ("__address__", "10.0.0.3:80"),
                        ("__meta_kubernetes_endpointslice_port", "80"),
                        ("__meta_kubernetes_endpointslice_endpoint_node_name", "gone"),
                    ],
                )])
                .collect(),
        });

        // TestEndpointSliceDiscoveryEmptyEndpoints; and a slice without ports.
        let mut es = make_slice("default");
        es.endpoints = Some(Vec::new());
        cases.push(Case {
            name: "no endpoints",
            es,
            caches: Caches::default(),
            attach: none,
            want: vec![],
        });
        let mut es = make_slice("default");
        es.ports = None;
        cases.push(Case {
            name: "no ports",
            es,
            caches: Caches::default(),
            attach: none,
            want: vec![],
        });
        cases
    }

    #[test]
    fn targets_match_prometheus() {
        for c in cases() {
            assert_targets(c.name, &targets(&c.es, &c.caches, c.attach), &c.want);
        }
    }

    #[test]
    fn slim_objects_build_the_same_targets() {
        for c in cases() {
            let full = targets(&c.es, &c.caches, c.attach);
            let slimmed_targets = targets(&slim(c.es), &slimmed(&c.caches), c.attach);
            assert_targets(
                c.name,
                &slimmed_targets,
                &full.iter().map(got).collect::<Vec<_>>(),
            );
        }
    }

    #[test]
    fn slim_drops_hints_and_reference_details() {
        let es = slim(obj(json!({
            "metadata": {
                "name": "s",
                "namespace": "default",
                "managedFields": [{ "manager": "endpointslice-controller" }],
            },
            "addressType": "IPv4",
            "endpoints": [{
                "addresses": ["10.0.0.1"],
                "hints": { "forZones": [{ "name": "a" }] },
                "targetRef": { "kind": "Pod", "name": "p", "namespace": "default", "uid": "x" },
            }],
        })));
        assert!(es.metadata.managed_fields.is_none());
        let ep = &es.endpoints.expect("endpoints kept")[0];
        assert!(ep.hints.is_none());
        let r = ep.target_ref.as_ref().expect("target ref kept");
        assert!(r.uid.is_none());
        assert_eq!(r.kind.as_deref(), Some("Pod"));
    }
}
