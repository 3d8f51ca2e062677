//! Which API server discovery talks to, and with what credentials, as Prometheus decides it:
//!
//! 1. `api_server`: that URL, through our shared HTTP client (`httpclient::kube`, so `bearer_token_file`,
//!    `tls_config`, `oauth2`, proxies and headers behave as in every other component).
//! 2. `kubeconfig_file`: the file's current context, credentials and all (kube-rs' loader).
//! 3. Neither, inside a pod (`KUBERNETES_SERVICE_HOST` set): the service account's token and
//!    CA, as Prometheus' `rest.InClusterConfig`.
//! 4. Neither, outside a cluster: `$KUBECONFIG` or `~/.kube/config`, like kubectl. Prometheus
//!    would fail here; on a laptop, pointing at the current context is what a user expects, and
//!    it lets `scraper discover` run the same config in and out of a cluster.

use std::path::PathBuf;
use std::sync::Arc;

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
        let client = crate::httpclient::kube::client(&options.api_server, Arc::new(client))
            .map_err(|e| ClientError::ApiServer {
                url: e.url,
                reason: e.reason,
            })?;
        return Ok(Built {
            client,
            source: format!("api_server {}", options.api_server),
        });
    }
    if !options.kubeconfig_file.is_empty() {
        return kube_client::from_kubeconfig_file(&PathBuf::from(&options.kubeconfig_file)).await;
    }
    kube_client::default_client().await
}
