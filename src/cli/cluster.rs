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
    /// (Go's boolean forms, as Alloy's chart passes it: `--cluster.enabled=true`.)
    #[arg(long = "cluster.enabled", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set,
          value_parser = super::alloy_flags::go_bool)]
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

/// Alloy's default node name: the host name as Go reads it (the one behind
/// `constants.hostname`).
fn host_name() -> String {
    Some(crate::syntax::stdlib::hostname())
        .filter(|s| !s.is_empty())
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
        let advertise = advertise(
            self.advertise_address.as_deref(),
            listening,
            std::env::var("POD_IP").ok(),
            self.enabled,
        )?;
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
                    .map(|a| a.trim())
                    .filter(|a| !a.is_empty())
                    .map(|a| {
                        crate::cluster::addr::normalize(a)
                            .map_err(|e| anyhow::anyhow!("--cluster.join-addresses: {e}"))
                    })
                    .collect::<anyhow::Result<_>>()?;
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
            // A killed peer refuses connections at once, so it is out after three checks (2-3 s);
            // a hung or overloaded one gets 2 s per check so that a busy peer is not taken for
            // a dead one: its checks follow each other (one in flight per peer), so it is out
            // after three timeouts, 6-7 s (docs/CLUSTERING.md).
            check_interval: Duration::from_secs(1),
            check_timeout: Duration::from_secs(2),
        };
        Cluster::start(options, registry, stop).context("starting the cluster service")
    }
}

/// The address this instance advertises, in the one spelling peers list it by: the flag, else
/// the listen address, else `$POD_IP` with the listen port. `POD_IP` is read only with
/// clustering on: without it the address is only a name in the peers view.
fn advertise(
    flag: Option<&str>,
    listening: SocketAddr,
    pod_ip: Option<String>,
    enabled: bool,
) -> anyhow::Result<String> {
    if let Some(a) = flag {
        return match crate::cluster::addr::normalize(a) {
            Ok(a) => Ok(a),
            Err(e) if enabled => bail!("--cluster.advertise-address: {e}"),
            // Without clustering it only names this instance in the peers view.
            Err(_) => Ok(a.to_string()),
        };
    }
    if !listening.ip().is_unspecified() || !enabled {
        return Ok(listening.to_string());
    }
    match pod_ip.filter(|ip| !ip.is_empty()) {
        Some(ip) => {
            let ip: std::net::IpAddr = ip
                .trim()
                .parse()
                .with_context(|| format!("POD_IP {ip:?} is not an IP address"))?;
            Ok(SocketAddr::new(ip, listening.port()).to_string())
        }
        None => bail!(
            "--cluster.enabled: listening on {listening}, which peers cannot reach, and POD_IP is unset: give --cluster.advertise-address"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--cluster.enabled` reads Go's `strconv.ParseBool` forms, as Alloy's `flag` does.
    #[test]
    fn cluster_enabled_takes_gos_bool_forms() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cmd {
            #[command(flatten)]
            cluster: ClusterArgs,
        }
        let cases: &[(&[&str], Option<bool>)] = &[
            (&[], Some(false)),
            (&["--cluster.enabled"], Some(true)),
            (&["--cluster.enabled=1"], Some(true)),
            (&["--cluster.enabled=T"], Some(true)),
            (&["--cluster.enabled=TRUE"], Some(true)),
            (&["--cluster.enabled=True"], Some(true)),
            (&["--cluster.enabled=0"], Some(false)),
            (&["--cluster.enabled=f"], Some(false)),
            (&["--cluster.enabled=False"], Some(false)),
            (&["--cluster.enabled=yes"], None),
            (&["--cluster.enabled=tRUE"], None),
        ];
        for (args, want) in cases {
            let got = Cmd::try_parse_from(std::iter::once("run").chain(args.iter().copied()))
                .ok()
                .map(|c| c.cluster.enabled);
            assert_eq!(got, *want, "{args:?}");
        }
    }

    #[test]
    fn the_advertise_address_is_normalised_and_pod_ip_read_only_when_clustering() {
        let any: SocketAddr = "0.0.0.0:4040".parse().unwrap_or_else(|e| panic!("{e}"));
        let lo: SocketAddr = "127.0.0.1:4040".parse().unwrap_or_else(|e| panic!("{e}"));
        let pod = |s: &str| Some(s.to_string());
        // (flag, listening, POD_IP, enabled, want: Some(address) or None for an error)
        type Case<'a> = (
            Option<&'a str>,
            SocketAddr,
            Option<String>,
            bool,
            Option<&'a str>,
        );
        let cases: Vec<Case> = vec![
            (
                Some("[fd00::1]:4040"),
                any,
                None,
                true,
                Some("[fd00::1]:4040"),
            ),
            (Some("fd00::1:4040"), any, None, true, None),
            (None, lo, pod("junk"), true, Some("127.0.0.1:4040")),
            (None, any, pod("fd00::1"), true, Some("[fd00::1]:4040")),
            (None, any, pod("10.0.0.7"), true, Some("10.0.0.7:4040")),
            (None, any, pod("junk"), true, None),
            (None, any, None, true, None),
            // Clustering off: an unparsable POD_IP does not stop `scraper run`.
            (None, any, pod("junk"), false, Some("0.0.0.0:4040")),
            (None, any, None, false, Some("0.0.0.0:4040")),
        ];
        for (i, (flag, listening, pod_ip, enabled, want)) in cases.into_iter().enumerate() {
            let got = advertise(flag, listening, pod_ip, enabled).ok();
            assert_eq!(got.as_deref(), want, "case {i}");
        }
    }
}
