//! `discovery.http`: targets from an HTTP endpoint, Prometheus' `http_sd` (Alloy's
//! `internal/component/discovery/http` over Prometheus' `discovery/http`).
//!
//! ```alloy
//! discovery.http "dynamic" {
//!   url              = "https://sd.example/targets"
//!   refresh_interval = "15s"
//!   bearer_token_file = "/var/run/secrets/sd-token"
//! }
//! ```
//!
//! * Arguments ([`Arguments`]): `url` (http or https), `refresh_interval` (`"60s"`, also each
//!   request's timeout) and the HTTP client arguments (`basic_auth`, `authorization`,
//!   `oauth2`, `bearer_token(_file)`, `tls_config`, proxies, `http_headers`...).
//! * Export: `targets`, each with `__address__`, its group's labels and `__meta_url` (the URL
//!   as configured), in the answer's order (`crate::targets::group`).
//! * Requests ([`fetch`]): the first as soon as the component runs, then every
//!   `refresh_interval`, and at once when the arguments change. The endpoint must answer 200
//!   with `Content-Type: application/json` and a JSON list of target groups (at most
//!   [`fetch::BODY_LIMIT`]).
//! * A failed request (transport, status, content type, body) keeps the last good targets and
//!   is loud: a warning when failures start (`events`), `prometheus_sd_http_failures_total`, and
//!   the component is unhealthy with the error until a request succeeds.
//!
//! # Differences from Alloy, on purpose
//!
//! * A URL Prometheus' config loader would refuse (no http/https scheme, no host) is a config
//!   error at `url`; Alloy skips that check and each request fails.
//! * Alloy keeps the component healthy through failed requests (only its log and
//!   `prometheus_sd_http_failures_total` tell); we mark it unhealthy.
//! * The answer is read up to [`fetch::BODY_LIMIT`]; Prometheus reads without a bound.
//! * Requests say `User-Agent: scraper/<version>`, not `Prometheus/<version>`.
//! * Alloy publishes at most every 5 s; we publish a change as soon as it is fetched.

pub mod args;
mod events;
pub mod fetch;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use args::{Arguments, Options};
pub use fetch::URL_LABEL;

use crate::gocompat::time::{format_go_duration, rfc3339_nanos};
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
use events::{RequestFailed, RequestRecovered};

/// The running component.
pub struct Http {
    id: String,
    exports: ExportsHandle,
    metrics: InstanceCounter,
    state: Mutex<State>,
    /// Wakes the loop when the arguments changed.
    rearm: Notify,
}

struct State {
    args: Arguments,
    client: Arc<HttpClient>,
    /// Bumped on every update, so an answer to the old arguments is discarded.
    generation: u64,
    output: Vec<Arc<LabelSet>>,
    /// The error of the last request, while requests fail, and since when.
    failing: Failing,
    failures: u64,
    requests: u64,
    publications: u64,
    last_request: Option<SystemTime>,
    last_duration: Option<std::time::Duration>,
}

fn exports(targets: Vec<Value>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("targets".to_string(), Value::Array(targets));
    Value::Object(m)
}

fn client(args: &Arguments) -> Result<Arc<HttpClient>, BoxError> {
    Ok(Arc::new(HttpClient::new(
        &args.http,
        crate::httpclient::USER_AGENT,
    )?))
}

impl Http {
    fn state(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// One request with the current arguments, its outcome applied.
    async fn refresh(&self) {
        let (client, url, interval, generation) = {
            let st = self.state();
            (
                st.client.clone(),
                st.args.url.clone(),
                st.args.refresh_interval.get(),
                st.generation,
            )
        };
        let started = Instant::now();
        let result = fetch::fetch(&client, &url, interval).await;
        let mut st = self.state();
        if st.generation != generation {
            return;
        }
        st.requests += 1;
        st.last_request = Some(SystemTime::now());
        st.last_duration = Some(started.elapsed());
        match result {
            Ok(targets) => {
                if let Some(since) = st.failing.recovered() {
                    emit(RequestRecovered {
                        component: &self.id,
                        url: &url,
                        since,
                    });
                }
                if targets != st.output {
                    let values = targets.iter().map(|t| target::value(t.clone())).collect();
                    self.exports.publish(exports(values));
                    st.publications += 1;
                    st.output = targets;
                }
            }
            Err(error) => {
                st.failures += 1;
                let new = st.failing.failed(&error);
                emit(RequestFailed {
                    component: &self.id,
                    url: &url,
                    error: &error,
                    new,
                    kept: st.output.len(),
                    metrics: &self.metrics,
                });
            }
        }
    }
}

impl Component for Http {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(Vec::new())
    }

    fn validate(args: &Arguments) -> Vec<Invalid> {
        args::invalid(args)
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let client = client(&args)?;
        Ok(Http {
            metrics: events::failures(&opts.metrics, &opts.id),
            id: opts.id,
            exports: opts.exports,
            state: Mutex::new(State {
                args,
                client,
                generation: 0,
                output: Vec::new(),
                failing: Failing::default(),
                failures: 0,
                requests: 0,
                publications: 0,
                last_request: None,
                last_duration: None,
            }),
            rearm: Notify::new(),
        })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        let client = client(&args)?;
        let mut st = self.state();
        st.args = args;
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
            "url": st.args.url,
            "targets": st.output.len(),
            "refresh_interval": st.args.refresh_interval.to_string(),
            "requests": st.requests,
            "failures": st.failures,
            "publications": st.publications,
            "last_request": st.last_request.map(rfc3339_nanos),
            "last_request_duration": st.last_duration.map(format_go_duration),
            "last_error": st.failing.error(),
        }))
    }

    fn health(&self) -> Option<Health> {
        let st = self.state();
        let error = st.failing.error()?;
        Some(Health::unhealthy(format!(
            "last request to {} failed: {error}; keeping the last good targets ({})",
            st.args.url,
            st.output.len()
        )))
    }
}
