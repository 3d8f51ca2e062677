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
//! Labels: see `labels`. Retries and drops: see `endpoint`. Every drop is counted in
//! `pyroscope_write_dropped_{profiles,bytes}_total{endpoint,reason}` (see `metrics`).
//! Updates keep the exported receiver (dependants are not re-evaluated) and keep each
//! endpoint's queue when its URL is unchanged. Shutdown sends what is queued until
//! `flush_deadline`, then drops the rest (reason `shutdown`).

mod endpoint;
pub mod limits;
mod metrics;
mod queue;

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use self::endpoint::{Endpoint, Senders};
pub(crate) use self::endpoint::{Protocol, Settings};
pub use self::metrics::Reason;
use self::metrics::{EndpointMetrics, WriteMetrics};
use self::queue::{Entry, Queue};
use crate::httpclient::{HttpClient, WithHttpClient};
use crate::profiles::{Appendable, Label, Profile, Receiver};
use crate::protocols::pyroscope::{labels, wire};
use crate::runtime::{BoxError, Component, ComponentOptions};
use crate::sync::lock;
use crate::syntax::types::Duration;
use crate::syntax::value::Value;

/// Sent on every push.
pub const USER_AGENT: &str = concat!("scraper/", env!("CARGO_PKG_VERSION"));

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

/// `queue_config { ... }` (ours).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawQueueConfig")]
pub struct QueueConfig {
    pub max_bytes: u64,
    pub senders: u64,
    pub max_age: Duration,
    pub flush_deadline: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            max_bytes: 64 << 20,
            senders: 4,
            max_age: Duration::from_secs(3600),
            flush_deadline: Duration::from_secs(5),
        }
    }
}

#[derive(Deserialize)]
#[serde(default)]
struct RawQueueConfig {
    max_bytes: u64,
    senders: u64,
    max_age: Duration,
    flush_deadline: Duration,
}

impl Default for RawQueueConfig {
    fn default() -> Self {
        let d = QueueConfig::default();
        RawQueueConfig {
            max_bytes: d.max_bytes,
            senders: d.senders,
            max_age: d.max_age,
            flush_deadline: d.flush_deadline,
        }
    }
}

impl TryFrom<RawQueueConfig> for QueueConfig {
    type Error = String;
    fn try_from(r: RawQueueConfig) -> Result<Self, String> {
        if !(1..=256).contains(&r.senders) {
            return Err(format!(
                "queue_config senders must be between 1 and 256, got {}",
                r.senders
            ));
        }
        Ok(QueueConfig {
            max_bytes: r.max_bytes,
            senders: r.senders,
            max_age: r.max_age,
            flush_deadline: r.flush_deadline,
        })
    }
}

/// `limits { ... }` (ours): the backend's per-profile limits to fit profiles into.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default)]
pub struct LimitsConfig {
    pub max_profile_size_bytes: u64,
    pub max_profile_samples: u64,
    pub max_burst_bytes: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let d = limits::Limits::default();
        LimitsConfig {
            max_profile_size_bytes: d.max_profile_bytes as u64,
            max_profile_samples: d.max_samples as u64,
            max_burst_bytes: d.max_burst_bytes as u64,
        }
    }
}

/// An endpoint's `headers` attribute, every value marked sensitive (kept out of debug output).
pub(crate) fn sensitive_headers(headers: &BTreeMap<String, String>) -> Result<HeaderMap, String> {
    let mut out = HeaderMap::new();
    for (name, value) in headers {
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("invalid header name {name:?}: {e}"))?;
        let mut v = HeaderValue::from_str(value)
            .map_err(|e| format!("invalid value for header {name:?}: {e}"))?;
        v.set_sensitive(true);
        out.insert(n, v);
    }
    Ok(out)
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

impl EndpointOptions {
    fn settings(&self) -> Result<Settings, BoxError> {
        let push_url = format!("{}{}", self.url.trim_end_matches('/'), wire::PUSH_PATH);
        let push_url = reqwest::Url::parse(&push_url)
            .map_err(|e| format!("endpoint url {:?} is invalid: {e}", self.url))?;
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

// ---------------------------------------------------------------------------------------------
// Pipeline: the receiver's implementation
// ---------------------------------------------------------------------------------------------

/// One endpoint as `Pipeline::apply` takes it: resolved settings, the HTTP client's
/// arguments and the queue's size in bytes.
pub(crate) struct EndpointSpec {
    pub settings: Settings,
    pub http: crate::httpclient::HttpClientConfig,
    pub max_bytes: usize,
}

/// The current configuration, swapped whole on update.
struct Active {
    external: Vec<Label>,
    endpoints: Vec<Arc<Endpoint>>,
}

#[derive(Default)]
struct Running {
    runtime: Option<tokio::runtime::Handle>,
    senders: Vec<(Arc<Endpoint>, Senders)>,
}

/// What the exported receiver appends to.
struct Pipeline {
    id: String,
    metrics: Arc<WriteMetrics>,
    active: RwLock<Arc<Active>>,
    running: Mutex<Running>,
    /// Metrics of endpoints removed by updates, removed with the others at exit.
    retired_metrics: Mutex<Vec<EndpointMetrics>>,
    /// Shutdown has begun: appends are dropped (and counted).
    closing: AtomicBool,
    /// The component exited and removed its metrics: appends are dropped silently.
    gone: AtomicBool,
}

fn series_hash(labels: &[Label]) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    labels.hash(&mut h);
    h.finish()
}

impl Pipeline {
    fn new(id: String, metrics: Arc<WriteMetrics>) -> Self {
        Pipeline {
            id,
            metrics,
            active: RwLock::new(Arc::new(Active {
                external: Vec::new(),
                endpoints: Vec::new(),
            })),
            running: Mutex::new(Running::default()),
            retired_metrics: Mutex::new(Vec::new()),
            closing: AtomicBool::new(false),
            gone: AtomicBool::new(false),
        }
    }

    fn active(&self) -> Arc<Active> {
        crate::sync::read(&self.active).clone()
    }

    /// Applies `args`. Nothing changes if any endpoint cannot be built.
    fn configure(&self, args: &Arguments) -> Result<(), BoxError> {
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
        self.apply(external, specs)
    }

    /// Switches to `specs`. Nothing changes if any endpoint cannot be built.
    pub(crate) fn apply(
        &self,
        external: Vec<Label>,
        specs: Vec<EndpointSpec>,
    ) -> Result<(), BoxError> {
        let old = self.active();
        let mut claimed = vec![false; old.endpoints.len()];
        let mut endpoints = Vec::with_capacity(specs.len());
        for EndpointSpec {
            settings,
            http,
            max_bytes,
        } in specs
        {
            let client = HttpClient::new(&http, USER_AGENT)
                .map_err(|e| format!("endpoint {}: {e}", settings.url))?;
            let metrics = self.metrics.endpoint(&self.id, &settings.url);
            let reuse = old
                .endpoints
                .iter()
                .enumerate()
                .find(|(i, o)| !claimed[*i] && o.settings.url == settings.url)
                .map(|(i, o)| {
                    claimed[i] = true;
                    o.queue.clone()
                });
            endpoints.push((settings, client, metrics, reuse, max_bytes));
        }
        // Everything built: switch.
        let mut built = Vec::with_capacity(endpoints.len());
        for (settings, client, metrics, reuse, max_bytes) in endpoints {
            let queue = match reuse {
                Some(q) => {
                    for e in q.set_max_bytes(max_bytes) {
                        metrics.dropped(Reason::QueueFull, e.raw.len());
                    }
                    q
                }
                None => Arc::new(Queue::new(max_bytes, metrics.depth_gauges())),
            };
            built.push(Arc::new(Endpoint::new(settings, client, queue, metrics)));
        }
        let next = Arc::new(Active {
            external,
            endpoints: built,
        });
        // Swapped under the `running` lock so that `start` sees either the old endpoints
        // before, or the new ones after.
        let mut running = lock(&self.running);
        *crate::sync::write(&self.active) = next.clone();

        let kept = |ep: &Endpoint| {
            next.endpoints
                .iter()
                .any(|n| Arc::ptr_eq(&n.queue, &ep.queue))
        };
        let removed: Vec<Arc<Endpoint>> = old
            .endpoints
            .iter()
            .filter(|ep| !kept(ep))
            .cloned()
            .collect();
        for ep in &removed {
            tracing::info!(component = %self.id, endpoint = %ep.settings.url, "endpoint removed; dropping its queue");
            if !next
                .endpoints
                .iter()
                .any(|n| n.settings.url == ep.settings.url)
            {
                lock(&self.retired_metrics).push(ep.metrics.clone());
            }
        }
        let drop_queues = move |removed: Vec<Arc<Endpoint>>| {
            for ep in removed {
                for e in ep.queue.drain() {
                    ep.metrics.dropped(Reason::Reload, e.raw.len());
                }
            }
        };
        let Some(runtime) = running.runtime.clone() else {
            // Nothing is sending yet.
            drop_queues(removed);
            return Ok(());
        };
        // New senders start now; the old ones finish the attempt they are in (no duplicate
        // pushes), put back what they hold, and stop.
        let retired = std::mem::take(&mut running.senders);
        for ep in &next.endpoints {
            running.senders.push((ep.clone(), ep.start(&runtime)));
        }
        drop(running);
        runtime.spawn(async move {
            for (_, senders) in &retired {
                senders.retire();
            }
            for (_, senders) in retired {
                senders.join().await;
            }
            drop_queues(removed);
        });
        Ok(())
    }

    /// Starts sending (from `run`).
    fn start(&self, runtime: tokio::runtime::Handle) {
        let mut running = lock(&self.running);
        let active = self.active();
        running.runtime = Some(runtime.clone());
        for ep in &active.endpoints {
            running.senders.push((ep.clone(), ep.start(&runtime)));
        }
    }

    /// Stops: drains the queues until each endpoint's flush deadline, then drops the rest.
    async fn shutdown(&self) {
        self.closing.store(true, Ordering::SeqCst);
        let senders = {
            let mut running = lock(&self.running);
            running.runtime = None;
            std::mem::take(&mut running.senders)
        };
        let active = self.active();
        let flushes = active.endpoints.iter().map(|ep| {
            let deadline = ep.settings.flush_deadline;
            async move {
                if tokio::time::timeout(deadline, ep.queue.idle()).await.is_err() {
                    let (n, bytes) = ep.queue.depth();
                    tracing::warn!(endpoint = %ep.settings.url, profiles = n, bytes, "flush deadline passed; dropping what is left");
                }
            }
        });
        futures::future::join_all(flushes).await;
        for (_, s) in &senders {
            s.abort();
        }
        for (_, s) in senders {
            s.join().await;
        }
        for ep in &active.endpoints {
            for e in ep.queue.drain() {
                ep.metrics.dropped(Reason::Shutdown, e.raw.len());
            }
        }
    }

    /// Removes this component's metric series; later appends are ignored.
    fn remove_metrics(&self) {
        self.gone.store(true, Ordering::SeqCst);
        for ep in &self.active().endpoints {
            ep.metrics.remove();
        }
        for m in lock(&self.retired_metrics).drain(..) {
            m.remove();
        }
    }
}

impl Appendable for Pipeline {
    fn append(&self, profiles: Vec<Profile>) {
        let active = self.active();
        if active.endpoints.is_empty() {
            return;
        }
        if self.gone.load(Ordering::Relaxed) {
            return;
        }
        let closing = self.closing.load(Ordering::Relaxed);
        let now = Instant::now();
        for p in profiles {
            if closing {
                for ep in &active.endpoints {
                    ep.metrics.dropped(Reason::Shutdown, p.raw.len());
                }
                continue;
            }
            let labels = match labels::prepare(&p.labels, &active.external) {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(component = %self.id, err = %e, labels = ?p.labels, "invalid labels in profile; dropping it");
                    for ep in &active.endpoints {
                        ep.metrics.dropped(Reason::InvalidLabels, p.raw.len());
                    }
                    continue;
                }
            };
            let entry = Entry {
                series: series_hash(&labels),
                labels: wire::encode_labels(&labels),
                series_labels: Arc::from(labels),
                raw: p.raw,
                received_at: p.received_at,
                enqueued: now,
            };
            let (last, rest) = active
                .endpoints
                .split_last()
                .expect("checked non-empty above");
            for ep in rest {
                ep.enqueue(entry.clone());
            }
            last.enqueue(entry);
        }
    }
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

    /// The same sending machinery for endpoints another component resolved (the OTLP
    /// exporter): its receiver is published as `opts`' `receiver` export.
    pub(crate) fn build_with(
        opts: ComponentOptions,
        external: Vec<Label>,
        specs: Vec<EndpointSpec>,
    ) -> Result<Self, BoxError> {
        let metrics = WriteMetrics::get(&opts.metrics);
        let pipeline = Arc::new(Pipeline::new(opts.id.clone(), metrics));
        pipeline.apply(external, specs)?;
        let receiver = Arc::new(Receiver(pipeline.clone()));
        opts.exports.publish(exports(&receiver));
        Ok(Write { pipeline, receiver })
    }

    /// Switches to new endpoints (see [`Write::build_with`]).
    pub(crate) fn apply(
        &self,
        external: Vec<Label>,
        specs: Vec<EndpointSpec>,
    ) -> Result<(), BoxError> {
        self.pipeline.apply(external, specs)
    }

    /// Profiles and bytes queued per endpoint URL (not counting those being sent).
    pub fn queue_depth(&self) -> Vec<(String, usize, usize)> {
        self.pipeline
            .active()
            .endpoints
            .iter()
            .map(|ep| {
                let (n, bytes) = ep.queue.depth();
                (ep.settings.url.clone(), n, bytes)
            })
            .collect()
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

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let metrics = WriteMetrics::get(&opts.metrics);
        let pipeline = Arc::new(Pipeline::new(opts.id.clone(), metrics));
        pipeline.configure(&args)?;
        let receiver = Arc::new(Receiver(pipeline.clone()));
        opts.exports.publish(exports(&receiver));
        Ok(Write { pipeline, receiver })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        self.pipeline.configure(&args)
    }

    /// Per endpoint: URL and what is queued.
    fn debug_info(&self) -> Option<serde_json::Value> {
        let endpoints: Vec<serde_json::Value> = self
            .queue_depth()
            .into_iter()
            .map(|(url, profiles, bytes)| {
                serde_json::json!({ "url": url, "queued_profiles": profiles, "queued_bytes": bytes })
            })
            .collect();
        Some(serde_json::json!({ "endpoints": endpoints }))
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        self.pipeline.start(tokio::runtime::Handle::current());
        shutdown.cancelled().await;
        self.pipeline.shutdown().await;
        self.pipeline.remove_metrics();
        Ok(())
    }
}
