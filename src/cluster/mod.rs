//! The cluster service: which live peers share the work, and which of them owns a key.
//!
//! One per process (`scraper run --cluster.*`), reaching components through their build
//! options (`runtime::Services`) as the memory budget does. Candidates come from a membership
//! source, the ready endpoints of a Kubernetes Service's EndpointSlices (`kubernetes`) or a
//! static list (`--cluster.join-addresses`); every candidate is then checked over HTTP
//! (`GET /-/ready` every second, `check`), and the members are this instance plus the
//! candidates that answer (`peers`: three failures in a row take a peer out, one success
//! brings it back). Ownership is rendezvous hashing over the members (`ring`), published as a
//! snapshot on a `tokio::sync::watch` so that components re-filter their work when it changes.
//! Changes are logged and counted (`events`).
//!
//! Without `--cluster.enabled` the service still exists, as a ring of this instance alone, so
//! that `clustering { enabled = true }` means "the only peer", as in Alloy.

mod check;
pub mod events;
pub mod kubernetes;
pub mod peers;
pub mod ring;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use self::events::ClusterMetrics;
pub use self::kubernetes::ServiceRef;
use self::peers::Table;
pub use self::peers::{Peer, State};
pub use self::ring::{Member, Membership, target_key};
use crate::runtime::MetricsRegistry;

/// Where the candidate peers come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Kubernetes(ServiceRef),
    Static(Vec<String>),
}

/// The service's settings (the `--cluster.*` flags).
#[derive(Clone, Debug)]
pub struct Options {
    pub node_name: String,
    /// `host:port` the peers reach this instance at: its identity in the ring.
    pub advertise_address: String,
    pub source: Source,
    /// How often every candidate is checked, and how long one check may take.
    pub check_interval: Duration,
    pub check_timeout: Duration,
}

/// The handle components and the server hold. Cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    enabled: bool,
    /// For the peers view: `kubernetes ns/name`, `static`, `disabled`.
    mode: String,
    local: Member,
    membership: watch::Sender<Arc<Membership>>,
    table: Mutex<Table>,
    /// Per component: (keys owned here, keys in total), as the components last reported.
    owned: Mutex<BTreeMap<String, (usize, usize)>>,
    metrics: Option<Arc<ClusterMetrics>>,
}

/// The peers view (`GET /api/v0/web/peers`).
#[derive(Debug, serde::Serialize)]
pub struct View {
    pub enabled: bool,
    pub mode: String,
    #[serde(rename = "self")]
    pub local: ViewMember,
    /// Bumped on every membership change.
    pub version: u64,
    /// False while a starting instance waits for its peers to be listed and checked (it owns
    /// nothing then).
    pub settled: bool,
    pub members: Vec<ViewMember>,
    /// Every candidate but this instance, with its checks.
    pub peers: Vec<Peer>,
    pub components: Vec<ViewOwned>,
}

#[derive(Debug, serde::Serialize)]
pub struct ViewMember {
    pub name: String,
    pub address: String,
}

#[derive(Debug, serde::Serialize)]
pub struct ViewOwned {
    pub component: String,
    /// Keys (targets) this instance owns.
    pub owned: usize,
    pub total: usize,
}

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("building the peer check client: {0}")]
    Client(String),
}

impl Cluster {
    /// A ring of this instance alone, that never changes (`--cluster.enabled` off).
    pub fn alone(node_name: &str, address: &str) -> Cluster {
        Cluster::new(
            false,
            "disabled".into(),
            Member::new(address, node_name),
            None,
        )
    }

    fn new(
        enabled: bool,
        mode: String,
        local: Member,
        metrics: Option<Arc<ClusterMetrics>>,
    ) -> Cluster {
        let alone = Membership::alone(local.clone());
        let first = if enabled { alone.unsettled() } else { alone };
        let membership = watch::Sender::new(Arc::new(first));
        Cluster {
            inner: Arc::new(Inner {
                enabled,
                mode,
                local,
                membership,
                table: Mutex::new(Table::default()),
                owned: Mutex::new(BTreeMap::new()),
                metrics,
            }),
        }
    }

    /// Starts the membership source and the checks; they run until `stop`.
    pub fn start(
        options: Options,
        registry: &MetricsRegistry,
        stop: CancellationToken,
    ) -> Result<Cluster, ClusterError> {
        let metrics = ClusterMetrics::register(registry);
        let mode = match &options.source {
            Source::Kubernetes(s) => format!(
                "kubernetes {}{} (port {})",
                s.namespace
                    .as_deref()
                    .map(|n| format!("{n}/"))
                    .unwrap_or_default(),
                s.name,
                s.port_name
            ),
            Source::Static(_) => "static".to_string(),
        };
        let local = Member::new(&options.advertise_address, &options.node_name);
        let cluster = Cluster::new(true, mode.clone(), local, Some(metrics.clone()));
        let http = reqwest::Client::builder()
            .timeout(options.check_timeout)
            .connect_timeout(options.check_timeout)
            .no_proxy()
            .user_agent(concat!(
                "scraper/",
                env!("CARGO_PKG_VERSION"),
                " (cluster check)"
            ))
            .build()
            .map_err(|e| ClusterError::Client(e.to_string()))?;
        // `None` until the source has listed the candidates once.
        let (candidates_tx, candidates_rx) = watch::channel(None);
        match options.source {
            Source::Kubernetes(service) => {
                crate::runtime::task::spawn(
                    "cluster-kubernetes",
                    kubernetes::run(service, candidates_tx, metrics.clone(), stop.clone()),
                );
            }
            Source::Static(addresses) => {
                let list = addresses
                    .into_iter()
                    .filter(|a| *a != options.advertise_address)
                    .map(|a| (a.clone(), a))
                    .collect();
                candidates_tx.send_replace(Some(list));
                // Keep the sender alive with the checks: dropped, `changed()` would fail.
                let keep = stop.clone();
                crate::runtime::task::spawn("cluster-static", async move {
                    keep.cancelled().await;
                    drop(candidates_tx);
                });
            }
        }
        tracing::info!(
            node = %options.node_name,
            advertise_address = %options.advertise_address,
            mode = %mode,
            "clustering enabled"
        );
        crate::runtime::task::spawn(
            "cluster-check",
            check::run(
                cluster.clone(),
                candidates_rx,
                http,
                options.check_interval,
                stop,
            ),
        );
        Ok(cluster)
    }

    /// An enabled cluster whose members are set by the caller (`set_members`): for tests of
    /// the components that use it.
    #[cfg(test)]
    pub(crate) fn fixed(local: Member) -> Cluster {
        let c = Cluster::new(true, "test".into(), local, None);
        c.inner
            .membership
            .send_modify(|m| *m = Arc::new((**m).clone().settled_now()));
        c
    }

    #[cfg(test)]
    pub(crate) fn set_members(&self, members: Vec<Member>) {
        let version = self.membership().version + 1;
        let next = Membership::new(self.inner.local.clone(), members, version);
        self.inner.membership.send_replace(Arc::new(next));
    }

    /// Whether `--cluster.enabled` was given.
    pub fn enabled(&self) -> bool {
        self.inner.enabled
    }

    /// The ring now.
    pub fn membership(&self) -> Arc<Membership> {
        self.inner.membership.borrow().clone()
    }

    /// Follows the ring: `changed()` fires on each membership change.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Membership>> {
        self.inner.membership.subscribe()
    }

    /// What a component owns now, for the peers view.
    pub fn report_owned(&self, component: &str, owned: usize, total: usize) {
        crate::sync::lock(&self.inner.owned).insert(component.to_string(), (owned, total));
    }

    /// A component stopped: its keys are no longer anyone's here.
    pub fn forget_owned(&self, component: &str) {
        crate::sync::lock(&self.inner.owned).remove(component);
    }

    pub fn view(&self) -> View {
        let membership = self.membership();
        let member = |m: &Member| ViewMember {
            name: m.name.to_string(),
            address: m.address.to_string(),
        };
        View {
            enabled: self.inner.enabled,
            mode: self.inner.mode.clone(),
            local: member(&self.inner.local),
            version: membership.version,
            settled: membership.settled,
            members: membership.members().iter().map(member).collect(),
            peers: crate::sync::lock(&self.inner.table)
                .peers()
                .cloned()
                .collect(),
            components: crate::sync::lock(&self.inner.owned)
                .iter()
                .map(|(c, (owned, total))| ViewOwned {
                    component: c.clone(),
                    owned: *owned,
                    total: *total,
                })
                .collect(),
        }
    }

    /// Publishes the table's members if they differ from the ring's, or if the ring was not
    /// settled and `settled` says it now is.
    fn publish(&self, table: &Table, settled: bool) {
        let current = self.membership();
        let mut next = Membership::new(
            self.inner.local.clone(),
            table.members(),
            current.version + 1,
        );
        next.settled = current.settled || settled;
        if next.same_members(&current) && next.settled == current.settled {
            return;
        }
        if let Some(metrics) = &self.inner.metrics {
            crate::runtime::event::emit(events::MembershipChanged {
                membership: &next,
                metrics,
            });
        }
        self.inner.membership.send_replace(Arc::new(next));
    }
}
