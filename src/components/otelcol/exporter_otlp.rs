//! `otelcol.exporter.otlp`: sends the profiles forwarded to it to an OTLP endpoint over
//! OTLP/gRPC (`opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export`),
//! e.g. an OpenTelemetry Collector, Pyroscope (which serves it on its HTTP port) or another
//! scraper's `otelcol.receiver.otlp`.
//!
//! ```alloy
//! otelcol.exporter.otlp "collector" {
//!   client {
//!     endpoint    = "collector:4317"   // required: host:port, or http:// / https:// URL
//!     compression = "gzip"             // or "none"
//!     headers     = { "X-Scope-OrgID" = "team-a" }
//!     tls {
//!       insecure             = true    // plaintext HTTP/2 (h2c); default: TLS
//!       ca_file              = "/etc/ca.pem"
//!       cert_file            = "/etc/client.pem"
//!       key_file             = "/etc/client-key.pem"
//!       insecure_skip_verify = false
//!       server_name          = ""
//!     }
//!   }
//!   timeout = "5s"
//!   retry_on_failure {
//!     enabled          = true
//!     initial_interval = "5s"
//!     max_interval     = "30s"
//!     max_elapsed_time = "5m"
//!   }
//!   queue_config { max_bytes = 67108864 }   // as in pyroscope.write
//! }
//! ```
//!
//! Alloy's component of the same name takes these `client` arguments and an `output`-less
//! shape; unlike Alloy's (an otelcol consumer) it exports a profiles `receiver`, so profile
//! producers (`pyroscope.scrape`, `pyroscope.ebpf`, `otelcol.receiver.otlp`...) forward to it.
//! Endpoint: `host:port` uses TLS unless `tls { insecure = true }`; an `http://` URL is
//! plaintext and an `https://` URL TLS, whatever `insecure` says, as in the Collector.
//! Accepted and not applied: `sending_queue`, `debug_metrics` and the `client` attributes
//! `keepalive`, `read_buffer_size`, `write_buffer_size`, `wait_for_ready`, `balancer_name`,
//! `authority`. Refused: `auth` (no `otelcol.auth.*` components here).
//!
//! Sending is `crate::push`'s (protocol `OtlpGrpc`), the engine `pyroscope.write` and
//! `otelcol.exporter.otlphttp_profiles` use: a bounded queue that never stalls producers, the
//! memory budget, per-endpoint health, drops counted in `pyroscope_write_dropped_*` and logged.
//! Each profile becomes one export request (`protocols::otlp::convert`). Retried as the
//! Collector's exporter decides (`push::otlp::grpc_error`): OTLP/gRPC's retryable statuses
//! (UNAVAILABLE, DEADLINE_EXCEEDED, ...), RESOURCE_EXHAUSTED only with a `RetryInfo` (waiting
//! at least its delay), and transport failures; other statuses drop the profile.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::budget::Budget;
use crate::httpclient::{HttpClientConfig, TlsConfig};
use crate::profiles::Receiver;
use crate::protocols::otlp::grpc::EXPORT_PATH;
use crate::push::{
    EndpointSpec, Pipeline, Protocol, QueueConfig, RetryArguments, Settings, WriteMetrics,
    gzip_compression, header_problems, push_url,
};
use crate::runtime::{BoxError, Component, ComponentOptions, Health};
use crate::syntax::decode::Invalid;
use crate::syntax::types::{Duration, RawValue, SecretString};
use crate::syntax::value::Value;

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Arguments {
    pub client: ClientArguments,
    #[serde(default = "default_timeout")]
    pub timeout: Duration,
    #[serde(default)]
    pub retry_on_failure: RetryArguments,
    #[serde(default)]
    pub queue_config: QueueConfig,
    #[serde(default)]
    pub sending_queue: Option<RawValue>,
    #[serde(default)]
    pub debug_metrics: Option<RawValue>,
}

fn default_compression() -> String {
    "gzip".to_owned()
}
fn default_timeout() -> Duration {
    Duration::from_secs(5)
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ClientArguments {
    pub endpoint: String,
    #[serde(default = "default_compression")]
    pub compression: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub tls: TlsArguments,
    #[serde(default)]
    pub keepalive: Option<RawValue>,
    #[serde(default)]
    pub read_buffer_size: Option<String>,
    #[serde(default)]
    pub write_buffer_size: Option<String>,
    #[serde(default)]
    pub wait_for_ready: Option<bool>,
    #[serde(default)]
    pub balancer_name: Option<String>,
    #[serde(default)]
    pub authority: Option<String>,
    #[serde(default)]
    pub auth: Option<RawValue>,
}

/// Alloy's `TLSClientArguments` (the TLS files, PEM texts and verification switches).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TlsArguments {
    pub insecure: bool,
    pub insecure_skip_verify: bool,
    pub server_name: String,
    pub ca_file: String,
    pub ca_pem: String,
    pub cert_file: String,
    pub cert_pem: String,
    pub key_file: String,
    pub key_pem: SecretString,
    pub min_version: String,
    pub max_version: String,
    pub reload_interval: Option<Duration>,
    pub cipher_suites: Vec<String>,
    pub include_system_ca_certs_pool: bool,
    pub curve_preferences: Vec<String>,
}

impl Arguments {
    /// The base URL (`scheme://host:port`) `client.endpoint` stands for.
    fn base_url(&self) -> Result<String, String> {
        let e = self.client.endpoint.trim();
        if e.is_empty() {
            return Err("client endpoint must not be empty".into());
        }
        if e.starts_with("http://") || e.starts_with("https://") {
            return Ok(e.trim_end_matches('/').to_owned());
        }
        if e.contains("://") {
            return Err(format!(
                "client endpoint {e:?}: only http:// and https:// URLs, or host:port"
            ));
        }
        let scheme = if self.client.tls.insecure {
            "http"
        } else {
            "https"
        };
        Ok(format!("{scheme}://{e}"))
    }

    fn spec(&self) -> Result<EndpointSpec, BoxError> {
        let c = &self.client;
        if c.auth.is_some() {
            return Err(
                "client > auth: otelcol.auth.* components are not supported by scraper".into(),
            );
        }
        let gzip = gzip_compression(&c.compression)?;
        let base = self.base_url()?;
        let url = push_url(&base, EXPORT_PATH)?;
        let headers = crate::push::sensitive_headers(&c.headers)?;
        let r = &self.retry_on_failure;
        let q = &self.queue_config;
        let settings = Settings {
            url: c.endpoint.clone(),
            protocol: Protocol::OtlpGrpc { gzip },
            push_url: url,
            headers,
            remote_timeout: self.timeout.get(),
            min_backoff: r.initial_interval.get(),
            max_backoff: r.max_interval.get(),
            max_retries: 0,
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
        let t = &c.tls;
        let http = HttpClientConfig {
            http2_prior_knowledge: true,
            tls_config: TlsConfig {
                ca_file: t.ca_file.clone(),
                ca_pem: t.ca_pem.clone(),
                cert_file: t.cert_file.clone(),
                cert_pem: t.cert_pem.clone(),
                key_file: t.key_file.clone(),
                key_pem: t.key_pem.clone(),
                server_name: t.server_name.clone(),
                insecure_skip_verify: t.insecure_skip_verify,
                min_version: t.min_version.clone(),
            },
            ..HttpClientConfig::default()
        };
        Ok(EndpointSpec {
            settings,
            http,
            max_bytes: usize::try_from(q.max_bytes).unwrap_or(usize::MAX),
        })
    }

    /// Settings accepted for compatibility that change nothing here.
    fn ignored(&self) -> Vec<&'static str> {
        let c = &self.client;
        [
            (self.sending_queue.is_some(), "sending_queue"),
            (self.debug_metrics.is_some(), "debug_metrics"),
            (c.keepalive.is_some(), "client > keepalive"),
            (c.read_buffer_size.is_some(), "client > read_buffer_size"),
            (c.write_buffer_size.is_some(), "client > write_buffer_size"),
            (c.wait_for_ready.is_some(), "client > wait_for_ready"),
            (c.balancer_name.is_some(), "client > balancer_name"),
            (c.authority.is_some(), "client > authority"),
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
        .collect()
    }
}

/// The `otelcol.exporter.otlp` component.
pub struct OtlpGrpcProfiles {
    pipeline: Arc<Pipeline>,
    receiver: Arc<Receiver>,
}

impl OtlpGrpcProfiles {
    pub fn receiver(&self) -> Arc<Receiver> {
        self.receiver.clone()
    }
}

fn exports(receiver: &Arc<Receiver>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("receiver".to_string(), receiver.export());
    Value::Object(m)
}

fn warn_ignored(args: &Arguments) {
    let ignored = args.ignored();
    if !ignored.is_empty() {
        tracing::warn!(
            settings = %ignored.join(", "),
            "accepted for compatibility and not applied"
        );
    }
}

impl Component for OtlpGrpcProfiles {
    type Arguments = Arguments;

    fn initial_exports() -> Value {
        exports(&Receiver::unavailable())
    }

    fn validate(args: &Arguments) -> Vec<Invalid> {
        let mut out = Vec::new();
        if let Err(msg) = args.base_url() {
            out.push(Invalid::new(msg).block("client", 0).attr("endpoint"));
        }
        if let Err(msg) = gzip_compression(&args.client.compression) {
            out.push(Invalid::new(msg).block("client", 0).attr("compression"));
        }
        if args.client.auth.is_some() {
            out.push(
                Invalid::new("otelcol.auth.* components are not supported by scraper")
                    .block("client", 0)
                    .attr("auth"),
            );
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
        warn_ignored(&args);
        let spec = args.spec()?;
        let pipeline = Arc::new(Pipeline::new(
            opts.id.clone(),
            WriteMetrics::get(&opts.metrics),
            opts.services.get::<Budget>().unwrap_or_default(),
        ));
        pipeline.apply(Vec::new(), vec![spec])?;
        let receiver = Arc::new(Receiver(pipeline.clone()));
        opts.exports.publish(exports(&receiver));
        Ok(OtlpGrpcProfiles { pipeline, receiver })
    }

    fn update(&self, args: Arguments) -> Result<(), BoxError> {
        warn_ignored(&args);
        self.pipeline.apply(Vec::new(), vec![args.spec()?])
    }

    fn debug_info(&self) -> Option<serde_json::Value> {
        Some(self.pipeline.debug_info())
    }

    /// Unhealthy while the endpoint is failing or dropping profiles (see `crate::push`).
    fn health(&self) -> Option<Health> {
        self.pipeline.health()
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
        self.pipeline.run(shutdown).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode::from_body;
    use crate::syntax::eval::{Scope, eval_body};
    use crate::syntax::parser::parse_file;

    fn decode(src: &str) -> Arguments {
        let (file, diags) = parse_file(src);
        assert!(diags.is_empty(), "{diags:?}");
        let body = eval_body(&file.body, &Scope::stdlib()).expect("evaluates");
        from_body::<Arguments>(&body).expect("decodes")
    }

    #[test]
    fn endpoints_and_tls() {
        let cases = [
            ("client {\n endpoint = \"c:4317\"\n}", Ok("https://c:4317")),
            (
                "client {\n endpoint = \"c:4317\"\n tls {\n  insecure = true\n }\n}",
                Ok("http://c:4317"),
            ),
            (
                "client {\n endpoint = \"http://c:4317/\"\n}",
                Ok("http://c:4317"),
            ),
            (
                "client {\n endpoint = \"https://c\"\n tls {\n  insecure = true\n }\n}",
                Ok("https://c"),
            ),
            (
                "client {\n endpoint = \"unix:///x\"\n}",
                Err("only http://"),
            ),
            ("client {\n endpoint = \"\"\n}", Err("must not be empty")),
        ];
        for (src, want) in cases {
            let a = decode(src);
            match (a.base_url(), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{src}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{src}: {got}"),
                (got, want) => panic!("{src}: {got:?}, want {want:?}"),
            }
        }
        let a = decode(
            "client {\n endpoint = \"c:4317\"\n}\ntimeout = \"2s\"\nsending_queue {\n enabled = true\n}",
        );
        assert_eq!(a.timeout, Duration::from_secs(2));
        assert_eq!(a.ignored(), ["sending_queue"]);
        let spec = a.spec().expect("spec");
        assert_eq!(
            spec.settings.push_url.as_str(),
            "https://c:4317/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
        );
        assert_eq!(spec.settings.protocol, Protocol::OtlpGrpc { gzip: true });
        assert!(spec.http.http2_prior_knowledge);
        let bad = decode("client {\n endpoint = \"c:1\"\n compression = \"zstd\"\n}");
        assert_eq!(OtlpGrpcProfiles::validate(&bad).len(), 1);
    }
}
