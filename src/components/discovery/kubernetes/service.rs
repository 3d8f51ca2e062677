//! `role = "service"`: one target per service port, addressed by the service's DNS name,
//! exactly as Prometheus' `discovery/kubernetes/service.go` (v3.13.2, the version Alloy links)
//! builds it. Also the service labels the endpoints roles add to their groups.
//!
//! `__meta_kubernetes_service_loadbalancer_ip` is `spec.loadBalancerIP`, as in v3.13.2;
//! Prometheus after 3.13 prefers `status.loadBalancer.ingress[].ip` (comma-joined).

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};

use super::AttachMetadata;
use super::attach;
use super::cache::Caches;
use super::labels::{NAMESPACE, add_metadata, join_host_port, set};
use super::pod::slim_meta;
use crate::labels::LabelSet;

const PREFIX: &str = "__meta_kubernetes_service_";
const NAME: &str = "__meta_kubernetes_service_name";
const PORT_NAME: &str = "__meta_kubernetes_service_port_name";
const PORT_NUMBER: &str = "__meta_kubernetes_service_port_number";
const PORT_PROTOCOL: &str = "__meta_kubernetes_service_port_protocol";
const CLUSTER_IP: &str = "__meta_kubernetes_service_cluster_ip";
const LOADBALANCER_IP: &str = "__meta_kubernetes_service_loadbalancer_ip";
const EXTERNAL_NAME: &str = "__meta_kubernetes_service_external_name";
const TYPE: &str = "__meta_kubernetes_service_type";

/// One target per `spec.ports` entry, `<name>.<namespace>.svc:<port>`.
pub fn targets(svc: &Service, caches: &Caches, attach: AttachMetadata) -> Vec<LabelSet> {
    let ns = svc.metadata.namespace.as_deref().unwrap_or("");
    let name = svc.metadata.name.as_deref().unwrap_or("");
    let mut group = LabelSet::with_capacity(8);
    add_service_labels(&mut group, svc);
    if attach.namespace
        && let Some(n) = caches.namespaces.get("", ns)
    {
        attach::add_namespace_metadata(&mut group, n);
    }

    let Some(spec) = &svc.spec else {
        return Vec::new();
    };
    let ty = spec.type_.as_deref().unwrap_or("");
    let host = format!("{name}.{ns}.svc");
    let ports = spec.ports.as_deref().unwrap_or(&[]);
    ports
        .iter()
        .map(|p| {
            let mut t = group.clone();
            let number = p.port.to_string();
            t.set("__address__", &join_host_port(&host, &number));
            set(&mut t, PORT_NAME, p.name.as_deref().unwrap_or(""));
            set(&mut t, PORT_NUMBER, &number);
            set(&mut t, PORT_PROTOCOL, p.protocol.as_deref().unwrap_or(""));
            set(&mut t, TYPE, ty);
            if ty == "ExternalName" {
                set(
                    &mut t,
                    EXTERNAL_NAME,
                    spec.external_name.as_deref().unwrap_or(""),
                );
            } else {
                set(&mut t, CLUSTER_IP, spec.cluster_ip.as_deref().unwrap_or(""));
            }
            if ty == "LoadBalancer" {
                set(
                    &mut t,
                    LOADBALANCER_IP,
                    spec.load_balancer_ip.as_deref().unwrap_or(""),
                );
            }
            t
        })
        .collect()
}

/// Prometheus' `serviceLabels`: namespace, service name, and the service's label and
/// annotation families. Shared with the endpoints roles, which merge them into their groups.
pub(super) fn add_service_labels(labels: &mut LabelSet, svc: &Service) {
    set(
        labels,
        NAMESPACE,
        svc.metadata.namespace.as_deref().unwrap_or(""),
    );
    set(labels, NAME, svc.metadata.name.as_deref().unwrap_or(""));
    add_metadata(
        labels,
        PREFIX,
        svc.metadata.labels.as_ref(),
        svc.metadata.annotations.as_ref(),
    );
}

/// The service with only what the service and endpoints roles read (the IP family fields are
/// for the endpointslice role's dual-stack check).
pub fn slim(svc: Service) -> Service {
    Service {
        metadata: slim_meta(svc.metadata),
        spec: svc.spec.map(|s| ServiceSpec {
            type_: s.type_,
            cluster_ip: s.cluster_ip,
            external_name: s.external_name,
            load_balancer_ip: s.load_balancer_ip,
            ip_families: s.ip_families,
            ip_family_policy: s.ip_family_policy,
            ports: s.ports.map(|v| {
                v.into_iter()
                    .map(|p| ServicePort {
                        name: p.name,
                        port: p.port,
                        protocol: p.protocol,
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::discovery::kubernetes::testutil::{
        TEST_NS_LABELS, add_namespace, expect, got, obj,
    };
    use serde_json::json;

    /// Prometheus' `makeService(namespace)`.
    fn make_service(ns: &str) -> Service {
        obj(json!({
            "metadata": { "name": "testservice", "namespace": ns },
            "spec": {
                "ports": [{ "name": "testport", "protocol": "TCP", "port": 30900 }],
                "type": "ClusterIP",
                "clusterIP": "10.0.0.1",
            },
        }))
    }

    #[test]
    fn targets_match_prometheus() {
        struct Case {
            name: &'static str,
            svc: Service,
            attach: AttachMetadata,
            want: Vec<Vec<(String, String)>>,
        }
        let none = AttachMetadata::default();
        let ns_meta = AttachMetadata {
            node: false,
            namespace: true,
        };
        let cases = vec![
            // service_test.go makeMultiPortService / TestServiceDiscoveryUpdate.
            Case {
                name: "multi-port with labels and annotations",
                svc: obj(json!({
                    "metadata": {
                        "name": "testservice",
                        "namespace": "default",
                        "labels": { "test-label": "testvalue" },
                        "annotations": { "test-annotation": "testannotationvalue" },
                    },
                    "spec": {
                        "ports": [
                            { "name": "testport0", "protocol": "TCP", "port": 30900 },
                            { "name": "testport1", "protocol": "UDP", "port": 30901 },
                        ],
                        "type": "ClusterIP",
                        "clusterIP": "10.0.0.1",
                    },
                })),
                attach: none,
                want: {
                    let group = [
                        ("__meta_kubernetes_service_name", "testservice"),
                        ("__meta_kubernetes_namespace", "default"),
                        ("__meta_kubernetes_service_label_test_label", "testvalue"),
                        ("__meta_kubernetes_service_labelpresent_test_label", "true"),
                        (
                            "__meta_kubernetes_service_annotation_test_annotation",
                            "testannotationvalue",
                        ),
                        (
                            "__meta_kubernetes_service_annotationpresent_test_annotation",
                            "true",
                        ),
                    ];
                    vec![
                        expect(
                            &group,
                            &[
                                ("__meta_kubernetes_service_port_protocol", "TCP"),
                                ("__address__", "testservice.default.svc:30900"),
                                ("__meta_kubernetes_service_type", "ClusterIP"),
                                ("__meta_kubernetes_service_cluster_ip", "10.0.0.1"),
                                ("__meta_kubernetes_service_port_name", "testport0"),
                                ("__meta_kubernetes_service_port_number", "30900"),
                            ],
                        ),
                        expect(
                            &group,
                            &[
                                ("__meta_kubernetes_service_port_protocol", "UDP"),
                                ("__address__", "testservice.default.svc:30901"),
                                ("__meta_kubernetes_service_type", "ClusterIP"),
                                ("__meta_kubernetes_service_cluster_ip", "10.0.0.1"),
                                ("__meta_kubernetes_service_port_name", "testport1"),
                                ("__meta_kubernetes_service_port_number", "30901"),
                            ],
                        ),
                    ]
                },
            },
            // TestServiceDiscoveryAdd, the three services.
            Case {
                name: "cluster ip",
                svc: make_service("default"),
                attach: none,
                want: vec![expect(
                    &[
                        ("__meta_kubernetes_service_name", "testservice"),
                        ("__meta_kubernetes_namespace", "default"),
                    ],
                    &[
                        ("__meta_kubernetes_service_port_protocol", "TCP"),
                        ("__address__", "testservice.default.svc:30900"),
                        ("__meta_kubernetes_service_type", "ClusterIP"),
                        ("__meta_kubernetes_service_cluster_ip", "10.0.0.1"),
                        ("__meta_kubernetes_service_port_name", "testport"),
                        ("__meta_kubernetes_service_port_number", "30900"),
                    ],
                )],
            },
            Case {
                name: "external name: no cluster ip",
                svc: obj(json!({
                    "metadata": { "name": "testservice-external", "namespace": "default" },
                    "spec": {
                        "ports": [{ "name": "testport", "protocol": "TCP", "port": 31900 }],
                        "type": "ExternalName",
                        "externalName": "FooExternalName",
                        // Ignored for ExternalName services.
                        "clusterIP": "10.0.0.9",
                    },
                })),
                attach: none,
                want: vec![expect(
                    &[
                        ("__meta_kubernetes_service_name", "testservice-external"),
                        ("__meta_kubernetes_namespace", "default"),
                    ],
                    &[
                        ("__meta_kubernetes_service_port_protocol", "TCP"),
                        ("__address__", "testservice-external.default.svc:31900"),
                        ("__meta_kubernetes_service_type", "ExternalName"),
                        ("__meta_kubernetes_service_port_name", "testport"),
                        ("__meta_kubernetes_service_port_number", "31900"),
                        ("__meta_kubernetes_service_external_name", "FooExternalName"),
                    ],
                )],
            },
            Case {
                name: "load balancer ip",
                svc: obj(json!({
                    "metadata": { "name": "testservice-loadbalancer", "namespace": "default" },
                    "spec": {
                        "ports": [{ "name": "testport", "protocol": "TCP", "port": 31900 }],
                        "type": "LoadBalancer",
                        "loadBalancerIP": "127.0.0.1",
                        "clusterIP": "10.0.0.1",
                    },
                    // v3.13.2 reads only the spec field.
                    "status": { "loadBalancer": { "ingress": [{ "ip": "198.51.100.1" }] } },
                })),
                attach: none,
                want: vec![expect(
                    &[
                        ("__meta_kubernetes_service_name", "testservice-loadbalancer"),
                        ("__meta_kubernetes_namespace", "default"),
                    ],
                    &[
                        ("__meta_kubernetes_service_port_protocol", "TCP"),
                        ("__address__", "testservice-loadbalancer.default.svc:31900"),
                        ("__meta_kubernetes_service_type", "LoadBalancer"),
                        ("__meta_kubernetes_service_port_name", "testport"),
                        ("__meta_kubernetes_service_port_number", "31900"),
                        ("__meta_kubernetes_service_cluster_ip", "10.0.0.1"),
                        ("__meta_kubernetes_service_loadbalancer_ip", "127.0.0.1"),
                    ],
                )],
            },
            // TestServiceDiscoveryWithNamespaceMetadata.
            Case {
                name: "namespace metadata",
                svc: make_service("test-ns"),
                attach: ns_meta,
                want: vec![expect(
                    &[
                        TEST_NS_LABELS,
                        &[("__meta_kubernetes_service_name", "testservice")],
                    ]
                    .concat(),
                    &[
                        ("__address__", "testservice.test-ns.svc:30900"),
                        ("__meta_kubernetes_service_cluster_ip", "10.0.0.1"),
                        ("__meta_kubernetes_service_port_name", "testport"),
                        ("__meta_kubernetes_service_port_number", "30900"),
                        ("__meta_kubernetes_service_port_protocol", "TCP"),
                        ("__meta_kubernetes_service_type", "ClusterIP"),
                    ],
                )],
            },
            Case {
                name: "namespace metadata off: none attached",
                svc: make_service("test-ns"),
                attach: none,
                want: vec![expect(
                    &[
                        ("__meta_kubernetes_namespace", "test-ns"),
                        ("__meta_kubernetes_service_name", "testservice"),
                    ],
                    &[
                        ("__address__", "testservice.test-ns.svc:30900"),
                        ("__meta_kubernetes_service_cluster_ip", "10.0.0.1"),
                        ("__meta_kubernetes_service_port_name", "testport"),
                        ("__meta_kubernetes_service_port_number", "30900"),
                        ("__meta_kubernetes_service_port_protocol", "TCP"),
                        ("__meta_kubernetes_service_type", "ClusterIP"),
                    ],
                )],
            },
            Case {
                name: "namespace not cached: group without namespace metadata",
                svc: make_service("other"),
                attach: ns_meta,
                want: vec![expect(
                    &[
                        ("__meta_kubernetes_namespace", "other"),
                        ("__meta_kubernetes_service_name", "testservice"),
                    ],
                    &[
                        ("__address__", "testservice.other.svc:30900"),
                        ("__meta_kubernetes_service_cluster_ip", "10.0.0.1"),
                        ("__meta_kubernetes_service_port_name", "testport"),
                        ("__meta_kubernetes_service_port_number", "30900"),
                        ("__meta_kubernetes_service_port_protocol", "TCP"),
                        ("__meta_kubernetes_service_type", "ClusterIP"),
                    ],
                )],
            },
            Case {
                name: "headless ipv6 service, unnamed port, no protocol or type",
                svc: obj(json!({
                    "metadata": { "name": "db", "namespace": "data" },
                    "spec": {
                        "ports": [{ "port": 5432 }],
                        "clusterIP": "None",
                        "clusterIPs": ["None"],
                        "ipFamilies": ["IPv6"],
                    },
                })),
                attach: none,
                want: vec![expect(
                    &[
                        ("__meta_kubernetes_namespace", "data"),
                        ("__meta_kubernetes_service_name", "db"),
                    ],
                    &[
                        ("__address__", "db.data.svc:5432"),
                        ("__meta_kubernetes_service_cluster_ip", "None"),
                        ("__meta_kubernetes_service_port_number", "5432"),
                    ],
                )],
            },
            Case {
                name: "ipv6 cluster ip is a label, not the address",
                svc: obj(json!({
                    "metadata": { "name": "web", "namespace": "default" },
                    "spec": {
                        "ports": [{ "name": "http", "protocol": "TCP", "port": 80 }],
                        "type": "NodePort",
                        "clusterIP": "fd00:10:96::1",
                    },
                })),
                attach: none,
                want: vec![expect(
                    &[
                        ("__meta_kubernetes_namespace", "default"),
                        ("__meta_kubernetes_service_name", "web"),
                    ],
                    &[
                        ("__address__", "web.default.svc:80"),
                        ("__meta_kubernetes_service_cluster_ip", "fd00:10:96::1"),
                        ("__meta_kubernetes_service_port_name", "http"),
                        ("__meta_kubernetes_service_port_number", "80"),
                        ("__meta_kubernetes_service_port_protocol", "TCP"),
                        ("__meta_kubernetes_service_type", "NodePort"),
                    ],
                )],
            },
            Case {
                name: "no ports: no targets",
                svc: obj(json!({
                    "metadata": { "name": "empty", "namespace": "default" },
                    "spec": { "type": "ClusterIP", "clusterIP": "10.0.0.2" },
                })),
                attach: none,
                want: vec![],
            },
            Case {
                name: "no spec: no targets",
                svc: obj(json!({ "metadata": { "name": "bare", "namespace": "default" } })),
                attach: none,
                want: vec![],
            },
        ];
        let mut caches = Caches::default();
        add_namespace(&mut caches);
        for c in cases {
            let actual: Vec<_> = targets(&c.svc, &caches, c.attach).iter().map(got).collect();
            assert_eq!(actual, c.want, "{}", c.name);
            let slimmed: Vec<_> = targets(&slim(c.svc), &caches, c.attach)
                .iter()
                .map(got)
                .collect();
            assert_eq!(slimmed, c.want, "{} (slim)", c.name);
        }
    }

    #[test]
    fn slim_keeps_dual_stack_fields_and_drops_the_rest() {
        let s = slim(obj(json!({
            "metadata": {
                "name": "s",
                "namespace": "n",
                "managedFields": [{ "manager": "kubectl" }],
            },
            "spec": {
                "ports": [{ "name": "p", "port": 1, "targetPort": 8080, "nodePort": 30001 }],
                "selector": { "app": "x" },
                "ipFamilyPolicy": "PreferDualStack",
                "ipFamilies": ["IPv4", "IPv6"],
                "sessionAffinity": "None",
            },
            "status": { "loadBalancer": {} },
        })));
        assert!(s.metadata.managed_fields.is_none());
        assert!(s.status.is_none());
        let spec = s.spec.expect("spec kept");
        assert!(spec.selector.is_none() && spec.session_affinity.is_none());
        assert_eq!(spec.ip_family_policy.as_deref(), Some("PreferDualStack"));
        assert_eq!(spec.ip_families.map(|f| f.len()), Some(2));
        let port = &spec.ports.expect("ports kept")[0];
        assert!(port.target_port.is_none() && port.node_port.is_none());
    }
}
