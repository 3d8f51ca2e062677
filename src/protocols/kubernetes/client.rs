//! Kubernetes clients built from a kubeconfig or the pod's service account. Discovery's
//! `api_server` (through the shared HTTP client) is built in its own `client`, which falls
//! back to these:
//!
//! * a kubeconfig file named by the user: its current context, credentials and all (kube-rs'
//!   loader);
//! * nothing named, inside a pod (`KUBERNETES_SERVICE_HOST` set): the service account's token
//!   and CA, as Prometheus' `rest.InClusterConfig`;
//! * nothing named, outside a cluster: `$KUBECONFIG` or `~/.kube/config`, like kubectl.

use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig};

/// The User-Agent every client sends (the same as the HTTP client's, which sits beside this
/// layer and cannot be named here).
const USER_AGENT: &str = concat!("scraper/", env!("CARGO_PKG_VERSION"));

/// Why no client could be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid api_server {url:?}: {reason}")]
    ApiServer { url: String, reason: String },
    #[error("{0}")]
    Http(String),
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

/// A client and where it points, for logs and `scraper discover`.
#[derive(Clone)]
pub struct Built {
    pub client: kube::Client,
    /// `api_server ...`, `kubeconfig_file <path>`, `in-cluster` or `kubeconfig (...)`.
    pub source: String,
}

/// The client for a kubeconfig file the user named.
pub async fn from_kubeconfig_file(path: &Path) -> Result<Built, ClientError> {
    let kc = Kubeconfig::read_from(path).map_err(|source| ClientError::Kubeconfig {
        path: path.to_path_buf(),
        source,
    })?;
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|source| ClientError::Kubeconfig {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(Built {
        client: from_config(config)?,
        source: format!("kubeconfig_file {}", path.display()),
    })
}

/// The client when nothing was named: in-cluster inside a pod, else the default kubeconfig.
pub async fn default_client() -> Result<Built, ClientError> {
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
    // instead (`watcher::Timeouts`).
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    kube::Client::try_from(config).map_err(|e| ClientError::Build(e.to_string()))
}
