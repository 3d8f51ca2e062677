//! One endpoint: its HTTP client, its queue and the senders draining it.
//!
//! Each sender takes a profile (see `queue`), fits it into the backend's limits, encodes the
//! push once, and tries until it is accepted or must be given up:
//!
//! * accepted (200): counted as sent; senders backing off because the endpoint was unavailable
//!   are woken to retry at once;
//! * an error retrying cannot fix (`invalid_argument`, `unauthenticated`, ... and
//!   `resource_exhausted` without `retry_on_http_429`): dropped, reason `rejected`;
//! * a retryable error (`internal`, `unknown`, `deadline_exceeded`, `data_loss`, `aborted`,
//!   `resource_exhausted`): Alloy's backoff, jittered, from `min_backoff_period` doubling up to
//!   `max_backoff_period`; after `max_backoff_retries` failed attempts (0 = no limit) dropped,
//!   reason `retries_exhausted`;
//! * `unavailable` (refused or reset connections, 502/503/504, a plain 429): the endpoint is
//!   down, not the profile at fault, so the same backoff applies but the attempts do not use
//!   up the profile's retries. What bounds the wait is the profile's age: once older than
//!   `max_age` (the backend's ingestion window) it is dropped, reason `too_old`.
//!
//! **Probing.** A backoff grown to `max_backoff_period` (5 minutes by default) would leave an
//! endpoint unused for minutes after its backend is back. So while an endpoint is unavailable,
//! one of its senders (the prober, see `status`) retries every `status::PROBE_INTERVAL` instead,
//! with its own head-of-line profile: the probe is a real push, and when it is accepted the
//! other senders are woken from their backoff at once. Only `unavailable` attempts are probed:
//! they never count against `max_backoff_retries`, so probing changes no profile's fate, only
//! how soon the endpoint is found to be back. Errors that do count (`internal`, a Connect
//! `resource_exhausted`...) and a plain 429, which asks us to slow down, keep their backoff.
//!
//! **Outages.** The first failed attempt that will be retried makes the endpoint *failing*: one
//! warning, the `pyroscope_write_endpoint_failing` gauge at 1 and the component unhealthy; the
//! push that ends it logs what was queued, sent and dropped meanwhile (see `status`).
//!
//! Meanwhile the queue keeps accepting (and, when full, evicting the oldest). Sending is
//! stopped two ways: *retire* (configuration change) stops a sender between attempts and puts
//! its profile back in the queue, *abort* (end of the shutdown flush) also cancels an attempt
//! in progress.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use reqwest::header::{CONTENT_ENCODING, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::events::{
    Drop, EndpointFailing, EndpointRecovered, ProfileSent, ProfileTrimmed, ProfilesDropped,
    PushRetrying,
};
use super::limits::{Fit, Limits};
use super::metrics::{EndpointMetrics, Latency, Reason};
use super::queue::{Entry, Eviction, Queue};
use super::status::{PROBE_INTERVAL, Status};
use crate::budget::{Budget, Priority, Reservation, Use};
use crate::httpclient::HttpClient;
use crate::httpclient::body::{ReadError, read_limited};
use crate::protocols::pyroscope::wire::{self, Code, Disposition, PushError};
use crate::runtime::event::emit;
use crate::runtime::task;

/// The most of a push response we read: Connect answers with a small JSON error or nothing.
const RESPONSE_LIMIT: usize = 1 << 20;

/// Decoding a profile to trim it takes up to this many times its uncompressed size (the
/// decoded message's vectors, then the trimmed copy).
const TRIM_MEMORY_FACTOR: usize = 12;

/// How an endpoint talks to its backend. Everything else (queue, retries, drops, metrics) is
/// the same for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Pyroscope's Connect push (`pyroscope.write`): profiles fitted to the backend's limits,
    /// sent as they are.
    Connect,
    /// An OTLP/HTTP profiles export (`otelcol.exporter.otlphttp_profiles`): each profile
    /// converted to an `ExportProfilesServiceRequest` (`crate::protocols::otlp::convert`), optionally
    /// gzipped. Retries follow the OTLP/HTTP rules: only 429, 502, 503, 504 and transport
    /// failures are retried.
    OtlpHttp { gzip: bool },
    /// The same export request over OTLP/gRPC (`otelcol.exporter.otlp`): the unary
    /// `ProfilesService/Export` call over HTTP/2, the message gzip-compressed (`grpc-encoding`)
    /// or not; retryable gRPC statuses (OTLP's list) are retried as `unavailable`.
    OtlpGrpc { gzip: bool },
}

/// An endpoint's resolved settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The configured base URL; also the `endpoint` metric label, as in Alloy.
    pub url: String,
    pub protocol: Protocol,
    /// Where requests go: `url` + `/push.v1.PusherService/Push` for Connect, the profiles
    /// endpoint for OTLP.
    pub push_url: reqwest::Url,
    /// The endpoint's `headers` attribute.
    pub headers: HeaderMap,
    pub remote_timeout: Duration,
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// 0: unlimited.
    pub max_retries: u32,
    pub retry_on_http_429: bool,
    /// false: a failed attempt drops the profile whatever the error (OTLP's
    /// `retry_on_failure { enabled = false }`).
    pub retry: bool,
    pub senders: usize,
    /// 0: profiles never age out.
    pub max_age: Duration,
    pub flush_deadline: Duration,
    pub limits: Limits,
}

pub struct Endpoint {
    pub settings: Settings,
    client: HttpClient,
    pub queue: Arc<Queue>,
    /// Outage, drop log and prober; shared, like the queue, with the endpoint's next version
    /// after a configuration change.
    pub status: Arc<Status>,
    pub metrics: EndpointMetrics,
    /// The component's memory budget: decoding a profile to fit or convert it reserves here.
    budget: Budget,
    /// Notified when a push succeeds, to cut short the backoff of senders waiting out an
    /// unavailable endpoint.
    recovered: Notify,
}

/// The running senders of one endpoint.
pub struct Senders {
    abort: CancellationToken,
    retire: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl Senders {
    /// Stops taking profiles; senders put back what they hold at their next wait.
    pub fn retire(&self) {
        self.retire.cancel();
    }

    /// Also cancels attempts in progress (their profiles go back to the queue).
    pub fn abort(&self) {
        self.abort.cancel();
    }

    /// Waits for every sender to have stopped (after `retire` or `abort`).
    pub async fn join(self) {
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

enum Delivery {
    Done,
    /// Stopped before finishing: back to the queue.
    Stopped(Entry),
}

impl Endpoint {
    pub fn new(
        settings: Settings,
        client: HttpClient,
        queue: Arc<Queue>,
        status: Arc<Status>,
        metrics: EndpointMetrics,
        budget: Budget,
    ) -> Self {
        Endpoint {
            settings,
            client,
            queue,
            status,
            metrics,
            budget,
            recovered: Notify::new(),
        }
    }

    /// Queues a profile; never waits. Evicted profiles are counted as dropped.
    pub fn enqueue(&self, entry: Entry) {
        self.status.queued();
        let evicted = self.queue.push(entry);
        if evicted.is_empty() {
            return;
        }
        let (mut full, mut budget) = (Vec::new(), Vec::new());
        for (e, why) in evicted {
            match why {
                Eviction::QueueFull => full.push(e),
                Eviction::MemoryBudget => {
                    self.budget.count_shed(Use::WriteQueue, Priority::Normal);
                    budget.push(e);
                }
            }
        }
        self.discard_all(&full, Drop::Quietly(Reason::QueueFull));
        self.discard_all(&budget, Drop::Quietly(Reason::MemoryBudget));
    }

    /// Counts a profile this endpoint will not send, and logs it when a line is due.
    pub(super) fn discard(&self, bytes: usize, why: Drop<'_>) {
        self.discard_counted(1, bytes as u64, why);
    }

    /// [`Endpoint::discard`] for entries dropped together: one event, at most one line.
    pub(super) fn discard_all(&self, entries: &[Entry], why: Drop<'_>) {
        if entries.is_empty() {
            return;
        }
        let bytes = entries.iter().map(|e| e.raw.len() as u64).sum();
        self.discard_counted(entries.len() as u64, bytes, why);
    }

    fn discard_counted(&self, profiles: u64, bytes: u64, why: Drop<'_>) {
        let note = why.note(profiles, bytes);
        let reason = note.key.reason;
        emit(ProfilesDropped {
            metrics: &self.metrics,
            endpoint: &self.settings.url,
            reason,
            profiles,
            bytes,
            report: self.status.dropped(note),
        });
    }

    /// Starts the senders on `runtime`.
    pub fn start(self: &Arc<Self>, runtime: &tokio::runtime::Handle) -> Senders {
        let abort = CancellationToken::new();
        let retire = abort.child_token();
        let tasks = (0..self.settings.senders.max(1))
            .map(|_| {
                task::spawn_on(
                    runtime,
                    "push.sender",
                    self.clone().sender(retire.clone(), abort.clone()),
                )
            })
            .collect();
        Senders {
            abort,
            retire,
            tasks,
        }
    }

    async fn sender(self: Arc<Self>, retire: CancellationToken, abort: CancellationToken) {
        loop {
            let entry = tokio::select! {
                biased;
                _ = retire.cancelled() => return,
                e = self.queue.take() => e,
            };
            let series = entry.series;
            match self.deliver(entry, &retire, &abort).await {
                Delivery::Done => self.queue.done(series),
                Delivery::Stopped(e) => {
                    self.queue.requeue(e);
                    return;
                }
            }
        }
    }

    fn too_old(&self, e: &Entry) -> bool {
        !self.settings.max_age.is_zero()
            && SystemTime::now()
                .duration_since(e.received_at)
                .is_ok_and(|age| age > self.settings.max_age)
    }

    async fn deliver(
        &self,
        entry: Entry,
        retire: &CancellationToken,
        abort: &CancellationToken,
    ) -> Delivery {
        let s = &self.settings;
        let give_up = |why: Drop<'_>, e: &Entry| {
            self.discard(e.raw.len(), why);
            Delivery::Done
        };
        self.metrics
            .latency(Latency::Queue, entry.enqueued.elapsed().as_secs_f64());
        if self.too_old(&entry) {
            return give_up(Drop::Quietly(Reason::TooOld), &entry);
        }
        let prepared = match s.protocol {
            // What is counted as sent is the profile's size as pushed (trimmed or not).
            Protocol::Connect => self
                .fit(&entry)
                .await
                .map(|raw| (wire::encode_push_request(&entry.labels, &raw), raw.len())),
            Protocol::OtlpHttp { gzip } => self
                .otlp_request(&entry, gzip)
                .await
                .map(|body| (body, entry.raw.len())),
            Protocol::OtlpGrpc { gzip } => self.otlp_request(&entry, gzip).await.map(|body| {
                (
                    crate::protocols::otlp::grpc::frame(&body, gzip),
                    entry.raw.len(),
                )
            }),
        };
        let (body, sent_bytes) = match prepared {
            Ok(prepared) => prepared,
            Err((reason, why)) => {
                return give_up(Drop::Unsendable { reason, why: &why }, &entry);
            }
        };
        let started = Instant::now();
        let mut failures = 0u32;
        let mut unavailable = 0u32;
        let mut delivery = self.status.delivery();
        let mut probe = None;
        loop {
            let result = tokio::select! {
                biased;
                _ = abort.cancelled() => return Delivery::Stopped(entry),
                r = self.attempt(body.clone()) => r,
            };
            let err = match result {
                Ok(()) => {
                    emit(ProfileSent {
                        metrics: &self.metrics,
                        bytes: sent_bytes,
                        seconds: started.elapsed().as_secs_f64(),
                    });
                    if let Some(recovery) = delivery.sent() {
                        emit(EndpointRecovered {
                            metrics: &self.metrics,
                            endpoint: &s.url,
                            recovery: &recovery,
                            backlog: self.queue.depth().0,
                        });
                    }
                    self.recovered.notify_waiters();
                    return Delivery::Done;
                }
                Err(e) => e,
            };
            let disposition = err.disposition(s.retry_on_http_429);
            if !s.retry && disposition != Disposition::Drop {
                return give_up(Drop::RetriesDisabled(&err), &entry);
            }
            let delay = match disposition {
                Disposition::Drop => {
                    return give_up(Drop::Rejected(&err), &entry);
                }
                Disposition::Retry => {
                    failures += 1;
                    if s.max_retries > 0 && failures >= s.max_retries {
                        let retries = failures - 1;
                        return give_up(Drop::RetriesExhausted { err: &err, retries }, &entry);
                    }
                    backoff_delay(s.min_backoff, s.max_backoff, failures)
                }
                Disposition::RetryUnavailable => {
                    unavailable += 1;
                    backoff_delay(s.min_backoff, s.max_backoff, unavailable)
                }
            };
            if delivery.failed(&err) {
                emit(EndpointFailing {
                    metrics: &self.metrics,
                    endpoint: &s.url,
                    err: &err,
                    queued: self.queue.depth().0,
                    max_age: s.max_age,
                });
            }
            // Probe only while the endpoint is down (see the module's comment); a sender
            // failing otherwise leaves the prober's place to another.
            if disposition == Disposition::RetryUnavailable && err.status != Some(429) {
                if probe.is_none() {
                    probe = self.status.claim_probe();
                }
            } else {
                probe = None;
            }
            let delay = match probe {
                Some(_) => delay.min(PROBE_INTERVAL.mul_f64(0.5 + random_unit())),
                None => delay,
            };
            // The server's own RetryInfo is a floor: retrying sooner would be refused again.
            let delay = err.retry_after.map_or(delay, |d| delay.max(d));
            emit(PushRetrying {
                metrics: &self.metrics,
                endpoint: &s.url,
                err: &err,
                delay,
                probe: probe.is_some(),
            });
            let recovered = self.recovered.notified();
            tokio::pin!(recovered);
            let wake_early = disposition == Disposition::RetryUnavailable;
            tokio::select! {
                biased;
                _ = retire.cancelled() => return Delivery::Stopped(entry),
                _ = tokio::time::sleep(delay) => {}
                _ = &mut recovered, if wake_early => {}
            }
            if self.too_old(&entry) {
                return give_up(Drop::AgedOut(&err), &entry);
            }
        }
    }

    /// The profile to send: as is, or trimmed to the limits (decompression and trimming run
    /// off the async threads).
    ///
    /// Decoding takes memory like a scrape's processing does: it is reserved against the
    /// memory budget first, and a profile there is no room for is dropped (`memory_budget`).
    async fn fit(&self, entry: &Entry) -> Result<Bytes, (Reason, String)> {
        let limits = self.settings.limits;
        let label_bytes = entry.labels.len();
        if limits.fits_without_inspection(&entry.raw, label_bytes) {
            return Ok(entry.raw.clone());
        }
        let _memory = reserve_decoding(
            &self.budget,
            entry,
            "check the profile against the backend's limits",
        )?;
        let raw = entry.raw.clone();
        let fit = task::spawn_blocking("push.fit", move || limits.fit(&raw, label_bytes))
            .await
            .map_err(|e| (Reason::TooLarge, format!("trimming failed: {e}")))?;
        match fit {
            Fit::Unchanged => Ok(entry.raw.clone()),
            Fit::Trimmed { raw, report } => {
                emit(ProfileTrimmed {
                    metrics: &self.metrics,
                    endpoint: &self.settings.url,
                    report: &report,
                });
                Ok(raw)
            }
            Fit::TooLarge(why) => Err((Reason::TooLarge, why)),
        }
    }

    /// The OTLP export request for one profile (decoded and converted off the async threads,
    /// with the decoding memory reserved against the budget as `fit` does).
    async fn otlp_request(&self, entry: &Entry, gzip: bool) -> Result<Bytes, (Reason, String)> {
        let _memory = reserve_decoding(&self.budget, entry, "convert the profile")?;
        let raw = entry.raw.clone();
        let labels = entry.series_labels.clone();
        task::spawn_blocking("push.otlp_convert", move || {
            let profile = crate::pprof::decode(&raw, &crate::pprof::Limits::default())
                .map_err(|e| (Reason::Rejected, format!("profile does not decode: {e}")))?;
            let mut request = crate::protocols::otlp::convert::RequestBuilder::new();
            request
                .add(&labels, &profile)
                .map_err(|e| (Reason::Rejected, format!("profile does not convert: {e}")))?;
            let encoded = prost::Message::encode_to_vec(&request.build());
            Ok(Bytes::from(if gzip {
                crate::pprof::gzip(&encoded, crate::pprof::DEFAULT_LEVEL)
            } else {
                encoded
            }))
        })
        .await
        .map_err(|e| (Reason::Rejected, format!("conversion failed: {e}")))?
    }

    /// One HTTP attempt.
    async fn attempt(&self, body: Bytes) -> Result<(), PushError> {
        let s = &self.settings;
        let started = Instant::now();
        let mut headers = s.headers.clone();
        self.client
            .apply(&mut headers)
            .await
            .map_err(|e| PushError {
                code: Code::Unavailable,
                message: e.to_string(),
                status: None,
                from_body: false,
                retry_after: None,
            })?;
        match s.protocol {
            Protocol::Connect => {
                headers.insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static(wire::CONTENT_TYPE_PROTO),
                );
                headers.insert(
                    HeaderName::from_static("connect-protocol-version"),
                    HeaderValue::from_static("1"),
                );
                headers.insert(
                    HeaderName::from_static("connect-timeout-ms"),
                    HeaderValue::from(
                        u64::try_from(s.remote_timeout.as_millis()).unwrap_or(u64::MAX),
                    ),
                );
            }
            Protocol::OtlpHttp { gzip } => {
                headers.insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static(wire::CONTENT_TYPE_OTLP),
                );
                if gzip {
                    headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                }
            }
            Protocol::OtlpGrpc { gzip } => {
                super::otlp::grpc_headers(&mut headers, gzip, s.remote_timeout)
            }
        }
        let request = self
            .client
            .client()
            .post(s.push_url.clone())
            .headers(headers)
            .timeout(s.remote_timeout)
            .body(body);
        let result = async {
            let resp = request
                .send()
                .await
                .map_err(|e| wire::transport_error(&e))?;
            if let Protocol::OtlpGrpc { .. } = s.protocol {
                let rejected = super::otlp::classify_grpc_response(resp, RESPONSE_LIMIT).await?;
                if rejected.rejected_profiles > 0 || !rejected.error_message.is_empty() {
                    tracing::warn!(endpoint = %s.url, rejected = rejected.rejected_profiles, message = %rejected.error_message, "export partially rejected");
                }
                return Ok(());
            }
            let status = resp.status().as_u16();
            let content_type = resp
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = match read_limited(resp, RESPONSE_LIMIT).await {
                Ok(body) => body,
                Err(ReadError::Transport(e)) => return Err(wire::transport_error(&e)),
                // A push answer is a few bytes of JSON: an oversized one is judged by its
                // status alone.
                Err(ReadError::TooLarge { .. }) => Bytes::new(),
            };
            match s.protocol {
                Protocol::Connect => {
                    wire::classify_response(status, content_type.as_deref(), &body)
                }
                Protocol::OtlpHttp { .. } | Protocol::OtlpGrpc { .. } => {
                    let rejected = super::otlp::classify_otlp_response(status, &body)?;
                    if rejected.rejected_profiles > 0 || !rejected.error_message.is_empty() {
                        // Accepted in part: nothing a retry would change.
                        tracing::warn!(endpoint = %s.url, rejected = rejected.rejected_profiles, message = %rejected.error_message, "export partially rejected");
                    }
                    Ok(())
                }
            }
        }
        .await;
        self.metrics
            .latency(Latency::Downstream, started.elapsed().as_secs_f64());
        result
    }
}

/// Reserves the memory decoding `entry` takes (its decoded message's vectors, then a trimmed or
/// converted copy) against `budget`; when there is no room the profile is dropped
/// (`memory_budget`), the error saying what it was going `to`.
fn reserve_decoding(
    budget: &Budget,
    entry: &Entry,
    to: &str,
) -> Result<Reservation, (Reason, String)> {
    let need = (entry.raw.len()
        + crate::pprof::codec::declared_size(&entry.raw) * TRIM_MEMORY_FACTOR)
        as u64;
    budget
        .try_reserve(Use::WriteTrim, Priority::Normal, need)
        .ok_or_else(|| {
            budget.count_shed(Use::WriteTrim, Priority::Normal);
            (
                Reason::MemoryBudget,
                format!("the memory budget has no room to {to} ({need} bytes)"),
            )
        })
}

/// Alloy's (dskit) backoff: the delay before retry `n` (1-based) is uniform in
/// `[min·2^(n-1), min·2^n)`, capped at `max`.
pub fn backoff_delay(min: Duration, max: Duration, n: u32) -> Duration {
    if min.is_zero() {
        return Duration::ZERO;
    }
    let lo = min.saturating_mul(1u32 << (n.saturating_sub(1)).min(30));
    if lo >= max {
        return max;
    }
    let hi = lo.saturating_mul(2).min(max);
    let span = hi - lo;
    lo + span.mul_f64(random_unit())
}

/// A uniform value in [0, 1) (xorshift64*, per thread, seeded from the hasher's random keys).
fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(0x9e37_79b9_7f4a_7c15);
            h.finish() | 1
        });
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let (min, max) = (Duration::from_millis(500), Duration::from_secs(300));
        for n in 1..=12u32 {
            let lo = (Duration::from_millis(500) * 2u32.pow(n - 1)).min(max);
            let hi = (lo * 2).min(max);
            for _ in 0..50 {
                let d = backoff_delay(min, max, n);
                assert!(
                    d >= lo && d <= hi,
                    "retry {n}: {d:?} not in [{lo:?}, {hi:?}]"
                );
            }
        }
        assert_eq!(backoff_delay(min, max, 100), max);
        assert_eq!(backoff_delay(Duration::ZERO, max, 3), Duration::ZERO);
    }
}
