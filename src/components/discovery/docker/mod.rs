//! `discovery.docker`: one target per container port from the Docker Engine API, Prometheus'
//! `docker_sd` (Alloy's `internal/component/discovery/docker` over Prometheus'
//! `discovery/moby`).
//!
//! ```alloy
//! discovery.docker "local" {
//!   host = "unix:///var/run/docker.sock"
//! }
//! ```
//!
//! * Arguments ([`Arguments`]): see [`args`]. `host` is `unix://`, `tcp://`, `http://` or
//!   `https://` ([`api`]).
//! * Export: `targets`, with Prometheus' `__meta_docker_*` labels ([`targets`]).
//! * The daemon is asked as soon as the component runs, then every `refresh_interval` and at
//!   once when the arguments change; each request times out after `refresh_interval`.
//! * A failed refresh keeps the last good targets and is loud: a warning when failures start,
//!   `prometheus_sd_refresh_failures_total{mechanism="docker"}`, and the component is unhealthy
//!   with the error until a refresh succeeds.
//!
//! # Differences from Alloy, on purpose
//!
//! * Alloy keeps the component healthy through failed refreshes; we mark it unhealthy.
//! * Targets are ordered (containers as listed, networks by name); Go's map order is random.
//! * `match_first_network` is an argument (default true, Prometheus'); some Alloy versions
//!   do not expose it and then use every network.
//! * Requests are unversioned (`/containers/json`), answered with the daemon's current API
//!   version; Alloy's client negotiates a version first.
//! * Alloy publishes at most every 5 s; we publish a change as soon as it is read.

pub mod api;
pub mod args;
mod events;
pub mod targets;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use args::{Arguments, Filter, Options};
use events::{ListFailed, ListRecovered};

use crate::gocompat::time::rfc3339_nanos;
use crate::httpclient::HttpClient;
use crate::labels::LabelSet;
use crate::runtime::event::emit;
use crate::runtime::failing::Failing;
use crate::runtime::health::Health;
use crate::runtime::metrics::InstanceCounter;
use crate::runtime::{BoxError, Component, ComponentOptions, ExportsHandle};
use crate::syntax::decode::Invalid;
use crate::syntax::value::Value;
use crate::targets as target;

/// The running component.
pub struct Docker {
    id: String,
    exports: ExportsHandle,
    metrics: InstanceCounter,
    state: Mutex<State>,
    rearm: Notify,
}

struct State {
    args: Arguments,
    endpoint: api::Endpoint,
    client: Arc<HttpClient>,
    generation: u64,
    output: Vec<Arc<LabelSet>>,
    failing: Failing,
    refreshes: u64,
    last_refresh: Option<SystemTime>,
}

fn exports(targets: Vec<Value>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("targets".to_string(), Value::Array(targets));
    Value::Object(m)
}

fn connect(args: &Arguments) -> Result<(api::Endpoint, Arc<HttpClient>), BoxError> {
    let endpoint = api::endpoint(&args.host)?;
    let client = HttpClient::new(&args.http, crate::httpclient::USER_AGENT)?;
    Ok((endpoint, Arc::new(client)))
}

impl Docker {
    fn state(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    async fn refresh(&self) {
        let (endpoint, client, args, generation) = {
            let st = self.state();
            (
                st.endpoint.clone(),
                st.client.clone(),
                st.args.clone(),
                st.generation,
            )
        };
        let filters: Vec<(String, Vec<String>)> = args
            .filter
            .iter()
            .map(|f| (f.name.clone(), f.values.clone()))
            .collect();
        let result = api::list(&endpoint, &client, &filters, args.refresh_interval.get()).await;
        let mut st = self.state();
        if st.generation != generation {
            return;
        }
        st.refreshes += 1;
        st.last_refresh = Some(SystemTime::now());
        match result {
            Ok((containers, networks)) => {
                if let Some(since) = st.failing.recovered() {
                    emit(ListRecovered {
                        component: &self.id,
                        since,
                    });
                }
                let opts = targets::Options {
                    port: args.port,
                    host_networking_host: args.host_networking_host.clone(),
                    match_first_network: args.match_first_network,
                };
                let output = targets::targets(&containers, &networks, &opts);
                if output != st.output {
                    let values = output.iter().map(|t| target::value(t.clone())).collect();
                    self.exports.publish(exports(values));
                    st.output = output;
                }
            }
            Err(error) => {
                let new = st.failing.failed(&error);
                emit(ListFailed {
                    component: &self.id,
                    host: &args.host,
                    error: &error,
                    new,
                    kept: st.output.len(),
                    metrics: &self.metrics,
                });
            }
        }
    }
}

impl Component for Docker {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(Vec::new())
    }

    fn validate(args: &Arguments) -> Vec<Invalid> {
        args::invalid(args)
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let (endpoint, client) = connect(&args)?;
        Ok(Docker {
            metrics: events::failures(&opts.metrics, &opts.id),
            id: opts.id,
            exports: opts.exports,
            state: Mutex::new(State {
                args,
                endpoint,
                client,
                generation: 0,
                output: Vec::new(),
                failing: Failing::default(),
                refreshes: 0,
                last_refresh: None,
            }),
            rearm: Notify::new(),
        })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        let (endpoint, client) = connect(&args)?;
        let mut st = self.state();
        st.args = args;
        st.endpoint = endpoint;
        st.client = client;
        st.generation += 1;
        self.rearm.notify_one();
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.refresh() => {}
            }
            let interval = self.state().args.refresh_interval.get();
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.rearm.notified() => {}
                _ = tokio::time::sleep(interval) => {}
            }
        }
        self.metrics.remove();
        Ok(())
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        let st = self.state();
        Some(serde_json::json!({
            "host": st.args.host,
            "targets": st.output.len(),
            "refreshes": st.refreshes,
            "last_refresh": st.last_refresh.map(rfc3339_nanos),
            "last_error": st.failing.error(),
        }))
    }

    fn health(&self) -> Option<Health> {
        let st = self.state();
        let error = st.failing.error()?;
        Some(Health::unhealthy(format!(
            "last refresh failed: {error}; keeping the last good targets ({})",
            st.output.len()
        )))
    }
}
