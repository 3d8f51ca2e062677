//! `otelcol.exporter.otlphttp_profiles`: sends the profiles forwarded to it to an OTLP
//! endpoint over OTLP/HTTP with protobuf bodies (`POST {endpoint}/v1development/profiles`),
//! e.g. an OpenTelemetry Collector or Pyroscope's OTLP ingestion.
//!
//! ```alloy
//! otelcol.exporter.otlphttp_profiles "default" {
//!   client {
//!     endpoint    = "http://collector:4318"   // required
//!     headers     = { "X-Scope-OrgID" = "team-a" }
//!     compression = "gzip"                    // or "none"
//!     timeout     = "30s"
//!     tls {                                   // optional
//!       ca_file              = "/etc/ca.pem"
//!       cert_file            = "/etc/client.pem"
//!       key_file             = "/etc/client-key.pem"
//!       insecure_skip_verify = false
//!       server_name_override = ""
//!     }
//!   }
//!   profiles_endpoint = ""                    // replaces endpoint + "/v1development/profiles"
//!   retry_on_failure {
//!     enabled          = true
//!     initial_interval = "5s"
//!     max_interval     = "30s"
//!     max_elapsed_time = "5m"                 // 0: keep retrying
//!   }
//!   queue_config {                            // as in pyroscope.write
//!     max_bytes      = 67108864
//!     senders        = 4
//!     flush_deadline = "5s"
//!   }
//! }
//! ```
//!
//! The name follows Alloy's `otelcol.exporter.otlphttp`, whose `client`, `profiles_endpoint`
//! and `retry_on_failure` arguments it takes; unlike the otelcol components it exports a
//! profiles `receiver`, so `pyroscope.scrape`, `pyroscope.ebpf`, `pyroscope.relabel` and
//! `pyroscope.receive_http` forward to it directly. OTLP/HTTP rather than gRPC: Pyroscope and
//! the Collector take both, and HTTP reuses our client (TLS, proxies) with no gRPC stack.
//!
//! Sending is `crate::push`'s, the engine `pyroscope.write` also uses (protocol `OtlpHttp`): a bounded queue that
//! never stalls producers, per-series order, the memory budget, and every drop counted in
//! `pyroscope_write_dropped_*{component_id,endpoint,reason}` and logged. Each profile becomes
//! one export request (`super::convert`); only 429, 502, 503, 504 and transport failures are
//! retried, as OTLP/HTTP specifies.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::budget::Budget;
use crate::httpclient::{HttpClientConfig, TlsConfig};
use crate::profiles::Receiver;
use crate::push::{
    EndpointSpec, Pipeline, Protocol, QueueConfig, RetryArguments, Settings, WriteMetrics,
    gzip_compression, header_problems, push_url,
};
use crate::runtime::{BoxError, Component, ComponentOptions, Health};
use crate::syntax::decode::Invalid;
use crate::syntax::types::Duration;
use crate::syntax::value::Value;

/// Appended to `client.endpoint` unless `profiles_endpoint` is set.
pub const PROFILES_PATH: &str = "/v1development/profiles";

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Arguments {
    pub client: ClientArguments,
    #[serde(default)]
    pub profiles_endpoint: String,
    #[serde(default)]
    pub retry_on_failure: RetryArguments,
    #[serde(default)]
    pub queue_config: QueueConfig,
}

fn default_compression() -> String {
    "gzip".to_owned()
}
fn default_timeout() -> Duration {
    Duration::from_secs(30)
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ClientArguments {
    pub endpoint: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default = "default_compression")]
    pub compression: String,
    #[serde(default = "default_timeout")]
    pub timeout: Duration,
    #[serde(default)]
    pub tls: Option<TlsArguments>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TlsArguments {
    pub ca_file: String,
    pub cert_file: String,
    pub key_file: String,
    pub insecure_skip_verify: bool,
    pub server_name_override: String,
    /// Accepted for compatibility: plain `http://` endpoints are already unencrypted.
    pub insecure: bool,
}

impl Arguments {
    /// Where profiles go, as text (the endpoint's name in metrics) and parsed:
    /// `profiles_endpoint`, or `client.endpoint` with the OTLP profiles path. Errors quote
    /// what the user wrote.
    fn push_url(&self) -> Result<(String, reqwest::Url), String> {
        if self.profiles_endpoint.is_empty() {
            let url = push_url(&self.client.endpoint, PROFILES_PATH)?;
            let text = format!(
                "{}{PROFILES_PATH}",
                self.client.endpoint.trim_end_matches('/')
            );
            Ok((text, url))
        } else {
            let url = push_url(&self.profiles_endpoint, "")?;
            Ok((self.profiles_endpoint.clone(), url))
        }
    }

    fn spec(&self) -> Result<EndpointSpec, BoxError> {
        let c = &self.client;
        let gzip = gzip_compression(&c.compression)?;
        let (url, push_url) = self.push_url()?;
        let headers = crate::push::sensitive_headers(&c.headers)?;
        let r = &self.retry_on_failure;
        let q = &self.queue_config;
        let settings = Settings {
            url,
            protocol: Protocol::OtlpHttp { gzip },
            push_url,
            headers,
            remote_timeout: c.timeout.get(),
            min_backoff: r.initial_interval.get(),
            max_backoff: r.max_interval.get(),
            // Retries are bounded by the profile's age (`max_elapsed_time`), not a count.
            max_retries: 0,
            // 413 must not be retried; 429 is retried as unavailable anyway.
            retry_on_http_429: false,
            retry: r.enabled,
            senders: usize::try_from(q.senders).unwrap_or(usize::MAX),
            max_age: if r.enabled {
                r.max_elapsed_time.get()
            } else {
                q.max_age.get()
            },
            flush_deadline: q.flush_deadline.get(),
            limits: crate::push::limits::Limits::default(),
        };
        let mut http = HttpClientConfig::default();
        if let Some(t) = &c.tls {
            http.tls_config = TlsConfig {
                ca_file: t.ca_file.clone(),
                cert_file: t.cert_file.clone(),
                key_file: t.key_file.clone(),
                server_name: t.server_name_override.clone(),
                insecure_skip_verify: t.insecure_skip_verify,
                ..TlsConfig::default()
            };
        }
        Ok(EndpointSpec {
            settings,
            http,
            max_bytes: usize::try_from(q.max_bytes).unwrap_or(usize::MAX),
        })
    }
}

/// The `otelcol.exporter.otlphttp_profiles` component.
pub struct OtlpHttpProfiles {
    pipeline: Arc<Pipeline>,
    receiver: Arc<Receiver>,
}

impl OtlpHttpProfiles {
    pub fn receiver(&self) -> Arc<Receiver> {
        self.receiver.clone()
    }
}

fn exports(receiver: &Arc<Receiver>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("receiver".to_string(), receiver.export());
    Value::Object(m)
}

impl Component for OtlpHttpProfiles {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(&Receiver::unavailable())
    }

    /// The endpoint URL, compression and headers: what `spec` would refuse when building.
    fn validate(args: &Arguments) -> Vec<Invalid> {
        let mut out = Vec::new();
        if let Err(msg) = args.push_url() {
            out.push(if args.profiles_endpoint.is_empty() {
                Invalid::new(msg).block("client", 0).attr("endpoint")
            } else {
                Invalid::new(msg).attr("profiles_endpoint")
            });
        }
        if let Err(msg) = gzip_compression(&args.client.compression) {
            out.push(Invalid::new(msg).block("client", 0).attr("compression"));
        }
        for (name, msg) in header_problems(&args.client.headers) {
            out.push(
                Invalid::new(msg)
                    .block("client", 0)
                    .attr("headers")
                    .key(name),
            );
        }
        out
    }

    fn build(opts: ComponentOptions, args: Arguments) -> Result<Self, BoxError> {
        let spec = args.spec()?;
        let pipeline = Arc::new(Pipeline::new(
            opts.id.clone(),
            WriteMetrics::get(&opts.metrics),
            opts.services.get::<Budget>().unwrap_or_default(),
        ));
        pipeline.apply(Vec::new(), vec![spec])?;
        let receiver = Arc::new(Receiver(pipeline.clone()));
        opts.exports.publish(exports(&receiver));
        Ok(OtlpHttpProfiles { pipeline, receiver })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        self.pipeline.apply(Vec::new(), vec![args.spec()?])
    }

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
