//! Membership from Kubernetes: the ready endpoints of a Service's EndpointSlices (label
//! `kubernetes.io/service-name`), watched with the list+watch loop discovery uses. Each ready
//! endpoint address, with the port named `--cluster.kubernetes-port-name`, is a candidate
//! peer; the HTTP checks then decide which candidates are members, so a killed pod leaves the
//! ring before Kubernetes marks it unready.
//!
//! Only slices of this instance's address family are read (`addressType` IPv4 or IPv6, as
//! the advertise address; any with a host name), and addresses are spelt as `addr` spells
//! them, so that this instance finds itself in the list.
//!
//! A failing watch keeps the last candidates (the checks still follow them) and is a warning
//! when it starts, an info line when it ends; the peers view shows the error meanwhile.

use std::collections::BTreeMap;

use futures::StreamExt as _;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Cluster;
use super::addr::{Family, join};
use super::events::{ClusterMetrics, WatchFailed, WatchRecovered};
use crate::protocols::kubernetes::{Backoff, Selectors, Timeouts, WatchEvent, client, watcher};
use crate::runtime::event::emit;

/// Which Service, and which of its ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceRef {
    /// `None`: the client's default namespace (the service account's in a pod).
    pub namespace: Option<String>,
    pub name: String,
    pub port_name: String,
}

impl ServiceRef {
    /// `[namespace/]name`.
    pub fn parse(s: &str, port_name: &str) -> Result<ServiceRef, String> {
        let (namespace, name) = match s.split_once('/') {
            Some((ns, name)) => (Some(ns.to_string()), name),
            None => (None, s),
        };
        let valid = |v: &str| {
            !v.is_empty()
                && v.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        };
        if !valid(name) || !namespace.as_deref().is_none_or(valid) {
            return Err(format!(
                "--cluster.kubernetes-service {s:?}: want [namespace/]name, lower-case DNS names"
            ));
        }
        Ok(ServiceRef {
            namespace,
            name: name.to_string(),
            port_name: port_name.to_string(),
        })
    }
}

/// The candidates one EndpointSlice lists: (address `host:port`, name), ready endpoints only
/// (a missing `ready` condition means ready, as Kubernetes documents), none from a slice of
/// another address family than `family`.
pub fn candidates(slice: &EndpointSlice, port_name: &str, family: Family) -> Vec<(String, String)> {
    if !family.accepts(&slice.address_type) {
        return Vec::new();
    }
    let Some(port) = slice
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some(port_name))
        .and_then(|p| p.port)
        .and_then(|p| u16::try_from(p).ok())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for ep in slice.endpoints.iter().flatten() {
        let ready = ep.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true);
        if !ready {
            continue;
        }
        for addr in ep.addresses.iter().filter(|a| family.accepts_host(a)) {
            let hostport = join(addr, port);
            let name = ep
                .target_ref
                .as_ref()
                .and_then(|r| r.name.clone())
                .unwrap_or_else(|| hostport.clone());
            out.push((hostport, name));
        }
    }
    out
}

/// Watches the Service's slices until `stop`, sending the candidate list on each change.
pub async fn run(
    service: ServiceRef,
    family: Family,
    out: watch::Sender<Option<Vec<(String, String)>>>,
    cluster: Cluster,
    metrics: std::sync::Arc<ClusterMetrics>,
    stop: CancellationToken,
) {
    let timeouts = Timeouts::default();
    let label = match &service.namespace {
        Some(ns) => format!("{ns}/{}", service.name),
        None => service.name.clone(),
    };
    let mut backoff = Backoff::new(&timeouts);
    let mut failures = 0u64;
    let built = loop {
        match client::default_client().await {
            Ok(b) => break b,
            Err(e) => {
                cluster.set_source_error(Some(e.to_string()));
                emit(WatchFailed {
                    service: &label,
                    error: &e.to_string(),
                    repeated: failures > 0,
                    metrics: &metrics,
                });
                failures += 1;
                let wait = backoff.delay(tokio::time::Instant::now());
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        }
    };
    let namespace = service
        .namespace
        .clone()
        .unwrap_or_else(|| built.client.default_namespace().to_string());
    tracing::info!(service = %service.name, namespace = %namespace, client = %built.source, "cluster membership from the Service's EndpointSlices");
    let api = kube::Api::<EndpointSlice>::namespaced(built.client, &namespace);
    let selectors = Selectors {
        label: Some(format!("kubernetes.io/service-name={}", service.name)),
        field: None,
    };
    let mut events = watcher::run(api, selectors, timeouts, |s: EndpointSlice| s);
    let mut slices: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut listing: Option<BTreeMap<String, Vec<(String, String)>>> = None;
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            e = events.next() => match e { Some(e) => e, None => return },
        };
        let name_of = |s: &EndpointSlice| s.metadata.name.clone().unwrap_or_default();
        let changed = match event {
            WatchEvent::Init => {
                listing = Some(BTreeMap::new());
                false
            }
            WatchEvent::InitApply(s) => {
                if let Some(l) = listing.as_mut() {
                    l.insert(name_of(&s), candidates(&s, &service.port_name, family));
                }
                false
            }
            WatchEvent::InitDone => {
                if let Some(l) = listing.take() {
                    slices = l;
                }
                recovered(&label, &mut failures, &metrics, &cluster);
                true
            }
            WatchEvent::Watching => {
                recovered(&label, &mut failures, &metrics, &cluster);
                false
            }
            WatchEvent::Apply(s) => {
                slices.insert(name_of(&s), candidates(&s, &service.port_name, family));
                true
            }
            WatchEvent::Delete(s) => slices.remove(&name_of(&s)).is_some(),
            WatchEvent::Error(f) => {
                cluster.set_source_error(Some(f.to_string()));
                emit(WatchFailed {
                    service: &label,
                    error: &f.to_string(),
                    repeated: failures > 0,
                    metrics: &metrics,
                });
                failures += 1;
                false
            }
        };
        if changed {
            let mut all: Vec<(String, String)> = slices.values().flatten().cloned().collect();
            all.sort();
            all.dedup_by(|a, b| a.0 == b.0);
            out.send_if_modified(|cur| {
                let differs = cur.as_ref() != Some(&all);
                if differs {
                    *cur = Some(all);
                }
                differs
            });
        }
    }
}

fn recovered(service: &str, failures: &mut u64, metrics: &ClusterMetrics, cluster: &Cluster) {
    if *failures > 0 {
        cluster.set_source_error(None);
        emit(WatchRecovered {
            service,
            failures: *failures,
            metrics,
        });
        *failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_refs_parse() {
        type Parsed<'a> = Option<(Option<&'a str>, &'a str)>;
        let cases: &[(&str, Parsed)] = &[
            ("ns/name", Some((Some("ns"), "name"))),
            ("name", Some((None, "name"))),
            ("a.b/c-d", Some((Some("a.b"), "c-d"))),
            ("", None),
            ("ns/", None),
            ("/name", None),
            ("NS/name", None),
        ];
        for (s, want) in cases {
            let got = ServiceRef::parse(s, "http-metrics").ok();
            let got = got
                .as_ref()
                .map(|r| (r.namespace.as_deref(), r.name.as_str()));
            assert_eq!(got, *want, "{s}");
        }
    }

    #[test]
    fn ready_endpoints_with_the_named_port_are_candidates() {
        let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s-1", "labels": {"kubernetes.io/service-name": "s"}},
            "addressType": "IPv4",
            "ports": [{"name": "other", "port": 1}, {"name": "http-metrics", "port": 4040}],
            "endpoints": [
                {"addresses": ["10.0.0.1"], "conditions": {"ready": true}, "targetRef": {"kind": "Pod", "name": "p1"}},
                {"addresses": ["10.0.0.2"], "conditions": {"ready": false}, "targetRef": {"kind": "Pod", "name": "p2"}},
                {"addresses": ["10.0.0.3"]},
                {"addresses": ["fd00::1"], "conditions": {"ready": true}}
            ]
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let got = candidates(&slice, "http-metrics", Family::V4);
        let want = [("10.0.0.1:4040", "p1"), ("10.0.0.3:4040", "10.0.0.3:4040")];
        let got: Vec<(&str, &str)> = got.iter().map(|(a, n)| (a.as_str(), n.as_str())).collect();
        assert_eq!(got, want);
        assert!(candidates(&slice, "nope", Family::V4).is_empty());
        assert!(
            candidates(&slice, "http-metrics", Family::V6).is_empty(),
            "an IPv4 slice lists no peers of an IPv6 instance"
        );
    }

    #[test]
    fn ipv6_slices_spell_addresses_as_the_advertise_flag_does() {
        let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s-2"},
            "addressType": "IPv6",
            "ports": [{"name": "http-metrics", "port": 4040}],
            "endpoints": [{"addresses": ["fd00:0:0::1"]}, {"addresses": ["FD00::2"]}]
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let advertised = super::super::addr::normalize("[fd00::1]:4040").unwrap_or_default();
        let got: Vec<String> = candidates(&slice, "http-metrics", Family::of(&advertised))
            .into_iter()
            .map(|(a, _)| a)
            .collect();
        assert_eq!(got, ["[fd00::1]:4040", "[fd00::2]:4040"]);
        assert_eq!(
            got[0], advertised,
            "this instance is recognised in the list"
        );
        assert!(candidates(&slice, "http-metrics", Family::V4).is_empty());
    }
}
