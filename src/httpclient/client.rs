//! Building the reqwest client and adding per-request headers.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

use super::oauth2::TokenSource;
use super::{HttpClientConfig, ProxyConfig, tls};
use crate::syntax::types::SecretString;

/// Why a client could not be built or a request not be authorised.
#[derive(Debug, thiserror::Error)]
pub enum HttpClientError {
    #[error("building HTTP client: {0}")]
    Build(String),
    #[error("TLS configuration: {0}")]
    Tls(String),
    #[error("proxy configuration: {0}")]
    Proxy(String),
    #[error("invalid header {name:?}: {reason}")]
    Header { name: String, reason: String },
    #[error("unable to read {what} from {path}: {source}")]
    SecretFile {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("oauth2: {0}")]
    OAuth2(String),
}

/// A reqwest client configured from [`HttpClientConfig`], plus what must be added to every
/// request (`http_headers`, authentication). Cheap to share: clone the `Arc` it lives in.
pub struct HttpClient {
    client: reqwest::Client,
    /// The same transport without idle connections: each request opens its own and closes it
    /// after the answer (see [`HttpClient::one_shot`]).
    one_shot: reqwest::Client,
    headers: Vec<(HeaderName, Vec<HeaderValue>)>,
    auth: Auth,
    /// The `User-Agent` reqwest sends, when requests go straight to their host (no proxy):
    /// what a caller speaking HTTP itself must send (see [`HttpClient::direct_user_agent`]).
    direct_user_agent: Option<HeaderValue>,
    follow_redirects: bool,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient").finish_non_exhaustive()
    }
}

/// A secret given inline or read from a file on every use (trimmed, as Prometheus does).
enum Secret {
    Inline(SecretString),
    File(PathBuf),
}

impl Secret {
    fn from_parts(inline: &SecretString, file: &str) -> Option<Secret> {
        if !file.is_empty() {
            Some(Secret::File(PathBuf::from(file)))
        } else if !inline.is_empty() {
            Some(Secret::Inline(inline.clone()))
        } else {
            None
        }
    }

    async fn read(&self, what: &'static str) -> Result<String, HttpClientError> {
        match self {
            Secret::Inline(s) => Ok(s.expose().to_string()),
            Secret::File(path) => match tokio::fs::read_to_string(path).await {
                Ok(text) => Ok(text.trim().to_string()),
                Err(source) => Err(HttpClientError::SecretFile {
                    what,
                    path: path.clone(),
                    source,
                }),
            },
        }
    }
}

pub(super) async fn read_secret(
    inline: &SecretString,
    file: &str,
    what: &'static str,
) -> Result<String, HttpClientError> {
    match Secret::from_parts(inline, file) {
        Some(s) => s.read(what).await,
        None => Ok(String::new()),
    }
}

enum Auth {
    None,
    Basic {
        username: String,
        password: Option<Secret>,
    },
    /// `authorization`, `bearer_token` and `bearer_token_file`: `<scheme> <credentials>`.
    Scheme {
        scheme: String,
        credentials: Option<Secret>,
    },
    OAuth2(Box<TokenSource>),
}

impl HttpClient {
    /// Builds the client. `user_agent` is sent on every request. Fails on unreadable or
    /// invalid TLS material, a bad proxy URL or header, or an unsupported oauth2 grant.
    pub fn new(cfg: &HttpClientConfig, user_agent: &str) -> Result<Self, HttpClientError> {
        // Read and built once (CA and certificate files), shared by both clients.
        let tls = tls::client_config(&cfg.tls_config, cfg.enable_http2)?;
        let build = |pooled: bool| -> Result<reqwest::Client, HttpClientError> {
            let mut builder = transport(
                reqwest::Client::builder().user_agent(user_agent),
                tls.clone(),
                &cfg.proxy,
                cfg.enable_http2,
                cfg.follow_redirects,
            )?;
            if !pooled {
                builder = builder.pool_max_idle_per_host(0);
            }
            if cfg.http2_prior_knowledge {
                builder = builder.http2_prior_knowledge();
            }
            builder
                .build()
                .map_err(|e| HttpClientError::Build(e.to_string()))
        };
        let client = build(true)?;
        let one_shot = build(false)?;
        let direct_user_agent = if plain_http_direct(&cfg.proxy, |name| std::env::var(name).ok()) {
            Some(
                HeaderValue::from_str(user_agent)
                    .map_err(|e| HttpClientError::Build(e.to_string()))?,
            )
        } else {
            None
        };

        let mut headers = Vec::new();
        for (name, values) in &cfg.http_headers {
            let header = header_name(name)?;
            let values = values
                .iter()
                .map(|v| sensitive_value(name, v.expose()))
                .collect::<Result<Vec<_>, _>>()?;
            headers.push((header, values));
        }

        let auth = if let Some(b) = &cfg.basic_auth {
            Auth::Basic {
                username: b.username.clone(),
                password: Secret::from_parts(&b.password, &b.password_file),
            }
        } else if let Some(a) = &cfg.authorization {
            Auth::Scheme {
                scheme: a.scheme().to_string(),
                credentials: Secret::from_parts(&a.credentials, &a.credentials_file),
            }
        } else if !cfg.bearer_token.is_empty() || !cfg.bearer_token_file.is_empty() {
            Auth::Scheme {
                scheme: "Bearer".to_string(),
                credentials: Secret::from_parts(&cfg.bearer_token, &cfg.bearer_token_file),
            }
        } else if let Some(o) = &cfg.oauth2 {
            Auth::OAuth2(Box::new(TokenSource::new(o, user_agent)?))
        } else {
            Auth::None
        };

        Ok(HttpClient {
            client,
            one_shot,
            headers,
            auth,
            direct_user_agent,
            follow_redirects: cfg.follow_redirects,
        })
    }

    /// The underlying client (connection pool, TLS, proxy, redirects).
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// A client with the same settings that keeps no idle connection: for requests that are
    /// rare next to the connection's cost in memory and file descriptors (a short scrape every
    /// 15 s), while [`client`](Self::client) keeps connections for those that reuse them.
    pub fn one_shot(&self) -> &reqwest::Client {
        &self.one_shot
    }

    /// The `User-Agent` to send when no proxy is configured, so that a request may be made
    /// without this client on a connection of the caller's own (plain HTTP only: TLS settings
    /// live in the client). Besides it, reqwest adds `Accept: */*` and `Host` where a request
    /// lacks them.
    pub fn direct_user_agent(&self) -> Option<&HeaderValue> {
        self.direct_user_agent.as_ref()
    }

    /// Whether redirects are followed (`follow_redirects`): a caller speaking HTTP itself
    /// hands a 3xx to this client when they are.
    pub fn follows_redirects(&self) -> bool {
        self.follow_redirects
    }
    /// Adds `http_headers` (replacing headers of the same name) and the auth header (unless
    /// `headers` already has an `Authorization`, as in Prometheus) to one request's headers.
    /// Secret files are read here, so a rotated token is used from the next request on.
    pub async fn apply(&self, headers: &mut HeaderMap) -> Result<(), HttpClientError> {
        for (name, values) in &self.headers {
            headers.remove(name);
            for v in values {
                headers.append(name.clone(), v.clone());
            }
        }
        if headers.contains_key(AUTHORIZATION) {
            return Ok(());
        }
        let value = match &self.auth {
            Auth::None => return Ok(()),
            Auth::Basic { username, password } => {
                let password = match password {
                    Some(p) => p.read("basic_auth password").await?,
                    None => String::new(),
                };
                let token = base64::engine::general_purpose::STANDARD
                    .encode(format!("{username}:{password}"));
                sensitive_value("Authorization", &format!("Basic {token}"))?
            }
            Auth::Scheme {
                scheme,
                credentials,
            } => {
                let credentials = match credentials {
                    Some(c) => c.read("authorization credentials").await?,
                    None => String::new(),
                };
                sensitive_value("Authorization", &format!("{scheme} {credentials}"))?
            }
            Auth::OAuth2(source) => source.header().await?,
        };
        headers.insert(AUTHORIZATION, value);
        Ok(())
    }
}

/// TLS, proxy, HTTP version and redirect settings on a client builder (shared with the
/// oauth2 token client, which has its own `tls_config` and proxy).
pub(super) fn transport(
    builder: reqwest::ClientBuilder,
    tls: rustls::ClientConfig,
    proxy: &ProxyConfig,
    http2: bool,
    follow_redirects: bool,
) -> Result<reqwest::ClientBuilder, HttpClientError> {
    let mut builder = builder
        .tls_backend_preconfigured(tls)
        .redirect(if follow_redirects {
            // Go's http.Client stops after 10 redirects.
            reqwest::redirect::Policy::limited(10)
        } else {
            reqwest::redirect::Policy::none()
        })
        // Go's default transport keeps idle connections 90 s.
        .pool_idle_timeout(Duration::from_secs(90));
    if http2 {
        // A dead HTTP/2 connection (a peer gone silent without a FIN) would otherwise stay in
        // the pool and take every later request down with it, each one timing out in turn:
        // ping after a quiet minute and drop the connection if no answer comes in 15 s, as
        // Prometheus' client does (ReadIdleTimeout = 1m, Go's PingTimeout = 15 s).
        builder = builder
            .http2_keep_alive_interval(Duration::from_secs(60))
            .http2_keep_alive_timeout(Duration::from_secs(15))
            .http2_keep_alive_while_idle(true);
    } else {
        builder = builder.http1_only();
    }
    // Never the process environment unless asked (reqwest's default is to use it).
    builder = builder.no_proxy();
    for p in proxies(proxy)? {
        builder = builder.proxy(p);
    }
    Ok(builder)
}

/// Whether plain-HTTP requests go straight to their host: no `proxy_url`, and no `HTTP_PROXY`
/// taken from the environment (`env` reads a variable).
fn plain_http_direct(cfg: &ProxyConfig, env: impl Fn(&str) -> Option<String>) -> bool {
    if !cfg.proxy_url.is_empty() {
        return false;
    }
    !cfg.proxy_from_environment
        || ["HTTP_PROXY", "http_proxy"]
            .iter()
            .all(|name| env(name).is_none_or(|v| v.is_empty()))
}

fn proxies(cfg: &ProxyConfig) -> Result<Vec<reqwest::Proxy>, HttpClientError> {
    let mut connect_headers = HeaderMap::new();
    for (name, values) in &cfg.proxy_connect_header {
        let header = header_name(name)?;
        for v in values {
            connect_headers.append(header.clone(), sensitive_value(name, v.expose())?);
        }
    }
    let with_headers = |p: reqwest::Proxy| {
        if connect_headers.is_empty() {
            p
        } else {
            p.headers(connect_headers.clone())
        }
    };
    let bad = |e: reqwest::Error| HttpClientError::Proxy(e.to_string());
    if cfg.proxy_from_environment {
        let env = |upper: &str, lower: &str| {
            std::env::var(upper)
                .ok()
                .or_else(|| std::env::var(lower).ok())
                .filter(|v| !v.is_empty())
        };
        let mut out = Vec::new();
        if let Some(url) = env("HTTP_PROXY", "http_proxy") {
            out.push(with_headers(
                reqwest::Proxy::http(url)
                    .map_err(bad)?
                    .no_proxy(reqwest::NoProxy::from_env()),
            ));
        }
        if let Some(url) = env("HTTPS_PROXY", "https_proxy") {
            out.push(with_headers(
                reqwest::Proxy::https(url)
                    .map_err(bad)?
                    .no_proxy(reqwest::NoProxy::from_env()),
            ));
        }
        return Ok(out);
    }
    if cfg.proxy_url.is_empty() {
        return Ok(Vec::new());
    }
    let mut p = reqwest::Proxy::all(cfg.proxy_url.as_str()).map_err(bad)?;
    if !cfg.no_proxy.is_empty() {
        p = p.no_proxy(reqwest::NoProxy::from_string(&cfg.no_proxy));
    }
    Ok(vec![with_headers(p)])
}

fn header_name(name: &str) -> Result<HeaderName, HttpClientError> {
    HeaderName::from_bytes(name.as_bytes()).map_err(|e| HttpClientError::Header {
        name: name.to_string(),
        reason: e.to_string(),
    })
}

/// A header value that is never printed (reqwest and hyper honour the flag in Debug output).
fn sensitive_value(name: &str, value: &str) -> Result<HeaderValue, HttpClientError> {
    let mut v = HeaderValue::from_str(value).map_err(|e| HttpClientError::Header {
        name: name.to_string(),
        reason: e.to_string(),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::httpclient::{Authorization, BasicAuth};

    /// A proxy turns the hand-written plain-HTTP path off; the environment counts only when
    /// `proxy_from_environment` asks for it, and only its HTTP proxy.
    #[test]
    fn direct_only_without_proxy() {
        let direct = HttpClient::new(&HttpClientConfig::default(), "t/1").expect("client");
        assert_eq!(
            direct.direct_user_agent(),
            Some(&HeaderValue::from_static("t/1"))
        );
        let mut cfg = HttpClientConfig::default();
        cfg.proxy.proxy_url = "http://10.0.0.9:3128".into();
        let proxied = HttpClient::new(&cfg, "t/1").expect("client");
        assert_eq!(proxied.direct_user_agent(), None);

        /// (proxy_from_environment, environment, direct)
        type Case = (bool, &'static [(&'static str, &'static str)], bool);
        let table: &[Case] = &[
            (false, &[("HTTP_PROXY", "http://p:1")], true),
            (true, &[], true),
            (true, &[("HTTP_PROXY", "http://p:1")], false),
            (true, &[("http_proxy", "http://p:1")], false),
            (true, &[("HTTP_PROXY", "")], true),
            (true, &[("HTTPS_PROXY", "http://p:1")], true),
        ];
        for (from_env, vars, want) in table {
            let cfg = ProxyConfig {
                proxy_from_environment: *from_env,
                ..ProxyConfig::default()
            };
            let env = |name: &str| {
                vars.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            };
            assert_eq!(plain_http_direct(&cfg, env), *want, "{from_env} {vars:?}");
        }
    }

    fn auth_header(cfg: &HttpClientConfig, preset: Option<&str>) -> Option<String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let client = HttpClient::new(cfg, "test/1").expect("client");
            let mut h = HeaderMap::new();
            if let Some(p) = preset {
                h.insert(AUTHORIZATION, HeaderValue::from_str(p).expect("value"));
            }
            client.apply(&mut h).await.expect("apply");
            h.get(AUTHORIZATION)
                .map(|v| v.to_str().expect("ascii").to_string())
        })
    }

    #[test]
    fn auth_headers() {
        let mut cfg = HttpClientConfig::default();
        assert_eq!(auth_header(&cfg, None), None);
        cfg.basic_auth = Some(BasicAuth {
            username: "user".into(),
            password: SecretString::new("pass"),
            password_file: String::new(),
        });
        assert_eq!(
            auth_header(&cfg, None).as_deref(),
            Some("Basic dXNlcjpwYXNz")
        );
        // A header the caller set wins.
        assert_eq!(
            auth_header(&cfg, Some("Bearer mine")).as_deref(),
            Some("Bearer mine")
        );
        cfg.basic_auth = None;
        cfg.bearer_token = SecretString::new("tok");
        assert_eq!(auth_header(&cfg, None).as_deref(), Some("Bearer tok"));
        cfg.bearer_token = SecretString::default();
        cfg.authorization = Some(Authorization {
            kind: " Token ".into(),
            credentials: SecretString::new("abc"),
            credentials_file: String::new(),
        });
        assert_eq!(auth_header(&cfg, None).as_deref(), Some("Token abc"));
    }

    #[test]
    fn secret_files_are_read_per_request() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("token");
        std::fs::write(&file, "first\n").expect("write");
        let cfg = HttpClientConfig {
            bearer_token_file: file.display().to_string(),
            ..HttpClientConfig::default()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let client = HttpClient::new(&cfg, "test/1").expect("client");
            let mut h = HeaderMap::new();
            client.apply(&mut h).await.expect("apply");
            assert_eq!(h[AUTHORIZATION], "Bearer first");
            std::fs::write(&file, "second").expect("write");
            let mut h = HeaderMap::new();
            client.apply(&mut h).await.expect("apply");
            assert_eq!(h[AUTHORIZATION], "Bearer second");
            std::fs::remove_file(&file).expect("rm");
            let mut h = HeaderMap::new();
            let err = client.apply(&mut h).await.expect_err("missing file");
            assert!(
                err.to_string()
                    .starts_with("unable to read authorization credentials from"),
                "{err}"
            );
        });
    }

    #[test]
    fn http_headers_replace_and_repeat() {
        let mut cfg = HttpClientConfig::default();
        cfg.http_headers.insert(
            "X-Multi".into(),
            vec![SecretString::new("a"), SecretString::new("b")],
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let client = HttpClient::new(&cfg, "test/1").expect("client");
            let mut h = HeaderMap::new();
            h.insert("x-multi", HeaderValue::from_static("old"));
            client.apply(&mut h).await.expect("apply");
            let got: Vec<_> = h.get_all("x-multi").iter().collect();
            assert_eq!(got, ["a", "b"]);
            assert!(got[0].is_sensitive());
        });
    }

    #[test]
    fn bad_material_fails_the_build() {
        let mut cfg = HttpClientConfig::default();
        cfg.tls_config.ca_file = "/nonexistent/ca.pem".into();
        let err = HttpClient::new(&cfg, "t").expect_err("no CA file");
        assert!(err.to_string().contains("unable to read CA file"), "{err}");
        let mut cfg = HttpClientConfig::default();
        cfg.tls_config.ca_pem = "not a pem".into();
        assert!(HttpClient::new(&cfg, "t").is_err());
        let mut cfg = HttpClientConfig::default();
        cfg.proxy.proxy_url = "::not a url::".into();
        assert!(HttpClient::new(&cfg, "t").is_err());
    }
}
