//! The arguments of a `discovery.kubernetes` block (spec alloy-components §4.1), with the
//! validation Prometheus applies to the same settings, in its words.

use serde::Deserialize;

use super::role::Role;
use crate::httpclient::{HttpClientConfig, WithHttpClient};
use crate::protocols::kubernetes::watcher::Timeouts;
use crate::syntax::types::Duration;

/// The whole block: our options plus the HTTP client arguments, squashed into the top level
/// as in Alloy.
pub type Arguments = WithHttpClient<Options>;

/// `namespaces { names = [...], own_namespace = true }`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Namespaces {
    #[serde(default)]
    pub own_namespace: bool,
    #[serde(default)]
    pub names: Vec<String>,
}

/// `selectors { role = "pod", label = "...", field = "..." }`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Selector {
    pub role: String,
    #[serde(default)]
    pub label: String,
    #[serde(default)]
    pub field: String,
}

/// `attach_metadata { node = true, namespace = true }`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct AttachMetadata {
    #[serde(default)]
    pub node: bool,
    #[serde(default)]
    pub namespace: bool,
}

/// Everything in the block except the HTTP client arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawOptions")]
pub struct Options {
    pub role: Role,
    pub api_server: String,
    pub kubeconfig_file: String,
    pub namespaces: Namespaces,
    pub selectors: Vec<Selector>,
    pub attach_metadata: AttachMetadata,
    /// Not in Alloy (which hard-codes 5 s): the shortest time between two publications of
    /// `targets`. Bursts of events inside it are coalesced into one update.
    pub publish_interval: Duration,
    /// Not an argument at all: how long to wait on the API server (always the defaults from a
    /// config file). Public so that tests can shorten them.
    pub timeouts: Timeouts,
}

#[derive(Deserialize)]
#[serde(rename = "discovery.kubernetes")]
struct RawOptions {
    role: String,
    #[serde(default)]
    api_server: String,
    #[serde(default)]
    kubeconfig_file: String,
    #[serde(default)]
    namespaces: Option<Namespaces>,
    #[serde(default)]
    selectors: Vec<Selector>,
    #[serde(default)]
    attach_metadata: Option<AttachMetadata>,
    #[serde(default = "default_publish_interval")]
    publish_interval: Duration,
}

fn default_publish_interval() -> Duration {
    Duration::from_secs(5)
}

impl TryFrom<RawOptions> for Options {
    type Error = String;

    fn try_from(r: RawOptions) -> Result<Self, String> {
        let role: Role = r.role.parse()?;
        if !r.api_server.is_empty() && !r.kubeconfig_file.is_empty() {
            return Err("cannot use 'kubeconfig_file' and 'api_server' simultaneously".into());
        }
        let namespaces = r.namespaces.unwrap_or_default();
        if namespaces.own_namespace && (!r.api_server.is_empty() || !r.kubeconfig_file.is_empty()) {
            // Only the service-account mount says which namespace is ours.
            return Err(
                "cannot use 'own_namespace' with 'api_server' or 'kubeconfig_file': the own namespace is only known in-cluster"
                    .into(),
            );
        }
        let attach = r.attach_metadata.unwrap_or_default();
        let mut seen = Vec::new();
        for s in &r.selectors {
            let sel_role: Role = s.role.parse()?;
            if !role.allows_selector(sel_role, attach) {
                return Err(format!(
                    "{role} role supports only {} selectors",
                    role.selector_roles(attach)
                        .iter()
                        .map(|r| r.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if seen.contains(&sel_role) {
                return Err(format!("duplicated selector role: {sel_role}"));
            }
            seen.push(sel_role);
        }
        if r.publish_interval.is_zero() {
            return Err("publish_interval must be greater than 0".into());
        }
        Ok(Options {
            role,
            api_server: r.api_server,
            kubeconfig_file: r.kubeconfig_file,
            namespaces,
            selectors: r.selectors,
            attach_metadata: attach,
            publish_interval: r.publish_interval,
            timeouts: Timeouts::default(),
        })
    }
}

impl Options {
    /// The `selectors` block for watching `role`'s objects, if any.
    pub fn selector(&self, role: Role) -> Option<&Selector> {
        self.selectors.iter().find(|s| s.role == role.as_str())
    }
}

/// Prometheus refuses HTTP client settings that would be silently ignored: only an explicit
/// `api_server` uses them; kubeconfig and in-cluster configs carry their own credentials.
pub fn validate_http_client(options: &Options, http: &HttpClientConfig) -> Result<(), String> {
    if options.api_server.is_empty() && *http != HttpClientConfig::default() {
        if options.kubeconfig_file.is_empty() {
            return Err("to use custom HTTP client configuration please provide the 'api_server' URL explicitly".into());
        }
        return Err(
            "cannot use a custom HTTP client configuration together with 'kubeconfig_file'".into(),
        );
    }
    Ok(())
}
