//! Prometheus' `ingress_test.go` cases (v3.13.2) as tables: the same ingress with each TLS
//! mode, with namespace metadata, and the hostname pattern rule.

use serde_json::{Value, json};

use super::*;
use crate::components::discovery::kubernetes::testutil::{
    Labels, TEST_NS_LABELS, add_namespace, assert_targets, expect, obj,
};

#[derive(Clone, Copy, Debug)]
enum Tls {
    No,
    Yes,
    Mixed,
    Wildcard,
}

/// Prometheus' `makeIngress(namespace, tls)`.
fn make_ingress(ns: &str, tls: Tls) -> Value {
    let mut v = json!({
        "metadata": {
            "name": "testingress",
            "namespace": ns,
            "labels": { "test/label": "testvalue" },
            "annotations": { "test/annotation": "testannotationvalue" },
        },
        "spec": {
            "ingressClassName": "testclass",
            "rules": [
                {
                    "host": "example.com",
                    "http": { "paths": [
                        { "path": "/", "pathType": "Prefix", "backend": {} },
                        { "path": "/foo", "pathType": "Prefix", "backend": {} },
                    ] },
                },
                // No backend config: no target.
                { "host": "nobackend.example.com", "http": {} },
                {
                    "host": "test.example.com",
                    "http": { "paths": [{ "pathType": "Prefix", "backend": {} }] },
                },
            ],
        },
    });
    let hosts: &[&str] = match tls {
        Tls::No => &[],
        Tls::Yes => &["example.com", "test.example.com"],
        Tls::Mixed => &["example.com"],
        Tls::Wildcard => &["*.example.com"],
    };
    if !hosts.is_empty() {
        v["spec"]["tls"] = json!([{ "hosts": hosts }]);
    }
    v
}

/// Prometheus' `expectedTargetGroups(ns, tls)`, with `extra` group labels.
fn expected(ns: &str, tls: Tls, extra: &[(&str, &str)]) -> Vec<Labels> {
    let (scheme1, scheme2) = match tls {
        Tls::No => ("http", "http"),
        Tls::Yes => ("https", "https"),
        Tls::Mixed => ("https", "http"),
        Tls::Wildcard => ("http", "https"),
    };
    let mut group = vec![
        ("__meta_kubernetes_ingress_name", "testingress"),
        ("__meta_kubernetes_namespace", ns),
        ("__meta_kubernetes_ingress_label_test_label", "testvalue"),
        ("__meta_kubernetes_ingress_labelpresent_test_label", "true"),
        (
            "__meta_kubernetes_ingress_annotation_test_annotation",
            "testannotationvalue",
        ),
        (
            "__meta_kubernetes_ingress_annotationpresent_test_annotation",
            "true",
        ),
        ("__meta_kubernetes_ingress_class_name", "testclass"),
    ];
    group.extend_from_slice(extra);
    let target = |scheme: &'static str, host: &'static str, path: &'static str| {
        expect(
            &group,
            &[
                ("__meta_kubernetes_ingress_scheme", scheme),
                ("__meta_kubernetes_ingress_host", host),
                ("__meta_kubernetes_ingress_path", path),
                ("__address__", host),
            ],
        )
    };
    vec![
        target(scheme1, "example.com", "/"),
        target(scheme1, "example.com", "/foo"),
        target(scheme2, "test.example.com", "/"),
    ]
}

#[test]
fn targets_match_prometheus() {
    let none = AttachMetadata::default();
    let ns_meta = AttachMetadata {
        node: false,
        namespace: true,
    };
    let mut with_ns = Caches::default();
    add_namespace(&mut with_ns);
    let empty = Caches::default();
    // (case, ingress, attach, caches, expected)
    let cases: Vec<(&str, Value, AttachMetadata, &Caches, Vec<Labels>)> = vec![
        (
            "TestIngressDiscoveryAdd",
            make_ingress("default", Tls::No),
            none,
            &empty,
            expected("default", Tls::No, &[]),
        ),
        (
            "TestIngressDiscoveryAddTLS",
            make_ingress("default", Tls::Yes),
            none,
            &empty,
            expected("default", Tls::Yes, &[]),
        ),
        (
            "TestIngressDiscoveryAddMixed",
            make_ingress("default", Tls::Mixed),
            none,
            &empty,
            expected("default", Tls::Mixed, &[]),
        ),
        (
            "wildcard TLS host (makeIngress's TLSWildcard)",
            make_ingress("default", Tls::Wildcard),
            none,
            &empty,
            expected("default", Tls::Wildcard, &[]),
        ),
        (
            "TestIngressDiscoveryNamespaces: ns2's ingress",
            make_ingress("ns2", Tls::No),
            none,
            &empty,
            expected("ns2", Tls::No, &[]),
        ),
        (
            "TestIngressDiscoveryWithNamespaceMetadata",
            make_ingress("test-ns", Tls::No),
            ns_meta,
            &with_ns,
            // TEST_NS_LABELS starts with the namespace label itself, already in the group.
            expected("test-ns", Tls::No, &TEST_NS_LABELS[1..]),
        ),
        (
            "namespace metadata not asked for: not added",
            make_ingress("test-ns", Tls::No),
            none,
            &with_ns,
            expected("test-ns", Tls::No, &[]),
        ),
    ];
    for (case, ing, attach, caches, want) in cases {
        let ing: Ingress = obj(ing);
        assert_targets(case, &targets(&ing, caches, attach), &want);
        // The cache keeps slim ingresses: they must build the same targets.
        assert_targets(case, &targets(&slim(ing), caches, attach), &want);
    }
}

#[test]
fn rules_without_http_without_class_and_without_spec() {
    let ing: Ingress = obj(json!({
        "metadata": {
            "name": "legacy",
            "namespace": "web",
            "annotations": { "kubernetes.io/ingress.class": "nginx" },
        },
        "spec": {
            "rules": [{ "host": "a.example.com" }, { "http": { "paths": [{ "path": "/x", "pathType": "Exact", "backend": {} }] } }],
            "tls": [{ "secretName": "no-hosts" }, { "hosts": ["*.example.com"] }],
        },
    }));
    let group = [
        ("__meta_kubernetes_ingress_name", "legacy"),
        ("__meta_kubernetes_namespace", "web"),
        (
            "__meta_kubernetes_ingress_annotation_kubernetes_io_ingress_class",
            "nginx",
        ),
        (
            "__meta_kubernetes_ingress_annotationpresent_kubernetes_io_ingress_class",
            "true",
        ),
    ];
    let want = vec![
        // No `http`: one target for `/`; the host matches the wildcard TLS entry.
        expect(
            &group,
            &[
                ("__address__", "a.example.com"),
                ("__meta_kubernetes_ingress_host", "a.example.com"),
                ("__meta_kubernetes_ingress_path", "/"),
                ("__meta_kubernetes_ingress_scheme", "https"),
            ],
        ),
        // No host: Prometheus' empty `__address__` and host are absent labels here.
        expect(
            &group,
            &[
                ("__meta_kubernetes_ingress_path", "/x"),
                ("__meta_kubernetes_ingress_scheme", "http"),
            ],
        ),
    ];
    assert_targets(
        "no http, no host, class only as annotation",
        &targets(&ing, &Caches::default(), AttachMetadata::default()),
        &want,
    );
    let bare: Ingress = obj(json!({ "metadata": { "name": "bare", "namespace": "web" } }));
    assert!(targets(&bare, &Caches::default(), AttachMetadata::default()).is_empty());
}

#[test]
fn hostname_patterns_match_like_prometheus() {
    let cases = [
        ("example.com", "example.com", true),
        ("*.example.com", "test.example.com", true),
        ("*.example.com", "example.com", false),
        ("*.example.com", "a.b.example.com", false),
        ("*.example.com", "test.example.org", false),
        ("test.*.com", "test.example.com", false),
        ("*", "localhost", true),
        ("*", "", true),
        ("", "", true),
        ("*.example.com", "", false),
    ];
    for (pattern, host, want) in cases {
        assert_eq!(
            matches_host_pattern(pattern, host),
            want,
            "{pattern} vs {host}"
        );
    }
}
