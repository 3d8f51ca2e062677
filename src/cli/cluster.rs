//! The `--cluster.*` flags of `scraper run` (Alloy's names where Alloy has the flag) and the
//! cluster service they start. docs/CLUSTERING.md is the user's guide.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::cluster::{Cluster, Options, ServiceRef, Source};
use crate::runtime::MetricsRegistry;

#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ClusterArgs {
    /// Share `clustering { enabled = true }` work with the other peers: each target is scraped
    /// by exactly one live peer (docs/CLUSTERING.md).
    #[arg(long = "cluster.enabled")]
    enabled: bool,
    /// This instance's name among the peers (default: the host name).
    #[arg(long = "cluster.node-name")]
    node_name: Option<String>,
    /// host:port the peers reach this instance at (default: the listen address, or
    /// $POD_IP and the listen port when listening on all addresses).
    #[arg(long = "cluster.advertise-address")]
    advertise_address: Option<String>,
    /// Comma-separated host:port of the peers (a static list, each checked over HTTP).
    #[arg(long = "cluster.join-addresses", value_delimiter = ',')]
    join_addresses: Vec<String>,
    /// [namespace/]name of the Service whose ready endpoints are the peers.
    #[arg(long = "cluster.kubernetes-service")]
    kubernetes_service: Option<String>,
    /// The Service port that peers listen on, by name.
    #[arg(long = "cluster.kubernetes-port-name", default_value = "http-metrics")]
    kubernetes_port_name: String,
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "scraper".to_string())
}

impl ClusterArgs {
    /// The service the flags ask for, running until `stop`; a ring of this instance alone
    /// without `--cluster.enabled`.
    pub(crate) fn start(
        &self,
        listening: SocketAddr,
        registry: &MetricsRegistry,
        stop: CancellationToken,
    ) -> anyhow::Result<Cluster> {
        let node_name = self.node_name.clone().unwrap_or_else(host_name);
        let advertise = match &self.advertise_address {
            Some(a) => a.clone(),
            None if !listening.ip().is_unspecified() => listening.to_string(),
            None => match std::env::var("POD_IP") {
                Ok(ip) if !ip.is_empty() => {
                    let ip: std::net::IpAddr = ip
                        .parse()
                        .with_context(|| format!("POD_IP {ip:?} is not an IP address"))?;
                    SocketAddr::new(ip, listening.port()).to_string()
                }
                _ if self.enabled => bail!(
                    "--cluster.enabled: listening on {listening}, which peers cannot reach, and POD_IP is unset: give --cluster.advertise-address"
                ),
                _ => listening.to_string(),
            },
        };
        if !self.enabled {
            return Ok(Cluster::alone(&node_name, &advertise));
        }
        let source = match &self.kubernetes_service {
            Some(s) if !self.join_addresses.is_empty() => bail!(
                "--cluster.kubernetes-service {s:?} and --cluster.join-addresses are exclusive: peers come from one source"
            ),
            Some(s) => Source::Kubernetes(
                ServiceRef::parse(s, &self.kubernetes_port_name).map_err(anyhow::Error::msg)?,
            ),
            None => {
                let list: Vec<String> = self
                    .join_addresses
                    .iter()
                    .map(|a| a.trim().to_string())
                    .filter(|a| !a.is_empty())
                    .collect();
                if list.is_empty() {
                    tracing::info!(
                        "--cluster.enabled with neither --cluster.kubernetes-service nor --cluster.join-addresses: this instance is the only peer"
                    );
                }
                Source::Static(list)
            }
        };
        let options = Options {
            node_name,
            advertise_address: advertise,
            source,
            // A killed peer refuses connections at once, so it is out after three rounds (about
            // 3 s); the timeout only matters for a hung or overloaded one, which gets 2 s per
            // check so that a busy peer is not taken for a dead one.
            check_interval: Duration::from_secs(1),
            check_timeout: Duration::from_secs(2),
        };
        Cluster::start(options, registry, stop).context("starting the cluster service")
    }
}
