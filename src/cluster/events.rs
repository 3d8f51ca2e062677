//! What the cluster service reports, as typed events (`runtime::event`): each writes its log
//! line and updates its metrics in one place.
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `cluster_peers` | | members of the ring now, this instance included |
//! | `cluster_membership_changes_total` | | times the ring's members changed |
//! | `cluster_peer_check_failures_total` | | failed `GET /-/ready` checks of peers |
//! | `cluster_kubernetes_watch_failures_total` | | failed lists and watches of the EndpointSlices |
//! | `cluster_kubernetes_watch_failing` | | 1 while that watch is failing |
//! | `cluster_membership_unknown` | | 1 while the peers were never listed and this instance scrapes every clustered target |
//! | `cluster_self_addresses_total` | | listed addresses other than the advertised one found to be this instance |

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::peers::Transition;
use super::ring::Membership;
use crate::runtime::MetricsRegistry;
use crate::runtime::event::InternalEvent;

#[derive(Debug, Default)]
pub struct ClusterMetrics {
    peers: Gauge,
    changes: Counter,
    check_failures: Counter,
    watch_failures: Counter,
    watch_failing: Gauge,
    unknown: Gauge,
    self_addresses: Counter,
}

impl ClusterMetrics {
    pub fn register(registry: &MetricsRegistry) -> std::sync::Arc<ClusterMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = ClusterMetrics::default();
            r.register(
                "cluster_peers",
                "Members of the cluster's ring, this instance included.",
                m.peers.clone(),
            );
            r.register(
                "cluster_membership_changes",
                "Times the ring's members changed.",
                m.changes.clone(),
            );
            r.register(
                "cluster_peer_check_failures",
                "Failed GET /-/ready checks of peers.",
                m.check_failures.clone(),
            );
            r.register(
                "cluster_kubernetes_watch_failures",
                "Failed lists and watches of the cluster Service's EndpointSlices.",
                m.watch_failures.clone(),
            );
            r.register(
                "cluster_kubernetes_watch_failing",
                "1 while the EndpointSlice watch is failing.",
                m.watch_failing.clone(),
            );
            r.register(
                "cluster_membership_unknown",
                "1 while the cluster's peers were never listed (the membership source fails) and this instance scrapes every clustered target it is given.",
                m.unknown.clone(),
            );
            r.register(
                "cluster_self_addresses",
                "Listed peer addresses other than --cluster.advertise-address that answered with this instance's id.",
                m.self_addresses.clone(),
            );
            m.peers.set(1);
            m
        })
    }
}

/// A peer joined, left, came back or stopped answering.
pub struct PeerChanged<'a> {
    pub transition: &'a Transition,
}

impl InternalEvent for PeerChanged<'_> {
    fn emit(self) {
        match self.transition {
            Transition::Joined {
                address,
                name,
                was_down: false,
            } => tracing::info!(peer = %name, address = %address, "cluster peer joined"),
            Transition::Joined {
                address,
                name,
                was_down: true,
            } => {
                tracing::info!(peer = %name, address = %address, "cluster peer reachable again; back in the ring")
            }
            // A peer answering 503 is loading its config: not a member yet, nothing wrong.
            Transition::Unreachable {
                address,
                name,
                error,
                was_member: false,
                starting: true,
            } => tracing::debug!(
                peer = %name,
                address = %address,
                error = %error,
                "cluster peer still starting; not a member until it is ready"
            ),
            Transition::Unreachable {
                address,
                name,
                error,
                was_member,
                ..
            } => tracing::warn!(
                peer = %name,
                address = %address,
                error = %error,
                failures = super::peers::FAILURES_TO_LEAVE,
                was_member,
                "cluster peer unreachable; out of the ring until it answers again"
            ),
            Transition::Removed {
                address,
                name,
                was_member,
            } => {
                tracing::info!(peer = %name, address = %address, was_member, "cluster peer no longer listed; removed")
            }
        }
    }
}

/// One failed check (counted; the log line is the transition's).
pub struct CheckFailed<'a> {
    pub metrics: &'a ClusterMetrics,
}

impl InternalEvent for CheckFailed<'_> {
    fn emit(self) {
        self.metrics.check_failures.inc();
    }
}

/// The ring has new members.
pub struct MembershipChanged<'a> {
    pub membership: &'a Membership,
    pub metrics: &'a ClusterMetrics,
}

impl InternalEvent for MembershipChanged<'_> {
    fn emit(self) {
        let m = self.membership;
        self.metrics.changes.inc();
        self.metrics.peers.set(m.members().len() as i64);
        let names: Vec<&str> = m.members().iter().map(|p| &*p.address).collect();
        tracing::info!(
            version = m.version,
            peers = m.members().len(),
            members = %names.join(","),
            "cluster membership changed"
        );
    }
}

/// The EndpointSlice watch (or building its client) failed.
pub struct WatchFailed<'a> {
    pub service: &'a str,
    pub error: &'a str,
    /// Not the first failure in a row: a debug line only.
    pub repeated: bool,
    pub metrics: &'a ClusterMetrics,
}

impl InternalEvent for WatchFailed<'_> {
    fn emit(self) {
        self.metrics.watch_failures.inc();
        self.metrics.watch_failing.set(1);
        if self.repeated {
            tracing::debug!(service = %self.service, error = %self.error, "cluster EndpointSlice watch still failing; retrying");
        } else {
            tracing::warn!(service = %self.service, error = %self.error, "cluster EndpointSlice watch failing; keeping the last known peers and retrying");
        }
    }
}

/// The watch is live again after `failures` failures.
pub struct WatchRecovered<'a> {
    pub service: &'a str,
    pub failures: u64,
    pub metrics: &'a ClusterMetrics,
}

impl InternalEvent for WatchRecovered<'_> {
    fn emit(self) {
        self.metrics.watch_failing.set(0);
        tracing::info!(service = %self.service, failures = self.failures, "cluster EndpointSlice watch recovered");
    }
}

/// A listed address answered with this process's id: it is this instance.
pub struct SelfFound<'a> {
    pub address: &'a str,
    pub advertised: &'a str,
    /// First time for this address: the warning; later lists only count nothing.
    pub first: bool,
    pub metrics: &'a ClusterMetrics,
}

impl InternalEvent for SelfFound<'_> {
    fn emit(self) {
        if !self.first {
            return;
        }
        self.metrics.self_addresses.inc();
        tracing::warn!(
            address = %self.address,
            advertised = %self.advertised,
            "a listed cluster peer is this instance under another address; ignoring it (set --cluster.advertise-address to the address the peers list)"
        );
    }
}

/// Whether the peers are unknown (never listed) while this instance scrapes every clustered
/// target: a warning when it starts, an info line when it ends.
pub struct MembershipUnknown<'a> {
    pub unknown: bool,
    pub error: Option<&'a str>,
    pub metrics: &'a ClusterMetrics,
}

impl InternalEvent for MembershipUnknown<'_> {
    fn emit(self) {
        self.metrics.unknown.set(i64::from(self.unknown));
        if self.unknown {
            tracing::warn!(
                error = self.error.unwrap_or("not listed yet"),
                "cluster membership unknown: every clustered pyroscope.scrape scrapes all targets this instance sees until the peers are listed"
            );
        } else {
            tracing::info!("cluster membership known again: targets shared with the peers");
        }
    }
}
