//! `attach_metadata { node, namespace }`: the labels of a target's node or namespace object,
//! added to pod and endpoint targets.

use k8s_openapi::api::core::v1::{Namespace, Node};

use super::labels::{add_metadata, set};
use crate::labels::LabelSet;

/// `__meta_kubernetes_node_name` plus the node's label and annotation families.
pub fn add_node_metadata(labels: &mut LabelSet, node: &Node) {
    set(
        labels,
        "__meta_kubernetes_node_name",
        node.metadata.name.as_deref().unwrap_or(""),
    );
    add_metadata(
        labels,
        "__meta_kubernetes_node_",
        node.metadata.labels.as_ref(),
        node.metadata.annotations.as_ref(),
    );
}

/// The namespace's label and annotation families (`__meta_kubernetes_namespace_label_*`, ...).
pub fn add_namespace_metadata(labels: &mut LabelSet, ns: &Namespace) {
    add_metadata(
        labels,
        "__meta_kubernetes_namespace_",
        ns.metadata.labels.as_ref(),
        ns.metadata.annotations.as_ref(),
    );
}
