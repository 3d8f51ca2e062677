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

use super::args::Options;
use crate::httpclient::{HttpClient, HttpClientConfig};
use crate::protocols::kubernetes::client as kube_client;
pub use crate::protocols::kubernetes::{Built, ClientError};

/// Builds the client the options ask for: `api_server` here, the rest in
/// `protocols::kubernetes::client`.
pub async fn build(options: &Options, http: &HttpClientConfig) -> Result<Built, ClientError> {
    if !options.api_server.is_empty() {
        let client = HttpClient::new(http, crate::httpclient::USER_AGENT)
            .map_err(|e| ClientError::Http(e.to_string()))?;
        let service = ReqwestService::new(&options.api_server, Arc::new(client))?;
        return Ok(Built {
            client: kube::Client::new(service, "default"),
            source: format!("api_server {}", options.api_server),
        });
    }
    if !options.kubeconfig_file.is_empty() {
        return kube_client::from_kubeconfig_file(&PathBuf::from(&options.kubeconfig_file)).await;
    }
    kube_client::default_client().await
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
