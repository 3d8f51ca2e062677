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
//!   targets stay exported. Every request to the API server is bounded (`watcher::Timeouts`: a
//!   list page or a watch's answer within 60 s, a watch within its `timeoutSeconds` of 290 s
//!   plus 30 s), so a server that accepts connections and never answers cannot freeze
//!   discovery; a 410 Gone, however it arrives, relists. While any watch is failing the
//!   component is unhealthy, naming the watches and their errors; a warning is logged when a
//!   watch starts failing and an info line when it is current again (which also clears
//!   `last_error`). Failures are counted in `prometheus_sd_kubernetes_failures_total` and, by
//!   reason, `discovery_kubernetes_failures_total{reason}`; failing watches in
//!   `discovery_kubernetes_watches_failing`. Object events are counted in
//!   `prometheus_sd_kubernetes_events_total{role,event}` (Prometheus' names).
//! * New arguments restart discovery; the old targets stay exported until the new watches
//!   have synced.
//!
//! Layout: [`args`] (the block), `client` (which server, which credentials), `watch` (one
//! list+watch per resource and namespace, over `protocols::kubernetes::watcher`: that loop's
//! timeouts, relists and backoff), `outage` (which watches are failing, for health and logs), `state` (caches,
//! groups, relist semantics), `role`
//! (what each role watches and rebuilds), and one file per role's target builder (`pod`,
//! `node`, `service`, `endpoints`, `endpointslice`, `ingress`) plus `attach` and `labels` which they share.

mod args;
mod attach;
mod cache;
mod client;
mod endpoints;
mod endpointslice;
mod events;
mod ingress;
mod labels;
mod metrics;
mod node;
mod outage;
mod pod;
mod role;
mod service;
mod state;
#[cfg(test)]
mod testutil;
mod watch;

use self::events::{
    ClientSetupFailed, ClientSetupRecovered, WatchExpired, WatchFailed, WatchRecovered,
};
use self::outage::Outages;
use crate::runtime::event::emit;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use futures::StreamExt as _;
use tokio::sync::watch as channel;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::protocols::kubernetes::{Failure, FailureReason, Timeouts};
pub use args::{Arguments, AttachMetadata, Namespaces, Options, Selector};
pub use cache::{Cache, Caches, Key};
pub use client::{Built as BuiltClient, ClientError, build as build_client};
pub use role::{Affected, Resource, Role};
pub use state::{EventKind, Object, Scope, State, WatchEvent};

use crate::labels::LabelSet;
use crate::runtime::health::{Health, HealthState};
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
    /// The latest error while something is failing; cleared when everything recovered.
    last_error: Option<String>,
    publications: u64,
    /// The client cannot be built: the error, when that started, and how many attempts failed.
    setup_error: Option<(String, SystemTime, u64)>,
    outages: Outages,
    /// When the last failure ended (or the first publication), for health.
    healthy_since: Option<SystemTime>,
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
                Ok(ok) => {
                    self.setup_succeeded();
                    break ok;
                }
                Err(e) => {
                    self.setup_failed(e);
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
            // The previous session's watches are gone, failing or not, and so are their errors.
            st.outages = Outages::new(scopes.len());
            st.last_error = None;
            self.metrics.set_failing(0);
        }
        let streams = scopes.iter().enumerate().map(|(i, scope)| {
            let cfg = watch::config(options, scope.resource);
            watch::stream(client.client.clone(), scope, cfg, options.timeouts).map(move |e| (i, e))
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

    fn setup_succeeded(&self) {
        let mut st = self.status();
        if let Some((_, _, failures)) = st.setup_error.take() {
            emit(ClientSetupRecovered {
                component: &self.id,
                failures,
            });
            st.last_error = None;
            st.healthy_since = Some(SystemTime::now());
        }
    }

    fn setup_failed(&self, e: String) {
        let mut st = self.status();
        emit(ClientSetupFailed {
            component: &self.id,
            error: &e,
            repeated: st.setup_error.is_some(),
            metrics: &self.metrics,
        });
        let (since, failures) = st
            .setup_error
            .as_ref()
            .map_or((SystemTime::now(), 0), |(_, t, n)| (*t, *n));
        st.setup_error = Some((e.clone(), since, failures + 1));
        st.last_error = Some(e);
    }

    fn handle(&self, state: &mut State, scopes: &[Scope], i: usize, event: WatchEvent) {
        let scope = || scopes.get(i).map(describe).unwrap_or_default();
        match &event {
            WatchEvent::Error(f) if f.reason == FailureReason::Expired => {
                emit(WatchExpired {
                    component: &self.id,
                    watch: &scope(),
                    failure: f,
                    metrics: &self.metrics,
                });
                return;
            }
            WatchEvent::Error(f) => {
                let watch = scope();
                let mut st = self.status();
                let started = st.outages.failed(i, f);
                emit(WatchFailed {
                    component: &self.id,
                    watch: &watch,
                    failure: f,
                    started,
                    failing: st.outages.failing(),
                    metrics: &self.metrics,
                });
                st.last_error = Some(format!("{watch}: {f}"));
                return;
            }
            // A completed list or an answered watch: this watch's cache is current again.
            WatchEvent::InitDone | WatchEvent::Watching => self.recovered(scopes, i),
            _ => {}
        }
        let metrics = &self.metrics;
        state.apply(i, event, &mut |resource, kind| {
            metrics.event(resource, kind)
        });
    }

    /// Ends watch `i`'s outage, if it had one.
    fn recovered(&self, scopes: &[Scope], i: usize) {
        let mut st = self.status();
        let Some(outage) = st.outages.recovered(i) else {
            return;
        };
        emit(WatchRecovered {
            component: &self.id,
            watch: &scopes.get(i).map(describe).unwrap_or_default(),
            outage: &outage,
            failing: st.outages.failing(),
            metrics: &self.metrics,
        });
        // The error shown is one still going on, if any.
        let still = st.outages.iter().last().map(|(j, o)| {
            (
                scopes.get(j).map(describe).unwrap_or_default(),
                o.last.clone(),
            )
        });
        st.last_error = still.map(|(watch, f)| format!("{watch}: {f}"));
        if st.last_error.is_none() {
            st.healthy_since = Some(SystemTime::now());
        }
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
        st.healthy_since.get_or_insert_with(SystemTime::now);
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
            "failing_watches": st.outages.iter().map(|(i, o)| serde_json::json!({
                "watch": st.watches.get(i),
                "error": o.last.to_string(),
                "failures": o.failures,
            })).collect::<Vec<_>>(),
        }))
    }

    fn health(&self) -> Option<Health> {
        let st = self.status();
        if let Some((e, since, _)) = &st.setup_error {
            return Some(Health {
                state: HealthState::Unhealthy,
                message: format!("cannot set up the Kubernetes client, retrying: {e}"),
                updated: *since,
            });
        }
        if st.outages.failing() > 0 {
            return Some(outage_health(&st));
        }
        // Before the first publication nothing is known yet: the controller's own report
        // stands.
        let since = st.healthy_since.filter(|_| st.synced)?;
        Some(Health {
            state: HealthState::Healthy,
            message: format!("{} watches current", st.watches.len()),
            updated: since,
        })
    }
}

/// Unhealthy: which watches are failing and why (at most three named).
fn outage_health(st: &Status) -> Health {
    let failing = st.outages.failing();
    let named: Vec<String> = st
        .outages
        .iter()
        .take(3)
        .map(|(i, o)| {
            let watch = st.watches.get(i).map_or("?", String::as_str);
            let times = match o.failures {
                1 => "once".to_string(),
                n => format!("{n} times"),
            };
            format!("{watch}: {} (failed {times})", o.last)
        })
        .collect();
    let more = failing.saturating_sub(named.len());
    let more = if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    };
    let what = if st.synced {
        format!(
            "{failing} of {} watches failing, targets kept from before (may be stale)",
            st.watches.len()
        )
    } else {
        "waiting for the initial list".to_string()
    };
    Health {
        state: HealthState::Unhealthy,
        message: format!("{what}: {}{more}", named.join("; ")),
        updated: st
            .outages
            .iter()
            .map(|(_, o)| o.started)
            .max()
            .unwrap_or_else(SystemTime::now),
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
        watch::stream(client.client.clone(), scope, cfg, options.timeouts).map(move |e| (i, e))
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
