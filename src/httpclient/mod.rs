//! The HTTP client every component that talks HTTP shares (`pyroscope.write`, `pyroscope.scrape`,
//! later discovery): Alloy's HTTP client arguments, their validation, and a reqwest client built
//! from them.
//!
//! # Arguments
//!
//! [`HttpClientConfig`] holds Alloy's `HTTPClientConfig` fields, which Alloy "squashes" into the
//! enclosing block: `bearer_token`, `bearer_token_file`, `proxy_url`, `no_proxy`,
//! `proxy_from_environment`, `proxy_connect_header`, `follow_redirects` (default true),
//! `enable_http2` (default true), `http_headers`, and the blocks `basic_auth`, `authorization`,
//! `oauth2` and `tls_config`.
//!
//! To accept them in a block, wrap the block's own arguments struct in [`WithHttpClient`]:
//!
//! ```
//! use scraper::httpclient::WithHttpClient;
//!
//! #[derive(serde::Deserialize)]
//! struct EndpointOptions {
//!     url: String,
//! }
//!
//! #[derive(serde::Deserialize)]
//! struct Arguments {
//!     // `endpoint { url = "...", bearer_token = "...", tls_config { ... } }`
//!     endpoint: Vec<WithHttpClient<EndpointOptions>>,
//! }
//! ```
//!
//! (`pyroscope.scrape` has them at the top level: `type Arguments = WithHttpClient<ScrapeArgs>`.)
//!
//! (`#[serde(flatten)]` does not work with our decoder: serde then decodes the block as a map,
//! which loses the unknown-attribute check and nested blocks.) `WithHttpClient<T>` asks the
//! decoder for a struct whose field list is `T`'s plus the HTTP client's, so unknown attributes
//! are still reported; it hands `T`'s fields to `T`'s own `Deserialize` and keeps the others.
//! After decoding it runs [`HttpClientConfig::validate`], so a bad combination (two auth methods,
//! a client certificate without its key...) fails decoding with Alloy's message, in
//! `scraper check` too.
//!
//! # Client
//!
//! [`HttpClient::new`] builds a reqwest client (rustls with aws-lc-rs: CA, client certificate,
//! `server_name`, `insecure_skip_verify`, `min_version`; proxy; redirects; HTTP/2 via ALPN) and
//! [`HttpClient::apply`] adds `http_headers` and the auth header to one request's headers.
//! Secrets in files (`password_file`, `credentials_file`, `bearer_token_file`) are read again for
//! every request, as in Prometheus, so rotated tokens are picked up.

pub mod body;
mod client;
pub mod kube;
mod oauth2;
mod tls;

use std::any::TypeId;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor,
};

pub use client::{HttpClient, HttpClientError};

use crate::syntax::types::SecretString;

/// What every request we make says it is: scrapes, pushes, queries and the Kubernetes API.
pub const USER_AGENT: &str = concat!("scraper/", env!("CARGO_PKG_VERSION"));

/// `basic_auth { username, password | password_file }`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct BasicAuth {
    pub username: String,
    pub password: SecretString,
    pub password_file: String,
}

/// `authorization { type, credentials | credentials_file }`; `type` defaults to `Bearer`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Authorization {
    #[serde(rename = "type")]
    pub kind: String,
    pub credentials: SecretString,
    pub credentials_file: String,
}

impl Authorization {
    /// The scheme sent: `type` trimmed, `Bearer` when empty.
    pub fn scheme(&self) -> &str {
        match self.kind.trim() {
            "" => "Bearer",
            t => t,
        }
    }
}

/// `tls_config { ... }`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TlsConfig {
    pub ca_pem: String,
    pub ca_file: String,
    pub cert_pem: String,
    pub cert_file: String,
    pub key_pem: SecretString,
    pub key_file: String,
    pub server_name: String,
    pub insecure_skip_verify: bool,
    /// `TLS10`, `TLS11`, `TLS12` or `TLS13`; empty for the library default.
    pub min_version: String,
}

/// The proxy attributes, shared by the client and its `oauth2` block.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ProxyConfig {
    pub proxy_url: String,
    pub no_proxy: String,
    pub proxy_from_environment: bool,
    pub proxy_connect_header: BTreeMap<String, Vec<SecretString>>,
}

pub const GRANT_CLIENT_CREDENTIALS: &str = "client_credentials";
pub const GRANT_JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// `oauth2 { ... }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default)]
pub struct OAuth2Config {
    pub client_id: String,
    pub client_secret: SecretString,
    pub client_secret_file: String,
    pub client_certificate_key_id: String,
    pub client_certificate_key: SecretString,
    pub client_certificate_key_file: String,
    pub grant_type: String,
    pub signature_algorithm: String,
    pub iss: String,
    pub audience: String,
    pub claims: BTreeMap<String, String>,
    pub scopes: Vec<String>,
    pub token_url: String,
    pub endpoint_params: BTreeMap<String, String>,
    pub proxy_url: String,
    pub no_proxy: String,
    pub proxy_from_environment: bool,
    pub proxy_connect_header: BTreeMap<String, Vec<SecretString>>,
    pub tls_config: Option<TlsConfig>,
}

impl Default for OAuth2Config {
    fn default() -> Self {
        OAuth2Config {
            client_id: String::new(),
            client_secret: SecretString::default(),
            client_secret_file: String::new(),
            client_certificate_key_id: String::new(),
            client_certificate_key: SecretString::default(),
            client_certificate_key_file: String::new(),
            grant_type: GRANT_CLIENT_CREDENTIALS.to_string(),
            signature_algorithm: "RS256".to_string(),
            iss: String::new(),
            audience: String::new(),
            claims: BTreeMap::new(),
            scopes: Vec::new(),
            token_url: String::new(),
            endpoint_params: BTreeMap::new(),
            proxy_url: String::new(),
            no_proxy: String::new(),
            proxy_from_environment: false,
            proxy_connect_header: BTreeMap::new(),
            tls_config: None,
        }
    }
}

impl OAuth2Config {
    pub fn proxy(&self) -> ProxyConfig {
        ProxyConfig {
            proxy_url: self.proxy_url.clone(),
            no_proxy: self.no_proxy.clone(),
            proxy_from_environment: self.proxy_from_environment,
            proxy_connect_header: self.proxy_connect_header.clone(),
        }
    }
}

/// Alloy's HTTP client arguments. See the module docs for how a block embeds them.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpClientConfig {
    pub basic_auth: Option<BasicAuth>,
    pub authorization: Option<Authorization>,
    pub oauth2: Option<OAuth2Config>,
    pub bearer_token: SecretString,
    pub bearer_token_file: String,
    pub proxy: ProxyConfig,
    pub tls_config: TlsConfig,
    pub follow_redirects: bool,
    pub enable_http2: bool,
    /// Extra headers; every value is sent (a list gives repeated headers).
    pub http_headers: BTreeMap<String, Vec<SecretString>>,
    /// Speak HTTP/2 from the first byte, also over plain `http://` (h2c): gRPC clients
    /// (`otelcol.exporter.otlp`). Not a config attribute.
    pub http2_prior_knowledge: bool,
}

impl Default for HttpClientConfig {
    fn default() -> Self {
        HttpClientConfig {
            basic_auth: None,
            authorization: None,
            oauth2: None,
            bearer_token: SecretString::default(),
            bearer_token_file: String::new(),
            proxy: ProxyConfig::default(),
            tls_config: TlsConfig::default(),
            follow_redirects: true,
            enable_http2: true,
            http_headers: BTreeMap::new(),
            http2_prior_knowledge: false,
        }
    }
}

/// Attribute and block names the HTTP client adds to a block.
pub const FIELDS: &[&str] = &[
    "basic_auth",
    "authorization",
    "oauth2",
    "bearer_token",
    "bearer_token_file",
    "proxy_url",
    "no_proxy",
    "proxy_from_environment",
    "proxy_connect_header",
    "tls_config",
    "follow_redirects",
    "enable_http2",
    "http_headers",
];

/// Headers the client sets itself or that change the connection (Prometheus' list).
const RESERVED_HEADERS: &[&str] = &[
    "authorization",
    "host",
    "content-encoding",
    "content-length",
    "content-type",
    "user-agent",
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "www-authenticate",
    "accept-encoding",
    "x-prometheus-remote-write-version",
    "x-prometheus-remote-read-version",
    "x-prometheus-scrape-timeout-seconds",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
];

impl HttpClientConfig {
    /// Alloy's validation, blocks first (Alloy validates them as it decodes them), with Alloy's
    /// messages.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(b) = &self.basic_auth
            && !b.password.is_empty()
            && !b.password_file.is_empty()
        {
            return Err(
                "at most one of basic_auth password & password_file must be configured".into(),
            );
        }
        if let Some(a) = &self.authorization {
            if !a.credentials.is_empty() && !a.credentials_file.is_empty() {
                return Err(
                    "at most one of authorization credentials & credentials_file must be configured"
                        .into(),
                );
            }
            if a.scheme().eq_ignore_ascii_case("basic") {
                return Err(
                    r#"authorization type cannot be set to "basic", use "basic_auth" block instead"#
                        .into(),
                );
            }
        }
        if let Some(o) = &self.oauth2 {
            validate_oauth2(o)?;
        }
        validate_tls(&self.tls_config)?;

        let auth_count = [
            self.basic_auth.is_some(),
            self.authorization.is_some(),
            self.oauth2.is_some(),
            !self.bearer_token.is_empty(),
            !self.bearer_token_file.is_empty(),
        ]
        .iter()
        .filter(|set| **set)
        .count();
        if auth_count > 1 {
            return Err("at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file must be configured".into());
        }
        for name in self.http_headers.keys() {
            if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                return Err(format!(
                    "setting header {:?} is not allowed",
                    canonical_header_key(name)
                ));
            }
        }
        validate_proxy(&self.proxy)
    }
}

fn validate_oauth2(o: &OAuth2Config) -> Result<(), String> {
    if o.client_id.is_empty() {
        return Err("oauth2 client_id must be configured".into());
    }
    if o.token_url.is_empty() {
        return Err("oauth2 token_url must be configured".into());
    }
    match o.grant_type.as_str() {
        GRANT_JWT_BEARER => {
            if o.client_certificate_key.is_empty() && o.client_certificate_key_file.is_empty() {
                return Err("either oauth2 client_certificate_key or client_certificate_key_file must be configured".into());
            }
            if !o.client_certificate_key.is_empty() && !o.client_certificate_key_file.is_empty() {
                return Err("at most one of oauth2 client_certificate_key and client_certificate_key_file must be configured".into());
            }
        }
        GRANT_CLIENT_CREDENTIALS => {
            if o.client_secret.is_empty() && o.client_secret_file.is_empty() {
                return Err(
                    "either oauth2 client_secret or client_secret_file must be configured".into(),
                );
            }
            if !o.client_secret.is_empty() && !o.client_secret_file.is_empty() {
                return Err(
                    "at most one of oauth2 client_secret & client_secret_file must be configured"
                        .into(),
                );
            }
        }
        other => return Err(format!("unsupported oauth2 grant_type {other:?}")),
    }
    if let Some(t) = &o.tls_config {
        validate_tls(t)?;
    }
    validate_proxy(&o.proxy())
}

fn validate_tls(t: &TlsConfig) -> Result<(), String> {
    if !t.ca_pem.is_empty() && !t.ca_file.is_empty() {
        return Err("at most one of ca_pem and ca_file must be configured".into());
    }
    if !t.cert_pem.is_empty() && !t.cert_file.is_empty() {
        return Err("at most one of cert_pem and cert_file must be configured".into());
    }
    if !t.key_pem.is_empty() && !t.key_file.is_empty() {
        return Err("at most one of key_pem and key_file must be configured".into());
    }
    let cert = !t.cert_pem.is_empty() || !t.cert_file.is_empty();
    let key = !t.key_pem.is_empty() || !t.key_file.is_empty();
    if cert && !key {
        return Err("exactly one of key_pem or key_file must be configured when a client certificate is configured".into());
    }
    if key && !cert {
        return Err("exactly one of cert_pem or cert_file must be configured when a client key is configured".into());
    }
    if !matches!(
        t.min_version.as_str(),
        "" | "TLS10" | "TLS11" | "TLS12" | "TLS13"
    ) {
        return Err(format!("unknown TLS version: {}", t.min_version));
    }
    Ok(())
}

fn validate_proxy(p: &ProxyConfig) -> Result<(), String> {
    let has_url = !p.proxy_url.is_empty();
    if !p.proxy_connect_header.is_empty() && !p.proxy_from_environment && !has_url {
        return Err("if proxy_connect_header is configured, proxy_url or proxy_from_environment must also be configured".into());
    }
    if p.proxy_from_environment && has_url {
        return Err(
            "if proxy_from_environment is configured, proxy_url must not be configured".into(),
        );
    }
    if p.proxy_from_environment && !p.no_proxy.is_empty() {
        return Err(
            "if proxy_from_environment is configured, no_proxy must not be configured".into(),
        );
    }
    if !has_url && !p.no_proxy.is_empty() {
        return Err("if no_proxy is configured, proxy_url must also be configured".into());
    }
    Ok(())
}

/// Go's `textproto.CanonicalMIMEHeaderKey`: `x-scope-orgid` -> `X-Scope-Orgid`.
pub(crate) fn canonical_header_key(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        if upper {
            out.push(c.to_ascii_uppercase());
        } else {
            out.push(c.to_ascii_lowercase());
        }
        upper = c == '-';
    }
    out
}

// ---------------------------------------------------------------------------------------------
// WithHttpClient
// ---------------------------------------------------------------------------------------------

/// A block's own arguments `T` plus the HTTP client arguments, decoded from the same block
/// (Alloy's `squash`). Derefs to `T`.
#[derive(Clone, Debug, PartialEq)]
pub struct WithHttpClient<T> {
    pub inner: T,
    pub http: HttpClientConfig,
}

impl<T> std::ops::Deref for WithHttpClient<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

/// The struct name and field list `T` asks a deserializer for, plus [`FIELDS`]; computed once
/// per type by letting `T` describe itself to a probing deserializer.
fn combined_fields<T: DeserializeOwned + 'static>() -> (&'static str, &'static [&'static str]) {
    type Cache = Mutex<HashMap<TypeId, (&'static str, &'static [&'static str])>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = crate::sync::lock(cache);
    *cache.entry(TypeId::of::<T>()).or_insert_with(|| {
        let (name, own) = match T::deserialize(Probe) {
            Err(ProbeResult::Struct(name, fields)) => (name, fields),
            _ => ("", &[][..]),
        };
        let mut all: Vec<&'static str> = own.to_vec();
        all.extend(FIELDS.iter().filter(|f| !own.contains(f)));
        // Leaked once per type: the field list must be 'static for serde.
        (name, Vec::leak(all))
    })
}

impl<'de, T: DeserializeOwned + 'static> Deserialize<'de> for WithHttpClient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (name, fields) = combined_fields::<T>();
        d.deserialize_struct(name, fields, WithVisitor(PhantomData))
    }
}

struct WithVisitor<T>(PhantomData<T>);

impl<'de, T: DeserializeOwned + 'static> Visitor<'de> for WithVisitor<T> {
    type Value = WithHttpClient<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a block")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let mut http = HttpClientConfig::default();
        let inner = T::deserialize(de::value::MapAccessDeserializer::new(Split {
            map,
            http: &mut http,
        }))?;
        http.validate().map_err(de::Error::custom)?;
        Ok(WithHttpClient { inner, http })
    }
}

/// A map access that consumes the HTTP client's entries itself and shows `T` only the rest.
struct Split<'a, A> {
    map: A,
    http: &'a mut HttpClientConfig,
}

impl<'de, A: MapAccess<'de>> Split<'_, A> {
    /// Decodes the value of HTTP client field `key`.
    fn take(&mut self, key: &str) -> Result<(), A::Error> {
        let h = &mut *self.http;
        let m = &mut self.map;
        match key {
            "basic_auth" => h.basic_auth = m.next_value()?,
            "authorization" => h.authorization = m.next_value()?,
            "oauth2" => h.oauth2 = m.next_value()?,
            "bearer_token" => h.bearer_token = m.next_value()?,
            "bearer_token_file" => h.bearer_token_file = m.next_value()?,
            "proxy_url" => h.proxy.proxy_url = m.next_value()?,
            "no_proxy" => h.proxy.no_proxy = m.next_value()?,
            "proxy_from_environment" => h.proxy.proxy_from_environment = m.next_value()?,
            "proxy_connect_header" => h.proxy.proxy_connect_header = m.next_value()?,
            "tls_config" => h.tls_config = m.next_value()?,
            "follow_redirects" => h.follow_redirects = m.next_value()?,
            "enable_http2" => h.enable_http2 = m.next_value()?,
            "http_headers" => h.http_headers = m.next_value()?,
            _ => unreachable!("not an HTTP client field: {key}"),
        }
        Ok(())
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Split<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<String>()? else {
                return Ok(None);
            };
            if FIELDS.contains(&key.as_str()) {
                self.take(&key)?;
                continue;
            }
            let key: de::value::StringDeserializer<A::Error> = key.into_deserializer();
            return seed.deserialize(key).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A deserializer that only records what `deserialize_struct` was asked for.
struct Probe;

#[derive(Debug)]
enum ProbeResult {
    Struct(&'static str, &'static [&'static str]),
    Other(String),
}

impl fmt::Display for ProbeResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeResult::Struct(name, _) => write!(f, "struct {name}"),
            ProbeResult::Other(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for ProbeResult {}

impl de::Error for ProbeResult {
    fn custom<M: fmt::Display>(msg: M) -> Self {
        ProbeResult::Other(msg.to_string())
    }
}

impl<'de> Deserializer<'de> for Probe {
    type Error = ProbeResult;

    fn deserialize_any<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, ProbeResult> {
        Err(ProbeResult::Other("not a struct".into()))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        _v: V,
    ) -> Result<V::Value, ProbeResult> {
        Err(ProbeResult::Struct(name, fields))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::ast::Span;
    use crate::syntax::decode::from_body_at;
    use crate::syntax::eval::{Scope, eval_body};
    use crate::syntax::parser::parse_file;

    #[derive(Debug, PartialEq, Deserialize)]
    struct Endpoint {
        url: String,
        #[serde(default)]
        name: String,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Args {
        #[serde(default)]
        endpoint: Vec<WithHttpClient<Endpoint>>,
    }

    fn decode(src: &str) -> Result<Args, Vec<String>> {
        let (file, diags) = parse_file(src);
        assert!(diags.is_empty(), "{diags:?}");
        let body = eval_body(&file.body, &Scope::stdlib()).expect("eval");
        from_body_at::<Args>(&body, Span::new(0, 0))
            .map_err(|ds| ds.into_iter().map(|d| d.message).collect())
    }

    #[test]
    fn decodes_own_and_http_fields_from_one_block() {
        let args = decode(
            r#"
endpoint {
  url = "http://a"
  bearer_token = "tok"
  enable_http2 = false
  http_headers = { "X-Extra" = ["1", "2"] }
  tls_config {
    server_name = "pyroscope"
    insecure_skip_verify = true
  }
  name = "a"
}
endpoint {
  url = "http://b"
  basic_auth {
    username = "u"
    password = "p"
  }
}
"#,
        )
        .expect("decode");
        let a = &args.endpoint[0];
        assert_eq!(a.url, "http://a");
        assert_eq!(a.name, "a");
        assert_eq!(a.http.bearer_token.expose(), "tok");
        assert!(!a.http.enable_http2);
        assert!(a.http.follow_redirects);
        assert_eq!(a.http.http_headers["X-Extra"].len(), 2);
        assert_eq!(a.http.tls_config.server_name, "pyroscope");
        assert!(a.http.tls_config.insecure_skip_verify);
        let b = &args.endpoint[1];
        assert_eq!(
            b.http.basic_auth.as_ref().map(|b| b.username.as_str()),
            Some("u")
        );
        assert_eq!(
            b.http,
            HttpClientConfig {
                basic_auth: b.http.basic_auth.clone(),
                ..HttpClientConfig::default()
            }
        );
    }

    #[test]
    fn works_as_a_components_top_level_arguments() {
        let (file, diags) = parse_file("url = \"http://a\"\nfollow_redirects = false\n");
        assert!(diags.is_empty(), "{diags:?}");
        let body = eval_body(&file.body, &Scope::stdlib()).expect("eval");
        let args: WithHttpClient<Endpoint> = from_body_at(&body, Span::new(0, 0)).expect("decode");
        assert_eq!(args.url, "http://a");
        assert!(!args.http.follow_redirects);
    }

    #[test]
    fn unknown_and_missing_attributes_are_still_errors() {
        let errs = decode("endpoint {\n  url = \"x\"\n  bogus = 1\n}\n").unwrap_err();
        assert_eq!(errs, [r#"unrecognized attribute name "bogus""#]);
        let errs = decode("endpoint {\n  bearer_token = \"x\"\n}\n").unwrap_err();
        assert_eq!(errs, [r#"missing required attribute "url""#]);
        let errs = decode("endpoint {\n  url = \"x\"\n  nope {}\n}\n").unwrap_err();
        assert_eq!(errs, [r#"unrecognized block name "nope""#]);
    }

    #[test]
    fn alloy_validation_messages() {
        let cases: &[(&str, &str)] = &[
            (
                "bearer_token = \"a\"\n  basic_auth {\n    username = \"u\"\n  }",
                "at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file must be configured",
            ),
            (
                "bearer_token = \"a\"\n  bearer_token_file = \"/f\"",
                "at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file must be configured",
            ),
            (
                "basic_auth {\n    password = \"p\"\n    password_file = \"/f\"\n  }",
                "at most one of basic_auth password & password_file must be configured",
            ),
            (
                "authorization {\n    type = \"Basic\"\n    credentials = \"c\"\n  }",
                r#"authorization type cannot be set to "basic", use "basic_auth" block instead"#,
            ),
            (
                "authorization {\n    credentials = \"c\"\n    credentials_file = \"/f\"\n  }",
                "at most one of authorization credentials & credentials_file must be configured",
            ),
            (
                "tls_config {\n    cert_pem = \"x\"\n  }",
                "exactly one of key_pem or key_file must be configured when a client certificate is configured",
            ),
            (
                "tls_config {\n    key_file = \"x\"\n  }",
                "exactly one of cert_pem or cert_file must be configured when a client key is configured",
            ),
            (
                "tls_config {\n    ca_pem = \"x\"\n    ca_file = \"y\"\n  }",
                "at most one of ca_pem and ca_file must be configured",
            ),
            (
                "tls_config {\n    min_version = \"TLS9\"\n  }",
                "unknown TLS version: TLS9",
            ),
            (
                "no_proxy = \"a\"",
                "if no_proxy is configured, proxy_url must also be configured",
            ),
            (
                "proxy_from_environment = true\n  proxy_url = \"http://p\"",
                "if proxy_from_environment is configured, proxy_url must not be configured",
            ),
            (
                "proxy_connect_header = { \"A\" = [\"b\"] }",
                "if proxy_connect_header is configured, proxy_url or proxy_from_environment must also be configured",
            ),
            (
                "http_headers = { \"user-agent\" = [\"x\"] }",
                r#"setting header "User-Agent" is not allowed"#,
            ),
            (
                "oauth2 {\n    token_url = \"http://t\"\n  }",
                "oauth2 client_id must be configured",
            ),
            (
                "oauth2 {\n    client_id = \"c\"\n    token_url = \"http://t\"\n  }",
                "either oauth2 client_secret or client_secret_file must be configured",
            ),
            (
                "oauth2 {\n    client_id = \"c\"\n    client_secret = \"s\"\n    token_url = \"http://t\"\n    grant_type = \"password\"\n  }",
                r#"unsupported oauth2 grant_type "password""#,
            ),
        ];
        for (body, want) in cases {
            let src = format!("endpoint {{\n  url = \"http://x\"\n  {body}\n}}\n");
            assert_eq!(decode(&src).unwrap_err(), [*want], "{src}");
        }
    }

    #[test]
    fn canonical_keys() {
        assert_eq!(canonical_header_key("x-scope-orgid"), "X-Scope-Orgid");
        assert_eq!(canonical_header_key("USER-AGENT"), "User-Agent");
    }
}
