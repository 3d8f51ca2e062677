//! The block's arguments: Alloy's (`forward_to`, the squashed `fnet.ServerConfig`: `http`,
//! `grpc`, `graceful_shutdown_timeout`; and `debug_info_upload_timeout`) plus our
//! `body_size_limit`.
//!
//! Defaults are Alloy's code, not its shared docs: `listen_port` 8080, `listen_address` ""
//! (every interface), `server_read_timeout` and `server_write_timeout` 30s,
//! `server_idle_timeout` 120s, and for this component a `conn_limit` of 16384 (Alloy's
//! `SetToDefault`; the docs say 0). An `http` block overrides only what it sets.
//!
//! Accepted but not used: the `grpc` block (Alloy starts a gRPC server nobody talks to for
//! this component), the `http2` block (we serve HTTP/1.1; `enabled = true` is logged),
//! `debug_info_upload_timeout` (the debug-info proxy endpoints are not served). Refused: a
//! `tls` block in `http` (serving plaintext where TLS was asked for would be worse than
//! failing), so `scraper check` reports it.

use serde::Deserialize;

use crate::profiles::Receiver;
use crate::syntax::types::{CapsuleRef, Duration, SecretString};

/// Alloy's `DefaultHTTPPort`.
pub const DEFAULT_HTTP_PORT: u16 = 8080;
/// Alloy's `conn_limit` for this component (`64 / 4 * 1024`).
pub const DEFAULT_CONN_LIMIT: usize = 16384;
/// Default `body_size_limit`: 64 MiB, for a request body as received and after
/// decompression (its gzip `Content-Encoding`, or a gzipped profile in it).
pub const DEFAULT_BODY_SIZE_LIMIT: u64 = 64 << 20;

/// The HTTP server's settings, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpConfig {
    /// Host part; empty means every interface.
    pub listen_address: String,
    /// 0 picks a free port.
    pub listen_port: u16,
    /// Simultaneous connections; 0 means no limit.
    pub conn_limit: usize,
    /// Time allowed to read a request body (Go's `ReadTimeout`, applied to the body); 0 =
    /// none.
    pub read_timeout: std::time::Duration,
    /// A write that makes no progress for this long closes the connection; 0 = none.
    pub write_timeout: std::time::Duration,
    /// A connection with nothing to read for this long is closed; 0 = none.
    pub idle_timeout: std::time::Duration,
    /// The `http2 { enabled = true }` setting, which we only report.
    pub http2_enabled: bool,
}

impl HttpConfig {
    /// The address to bind, `host:port` (IPv6 hosts bracketed; empty host = all).
    pub fn bind_address(&self) -> String {
        let host = self.listen_address.trim();
        if host.is_empty() {
            format!("[::]:{}", self.listen_port)
        } else if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{}", self.listen_port)
        } else {
            format!("{host}:{}", self.listen_port)
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpBlock::default()
            .validate()
            .unwrap_or_else(|_| unreachable!("the defaults are valid"))
    }
}

/// The block's arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawArguments")]
pub struct Arguments {
    pub forward_to: Vec<CapsuleRef<Receiver>>,
    pub http: HttpConfig,
    pub graceful_shutdown_timeout: std::time::Duration,
    pub body_size_limit: u64,
}

fn default_graceful_shutdown_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_debug_info_upload_timeout() -> Duration {
    Duration::from_secs(120)
}
fn default_body_size_limit() -> u64 {
    DEFAULT_BODY_SIZE_LIMIT
}

// The decoder reports unknown attributes and blocks from these field lists.
#[derive(Deserialize)]
#[serde(rename = "pyroscope.receive_http")]
struct RawArguments {
    forward_to: Vec<CapsuleRef<Receiver>>,
    #[serde(default)]
    http: Option<HttpBlock>,
    #[serde(default)]
    #[allow(dead_code)]
    grpc: Option<GrpcBlock>,
    #[serde(default = "default_graceful_shutdown_timeout")]
    graceful_shutdown_timeout: Duration,
    #[serde(default = "default_debug_info_upload_timeout")]
    #[allow(dead_code)]
    debug_info_upload_timeout: Duration,
    #[serde(default = "default_body_size_limit")]
    body_size_limit: u64,
}

#[derive(Deserialize)]
#[serde(default)]
struct HttpBlock {
    listen_address: String,
    listen_port: i64,
    conn_limit: i64,
    server_read_timeout: Duration,
    server_write_timeout: Duration,
    server_idle_timeout: Duration,
    tls: Option<TlsBlock>,
    http2: Option<Http2Block>,
}

impl Default for HttpBlock {
    fn default() -> Self {
        HttpBlock {
            listen_address: String::new(),
            listen_port: i64::from(DEFAULT_HTTP_PORT),
            conn_limit: DEFAULT_CONN_LIMIT as i64,
            server_read_timeout: Duration::from_secs(30),
            server_write_timeout: Duration::from_secs(30),
            server_idle_timeout: Duration::from_secs(120),
            tls: None,
            http2: None,
        }
    }
}

impl HttpBlock {
    fn validate(self) -> Result<HttpConfig, ArgumentsError> {
        if self.tls.is_some() {
            return Err(ArgumentsError::Tls);
        }
        let listen_port = u16::try_from(self.listen_port)
            .map_err(|_| ArgumentsError::ListenPort(self.listen_port))?;
        Ok(HttpConfig {
            listen_address: self.listen_address,
            listen_port,
            // dskit limits connections only for a positive value.
            conn_limit: usize::try_from(self.conn_limit).unwrap_or(0),
            read_timeout: self.server_read_timeout.get(),
            write_timeout: self.server_write_timeout.get(),
            idle_timeout: self.server_idle_timeout.get(),
            http2_enabled: self.http2.is_some_and(|h| h.enabled.unwrap_or(false)),
        })
    }
}

/// Alloy's `TLSConfig` fields (accepted so that the error can say what is unsupported).
#[derive(Deserialize)]
#[allow(dead_code)]
struct TlsBlock {
    #[serde(default)]
    cert_pem: Option<String>,
    #[serde(default)]
    key_pem: Option<SecretString>,
    #[serde(default)]
    cert_file: Option<String>,
    #[serde(default)]
    key_file: Option<String>,
    #[serde(default)]
    client_auth_type: Option<String>,
    #[serde(default)]
    client_ca_file: Option<String>,
    #[serde(default)]
    client_ca: Option<String>,
    #[serde(default)]
    cipher_suites: Option<String>,
    #[serde(default)]
    min_version: Option<String>,
}

/// Alloy's `HTTP2Config`.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Http2Block {
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    max_handlers: Option<i64>,
    #[serde(default)]
    max_concurrent_streams: Option<i64>,
    #[serde(default)]
    max_decoder_header_table_size: Option<i64>,
    #[serde(default)]
    max_encoder_header_table_size: Option<i64>,
    #[serde(default)]
    max_read_frame_size: Option<i64>,
    #[serde(default)]
    permit_prohibited_ciphers: Option<bool>,
    #[serde(default)]
    idle_timeout: Option<Duration>,
    #[serde(default)]
    read_idle_timeout: Option<Duration>,
    #[serde(default)]
    ping_timeout: Option<Duration>,
    #[serde(default)]
    write_byte_timeout: Option<Duration>,
    #[serde(default)]
    max_upload_buffer_per_connection: Option<i64>,
    #[serde(default)]
    max_upload_buffer_per_stream: Option<i64>,
}

/// Alloy's `GRPCConfig` (accepted, unused).
#[derive(Deserialize)]
#[allow(dead_code)]
struct GrpcBlock {
    #[serde(default)]
    listen_address: Option<String>,
    #[serde(default)]
    listen_port: Option<i64>,
    #[serde(default)]
    conn_limit: Option<i64>,
    #[serde(default)]
    max_connection_age: Option<Duration>,
    #[serde(default)]
    max_connection_age_grace: Option<Duration>,
    #[serde(default)]
    max_connection_idle: Option<Duration>,
    #[serde(default)]
    server_max_recv_msg_size: Option<i64>,
    #[serde(default)]
    server_max_send_msg_size: Option<i64>,
    #[serde(default)]
    server_max_concurrent_streams: Option<i64>,
    #[serde(default)]
    tls: Option<TlsBlock>,
}

/// Arguments that decode but cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentsError {
    #[error("http: listen_port must be between 0 and 65535 (got {0})")]
    ListenPort(i64),
    #[error(
        "http > tls: TLS is not supported by scraper's pyroscope.receive_http; terminate TLS in front of it (a proxy or a sidecar) and listen on a local address"
    )]
    Tls,
    #[error("body_size_limit must be positive")]
    BodySizeLimit,
}

impl TryFrom<RawArguments> for Arguments {
    type Error = ArgumentsError;

    fn try_from(r: RawArguments) -> Result<Self, ArgumentsError> {
        let http = r.http.unwrap_or_default().validate()?;
        if r.body_size_limit == 0 {
            return Err(ArgumentsError::BodySizeLimit);
        }
        Ok(Arguments {
            forward_to: r.forward_to,
            http,
            graceful_shutdown_timeout: r.graceful_shutdown_timeout.get(),
            body_size_limit: r.body_size_limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration as StdDuration;

    use super::*;
    use crate::syntax::decode::from_body;
    use crate::syntax::eval::{Scope, eval_body};
    use crate::syntax::parser::parse_file;

    fn decode(src: &str) -> Result<Arguments, String> {
        let src = format!("forward_to = []\n{src}");
        let (file, diags) = parse_file(&src);
        assert!(diags.is_empty(), "{diags:?}");
        let body = eval_body(&file.body, &Scope::stdlib()).expect("evaluates");
        from_body::<Arguments>(&body).map_err(|d| d[0].message.clone())
    }

    #[test]
    fn defaults_are_alloys() {
        let a = decode("").expect("decodes");
        assert_eq!(
            a.http,
            HttpConfig {
                listen_address: String::new(),
                listen_port: 8080,
                conn_limit: 16384,
                read_timeout: StdDuration::from_secs(30),
                write_timeout: StdDuration::from_secs(30),
                idle_timeout: StdDuration::from_secs(120),
                http2_enabled: false,
            }
        );
        assert_eq!(a.http, HttpConfig::default());
        assert_eq!(a.graceful_shutdown_timeout, StdDuration::from_secs(30));
        assert_eq!(a.body_size_limit, 64 << 20);
        assert_eq!(a.http.bind_address(), "[::]:8080");
    }

    #[test]
    fn an_http_block_overrides_what_it_sets() {
        let a = decode(
            "http {\n listen_address = \"127.0.0.1\"\n listen_port = 9999\n server_read_timeout = \"5s\"\n}\ngraceful_shutdown_timeout = \"1s\"\nbody_size_limit = 1024",
        )
        .expect("decodes");
        assert_eq!(a.http.bind_address(), "127.0.0.1:9999");
        assert_eq!(a.http.read_timeout, StdDuration::from_secs(5));
        assert_eq!(a.http.conn_limit, 16384);
        assert_eq!(a.http.idle_timeout, StdDuration::from_secs(120));
        assert_eq!(a.graceful_shutdown_timeout, StdDuration::from_secs(1));
        assert_eq!(a.body_size_limit, 1024);

        let a = decode("http {\n listen_address = \"::1\"\n listen_port = 0\n conn_limit = -1\n}")
            .expect("decodes");
        assert_eq!(a.http.bind_address(), "[::1]:0");
        assert_eq!(a.http.conn_limit, 0);
    }

    #[test]
    fn every_alloy_argument_is_accepted() {
        let src = r#"
http {
  listen_address = "0.0.0.0"
  listen_port = 4040
  conn_limit = 10
  server_read_timeout = "1s"
  server_write_timeout = "2s"
  server_idle_timeout = "3s"
  http2 {
    enabled = true
    max_handlers = 1
    max_concurrent_streams = 100
    max_decoder_header_table_size = 4096
    max_encoder_header_table_size = 4096
    max_read_frame_size = 0
    permit_prohibited_ciphers = false
    idle_timeout = "1s"
    read_idle_timeout = "1s"
    ping_timeout = "15s"
    write_byte_timeout = "1s"
    max_upload_buffer_per_connection = 0
    max_upload_buffer_per_stream = 0
  }
}
grpc {
  listen_address = "127.0.0.1"
  listen_port = 0
  conn_limit = 0
  max_connection_age = "1h"
  max_connection_age_grace = "1h"
  max_connection_idle = "1h"
  server_max_recv_msg_size = 4194304
  server_max_send_msg_size = 4194304
  server_max_concurrent_streams = 100
  tls {
    cert_file = "/c"
    key_file = "/k"
  }
}
graceful_shutdown_timeout = "5s"
debug_info_upload_timeout = "1m"
"#;
        let a = decode(src).expect("decodes");
        assert!(a.http.http2_enabled);
        assert_eq!(a.http.conn_limit, 10);
        assert_eq!(a.http.write_timeout, StdDuration::from_secs(2));
    }

    #[test]
    fn bad_arguments() {
        let cases = [
            (
                "http {\n listen_port = 70000\n}",
                "listen_port must be between 0 and 65535 (got 70000)",
            ),
            (
                "http {\n listen_port = -1\n}",
                "listen_port must be between 0 and 65535",
            ),
            (
                "http {\n tls {\n  cert_file = \"/c\"\n  key_file = \"/k\"\n }\n}",
                "TLS is not supported",
            ),
            ("body_size_limit = 0", "body_size_limit must be positive"),
            ("http {\n bogus = 1\n}", "bogus"),
            ("listen_port = 1", "listen_port"),
        ];
        for (src, want) in cases {
            let err = decode(src).unwrap_err();
            assert!(err.contains(want), "{src}: {err}");
        }
    }
}
