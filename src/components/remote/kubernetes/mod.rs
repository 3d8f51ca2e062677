//! `remote.kubernetes.secret` and `remote.kubernetes.configmap`: one Secret's or ConfigMap's
//! data, read from the Kubernetes API and polled (Alloy's `internal/component/remote/kubernetes`).
//!
//! ```alloy
//! remote.kubernetes.secret "creds" {
//!   namespace = "monitoring"
//!   name      = "pyroscope-auth"
//! }
//!
//! pyroscope.write "default" {
//!   endpoint {
//!     url = "https://profiles.example"
//!     basic_auth {
//!       username = convert.nonsensitive(remote.kubernetes.secret.creds.data["username"])
//!       password = remote.kubernetes.secret.creds.data["password"]
//!     }
//!   }
//! }
//! ```
//!
//! * Arguments ([`args`]): `namespace`, `name`, `poll_frequency` (`"1m"`), `poll_timeout`
//!   (`"15s"`, each read's bound) and a `client` block: `api_server` (through the shared HTTP
//!   client and its auth/TLS arguments, `httpclient::kube`), `kubeconfig_file`, or neither (the
//!   pod's service account in a cluster, else the default kubeconfig), as `discovery.kubernetes`.
//! * Export: `data`, the object's keys and values. A Secret's values are secrets (redacted in
//!   the API and UI; `convert.nonsensitive` turns one into a string), a ConfigMap's are strings.
//! * Reads ([`data`]): a GET of `/api/v1/namespaces/{namespace}/{secrets|configmaps}/{name}`
//!   when the component is built, when its arguments change, and every `poll_frequency`.
//!   Exports are published only when the data changed.
//! * The first read happens while the component is built, as in Alloy (its `New` calls
//!   `Update`, which polls and returns the poll's error), so dependants are first evaluated
//!   with the data: a `pyroscope.write` `url` can come from a ConfigMap. It must succeed, or
//!   the component is not built and the load fails (Alloy's `New` fails, and `alloy run`
//!   exits with "could not perform the initial load successfully"): `scraper run` reports the
//!   error at the block (a missing secret, a forbidden read) as for any bad block and exits.
//!   A failed read for new arguments fails the update, and the old arguments and data stay.
//!   A failed periodic read keeps the last good data and is loud: a warning when failures
//!   start (`events`), `scraper_remote_kubernetes_poll_failures_total`, and the component
//!   unhealthy with the error until a read succeeds (then an info line).
//! * `data` is unknown until a read (`EXPORTS_KNOWN_BEFORE_BUILD`): the checks made before
//!   building (`scraper check`, every load's dry run) leave out the attributes that use it,
//!   without an error (`scraper check` names them on one line), and check everything else.
//!   `run` checks them with the data it read. A reload's dry run uses the live data only
//!   while the block evaluates to the arguments the component runs with.
//!
//! # Differences from Alloy, on purpose
//!
//! * `namespace` and `name` must be Kubernetes names (they become an API path); Alloy sends
//!   whatever it is given.
//! * A failed read of new arguments keeps the old arguments and data (polled as before), and
//!   the new ones are tried again at the next evaluation (a reload, an input change); Alloy
//!   has already switched to the new ones and polls them every `poll_frequency`.
//! * A value that is not UTF-8 gets U+FFFD for its bad bytes (`data`).

pub mod args;
pub mod data;
mod events;

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use args::Arguments;
pub use data::Kind;

use crate::gocompat::time::rfc3339_nanos;
use crate::httpclient::HttpClient;
use crate::protocols::kubernetes::client as kube_client;
use crate::runtime::event::emit;
use crate::runtime::failing::Failing;
use crate::runtime::health::Health;
use crate::runtime::metrics::InstanceCounter;
use crate::runtime::{BoxError, Component, ComponentOptions, ExportsHandle};
use crate::syntax::decode::Invalid;
use crate::syntax::value::{Secret as SecretValue, Value};
use events::{PollFailed, PollRecovered};

/// Which object a registration reads.
pub trait Resource: Send + Sync + 'static {
    const KIND: Kind;
}

/// `remote.kubernetes.secret`.
pub struct SecretResource;
impl Resource for SecretResource {
    const KIND: Kind = Kind::Secret;
}

/// `remote.kubernetes.configmap`.
pub struct ConfigMapResource;
impl Resource for ConfigMapResource {
    const KIND: Kind = Kind::ConfigMap;
}

/// `remote.kubernetes.secret`.
pub type Secret = Remote<SecretResource>;
/// `remote.kubernetes.configmap`.
pub type ConfigMap = Remote<ConfigMapResource>;

/// The running component.
pub struct Remote<R: Resource> {
    id: String,
    exports: ExportsHandle,
    metrics: InstanceCounter,
    state: Mutex<State>,
    /// Wakes the loop when the arguments changed.
    rearm: Notify,
    resource: PhantomData<R>,
}

struct State {
    args: Arguments,
    /// Built on the first read after each change of arguments.
    client: Option<kube::Client>,
    /// Bumped on every update, so an answer to the old arguments is discarded.
    generation: u64,
    /// The last good data; `None` before the first good read.
    data: Option<BTreeMap<String, String>>,
    /// The error of the last read, while reads fail, and since when.
    failing: Failing,
    polls: u64,
    failures: u64,
    last_poll: Option<SystemTime>,
}

fn exports(kind: Kind, data: &BTreeMap<String, String>) -> Value {
    let values = data
        .iter()
        .map(|(k, v)| {
            let v = match kind {
                Kind::Secret => Value::Secret(SecretValue::new(v.clone())),
                Kind::ConfigMap => Value::String(v.clone()),
            };
            (k.clone(), v)
        })
        .collect();
    Value::Object(BTreeMap::from([(
        "data".to_string(),
        Value::Object(values),
    )]))
}

/// The client the `client` block asks for (as `discovery.kubernetes` decides it).
async fn build_client(args: &Arguments) -> Result<kube::Client, String> {
    let Some(client) = &args.client else {
        return kube_client::default_client()
            .await
            .map(|b| b.client)
            .map_err(|e| e.to_string());
    };
    if !client.api_server.is_empty() {
        let http = HttpClient::new(&client.http, crate::httpclient::USER_AGENT)
            .map_err(|e| e.to_string())?;
        return crate::httpclient::kube::client(&client.api_server, Arc::new(http))
            .map_err(|e| e.to_string());
    }
    let built = if client.kubeconfig_file.is_empty() {
        kube_client::default_client().await
    } else {
        kube_client::from_kubeconfig_file(&PathBuf::from(&client.kubeconfig_file)).await
    };
    built.map(|b| b.client).map_err(|e| e.to_string())
}

/// `namespace/name`, for messages.
fn object(args: &Arguments) -> String {
    format!("{}/{}", args.namespace, args.name)
}

/// One GET of the object with `client`, bounded by `poll_timeout`.
async fn read_with(
    kind: Kind,
    client: &kube::Client,
    args: &Arguments,
) -> Result<BTreeMap<String, String>, String> {
    let request = http::Request::get(data::path(kind, &args.namespace, &args.name))
        .header(http::header::ACCEPT, "application/json")
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    let body = tokio::time::timeout(args.poll_timeout.get(), client.request_text(request))
        .await
        .map_err(|_| format!("no answer within poll_timeout ({})", args.poll_timeout))?
        .map_err(|e| e.to_string())?;
    data::decode(kind, &body).map_err(|e| e.to_string())
}

/// A read while the controller waits (`build`, `update`), as Alloy polls inside `Update`: on a
/// helper thread with a runtime of its own, because `build` and `update` are synchronous and
/// may be called from inside the controller's runtime. Its client is thrown away with that
/// runtime (its connections belong to it); the loop builds its own.
fn read_now(kind: Kind, args: &Arguments) -> Result<BTreeMap<String, String>, String> {
    let read = || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("starting a runtime for the read: {e}"))?;
        runtime.block_on(async {
            let client = build_client(args)
                .await
                .map_err(|e| format!("creating kubernetes client: {e}"))?;
            read_with(kind, &client, args).await
        })
    };
    let result = std::thread::scope(|s| s.spawn(read).join());
    let outcome = result.unwrap_or_else(|_| Err("the read panicked".to_string()));
    outcome.map_err(|e| format!("reading {} {}: {e}", kind.word(), object(args)))
}

impl<R: Resource> Remote<R> {
    fn state(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// One read in the loop, with the loop's cached client.
    async fn read(
        &self,
        args: &Arguments,
        generation: u64,
    ) -> Result<BTreeMap<String, String>, String> {
        let cached = self.state().client.clone();
        let client = match cached {
            Some(c) => c,
            None => {
                let c = build_client(args)
                    .await
                    .map_err(|e| format!("creating kubernetes client: {e}"))?;
                let mut st = self.state();
                if st.generation == generation {
                    st.client = Some(c.clone());
                }
                c
            }
        };
        read_with(R::KIND, &client, args).await
    }

    /// Applies good data: publishes it if it changed, ends a run of failures.
    fn succeeded(&self, st: &mut State, data: BTreeMap<String, String>) {
        if let Some(since) = st.failing.recovered() {
            emit(PollRecovered {
                component: &self.id,
                object: &object(&st.args),
                since,
            });
        }
        if st.data.as_ref() != Some(&data) {
            self.exports.publish(exports(R::KIND, &data));
            st.data = Some(data);
        }
    }

    /// One read, its outcome applied.
    async fn poll(&self) {
        let (args, generation) = {
            let st = self.state();
            (st.args.clone(), st.generation)
        };
        let result = self.read(&args, generation).await;
        let mut st = self.state();
        if st.generation != generation {
            return;
        }
        st.polls += 1;
        st.last_poll = Some(SystemTime::now());
        match result {
            Ok(data) => self.succeeded(&mut st, data),
            Err(error) => {
                st.failures += 1;
                let new = st.failing.failed(&error);
                emit(PollFailed {
                    component: &self.id,
                    object: &object(&args),
                    error: &error,
                    new,
                    kept_keys: st.data.as_ref().map_or(0, BTreeMap::len),
                    metrics: &self.metrics,
                });
            }
        }
    }
}

impl<R: Resource> Component for Remote<R> {
    type Arguments = Arguments;

    // `data` comes from the cluster at build: before that, an empty map would make a required
    // attribute read from it (a `url`) look missing. Dependants are checked with the real
    // data once built (see `build`), and `scraper check`, which reads nothing, leaves their
    // attributes that use it unchecked.
    const EXPORTS_KNOWN_BEFORE_BUILD: bool = false;

    fn initial_exports() -> Value {
        exports(R::KIND, &BTreeMap::new())
    }

    fn validate(args: &Arguments) -> Vec<Invalid> {
        args::invalid(args)
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        // As Alloy's `New`, which polls inside its first `Update`: the first read must
        // succeed, and its data is exported before the controller evaluates the dependants,
        // which come after this block in the graph's order.
        let data = read_now(R::KIND, &args)?;
        opts.exports.publish(exports(R::KIND, &data));
        Ok(Remote {
            metrics: events::failures(&opts.metrics, &opts.id),
            id: opts.id,
            exports: opts.exports,
            state: Mutex::new(State {
                args,
                client: None,
                generation: 0,
                data: Some(data),
                failing: Failing::default(),
                polls: 1,
                failures: 0,
                last_poll: Some(SystemTime::now()),
            }),
            rearm: Notify::new(),
            resource: PhantomData,
        })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        // As Alloy: new arguments are read at once, and a failed read fails the update (the
        // old arguments and data stay).
        let data = read_now(R::KIND, &args)?;
        let mut st = self.state();
        st.args = args;
        st.client = None;
        st.generation += 1;
        st.polls += 1;
        st.last_poll = Some(SystemTime::now());
        self.succeeded(&mut st, data);
        // Restarts the wait: the next read is a full poll_frequency away.
        self.rearm.notify_one();
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        loop {
            let interval = self.state().args.poll_frequency.get();
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.rearm.notified() => continue,
                _ = tokio::time::sleep(interval) => {}
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.poll() => {}
            }
        }
        self.metrics.remove();
        Ok(())
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        let st = self.state();
        Some(serde_json::json!({
            "namespace": st.args.namespace,
            "name": st.args.name,
            // Key names only: the values of a Secret never leave through the API.
            "keys": st.data.as_ref().map(|d| d.keys().cloned().collect::<Vec<_>>()),
            "poll_frequency": st.args.poll_frequency.to_string(),
            "polls": st.polls,
            "failures": st.failures,
            "last_poll": st.last_poll.map(rfc3339_nanos),
            "last_error": st.failing.error(),
        }))
    }

    fn health(&self) -> Option<Health> {
        let st = self.state();
        if let Some(error) = st.failing.error() {
            return Some(Health::unhealthy(format!(
                "polling failed: {error}; keeping the last good data ({} keys)",
                st.data.as_ref().map_or(0, BTreeMap::len)
            )));
        }
        st.data
            .as_ref()
            .map(|_| Health::healthy(format!("got {}", R::KIND.word())))
    }
}
