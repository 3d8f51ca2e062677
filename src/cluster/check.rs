//! The peer checks: every candidate's `GET /-/ready`, all at once, every interval, and at once
//! when the candidates change. A killed instance refuses connections immediately, so it
//! leaves the ring after three intervals, before Kubernetes marks its pod unready.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Cluster;
use super::events::{CheckFailed, PeerChanged};
use crate::runtime::event::emit;

/// The longest a starting instance owns nothing while waiting for its peers to be listed.
const SETTLE_AT_MOST: Duration = Duration::from_secs(10);

pub(super) async fn run(
    cluster: Cluster,
    mut candidates: watch::Receiver<Option<Vec<(String, String)>>>,
    http: reqwest::Client,
    interval: Duration,
    stop: CancellationToken,
) {
    let mut listed_changed = true;
    // The ring is settled once the source has listed the candidates and a round of checks
    // has run over them; or, should the source not answer, after `SETTLE_AT_MOST`.
    let started = tokio::time::Instant::now();
    let mut listed_once = false;
    loop {
        if listed_changed {
            let listed = candidates.borrow_and_update().clone();
            if let Some(listed) = listed {
                listed_once = true;
                let mut table = crate::sync::lock(&cluster.inner.table);
                let transitions = table.set_candidates(&listed);
                for t in &transitions {
                    emit(PeerChanged { transition: t });
                }
                if transitions.iter().any(|t| t.changes_members()) {
                    cluster.publish(&table, false);
                }
            }
        }
        let addresses: Vec<Arc<str>> = crate::sync::lock(&cluster.inner.table).addresses();
        let checks = addresses.iter().map(|a| check(&http, a));
        let results = futures::future::join_all(checks).await;
        {
            let now = SystemTime::now();
            let mut table = crate::sync::lock(&cluster.inner.table);
            let mut changed = false;
            for (address, result) in addresses.iter().zip(results) {
                if result.is_err()
                    && let Some(metrics) = &cluster.inner.metrics
                {
                    emit(CheckFailed { metrics });
                }
                if let Some(t) = table.record(address, result, now) {
                    emit(PeerChanged { transition: &t });
                    changed |= t.changes_members();
                }
            }
            let settle = !cluster.membership().settled
                && (listed_once || started.elapsed() >= SETTLE_AT_MOST);
            if settle && !listed_once {
                tracing::warn!(
                    waited = ?SETTLE_AT_MOST,
                    "the cluster's peers are not listed yet; sharing work with the peers known so far"
                );
            }
            if changed || settle {
                cluster.publish(&table, settle);
            }
        }
        listed_changed = tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => false,
            r = candidates.changed() => {
                if r.is_err() {
                    // The source ended (shutdown): keep checking what it listed last.
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(interval) => {}
                    }
                }
                r.is_ok()
            }
        };
    }
}

/// One check: a 2xx answer to `GET /-/ready` within the client's timeout.
async fn check(http: &reqwest::Client, address: &str) -> Result<(), String> {
    let url = format!("http://{address}/-/ready");
    match http.get(&url).send().await {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(format!("GET {url}: {}", r.status())),
        Err(e) => Err(format!("GET {url}: {e}")),
    }
}
