//! `role = "endpoints"`: one target per address and port of a (core/v1) Endpoints object, plus
//! one per container port of a referenced pod that no endpoint port covers, exactly as
//! Prometheus' `discovery/kubernetes/endpoints.go` (v3.13.2, the version Alloy links) builds
//! them. Also the pod handling the endpointslice role shares.
//!
//! Deliberate difference: the extra targets for uncovered container ports come in the order the
//! pods were first referenced, where Prometheus walks a Go map (random order). Target order
//! carries no meaning downstream.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EndpointAddress, EndpointPort, EndpointSubset, Endpoints,
    ObjectReference, Pod,
};

use super::AttachMetadata;
use super::attach;
use super::cache::Caches;
use super::labels::{NAMESPACE, add_metadata, join_host_port, set};
use super::pod::{pod_labels, slim_meta};
use super::service::add_service_labels;
use crate::labels::LabelSet;

const PREFIX: &str = "__meta_kubernetes_endpoints_";
const NAME: &str = "__meta_kubernetes_endpoints_name";
const NODE_NAME: &str = "__meta_kubernetes_endpoint_node_name";
const HOSTNAME: &str = "__meta_kubernetes_endpoint_hostname";
const READY: &str = "__meta_kubernetes_endpoint_ready";
const PORT_NAME: &str = "__meta_kubernetes_endpoint_port_name";
const PORT_PROTOCOL: &str = "__meta_kubernetes_endpoint_port_protocol";
const TARGET_KIND: &str = "__meta_kubernetes_endpoint_address_target_kind";
const TARGET_NAME: &str = "__meta_kubernetes_endpoint_address_target_name";

// The pod role's container labels, which pod.rs keeps private.
const CONTAINER_NAME: &str = "__meta_kubernetes_pod_container_name";
const CONTAINER_IMAGE: &str = "__meta_kubernetes_pod_container_image";
const CONTAINER_INIT: &str = "__meta_kubernetes_pod_container_init";
const CONTAINER_PORT_NAME: &str = "__meta_kubernetes_pod_container_port_name";
const CONTAINER_PORT_NUMBER: &str = "__meta_kubernetes_pod_container_port_number";
const CONTAINER_PORT_PROTOCOL: &str = "__meta_kubernetes_pod_container_port_protocol";

/// The targets of one Endpoints object: per subset, per port, every ready address
/// (`endpoint_ready="true"`) then every not-ready one (`"false"`); then the uncovered container
/// ports of the pods those addresses reference.
pub fn targets(ep: &Endpoints, caches: &Caches, attach: AttachMetadata) -> Vec<LabelSet> {
    let ns = ep.metadata.namespace.as_deref().unwrap_or("");
    let name = ep.metadata.name.as_deref().unwrap_or("");
    let mut group = LabelSet::with_capacity(16);
    set(&mut group, NAMESPACE, ns);
    // The service is the one the Endpoints object is named after.
    if let Some(svc) = caches.services.get(ns, name) {
        add_service_labels(&mut group, svc);
    }
    set(&mut group, NAME, name);
    add_metadata(
        &mut group,
        PREFIX,
        ep.metadata.labels.as_ref(),
        ep.metadata.annotations.as_ref(),
    );
    if attach.namespace
        && let Some(n) = caches.namespaces.get("", ns)
    {
        attach::add_namespace_metadata(&mut group, n);
    }

    let mut out = Vec::new();
    let mut seen = SeenPods::default();
    for ss in ep.subsets.as_deref().unwrap_or(&[]) {
        for port in ss.ports.as_deref().unwrap_or(&[]) {
            let ready = ss.addresses.as_deref().unwrap_or(&[]);
            let not_ready = ss.not_ready_addresses.as_deref().unwrap_or(&[]);
            for addr in ready {
                out.push(target(
                    &group, addr, port, "true", caches, attach, &mut seen,
                ));
            }
            for addr in not_ready {
                out.push(target(
                    &group, addr, port, "false", caches, attach, &mut seen,
                ));
            }
        }
    }
    seen.uncovered_targets(&group, &mut out);
    out
}

fn target<'a>(
    group: &LabelSet,
    addr: &EndpointAddress,
    port: &EndpointPort,
    ready: &str,
    caches: &'a Caches,
    attach: AttachMetadata,
    seen: &mut SeenPods<'a>,
) -> LabelSet {
    let mut t = group.clone();
    let number = go_uint(port.port);
    let protocol = port.protocol.as_deref().unwrap_or("");
    t.set("__address__", &join_host_port(&addr.ip, &number));
    t.set(PORT_NAME, port.name.as_deref().unwrap_or(""));
    t.set(PORT_PROTOCOL, protocol);
    t.set(READY, ready);
    if let Some(r) = &addr.target_ref {
        t.set(TARGET_KIND, r.kind.as_deref().unwrap_or(""));
        t.set(TARGET_NAME, r.name.as_deref().unwrap_or(""));
    }
    if let Some(n) = &addr.node_name {
        t.set(NODE_NAME, n);
    }
    set(&mut t, HOSTNAME, addr.hostname.as_deref().unwrap_or(""));

    if attach.node {
        // `nodeName` first, else a `Node` target reference; a node missing from the cache
        // just adds nothing (unlike the pod role, which then drops the pod).
        let node = addr.node_name.as_deref().or_else(|| {
            addr.target_ref
                .as_ref()
                .filter(|r| r.kind.as_deref() == Some("Node"))
                .map(|r| r.name.as_deref().unwrap_or(""))
        });
        if let Some(n) = node.and_then(|n| caches.nodes.get("", n)) {
            attach::add_node_metadata(&mut t, n);
        }
    }

    let Some(pod) = resolve_pod(caches, addr.target_ref.as_ref()) else {
        return t;
    };
    let entry = seen.entry(pod);
    merge(&mut t, &entry.labels);
    if let Some((c, cport, init)) = container_for_port(pod, port.port) {
        // The endpoint port's protocol, not the container port's (unlike endpointslice).
        set_container_labels(&mut t, c, cport, &number, protocol, init);
    }
    entry.ports.push(port.port);
    t
}

/// Go's `strconv.FormatUint(uint64(port), 10)`, which Prometheus uses for endpoint and
/// container ports (a negative `int32` wraps; the API server never stores one).
pub(super) fn go_uint(port: i32) -> String {
    (port as u64).to_string()
}

/// The pod an endpoint's target reference names, if it is a pod in the cache.
pub(super) fn resolve_pod<'a>(caches: &'a Caches, r: Option<&ObjectReference>) -> Option<&'a Pod> {
    let r = r?;
    if r.kind.as_deref() != Some("Pod") {
        return None;
    }
    caches.pods.get(
        r.namespace.as_deref().unwrap_or(""),
        r.name.as_deref().unwrap_or(""),
    )
}

/// Copies every label of `from` into `t`, `from` winning (Go's `LabelSet.Merge`).
pub(super) fn merge(t: &mut LabelSet, from: &LabelSet) {
    for (n, v) in from.iter_shared() {
        t.set_shared(n, v.clone());
    }
}

/// Regular containers, then init containers (flagged `true`), as Prometheus appends them.
fn containers(pod: &Pod) -> impl Iterator<Item = (&Container, bool)> {
    let spec = pod.spec.as_ref();
    let regular = spec.map_or(&[][..], |s| s.containers.as_slice());
    let init = spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or(&[]);
    regular
        .iter()
        .map(|c| (c, false))
        .chain(init.iter().map(|c| (c, true)))
}

/// The container whose labels an endpoint port gets. Prometheus writes the labels for every
/// container declaring the port (stopping only at that container's first such port), so the
/// last declaring container wins, init containers counting as last.
pub(super) fn container_for_port(
    pod: &Pod,
    port: i32,
) -> Option<(&Container, &ContainerPort, bool)> {
    containers(pod)
        .filter_map(|(c, init)| {
            c.ports
                .as_deref()
                .unwrap_or(&[])
                .iter()
                .find(|p| p.container_port == port)
                .map(|p| (c, p, init))
        })
        .last()
}

/// The `__meta_kubernetes_pod_container_*` labels. Plain assignments: an empty value removes
/// the label, as an empty Go value would.
pub(super) fn set_container_labels(
    t: &mut LabelSet,
    c: &Container,
    cport: &ContainerPort,
    number: &str,
    protocol: &str,
    init: bool,
) {
    t.set(CONTAINER_NAME, &c.name);
    t.set(CONTAINER_IMAGE, c.image.as_deref().unwrap_or(""));
    t.set(CONTAINER_PORT_NAME, cport.name.as_deref().unwrap_or(""));
    t.set(CONTAINER_PORT_NUMBER, number);
    t.set(CONTAINER_PORT_PROTOCOL, protocol);
    t.set(CONTAINER_INIT, if init { "true" } else { "false" });
}

/// A pod referenced by some address: its labels, built once, and the endpoint port numbers
/// that already produced a target for it.
pub(super) struct SeenPod<'a> {
    pod: &'a Pod,
    pub(super) labels: LabelSet,
    pub(super) ports: Vec<i32>,
}

/// The pods one endpoints object references, in first-reference order.
#[derive(Default)]
pub(super) struct SeenPods<'a> {
    index: HashMap<(&'a str, &'a str), usize>,
    pods: Vec<SeenPod<'a>>,
}

impl<'a> SeenPods<'a> {
    /// The entry for `pod`, created (with its pod labels) on first reference.
    pub(super) fn entry(&mut self, pod: &'a Pod) -> &mut SeenPod<'a> {
        let key = (
            pod.metadata.namespace.as_deref().unwrap_or(""),
            pod.metadata.name.as_deref().unwrap_or(""),
        );
        let i = *self.index.entry(key).or_insert_with(|| {
            self.pods.push(SeenPod {
                pod,
                labels: pod_labels(pod),
                ports: Vec::new(),
            });
            self.pods.len() - 1
        });
        &mut self.pods[i]
    }

    /// One target per container port (containers, then init containers) of every seen pod
    /// with an IP whose number no endpoint port for that pod had, at `<pod IP>:<port>`, with
    /// the group, pod and container labels (no endpoint or node labels).
    pub(super) fn uncovered_targets(&self, group: &LabelSet, out: &mut Vec<LabelSet>) {
        for sp in &self.pods {
            let ip = sp
                .pod
                .status
                .as_ref()
                .and_then(|s| s.pod_ip.as_deref())
                .unwrap_or("");
            // No IP while the pod starts or after eviction: nothing to address.
            if ip.is_empty() {
                continue;
            }
            for (c, init) in containers(sp.pod) {
                for cport in c.ports.as_deref().unwrap_or(&[]) {
                    if sp.ports.contains(&cport.container_port) {
                        continue;
                    }
                    let mut t = group.clone();
                    let number = go_uint(cport.container_port);
                    t.set("__address__", &join_host_port(ip, &number));
                    let protocol = cport.protocol.as_deref().unwrap_or("");
                    set_container_labels(&mut t, c, cport, &number, protocol, init);
                    merge(&mut t, &sp.labels);
                    out.push(t);
                }
            }
        }
    }
}

/// The Endpoints object with only what target building reads.
pub fn slim(ep: Endpoints) -> Endpoints {
    let slim_addresses = |v: Option<Vec<EndpointAddress>>| {
        v.map(|v| {
            v.into_iter()
                .map(|a| EndpointAddress {
                    hostname: a.hostname,
                    ip: a.ip,
                    node_name: a.node_name,
                    target_ref: a.target_ref.map(slim_ref),
                })
                .collect()
        })
    };
    Endpoints {
        metadata: slim_meta(ep.metadata),
        subsets: ep.subsets.map(|v| {
            v.into_iter()
                .map(|ss| EndpointSubset {
                    addresses: slim_addresses(ss.addresses),
                    not_ready_addresses: slim_addresses(ss.not_ready_addresses),
                    ports: ss.ports.map(|v| {
                        v.into_iter()
                            .map(|p| EndpointPort {
                                name: p.name,
                                port: p.port,
                                protocol: p.protocol,
                                app_protocol: None,
                            })
                            .collect()
                    }),
                })
                .collect()
        }),
    }
}

/// A target reference with only the fields used to resolve and label it.
pub(super) fn slim_ref(r: ObjectReference) -> ObjectReference {
    ObjectReference {
        kind: r.kind,
        name: r.name,
        namespace: r.namespace,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::discovery::kubernetes::testutil::{
        Labels, TEST_NS_LABELS, add_namespace, add_node, add_service, assert_targets, expect, got,
        obj, slimmed, test_service, testpod_labels, two_container_pod, with_pods,
    };
    use serde_json::json;

    /// endpoints_test.go `makeEndpoints(namespace)`.
    fn make_endpoints(ns: &str) -> Endpoints {
        obj(json!({
            "metadata": {
                "name": "testendpoints",
                "namespace": ns,
                "annotations": { "test.annotation": "test" },
            },
            "subsets": [
                {
                    "addresses": [
                        { "ip": "1.2.3.4", "hostname": "testendpoint1", "nodeName": "foobar" },
                    ],
                    "ports": [{ "name": "testport", "port": 9000, "protocol": "TCP" }],
                },
                {
                    "addresses": [{ "ip": "2.3.4.5" }],
                    "notReadyAddresses": [{ "ip": "2.3.4.5" }],
                    "ports": [{ "name": "testport", "port": 9001, "protocol": "TCP" }],
                },
                {
                    "addresses": [
                        { "ip": "6.7.8.9", "targetRef": { "kind": "Node", "name": "barbaz" } },
                    ],
                    "ports": [{ "name": "testport", "port": 9002, "protocol": "TCP" }],
                },
            ],
        }))
    }

    /// The four targets of `make_endpoints`, with extra labels for the first and last (the
    /// ones with a node).
    fn make_endpoints_targets(
        group: &[(&str, &str)],
        first: &[(&str, &str)],
        last: &[(&str, &str)],
    ) -> Vec<Labels> {
        let t1 = [
            ("__address__", "1.2.3.4:9000"),
            ("__meta_kubernetes_endpoint_hostname", "testendpoint1"),
            ("__meta_kubernetes_endpoint_node_name", "foobar"),
            ("__meta_kubernetes_endpoint_port_name", "testport"),
            ("__meta_kubernetes_endpoint_port_protocol", "TCP"),
            ("__meta_kubernetes_endpoint_ready", "true"),
        ];
        let t4 = [
            ("__address__", "6.7.8.9:9002"),
            ("__meta_kubernetes_endpoint_address_target_kind", "Node"),
            ("__meta_kubernetes_endpoint_address_target_name", "barbaz"),
            ("__meta_kubernetes_endpoint_port_name", "testport"),
            ("__meta_kubernetes_endpoint_port_protocol", "TCP"),
            ("__meta_kubernetes_endpoint_ready", "true"),
        ];
        vec![
            expect(group, &[&t1[..], first].concat()),
            expect(
                group,
                &[
                    ("__address__", "2.3.4.5:9001"),
                    ("__meta_kubernetes_endpoint_port_name", "testport"),
                    ("__meta_kubernetes_endpoint_port_protocol", "TCP"),
                    ("__meta_kubernetes_endpoint_ready", "true"),
                ],
            ),
            expect(
                group,
                &[
                    ("__address__", "2.3.4.5:9001"),
                    ("__meta_kubernetes_endpoint_port_name", "testport"),
                    ("__meta_kubernetes_endpoint_port_protocol", "TCP"),
                    ("__meta_kubernetes_endpoint_ready", "false"),
                ],
            ),
            expect(group, &[&t4[..], last].concat()),
        ]
    }

    const ENDPOINTS_GROUP: [(&str, &str); 4] = [
        ("__meta_kubernetes_namespace", "default"),
        ("__meta_kubernetes_endpoints_name", "testendpoints"),
        (
            "__meta_kubernetes_endpoints_annotation_test_annotation",
            "test",
        ),
        (
            "__meta_kubernetes_endpoints_annotationpresent_test_annotation",
            "true",
        ),
    ];

    const SERVICE_GROUP: [(&str, &str); 3] = [
        ("__meta_kubernetes_service_label_app_name", "test"),
        ("__meta_kubernetes_service_labelpresent_app_name", "true"),
        ("__meta_kubernetes_service_name", "testendpoints"),
    ];

    /// endpoints_test.go's service with `app/name: test`.
    struct Case {
        name: &'static str,
        ep: Endpoints,
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

        // TestEndpointsDiscoveryBeforeRun; a service of another name adds nothing.
        let mut caches = Caches::default();
        add_service(
            &mut caches,
            json!({ "metadata": { "name": "other", "namespace": "default", "labels": { "a": "b" } } }),
        );
        cases.push(Case {
            name: "prometheus makeEndpoints",
            ep: make_endpoints("default"),
            caches,
            attach: none,
            want: make_endpoints_targets(&ENDPOINTS_GROUP, &[], &[]),
        });

        // TestEndpointsDiscoveryWithService.
        let mut caches = Caches::default();
        add_service(&mut caches, test_service("testendpoints"));
        cases.push(Case {
            name: "service labels",
            ep: make_endpoints("default"),
            caches,
            attach: none,
            want: make_endpoints_targets(
                &[&ENDPOINTS_GROUP[..], &SERVICE_GROUP].concat(),
                &[],
                &[],
            ),
        });

        // TestEndpointsDiscoveryWithNodeMetadata: nodeName for the first address, the Node
        // target reference for the last.
        let mut caches = Caches::default();
        add_service(&mut caches, test_service("testendpoints"));
        add_node(&mut caches, "foobar", "us-east1");
        add_node(&mut caches, "barbaz", "us-west2");
        cases.push(Case {
            name: "node metadata",
            ep: make_endpoints("default"),
            caches,
            attach: node_meta,
            want: make_endpoints_targets(
                &[&ENDPOINTS_GROUP[..], &SERVICE_GROUP].concat(),
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

        // Nodes are cached but attach_metadata.node is off.
        let mut caches = Caches::default();
        add_node(&mut caches, "foobar", "us-east1");
        cases.push(Case {
            name: "node metadata off",
            ep: make_endpoints("default"),
            caches,
            attach: none,
            want: make_endpoints_targets(&ENDPOINTS_GROUP, &[], &[]),
        });

        // TestEndpointsDiscoveryWithNamespaceMetadata.
        let mut caches = Caches::default();
        add_namespace(&mut caches);
        let ns_group = [
            TEST_NS_LABELS,
            &[
                ("__meta_kubernetes_endpoints_name", "testendpoints"),
                (
                    "__meta_kubernetes_endpoints_annotation_test_annotation",
                    "test",
                ),
                (
                    "__meta_kubernetes_endpoints_annotationpresent_test_annotation",
                    "true",
                ),
            ],
        ]
        .concat();
        cases.push(Case {
            name: "namespace metadata",
            ep: make_endpoints("test-ns"),
            caches,
            attach: AttachMetadata {
                node: false,
                namespace: true,
            },
            want: make_endpoints_targets(&ns_group, &[], &[]),
        });

        // TestEndpointsDiscoveryAdd: c1 matches the endpoint port, c2's port becomes an
        // extra target at the pod IP.
        let group = [
            ("__meta_kubernetes_endpoints_name", "testendpoints"),
            ("__meta_kubernetes_namespace", "default"),
        ];
        cases.push(Case {
            name: "pod target and uncovered container port",
            ep: obj(json!({
                "metadata": { "name": "testendpoints", "namespace": "default" },
                "subsets": [{
                    "addresses": [{
                        "ip": "4.3.2.1",
                        "targetRef": { "kind": "Pod", "name": "testpod", "namespace": "default" },
                    }],
                    "ports": [{ "name": "testport", "port": 9000, "protocol": "TCP" }],
                }],
            })),
            caches: with_pods(vec![two_container_pod()]),
            attach: none,
            want: vec![
                expect(
                    &group,
                    &[
                        &[
                            ("__address__", "4.3.2.1:9000"),
                            ("__meta_kubernetes_endpoint_port_name", "testport"),
                            ("__meta_kubernetes_endpoint_port_protocol", "TCP"),
                            ("__meta_kubernetes_endpoint_ready", "true"),
                            ("__meta_kubernetes_endpoint_address_target_kind", "Pod"),
                            ("__meta_kubernetes_endpoint_address_target_name", "testpod"),
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

        // TestEndpointsDiscoveryUpdatePod, after the update: phase and readiness from the pod.
        let mut pod = two_container_pod();
        pod["spec"]["containers"] = json!([{
            "name": "c1",
            "image": "c1:latest",
            "ports": [{ "name": "mainport", "containerPort": 9000, "protocol": "TCP" }],
        }]);
        pod["status"] = json!({
            "phase": "Running",
            "conditions": [{ "type": "Ready", "status": "True" }],
            "hostIP": "2.3.4.5",
            "podIP": "4.3.2.1",
        });
        cases.push(Case {
            name: "pod phase and readiness",
            ep: obj(json!({
                "metadata": { "name": "testendpoints", "namespace": "default" },
                "subsets": [{
                    "addresses": [{
                        "ip": "4.3.2.1",
                        "targetRef": { "kind": "Pod", "name": "testpod", "namespace": "default" },
                    }],
                    "ports": [{ "name": "mainport", "port": 9000, "protocol": "TCP" }],
                }],
            })),
            caches: with_pods(vec![pod]),
            attach: none,
            want: vec![expect(
                &group,
                &[
                    ("__address__", "4.3.2.1:9000"),
                    ("__meta_kubernetes_endpoint_port_name", "mainport"),
                    ("__meta_kubernetes_endpoint_port_protocol", "TCP"),
                    ("__meta_kubernetes_endpoint_ready", "true"),
                    ("__meta_kubernetes_endpoint_address_target_kind", "Pod"),
                    ("__meta_kubernetes_endpoint_address_target_name", "testpod"),
                    ("__meta_kubernetes_pod_name", "testpod"),
                    ("__meta_kubernetes_pod_ip", "4.3.2.1"),
                    ("__meta_kubernetes_pod_ready", "true"),
                    ("__meta_kubernetes_pod_phase", "Running"),
                    ("__meta_kubernetes_pod_node_name", "testnode"),
                    ("__meta_kubernetes_pod_host_ip", "2.3.4.5"),
                    ("__meta_kubernetes_pod_container_name", "c1"),
                    ("__meta_kubernetes_pod_container_image", "c1:latest"),
                    ("__meta_kubernetes_pod_container_port_name", "mainport"),
                    ("__meta_kubernetes_pod_container_port_number", "9000"),
                    ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                    ("__meta_kubernetes_pod_uid", "deadbeef"),
                    ("__meta_kubernetes_pod_container_init", "false"),
                ],
            )],
        });

        // TestEndpointsDiscoverySidecarContainer: init containers match endpoint ports too
        // (container_init="true"), and their uncovered ports become targets.
        let sidecar_group = [
            ("__meta_kubernetes_endpoints_name", "testsidecar"),
            ("__meta_kubernetes_namespace", "default"),
        ];
        let sidecar_pod_labels = testpod_labels("4.3.2.1");
        cases.push(Case {
            name: "sidecar init containers",
            ep: obj(json!({
                "metadata": { "name": "testsidecar", "namespace": "default" },
                "subsets": [{
                    "addresses": [{
                        "ip": "4.3.2.1",
                        "targetRef": { "kind": "Pod", "name": "testpod", "namespace": "default" },
                    }],
                    "ports": [
                        { "name": "testport", "port": 9000, "protocol": "TCP" },
                        { "name": "initport", "port": 9111, "protocol": "TCP" },
                    ],
                }],
            })),
            caches: with_pods(vec![json!({
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
            })]),
            attach: none,
            want: vec![
                expect(
                    &sidecar_group,
                    &[
                        &[
                            ("__address__", "4.3.2.1:9000"),
                            ("__meta_kubernetes_endpoint_address_target_kind", "Pod"),
                            ("__meta_kubernetes_endpoint_address_target_name", "testpod"),
                            ("__meta_kubernetes_endpoint_port_name", "testport"),
                            ("__meta_kubernetes_endpoint_port_protocol", "TCP"),
                            ("__meta_kubernetes_endpoint_ready", "true"),
                            ("__meta_kubernetes_pod_container_image", "c1:latest"),
                            ("__meta_kubernetes_pod_container_name", "c1"),
                            ("__meta_kubernetes_pod_container_port_name", "mainport"),
                            ("__meta_kubernetes_pod_container_port_number", "9000"),
                            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_init", "false"),
                        ][..],
                        &sidecar_pod_labels,
                    ]
                    .concat(),
                ),
                expect(
                    &sidecar_group,
                    &[
                        &[
                            ("__address__", "4.3.2.1:9111"),
                            ("__meta_kubernetes_endpoint_address_target_kind", "Pod"),
                            ("__meta_kubernetes_endpoint_address_target_name", "testpod"),
                            ("__meta_kubernetes_endpoint_port_name", "initport"),
                            ("__meta_kubernetes_endpoint_port_protocol", "TCP"),
                            ("__meta_kubernetes_endpoint_ready", "true"),
                            ("__meta_kubernetes_pod_container_image", "ic2:latest"),
                            ("__meta_kubernetes_pod_container_name", "ic2"),
                            ("__meta_kubernetes_pod_container_port_name", "initport"),
                            ("__meta_kubernetes_pod_container_port_number", "9111"),
                            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_init", "true"),
                        ][..],
                        &sidecar_pod_labels,
                    ]
                    .concat(),
                ),
                expect(
                    &sidecar_group,
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
                        &sidecar_pod_labels,
                    ]
                    .concat(),
                ),
            ],
        });

        // IPv6, a not-ready address, node metadata via nodeName with a Pod target reference,
        // and the pod's Ready=False. Endpoint and node labels stay off the extra target.
        let mut caches = with_pods(vec![json!({
            "metadata": {
                "name": "web-0",
                "namespace": "shop",
                "uid": "u-1",
                "labels": { "app.kubernetes.io/name": "web" },
                "ownerReferences": [
                    { "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "s", "controller": true },
                ],
            },
            "spec": {
                "nodeName": "n1",
                "containers": [{
                    "name": "app",
                    "image": "web:1",
                    "ports": [
                        { "name": "http", "containerPort": 8080, "protocol": "TCP" },
                        { "name": "pprof", "containerPort": 6060, "protocol": "TCP" },
                    ],
                }],
            },
            "status": {
                "phase": "Running",
                "conditions": [{ "type": "Ready", "status": "False" }],
                "hostIP": "fd00::1",
                "podIP": "fd00::5",
            },
        })]);
        add_node(&mut caches, "n1", "zone-a");
        let web_pod = [
            ("__meta_kubernetes_pod_name", "web-0"),
            ("__meta_kubernetes_pod_ip", "fd00::5"),
            ("__meta_kubernetes_pod_ready", "false"),
            ("__meta_kubernetes_pod_phase", "Running"),
            ("__meta_kubernetes_pod_node_name", "n1"),
            ("__meta_kubernetes_pod_host_ip", "fd00::1"),
            ("__meta_kubernetes_pod_uid", "u-1"),
            ("__meta_kubernetes_pod_label_app_kubernetes_io_name", "web"),
            (
                "__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name",
                "true",
            ),
            ("__meta_kubernetes_pod_controller_kind", "StatefulSet"),
            ("__meta_kubernetes_pod_controller_name", "web"),
        ];
        let web_group = [
            ("__meta_kubernetes_namespace", "shop"),
            ("__meta_kubernetes_endpoints_name", "web"),
        ];
        cases.push(Case {
            name: "ipv6 not-ready pod address with node metadata",
            ep: obj(json!({
                "metadata": { "name": "web", "namespace": "shop" },
                "subsets": [{
                    "notReadyAddresses": [{
                        "ip": "fd00::5",
                        "nodeName": "n1",
                        "targetRef": { "kind": "Pod", "name": "web-0", "namespace": "shop" },
                    }],
                    "ports": [{ "name": "http", "port": 8080, "protocol": "TCP" }],
                }],
            })),
            caches,
            attach: node_meta,
            want: vec![
                expect(
                    &web_group,
                    &[
                        &[
                            ("__address__", "[fd00::5]:8080"),
                            ("__meta_kubernetes_endpoint_port_name", "http"),
                            ("__meta_kubernetes_endpoint_port_protocol", "TCP"),
                            ("__meta_kubernetes_endpoint_ready", "false"),
                            ("__meta_kubernetes_endpoint_node_name", "n1"),
                            ("__meta_kubernetes_endpoint_address_target_kind", "Pod"),
                            ("__meta_kubernetes_endpoint_address_target_name", "web-0"),
                            ("__meta_kubernetes_node_name", "n1"),
                            ("__meta_kubernetes_node_label_az", "zone-a"),
                            ("__meta_kubernetes_node_labelpresent_az", "true"),
                            ("__meta_kubernetes_pod_container_name", "app"),
                            ("__meta_kubernetes_pod_container_image", "web:1"),
                            ("__meta_kubernetes_pod_container_port_name", "http"),
                            ("__meta_kubernetes_pod_container_port_number", "8080"),
                            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_init", "false"),
                        ][..],
                        &web_pod,
                    ]
                    .concat(),
                ),
                expect(
                    &web_group,
                    &[
                        &[
                            ("__address__", "[fd00::5]:6060"),
                            ("__meta_kubernetes_pod_container_name", "app"),
                            ("__meta_kubernetes_pod_container_image", "web:1"),
                            ("__meta_kubernetes_pod_container_port_name", "pprof"),
                            ("__meta_kubernetes_pod_container_port_number", "6060"),
                            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                            ("__meta_kubernetes_pod_container_init", "false"),
                        ][..],
                        &web_pod,
                    ]
                    .concat(),
                ),
            ],
        });

        // nodeName wins over a Node target reference; an uncached node adds nothing.
        let mut caches = Caches::default();
        add_node(&mut caches, "foobar", "us-east1");
        add_node(&mut caches, "barbaz", "us-west2");
        cases.push(Case {
            name: "nodeName before Node target ref; missing node",
            ep: obj(json!({
                "metadata": { "name": "e", "namespace": "default" },
                "subsets": [{
                    "addresses": [
                        { "ip": "10.0.0.1", "nodeName": "foobar", "targetRef": { "kind": "Node", "name": "barbaz" } },
                        { "ip": "10.0.0.2", "nodeName": "gone" },
                    ],
                    "ports": [{ "port": 80 }],
                }],
            })),
            caches,
            attach: node_meta,
            want: vec![
                expect(
                    &[
                        ("__meta_kubernetes_namespace", "default"),
                        ("__meta_kubernetes_endpoints_name", "e"),
                    ],
                    &[
                        ("__address__", "10.0.0.1:80"),
                        ("__meta_kubernetes_endpoint_ready", "true"),
                        ("__meta_kubernetes_endpoint_node_name", "foobar"),
                        ("__meta_kubernetes_endpoint_address_target_kind", "Node"),
                        ("__meta_kubernetes_endpoint_address_target_name", "barbaz"),
                        ("__meta_kubernetes_node_name", "foobar"),
                        ("__meta_kubernetes_node_label_az", "us-east1"),
                        ("__meta_kubernetes_node_labelpresent_az", "true"),
                    ],
                ),
                expect(
                    &[
                        ("__meta_kubernetes_namespace", "default"),
                        ("__meta_kubernetes_endpoints_name", "e"),
                    ],
                    &[
                        ("__address__", "10.0.0.2:80"),
                        ("__meta_kubernetes_endpoint_ready", "true"),
                        ("__meta_kubernetes_endpoint_node_name", "gone"),
                    ],
                ),
            ],
        });

        // A pod that is not cached: the reference labels only. A cached pod without an IP:
        // pod labels on the endpoint target, but no extra targets.
        let group_e = [
            ("__meta_kubernetes_namespace", "default"),
            ("__meta_kubernetes_endpoints_name", "e"),
        ];
        cases.push(Case {
            name: "uncached pod; pod without IP",
            ep: obj(json!({
                "metadata": { "name": "e", "namespace": "default" },
                "subsets": [{
                    "addresses": [
                        { "ip": "10.0.0.7", "targetRef": { "kind": "Pod", "name": "missing", "namespace": "default" } },
                        { "ip": "10.0.0.8", "targetRef": { "kind": "Pod", "name": "starting", "namespace": "default" } },
                    ],
                    "ports": [{ "name": "http", "port": 80, "protocol": "TCP" }],
                }],
            })),
            caches: with_pods(vec![json!({
                "metadata": { "name": "starting", "namespace": "default" },
                "spec": { "containers": [{
                    "name": "c",
                    "ports": [
                        { "containerPort": 80, "protocol": "TCP" },
                        { "containerPort": 81, "protocol": "TCP" },
                    ],
                }]},
                "status": { "phase": "Pending" },
            })]),
            attach: none,
            want: vec![
                expect(
                    &group_e,
                    &[
                        ("__address__", "10.0.0.7:80"),
                        ("__meta_kubernetes_endpoint_port_name", "http"),
                        ("__meta_kubernetes_endpoint_port_protocol", "TCP"),
                        ("__meta_kubernetes_endpoint_ready", "true"),
                        ("__meta_kubernetes_endpoint_address_target_kind", "Pod"),
                        ("__meta_kubernetes_endpoint_address_target_name", "missing"),
                    ],
                ),
                expect(
                    &group_e,
                    &[
                        ("__address__", "10.0.0.8:80"),
                        ("__meta_kubernetes_endpoint_port_name", "http"),
                        ("__meta_kubernetes_endpoint_port_protocol", "TCP"),
                        ("__meta_kubernetes_endpoint_ready", "true"),
                        ("__meta_kubernetes_endpoint_address_target_kind", "Pod"),
                        ("__meta_kubernetes_endpoint_address_target_name", "starting"),
                        ("__meta_kubernetes_pod_name", "starting"),
                        ("__meta_kubernetes_pod_ready", "unknown"),
                        ("__meta_kubernetes_pod_phase", "Pending"),
                        ("__meta_kubernetes_pod_container_name", "c"),
                        ("__meta_kubernetes_pod_container_port_number", "80"),
                        ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
                        ("__meta_kubernetes_pod_container_init", "false"),
                    ],
                ),
            ],
        });

        // Two containers declare the endpoint port: Prometheus overwrites the container labels
        // for each, so the last wins, including its missing port name. The protocol comes
        // from the endpoint port.
        cases.push(Case {
            name: "same port in two containers; endpoint protocol",
            ep: obj(json!({
                "metadata": { "name": "e", "namespace": "default" },
                "subsets": [{
                    "addresses": [
                        { "ip": "10.0.0.9", "targetRef": { "kind": "Pod", "name": "p", "namespace": "default" } },
                    ],
                    "ports": [{ "port": 53, "protocol": "UDP" }],
                }],
            })),
            caches: with_pods(vec![json!({
                "metadata": { "name": "p", "namespace": "default" },
                "spec": { "containers": [
                    { "name": "a", "image": "a:1", "ports": [{ "name": "dns", "containerPort": 53, "protocol": "TCP" }] },
                    { "name": "b", "image": "b:1", "ports": [{ "containerPort": 53, "protocol": "TCP" }] },
                ]},
                "status": { "podIP": "10.0.0.9" },
            })]),
            attach: none,
            want: vec![expect(
                &group_e,
                &[
                    ("__address__", "10.0.0.9:53"),
                    ("__meta_kubernetes_endpoint_port_protocol", "UDP"),
                    ("__meta_kubernetes_endpoint_ready", "true"),
                    ("__meta_kubernetes_endpoint_address_target_kind", "Pod"),
                    ("__meta_kubernetes_endpoint_address_target_name", "p"),
                    ("__meta_kubernetes_pod_name", "p"),
                    ("__meta_kubernetes_pod_ip", "10.0.0.9"),
                    ("__meta_kubernetes_pod_ready", "unknown"),
                    ("__meta_kubernetes_pod_container_name", "b"),
                    ("__meta_kubernetes_pod_container_image", "b:1"),
                    ("__meta_kubernetes_pod_container_port_number", "53"),
                    ("__meta_kubernetes_pod_container_port_protocol", "UDP"),
                    ("__meta_kubernetes_pod_container_init", "false"),
                ],
            )],
        });

        // Missing optional fields: unnamed port without protocol, bare address; subsets
        // without ports or without addresses give nothing.
        cases.push(Case {
            name: "missing optional fields",
            ep: obj(json!({
                "metadata": { "name": "e", "namespace": "default" },
                "subsets": [
                    { "addresses": [{ "ip": "10.0.0.1" }], "ports": [{ "port": 80 }] },
                    { "addresses": [{ "ip": "10.0.0.2" }] },
                    { "ports": [{ "port": 81 }] },
                    {},
                ],
            })),
            caches: Caches::default(),
            attach: none,
            want: vec![expect(
                &group_e,
                &[
                    ("__address__", "10.0.0.1:80"),
                    ("__meta_kubernetes_endpoint_ready", "true"),
                ],
            )],
        });

        // TestEndpointsDiscoveryEmptySubsets.
        cases.push(Case {
            name: "no subsets",
            ep: obj(json!({
                "metadata": { "name": "testendpoints", "namespace": "default" },
                "subsets": [],
            })),
            caches: Caches::default(),
            attach: none,
            want: vec![],
        });
        cases
    }

    #[test]
    fn targets_match_prometheus() {
        for c in cases() {
            assert_targets(c.name, &targets(&c.ep, &c.caches, c.attach), &c.want);
        }
    }

    #[test]
    fn slim_objects_build_the_same_targets() {
        for c in cases() {
            let full = targets(&c.ep, &c.caches, c.attach);
            let slimmed_targets = targets(&slim(c.ep), &slimmed(&c.caches), c.attach);
            assert_targets(
                c.name,
                &slimmed_targets,
                &full.iter().map(got).collect::<Vec<_>>(),
            );
        }
    }

    #[test]
    fn slim_drops_what_targets_do_not_read() {
        let ep = slim(obj(json!({
            "metadata": {
                "name": "e",
                "namespace": "default",
                "managedFields": [{ "manager": "kube-controller-manager" }],
            },
            "subsets": [{
                "addresses": [{
                    "ip": "10.0.0.1",
                    "targetRef": { "kind": "Pod", "name": "p", "namespace": "default", "uid": "x", "resourceVersion": "7" },
                }],
                "ports": [{ "name": "http", "port": 80, "protocol": "TCP", "appProtocol": "http" }],
            }],
        })));
        assert!(ep.metadata.managed_fields.is_none());
        let ss = &ep.subsets.expect("subsets kept")[0];
        let r = ss.addresses.as_ref().expect("addresses kept")[0]
            .target_ref
            .as_ref()
            .expect("target ref kept");
        assert!(r.uid.is_none() && r.resource_version.is_none());
        assert_eq!(r.name.as_deref(), Some("p"));
        assert!(
            ss.ports.as_ref().expect("ports kept")[0]
                .app_protocol
                .is_none()
        );
    }
}
