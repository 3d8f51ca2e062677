//! `pyroscope.write`: pushes profiles to Pyroscope-compatible backends over Connect
//! (`POST {url}/push.v1.PusherService/Push`), with Alloy's arguments, labels and retry rules,
//! but **decoupled from the producers**: `receiver.append()` only queues, so a slow or dead
//! backend never stalls scraping (in Alloy it does, alloy-components.md §3.4).
//!
//! ```text
//! append(profiles) ─► labels (filter __*, external_labels, sort, validate) ─► encode labels once
//!        │                                                                         │
//!        │              ┌──────── per endpoint ─────────────────────────────────────┘
//!        ▼              ▼
//!  never waits    bounded queue (bytes; oldest evicted when full; one in flight per series)
//!                       │
//!                 N senders: fit limits (trim) ─► push ─► retry/backoff or drop (counted)
//! ```
//!
//! # Arguments
//!
//! Alloy's: `external_labels`, and any number of `endpoint` blocks with `url`, `name`,
//! `remote_timeout` (10s), `headers`, `min_backoff_period` (500ms), `max_backoff_period` (5m),
//! `max_backoff_retries` (10; 0 = unlimited), `retry_on_http_429` (true), the HTTP client
//! arguments (`crate::httpclient`), and the accepted-but-unused `debug_info_upload_timeout`
//! and `tracing {}` block. With no endpoint, profiles are accepted and dropped (as in Alloy).
//!
//! Our additions, per endpoint, both optional:
//!
//! ```alloy
//! queue_config {
//!   max_bytes      = 67108864  // queue budget: profile + label bytes (64 MiB)
//!   senders        = 4         // concurrent pushes
//!   max_age        = "1h"      // drop profiles older than this (Pyroscope's reject_older_than)
//!   flush_deadline = "5s"      // how long shutdown waits for the queue to drain
//! }
//! limits {                      // Pyroscope's defaults; 0 disables a limit
//!   max_profile_size_bytes = 4194304  // decompressed
//!   max_profile_samples    = 16000
//!   max_burst_bytes        = 2097152  // ingestion_burst_size_mb: decompressed + label bytes
//! }
//! ```
//!
//! # Behaviour
//!
//! Labels: see `crate::protocols::pyroscope::labels`. Queueing, retries, probing, drops and
//! health: see `crate::push`, the engine this component shares with
//! `otelcol.exporter.otlphttp_profiles`, and docs/PUSH.md. Every drop is counted in
//! `pyroscope_write_dropped_{profiles,bytes}_total{endpoint,reason}` and logged rate-limited;
//! the component is unhealthy while an endpoint is failing or dropping.
//! Updates keep the exported receiver (dependants are not re-evaluated) and keep each
//! endpoint's queue when its URL is unchanged. Shutdown sends what is queued until
//! `flush_deadline`, then drops the rest (reason `shutdown`).
//!
//! Limits: a profile over one of the `limits` (which Pyroscope would reject) is trimmed
//! before it is pushed (`crate::push::limits`): zero samples are removed and equal samples
//! merged, then samples are kept so that every sample type keeps at least 95% of its total
//! where the limit allows it — for a heap profile, `inuse_*` as well as `alloc_*`, whose
//! weight lies in different samples — and the room left goes to the samples that weigh most
//! in any type. When even that many samples cannot hold 95% of every type, the types are
//! raised together and the ones left under 95% are named. A trimmed profile carries a pprof
//! comment (`go tool pprof -raw` prints it), e.g. `scraper: trimmed 50000 samples to 16000
//! (max_profile_samples = 16000); kept of each type's total: alloc_objects 98.5%, ...`, is
//! counted in `pyroscope_write_trimmed_profiles_total{endpoint,reason}` (`reason`: the limit
//! that decided the sample count), logged at debug level each time and at info (or warn, when
//! a type stayed under 95%) at most once a minute per endpoint. A profile that cannot be
//! trimmed to fit is dropped (reason `too_large`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::budget::Budget;
use crate::httpclient::WithHttpClient;
use crate::profiles::Receiver;
use crate::protocols::pyroscope::wire;
use crate::push::{
    EndpointSpec, LimitsConfig, Pipeline, Protocol, QueueConfig, Settings, WriteMetrics,
    header_problems, limits, push_url, sensitive_headers,
};
use crate::runtime::{BoxError, Component, ComponentOptions, Health};
use crate::syntax::decode::Invalid;
use crate::syntax::types::Duration;
use crate::syntax::value::Value;

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Arguments {
    pub external_labels: BTreeMap<String, String>,
    pub endpoint: Vec<WithHttpClient<EndpointOptions>>,
    /// Accepted for compatibility; we propagate no traces.
    pub tracing: Option<TracingOptions>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TracingOptions {
    pub jaeger_propagator: bool,
    pub trace_context_propagator: bool,
}

fn default_remote_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_debug_info_upload_timeout() -> Duration {
    Duration::from_secs(120)
}
fn default_min_backoff() -> Duration {
    Duration::from_millis(500)
}
fn default_max_backoff() -> Duration {
    Duration::from_secs(300)
}
fn default_max_backoff_retries() -> i64 {
    10
}
fn default_true() -> bool {
    true
}

/// One `endpoint` block (the HTTP client arguments come with it via `WithHttpClient`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct EndpointOptions {
    pub url: String,
    #[serde(default)]
    pub name: String,
    #[serde(default = "default_remote_timeout")]
    pub remote_timeout: Duration,
    /// Accepted for compatibility (eBPF debug-info upload, not implemented).
    #[serde(default = "default_debug_info_upload_timeout")]
    pub debug_info_upload_timeout: Duration,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default = "default_min_backoff")]
    pub min_backoff_period: Duration,
    #[serde(default = "default_max_backoff")]
    pub max_backoff_period: Duration,
    /// Attempts per profile for retryable errors; 0 = unlimited (negative: one attempt, as in
    /// dskit).
    #[serde(default = "default_max_backoff_retries")]
    pub max_backoff_retries: i64,
    #[serde(default = "default_true")]
    pub retry_on_http_429: bool,
    #[serde(default)]
    pub queue_config: QueueConfig,
    #[serde(default)]
    pub limits: LimitsConfig,
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

impl EndpointOptions {
    fn settings(&self) -> Result<Settings, BoxError> {
        let push_url = push_url(&self.url, wire::PUSH_PATH)?;
        let headers = sensitive_headers(&self.headers)?;
        let max_retries = match self.max_backoff_retries {
            0 => 0,
            n if n < 0 => 1,
            n => u32::try_from(n).unwrap_or(u32::MAX),
        };
        let q = &self.queue_config;
        Ok(Settings {
            url: self.url.clone(),
            protocol: Protocol::Connect,
            push_url,
            headers,
            remote_timeout: self.remote_timeout.get(),
            min_backoff: self.min_backoff_period.get(),
            max_backoff: self.max_backoff_period.get(),
            max_retries,
            retry_on_http_429: self.retry_on_http_429,
            retry: true,
            senders: to_usize(q.senders),
            max_age: q.max_age.get(),
            flush_deadline: q.flush_deadline.get(),
            limits: limits::Limits {
                max_profile_bytes: to_usize(self.limits.max_profile_size_bytes),
                max_samples: to_usize(self.limits.max_profile_samples),
                max_burst_bytes: to_usize(self.limits.max_burst_bytes),
            },
        })
    }
}

/// Applies `args` to `pipeline`. Nothing changes if any endpoint cannot be built.
fn configure(pipeline: &Pipeline, args: &Arguments) -> Result<(), BoxError> {
    let mut specs = Vec::with_capacity(args.endpoint.len());
    for ep in &args.endpoint {
        specs.push(EndpointSpec {
            settings: ep.settings()?,
            http: ep.http.clone(),
            max_bytes: to_usize(ep.queue_config.max_bytes),
        });
    }
    let external = args
        .external_labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    pipeline.apply(external, specs)
}

// ---------------------------------------------------------------------------------------------
// The component
// ---------------------------------------------------------------------------------------------

/// The `pyroscope.write` component.
pub struct Write {
    pipeline: Arc<Pipeline>,
    receiver: Arc<Receiver>,
}

impl Write {
    /// The receiver this component exports.
    pub fn receiver(&self) -> Arc<Receiver> {
        self.receiver.clone()
    }

    /// Profiles and bytes queued per endpoint URL (not counting those being sent).
    pub fn queue_depth(&self) -> Vec<(String, usize, usize)> {
        self.pipeline.queue_depth()
    }
}

fn exports(receiver: &Arc<Receiver>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("receiver".to_string(), receiver.export());
    Value::Object(m)
}

impl Component for Write {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(&Receiver::unavailable())
    }

    /// Every endpoint's URL and headers: what `settings` would refuse when building.
    fn validate(args: &Arguments) -> Vec<Invalid> {
        let mut out = Vec::new();
        for (i, ep) in args.endpoint.iter().enumerate() {
            if let Err(msg) = push_url(&ep.url, wire::PUSH_PATH) {
                out.push(Invalid::new(msg).block("endpoint", i).attr("url"));
            }
            for (name, msg) in header_problems(&ep.headers) {
                out.push(
                    Invalid::new(msg)
                        .block("endpoint", i)
                        .attr("headers")
                        .key(name),
                );
            }
        }
        out
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let metrics = WriteMetrics::get(&opts.metrics);
        let budget = opts.services.get::<Budget>().unwrap_or_default();
        let pipeline = Arc::new(Pipeline::new(opts.id.clone(), metrics, budget));
        configure(&pipeline, &args)?;
        let receiver = Arc::new(Receiver(pipeline.clone()));
        opts.exports.publish(exports(&receiver));
        Ok(Write { pipeline, receiver })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        configure(&self.pipeline, &args)
    }

    /// Per endpoint: URL and what is queued.
    fn debug_info(&self) -> Option<serde_json::Value> {
        Some(self.pipeline.debug_info())
    }

    /// Unhealthy while an endpoint is failing or dropping profiles (see `crate::push`).
    fn health(&self) -> Option<Health> {
        self.pipeline.health()
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        self.pipeline.run(shutdown).await;
        Ok(())
    }
}
