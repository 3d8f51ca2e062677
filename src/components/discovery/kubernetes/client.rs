//! Which API server discovery talks to, and with what credentials, as Prometheus decides it:
//!
//! 1. `api_server`: that URL, through our shared HTTP client (so `bearer_token_file`,
//!    `tls_config`, `oauth2`, proxies and headers behave as in every other component).
//! 2. `kubeconfig_file`: the file's current context, credentials and all (kube-rs' loader).
//! 3. Neither, inside a pod (`KUBERNETES_SERVICE_HOST` set): the service account's token and
//!    CA, as Prometheus' `rest.InClusterConfig`.
//! 4. Neither, outside a cluster: `$KUBECONFIG` or `~/.kube/config`, like kubectl. Prometheus
//!    would fail here; on a laptop, pointing at the current context is what a user expects, and
//!    it lets `scraper discover` run the same config in and out of a cluster.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http_body_util::BodyExt as _;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::args::Options;
use crate::httpclient::{HttpClient, HttpClientConfig};

/// Why no client could be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid api_server {url:?}: {reason}")]
    ApiServer { url: String, reason: String },
    #[error(transparent)]
    Http(#[from] crate::httpclient::HttpClientError),
    #[error("reading kubeconfig_file {path}: {source}")]
    Kubeconfig {
        path: PathBuf,
        source: kube::config::KubeconfigError,
    },
    #[error(
        "no api_server or kubeconfig_file, not in a cluster (KUBERNETES_SERVICE_HOST is unset), and no usable kubeconfig: {0}"
    )]
    NoConfig(String),
    #[error("in-cluster configuration: {0}")]
    InCluster(String),
    #[error("building Kubernetes client: {0}")]
    Build(String),
}

/// Where a client points, for logs and `scraper discover`.
#[derive(Clone)]
pub struct Built {
    pub client: kube::Client,
    /// `api_server`, `kubeconfig_file <path>`, `in-cluster` or `kubeconfig (default)`.
    pub source: String,
}

/// Builds the client the options ask for.
pub async fn build(options: &Options, http: &HttpClientConfig) -> Result<Built, ClientError> {
    if !options.api_server.is_empty() {
        let client = HttpClient::new(http, crate::httpclient::USER_AGENT)?;
        let service = ReqwestService::new(&options.api_server, Arc::new(client))?;
        return Ok(Built {
            client: kube::Client::new(service, "default"),
            source: format!("api_server {}", options.api_server),
        });
    }
    if !options.kubeconfig_file.is_empty() {
        let path = PathBuf::from(&options.kubeconfig_file);
        let kc = Kubeconfig::read_from(&path).map_err(|source| ClientError::Kubeconfig {
            path: path.clone(),
            source,
        })?;
        let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .map_err(|source| ClientError::Kubeconfig {
                path: path.clone(),
                source,
            })?;
        return Ok(Built {
            client: from_config(config)?,
            source: format!("kubeconfig_file {}", path.display()),
        });
    }
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        let config =
            kube::Config::incluster().map_err(|e| ClientError::InCluster(e.to_string()))?;
        return Ok(Built {
            client: from_config(config)?,
            source: "in-cluster".to_string(),
        });
    }
    let config = kube::Config::from_kubeconfig(&KubeConfigOptions::default())
        .await
        .map_err(|e| ClientError::NoConfig(e.to_string()))?;
    Ok(Built {
        client: from_config(config)?,
        source: "kubeconfig (KUBECONFIG or ~/.kube/config)".to_string(),
    })
}

fn from_config(mut config: kube::Config) -> Result<kube::Client, ClientError> {
    // kube sets no read timeout (`read_timeout` is `None`), so a connection that is accepted
    // and never answers would hold a request forever. Adding one here would not fit watches,
    // which rightly stay silent for minutes: every list and watch is bounded where it is made
    // instead (`watcher::Timeouts`), for this client and the `api_server` one alike.
    config.headers.push((
        http::header::USER_AGENT,
        header_value(crate::httpclient::USER_AGENT),
    ));
    kube::Client::try_from(config).map_err(|e| ClientError::Build(e.to_string()))
}

fn header_value(s: &str) -> http::HeaderValue {
    http::HeaderValue::from_str(s).unwrap_or_else(|_| http::HeaderValue::from_static("scraper"))
}

/// kube's client over our reqwest client: kube builds requests with paths relative to the
/// server, and we send them with the shared HTTP client's TLS, proxy and auth.
#[derive(Clone)]
struct ReqwestService {
    base: Arc<str>,
    http: Arc<HttpClient>,
}

impl ReqwestService {
    fn new(api_server: &str, http: Arc<HttpClient>) -> Result<Self, ClientError> {
        let url = reqwest::Url::parse(api_server).map_err(|e| ClientError::ApiServer {
            url: api_server.to_string(),
            reason: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ClientError::ApiServer {
                url: api_server.to_string(),
                reason: "scheme must be http or https".into(),
            });
        }
        Ok(ReqwestService {
            base: Arc::from(api_server.trim_end_matches('/')),
            http,
        })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower::Service<http::Request<kube::client::Body>> for ReqwestService {
    type Response = http::Response<reqwest::Body>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<kube::client::Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await?.to_bytes();
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            let url = format!("{}{path}", this.base);
            let mut request = this
                .http
                .client()
                .request(parts.method, url)
                .headers(parts.headers)
                .body(body)
                .build()?;
            this.http.apply(request.headers_mut()).await?;
            let response = this.http.client().execute(request).await?;
            Ok(http::Response::from(response))
        }) as Pin<Box<_>>
    }
}
