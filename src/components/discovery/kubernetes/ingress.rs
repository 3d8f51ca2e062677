//! `role = "ingress"`: one target per path of each rule of a `networking.k8s.io/v1` Ingress,
//! addressed by the rule's host, exactly as Prometheus' `discovery/kubernetes/ingress.go`
//! (v3.13.2, the version Alloy links) builds it.
//!
//! * Group labels: `__meta_kubernetes_namespace`, `__meta_kubernetes_ingress_name`, the
//!   ingress's label and annotation families, `__meta_kubernetes_ingress_class_name` from
//!   `spec.ingressClassName` only (Prometheus does not read the older
//!   `kubernetes.io/ingress.class` annotation; it is there as
//!   `__meta_kubernetes_ingress_annotation_kubernetes_io_ingress_class`), and with
//!   `attach_metadata { namespace = true }` the namespace's families.
//! * Per target: `__address__` and `__meta_kubernetes_ingress_host` (the rule's host),
//!   `__meta_kubernetes_ingress_path` (the path; `/` when empty) and
//!   `__meta_kubernetes_ingress_scheme`: `https` when a `spec.tls` entry lists the host or a
//!   wildcard matching it (`*.example.com` matches `a.example.com` only, one label deep), else
//!   `http`.
//! * A rule without `http` gives one target with path `/`; a rule whose `http` lists no paths
//!   gives none (Prometheus tells a nil list from an empty one the same way).

use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressRule, IngressSpec, IngressTLS,
};

use super::AttachMetadata;
use super::attach;
use super::cache::Caches;
use super::labels::{NAMESPACE, add_metadata, set};
use super::pod::slim_meta;
use crate::labels::LabelSet;

const PREFIX: &str = "__meta_kubernetes_ingress_";
const NAME: &str = "__meta_kubernetes_ingress_name";
const CLASS_NAME: &str = "__meta_kubernetes_ingress_class_name";
const SCHEME: &str = "__meta_kubernetes_ingress_scheme";
const HOST: &str = "__meta_kubernetes_ingress_host";
const PATH: &str = "__meta_kubernetes_ingress_path";

/// The targets of one ingress, rule by rule, path by path.
pub fn targets(ing: &Ingress, caches: &Caches, attach: AttachMetadata) -> Vec<LabelSet> {
    let ns = ing.metadata.namespace.as_deref().unwrap_or("");
    let mut group = LabelSet::with_capacity(8);
    set(&mut group, NAMESPACE, ns);
    let spec = ing.spec.as_ref();
    if let Some(class) = spec.and_then(|s| s.ingress_class_name.as_deref()) {
        set(&mut group, CLASS_NAME, class);
    }
    set(&mut group, NAME, ing.metadata.name.as_deref().unwrap_or(""));
    add_metadata(
        &mut group,
        PREFIX,
        ing.metadata.labels.as_ref(),
        ing.metadata.annotations.as_ref(),
    );
    if attach.namespace
        && let Some(n) = caches.namespaces.get("", ns)
    {
        attach::add_namespace_metadata(&mut group, n);
    }

    let Some(spec) = spec else {
        return Vec::new();
    };
    let tls_hosts: Vec<&str> = spec
        .tls
        .iter()
        .flatten()
        .flat_map(|t| t.hosts.iter().flatten())
        .map(String::as_str)
        .collect();
    let mut out = Vec::new();
    for rule in spec.rules.iter().flatten() {
        let host = rule.host.as_deref().unwrap_or("");
        let scheme = if tls_hosts.iter().any(|p| matches_host_pattern(p, host)) {
            "https"
        } else {
            "http"
        };
        for path in rule_paths(rule) {
            let mut t = group.clone();
            set(&mut t, "__address__", host);
            set(&mut t, SCHEME, scheme);
            set(&mut t, HOST, host);
            set(&mut t, PATH, path);
            out.push(t);
        }
    }
    out
}

/// The paths a rule gives targets for: `/` alone without `http`, else each path, an empty one
/// as `/`.
fn rule_paths(rule: &IngressRule) -> Vec<&str> {
    match &rule.http {
        None => vec!["/"],
        Some(http) => http
            .paths
            .iter()
            .map(|p| match p.path.as_deref() {
                None | Some("") => "/",
                Some(path) => path,
            })
            .collect(),
    }
}

/// Prometheus' `matchesHostnamePattern`: equal, or a `*.` pattern with as many dot-separated
/// parts as the host and the same parts after the first.
fn matches_host_pattern(pattern: &str, host: &str) -> bool {
    if pattern == host {
        return true;
    }
    let pattern_parts: Vec<&str> = pattern.split('.').collect();
    let host_parts: Vec<&str> = host.split('.').collect();
    if pattern_parts.first() != Some(&"*") || pattern_parts.len() != host_parts.len() {
        return false;
    }
    pattern_parts[1..] == host_parts[1..]
}

/// The ingress with only what target building reads.
pub fn slim(ing: Ingress) -> Ingress {
    Ingress {
        metadata: slim_meta(ing.metadata),
        spec: ing.spec.map(|s| IngressSpec {
            ingress_class_name: s.ingress_class_name,
            rules: s.rules.map(|rules| {
                rules
                    .into_iter()
                    .map(|r| IngressRule {
                        host: r.host,
                        http: r.http.map(|h| HTTPIngressRuleValue {
                            paths: h
                                .paths
                                .into_iter()
                                .map(|p| HTTPIngressPath {
                                    path: p.path,
                                    ..Default::default()
                                })
                                .collect(),
                        }),
                    })
                    .collect()
            }),
            tls: s.tls.map(|tls| {
                tls.into_iter()
                    .map(|t| IngressTLS {
                        hosts: t.hosts,
                        secret_name: None,
                    })
                    .collect()
            }),
            default_backend: None,
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests;
