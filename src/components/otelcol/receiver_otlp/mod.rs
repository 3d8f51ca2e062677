//! `otelcol.receiver.otlp`: receives OTLP profiles (the `v1development` signal: the OpenTelemetry
//! eBPF profiler, a Collector's `otlp` exporter) over OTLP/gRPC and OTLP/HTTP, converts each to
//! pprof as Pyroscope's OTLP ingestion does (`protocols::otlp::ingest`: series labels,
//! `__name__`, `service_name`) and forwards it to `output.profiles`: `pyroscope.write`,
//! `pyroscope.store`, `pyroscope.relabel`, `otelcol.exporter.otlp*` or any profiles receiver.
//!
//! ```alloy
//! otelcol.receiver.otlp "default" {
//!   grpc {}                           // 0.0.0.0:4317, ProfilesService/Export
//!   http {}                           // 0.0.0.0:4318, POST /v1development/profiles
//!   output {
//!     profiles = [pyroscope.write.backend.receiver, pyroscope.store.local.receiver]
//!   }
//! }
//! ```
//!
//! Alloy's component has the same blocks but no profiles output (grafana/alloy#6469): in
//! Alloy, `output` lists otelcol consumers; here `profiles` lists the `pyroscope.Appendable`
//! receivers every profiles component exports. `metrics`, `logs` and `traces` are accepted
//! and ignored with a warning. Arguments: see [`args`].
//!
//! Behaviour: answers never wait for a backend (receivers only queue). A request that cannot
//! be read or converted is refused whole (gRPC INVALID_ARGUMENT / HTTP 400, not retried); one
//! over the size limit, or whose samples would expand past 1 GiB of pprof, gets
//! RESOURCE_EXHAUSTED without `RetryInfo` / 413 (not retried: it would fail again); one the
//! memory budget (or the 64 requests-in-flight limit) has no room for gets RESOURCE_EXHAUSTED
//! with a `RetryInfo` of 1 s in `grpc-status-details-bin` / 429 with `Retry-After: 1`, which
//! OTLP exporters retry. Non-gRPC requests on the gRPC port get plain HTTP 415 (content type)
//! or 505 (HTTP/1). Every refusal is counted in `otelcol_receiver_otlp_requests_total` and
//! makes the component unhealthy until a request succeeds, and is a warning (at most one per
//! 10 s, the rest debug lines); profiles received while `output.profiles` is empty are dropped
//! the same way. Attributes without a label form are left out as in Pyroscope, counted in
//! `otelcol_receiver_otlp_attributes_dropped_total` and warned about once per place and kind
//! (debug lines after). A port that cannot be bound fails the build (or the update, keeping the old servers).
//! Metrics: see `metrics.rs`.

pub mod args;
mod events;
mod metrics;
mod serve;
mod server;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use self::args::{Arguments, ServerConfig};
use self::metrics::ReceiverMetrics;
use self::server::{Instance, Shared};
use crate::budget::Budget;
use crate::profiles::FanOut;
use crate::runtime::{BoxError, Component, ComponentOptions, Health, HealthState};
use crate::sync::lock;
use crate::syntax::decode::Invalid;
use crate::syntax::value::Value;

/// How long requests in flight may finish when a server stops.
const GRACE: Duration = Duration::from_secs(5);

/// A bound listener and the settings it serves with.
#[derive(Clone)]
struct Bound {
    config: ServerConfig,
    listener: Arc<std::net::TcpListener>,
    local: Option<SocketAddr>,
}

fn bind(what: &str, config: &ServerConfig) -> Result<Bound, BoxError> {
    let listener = server::bind(&config.bind_address())
        .map_err(|e| format!("failed to start the {what} server: {e}"))?;
    let local = listener.local_addr().ok();
    tracing::info!(
        protocol = what,
        addr = %local.map_or_else(|| config.endpoint.clone(), |a| a.to_string()),
        "now listening for OTLP profiles"
    );
    Ok(Bound {
        config: config.clone(),
        listener: Arc::new(listener),
        local,
    })
}

/// Keeps a listener whose address is unchanged (a port of 0 got a free port: the same).
fn rebind(
    what: &str,
    old: Option<&Bound>,
    new: Option<&ServerConfig>,
) -> Result<Option<Bound>, BoxError> {
    match (old, new) {
        (_, None) => Ok(None),
        (Some(b), Some(c)) if b.config.endpoint == c.endpoint => Ok(Some(Bound {
            config: c.clone(),
            ..b.clone()
        })),
        (_, Some(c)) => bind(what, c).map(Some),
    }
}

struct Servers {
    grpc: Option<Bound>,
    http: Option<Bound>,
    /// Bumped whenever `run` must restart the servers.
    generation: u64,
}

/// The running component.
pub struct ReceiverOtlp {
    shared: Arc<Shared>,
    servers: Mutex<Servers>,
    changed: Notify,
}

impl ReceiverOtlp {
    /// The gRPC server's address (useful with port 0).
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        lock(&self.servers).grpc.as_ref().and_then(|b| b.local)
    }

    /// The HTTP server's address (useful with port 0).
    pub fn http_addr(&self) -> Option<SocketAddr> {
        lock(&self.servers).http.as_ref().and_then(|b| b.local)
    }
}

fn warn_ignored(args: &Arguments) {
    if !args.ignored.is_empty() {
        tracing::warn!(
            settings = %args.ignored.join(", "),
            "accepted for compatibility and not applied: only the profiles signal is received, without these settings"
        );
    }
}

impl Component for ReceiverOtlp {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        Value::Object(BTreeMap::new())
    }

    /// Every unusable setting, at its block and attribute.
    fn validate(args: &Arguments) -> Vec<Invalid> {
        args.problems
            .iter()
            .map(|p| {
                let mut i = Invalid::new(p.to_string());
                let (block, attr) = p.place();
                if let Some(b) = block {
                    i = i.block(b, 0);
                }
                match attr {
                    // `tls` is a block inside `grpc`/`http`.
                    Some("tls") => i = i.block("tls", 0),
                    Some(a) => i = i.attr(a),
                    None => {}
                }
                i
            })
            .collect()
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        if let Some(p) = args.problems.first() {
            return Err(p.to_string().into());
        }
        warn_ignored(&args);
        let grpc = args.grpc.as_ref().map(|c| bind("gRPC", c)).transpose()?;
        let http = args.http.as_ref().map(|c| bind("HTTP", c)).transpose()?;
        let metrics = ReceiverMetrics::get(&opts.metrics).instance(&opts.id);
        let budget = opts.services.get::<Budget>().unwrap_or_default();
        let shared = Arc::new(Shared::new(
            opts.id,
            FanOut::new(args.profiles),
            budget,
            metrics,
        ));
        Ok(ReceiverOtlp {
            shared,
            servers: Mutex::new(Servers {
                grpc,
                http,
                generation: 0,
            }),
            changed: Notify::new(),
        })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        if let Some(p) = args.problems.first() {
            return Err(p.to_string().into());
        }
        warn_ignored(&args);
        let mut s = lock(&self.servers);
        let same = s.grpc.as_ref().map(|b| &b.config) == args.grpc.as_ref()
            && s.http.as_ref().map(|b| &b.config) == args.http.as_ref();
        if !same {
            // Bind the new addresses first: on failure the old servers keep running.
            let grpc = rebind("gRPC", s.grpc.as_ref(), args.grpc.as_ref())?;
            let http = rebind("HTTP", s.http.as_ref(), args.http.as_ref())?;
            s.grpc = grpc;
            s.http = http;
            s.generation += 1;
            self.changed.notify_one();
        }
        self.shared.fanout.set(args.profiles);
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        let result = self.serve(&shutdown).await;
        self.shared.metrics.remove();
        result
    }

    fn health(&self) -> Option<Health> {
        Some(match &*lock(&self.shared.problem) {
            Some((at, message)) => Health {
                state: HealthState::Unhealthy,
                message: message.clone(),
                updated: *at,
            },
            None => Health::new(HealthState::Healthy, "serving"),
        })
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        let s = lock(&self.servers);
        let addr = |b: &Option<Bound>| b.as_ref().and_then(|b| b.local).map(|a| a.to_string());
        Some(serde_json::json!({
            "grpc_address": addr(&s.grpc),
            "http_address": addr(&s.http),
            "http_path": s.http.as_ref().map(|b| b.config.path.clone()),
            "output_profiles": self.shared.fanout.len(),
            "profiles_forwarded": self.shared.profiles_forwarded.load(Ordering::Relaxed),
            "requests_rejected": self.shared.requests_rejected.load(Ordering::Relaxed),
        }))
    }
}

impl ReceiverOtlp {
    fn start(&self) -> Result<(u64, Vec<Instance>), BoxError> {
        let s = lock(&self.servers);
        let mut instances = Vec::new();
        if let Some(b) = &s.grpc {
            let app = server::grpc_router(
                self.shared.clone(),
                b.config.max_size,
                b.config.read_timeout,
            );
            instances.push(
                Instance::start(
                    "otelcol.receiver.otlp.grpc",
                    &b.listener,
                    app,
                    b.config.max_concurrent_streams,
                    self.shared.id.clone(),
                )
                .map_err(|e| format!("failed to start the gRPC server: {e}"))?,
            );
        }
        if let Some(b) = &s.http {
            let app = server::http_router(
                self.shared.clone(),
                &b.config.path,
                b.config.max_size,
                b.config.read_timeout,
            );
            instances.push(
                Instance::start(
                    "otelcol.receiver.otlp.http",
                    &b.listener,
                    app,
                    b.config.max_concurrent_streams,
                    self.shared.id.clone(),
                )
                .map_err(|e| format!("failed to start the HTTP server: {e}"))?,
            );
        }
        Ok((s.generation, instances))
    }

    /// Serves until `shutdown`, restarting the servers when their settings change.
    async fn serve(&self, shutdown: &CancellationToken) -> Result<(), BoxError> {
        loop {
            let (generation, instances) = self.start()?;
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => {
                        for i in instances {
                            i.stop(GRACE).await;
                        }
                        return Ok(());
                    }
                    _ = self.changed.notified() => {
                        if lock(&self.servers).generation != generation {
                            break;
                        }
                    }
                }
            }
            tracing::info!("server settings changed, restarting the OTLP servers");
            for i in instances {
                i.stop(GRACE).await;
            }
        }
    }
}
