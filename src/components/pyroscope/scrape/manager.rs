//! The running loops of one component, keyed by target identity.
//!
//! [`Manager::sync`] applies a new [`Plan`]: loops whose identity (public labels + URL) is still
//! planned keep running with their delta state and phase (their private labels are refreshed);
//! new identities get new loops; the rest are stopped and their metric series removed. Loops are
//! only started once the component runs.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::error::{Reason, ScrapeError};
use super::metrics::ComponentMetrics;
use super::scrape_loop::{self, Env, LoopShared, LoopTarget, TargetHealth};
use super::target::{
    Collision, INSTANCE, InvalidTarget, LabelLimits, NAME, Plan, SERVICE_NAME, TargetError,
    check_label_limits,
};
use crate::gocompat::time::format_go_duration;
use crate::gocompat::time::rfc3339_nanos;

struct LoopHandle {
    shared: Arc<LoopShared>,
    running: Option<(CancellationToken, JoinHandle<()>)>,
}

impl LoopHandle {
    fn stop(&mut self) -> Option<JoinHandle<()>> {
        self.running.take().map(|(cancel, task)| {
            cancel.cancel();
            task
        })
    }
}

pub struct Manager {
    metrics: ComponentMetrics,
    env: watch::Sender<Arc<Env>>,
    loops: HashMap<u64, LoopHandle>,
    invalid: Vec<InvalidTarget>,
    collisions: Vec<Collision>,
    duplicates: usize,
    job_name: String,
    runtime: Option<(tokio::runtime::Handle, CancellationToken)>,
    /// The component's span (from `run`), so that loops log with its `component_id`.
    span: tracing::Span,
}

impl Manager {
    pub fn new(env: Arc<Env>) -> Self {
        let metrics = env.metrics.clone();
        Manager {
            metrics,
            env: watch::Sender::new(env),
            loops: HashMap::new(),
            invalid: Vec::new(),
            collisions: Vec::new(),
            duplicates: 0,
            job_name: String::new(),
            runtime: None,
            span: tracing::Span::none(),
        }
    }

    /// The settings every loop uses; loops see a change from their next scrape on.
    pub fn set_env(&self, env: Arc<Env>) {
        self.env.send_replace(env);
    }

    pub fn env(&self) -> Arc<Env> {
        self.env.borrow().clone()
    }

    /// Applies a plan.
    pub fn sync(&mut self, plan: Plan, limits: LabelLimits, job_name: &str) {
        self.job_name = job_name.to_string();
        let mut invalid = plan.invalid;
        let mut next: HashMap<u64, LoopHandle> = HashMap::with_capacity(plan.targets.len());
        for t in plan.targets {
            let url = match reqwest::Url::parse(&t.url) {
                Ok(u) => u,
                Err(e) => {
                    invalid.push(InvalidTarget {
                        labels: t.labels.clone(),
                        error: TargetError::InvalidUrl {
                            url: t.url.clone(),
                            reason: e.to_string(),
                        },
                    });
                    continue;
                }
            };
            let blocked = check_label_limits(&t.forward_labels(), &limits)
                .err()
                .map(|m| ScrapeError::new(Reason::LabelLimit, m));
            // Prepared once here; each scrape of the loop clones this set into its profile
            // (reference counts, no string copies).
            let labels = t.forward_label_set();
            let get = |k: &str| t.labels.get(k).unwrap_or("");
            let metrics_key = self
                .metrics
                .target_key(get(INSTANCE), get(SERVICE_NAME), get(NAME));
            let hash = t.hash;
            let target = Arc::new(LoopTarget {
                scrape: t,
                url,
                labels,
                metrics_key,
                blocked,
            });
            let mut handle = match self.loops.remove(&hash) {
                Some(h) => {
                    let old = h.shared.target();
                    if old.metrics_key != target.metrics_key {
                        self.metrics.remove_target(&old.metrics_key);
                    }
                    h.shared.set_target(target.clone());
                    if old.blocked.is_some() && target.blocked.is_none() {
                        h.shared.unblock();
                    }
                    h
                }
                None => LoopHandle {
                    shared: Arc::new(LoopShared::new(target.clone())),
                    running: None,
                },
            };
            match &target.blocked {
                Some(e) => {
                    if handle.stop().is_some()
                        || handle.shared.status().last_error.as_ref() != Some(e)
                    {
                        tracing::warn!(url = %target.scrape.url, err = %e, "target not scraped");
                        self.metrics.error(Reason::LabelLimit);
                    }
                    handle.shared.block(e.clone());
                    self.metrics
                        .target_scraped(&target.metrics_key, false, None);
                }
                None => self.start(&mut handle),
            }
            next.insert(hash, handle);
        }
        for (_, mut h) in self.loops.drain() {
            h.stop();
            let key = h.shared.target().metrics_key.clone();
            if !next.values().any(|n| n.shared.target().metrics_key == key) {
                self.metrics.remove_target(&key);
            }
        }
        self.loops = next;
        self.metrics.targets.set(self.loops.len() as i64);
        let board = self.env.borrow().board.clone();
        board.set_loops(self.loops.values().map(|h| h.shared.clone()).collect());
        for e in &invalid {
            tracing::warn!(err = %e.error, labels = ?e.labels, "target cannot be scraped");
        }
        for c in &plan.collisions {
            tracing::warn!(url = %c.url, kept = %c.kept, dropped = ?c.dropped, "several profile types of a target have the same URL and labels; only one is scraped");
        }
        self.invalid = invalid;
        self.collisions = plan.collisions;
        self.duplicates = plan.duplicates;
    }

    fn start(&self, handle: &mut LoopHandle) {
        if handle.running.is_some() {
            return;
        }
        let Some((runtime, parent)) = &self.runtime else {
            return;
        };
        let cancel = parent.child_token();
        let task = crate::runtime::task::spawn_on(
            runtime,
            "pyroscope.scrape.loop",
            scrape_loop::run(handle.shared.clone(), self.env.subscribe(), cancel.clone())
                .instrument(self.span.clone()),
        );
        handle.running = Some((cancel, task));
    }

    /// Starts every loop (the component's `run` began).
    pub fn start_all(&mut self, runtime: tokio::runtime::Handle, shutdown: CancellationToken) {
        self.runtime = Some((runtime, shutdown));
        self.span = tracing::Span::current();
        let mut loops = std::mem::take(&mut self.loops);
        for h in loops.values_mut() {
            if h.shared.target().blocked.is_none() {
                self.start(h);
            }
        }
        self.loops = loops;
    }

    /// Stops every loop; returns their tasks to await.
    pub fn stop_all(&mut self) -> Vec<JoinHandle<()>> {
        self.runtime = None;
        self.loops
            .values_mut()
            .filter_map(LoopHandle::stop)
            .collect()
    }

    /// Removes every target series (the component exits).
    pub fn remove_metrics(&self) {
        for h in self.loops.values() {
            self.metrics.remove_target(&h.shared.target().metrics_key);
        }
        self.metrics.remove();
    }

    pub fn loops(&self) -> usize {
        self.loops.len()
    }

    /// Alloy's debug info (a `target` per loop with job, url, health, labels, last_error,
    /// last_scrape, last_scrape_duration), plus what we add: the reason and outcome of the last
    /// scrape, counters, delta state size, and targets that could not be scraped at all.
    pub fn debug_info(&self) -> serde_json::Value {
        let interval = self.env.borrow().interval;
        let now = std::time::SystemTime::now();
        let since_epoch = now
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mut targets: Vec<(String, serde_json::Value)> = self
            .loops
            .values()
            .map(|h| {
                let t = h.shared.target();
                let s = h.shared.status();
                let v = serde_json::json!({
                    "job": self.job_name,
                    "url": t.scrape.url,
                    "profile_type": t.scrape.profile_name,
                    "health": s.health.as_str(),
                    "labels": t.scrape.labels,
                    "last_error": s.last_error.as_ref().map(|e| e.message.clone()).unwrap_or_default(),
                    "last_error_reason": s.last_error.as_ref().map(|e| e.reason.as_str()).unwrap_or_default(),
                    "last_scrape": s.last_scrape.map(rfc3339_nanos).unwrap_or_default(),
                    "last_scrape_duration": s.last_duration.map(format_go_duration).unwrap_or_default(),
                    "last_outcome": s.last_outcome,
                    // The loop's schedule is a pure function of its hash and the interval.
                    "next_scrape": if s.blocked {
                        String::new()
                    } else {
                        rfc3339_nanos(now + super::scrape_loop::first_delay(h.shared.hash, interval, since_epoch))
                    },
                    "delta_mode": s.delta_mode,
                    "scrapes_total": s.scrapes,
                    "failures_total": s.failures,
                    "forwarded_total": s.forwarded,
                    "delta_state_bytes": s.state_bytes,
                    "shed_total": s.shed,
                    "shed_after_request_total": s.shed_after_request,
                    "missed_total": s.missed,
                });
                (format!("{}\u{0}{:?}", t.scrape.url, t.scrape.labels), v)
            })
            .collect();
        targets.sort_by(|a, b| a.0.cmp(&b.0));
        let up = self
            .loops
            .values()
            .filter(|h| h.shared.status().health == TargetHealth::Up)
            .count();
        serde_json::json!({
            "targets": targets.into_iter().map(|(_, v)| v).collect::<Vec<_>>(),
            "targets_up": up,
            "invalid_targets": self.invalid.iter().map(|i| serde_json::json!({
                "labels": i.labels,
                "error": i.error.to_string(),
            })).collect::<Vec<_>>(),
            "collisions": self.collisions.iter().map(|c| serde_json::json!({
                "url": c.url,
                "kept": c.kept,
                "dropped": c.dropped,
            })).collect::<Vec<_>>(),
            "duplicate_targets": self.duplicates,
        })
    }
}
