//! The list+watch streams behind discovery: one kube watcher per resource and namespace, as
//! client-go informers in Prometheus.
//!
//! * Lists are paginated (500 objects per page) consistent reads. client-go instead asks for
//!   `resourceVersion=0` (served from the API server's watch cache, where `limit` is ignored);
//!   kube drops `resourceVersion=0` whenever a page size is set, and paging keeps a 10,000-pod
//!   list from arriving as one response held in memory at once.
//! * Errors (including an in-stream 410 Gone, which makes the watcher relist) are reported and
//!   retried with kube's default backoff (0.8 s doubling to 30 s, like client-go); the stream
//!   itself never ends, so discovery keeps its last targets through an outage.

use std::fmt::Debug;

use futures::stream::{BoxStream, StreamExt as _};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Endpoints, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::runtime::{WatchStreamExt as _, watcher};
use serde::de::DeserializeOwned;

use super::args::Options;
use super::role::{Resource, Role};
use super::state::{Object, Scope, WatchEvent};

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
        Resource::Namespaces => None,
    }
}

/// The watcher configuration for one scope: its role's selectors.
pub fn config(options: &Options, resource: Resource) -> watcher::Config {
    let mut cfg = watcher::Config::default();
    if let Some(sel) = selector_role(resource).and_then(|r| options.selector(r)) {
        if !sel.label.is_empty() {
            cfg = cfg.labels(&sel.label);
        }
        if !sel.field.is_empty() {
            cfg = cfg.fields(&sel.field);
        }
    }
    cfg
}

/// The event stream of one scope. It never ends.
pub fn stream(
    client: kube::Client,
    scope: &Scope,
    cfg: watcher::Config,
) -> BoxStream<'static, WatchEvent> {
    let ns = scope.namespace.as_deref();
    match scope.resource {
        Resource::Pods => namespaced::<Pod>(client, ns, cfg, Object::Pod),
        Resource::Services => namespaced::<Service>(client, ns, cfg, Object::Service),
        Resource::Endpoints => namespaced::<Endpoints>(client, ns, cfg, Object::Endpoints),
        Resource::EndpointSlices => {
            namespaced::<EndpointSlice>(client, ns, cfg, Object::EndpointSlice)
        }
        Resource::Nodes => events(Api::<Node>::all(client), cfg, Object::Node),
        Resource::Namespaces => events(Api::<Namespace>::all(client), cfg, Object::Namespace),
    }
}

fn namespaced<K>(
    client: kube::Client,
    namespace: Option<&str>,
    cfg: watcher::Config,
    wrap: fn(K) -> Object,
) -> BoxStream<'static, WatchEvent>
where
    K: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + 'static,
{
    let api = match namespace {
        Some(ns) => Api::<K>::namespaced(client, ns),
        None => Api::<K>::all(client),
    };
    events(api, cfg, wrap)
}

fn events<K>(
    api: Api<K>,
    cfg: watcher::Config,
    wrap: fn(K) -> Object,
) -> BoxStream<'static, WatchEvent>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    watcher(api, cfg)
        .default_backoff()
        .map(move |e| match e {
            Ok(watcher::Event::Init) => WatchEvent::Init,
            Ok(watcher::Event::InitApply(o)) => WatchEvent::InitApply(wrap(o)),
            Ok(watcher::Event::InitDone) => WatchEvent::InitDone,
            Ok(watcher::Event::Apply(o)) => WatchEvent::Apply(wrap(o)),
            Ok(watcher::Event::Delete(o)) => WatchEvent::Delete(wrap(o)),
            Err(e) => WatchEvent::Error(e.to_string()),
        })
        .boxed()
}
