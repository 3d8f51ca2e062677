//! `pyroscope.receive_http`: an HTTP server that receives profiles and forwards them to
//! `forward_to`, Alloy's component of the same name
//! (`internal/component/pyroscope/receive_http/`), so that SDKs and other agents can push to
//! the scraper as they would to Pyroscope.
//!
//! ```alloy
//! pyroscope.receive_http "sdk" {
//!   http {
//!     listen_address = "0.0.0.0"
//!     listen_port    = 4040
//!   }
//!   forward_to = [pyroscope.write.backend.receiver, pyroscope.store.local.receiver]
//! }
//! ```
//!
//! Endpoints (pyroscope-protocol.md §1-§2):
//!
//! * `POST /push.v1.PusherService/Push`: the push API, Connect unary with proto or JSON
//!   bodies, gzip or not (see [`push`]). Each sample is forwarded as it arrived, with its
//!   series' labels.
//! * `POST /ingest`: the legacy API most SDKs use (`name=app{k=v}`, `from`, `until`,
//!   `format`, `sampleRate`, `spyName`), with raw pprof, pyroscope-go's multipart form, and the
//!   `groups` (folded) and `lines` text formats; JFR, speedscope, trie and tree are refused
//!   with 415 (see [`ingest`]). Alloy forwards `/ingest` bodies untouched to its writers; here
//!   they are converted the way the Pyroscope server converts them ([`convert`], [`folded`]),
//!   so every receiver (the local store, relabelling) sees ordinary profiles with
//!   `service_name`, `__name__` and the SDK's tags as labels.
//!
//! Arguments: see [`args`] (Alloy's `http`, `grpc`, `graceful_shutdown_timeout`,
//! `debug_info_upload_timeout`, and our `body_size_limit`). No exports, as in Alloy.
//!
//! Behaviour:
//!
//! * Answers never wait for backends: receivers only queue (`crate::profiles`), so a client
//!   gets 200 once its profiles are handed over, and a slow backend cannot make SDK uploads
//!   time out (the chained `write -> receive_http -> write` timeout problem of Alloy,
//!   grafana/alloy#4289, does not arise). Backend errors are therefore not returned to the
//!   client.
//! * Limits: a request body (and its decompressed form, and each profile in it) is at most
//!   `body_size_limit` bytes (413 beyond), read within `server_read_timeout` (408); all
//!   requests together hold at most four such bodies while they are read and converted (a
//!   request waits for room, within its read timeout), and one conversion per core runs at a
//!   time (bounding decompressed memory too); at most `conn_limit` connections; idle and
//!   stalled connections are closed after `server_idle_timeout` / `server_write_timeout`.
//!   Bad input gets a 4xx with a JSON `{"code","message"}` body; nothing a client sends can
//!   panic the server.
//! * An argument update that changes the `http` block restarts the server (keeping the
//!   listening socket when the address is unchanged); other updates apply in place.
//! * Not served: the debug-info upload proxy endpoints, gRPC and gRPC-Web, TLS (see [`args`]).
//!
//! Metrics: see `metrics.rs` (Alloy's two connection gauges, plus requests and profiles).

pub mod args;
pub mod convert;
mod events;
pub mod folded;
pub mod ingest;
pub mod labelset;
mod metrics;
pub mod multipart;
pub mod push;
mod server;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use self::args::{Arguments, HttpConfig};
use self::metrics::ReceiveMetrics;
pub use self::server::{INGEST_PATH, PUSH_PATH};
use self::server::{Instance, Shared};
use crate::budget::{Budget, Refusals};
use crate::profiles::FanOut;
use crate::runtime::{BoxError, Component, ComponentOptions};
use crate::sync::lock;
use crate::syntax::value::Value;

/// The server's current settings.
struct ServerState {
    http: HttpConfig,
    grace: Duration,
    listener: Arc<std::net::TcpListener>,
    local_addr: Option<SocketAddr>,
    /// Bumped whenever `run` must restart the server.
    generation: u64,
}

/// The running `pyroscope.receive_http` component.
pub struct ReceiveHttp {
    shared: Arc<Shared>,
    server: Mutex<ServerState>,
    changed: Notify,
}

/// Binds `http`'s address. Called from `build` and `update`, which run inside the
/// controller's span for the component (so logs carry its id already).
fn bind(http: &HttpConfig) -> Result<(Arc<std::net::TcpListener>, Option<SocketAddr>), BoxError> {
    let listener = server::bind(http).map_err(|e| format!("failed to create server: {e}"))?;
    let local = listener.local_addr().ok();
    tracing::info!(
        addr = %local.map_or_else(|| http.bind_address(), |a| a.to_string()),
        "now listening for profiles"
    );
    Ok((Arc::new(listener), local))
}

impl ReceiveHttp {
    /// The address the server listens on (useful with `listen_port = 0`).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        lock(&self.server).local_addr
    }
}

impl Component for ReceiveHttp {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        Value::Object(BTreeMap::new())
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let (listener, local_addr) = bind(&args.http)?;
        if args.http.http2_enabled {
            tracing::warn!(
                "http2 {{ enabled = true }} is not supported: the server speaks HTTP/1.1 only"
            );
        }
        let metrics = ReceiveMetrics::get(&opts.metrics).instance(&opts.id);
        let budget = opts.services.get::<Budget>().unwrap_or_default();
        let shared = Arc::new(Shared {
            id: opts.id,
            fanout: FanOut::new(args.forward_to),
            body_size_limit: AtomicU64::new(args.body_size_limit),
            inflight: Mutex::new(server::inflight_budget(args.body_size_limit)),
            converters: server::converters(),
            metrics,
            profiles_forwarded: AtomicU64::new(0),
            requests_rejected: AtomicU64::new(0),
            refusals: Refusals::new(
                "requests refused with 429: the memory budget is full",
                "requests accepted again: the memory budget has room",
            ),
            budget,
        });
        Ok(ReceiveHttp {
            shared,
            server: Mutex::new(ServerState {
                http: args.http,
                grace: args.graceful_shutdown_timeout,
                listener,
                local_addr,
                generation: 0,
            }),
            changed: Notify::new(),
        })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        let mut state = lock(&self.server);
        if state.http != args.http {
            // A port of 0 got a free port: asking for that port now is the same address.
            let bound_port = state.local_addr.map(|a| a.port());
            let same_address = state.http.listen_address == args.http.listen_address
                && (state.http.listen_port == args.http.listen_port
                    || bound_port == Some(args.http.listen_port));
            if !same_address {
                let (listener, local_addr) = bind(&args.http)?;
                state.listener = listener;
                state.local_addr = local_addr;
            }
            if args.http.http2_enabled && !state.http.http2_enabled {
                tracing::warn!(
                    "http2 {{ enabled = true }} is not supported: the server speaks HTTP/1.1 only"
                );
            }
            state.http = args.http;
            state.generation += 1;
            self.changed.notify_one();
        }
        state.grace = args.graceful_shutdown_timeout;
        let previous = self
            .shared
            .body_size_limit
            .swap(args.body_size_limit, Ordering::Relaxed);
        if previous != args.body_size_limit {
            // Requests being read keep the budget they started with.
            *lock(&self.shared.inflight) = server::inflight_budget(args.body_size_limit);
        }
        self.shared.fanout.set(args.forward_to);
        Ok(())
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        let result = self.serve(&shutdown).await;
        self.shared.metrics.remove();
        result
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        let state = lock(&self.server);
        Some(serde_json::json!({
            "listen_address": state.local_addr.map(|a| a.to_string()),
            "forward_to": self.shared.fanout.len(),
            "profiles_forwarded": self.shared.profiles_forwarded.load(Ordering::Relaxed),
            "requests_rejected": self.shared.requests_rejected.load(Ordering::Relaxed),
            "body_size_limit": self.shared.body_size_limit.load(Ordering::Relaxed),
            "conn_limit": state.http.conn_limit,
        }))
    }
}

impl ReceiveHttp {
    /// Serves until `shutdown`, restarting the server when its settings change.
    async fn serve(&self, shutdown: &CancellationToken) -> Result<(), BoxError> {
        loop {
            let (generation, grace, instance) = {
                let state = lock(&self.server);
                let instance = Instance::start(&state.listener, &state.http, self.shared.clone())
                    .map_err(|e| format!("failed to start server: {e}"))?;
                (state.generation, state.grace, instance)
            };
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => {
                        instance.stop(grace).await;
                        tracing::info!("server stopped");
                        return Ok(());
                    }
                    _ = self.changed.notified() => {
                        if lock(&self.server).generation != generation {
                            break;
                        }
                    }
                }
            }
            tracing::info!("http settings changed, restarting the server");
            instance.stop(grace).await;
        }
    }
}

#[cfg(test)]
mod tests;
