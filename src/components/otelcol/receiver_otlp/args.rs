//! The block's arguments, Alloy's `otelcol.receiver.otlp` (`internal/component/otelcol/
//! receiver/otlp`, the shared `GRPCServerArguments` and `HTTPServerArguments`) plus `profiles`
//! in `output` and `profiles_url_path` in `http`.
//!
//! As in Alloy and the Collector, a protocol is served only when its block is present
//! (`grpc {}` serves gRPC on `0.0.0.0:4317`, `http {}` OTLP/HTTP on `0.0.0.0:4318`), and at
//! least one must be. Limits: a gRPC message is at most `max_recv_msg_size` (default 4 MiB,
//! grpc-go's), an HTTP body `max_request_body_size` (default 20 MiB, the Collector's), each
//! also after decompression.
//!
//! Accepted and not applied (warned about once at build): `output` `metrics`/`logs`/`traces`
//! (only profiles are received here), `grpc` `keepalive`, `read_buffer_size`,
//! `write_buffer_size`, `include_metadata`, `http` `cors`,
//! `include_metadata`, `compression_algorithms`, `keep_alives_enabled`, the `*_url_path` of
//! other signals, and `debug_metrics`. Refused: `tls` (terminate TLS in front), `auth` (no
//! `otelcol.auth.*` components here) and transports other than `tcp`.

use std::time::Duration as StdDuration;

use serde::Deserialize;

use crate::profiles::Receiver;
use crate::runtime::size::parse_size;
use crate::syntax::types::{CapsuleRef, Duration, RawValue};

pub const DEFAULT_GRPC_ENDPOINT: &str = "0.0.0.0:4317";
pub const DEFAULT_HTTP_ENDPOINT: &str = "0.0.0.0:4318";
/// OTLP/HTTP's path for profiles (the signal's `v1development` package).
pub const DEFAULT_PROFILES_PATH: &str = "/v1development/profiles";
pub const DEFAULT_MAX_RECV_MSG_SIZE: u64 = 4 << 20;
pub const DEFAULT_MAX_REQUEST_BODY_SIZE: u64 = 20 << 20;
/// The Collector's `read_header_timeout`, used as the time allowed to read a whole request
/// when `read_timeout` is not set (a client must not hold a body's memory forever).
pub const DEFAULT_READ_TIMEOUT: StdDuration = StdDuration::from_secs(60);
/// HTTP/2 streams one connection may have open (`grpc` `max_concurrent_streams`; grpc-go has
/// no limit by default, we bound what one client can make us hold). Also applied to HTTP/2
/// connections on the OTLP/HTTP port.
pub const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 100;

/// One server's validated settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// `host:port` as written (an empty host means every interface).
    pub endpoint: String,
    /// The most bytes of one message (gRPC) or body (HTTP), before and after decompression.
    pub max_size: u64,
    /// The URL path profiles are posted to (HTTP only).
    pub path: String,
    /// Time allowed to read one request's body.
    pub read_timeout: StdDuration,
    /// HTTP/2 streams open at once per connection.
    pub max_concurrent_streams: u32,
}

impl ServerConfig {
    /// The address to bind (`:4317` means every interface).
    pub fn bind_address(&self) -> String {
        match self.endpoint.strip_prefix(':') {
            Some(port) => format!("0.0.0.0:{port}"),
            None => self.endpoint.clone(),
        }
    }
}

/// The validated arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawArguments")]
pub struct Arguments {
    pub grpc: Option<ServerConfig>,
    pub http: Option<ServerConfig>,
    pub profiles: Vec<CapsuleRef<Receiver>>,
    /// Settings accepted for compatibility that change nothing here (for the build warning).
    pub ignored: Vec<&'static str>,
    /// What cannot be used, kept for `validate` to place at its block and attribute (the
    /// component refuses to build while there is any).
    pub problems: Vec<ArgumentsError>,
}

#[derive(Deserialize)]
#[serde(rename = "otelcol.receiver.otlp")]
struct RawArguments {
    #[serde(default)]
    grpc: Option<GrpcBlock>,
    #[serde(default)]
    http: Option<HttpBlock>,
    #[serde(default)]
    debug_metrics: Option<RawValue>,
    output: OutputBlock,
}

#[derive(Deserialize)]
struct OutputBlock {
    #[serde(default)]
    profiles: Vec<CapsuleRef<Receiver>>,
    #[serde(default)]
    metrics: Option<RawValue>,
    #[serde(default)]
    logs: Option<RawValue>,
    #[serde(default)]
    traces: Option<RawValue>,
}

#[derive(Deserialize)]
struct GrpcBlock {
    #[serde(default)]
    endpoint: Option<String>,
    #[serde(default)]
    transport: Option<String>,
    #[serde(default)]
    tls: Option<RawValue>,
    #[serde(default)]
    max_recv_msg_size: Option<String>,
    #[serde(default)]
    max_concurrent_streams: Option<u32>,
    #[serde(default)]
    read_buffer_size: Option<String>,
    #[serde(default)]
    write_buffer_size: Option<String>,
    #[serde(default)]
    keepalive: Option<KeepaliveBlock>,
    #[serde(default)]
    auth: Option<RawValue>,
    #[serde(default)]
    include_metadata: Option<bool>,
}

/// Alloy's `KeepaliveServerArguments` (accepted, not applied).
#[derive(Deserialize)]
#[allow(dead_code)]
struct KeepaliveBlock {
    #[serde(default)]
    server_parameters: Option<KeepaliveParameters>,
    #[serde(default)]
    enforcement_policy: Option<KeepalivePolicy>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct KeepaliveParameters {
    #[serde(default)]
    max_connection_idle: Option<Duration>,
    #[serde(default)]
    max_connection_age: Option<Duration>,
    #[serde(default)]
    max_connection_age_grace: Option<Duration>,
    #[serde(default)]
    time: Option<Duration>,
    #[serde(default)]
    timeout: Option<Duration>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct KeepalivePolicy {
    #[serde(default)]
    min_time: Option<Duration>,
    #[serde(default)]
    permit_without_stream: Option<bool>,
}

#[derive(Deserialize)]
struct HttpBlock {
    #[serde(default)]
    endpoint: Option<String>,
    #[serde(default)]
    tls: Option<RawValue>,
    #[serde(default)]
    cors: Option<RawValue>,
    #[serde(default)]
    auth: Option<RawValue>,
    #[serde(default)]
    max_request_body_size: Option<String>,
    #[serde(default)]
    include_metadata: Option<bool>,
    #[serde(default)]
    compression_algorithms: Option<Vec<String>>,
    #[serde(default)]
    keep_alives_enabled: Option<bool>,
    #[serde(default)]
    idle_timeout: Option<Duration>,
    #[serde(default)]
    read_timeout: Option<Duration>,
    #[serde(default)]
    write_timeout: Option<Duration>,
    #[serde(default)]
    read_header_timeout: Option<Duration>,
    #[serde(default)]
    traces_url_path: Option<String>,
    #[serde(default)]
    metrics_url_path: Option<String>,
    #[serde(default)]
    logs_url_path: Option<String>,
    #[serde(default)]
    profiles_url_path: Option<String>,
}

/// Arguments that decode but cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentsError {
    #[error(
        "must specify at least one protocol (a grpc or an http block) when using otelcol.receiver.otlp"
    )]
    NoProtocol,
    #[error(
        "{0} > tls: TLS is not supported by scraper's otelcol.receiver.otlp; terminate TLS in front of it (a proxy or a sidecar) and listen on a local address"
    )]
    Tls(&'static str),
    #[error("{0} > auth: otelcol.auth.* components are not supported by scraper")]
    Auth(&'static str),
    #[error("grpc > transport: only \"tcp\" is supported (got {0:?})")]
    Transport(String),
    #[error("{block} > endpoint: {message}")]
    Endpoint {
        block: &'static str,
        message: String,
    },
    #[error("{block} > {attr}: {message}")]
    Size {
        block: &'static str,
        attr: &'static str,
        message: String,
    },
    #[error("http > profiles_url_path: must start with \"/\" (got {0:?})")]
    Path(String),
}

/// Checks `host:port` (the host may be empty, a name, an IPv4 or a bracketed IPv6 address).
fn check_endpoint(block: &'static str, endpoint: &str) -> Result<(), ArgumentsError> {
    let bad = |message: String| ArgumentsError::Endpoint { block, message };
    let Some((host, port)) = endpoint.rsplit_once(':') else {
        return Err(bad(format!("{endpoint:?} must be host:port")));
    };
    if port.parse::<u16>().is_err() {
        return Err(bad(format!("{endpoint:?}: invalid port {port:?}")));
    }
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(bad(format!(
            "{endpoint:?}: an IPv6 address must be in brackets ([::1]:4317)"
        )));
    }
    Ok(())
}

fn size(
    block: &'static str,
    attr: &'static str,
    value: Option<&str>,
    default: u64,
) -> Result<u64, ArgumentsError> {
    let Some(text) = value else {
        return Ok(default);
    };
    let n = parse_size(text).map_err(|message| ArgumentsError::Size {
        block,
        attr,
        message,
    })?;
    // 0 means "the default" in the Collector's settings.
    Ok(if n == 0 { default } else { n })
}

impl GrpcBlock {
    fn validate(self, ignored: &mut Vec<&'static str>) -> Result<ServerConfig, ArgumentsError> {
        if self.tls.is_some() {
            return Err(ArgumentsError::Tls("grpc"));
        }
        if self.auth.is_some() {
            return Err(ArgumentsError::Auth("grpc"));
        }
        if let Some(t) = self.transport.filter(|t| !t.is_empty() && t != "tcp") {
            return Err(ArgumentsError::Transport(t));
        }
        let endpoint = self
            .endpoint
            .unwrap_or_else(|| DEFAULT_GRPC_ENDPOINT.to_owned());
        check_endpoint("grpc", &endpoint)?;
        let max_size = size(
            "grpc",
            "max_recv_msg_size",
            self.max_recv_msg_size.as_deref(),
            DEFAULT_MAX_RECV_MSG_SIZE,
        )?;
        for (set, name) in [
            (self.keepalive.is_some(), "grpc > keepalive"),
            (self.read_buffer_size.is_some(), "grpc > read_buffer_size"),
            (self.write_buffer_size.is_some(), "grpc > write_buffer_size"),
            (
                self.include_metadata == Some(true),
                "grpc > include_metadata",
            ),
        ] {
            if set {
                ignored.push(name);
            }
        }
        Ok(ServerConfig {
            endpoint,
            max_size,
            path: String::new(),
            read_timeout: DEFAULT_READ_TIMEOUT,
            max_concurrent_streams: self
                .max_concurrent_streams
                .filter(|&n| n > 0)
                .unwrap_or(DEFAULT_MAX_CONCURRENT_STREAMS),
        })
    }
}

impl HttpBlock {
    fn validate(self, ignored: &mut Vec<&'static str>) -> Result<ServerConfig, ArgumentsError> {
        if self.tls.is_some() {
            return Err(ArgumentsError::Tls("http"));
        }
        if self.auth.is_some() {
            return Err(ArgumentsError::Auth("http"));
        }
        let endpoint = self
            .endpoint
            .unwrap_or_else(|| DEFAULT_HTTP_ENDPOINT.to_owned());
        check_endpoint("http", &endpoint)?;
        let max_size = size(
            "http",
            "max_request_body_size",
            self.max_request_body_size.as_deref(),
            DEFAULT_MAX_REQUEST_BODY_SIZE,
        )?;
        let path = self
            .profiles_url_path
            .unwrap_or_else(|| DEFAULT_PROFILES_PATH.to_owned());
        if !path.starts_with('/') {
            return Err(ArgumentsError::Path(path));
        }
        for (set, name) in [
            (self.cors.is_some(), "http > cors"),
            (
                self.include_metadata == Some(true),
                "http > include_metadata",
            ),
            (
                self.compression_algorithms.is_some(),
                "http > compression_algorithms",
            ),
            (
                self.keep_alives_enabled.is_some(),
                "http > keep_alives_enabled",
            ),
            (self.idle_timeout.is_some(), "http > idle_timeout"),
            (self.write_timeout.is_some(), "http > write_timeout"),
            (
                self.read_header_timeout.is_some(),
                "http > read_header_timeout",
            ),
            (self.traces_url_path.is_some(), "http > traces_url_path"),
            (self.metrics_url_path.is_some(), "http > metrics_url_path"),
            (self.logs_url_path.is_some(), "http > logs_url_path"),
        ] {
            if set {
                ignored.push(name);
            }
        }
        let read_timeout = self
            .read_timeout
            .map(Duration::get)
            .filter(|d| !d.is_zero())
            .unwrap_or(DEFAULT_READ_TIMEOUT);
        Ok(ServerConfig {
            endpoint,
            max_size,
            path,
            read_timeout,
            max_concurrent_streams: DEFAULT_MAX_CONCURRENT_STREAMS,
        })
    }
}

impl ArgumentsError {
    /// The block and attribute the problem is about.
    pub fn place(&self) -> (Option<&'static str>, Option<&'static str>) {
        match self {
            ArgumentsError::NoProtocol => (None, None),
            ArgumentsError::Tls(b) => (Some(*b), Some("tls")),
            ArgumentsError::Auth(b) => (Some(*b), Some("auth")),
            ArgumentsError::Transport(_) => (Some("grpc"), Some("transport")),
            ArgumentsError::Endpoint { block, .. } => (Some(*block), Some("endpoint")),
            ArgumentsError::Size { block, attr, .. } => (Some(*block), Some(*attr)),
            ArgumentsError::Path(_) => (Some("http"), Some("profiles_url_path")),
        }
    }
}

impl TryFrom<RawArguments> for Arguments {
    type Error = ArgumentsError;

    fn try_from(r: RawArguments) -> Result<Self, ArgumentsError> {
        let mut problems = Vec::new();
        if r.grpc.is_none() && r.http.is_none() {
            problems.push(ArgumentsError::NoProtocol);
        }
        let mut ignored = Vec::new();
        let mut keep = |result: Option<Result<ServerConfig, ArgumentsError>>| match result {
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => {
                problems.push(e);
                None
            }
            None => None,
        };
        let grpc = keep(r.grpc.map(|g| g.validate(&mut ignored)));
        let http = keep(r.http.map(|h| h.validate(&mut ignored)));
        for (set, name) in [
            (r.output.metrics.is_some(), "output > metrics"),
            (r.output.logs.is_some(), "output > logs"),
            (r.output.traces.is_some(), "output > traces"),
            (r.debug_metrics.is_some(), "debug_metrics"),
        ] {
            if set {
                ignored.push(name);
            }
        }
        Ok(Arguments {
            grpc,
            http,
            profiles: r.output.profiles,
            ignored,
            problems,
        })
    }
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
