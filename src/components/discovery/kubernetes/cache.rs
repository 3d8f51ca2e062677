//! The objects discovery keeps between events: one map per watched resource, keyed by
//! namespace and name (cluster-scoped objects use an empty namespace). Objects are stored slim
//! (see `pod::slim`), so memory follows what target building reads, not object size.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Endpoints, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;

/// `(namespace, name)`.
pub type Key = (String, String);

/// One resource's objects.
#[derive(Debug)]
pub struct Cache<T> {
    objects: HashMap<Key, T>,
}

impl<T> Default for Cache<T> {
    fn default() -> Self {
        Cache {
            objects: HashMap::new(),
        }
    }
}

impl<T> Cache<T> {
    pub fn get(&self, namespace: &str, name: &str) -> Option<&T> {
        // Allocation-free lookups would need a borrowed-tuple key; the cost is two small
        // strings per lookup, on event paths only.
        self.objects.get(&(namespace.to_string(), name.to_string()))
    }

    pub fn insert(&mut self, key: Key, object: T) -> Option<T> {
        self.objects.insert(key, object)
    }

    pub fn remove(&mut self, key: &Key) -> Option<T> {
        self.objects.remove(key)
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &T)> {
        self.objects.iter()
    }

    pub fn keys(&self) -> impl Iterator<Item = &Key> {
        self.objects.keys()
    }
}

/// Every resource a role may watch. Roles watch only what they need; the rest stay empty.
#[derive(Debug, Default)]
pub struct Caches {
    pub pods: Cache<Pod>,
    pub nodes: Cache<Node>,
    pub namespaces: Cache<Namespace>,
    pub services: Cache<Service>,
    pub endpoints: Cache<Endpoints>,
    pub endpointslices: Cache<EndpointSlice>,
    pub ingresses: Cache<Ingress>,
}
