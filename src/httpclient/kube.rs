//! A Kubernetes client whose requests go through our HTTP client, for components given an
//! explicit `api_server` (`discovery.kubernetes`, `remote.kubernetes.*`): kube builds each
//! request with a path relative to the server, and we send it with the shared client's TLS,
//! proxy, headers and auth, so `bearer_token_file`, `tls_config` or `oauth2` behave as in every
//! other component. (Kubeconfig and in-cluster clients are `protocols::kubernetes::client`.)

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http_body_util::BodyExt as _;

use super::HttpClient;

/// Why `api_server` cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("invalid api_server {url:?}: {reason}")]
pub struct ApiServerError {
    pub url: String,
    pub reason: String,
}

/// The kube client for `api_server` over `http`.
pub fn client(api_server: &str, http: Arc<HttpClient>) -> Result<kube::Client, ApiServerError> {
    let service = ReqwestService::new(api_server, http)?;
    Ok(kube::Client::new(service, "default"))
}

#[derive(Clone)]
struct ReqwestService {
    base: Arc<str>,
    http: Arc<HttpClient>,
}

impl ReqwestService {
    fn new(api_server: &str, http: Arc<HttpClient>) -> Result<Self, ApiServerError> {
        let refuse = |reason: String| ApiServerError {
            url: api_server.to_string(),
            reason,
        };
        let url = reqwest::Url::parse(api_server).map_err(|e| refuse(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(refuse("scheme must be http or https".into()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::httpclient::HttpClientConfig;

    #[test]
    fn api_server_must_be_an_http_url() {
        let http = Arc::new(HttpClient::new(&HttpClientConfig::default(), "t").expect("client"));
        for (url, ok) in [
            ("https://10.0.0.1:6443", true),
            ("http://localhost:8080/", true),
            ("ftp://host", false),
            ("not a url", false),
        ] {
            assert_eq!(ReqwestService::new(url, http.clone()).is_ok(), ok, "{url}");
        }
    }
}
