//! The peer checks: every candidate's `GET /-/ready`, each peer on its own schedule: at every
//! tick (the interval) a check starts for each peer that has none in flight, and its answer is
//! recorded when it comes, so a hung peer (each of its checks waits for the timeout) slows
//! nobody else's. A killed instance refuses connections at once, so it leaves the ring after
//! three ticks, before Kubernetes marks its pod unready; a hung one after three timeouts.
//!
//! An answer carrying this process's id ([`super::INSTANCE_HEADER`]) comes from this instance
//! under another address: that address stops being a candidate.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::events::{CheckFailed, PeerChanged, SelfFound};
use super::peers::Failure;
use super::{Cluster, INSTANCE_HEADER, instance_id};
use crate::runtime::event::emit;

/// The longest a starting instance owns nothing while waiting for its peers to be listed and
/// decided.
const SETTLE_AT_MOST: Duration = Duration::from_secs(10);

/// What one check found.
#[derive(Debug)]
enum Outcome {
    /// A 2xx answer, with the process id it carried (if the peer sends one).
    Ready(Option<String>),
    /// The answer came from this process.
    Itself,
    Failed(Failure),
}

pub(super) async fn run(
    cluster: Cluster,
    mut candidates: watch::Receiver<Option<Vec<(String, String)>>>,
    http: reqwest::Client,
    interval: Duration,
    stop: CancellationToken,
) {
    // The ring is settled once the source has listed the candidates and each has answered
    // or failed enough checks to be out (a slow or starting peer is not taken for an absent
    // one); or, should that not happen, after `SETTLE_AT_MOST`.
    let started = tokio::time::Instant::now();
    let mut listed_once = false;
    let mut source_open = true;
    let mut in_flight: HashSet<Arc<str>> = HashSet::new();
    let mut checks = FuturesUnordered::new();
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let start_checks = |in_flight: &mut HashSet<Arc<str>>, checks: &mut FuturesUnordered<_>| {
        for address in crate::sync::lock(&cluster.inner.table).addresses() {
            if in_flight.insert(address.clone()) {
                checks.push(check(http.clone(), address));
            }
        }
    };
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => start_checks(&mut in_flight, &mut checks),
            r = candidates.changed(), if source_open => {
                if r.is_err() {
                    // The source ended (shutdown): keep checking what it listed last.
                    source_open = false;
                    continue;
                }
                let listed = candidates.borrow_and_update().clone();
                let Some(listed) = listed else { continue };
                listed_once = true;
                {
                    let mut table = crate::sync::lock(&cluster.inner.table);
                    let transitions = table.set_candidates(&listed);
                    for t in &transitions {
                        emit(PeerChanged { transition: t });
                    }
                    if transitions.iter().any(|t| t.changes_members()) {
                        cluster.publish(&table, false);
                    }
                }
                cluster.set_listed();
                // New candidates are checked now, not at the next tick.
                start_checks(&mut in_flight, &mut checks);
            }
            Some((address, outcome)) = checks.next(), if !checks.is_empty() => {
                in_flight.remove(&address);
                record(&cluster, &address, outcome);
            }
        }
        let settle = !cluster.membership().settled
            && ((listed_once && crate::sync::lock(&cluster.inner.table).decided())
                || started.elapsed() >= SETTLE_AT_MOST);
        if settle {
            if !listed_once {
                tracing::warn!(
                    waited = ?SETTLE_AT_MOST,
                    "the cluster's peers are not listed yet; sharing work with the peers known so far"
                );
            } else if !crate::sync::lock(&cluster.inner.table).decided() {
                tracing::warn!(
                    waited = ?SETTLE_AT_MOST,
                    "some cluster peers neither answered nor failed their checks yet; sharing work with the peers known so far"
                );
            }
            let table = crate::sync::lock(&cluster.inner.table);
            cluster.publish(&table, true);
        }
    }
}

/// Records one check's outcome, publishing the ring if its members changed.
fn record(cluster: &Cluster, address: &Arc<str>, outcome: Outcome) {
    let mut table = crate::sync::lock(&cluster.inner.table);
    let result = match outcome {
        Outcome::Itself => {
            let first = table.found_self(address);
            if let Some(metrics) = &cluster.inner.metrics {
                emit(SelfFound {
                    address,
                    advertised: &cluster.inner.local.address,
                    first,
                    metrics,
                });
            }
            return;
        }
        Outcome::Ready(instance) => {
            if let Some(instance) = instance {
                table.note_instance(address, &instance);
            }
            Ok(())
        }
        Outcome::Failed(f) => {
            if let Some(metrics) = &cluster.inner.metrics {
                emit(CheckFailed { metrics });
            }
            Err(f)
        }
    };
    if let Some(t) = table.record(address, result, SystemTime::now()) {
        emit(PeerChanged { transition: &t });
        if t.changes_members() {
            cluster.publish(&table, false);
        }
    }
}

/// One check: a 2xx answer to `GET /-/ready` within the client's timeout.
async fn check(http: reqwest::Client, address: Arc<str>) -> (Arc<str>, Outcome) {
    let url = format!("http://{address}/-/ready");
    let outcome = match http.get(&url).send().await {
        Ok(r)
            if r.headers()
                .get(INSTANCE_HEADER)
                .is_some_and(|v| v.as_bytes() == instance_id().as_bytes()) =>
        {
            Outcome::Itself
        }
        Ok(r) if r.status().is_success() => Outcome::Ready(
            r.headers()
                .get(INSTANCE_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        ),
        Ok(r) => Outcome::Failed(Failure {
            error: format!("GET {url}: {}", r.status()),
            starting: r.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE,
        }),
        Err(e) => Outcome::Failed(Failure::new(format!("GET {url}: {e}"))),
    };
    (address, outcome)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;
    use tokio_util::sync::CancellationToken;

    use super::super::{Cluster, Options, Source, State, instance_id};
    use crate::runtime::MetricsRegistry;

    /// A peer on loopback: answers every request with `reply`, or never when it is `None`.
    async fn peer(reply: Option<String>) -> String {
        let l = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let address = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
        crate::runtime::task::spawn("test-peer", async move {
            let mut held = Vec::new();
            while let Ok((mut s, _)) = l.accept().await {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                match &reply {
                    Some(r) => {
                        let _ = s.write_all(r.as_bytes()).await;
                    }
                    // Hung: keep the connection open, answer nothing.
                    None => held.push(s),
                }
            }
        });
        address
    }

    #[tokio::test]
    async fn a_hung_peer_delays_no_other_and_this_instance_is_found_by_its_id() {
        let ok = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        let live = peer(Some(ok.to_string())).await;
        let hung = peer(None).await;
        let me = peer(Some(format!(
            "HTTP/1.1 200 OK\r\nx-scraper-instance: {}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            instance_id()
        )))
        .await;
        let stop = CancellationToken::new();
        let cluster = Cluster::start(
            Options {
                node_name: "me".into(),
                advertise_address: "127.0.0.1:1".into(),
                source: Source::Static(vec![live.clone(), hung.clone(), me.clone()]),
                check_interval: Duration::from_millis(50),
                // Far longer than the test: the hung peer's first check never ends in it.
                check_timeout: Duration::from_secs(60),
            },
            &MetricsRegistry::new(),
            stop.clone(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        // Hang guard only.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let v = cluster.view();
            let up = v
                .peers
                .iter()
                .any(|p| *p.address == *live && p.state == State::Up);
            let me_gone = v.peers.iter().all(|p| *p.address != *me);
            if up && me_gone {
                let h = v.peers.iter().find(|p| *p.address == *hung);
                assert!(
                    h.is_some_and(|p| p.last_check.is_none() && p.state == State::Joining),
                    "the live peer joined while the hung one's check is still pending: {h:?}"
                );
                assert_eq!(v.members.len(), 2, "this instance and the live peer");
                assert!(!v.settled, "the hung peer is not decided yet");
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "live peer never up: {:?}",
                v.peers
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stop.cancel();
    }
}
