//! The list+watch streams behind discovery: one `watcher` loop per resource and namespace, as
//! client-go informers in Prometheus. Errors (each retried with backoff, see `watcher`) never end
//! a stream, so discovery keeps its last targets through an outage.

use std::fmt::Debug;

use futures::stream::BoxStream;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Endpoints, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::Api;
use serde::de::DeserializeOwned;

use super::args::Options;
use super::role::{Resource, Role};
use super::state::{Object, Scope, WatchEvent};
use crate::protocols::kubernetes::watcher::{self, Selectors, Timeouts};

/// The watches `options` need: the role's resources, per namespace for namespaced ones.
pub fn plan(options: &Options, namespaces: &[String]) -> Vec<Scope> {
    let mut scopes = Vec::new();
    for resource in options.role.resources(options.attach_metadata) {
        if resource.cluster_scoped() || namespaces.is_empty() {
            scopes.push(Scope {
                resource,
                namespace: None,
            });
        } else {
            for ns in namespaces {
                scopes.push(Scope {
                    resource,
                    namespace: Some(ns.clone()),
                });
            }
        }
    }
    scopes
}

/// The role whose `selectors` block applies to a resource's watch.
fn selector_role(resource: Resource) -> Option<Role> {
    match resource {
        Resource::Pods => Some(Role::Pod),
        Resource::Nodes => Some(Role::Node),
        Resource::Services => Some(Role::Service),
        Resource::Endpoints => Some(Role::Endpoints),
        Resource::EndpointSlices => Some(Role::EndpointSlice),
        Resource::Ingresses => Some(Role::Ingress),
        Resource::Namespaces => None,
    }
}

/// The selectors of one scope's watch: its role's `selectors` block.
pub fn config(options: &Options, resource: Resource) -> Selectors {
    let sel = selector_role(resource).and_then(|r| options.selector(r));
    let non_empty = |s: &String| (!s.is_empty()).then(|| s.clone());
    Selectors {
        label: sel.and_then(|s| non_empty(&s.label)),
        field: sel.and_then(|s| non_empty(&s.field)),
    }
}

/// The event stream of one scope. It never ends.
pub fn stream(
    client: kube::Client,
    scope: &Scope,
    cfg: Selectors,
    timeouts: Timeouts,
) -> BoxStream<'static, WatchEvent> {
    let ns = scope.namespace.as_deref();
    match scope.resource {
        Resource::Pods => namespaced::<Pod>(client, ns, cfg, timeouts, Object::Pod),
        Resource::Services => namespaced::<Service>(client, ns, cfg, timeouts, Object::Service),
        Resource::Endpoints => {
            namespaced::<Endpoints>(client, ns, cfg, timeouts, Object::Endpoints)
        }
        Resource::EndpointSlices => {
            namespaced::<EndpointSlice>(client, ns, cfg, timeouts, Object::EndpointSlice)
        }
        Resource::Ingresses => namespaced::<Ingress>(client, ns, cfg, timeouts, Object::Ingress),
        Resource::Nodes => watcher::run(Api::<Node>::all(client), cfg, timeouts, Object::Node),
        Resource::Namespaces => watcher::run(
            Api::<Namespace>::all(client),
            cfg,
            timeouts,
            Object::Namespace,
        ),
    }
}

fn namespaced<K>(
    client: kube::Client,
    namespace: Option<&str>,
    cfg: Selectors,
    timeouts: Timeouts,
    wrap: fn(K) -> Object,
) -> BoxStream<'static, WatchEvent>
where
    K: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    let api = match namespace {
        Some(ns) => Api::<K>::namespaced(client, ns),
        None => Api::<K>::all(client),
    };
    watcher::run(api, cfg, timeouts, wrap)
}
