//! `pyroscope.scrape`: fetches `/debug/pprof/*` from targets on schedule, computes deltas of
//! cumulative profiles and forwards them to receivers (spec §2).
//!
//! ```text
//! targets ─► target::plan (labels, URL, identity; invalid targets reported one by one)
//!               │
//!               ▼
//!          manager: one loop per identity ── kept across republishes (delta state, phase)
//!               │
//!      scrape_loop (phase = hash mod interval; serial; missed ticks skipped)
//!               │
//!   fetch (auth, deadline, body_size_limit) ─► validate (status, type, HTML/JSON, sniff)
//!               │
//!   process: memory/mutex/block ─► pprof delta engine (baseline not sent, __delta__="false")
//!            others             ─► full decode check, forwarded byte for byte
//!               │
//!          FanOut ─► forward_to receivers (append never blocks)
//! ```
//!
//! * [`args`]: the block's arguments (Alloy's, the shared HTTP client ones, and our limits).
//! * [`profiling`]: `profiling_config` with Alloy's per-block defaults.
//! * [`target`]: target → scrape targets (URL, labels, `service_name`, identity), with every
//!   quirk of Alloy's documented as copied or fixed.
//! * [`manager`] and [`scrape_loop`]: loops keyed by identity; scheduling.
//! * [`fetch`], [`validate`], [`process`]: one scrape.
//! * [`delta_mode`]: whether a loop subtracts scrapes or forwards what a target that serves
//!   deltas sends (found by a godeltaprof path, or by counters that keep going down).
//! * [`health`]: the component's health, a summary of its targets; unhealthy while every
//!   target has been down for more than two scrape intervals.
//! * [`metrics`]: per-target `pyroscope_scrape_up`/`_duration_seconds`, errors by reason.
//!
//! # Differences from Alloy
//!
//! Besides the target-building fixes listed in [`target`]: forwarding never blocks a loop
//! (Alloy pushes synchronously, so a backend outage stalls scraping); the first scrape happens
//! at the loop's phase rather than one interval later, and the phase is stable across restarts;
//! a change of interval, timeout or HTTP client settings keeps every loop's delta state (Alloy
//! restarts all loops); target changes apply at once (Alloy waits for a 5 s ticker); per-target
//! health metrics and error reasons; `body_size_limit` and label limits (declared but not
//! implemented in Alloy); truncated or corrupt profiles are never forwarded; godeltaprof
//! profiles carry `__delta__="false"`; a target that serves deltas under a cumulative type is
//! forwarded as received, not subtracted into nothing; restarts are info lines, not debug ones;
//! the component's health summarises its targets and turns unhealthy when all are down (Alloy
//! stays healthy); a scrape the memory budget sheds marks its target down.
//!
//! # Clustering
//!
//! `clustering { enabled = true }` with `scraper run --cluster.enabled` keeps only the targets
//! this instance owns among the live peers ([`clustering`], `crate::cluster`,
//! docs/CLUSTERING.md); without the flag this instance is the only peer, as in Alloy.

pub mod args;
pub mod clustering;
pub mod delta_mode;
pub mod error;
mod events;
pub mod fetch;
pub mod health;
pub mod manager;
pub mod metrics;
pub mod process;
pub mod profiling;
pub mod scrape_loop;
pub mod target;
pub mod validate;

use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

pub use self::args::{Arguments, ScrapeOptions};
use self::health::Board;
use self::manager::Manager;
use self::metrics::{ComponentMetrics, ScrapeMetrics};
use self::process::Processor;
use self::scrape_loop::Env;
use self::target::{LabelLimits, TargetSettings, plan, seconds_param};
use crate::budget::Budget;
use crate::httpclient::{HttpClient, HttpClientConfig};
use crate::pprof::DeltaOptions;
use crate::profiles::FanOut;
use crate::runtime::{BoxError, Component, ComponentOptions, Health};

struct Inner {
    http: HttpClientConfig,
    client: Arc<HttpClient>,
    options: ScrapeOptions,
    manager: Manager,
    sharding: self::clustering::Sharding,
}

/// The `pyroscope.scrape` component.
pub struct Scrape {
    fanout: Arc<FanOut>,
    processor: Arc<Processor>,
    /// From the build options; every loop's scrapes and delta state are reserved against it.
    budget: Budget,
    metrics: ComponentMetrics,
    board: Arc<Board>,
    cluster_health: Arc<self::clustering::Probe>,
    inner: Mutex<Inner>,
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

impl Scrape {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }

    fn env(&self, client: Arc<HttpClient>, o: &ScrapeOptions) -> Arc<Env> {
        Arc::new(Env {
            client,
            fanout: self.fanout.clone(),
            processor: self.processor.clone(),
            budget: self.budget.clone(),
            metrics: self.metrics.clone(),
            board: self.board.clone(),
            interval: o.scrape_interval.get(),
            scrape_timeout: o.scrape_timeout.get(),
            body_size_limit: o.body_size_limit,
        })
    }

    /// Plans the targets of `o` and applies them to the loops.
    fn sync(&self, inner: &mut Inner) {
        let o = &inner.options;
        let types = match o.profiling_config.all_types() {
            Ok(t) => t,
            // Checked when decoding; unreachable in practice.
            Err(e) => {
                tracing::error!(err = %e, "invalid profiling_config");
                return;
            }
        };
        let settings = TargetSettings {
            job_name: o.job_name.clone(),
            scheme: o.scheme.clone(),
            params: o.params.clone(),
            path_prefix: o.profiling_config.path_prefix.clone(),
            seconds: seconds_param(o.scrape_interval.get(), o.delta_profiling_duration.get()),
        };
        let limits = LabelLimits {
            count: to_usize(o.label_limit),
            name_length: to_usize(o.label_name_length_limit),
            value_length: to_usize(o.label_value_length_limit),
        };
        let enabled = o.clustering.as_ref().is_some_and(|c| c.enabled);
        let owned = inner.sharding.filter(&o.targets, enabled);
        let planned = plan(owned.as_deref().unwrap_or(&o.targets), &types, &settings);
        if let Some(moves) = inner.sharding.take_moves() {
            // The moved-in targets' loops are new: count those that start with a baseline.
            let moved = plan(&moves.moved_in, &types, &settings);
            inner.sharding.report_moves(&moves, &moved);
        }
        tracing::debug!(
            targets = o.targets.len(),
            loops = planned.targets.len(),
            "syncing targets"
        );
        let job_name = o.job_name.clone();
        inner.manager.sync(planned, limits, &job_name);
    }

    /// Number of scrape loops (targets × enabled profile types).
    pub fn loops(&self) -> usize {
        self.lock().manager.loops()
    }
}

impl Component for Scrape {
    type Arguments = Arguments;

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let client = Arc::new(HttpClient::new(&args.http, crate::httpclient::USER_AGENT)?);
        let metrics = ScrapeMetrics::get(&opts.metrics).component(&opts.id);
        let fanout = Arc::new(FanOut::new(args.forward_to.clone()));
        let budget = opts.services.get::<Budget>().unwrap_or_default();
        let processor = Arc::new(Processor::new(DeltaOptions::default(), budget.clone()));
        let board = Arc::new(Board::new(metrics.clone()));
        // The manager needs an environment before `self` exists; build it by hand once.
        let env = Arc::new(Env {
            client: client.clone(),
            fanout: fanout.clone(),
            processor: processor.clone(),
            budget: budget.clone(),
            metrics: metrics.clone(),
            board: board.clone(),
            interval: args.scrape_interval.get(),
            scrape_timeout: args.scrape_timeout.get(),
            body_size_limit: args.body_size_limit,
        });
        let sharding = self::clustering::Sharding::new(
            opts.services.get::<crate::cluster::Cluster>(),
            &opts.id,
            &opts.metrics,
        );
        let scrape = Scrape {
            fanout,
            processor,
            budget,
            metrics,
            board,
            cluster_health: sharding.probe(),
            inner: Mutex::new(Inner {
                http: args.http.clone(),
                client,
                options: args.inner.clone(),
                manager: Manager::new(env),
                sharding,
            }),
        };
        {
            let mut inner = scrape.lock();
            scrape.sync(&mut inner);
        }
        Ok(scrape)
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        let mut inner = self.lock();
        let client = if args.http != inner.http {
            Arc::new(HttpClient::new(&args.http, crate::httpclient::USER_AGENT)?)
        } else {
            inner.client.clone()
        };
        self.fanout.set(args.forward_to.clone());
        let old = &inner.options;
        let env_changed = !Arc::ptr_eq(&client, &inner.client)
            || old.scrape_interval != args.scrape_interval
            || old.scrape_timeout != args.scrape_timeout
            || old.body_size_limit != args.body_size_limit;
        if env_changed {
            let env = self.env(client.clone(), &args.inner);
            inner.manager.set_env(env);
        }
        inner.http = args.http;
        inner.client = client;
        inner.options = args.inner;
        self.sync(&mut inner);
        Ok(())
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        let inner = self.lock();
        let mut info = inner.manager.debug_info();
        // As Alloy: the targets listed are this instance's; the counts say how many of all.
        if let (Some((owned, total, peers)), Some(map)) =
            (inner.sharding.counts(), info.as_object_mut())
        {
            map.insert(
                "clustering".into(),
                serde_json::json!({"owned_targets": owned, "total_targets": total, "peers": peers}),
            );
        }
        Some(info)
    }

    /// A summary of the targets' states; unhealthy while every target has been down for more
    /// than two scrape intervals (see [`health`]).
    /// Unhealthy too while clustering applies and the cluster's peers are unknown (this
    /// instance then scrapes every target, as its peers do).
    fn health(&self) -> Option<Health> {
        Some(
            self.cluster_health
                .health()
                .unwrap_or_else(|| self.board.health()),
        )
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        let loops = shutdown.child_token();
        self.lock()
            .manager
            .start_all(tokio::runtime::Handle::current(), loops.clone());
        let mut ring = self.lock().sharding.subscribe();
        loop {
            let changed = async {
                match ring.as_mut() {
                    Some(r) => r.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => break,
                ok = changed => {
                    if !ok {
                        ring = None;
                        continue;
                    }
                    // Re-plan with the new ring: loops whose target stays here keep running.
                    // A component without the block has nothing to re-plan.
                    let mut inner = self.lock();
                    if inner.sharding.follows_ring() {
                        self.sync(&mut inner);
                    }
                }
            }
        }
        loops.cancel();
        let tasks = self.lock().manager.stop_all();
        for t in tasks {
            let _ = t.await;
        }
        let inner = self.lock();
        inner.manager.remove_metrics();
        inner.sharding.remove();
        Ok(())
    }
}
