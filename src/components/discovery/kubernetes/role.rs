//! The discovery roles: which objects each one watches, which groups an event touches, and how
//! a group's targets are built. Every role keys its groups by one "main" resource (pods for
//! `pod`, services for `service`...); the other resources it watches only feed metadata into
//! those groups.

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

use super::AttachMetadata;
use super::cache::{Caches, Key};
use super::state::Object;
use super::{endpoints, endpointslice, ingress, node, pod, service};
use crate::labels::LabelSet;

/// `role = "..."`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub enum Role {
    Pod,
    Node,
    Service,
    Endpoints,
    EndpointSlice,
    Ingress,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Pod => "pod",
            Role::Node => "node",
            Role::Service => "service",
            Role::Endpoints => "endpoints",
            Role::EndpointSlice => "endpointslice",
            Role::Ingress => "ingress",
        }
    }

    /// The resource whose objects key this role's groups.
    pub fn main_resource(self) -> Resource {
        match self {
            Role::Pod => Resource::Pods,
            Role::Node => Resource::Nodes,
            Role::Service => Resource::Services,
            Role::Endpoints => Resource::Endpoints,
            Role::EndpointSlice => Resource::EndpointSlices,
            Role::Ingress => Resource::Ingresses,
        }
    }

    /// Every resource the role watches, main resource first.
    pub fn resources(self, attach: AttachMetadata) -> Vec<Resource> {
        let mut r = vec![self.main_resource()];
        if matches!(self, Role::Endpoints | Role::EndpointSlice) {
            r.extend([Resource::Pods, Resource::Services]);
        }
        if attach.node && matches!(self, Role::Pod | Role::Endpoints | Role::EndpointSlice) {
            r.push(Resource::Nodes);
        }
        if attach.namespace && self != Role::Node {
            r.push(Resource::Namespaces);
        }
        r
    }

    /// The roles whose `selectors` blocks this role accepts (Prometheus' list).
    pub fn selector_roles(self, attach: AttachMetadata) -> Vec<Role> {
        let mut r = match self {
            Role::Pod => vec![Role::Pod],
            Role::Node => vec![Role::Node],
            Role::Service => vec![Role::Service],
            Role::Endpoints => vec![Role::Endpoints, Role::Pod, Role::Service],
            Role::EndpointSlice => vec![Role::EndpointSlice, Role::Pod, Role::Service],
            Role::Ingress => vec![Role::Ingress],
        };
        if attach.node && !matches!(self, Role::Node | Role::Service | Role::Ingress) {
            r.push(Role::Node);
        }
        r
    }

    pub fn allows_selector(self, selector: Role, attach: AttachMetadata) -> bool {
        self.selector_roles(attach).contains(&selector)
    }

    /// The targets of the main object `key` as the caches now stand; empty when it is gone.
    pub fn build(self, key: &Key, caches: &Caches, attach: AttachMetadata) -> Vec<LabelSet> {
        let (ns, name) = (key.0.as_str(), key.1.as_str());
        match self {
            Role::Pod => caches
                .pods
                .get(ns, name)
                .map(|p| pod::targets(p, caches, attach)),
            Role::Node => caches.nodes.get(ns, name).map(node::targets),
            Role::Service => caches
                .services
                .get(ns, name)
                .map(|s| service::targets(s, caches, attach)),
            Role::Endpoints => caches
                .endpoints
                .get(ns, name)
                .map(|e| endpoints::targets(e, caches, attach)),
            Role::EndpointSlice => caches
                .endpointslices
                .get(ns, name)
                .map(|e| endpointslice::targets(e, caches, attach)),
            Role::Ingress => caches
                .ingresses
                .get(ns, name)
                .map(|i| ingress::targets(i, caches, attach)),
        }
        .unwrap_or_default()
    }

    /// Whether `resource`'s objects must stay whole in the cache because groups are rebuilt
    /// from them later (metadata or endpoint changes); otherwise only their identity is kept
    /// and their targets are built as they arrive.
    pub fn keeps_objects(self, resource: Resource, attach: AttachMetadata) -> bool {
        if resource != self.main_resource() {
            return true;
        }
        match self {
            Role::Pod => attach.node || attach.namespace,
            Role::Node => false,
            Role::Service | Role::Ingress => attach.namespace,
            Role::Endpoints | Role::EndpointSlice => true,
        }
    }

    /// The targets of a main object, built from the object itself.
    pub fn build_object(
        self,
        obj: &Object,
        caches: &Caches,
        attach: AttachMetadata,
    ) -> Vec<LabelSet> {
        match (self, obj) {
            (Role::Pod, Object::Pod(p)) => pod::targets(p, caches, attach),
            (Role::Node, Object::Node(n)) => node::targets(n),
            (Role::Service, Object::Service(s)) => service::targets(s, caches, attach),
            (Role::Endpoints, Object::Endpoints(e)) => endpoints::targets(e, caches, attach),
            (Role::EndpointSlice, Object::EndpointSlice(e)) => {
                endpointslice::targets(e, caches, attach)
            }
            (Role::Ingress, Object::Ingress(i)) => ingress::targets(i, caches, attach),
            _ => Vec::new(),
        }
    }

    /// Which groups a change to `resource`'s object `key` may alter.
    pub fn affected(self, resource: Resource, key: &Key, caches: &Caches) -> Affected {
        if resource == self.main_resource() {
            return Affected::One(key.clone());
        }
        match (self, resource) {
            // A node's labels reach the pods scheduled on it; finding them needs a scan, which
            // costs one pass over the pods per node event (node events are rare).
            (Role::Pod, Resource::Nodes) => Affected::Many(
                caches
                    .pods
                    .iter()
                    .filter(|(_, p)| {
                        p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(&key.1)
                    })
                    .map(|(k, _)| k.clone())
                    .collect(),
            ),
            (_, Resource::Namespaces) => Affected::Namespace(key.1.clone()),
            // Endpoints reference pods, services share their name, and nodes reach them through
            // pods: rebuild the namespace (or everything, for a node), which stays correct
            // without maintaining reverse indexes.
            (_, Resource::Pods | Resource::Services) => Affected::Namespace(key.0.clone()),
            _ => Affected::All,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "pod" => Role::Pod,
            "node" => Role::Node,
            "service" => Role::Service,
            "endpoints" => Role::Endpoints,
            "endpointslice" => Role::EndpointSlice,
            "ingress" => Role::Ingress,
            other => return Err(format!("unknown Kubernetes SD role {other:?}")),
        })
    }
}

impl TryFrom<String> for Role {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// A watched resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resource {
    Pods,
    Nodes,
    Namespaces,
    Services,
    Endpoints,
    EndpointSlices,
    Ingresses,
}

impl Resource {
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::Pods => "pod",
            Resource::Nodes => "node",
            Resource::Namespaces => "namespace",
            Resource::Services => "service",
            Resource::Endpoints => "endpoints",
            Resource::EndpointSlices => "endpointslice",
            Resource::Ingresses => "ingress",
        }
    }

    /// Cluster-scoped resources are watched once, whatever `namespaces` says.
    pub fn cluster_scoped(self) -> bool {
        matches!(self, Resource::Nodes | Resource::Namespaces)
    }
}

/// The groups an event may change.
#[derive(Debug, PartialEq, Eq)]
pub enum Affected {
    One(Key),
    Many(Vec<Key>),
    Namespace(String),
    All,
}
