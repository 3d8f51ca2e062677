//! `discovery.kubernetes`: targets from the Kubernetes API, with exactly Prometheus'
//! `__meta_kubernetes_*` labels (spec alloy-components §4, relabel-and-kubernetes §C).
//!
//! ```alloy
//! discovery.kubernetes "pods" {
//!   role = "pod"
//!   namespaces { names = ["otel"] }
//!   selectors {
//!     role  = "pod"
//!     field = "spec.nodeName=" + coalesce(sys.env("HOSTNAME"), constants.hostname)
//!   }
//! }
//! ```
//!
//! * Arguments ([`Options`]): `role`, `api_server` or `kubeconfig_file` (else in-cluster, else
//!   the local kubeconfig: see `client`), the HTTP client settings (with `api_server` only, as
//!   Prometheus insists), `namespaces`, `selectors`, `attach_metadata`, and our
//!   `publish_interval` (Alloy's fixed 5 s).
//! * Export: `targets`, `list(map(string))`, ordered by namespace and object name, first
//!   published when every watch has completed its initial list, then at most once per
//!   `publish_interval`, and only when some target changed.
//! * Errors never clear targets: a failed list or watch is retried with backoff while the last
//!   targets stay exported; the component reports the error in its health and counts it in
//!   `prometheus_sd_kubernetes_failures_total`. Object events are counted in
//!   `prometheus_sd_kubernetes_events_total{role,event}` (Prometheus' names).
//! * New arguments restart discovery; the old targets stay exported until the new watches
//!   have synced.
//!
//! Layout: [`args`] (the block), `client` (which server, which credentials), `watch` (kube
//! watchers per resource and namespace), `state` (caches, groups, relist semantics), `role`
//! (what each role watches and rebuilds), and one file per role's target builder (`pod`,
//! `node`, `service`, `endpoints`, `endpointslice`) plus `attach` and `labels` which they share.

mod args;
mod attach;
mod cache;
mod client;
mod endpoints;
mod endpointslice;
mod events;
mod labels;
mod metrics;
mod node;
mod pod;
mod role;
mod service;
mod state;
#[cfg(test)]
mod testutil;
mod watch;

use self::events::{ClientSetupFailed, WatchFailed};
use crate::runtime::event::emit;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt as _;
use tokio::sync::watch as channel;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use args::{Arguments, AttachMetadata, Namespaces, Options, Selector};
pub use cache::{Cache, Caches, Key};
pub use client::{Built as BuiltClient, ClientError, build as build_client};
pub use role::{Affected, Resource, Role};
pub use state::{EventKind, Object, Scope, State, WatchEvent};

use crate::labels::LabelSet;
use crate::runtime::health::Health;
use crate::runtime::{BoxError, Component, ComponentOptions, ExportsHandle};
use crate::syntax::decode::Invalid;
use crate::syntax::value::Value;
use crate::targets as target;

/// Where the service account's namespace is mounted in every pod.
pub const SERVICE_ACCOUNT_NAMESPACE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The running component.
pub struct Kubernetes {
    id: String,
    exports: ExportsHandle,
    metrics: metrics::ComponentMetrics,
    args: channel::Sender<Arguments>,
    status: Mutex<Status>,
}

/// What the component last saw, for health and the web UI.
#[derive(Default)]
struct Status {
    source: String,
    watches: Vec<String>,
    synced: bool,
    targets: usize,
    groups: usize,
    cached: Vec<(Resource, usize)>,
    last_error: Option<String>,
    publications: u64,
}

fn exports(targets: Vec<Value>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("targets".to_string(), Value::Array(targets));
    Value::Object(m)
}

/// The namespaces to watch: `names`, plus ours if `own_namespace`; empty means all.
pub fn namespaces(options: &Options) -> Result<Vec<String>, String> {
    let mut names = options.namespaces.names.clone();
    if options.namespaces.own_namespace {
        let own = std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE)
            .map_err(|e| format!("own_namespace: reading {SERVICE_ACCOUNT_NAMESPACE}: {e}"))?;
        names.push(own.trim().to_string());
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// The targets of `state` as the `targets` export holds them: shared, not copied.
pub fn targets_value<'a>(targets: impl Iterator<Item = &'a Arc<LabelSet>>) -> Vec<Value> {
    targets.map(|t| target::value(t.clone())).collect()
}

/// Why a discovery session ended.
enum End {
    Shutdown,
    NewArguments,
}

impl Kubernetes {
    fn status(&self) -> MutexGuard<'_, Status> {
        crate::sync::lock(&self.status)
    }

    /// One discovery session with fixed arguments: builds the client, watches, publishes.
    async fn session(
        &self,
        args: &Arguments,
        shutdown: &CancellationToken,
        updates: &mut channel::Receiver<Arguments>,
    ) -> End {
        let options = &args.inner;
        let mut retry = Duration::from_secs(1);
        let (client, namespaces) = loop {
            let attempt = async {
                let namespaces = namespaces(options)?;
                let built = client::build(options, &args.http)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>((built, namespaces))
            };
            match attempt.await {
                Ok(ok) => break ok,
                Err(e) => {
                    emit(ClientSetupFailed {
                        component: &self.id,
                        error: &e,
                        failures: &self.metrics.failures,
                    });
                    self.status().last_error = Some(e);
                    tokio::select! {
                        _ = shutdown.cancelled() => return End::Shutdown,
                        _ = updates.changed() => return End::NewArguments,
                        _ = tokio::time::sleep(retry) => {}
                    }
                    retry = (retry * 2).min(Duration::from_secs(30));
                }
            }
        };
        let scopes = watch::plan(options, &namespaces);
        tracing::info!(component = %self.id, server = %client.source, role = %options.role, watches = scopes.len(), "starting Kubernetes discovery");
        {
            let mut st = self.status();
            st.source = client.source.clone();
            st.watches = scopes.iter().map(describe).collect();
            st.synced = false;
        }
        let streams = scopes.iter().enumerate().map(|(i, scope)| {
            let cfg = watch::config(options, scope.resource);
            watch::stream(client.client.clone(), scope, cfg).map(move |e| (i, e))
        });
        let mut events = futures::stream::select_all(streams);
        let mut state = State::new(options.role, options.attach_metadata, scopes.clone());
        let interval = options.publish_interval.get();
        let mut last_publish: Option<Instant> = None;
        let mut pending = false;

        loop {
            let deadline = last_publish.map_or_else(Instant::now, |t| t + interval);
            tokio::select! {
                _ = shutdown.cancelled() => return End::Shutdown,
                _ = updates.changed() => return End::NewArguments,
                _ = tokio::time::sleep_until(deadline), if pending => {
                    self.publish(&state);
                    last_publish = Some(Instant::now());
                    pending = false;
                }
                next = events.next() => {
                    // The streams never end; an exhausted select_all means no watches at all.
                    let Some((i, event)) = next else {
                        shutdown.cancelled().await;
                        return End::Shutdown;
                    };
                    self.handle(&mut state, &scopes, i, event);
                    if state.synced() && (last_publish.is_none() || state.take_changed()) {
                        pending = true;
                    }
                }
            }
        }
    }

    fn handle(&self, state: &mut State, scopes: &[Scope], i: usize, event: WatchEvent) {
        if let WatchEvent::Error(e) = &event {
            let scope = scopes.get(i).map(describe).unwrap_or_default();
            emit(WatchFailed {
                component: &self.id,
                watch: &scope,
                error: e,
                failures: &self.metrics.failures,
            });
            self.status().last_error = Some(format!("{scope}: {e}"));
            return;
        }
        let metrics = &self.metrics;
        state.apply(i, event, &mut |resource, kind| {
            metrics.event(resource, kind)
        });
    }

    fn publish(&self, state: &State) {
        let targets = targets_value(state.targets());
        let n = targets.len();
        self.exports.publish(exports(targets));
        let mut st = self.status();
        st.synced = true;
        st.targets = n;
        st.groups = state.group_count();
        st.cached = state.cached();
        st.publications += 1;
        tracing::debug!(component = %self.id, targets = n, "published Kubernetes targets");
    }
}

fn describe(scope: &Scope) -> String {
    match &scope.namespace {
        Some(ns) => format!("{} in namespace {ns}", scope.resource.as_str()),
        None => format!("{} (all namespaces)", scope.resource.as_str()),
    }
}

impl Component for Kubernetes {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(Vec::new())
    }

    /// `api_server` must be an http(s) URL, and HTTP client settings need it: what would
    /// otherwise fail when building or on every connection attempt.
    fn validate(args: &Arguments) -> Vec<Invalid> {
        let mut out = Vec::new();
        let api_server = &args.inner.api_server;
        if !api_server.is_empty() {
            let problem = match reqwest::Url::parse(api_server) {
                Err(e) => Some(e.to_string()),
                Ok(url) if !matches!(url.scheme(), "http" | "https") => {
                    Some("scheme must be http or https".to_string())
                }
                Ok(_) => None,
            };
            if let Some(reason) = problem {
                out.push(
                    Invalid::new(format!("invalid api_server {api_server:?}: {reason}"))
                        .attr("api_server"),
                );
            }
        }
        if let Err(msg) = args::validate_http_client(&args.inner, &args.http) {
            out.push(Invalid::new(msg));
        }
        out
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        args::validate_http_client(&args.inner, &args.http)?;
        let (tx, _rx) = channel::channel(args);
        Ok(Kubernetes {
            metrics: metrics::KubernetesMetrics::get(&opts.metrics).component(&opts.id),
            id: opts.id,
            exports: opts.exports,
            args: tx,
            status: Mutex::new(Status::default()),
        })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        args::validate_http_client(&args.inner, &args.http)?;
        self.args.send_replace(args);
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        let mut updates = self.args.subscribe();
        loop {
            let args = updates.borrow_and_update().clone();
            match self.session(&args, &shutdown, &mut updates).await {
                End::Shutdown => break,
                End::NewArguments => continue,
            }
        }
        self.metrics.remove();
        Ok(())
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        let st = self.status();
        let cached: serde_json::Map<String, serde_json::Value> = st
            .cached
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| (r.as_str().to_string(), serde_json::json!(n)))
            .collect();
        Some(serde_json::json!({
            "server": st.source,
            "watches": st.watches,
            "synced": st.synced,
            "targets": st.targets,
            "groups": st.groups,
            "cached_objects": cached,
            "publications": st.publications,
            "last_error": st.last_error,
        }))
    }

    fn health(&self) -> Option<Health> {
        let st = self.status();
        match (&st.last_error, st.synced) {
            (Some(e), false) => Some(Health::unhealthy(format!(
                "waiting for the initial list: {e}"
            ))),
            _ => None,
        }
    }
}

/// What [`snapshot`] found.
pub struct Snapshot {
    /// Which server and credentials were used.
    pub server: String,
    pub watches: Vec<String>,
    pub targets: Vec<LabelSet>,
}

/// Lists once (every watch's initial list) and returns the targets, for `scraper discover`.
/// Fails with the last API error (e.g. RBAC's "pods is forbidden") if the lists do not all
/// complete within `timeout`.
pub async fn snapshot(args: &Arguments, timeout: Duration) -> Result<Snapshot, String> {
    let options = &args.inner;
    args::validate_http_client(options, &args.http)?;
    let namespaces = namespaces(options)?;
    let client = client::build(options, &args.http)
        .await
        .map_err(|e| e.to_string())?;
    let scopes = watch::plan(options, &namespaces);
    let watches: Vec<String> = scopes.iter().map(describe).collect();
    let streams = scopes.iter().enumerate().map(|(i, scope)| {
        let cfg = watch::config(options, scope.resource);
        watch::stream(client.client.clone(), scope, cfg).map(move |e| (i, e))
    });
    let mut events = futures::stream::select_all(streams);
    let mut state = State::new(options.role, options.attach_metadata, scopes.clone());
    let mut last_error = None;
    let deadline = Instant::now() + timeout;
    while !state.synced() {
        match tokio::time::timeout_at(deadline, events.next()).await {
            Ok(Some((i, WatchEvent::Error(e)))) => {
                let scope = scopes.get(i).map(describe).unwrap_or_default();
                last_error = Some(format!("{scope}: {e}"));
            }
            Ok(Some((i, event))) => state.apply(i, event, &mut |_, _| {}),
            Ok(None) => break,
            Err(_) => {
                let pending: Vec<&str> = watches
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !state.watch_synced(*i))
                    .map(|(_, w)| w.as_str())
                    .collect();
                return Err(format!(
                    "{} ({}): the initial list did not complete within {timeout:?} for: {}{}",
                    client.source,
                    options.role,
                    pending.join(", "),
                    last_error
                        .map(|e| format!("; last error: {e}"))
                        .unwrap_or_default()
                ));
            }
        }
    }
    Ok(Snapshot {
        server: client.source,
        watches,
        targets: state.targets().map(|t| (**t).clone()).collect(),
    })
}
