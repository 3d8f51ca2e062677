//! `role = "pod"`: one target per declared container port, a bare pod-IP target per port-less
//! container, exactly as Prometheus' `discovery/kubernetes/pod.go` builds them (spec
//! relabel-and-kubernetes §C.1–C.3).

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::AttachMetadata;
use super::attach;
use super::cache::Caches;
use super::labels::{NAMESPACE, add_metadata, join_host_port, set};
use crate::labels::LabelSet;

const PREFIX: &str = "__meta_kubernetes_pod_";
const NAME: &str = "__meta_kubernetes_pod_name";
const IP: &str = "__meta_kubernetes_pod_ip";
const READY: &str = "__meta_kubernetes_pod_ready";
const PHASE: &str = "__meta_kubernetes_pod_phase";
const NODE_NAME: &str = "__meta_kubernetes_pod_node_name";
const HOST_IP: &str = "__meta_kubernetes_pod_host_ip";
const UID: &str = "__meta_kubernetes_pod_uid";
const CONTROLLER_KIND: &str = "__meta_kubernetes_pod_controller_kind";
const CONTROLLER_NAME: &str = "__meta_kubernetes_pod_controller_name";
const CONTAINER_NAME: &str = "__meta_kubernetes_pod_container_name";
const CONTAINER_ID: &str = "__meta_kubernetes_pod_container_id";
const CONTAINER_IMAGE: &str = "__meta_kubernetes_pod_container_image";
const CONTAINER_INIT: &str = "__meta_kubernetes_pod_container_init";
const PORT_NAME: &str = "__meta_kubernetes_pod_container_port_name";
const PORT_NUMBER: &str = "__meta_kubernetes_pod_container_port_number";
const PORT_PROTOCOL: &str = "__meta_kubernetes_pod_container_port_protocol";

/// The pod's targets; empty when it has no IP yet (pending or evicted) or, with
/// `attach_metadata.node`, when its node is not known.
pub fn targets(pod: &Pod, caches: &Caches, attach: AttachMetadata) -> Vec<LabelSet> {
    let Some(status) = &pod.status else {
        return Vec::new();
    };
    let ip = status.pod_ip.as_deref().unwrap_or("");
    if ip.is_empty() {
        return Vec::new();
    }
    let spec = pod.spec.as_ref();
    let mut group = pod_labels(pod);
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    set(&mut group, NAMESPACE, ns);
    if attach.node {
        let node_name = spec.and_then(|s| s.node_name.as_deref()).unwrap_or("");
        match caches.nodes.get("", node_name) {
            Some(n) => attach::add_node_metadata(&mut group, n),
            None => return Vec::new(),
        }
    }
    if attach.namespace
        && let Some(n) = caches.namespaces.get("", ns)
    {
        attach::add_namespace_metadata(&mut group, n);
    }

    let (containers, init) = match spec {
        Some(PodSpec {
            containers,
            init_containers,
            ..
        }) => (
            containers.as_slice(),
            init_containers.as_deref().unwrap_or(&[]),
        ),
        None => (&[][..], &[][..]),
    };
    let mut out = Vec::new();
    let regular = containers.iter().map(|c| (c, false));
    let inits = init.iter().map(|c| (c, true));
    for (c, is_init) in regular.chain(inits) {
        let statuses = if is_init {
            status.init_container_statuses.as_deref()
        } else {
            status.container_statuses.as_deref()
        };
        let mut base = group.clone();
        set(&mut base, CONTAINER_NAME, &c.name);
        set(&mut base, CONTAINER_ID, container_id(statuses, &c.name));
        set(&mut base, CONTAINER_IMAGE, c.image.as_deref().unwrap_or(""));
        base.set(CONTAINER_INIT, if is_init { "true" } else { "false" });
        let ports = c.ports.as_deref().unwrap_or(&[]);
        if ports.is_empty() {
            base.set("__address__", ip);
            out.push(base);
            continue;
        }
        for p in ports {
            let mut t = base.clone();
            let number = p.container_port.to_string();
            t.set("__address__", &join_host_port(ip, &number));
            set(&mut t, PORT_NUMBER, &number);
            set(&mut t, PORT_NAME, p.name.as_deref().unwrap_or(""));
            set(&mut t, PORT_PROTOCOL, p.protocol.as_deref().unwrap_or(""));
            out.push(t);
        }
    }
    out
}

/// The pod-level labels the endpoints roles share: name, IP, readiness, phase, node, host IP,
/// UID, controller, labels and annotations (but not the namespace).
pub fn pod_labels(pod: &Pod) -> LabelSet {
    let mut l = LabelSet::with_capacity(16);
    let status = pod.status.as_ref();
    set(&mut l, NAME, pod.metadata.name.as_deref().unwrap_or(""));
    set(
        &mut l,
        IP,
        status.and_then(|s| s.pod_ip.as_deref()).unwrap_or(""),
    );
    l.set(READY, &ready(status));
    set(
        &mut l,
        PHASE,
        status.and_then(|s| s.phase.as_deref()).unwrap_or(""),
    );
    let spec = pod.spec.as_ref();
    set(
        &mut l,
        NODE_NAME,
        spec.and_then(|s| s.node_name.as_deref()).unwrap_or(""),
    );
    set(
        &mut l,
        HOST_IP,
        status.and_then(|s| s.host_ip.as_deref()).unwrap_or(""),
    );
    set(&mut l, UID, pod.metadata.uid.as_deref().unwrap_or(""));
    add_metadata(
        &mut l,
        PREFIX,
        pod.metadata.labels.as_ref(),
        pod.metadata.annotations.as_ref(),
    );
    if let Some(owner) = pod
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or(&[])
        .iter()
        .find(|o| o.controller == Some(true))
    {
        set(&mut l, CONTROLLER_KIND, &owner.kind);
        set(&mut l, CONTROLLER_NAME, &owner.name);
    }
    l
}

/// The lower-cased status of the `Ready` condition, `unknown` without one.
fn ready(status: Option<&PodStatus>) -> String {
    status
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[])
        .iter()
        .find(|c| c.type_ == "Ready")
        .map_or_else(|| "unknown".to_string(), |c| c.status.to_lowercase())
}

fn container_id<'a>(statuses: Option<&'a [ContainerStatus]>, name: &str) -> &'a str {
    statuses
        .unwrap_or(&[])
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.container_id.as_deref())
        .unwrap_or("")
}

/// The pod with only what target building reads: what a cache keeps per pod, so that memory
/// does not grow with env vars, volumes, managed fields and the rest of the spec.
pub fn slim(pod: Pod) -> Pod {
    let Pod {
        metadata,
        spec,
        status,
    } = pod;
    let slim_container = |c: Container| Container {
        name: c.name,
        image: c.image,
        ports: c.ports,
        ..Default::default()
    };
    let slim_status = |s: ContainerStatus| ContainerStatus {
        name: s.name,
        container_id: s.container_id,
        ..Default::default()
    };
    Pod {
        metadata: slim_meta(metadata),
        spec: spec.map(|s| PodSpec {
            node_name: s.node_name,
            containers: s.containers.into_iter().map(slim_container).collect(),
            init_containers: s
                .init_containers
                .map(|v| v.into_iter().map(slim_container).collect()),
            ..Default::default()
        }),
        status: status.map(|s| PodStatus {
            pod_ip: s.pod_ip,
            host_ip: s.host_ip,
            phase: s.phase,
            conditions: s
                .conditions
                .map(|v| v.into_iter().filter(|c| c.type_ == "Ready").collect()),
            container_statuses: s
                .container_statuses
                .map(|v| v.into_iter().map(slim_status).collect()),
            init_container_statuses: s
                .init_container_statuses
                .map(|v| v.into_iter().map(slim_status).collect()),
            ..Default::default()
        }),
    }
}

/// Object metadata without managed fields, finalizers and the like.
pub fn slim_meta(m: ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        labels: m.labels,
        annotations: m.annotations,
        owner_references: m.owner_references,
        resource_version: m.resource_version,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
