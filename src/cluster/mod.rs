//! The cluster service: which live peers share the work, and which of them owns a key.
//!
//! One per process (`scraper run --cluster.*`), reaching components through their build
//! options (`runtime::Services`) as the memory budget does. Candidates come from a membership
//! source, the ready endpoints of a Kubernetes Service's EndpointSlices (`kubernetes`) or a
//! static list (`--cluster.join-addresses`); every candidate is then checked over HTTP
//! (`GET /-/ready` every second, each peer on its own, `check`), and the members are this
//! instance plus the candidates that answer (`peers`: three failures in a row take a peer out,
//! three successes in a row bring it back). Addresses have one spelling (`addr`), and a
//! candidate that answers with this process's id (header [`INSTANCE_HEADER`]) is this instance
//! under another address, never a peer. Ownership is rendezvous hashing over the members (`ring`), published as a
//! snapshot on a `tokio::sync::watch` so that components re-filter their work when it changes.
//! Changes are logged and counted (`events`).
//!
//! Without `--cluster.enabled` the service still exists, as a ring of this instance alone, so
//! that `clustering { enabled = true }` means "the only peer", as in Alloy.

pub mod addr;
mod check;
pub mod events;
pub mod kubernetes;
pub mod peers;
pub mod ring;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use self::events::ClusterMetrics;
pub use self::kubernetes::ServiceRef;
use self::peers::Table;
pub use self::peers::{Peer, State};
pub use self::ring::{Member, Membership, target_key, target_key_in};
use crate::runtime::MetricsRegistry;

/// The `/-/ready` answer header carrying [`instance_id`].
pub const INSTANCE_HEADER: &str = "x-scraper-instance";

/// This process's id, random per start: how a check recognises this instance behind an
/// address it does not advertise.
pub fn instance_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        use std::hash::{BuildHasher as _, Hasher as _};
        // RandomState is seeded from the OS per process; mixing in the pid and the time keeps
        // two processes apart even if it were not.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        h.write_u128(t.as_nanos());
        format!("{:016x}", h.finish())
    })
}

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
    /// `host:port` the peers reach this instance at: its identity in the ring (normalised
    /// by `addr::normalize` when the service starts).
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
    /// Whether the membership source has listed the candidates once.
    listed: AtomicBool,
    /// The source's current failure (the EndpointSlice watch), if any.
    source_error: Mutex<Option<String>>,
    /// Settled without the peers ever listed: scraping every clustered target.
    unknown: AtomicBool,
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
    /// Whether the membership source has listed the peers once.
    pub listed: bool,
    /// The membership source's current failure (e.g. the EndpointSlice watch refused).
    pub source_error: Option<String>,
    /// Settled without the peers ever listed: this instance scrapes every clustered target.
    pub membership_unknown: bool,
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
    #[error("--cluster.advertise-address: {0}")]
    Address(String),
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
                table: Mutex::new(Table::new(&local.address)),
                local,
                membership,
                owned: Mutex::new(BTreeMap::new()),
                metrics,
                listed: AtomicBool::new(false),
                source_error: Mutex::new(None),
                unknown: AtomicBool::new(false),
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
        let advertised =
            addr::normalize(&options.advertise_address).map_err(ClusterError::Address)?;
        let local = Member::new(&advertised, &options.node_name);
        let cluster = Cluster::new(true, mode.clone(), local, Some(metrics.clone()));
        let http = reqwest::Client::builder()
            .timeout(options.check_timeout)
            .connect_timeout(options.check_timeout)
            .no_proxy()
            .user_agent(format!("{} (cluster check)", crate::httpclient::USER_AGENT))
            .build()
            .map_err(|e| ClusterError::Client(e.to_string()))?;
        // `None` until the source has listed the candidates once.
        let (candidates_tx, candidates_rx) = watch::channel(None);
        match options.source {
            Source::Kubernetes(service) => {
                crate::runtime::task::spawn(
                    "cluster-kubernetes",
                    kubernetes::run(
                        service,
                        addr::Family::of(&advertised),
                        candidates_tx,
                        cluster.clone(),
                        metrics.clone(),
                        stop.clone(),
                    ),
                );
            }
            Source::Static(addresses) => {
                // Normalised by the flag parsing; this instance's address is dropped by the table.
                let list = addresses
                    .into_iter()
                    .map(|a| addr::normalize(&a).unwrap_or(a))
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
            advertise_address = %advertised,
            instance_id = instance_id(),
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

    /// An enabled cluster whose source never listed the peers, settled on its timeout.
    #[cfg(test)]
    pub(crate) fn unlisted(local: Member) -> Cluster {
        let c = Cluster::new(true, "test".into(), local.clone(), None);
        c.set_source_error(Some("endpointslices is forbidden".into()));
        c.publish(&Table::new(&local.address), true);
        c
    }

    #[cfg(test)]
    pub(crate) fn list_now(&self) {
        self.set_listed();
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
        // One lock at a time: never hold one while taking another here.
        let source_error = crate::sync::lock(&self.inner.source_error).clone();
        let peers: Vec<Peer> = crate::sync::lock(&self.inner.table)
            .peers()
            .cloned()
            .collect();
        let components: Vec<ViewOwned> = crate::sync::lock(&self.inner.owned)
            .iter()
            .map(|(c, (owned, total))| ViewOwned {
                component: c.clone(),
                owned: *owned,
                total: *total,
            })
            .collect();
        View {
            enabled: self.inner.enabled,
            mode: self.inner.mode.clone(),
            local: member(&self.inner.local),
            version: membership.version,
            settled: membership.settled,
            listed: self.inner.listed.load(Ordering::Relaxed),
            source_error,
            membership_unknown: self.inner.unknown.load(Ordering::Relaxed),
            members: membership.members().iter().map(member).collect(),
            peers,
            components,
        }
    }

    /// Why every clustered target is scraped here, while the peers were never listed (the
    /// ring settled on its timeout without them): for the components' health.
    pub fn membership_unknown(&self) -> Option<String> {
        if !self.inner.unknown.load(Ordering::Relaxed) {
            return None;
        }
        let error = crate::sync::lock(&self.inner.source_error).clone();
        Some(match error {
            Some(e) => format!("cluster membership unknown ({e}): scraping all targets this instance sees"),
            None => "cluster membership unknown (peers not listed yet): scraping all targets this instance sees".to_string(),
        })
    }

    /// The membership source's state: listed once, failing now.
    pub(crate) fn set_source_error(&self, error: Option<String>) {
        *crate::sync::lock(&self.inner.source_error) = error;
    }

    fn set_listed(&self) {
        self.inner.listed.store(true, Ordering::Relaxed);
        self.update_unknown();
    }

    /// Emits the start or end of "membership unknown" when it changes.
    fn update_unknown(&self) {
        let unknown = self.inner.enabled
            && self.membership().settled
            && !self.inner.listed.load(Ordering::Relaxed);
        if self.inner.unknown.swap(unknown, Ordering::Relaxed) != unknown
            && let Some(metrics) = &self.inner.metrics
        {
            let error = crate::sync::lock(&self.inner.source_error).clone();
            crate::runtime::event::emit(events::MembershipUnknown {
                unknown,
                error: error.as_deref(),
                metrics,
            });
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
        self.update_unknown();
    }
}
