//! Sending profiles to a backend without ever stalling the producers: the engine behind
//! `pyroscope.write` (Connect push) and `otelcol.exporter.otlphttp_profiles` (OTLP/HTTP).
//!
//! ```text
//! append(profiles) ─► labels (filter __*, external labels, sort, validate) ─► encode labels once
//!        │                                                                         │
//!        │              ┌──────── per endpoint ─────────────────────────────────────┘
//!        ▼              ▼
//!  never waits    bounded queue (bytes; oldest evicted when full; one in flight per series)
//!                       │
//!                 N senders: fit limits (trim) ─► push ─► retry/backoff or drop (counted)
//! ```
//!
//! A component resolves its arguments into [`EndpointSpec`]s and exports a [`Pipeline`] as
//! its receiver; `endpoint` owns sending and retries, `queue` the bounded per-endpoint queue,
//! `limits` fitting profiles into the backend's limits, `metrics` the
//! `pyroscope_write_*` series, `otlp` the OTLP/HTTP response rules.

mod config;
mod endpoint;
mod events;
pub mod limits;
mod metrics;
mod otlp;
mod queue;

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

pub use self::config::{LimitsConfig, QueueConfig, header_problems, push_url};
use self::endpoint::{Endpoint, Senders};
pub use self::endpoint::{Protocol, Settings};
use self::events::{Drop, InvalidLabels, ProfileDropped};
use self::metrics::EndpointMetrics;
pub use self::metrics::{Reason, WriteMetrics};
use self::queue::{Entry, Queue};
use crate::budget::Budget;
use crate::httpclient::{HttpClient, USER_AGENT};
use crate::profiles::{Appendable, Label, Profile};
use crate::protocols::pyroscope::{labels, wire};
use crate::runtime::event::emit;
use crate::sync::lock;

pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An endpoint's `headers` attribute, every value marked sensitive (kept out of debug output).
pub fn sensitive_headers(headers: &BTreeMap<String, String>) -> Result<HeaderMap, String> {
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

/// One endpoint as `Pipeline::apply` takes it: resolved settings, the HTTP client's
/// arguments and the queue's size in bytes.
pub struct EndpointSpec {
    pub settings: Settings,
    pub http: crate::httpclient::HttpClientConfig,
    pub max_bytes: usize,
}

/// The current configuration, swapped whole on update.
pub struct Active {
    external: Vec<Label>,
    pub endpoints: Vec<Arc<Endpoint>>,
}

#[derive(Default)]
struct Running {
    runtime: Option<tokio::runtime::Handle>,
    senders: Vec<(Arc<Endpoint>, Senders)>,
}

/// What a sending component's exported receiver appends to.
pub struct Pipeline {
    id: String,
    metrics: Arc<WriteMetrics>,
    /// The component's memory budget, handed to every endpoint and queue.
    budget: Budget,
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
    /// `budget` is the sending component's (from its build options): queued profiles and the
    /// decoding that fits them to a backend reserve against it.
    pub fn new(id: String, metrics: Arc<WriteMetrics>, budget: Budget) -> Self {
        Pipeline {
            id,
            metrics,
            budget,
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

    pub fn active(&self) -> Arc<Active> {
        crate::sync::read(&self.active).clone()
    }

    /// Switches to `specs`. Nothing changes if any endpoint cannot be built.
    pub fn apply(&self, external: Vec<Label>, specs: Vec<EndpointSpec>) -> Result<(), BoxError> {
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
                        emit(ProfileDropped {
                            metrics: &metrics,
                            endpoint: &settings.url,
                            bytes: e.raw.len(),
                            why: Drop::Quietly(Reason::QueueFull),
                        });
                    }
                    q
                }
                None => Arc::new(Queue::new(max_bytes, metrics.depth_gauges(), &self.budget)),
            };
            built.push(Arc::new(Endpoint::new(
                settings,
                client,
                queue,
                metrics,
                self.budget.clone(),
            )));
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
                    ep.discard(e.raw.len(), Drop::Quietly(Reason::Reload));
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
        crate::runtime::task::spawn_on(&runtime, "push.retire", async move {
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

    /// Sends until `shutdown`, then flushes (see [`Pipeline::shutdown`]) and removes the
    /// metric series: a component's whole `run`.
    pub async fn run(&self, shutdown: CancellationToken) {
        self.start(tokio::runtime::Handle::current());
        shutdown.cancelled().await;
        self.shutdown().await;
        self.remove_metrics();
    }

    /// Profiles and bytes queued per endpoint URL (not counting those being sent).
    pub fn queue_depth(&self) -> Vec<(String, usize, usize)> {
        self.active()
            .endpoints
            .iter()
            .map(|ep| {
                let (n, bytes) = ep.queue.depth();
                (ep.settings.url.clone(), n, bytes)
            })
            .collect()
    }

    /// Per endpoint: URL and what is queued, for the component's debug info.
    pub fn debug_info(&self) -> serde_json::Value {
        let endpoints: Vec<serde_json::Value> = self
            .queue_depth()
            .into_iter()
            .map(|(url, profiles, bytes)| {
                serde_json::json!({ "url": url, "queued_profiles": profiles, "queued_bytes": bytes })
            })
            .collect();
        serde_json::json!({ "endpoints": endpoints })
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
                ep.discard(e.raw.len(), Drop::Quietly(Reason::Shutdown));
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
                    ep.discard(p.raw.len(), Drop::Quietly(Reason::Shutdown));
                }
                continue;
            }
            let labels = match labels::prepare_profile(&p, &active.external) {
                Ok(l) => l,
                Err(e) => {
                    let endpoints: Vec<&EndpointMetrics> =
                        active.endpoints.iter().map(|ep| &ep.metrics).collect();
                    emit(InvalidLabels {
                        component: &self.id,
                        err: &e,
                        labels: &labels::profile_labels_for_log(&p),
                        bytes: p.raw.len(),
                        endpoints: &endpoints,
                    });
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
