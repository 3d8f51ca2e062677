//! Discovery's state between events: the caches, the target groups built from them, and
//! client-go's informer semantics on top of the list+watch events (`watcher`).
//!
//! * A relist (after a 410 Gone, or a list that failed part way) arrives as `Init`,
//!   `InitApply`..., `InitDone`.
//!   The listed objects are buffered and swapped in at `InitDone`, and objects not re-listed are
//!   deleted then, as client-go's `Replace` does. Until then the old objects stay, so a relist
//!   never shows a transient empty target set.
//! * A group is rebuilt only for objects an event touched, and marked changed only when its
//!   targets differ: pods' status churn (resourceVersion bumps) does not republish.
//! * Nothing counts as synced until every watch has finished its first list, so the first
//!   publication is complete, as Prometheus waits for `WaitForCacheSync`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Endpoints, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::AttachMetadata;
use super::cache::{Caches, Key};
use super::role::{Affected, Resource, Role};
use super::{endpoints, endpointslice, ingress, node, pod, service};
use crate::labels::LabelSet;

/// One watched object, slimmed down to what target building needs.
// Objects only pass through on their way into a cache (unboxed there); a box per event would
// be an allocation for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Object {
    Pod(Pod),
    Node(Node),
    Namespace(Namespace),
    Service(Service),
    Endpoints(Endpoints),
    EndpointSlice(EndpointSlice),
    Ingress(Ingress),
}

impl Object {
    pub fn resource(&self) -> Resource {
        match self {
            Object::Pod(_) => Resource::Pods,
            Object::Node(_) => Resource::Nodes,
            Object::Namespace(_) => Resource::Namespaces,
            Object::Service(_) => Resource::Services,
            Object::Endpoints(_) => Resource::Endpoints,
            Object::EndpointSlice(_) => Resource::EndpointSlices,
            Object::Ingress(_) => Resource::Ingresses,
        }
    }

    pub fn key(&self) -> Key {
        let meta = match self {
            Object::Pod(o) => &o.metadata,
            Object::Node(o) => &o.metadata,
            Object::Namespace(o) => &o.metadata,
            Object::Service(o) => &o.metadata,
            Object::Endpoints(o) => &o.metadata,
            Object::EndpointSlice(o) => &o.metadata,
            Object::Ingress(o) => &o.metadata,
        };
        (
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        )
    }

    /// Only the object's identity, for caches of objects whose targets were built on arrival.
    pub fn skeleton(&self) -> Object {
        let (namespace, name) = self.key();
        let metadata = ObjectMeta {
            name: Some(name),
            namespace: (!namespace.is_empty()).then_some(namespace),
            ..Default::default()
        };
        match self {
            Object::Pod(_) => Object::Pod(Pod {
                metadata,
                ..Default::default()
            }),
            Object::Node(_) => Object::Node(Node {
                metadata,
                ..Default::default()
            }),
            Object::Namespace(_) => Object::Namespace(Namespace {
                metadata,
                ..Default::default()
            }),
            Object::Service(_) => Object::Service(Service {
                metadata,
                ..Default::default()
            }),
            Object::Endpoints(_) => Object::Endpoints(Endpoints {
                metadata,
                ..Default::default()
            }),
            Object::EndpointSlice(_) => Object::EndpointSlice(EndpointSlice {
                metadata,
                ..Default::default()
            }),
            Object::Ingress(_) => Object::Ingress(Ingress {
                metadata,
                ..Default::default()
            }),
        }
    }

    /// The object as a cache keeps it.
    pub fn slim(self) -> Object {
        match self {
            Object::Pod(o) => Object::Pod(pod::slim(o)),
            Object::Node(o) => Object::Node(node::slim(o)),
            Object::Namespace(mut o) => {
                o.metadata = pod::slim_meta(o.metadata);
                o.spec = None;
                o.status = None;
                Object::Namespace(o)
            }
            Object::Service(o) => Object::Service(service::slim(o)),
            Object::Endpoints(o) => Object::Endpoints(endpoints::slim(o)),
            Object::EndpointSlice(o) => Object::EndpointSlice(endpointslice::slim(o)),
            Object::Ingress(o) => Object::Ingress(ingress::slim(o)),
        }
    }
}

/// One watch's events, carrying slimmed objects.
pub type WatchEvent = crate::protocols::kubernetes::WatchEvent<Object>;

/// What one watch covers: a resource, in one namespace or all of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    pub resource: Resource,
    /// `None`: all namespaces (or a cluster-scoped resource).
    pub namespace: Option<String>,
}

/// An object event, for the `prometheus_sd_kubernetes_events_total` counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Add,
    Update,
    Delete,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Add => "add",
            EventKind::Update => "update",
            EventKind::Delete => "delete",
        }
    }
}

/// An object as the state takes it in: whole (slim) when groups may be rebuilt from it later,
/// or reduced to its identity with its targets built on arrival. A pod role without
/// `attach_metadata` never re-reads a pod, so its cache holds 10,000 names instead of 10,000
/// pods.
struct Arrived {
    object: Object,
    built: Option<Vec<LabelSet>>,
}

/// Caches, groups and per-watch sync state.
pub struct State {
    role: Role,
    attach: AttachMetadata,
    scopes: Vec<Scope>,
    caches: Caches,
    /// Objects listed since `Init`, per watch; `None` outside a relist.
    relisting: Vec<Option<Vec<Arrived>>>,
    synced: Vec<bool>,
    /// Targets are shared with the published export (and from there with consumers).
    groups: BTreeMap<Key, Vec<Arc<LabelSet>>>,
    targets: usize,
    changed: bool,
}

impl State {
    pub fn new(role: Role, attach: AttachMetadata, scopes: Vec<Scope>) -> Self {
        let n = scopes.len();
        State {
            role,
            attach,
            scopes,
            caches: Caches::default(),
            relisting: (0..n).map(|_| None).collect(),
            synced: vec![false; n],
            groups: BTreeMap::new(),
            targets: 0,
            changed: false,
        }
    }

    /// Applies one watch's event; `on_event` is told about each object added, updated or deleted.
    pub fn apply(
        &mut self,
        watch: usize,
        event: WatchEvent,
        on_event: &mut dyn FnMut(Resource, EventKind),
    ) {
        match event {
            WatchEvent::Init => {
                if let Some(slot) = self.relisting.get_mut(watch) {
                    *slot = Some(Vec::new());
                }
            }
            WatchEvent::InitApply(obj) => {
                let arrived = self.arrive(obj);
                match self.relisting.get_mut(watch) {
                    Some(Some(buffer)) => buffer.push(arrived),
                    // An InitApply outside Init does not happen; treat it as a plain upsert.
                    _ => self.upsert(arrived, on_event),
                }
            }
            WatchEvent::InitDone => {
                let listed = self.relisting.get_mut(watch).and_then(Option::take);
                if let Some(listed) = listed {
                    self.replace(watch, listed, on_event);
                }
                if let Some(s) = self.synced.get_mut(watch) {
                    *s = true;
                }
            }
            WatchEvent::Apply(obj) => {
                let arrived = self.arrive(obj);
                self.upsert(arrived, on_event);
            }
            WatchEvent::Delete(obj) => {
                let (resource, key) = (obj.resource(), obj.key());
                if self.remove(resource, &key) {
                    on_event(resource, EventKind::Delete);
                    self.rebuild(resource, &key);
                }
            }
            WatchEvent::Watching | WatchEvent::Error(_) => {}
        }
    }

    /// True once every watch has completed its first list.
    pub fn synced(&self) -> bool {
        self.synced.iter().all(|s| *s)
    }

    /// True once watch `i` has completed its first list.
    pub fn watch_synced(&self, i: usize) -> bool {
        self.synced.get(i).copied().unwrap_or(false)
    }

    /// True if targets changed since the last call.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// All targets, ordered by the main object's namespace and name.
    pub fn targets(&self) -> impl Iterator<Item = &Arc<LabelSet>> {
        self.groups.values().flatten()
    }

    pub fn target_count(&self) -> usize {
        self.targets
    }

    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Objects cached per resource, for the debug info.
    pub fn cached(&self) -> Vec<(Resource, usize)> {
        let c = &self.caches;
        vec![
            (Resource::Pods, c.pods.len()),
            (Resource::Nodes, c.nodes.len()),
            (Resource::Namespaces, c.namespaces.len()),
            (Resource::Services, c.services.len()),
            (Resource::Endpoints, c.endpoints.len()),
            (Resource::EndpointSlices, c.endpointslices.len()),
            (Resource::Ingresses, c.ingresses.len()),
        ]
    }

    fn arrive(&self, obj: Object) -> Arrived {
        let object = obj.slim();
        if self.role.keeps_objects(object.resource(), self.attach) {
            return Arrived {
                object,
                built: None,
            };
        }
        let built = self.role.build_object(&object, &self.caches, self.attach);
        Arrived {
            object: object.skeleton(),
            built: Some(built),
        }
    }

    fn upsert(&mut self, arrived: Arrived, on_event: &mut dyn FnMut(Resource, EventKind)) {
        let (resource, key) = (arrived.object.resource(), arrived.object.key());
        let existed = self.insert(arrived.object);
        on_event(
            resource,
            if existed {
                EventKind::Update
            } else {
                EventKind::Add
            },
        );
        match arrived.built {
            Some(targets) => self.set_group(key, targets),
            None => self.rebuild(resource, &key),
        }
    }

    /// client-go's `Replace`: the listed objects become the watch's whole content.
    fn replace(
        &mut self,
        watch: usize,
        listed: Vec<Arrived>,
        on_event: &mut dyn FnMut(Resource, EventKind),
    ) {
        let Some(scope) = self.scopes.get(watch).cloned() else {
            return;
        };
        let listed_keys: HashMap<Key, ()> = listed.iter().map(|a| (a.object.key(), ())).collect();
        let gone: Vec<Key> = self
            .keys(scope.resource)
            .into_iter()
            .filter(|k| scope.namespace.as_ref().is_none_or(|ns| *ns == k.0))
            .filter(|k| !listed_keys.contains_key(k))
            .collect();
        for key in gone {
            if self.remove(scope.resource, &key) {
                on_event(scope.resource, EventKind::Delete);
                self.rebuild(scope.resource, &key);
            }
        }
        for obj in listed {
            self.upsert(obj, on_event);
        }
    }

    fn insert(&mut self, obj: Object) -> bool {
        let key = obj.key();
        let c = &mut self.caches;
        match obj {
            Object::Pod(o) => c.pods.insert(key, o).is_some(),
            Object::Node(o) => c.nodes.insert(key, o).is_some(),
            Object::Namespace(o) => c.namespaces.insert(key, o).is_some(),
            Object::Service(o) => c.services.insert(key, o).is_some(),
            Object::Endpoints(o) => c.endpoints.insert(key, o).is_some(),
            Object::EndpointSlice(o) => c.endpointslices.insert(key, o).is_some(),
            Object::Ingress(o) => c.ingresses.insert(key, o).is_some(),
        }
    }

    fn remove(&mut self, resource: Resource, key: &Key) -> bool {
        let c = &mut self.caches;
        match resource {
            Resource::Pods => c.pods.remove(key).is_some(),
            Resource::Nodes => c.nodes.remove(key).is_some(),
            Resource::Namespaces => c.namespaces.remove(key).is_some(),
            Resource::Services => c.services.remove(key).is_some(),
            Resource::Endpoints => c.endpoints.remove(key).is_some(),
            Resource::EndpointSlices => c.endpointslices.remove(key).is_some(),
            Resource::Ingresses => c.ingresses.remove(key).is_some(),
        }
    }

    fn keys(&self, resource: Resource) -> Vec<Key> {
        let c = &self.caches;
        match resource {
            Resource::Pods => c.pods.keys().cloned().collect(),
            Resource::Nodes => c.nodes.keys().cloned().collect(),
            Resource::Namespaces => c.namespaces.keys().cloned().collect(),
            Resource::Services => c.services.keys().cloned().collect(),
            Resource::Endpoints => c.endpoints.keys().cloned().collect(),
            Resource::EndpointSlices => c.endpointslices.keys().cloned().collect(),
            Resource::Ingresses => c.ingresses.keys().cloned().collect(),
        }
    }

    /// Rebuilds the groups a change to `resource`'s object `key` may alter.
    fn rebuild(&mut self, resource: Resource, key: &Key) {
        let keys = match self.role.affected(resource, key, &self.caches) {
            Affected::One(k) => vec![k],
            Affected::Many(ks) => ks,
            Affected::Namespace(ns) => self
                .keys(self.role.main_resource())
                .into_iter()
                .filter(|k| k.0 == ns)
                .collect(),
            Affected::All => self.keys(self.role.main_resource()),
        };
        for k in keys {
            let targets = self.role.build(&k, &self.caches, self.attach);
            self.set_group(k, targets);
        }
    }

    /// Makes `targets` the group of main object `key`, noting whether anything changed.
    fn set_group(&mut self, key: Key, targets: Vec<LabelSet>) {
        let old = self.groups.get(&key).map_or(&[][..], Vec::as_slice);
        if old.len() == targets.len() && old.iter().zip(&targets).all(|(a, b)| **a == *b) {
            return;
        }
        let targets: Vec<Arc<LabelSet>> = targets.into_iter().map(Arc::new).collect();
        self.changed = true;
        self.targets = self.targets.saturating_sub(old.len()) + targets.len();
        if targets.is_empty() {
            self.groups.remove(&key);
        } else {
            self.groups.insert(key, targets);
        }
    }
}

#[cfg(test)]
mod tests;
