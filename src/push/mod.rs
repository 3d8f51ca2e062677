//! Sending profiles to a backend without ever stalling the producers: the engine behind
//! `pyroscope.write` (Connect push), `otelcol.exporter.otlphttp_profiles` (OTLP/HTTP) and
//! `otelcol.exporter.otlp` (OTLP/gRPC).
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
//! `pyroscope_write_*` series, `otlp` the OTLP/HTTP response rules, `status` what an endpoint
//! is going through (outages, rate-limited drop lines, health, probing). docs/PUSH.md is the
//! operator's view of all of it.

mod config;
mod endpoint;
mod events;
pub mod limits;
mod metrics;
mod otlp;
mod queue;
mod status;

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Instant, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

pub use self::config::{
    LimitsConfig, QueueConfig, RetryArguments, gzip_compression, header_problems, push_url,
};
use self::endpoint::{Endpoint, Senders};
pub use self::endpoint::{Protocol, Settings, backoff_delay};
use self::events::{Drop, DropsSummarized, InvalidLabels};
use self::metrics::EndpointMetrics;
pub use self::metrics::{Reason, WriteMetrics};
use self::queue::{Entry, Queue};
use self::status::{DropKey, DropNote, Drops, Status};
use crate::budget::Budget;
use crate::httpclient::{HttpClient, USER_AGENT};
use crate::profiles::{Appendable, Label, Profile};
use crate::protocols::pyroscope::{labels, wire};
use crate::runtime::event::emit;
use crate::runtime::{Health, HealthState};
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
    /// The drop log of profiles with invalid labels (dropped before any endpoint).
    invalid: Mutex<Drops>,
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
            invalid: Mutex::new(Drops::default()),
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
                    (o.queue.clone(), o.status.clone())
                });
            endpoints.push((settings, client, metrics, reuse, max_bytes));
        }
        // Everything built: switch.
        let mut built = Vec::with_capacity(endpoints.len());
        for (settings, client, metrics, reuse, max_bytes) in endpoints {
            let (queue, status, evicted) = match reuse {
                Some((q, status)) => {
                    let evicted = q.set_max_bytes(max_bytes);
                    (q, status, evicted)
                }
                None => (
                    Arc::new(Queue::new(max_bytes, metrics.depth_gauges(), &self.budget)),
                    Arc::new(Status::default()),
                    Vec::new(),
                ),
            };
            let ep = Arc::new(Endpoint::new(
                settings,
                client,
                queue,
                status,
                metrics,
                self.budget.clone(),
            ));
            ep.discard_all(&evicted, Drop::Quietly(Reason::QueueFull));
            built.push(ep);
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
                // Whatever it was going through is over for us. Not when an endpoint with the
                // same URL stays: they share the series, and the one that stays may be failing.
                ep.metrics.failing(false);
                lock(&self.retired_metrics).push(ep.metrics.clone());
            }
        }
        let drop_queues = move |removed: Vec<Arc<Endpoint>>| {
            for ep in removed {
                ep.discard_all(&ep.queue.drain(), Drop::Quietly(Reason::Reload));
                // The endpoint is gone from the periodic report: its last lines are due now.
                for report in ep.status.due_drop_reports(true) {
                    emit(DropsSummarized {
                        component: None,
                        endpoint: Some(&ep.settings.url),
                        report,
                    });
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
        // Drops are summed into lines per interval; this writes the lines of drops that no
        // later drop came to report.
        let mut tick = tokio::time::interval(status::REPORT_INTERVAL / 12);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => self.report_drops(false),
            }
        }
        self.shutdown().await;
        // Nothing is left unsaid at exit.
        self.report_drops(true);
        self.remove_metrics();
    }

    /// Writes the drop lines due now (`all`: every pending one).
    fn report_drops(&self, all: bool) {
        for ep in &self.active().endpoints {
            for report in ep.status.due_drop_reports(all) {
                emit(DropsSummarized {
                    component: None,
                    endpoint: Some(&ep.settings.url),
                    report,
                });
            }
        }
        let invalid = lock(&self.invalid).due(Instant::now(), all);
        for report in invalid {
            emit(DropsSummarized {
                component: Some(&self.id),
                endpoint: None,
                report,
            });
        }
    }

    /// Unhealthy while an endpoint is failing or has dropped profiles in the last
    /// `status::REPORT_INTERVAL` (reload and shutdown drops aside), each reason in the message;
    /// `None` otherwise, leaving the component's health to the controller.
    pub fn health(&self) -> Option<Health> {
        let mut problems: Vec<(SystemTime, String)> = self
            .active()
            .endpoints
            .iter()
            .filter_map(|ep| ep.status.health(&ep.settings.url, ep.queue.depth().0))
            .collect();
        problems.extend(lock(&self.invalid).health(Instant::now(), &self.id));
        let updated = problems.iter().map(|(t, _)| *t).max()?;
        let message = problems
            .into_iter()
            .map(|(_, m)| m)
            .collect::<Vec<_>>()
            .join("; ");
        Some(Health {
            state: HealthState::Unhealthy,
            message,
            updated,
        })
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
                    // Queued only: what was in flight is in the drop line that follows.
                    tracing::warn!(endpoint = %ep.settings.url, queued = n, queued_bytes = bytes, "flush deadline passed; dropping what is queued or in flight");
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
            ep.discard_all(&ep.queue.drain(), Drop::Quietly(Reason::Shutdown));
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
                    let note = DropNote {
                        key: DropKey::reason(Reason::InvalidLabels),
                        message: "invalid labels; dropped profiles",
                        detail: Some(format!(
                            "{e}; labels {:?}",
                            labels::profile_labels_for_log(&p)
                        )),
                        profiles: 1,
                        bytes: p.raw.len() as u64,
                    };
                    let report = lock(&self.invalid).note(Instant::now(), note);
                    emit(InvalidLabels {
                        component: &self.id,
                        bytes: p.raw.len(),
                        endpoints: &endpoints,
                        report,
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
