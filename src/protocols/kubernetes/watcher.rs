//! One scope's list+watch loop: client-go's reflector as Prometheus runs it, written here
//! rather than taken from kube-runtime's `watcher` because that one has two failure modes that
//! froze discovery against a misbehaving API server (issue 21):
//!
//! * it bounds only the body of a running watch: a list, or a watch request that is accepted
//!   and never answered, waits forever (kube's client has no read timeout);
//! * a watch *request* refused with HTTP 410 Gone is retried from the same expired
//!   resourceVersion forever, and never relists.
//!
//! The loop: list (paged, 500 a page) → watch from the list's resourceVersion → when the watch
//! ends cleanly (its `timeoutSeconds`, a dropped connection), watch again from the last version
//! seen (events and bookmarks advance it) → on 410 Gone, however it arrives (an `ERROR` event
//! or a bare `Status` line in the stream, the HTTP status of the watch request, a list
//! continuation that expired), list again from scratch. A relist is `Init`, `InitApply`...,
//! `InitDone`, which `state` swaps in whole, deleting what the new list no longer holds.
//!
//! Every request is bounded ([`Timeouts`]): a list page and the answer to a watch request by
//! `request`; a running watch by its own `timeoutSeconds` plus `watch_margin`, after which the
//! connection is presumed dead (the server should have ended it). A failure is reported as
//! [`WatchEvent::Error`] and the next request waits a backoff (0.8 s doubling to 30 s, reset
//! after two quiet minutes, as client-go and kube). [`WatchEvent::Watching`] says a watch
//! request was answered: the watch is live again.

use std::collections::VecDeque;
use std::fmt;
use std::fmt::Debug;
use std::time::Duration;

use futures::stream::{BoxStream, StreamExt as _};
use kube::Api;
use kube::api::{ListParams, WatchEvent as KubeEvent, WatchParams};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

/// What one list+watch hands out: client-go's reflector events, carrying whatever `wrap` made of
/// each object (discovery slims objects into its cache's types; the cluster service keeps
/// EndpointSlices as they are).
#[derive(Debug)]
pub enum WatchEvent<O> {
    /// A list starts; the objects it hands out replace the watch's content at `InitDone`.
    Init,
    InitApply(O),
    InitDone,
    /// A watch request was answered: the watch is live, and the cache current from here on.
    Watching,
    Apply(O),
    Delete(O),
    /// A list or watch failed; it is retried with backoff.
    Error(Failure),
}

/// How long a watch waits on the API server, and how soon it retries. Not an Alloy argument
/// (discovery's block stays Alloy's); tests shorten it (discovery's `Options::timeouts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// One list page (answer and body) and the answer (status and headers) to a watch
    /// request. 60 s is the API server's own limit for non-watch requests
    /// (`--request-timeout`), so a server that is alive answers within it, if only with 504.
    pub request: Duration,
    /// Each watch's `timeoutSeconds` (whole seconds): the server ends the watch cleanly then,
    /// and it is resumed from the last version seen. kube's default.
    pub watch: Duration,
    /// How long past `watch` a watch may stay open before its connection is presumed dead
    /// (nothing, not even the server's end of the watch, arrived).
    pub watch_margin: Duration,
    /// The first wait before retrying after a failure; it doubles up to `retry_max`.
    pub retry_initial: Duration,
    pub retry_max: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            request: Duration::from_secs(60),
            watch: Duration::from_secs(290),
            watch_margin: Duration::from_secs(30),
            retry_initial: Duration::from_millis(800),
            retry_max: Duration::from_secs(30),
        }
    }
}

impl Timeouts {
    /// `timeoutSeconds` for watch requests: at least one second (0 would mean the server's
    /// default, which we would not know to bound).
    fn watch_seconds(&self) -> u32 {
        u32::try_from(self.watch.as_secs().max(1)).unwrap_or(u32::MAX)
    }

    /// The longest a watch may stay open.
    fn watch_bound(&self) -> Duration {
        Duration::from_secs(u64::from(self.watch_seconds())) + self.watch_margin
    }
}

/// Why a list or watch failed: the `reason` label of `discovery_kubernetes_failures_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureReason {
    /// A list request failed (refused, unreachable, an error status).
    List,
    /// A watch request failed or its stream broke.
    Watch,
    /// A request was not answered in time, or a watch outlived its bound.
    Timeout,
    /// 410 Gone: the resource version is too old; discovery relists. Routine, not an outage.
    Expired,
}

impl FailureReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureReason::List => "list",
            FailureReason::Watch => "watch",
            FailureReason::Timeout => "timeout",
            FailureReason::Expired => "expired",
        }
    }
}

/// A failed list or watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub reason: FailureReason,
    pub message: String,
}

impl Failure {
    pub fn new(reason: FailureReason, message: impl Into<String>) -> Self {
        Failure {
            reason,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason.as_str(), self.message)
    }
}

/// The label and field selectors of one watch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selectors {
    pub label: Option<String>,
    pub field: Option<String>,
}

/// Retry pacing: from `retry_initial` doubling to `retry_max`, with jitter (the push engine's
/// `backoff_delay`: retry n waits a uniform time in `[initial·2^(n-1), initial·2^n)`, capped),
/// back to the start once no failure came for [`Backoff::RESET`]. Without jitter, the watches
/// of every role and namespace would all retry a restarting API server at the same instants.
#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    failures: u32,
    last: Option<Instant>,
}

impl Backoff {
    /// client-go's and kube's reset period.
    const RESET: Duration = Duration::from_secs(120);

    pub fn new(timeouts: &Timeouts) -> Self {
        Backoff {
            initial: timeouts.retry_initial,
            max: timeouts.retry_max.max(timeouts.retry_initial),
            failures: 0,
            last: None,
        }
    }

    /// The wait before the retry of a failure that happened `now`.
    pub fn delay(&mut self, now: Instant) -> Duration {
        if self
            .last
            .is_some_and(|t| now.saturating_duration_since(t) > Self::RESET)
        {
            self.failures = 0;
        }
        self.failures = self.failures.saturating_add(1);
        self.last = Some(now);
        backoff_delay(self.initial, self.max, self.failures)
    }
}

/// The delay before retry `n` (1-based): uniform in `[initial·2^(n-1), initial·2^n)`, capped at
/// `max` (the same schedule as the push engine's, which sits above this layer).
fn backoff_delay(initial: Duration, max: Duration, n: u32) -> Duration {
    if initial.is_zero() {
        return Duration::ZERO;
    }
    let lo = initial.saturating_mul(1u32 << n.saturating_sub(1).min(30));
    if lo >= max {
        return max;
    }
    let hi = lo.saturating_mul(2).min(max);
    lo + (hi - lo).mul_f64(unit_random())
}

/// A uniform value in [0, 1): a fresh `RandomState` is randomly keyed, which is jitter enough
/// for spreading retries and needs no random-number crate.
fn unit_random() -> f64 {
    use std::hash::BuildHasher as _;
    let bits = std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64);
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// A second 410 this soon after the last one is backed off from like any failure.
const EXPIRED_AGAIN: Duration = Duration::from_secs(10);

/// A watch that ends by itself this soon without a single event is a failure (client-go's
/// "very short watch"): retrying it at once would be a busy loop.
const SHORT_WATCH: Duration = Duration::from_secs(1);
/// client-go's page size.
const PAGE_SIZE: u32 = 500;

type Events<K> = BoxStream<'static, kube::Result<KubeEvent<K>>>;

enum Phase<K> {
    /// Start a list from scratch (`Init`).
    Relist,
    /// A list in progress: the current page's objects still to hand out, then the next page.
    /// `version` is `None` until the first page arrives.
    Listing {
        items: VecDeque<K>,
        continue_token: Option<String>,
        version: Option<String>,
    },
    /// Start a watch from `version`.
    Resume { version: String },
    Watching {
        version: String,
        stream: Events<K>,
        started: Instant,
        deadline: Instant,
        seen_any: bool,
    },
}

struct ListWatch<K, O> {
    api: Api<K>,
    selectors: Selectors,
    timeouts: Timeouts,
    wrap: fn(K) -> O,
    backoff: Backoff,
    /// Set after a failure: the wait before the next request.
    wait: Option<Duration>,
    /// When the last 410 came: another within [`EXPIRED_AGAIN`] is a failure to back off from,
    /// not routine (a server answering 410 to every watch must not make us spin).
    expired_at: Option<Instant>,
    phase: Phase<K>,
}

/// The event stream of one list+watch. It never ends.
pub fn run<K, O>(
    api: Api<K>,
    selectors: Selectors,
    timeouts: Timeouts,
    wrap: fn(K) -> O,
) -> BoxStream<'static, WatchEvent<O>>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    O: Send + 'static,
{
    let lw = ListWatch {
        api,
        selectors,
        timeouts,
        wrap,
        backoff: Backoff::new(&timeouts),
        wait: None,
        expired_at: None,
        phase: Phase::Relist,
    };
    futures::stream::unfold(lw, |mut lw| async move {
        let event = lw.next().await;
        Some((event, lw))
    })
    .boxed()
}

fn is_gone(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(status) if status.code == 410)
}

impl<K, O> ListWatch<K, O>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    O: Send + 'static,
{
    async fn next(&mut self) -> WatchEvent<O> {
        loop {
            if let Some(wait) = self.wait.take() {
                tokio::time::sleep(wait).await;
            }
            let phase = std::mem::replace(&mut self.phase, Phase::Relist);
            let (event, next) = self.step(phase).await;
            self.phase = next;
            if let Some(event) = event {
                // A 410 is routine (the version was compacted away): relist at once, without
                // waiting or growing the wait the next real failure gets; unless the relist
                // that followed the last 410 ran into another.
                if let WatchEvent::Error(f) = &event {
                    let now = Instant::now();
                    let routine = f.reason == FailureReason::Expired
                        && self
                            .expired_at
                            .is_none_or(|t| now.duration_since(t) >= EXPIRED_AGAIN);
                    if f.reason == FailureReason::Expired {
                        self.expired_at = Some(now);
                    }
                    if !routine {
                        self.wait = Some(self.backoff.delay(now));
                    }
                }
                return event;
            }
        }
    }

    // `&mut self` although nothing changes: the phase holds a stream that is `Send` but not
    // `Sync`, so a shared borrow held across an await would make the future not `Send`.
    async fn step(&mut self, phase: Phase<K>) -> (Option<WatchEvent<O>>, Phase<K>) {
        match phase {
            Phase::Relist => (
                Some(WatchEvent::Init),
                Phase::Listing {
                    items: VecDeque::new(),
                    continue_token: None,
                    version: None,
                },
            ),
            Phase::Listing {
                mut items,
                continue_token,
                version,
            } => {
                if let Some(obj) = items.pop_front() {
                    let event = WatchEvent::InitApply((self.wrap)(obj));
                    let phase = Phase::Listing {
                        items,
                        continue_token,
                        version,
                    };
                    return (Some(event), phase);
                }
                if let (None, Some(version)) = (&continue_token, &version) {
                    let version = version.clone();
                    return (Some(WatchEvent::InitDone), Phase::Resume { version });
                }
                self.list_page(continue_token, version).await
            }
            Phase::Resume { version } => self.start_watch(version).await,
            Phase::Watching {
                version,
                stream,
                started,
                deadline,
                seen_any,
            } => {
                self.watch_next(version, stream, started, deadline, seen_any)
                    .await
            }
        }
    }

    async fn list_page(
        &mut self,
        continue_token: Option<String>,
        version: Option<String>,
    ) -> (Option<WatchEvent<O>>, Phase<K>) {
        // Consistent reads, paged. client-go asks for resourceVersion=0 (the watch cache,
        // where `limit` is ignored); paging keeps a 10,000-pod list from being one response
        // held in memory at once.
        let lp = ListParams {
            label_selector: self.selectors.label.clone(),
            field_selector: self.selectors.field.clone(),
            limit: Some(PAGE_SIZE),
            continue_token,
            ..ListParams::default()
        };
        let request = self.timeouts.request;
        let list = match tokio::time::timeout(request, self.api.list(&lp)).await {
            Ok(Ok(list)) => list,
            Ok(Err(e)) if is_gone(&e) => {
                let f = Failure::new(
                    FailureReason::Expired,
                    format!("list continuation expired, listing again: {e}"),
                );
                return (Some(WatchEvent::Error(f)), Phase::Relist);
            }
            Ok(Err(e)) => {
                let f = Failure::new(FailureReason::List, e.to_string());
                return (Some(WatchEvent::Error(f)), Phase::Relist);
            }
            Err(_) => {
                let f = Failure::new(
                    FailureReason::Timeout,
                    format!("list not answered within {request:?}"),
                );
                return (Some(WatchEvent::Error(f)), Phase::Relist);
            }
        };
        let continue_token = list.metadata.continue_.filter(|c| !c.is_empty());
        let version = list
            .metadata
            .resource_version
            .filter(|v| !v.is_empty())
            .or(version);
        if version.is_none() && continue_token.is_none() {
            let f = Failure::new(
                FailureReason::List,
                "list answered without a resourceVersion",
            );
            return (Some(WatchEvent::Error(f)), Phase::Relist);
        }
        let phase = Phase::Listing {
            items: list.items.into(),
            continue_token,
            version,
        };
        (None, phase)
    }

    async fn start_watch(&mut self, version: String) -> (Option<WatchEvent<O>>, Phase<K>) {
        let wp = WatchParams {
            label_selector: self.selectors.label.clone(),
            field_selector: self.selectors.field.clone(),
            timeout: Some(self.timeouts.watch_seconds()),
            bookmarks: true,
            send_initial_events: false,
        };
        let started = Instant::now();
        let request = self.timeouts.request;
        match tokio::time::timeout(request, self.api.watch(&wp, &version)).await {
            Ok(Ok(stream)) => {
                let phase = Phase::Watching {
                    version,
                    stream: stream.boxed(),
                    started,
                    deadline: started + self.timeouts.watch_bound(),
                    seen_any: false,
                };
                (Some(WatchEvent::Watching), phase)
            }
            // The server has compacted past `version` and says so with the request's status
            // (etcd without the watch cache does): only a new list can catch up.
            Ok(Err(e)) if is_gone(&e) => {
                let f = Failure::new(
                    FailureReason::Expired,
                    format!("watch from resource version {version} refused: {e}; relisting"),
                );
                (Some(WatchEvent::Error(f)), Phase::Relist)
            }
            Ok(Err(e)) => {
                let f = Failure::new(FailureReason::Watch, e.to_string());
                (Some(WatchEvent::Error(f)), Phase::Resume { version })
            }
            Err(_) => {
                let f = Failure::new(
                    FailureReason::Timeout,
                    format!("watch request not answered within {request:?}"),
                );
                (Some(WatchEvent::Error(f)), Phase::Resume { version })
            }
        }
    }

    async fn watch_next(
        &mut self,
        mut version: String,
        mut stream: Events<K>,
        started: Instant,
        deadline: Instant,
        seen_any: bool,
    ) -> (Option<WatchEvent<O>>, Phase<K>) {
        let next = match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(next) => next,
            Err(_) => {
                let f = Failure::new(
                    FailureReason::Timeout,
                    format!(
                        "watch still open {:?} after it started, past its timeoutSeconds={}: connection presumed dead",
                        self.timeouts.watch_bound(),
                        self.timeouts.watch_seconds()
                    ),
                );
                return (Some(WatchEvent::Error(f)), Phase::Resume { version });
            }
        };
        let event = match next {
            Some(Ok(event)) => event,
            // kube-client turns a line that is a bare `Status` into this error.
            Some(Err(e)) if is_gone(&e) => {
                let f = Failure::new(
                    FailureReason::Expired,
                    format!("watch expired: {e}; relisting"),
                );
                return (Some(WatchEvent::Error(f)), Phase::Relist);
            }
            Some(Err(e)) => {
                let f = Failure::new(FailureReason::Watch, format!("stream failed: {e}"));
                return (Some(WatchEvent::Error(f)), Phase::Resume { version });
            }
            None => {
                let lasted = started.elapsed();
                if !seen_any && lasted < SHORT_WATCH {
                    let f = Failure::new(
                        FailureReason::Watch,
                        format!("ended after {lasted:?} without an event (a very short watch)"),
                    );
                    return (Some(WatchEvent::Error(f)), Phase::Resume { version });
                }
                // The server's timeoutSeconds, or a connection cut cleanly: resume.
                return (None, Phase::Resume { version });
            }
        };
        let out = match event {
            KubeEvent::Added(o) | KubeEvent::Modified(o) => {
                advance(&mut version, o.meta().resource_version.as_deref());
                Some(WatchEvent::Apply((self.wrap)(o)))
            }
            KubeEvent::Deleted(o) => {
                advance(&mut version, o.meta().resource_version.as_deref());
                Some(WatchEvent::Delete((self.wrap)(o)))
            }
            KubeEvent::Bookmark(b) => {
                advance(&mut version, Some(&b.metadata.resource_version));
                None
            }
            KubeEvent::Error(status) if status.code == 410 => {
                let f = Failure::new(
                    FailureReason::Expired,
                    format!(
                        "watch expired: {} ({} {}); relisting",
                        status.message, status.code, status.reason
                    ),
                );
                return (Some(WatchEvent::Error(f)), Phase::Relist);
            }
            // The server ends the watch after an ERROR event; resume it.
            KubeEvent::Error(status) => {
                let f = Failure::new(
                    FailureReason::Watch,
                    format!(
                        "error event: {} ({} {})",
                        status.message, status.code, status.reason
                    ),
                );
                return (Some(WatchEvent::Error(f)), Phase::Resume { version });
            }
        };
        let phase = Phase::Watching {
            version,
            stream,
            started,
            deadline,
            seen_any: true,
        };
        (out, phase)
    }
}

/// Moves the watch's resume point to `seen`, when the server gave one.
fn advance(version: &mut String, seen: Option<&str>) {
    if let Some(v) = seen.filter(|v| !v.is_empty()) {
        v.clone_into(version);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_with_jitter_and_resets_after_two_quiet_minutes() {
        let t = Timeouts::default();
        let mut b = Backoff::new(&t);
        let start = Instant::now();
        let ms: Vec<u128> = (0..8)
            .map(|i| b.delay(start + Duration::from_secs(i)).as_millis())
            .collect();
        // Retry n waits within [800·2^(n-1), 800·2^n) ms, capped at 30 s.
        let bounds = [
            (800, 1600),
            (1600, 3200),
            (3200, 6400),
            (6400, 12800),
            (12800, 25600),
            (25600, 30000),
            (30000, 30000),
            (30000, 30000),
        ];
        for (d, (lo, hi)) in ms.iter().zip(bounds) {
            assert!(*d >= lo && *d <= hi, "{ms:?}");
        }
        // Within two minutes of the last failure the pace holds; after, it starts over.
        assert_eq!(b.delay(start + Duration::from_secs(100)).as_secs(), 30);
        let again = b.delay(start + Duration::from_secs(221)).as_millis();
        assert!((800..1600).contains(&again), "{again}");
    }

    #[test]
    fn watches_are_bounded_by_their_server_timeout_plus_the_margin() {
        let t = Timeouts::default();
        assert_eq!(t.watch_seconds(), 290);
        assert_eq!(t.watch_bound(), Duration::from_secs(320));
        let short = Timeouts {
            watch: Duration::from_millis(300),
            watch_margin: Duration::from_millis(500),
            ..t
        };
        // timeoutSeconds is whole seconds and never 0 (the server's unknown default).
        assert_eq!(short.watch_seconds(), 1);
        assert_eq!(short.watch_bound(), Duration::from_millis(1500));
    }

    #[test]
    fn failures_read_as_reason_and_message() {
        let f = Failure::new(FailureReason::Timeout, "list not answered within 60s");
        assert_eq!(f.to_string(), "timeout: list not answered within 60s");
        let reasons = [
            FailureReason::List,
            FailureReason::Watch,
            FailureReason::Timeout,
            FailureReason::Expired,
        ];
        let names: Vec<&str> = reasons.iter().map(|r| r.as_str()).collect();
        assert_eq!(names, ["list", "watch", "timeout", "expired"]);
    }
}
