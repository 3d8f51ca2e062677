//! The Docker Engine API's container and network lists (`GET /containers/json`,
//! `GET /networks`, the fields Prometheus reads) and the targets Prometheus' docker SD
//! (`discovery/moby/docker.go`) makes of them:
//!
//! * one target per container, network and TCP port, `__address__` = `IP:private port`;
//! * a container without TCP ports: one target per network at `IP:port` (the `port`
//!   argument), or `host_networking_host` for a container in host networking;
//! * a container sharing another's network (`container:<id>` mode, no networks of its own)
//!   uses that container's networks;
//! * `match_first_network`: of several networks, only the first by name;
//! * labels `__meta_docker_container_{id,name,network_mode}`,
//!   `__meta_docker_container_label_<name>` (names sanitised to `[a-zA-Z0-9_]`),
//!   `__meta_docker_network_{id,name,scope,internal,ingress,ip}`,
//!   `__meta_docker_network_label_<name>`, `__meta_docker_port_private`, and for a published
//!   port `__meta_docker_port_public` and `__meta_docker_port_public_ip`;
//! * containers without a name are skipped.
//!
//! Order: containers as the API lists them, networks by name (Go's map order is random).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Deserialize;

use crate::labels::LabelSet;

/// Go's `encoding/json` leaves a field at its zero value for an explicit `null`; serde would
/// refuse `"Names": null` for a `Vec` and fail the whole refresh.
fn null_is_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// One entry of `GET /containers/json`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Container {
    #[serde(default, deserialize_with = "null_is_default")]
    pub id: String,
    #[serde(default, deserialize_with = "null_is_default")]
    pub names: Vec<String>,
    #[serde(default, deserialize_with = "null_is_default")]
    pub ports: Vec<Port>,
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "null_is_default")]
    pub host_config: HostConfig,
    #[serde(default, deserialize_with = "null_is_default")]
    pub network_settings: NetworkSettings,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Port {
    #[serde(default, rename = "IP", deserialize_with = "null_is_default")]
    pub ip: String,
    #[serde(default, deserialize_with = "null_is_default")]
    pub private_port: u16,
    #[serde(default, deserialize_with = "null_is_default")]
    pub public_port: u16,
    #[serde(default, rename = "Type", deserialize_with = "null_is_default")]
    pub kind: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostConfig {
    #[serde(default, deserialize_with = "null_is_default")]
    pub network_mode: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct NetworkSettings {
    /// By network name; an entry may be `null`.
    #[serde(default)]
    pub networks: Option<BTreeMap<String, Option<Endpoint>>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Endpoint {
    #[serde(default, rename = "NetworkID", deserialize_with = "null_is_default")]
    pub network_id: String,
    #[serde(default, rename = "IPAddress", deserialize_with = "null_is_default")]
    pub ip_address: String,
}

/// One entry of `GET /networks`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Network {
    #[serde(default, deserialize_with = "null_is_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_is_default")]
    pub id: String,
    #[serde(default, deserialize_with = "null_is_default")]
    pub scope: String,
    #[serde(default, deserialize_with = "null_is_default")]
    pub internal: bool,
    #[serde(default, deserialize_with = "null_is_default")]
    pub ingress: bool,
    #[serde(default, deserialize_with = "null_is_default")]
    pub labels: Option<BTreeMap<String, String>>,
}

/// How addresses are chosen (the component's arguments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub port: u16,
    pub host_networking_host: String,
    pub match_first_network: bool,
}

/// Prometheus' `strutil.SanitizeLabelName`: every byte outside `[a-zA-Z0-9_]` becomes `_`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Go's `net.JoinHostPort`: IPv6 addresses in brackets.
fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn network_labels(networks: &[Network]) -> HashMap<&str, Vec<(String, String)>> {
    networks
        .iter()
        .map(|n| {
            let mut l = vec![
                ("__meta_docker_network_id".to_string(), n.id.clone()),
                ("__meta_docker_network_name".to_string(), n.name.clone()),
                ("__meta_docker_network_scope".to_string(), n.scope.clone()),
                (
                    "__meta_docker_network_internal".to_string(),
                    n.internal.to_string(),
                ),
                (
                    "__meta_docker_network_ingress".to_string(),
                    n.ingress.to_string(),
                ),
            ];
            for (k, v) in n.labels.iter().flatten() {
                l.push((
                    format!("__meta_docker_network_label_{}", sanitize(k)),
                    v.clone(),
                ));
            }
            (n.id.as_str(), l)
        })
        .collect()
}

/// The targets for `containers` on `networks`.
pub fn targets(
    containers: &[Container],
    networks: &[Network],
    opts: &Options,
) -> Vec<Arc<LabelSet>> {
    let by_id: HashMap<&str, &Container> = containers.iter().map(|c| (c.id.as_str(), c)).collect();
    let net_labels = network_labels(networks);
    let mut out = Vec::new();
    for c in containers {
        let Some(name) = c.names.first() else {
            continue;
        };
        let mut common = LabelSet::new();
        common.set("__meta_docker_container_id", &c.id);
        common.set("__meta_docker_container_name", name);
        common.set(
            "__meta_docker_container_network_mode",
            &c.host_config.network_mode,
        );
        for (k, v) in c.labels.iter().flatten() {
            common.set(&format!("__meta_docker_container_label_{}", sanitize(k)), v);
        }

        // Prometheus counts `null` entries as networks (`len(networks) == 0`): a container
        // whose only network is `null` has no targets and does not borrow another's.
        let mut raw = networks_of(c);
        if raw.is_empty() {
            // `container:<id>` network mode: the networks of that container, followed along
            // a chain of such containers until one has networks.
            let mut mode = c.host_config.network_mode.as_str();
            let mut hops = 0;
            while let Some(id) = mode.strip_prefix("container:") {
                let Some(other) = by_id.get(id) else { break };
                raw = networks_of(other);
                mode = other.host_config.network_mode.as_str();
                hops += 1;
                // A cycle of containers sharing each other's network cannot exist in Docker;
                // the bound only protects against a malformed answer.
                if !raw.is_empty() || hops > containers.len() {
                    break;
                }
            }
        }
        // Null entries give no targets; of the rest, by name (Go's map order is random).
        let mut nets: Vec<(&String, &Endpoint)> = raw
            .iter()
            .filter_map(|(name, e)| e.as_ref().map(|e| (name, e)))
            .collect();
        if opts.match_first_network && nets.len() > 1 {
            nets.truncate(1); // the first non-null network by name, as Prometheus picks
        }

        for (_, n) in nets {
            let mut base = common.clone();
            base.set("__meta_docker_network_ip", &n.ip_address);
            if let Some(labels) = net_labels.get(n.network_id.as_str()) {
                for (k, v) in labels {
                    base.set(k, v);
                }
            }
            let mut added = false;
            for p in c.ports.iter().filter(|p| p.kind == "tcp") {
                let mut t = base.clone();
                t.set("__meta_docker_port_private", &p.private_port.to_string());
                if p.public_port > 0 {
                    t.set("__meta_docker_port_public", &p.public_port.to_string());
                    t.set("__meta_docker_port_public_ip", &p.ip);
                }
                t.set(
                    "__address__",
                    &join_host_port(&n.ip_address, p.private_port),
                );
                out.push(Arc::new(t));
                added = true;
            }
            if !added {
                let mut t = base;
                let address = if c.host_config.network_mode == "host" {
                    opts.host_networking_host.clone()
                } else {
                    join_host_port(&n.ip_address, opts.port)
                };
                t.set("__address__", &address);
                out.push(Arc::new(t));
            }
        }
    }
    out
}

/// A container's networks as listed, `null` entries included.
fn networks_of(c: &Container) -> &BTreeMap<String, Option<Endpoint>> {
    static NONE: BTreeMap<String, Option<Endpoint>> = BTreeMap::new();
    c.network_settings.networks.as_ref().unwrap_or(&NONE)
}

#[cfg(test)]
mod tests;
