//! What happens to a profile on its way to a backend, and to the endpoint itself, as typed
//! events (`runtime::event`): each writes its log line and updates its counters in one place,
//! so a drop can never be logged without being counted under the same reason, or counted
//! without its line.
//!
//! Drops are counted one by one but logged rate-limited (`status::Drops`): the first of a kind
//! at once, the rest summed into at most one line per kind per `status::REPORT_INTERVAL`. An
//! endpoint that starts failing is one warning, its recovery one line with what the outage
//! cost; the retries in between are debug lines.

use std::time::Duration;

use super::limits::TrimReport;
use super::metrics::{EndpointMetrics, Latency, Reason};
use super::status::{DropKey, DropNote, DropReport, Recovery};
use crate::protocols::pyroscope::wire::PushError;
use crate::runtime::event::{InternalEvent, LogThrottle};

/// Why an endpoint drops a profile, with what the log line needs.
pub(super) enum Drop<'a> {
    /// Evicted from a full queue or for the memory budget, drained at reload or shutdown, or
    /// older than `max_age` when taken from the queue.
    Quietly(Reason),
    /// Could not be made into a request (too large after trimming, no room to decode, does not
    /// convert).
    Unsendable { reason: Reason, why: &'a str },
    /// The backend refused it for good.
    Rejected(&'a PushError),
    /// Failed once with retries disabled (`retry_on_failure { enabled = false }`).
    RetriesDisabled(&'a PushError),
    /// Failed `max_backoff_retries` times.
    RetriesExhausted { err: &'a PushError, retries: u32 },
    /// Grew older than `max_age` while being retried.
    AgedOut(&'a PushError),
}

impl Drop<'_> {
    /// The drop of `profiles` profiles of `bytes` in all, as the rate-limited log takes it:
    /// its kind, its line and its error.
    pub fn note(&self, profiles: u64, bytes: u64) -> DropNote {
        let (key, message, detail) = match *self {
            Drop::Quietly(reason) => (
                DropKey::reason(reason),
                match reason {
                    Reason::QueueFull => "queue full; dropped the oldest profiles",
                    Reason::MemoryBudget => {
                        "memory budget full; dropped the oldest queued profiles"
                    }
                    Reason::TooOld => "profiles older than max_age; dropped them",
                    Reason::Reload => {
                        "endpoint removed by a configuration change; dropped its queue"
                    }
                    Reason::Shutdown => {
                        "shutting down; dropped profiles not sent by the flush deadline"
                    }
                    _ => "dropped profiles",
                },
                None,
            ),
            Drop::Unsendable { reason, why } => (
                DropKey::reason(reason),
                "could not make a push request; dropped profiles",
                Some(why.to_string()),
            ),
            Drop::Rejected(err) => (
                DropKey::error(Reason::Rejected, err),
                "push rejected; dropped profiles",
                Some(err.to_string()),
            ),
            Drop::RetriesDisabled(err) => (
                DropKey::error(Reason::RetriesExhausted, err),
                "push failed and retries are disabled; dropped profiles",
                Some(err.to_string()),
            ),
            Drop::RetriesExhausted { err, retries } => (
                DropKey::error(Reason::RetriesExhausted, err),
                "push failed max_backoff_retries times; dropped profiles",
                Some(format!("{err} (after {retries} retries)")),
            ),
            Drop::AgedOut(err) => (
                DropKey::error(Reason::TooOld, err),
                "profiles aged out (max_age) while being retried; dropped them",
                Some(err.to_string()),
            ),
        };
        DropNote {
            key,
            message,
            detail,
            profiles,
            bytes,
        }
    }
}

/// Writes a drop line: at warning level, except for an endpoint removed on purpose.
fn log_drops(component: Option<&str>, endpoint: Option<&str>, r: &DropReport) {
    let (reason, profiles, bytes) = (r.reason.as_str(), r.profiles, r.bytes);
    let since_last_seconds = r.since_last.map(|d| d.as_secs());
    let err = r.detail.as_deref();
    if r.reason == Reason::Reload {
        tracing::info!(
            component,
            endpoint,
            reason,
            profiles,
            bytes,
            since_last_seconds,
            err,
            "{}",
            r.message
        );
    } else {
        tracing::warn!(
            component,
            endpoint,
            reason,
            profiles,
            bytes,
            since_last_seconds,
            err,
            "{}",
            r.message
        );
    }
}

/// Profiles one endpoint will not send, dropped together for one reason (one, or a batch
/// evicted or drained at once); `report` is the log line due with them, if any.
pub(super) struct ProfilesDropped<'a> {
    pub metrics: &'a EndpointMetrics,
    pub endpoint: &'a str,
    pub reason: Reason,
    pub profiles: u64,
    pub bytes: u64,
    pub report: Option<DropReport>,
}

impl InternalEvent for ProfilesDropped<'_> {
    fn emit(self) {
        self.metrics.dropped(self.reason, self.profiles, self.bytes);
        if let Some(r) = &self.report {
            log_drops(None, Some(self.endpoint), r);
        }
    }
}

/// Drops already counted, summed up in a line now that their interval has passed (or the
/// component exits).
pub(super) struct DropsSummarized<'a> {
    pub component: Option<&'a str>,
    pub endpoint: Option<&'a str>,
    pub report: DropReport,
}

impl InternalEvent for DropsSummarized<'_> {
    fn emit(self) {
        log_drops(self.component, self.endpoint, &self.report);
    }
}

/// A profile whose labels break the backend's rules: dropped for every endpoint.
pub(super) struct InvalidLabels<'a> {
    pub component: &'a str,
    pub bytes: usize,
    pub endpoints: &'a [&'a EndpointMetrics],
    pub report: Option<DropReport>,
}

impl InternalEvent for InvalidLabels<'_> {
    fn emit(self) {
        for metrics in self.endpoints {
            metrics.dropped(Reason::InvalidLabels, 1, self.bytes as u64);
        }
        if let Some(r) = &self.report {
            log_drops(Some(self.component), None, r);
        }
    }
}

/// The first failed attempt of an outage: pushes to the endpoint fail and are being retried.
pub(super) struct EndpointFailing<'a> {
    pub metrics: &'a EndpointMetrics,
    pub endpoint: &'a str,
    pub err: &'a PushError,
    /// Profiles waiting in the queue.
    pub queued: usize,
    pub max_age: Duration,
}

impl InternalEvent for EndpointFailing<'_> {
    fn emit(self) {
        let queued = self.queued;
        // 0 is "never age out".
        let max_age = match self.max_age {
            d if d.is_zero() => "none".to_string(),
            d => format!("{d:?}"),
        };
        tracing::warn!(endpoint = %self.endpoint, err = %self.err, queued, max_age, "endpoint failing; profiles stay queued and are retried until it recovers (or they age out)");
        self.metrics.failing(true);
    }
}

/// The push that ended an outage, with what the outage cost.
pub(super) struct EndpointRecovered<'a> {
    pub metrics: &'a EndpointMetrics,
    pub endpoint: &'a str,
    pub recovery: &'a Recovery,
    /// Profiles still waiting in the queue.
    pub backlog: usize,
}

impl InternalEvent for EndpointRecovered<'_> {
    fn emit(self) {
        let r = self.recovery;
        // Whole milliseconds read better than nanoseconds.
        let outage = Duration::from_millis(u64::try_from(r.outage.as_millis()).unwrap_or(u64::MAX));
        let dropped: u64 = r.dropped.iter().sum();
        let dropped_by_reason = Reason::ALL
            .iter()
            .filter(|reason| r.dropped[reason.index()] > 0)
            .map(|reason| format!("{}={}", reason.as_str(), r.dropped[reason.index()]))
            .collect::<Vec<_>>()
            .join(",");
        let (queued, sent, backlog) = (r.queued, r.sent, self.backlog);
        tracing::info!(endpoint = %self.endpoint, ?outage, queued, sent, dropped, dropped_by_reason, backlog, "endpoint recovered");
        self.metrics.failing(false);
    }
}

/// A push failed and will be tried again after `delay`.
pub(super) struct PushRetrying<'a> {
    pub metrics: &'a EndpointMetrics,
    pub endpoint: &'a str,
    pub err: &'a PushError,
    pub delay: Duration,
    /// This sender is the endpoint's prober (its delay is the probe interval).
    pub probe: bool,
}

impl InternalEvent for PushRetrying<'_> {
    fn emit(self) {
        let (delay, probe) = (self.delay, self.probe);
        tracing::debug!(endpoint = %self.endpoint, err = %self.err, ?delay, probe, "push failed; retrying");
        self.metrics.retry();
    }
}

/// A profile reached the backend.
pub(super) struct ProfileSent<'a> {
    pub metrics: &'a EndpointMetrics,
    pub bytes: usize,
    pub seconds: f64,
}

impl InternalEvent for ProfileSent<'_> {
    fn emit(self) {
        self.metrics.sent(self.bytes);
        self.metrics.latency(Latency::Endpoint, self.seconds);
    }
}

/// A profile was trimmed to fit the backend's limits. Logged at debug level each time; at info
/// (every sample type kept 95% of its total) or warn (some did not: the limit left no room)
/// at most once a minute per endpoint and level, with the count of trims not logged since.
pub(super) struct ProfileTrimmed<'a> {
    pub metrics: &'a EndpointMetrics,
    pub endpoint: &'a str,
    pub report: &'a TrimReport,
}

/// The rate limits of an endpoint's trimming lines: trimming can hit every profile of a large
/// target, every scrape.
pub(super) struct TrimLog {
    complete: LogThrottle,
    short: LogThrottle,
}

impl TrimLog {
    const EVERY: Duration = Duration::from_secs(60);

    pub(super) const fn new() -> TrimLog {
        TrimLog {
            complete: LogThrottle::new(Self::EVERY),
            short: LogThrottle::new(Self::EVERY),
        }
    }
}

impl InternalEvent for ProfileTrimmed<'_> {
    fn emit(self) {
        let r = self.report;
        let endpoint = self.endpoint;
        let (reason, samples_before, samples_after) =
            (r.reason.as_str(), r.samples_before, r.samples_after);
        let kept = r.kept_text();
        let short = r.short().join(", ");
        tracing::debug!(endpoint = %endpoint, reason, samples_before, samples_after, kept = %kept, short = %short, "trimmed profile to the backend's limits");
        let log = self.metrics.trim_log();
        let now = std::time::Instant::now();
        if short.is_empty() {
            if let Some(unlogged) = log.complete.admit(now) {
                tracing::info!(endpoint = %endpoint, reason, samples_before, samples_after, kept = %kept, unlogged, "trimming profiles to the backend's limits; every sample type keeps 95% of its total");
            }
        } else if let Some(unlogged) = log.short.admit(now) {
            tracing::warn!(endpoint = %endpoint, reason, samples_before, samples_after, kept = %kept, short = %short, unlogged, "trimming profiles to the backend's limits; some sample types keep less than 95% of their total");
        }
        self.metrics.trimmed(r.reason);
    }
}
